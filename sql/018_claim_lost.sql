-- 018_claim_lost: an attempt outcome for a claim whose reply was lost.
--
-- A worker whose connection drops while its claim is in flight cannot tell
-- whether the claim committed. When it did, the jobs are LEASED (or
-- RUNNING) to the worker under tokens it never saw. After a reconnect the
-- worker gives back every job leased to its id under a token it does not
-- hold (lib/jobs.c, pd_jobs_release_unheld): PENDING with the attempt
-- refunded, or, for an at-most-once job, DEAD_LETTERED, as a release does.
-- The attempt is recorded with the outcome claim_lost (pendulum(7)).
--
-- The workflow step writes became fenced in the same change (lib/jobs.c,
-- flow_sql): that needs no schema change.

DO $migration$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT conname FROM pg_constraint
         WHERE conrelid = 'pendulum.attempt_rows'::regclass AND contype = 'c'
           AND pg_get_constraintdef(oid) LIKE '%outcome%'
    LOOP
        EXECUTE format('ALTER TABLE pendulum.attempt_rows DROP CONSTRAINT %I', c.conname);
    END LOOP;
END
$migration$;

ALTER TABLE pendulum.attempt_rows ADD CONSTRAINT attempt_rows_outcome_check
    CHECK (outcome IN ('succeeded', 'failed', 'terminal', 'timeout', 'could_not_start',
                       'lease_expired', 'lease_lost', 'released', 'claim_lost'));
