-- 022_cancel: cancelling a job that a worker holds (LEASED or RUNNING).
--
-- `pd-admin job cancel` of a PENDING or BLOCKED job cancels it at once, as
-- before. Of a LEASED or RUNNING job it only asks: it sets
-- cancel_requested_at (the first request's time) and cancel_reason (the
-- latest request's), and notifies channel pendulum_cancel with the lease
-- owner's worker id, so that the holding worker beats at once. The
-- heartbeat answers, per lease it extends, whether cancellation is asked;
-- the worker then stops the handler (SIGTERM to its process group, SIGKILL
-- after the kill grace; a stream handler gets a {"cancel": ID} line) and
-- writes the outcome kind 'cancel' through the lease fence like every
-- outcome: CANCELLED, dead_reason and last_error the reason, finished now,
-- the attempt 'cancelled', and the jobs BLOCKED on it cancelled with it
-- (pendulum.fail_dependents). Nobody else writes the job while its lease
-- holds: a worker that is stalled keeps it LEASED or RUNNING, the request
-- standing, until the lease expires; the reap pass then makes a job with a
-- request CANCELLED (not PENDING), its attempt 'cancelled'.
--
-- An outcome that would give a job with a request back to PENDING (a
-- retryable failure, a release, a snooze, a workflow step done or parked,
-- written by a worker that had not learnt of the request yet) cancels it instead
-- (pendulum.finish_cancel_asked): a cancelled job never runs again.

ALTER TABLE pendulum.jobs
    ADD COLUMN IF NOT EXISTS cancel_requested_at timestamptz,
    ADD COLUMN IF NOT EXISTS cancel_reason text;
COMMENT ON COLUMN pendulum.jobs.cancel_requested_at IS
    'LEASED or RUNNING: when an operator first asked to cancel it (pd-admin job cancel); NULL: not asked.';
COMMENT ON COLUMN pendulum.jobs.cancel_reason IS
    'The reason of the latest cancel request; it becomes dead_reason when the job is CANCELLED.';

-- Attempts ended by a cancel: outcome 'cancelled'.
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
                       'lease_expired', 'lease_lost', 'released', 'claim_lost', 'cancelled'));

-- A worker's batch of outcomes (lib/jobs.c, finish_sql's $1) with the kind
-- of each whose job has a cancel request under the same lease token, and
-- that would go back to PENDING (retry, release, advance, wait, snooze), made
-- 'cancel'. The order and every other field are kept; a batch with no such
-- outcome (the common case: one index probe per outcome) is returned as it is.
CREATE OR REPLACE FUNCTION pendulum.finish_cancel_asked(batch jsonb) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pendulum, pg_temp
AS $$
    SELECT CASE WHEN NOT EXISTS (
                SELECT 1 FROM jsonb_array_elements(batch) AS b(e)
                  JOIN pendulum.jobs j ON j.id = (b.e->>'id')::bigint
                 WHERE j.cancel_requested_at IS NOT NULL
                   AND j.lease_token = (b.e->>'token')::bigint
                   AND b.e->>'kind' IN ('retry', 'release', 'advance', 'wait', 'snooze'))
           THEN batch
           ELSE (SELECT jsonb_agg(CASE WHEN j.cancel_requested_at IS NOT NULL
                                        AND b.e->>'kind' IN ('retry', 'release', 'advance', 'wait', 'snooze')
                                       THEN b.e || '{"kind": "cancel"}'::jsonb ELSE b.e END
                                  ORDER BY b.ord)
                   FROM jsonb_array_elements(batch) WITH ORDINALITY AS b(e, ord)
                   LEFT JOIN pendulum.jobs j
                     ON j.id = (b.e->>'id')::bigint AND j.lease_token = (b.e->>'token')::bigint)
           END
$$;
