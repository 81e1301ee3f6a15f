-- 008_lean_attempts: one write per attempt, and a success that lives in its
-- job row.
--
-- Before, every attempt cost two writes of its own (a job_attempts row
-- inserted by the claim, updated by the outcome, with a foreign-key check
-- each) on top of the job row's, and every state change of a job rewrote the
-- (state, queue) index. Measured with pgbench, SQL only (claim 100 straight
-- to RUNNING, finish them in one statement): see the README, performance.
--
-- Now:
--   * pendulum.attempt_rows (the table job_attempts was) holds the attempts
--     that ended in anything but a clean success, written once, when the
--     attempt ends: by the outcome (failed, terminal, timeout,
--     could_not_start, released), by the reaper from the job row
--     (lease_expired), by the worker that lost its lease (lease_lost).
--   * The job row describes its current or last attempt: attempt,
--     lease_token, lease_owner (kept on success: the worker that ran it),
--     started_at, finished_at, and exit_code (new). A clean success (exit 0
--     or a stream handler's success, no signal, nothing on stderr) is not
--     written anywhere else: the job row is its record.
--   * pendulum.job_attempts is a view: the stored rows, and the job row's
--     attempt when it has no stored row (in flight: outcome NULL; a clean
--     success: outcome 'succeeded'). Its columns are the table's were: what
--     users read is unchanged (DESIGN.md, the public SQL surface).
--   * Replaying a SUCCEEDED job first stores its job-row attempt, since the
--     replay rewrites the job row (lib/admin.c).
--   * jobs_state_idx is gone: the counts by state that used it read the
--     table (pd-admin stats), the partial indexes (PENDING, LEASED/RUNNING,
--     BLOCKED) or jobs_dead_idx, which only dead-lettered rows enter.

ALTER TABLE pendulum.job_attempts RENAME TO attempt_rows;
ALTER TABLE pendulum.attempt_rows RENAME CONSTRAINT job_attempts_pkey TO attempt_rows_pkey;
ALTER TABLE pendulum.attempt_rows RENAME CONSTRAINT job_attempts_job_id_fkey
    TO attempt_rows_job_id_fkey;

ALTER TABLE pendulum.jobs ADD COLUMN exit_code integer;

-- Attempts in flight had a row from their claim, outcome NULL: from now on
-- the job row describes them.
DELETE FROM pendulum.attempt_rows a USING pendulum.jobs j
 WHERE a.job_id = j.id AND a.lease_token = j.lease_token AND a.outcome IS NULL
   AND j.state IN ('LEASED', 'RUNNING');

CREATE VIEW pendulum.job_attempts AS
SELECT a.job_id, a.attempt, a.lease_token, a.worker, a.started_at, a.finished_at,
       a.outcome, a.exit_code, a.signal, a.stderr_tail
  FROM pendulum.attempt_rows a
UNION ALL
SELECT j.id, j.attempt, j.lease_token, j.lease_owner, j.started_at,
       CASE WHEN j.state = 'SUCCEEDED' THEN j.finished_at END,
       CASE WHEN j.state = 'SUCCEEDED' THEN 'succeeded' END,
       CASE WHEN j.state = 'SUCCEEDED' THEN j.exit_code END,
       NULL::integer, NULL::text
  FROM pendulum.jobs j
 WHERE j.state IN ('LEASED', 'RUNNING', 'SUCCEEDED') AND j.lease_token IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM pendulum.attempt_rows a
                    WHERE a.job_id = j.id AND a.lease_token = j.lease_token);

COMMENT ON VIEW pendulum.job_attempts IS
    'Every attempt of every job: pendulum.attempt_rows, and the attempt the job row holds '
    '(in flight, or a clean success) when it has no stored row.';

DROP INDEX pendulum.jobs_state_idx;
CREATE INDEX jobs_dead_idx ON pendulum.jobs (queue) WHERE state = 'DEAD_LETTERED';

-- The claim without the attempt row (005, 007: same walk, same settings).
-- Its plan is 005's without "CTE a -> Insert on job_attempts": the Update
-- on jobs is the statement's main node; tests/claim-plan.bats checks it.
CREATE OR REPLACE FUNCTION pendulum.claim_jobs(
    queues text[],
    types  text[],
    n      integer,
    worker text,
    lease  interval,
    start  boolean DEFAULT false)
RETURNS SETOF pendulum.jobs
LANGUAGE plpgsql
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    WITH c AS (
        SELECT w.id
          FROM (SELECT DISTINCT u.name FROM unnest(claim_jobs.queues) AS u(name)) AS q
         CROSS JOIN LATERAL (
            WITH RECURSIVE lv(p) AS (
                (SELECT x.priority FROM pendulum.jobs x
                  WHERE x.queue = q.name AND x.state = 'PENDING'
                  ORDER BY x.priority DESC LIMIT 1)
                UNION ALL
                SELECT (SELECT x.priority FROM pendulum.jobs x
                         WHERE x.queue = q.name AND x.state = 'PENDING' AND x.priority < lv.p
                         ORDER BY x.priority DESC LIMIT 1)
                  FROM lv WHERE lv.p IS NOT NULL
            )
            SELECT r.id, r.priority, r.run_at
              FROM lv CROSS JOIN LATERAL (
                SELECT x.id, x.priority, x.run_at FROM pendulum.jobs x
                 WHERE x.queue = q.name AND x.state = 'PENDING' AND x.priority = lv.p
                   AND x.run_at <= now()
                   AND (claim_jobs.types IS NULL OR x.job_type = ANY (claim_jobs.types))
                 ORDER BY x.run_at, x.id
                 LIMIT claim_jobs.n
                   FOR UPDATE OF x SKIP LOCKED) AS r
             LIMIT claim_jobs.n) AS w
         ORDER BY w.priority DESC, w.run_at, w.id
         LIMIT claim_jobs.n
    )
    -- = ANY (ARRAY(...)) rather than a join with c: an index probe per id
    -- even when the planner cannot tell that c is small.
    UPDATE pendulum.jobs x
       SET state = CASE WHEN claim_jobs.start THEN 'RUNNING' ELSE 'LEASED' END,
           lease_token = nextval('pendulum.lease_token_seq'),
           lease_owner = claim_jobs.worker,
           lease_expires_at = now() + claim_jobs.lease,
           attempt = x.attempt + 1,
           started_at = CASE WHEN claim_jobs.start THEN now() END,
           finished_at = NULL,
           exit_code = NULL
     WHERE x.id = ANY (ARRAY(SELECT c.id FROM c))
    RETURNING x.*;
END
$$;
