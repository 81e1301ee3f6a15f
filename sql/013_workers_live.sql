-- 013_workers_live: which workers are live, which job types nobody serves,
-- and a notification when a job someone waits for ends.
--
-- A worker is live while its heartbeat is not overdue: last_seen_at is
-- within its lease window (lease_ms, recorded at registration; 60 s for a
-- row written by an older worker, the old default). Past that it is gone:
-- every lease it held has expired too, so its in_flight counts for nothing.
-- pendulum.worker_states() says so for every row, once; pendulum.live_workers
-- is its live rows. The reaper deletes a gone row retention.workers_gone
-- after it went (pendulum.prune 'workers_gone'), so that a crashed worker's
-- row does not linger.
--
-- A worker serves a job when it takes from the job's queue and has a
-- handler for its type ('*' in job_types: any type; a workflow's jobs are
-- of type 'workflow:NAME'). pendulum.served(queue, type) asks the live
-- workers; pendulum.unserved is the PENDING jobs, by queue and type, that
-- no live worker serves (pd-admin queues and jobs, the metric
-- pendulum_jobs_unserved, pd-enqueue --wait's warning).

ALTER TABLE pendulum.workers ADD COLUMN lease_ms bigint CHECK (lease_ms > 0);

COMMENT ON COLUMN pendulum.workers.lease_ms IS
    'The worker''s lease, ms: it is gone once last_seen_at is older than this (NULL: 60 s).';

-- When a worker seen at last_seen_at with this lease is gone.
CREATE FUNCTION pendulum.worker_gone_at(last_seen_at timestamptz, lease_ms bigint)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT last_seen_at + coalesce(lease_ms, 60000) * interval '1 millisecond'
$$;

-- Every worker row with its status: when it is (or was) gone, whether it
-- is, and what it holds (in_flight: 0 once gone). window_ms replaces every
-- worker's own lease (pd-admin --stale); NULL, the definition, keeps them.
CREATE FUNCTION pendulum.worker_states(window_ms bigint DEFAULT NULL)
RETURNS TABLE (id text, host text, pid integer, queues text[], job_types text[],
               concurrency integer, in_flight integer, started_at timestamptz,
               last_seen_at timestamptz, lease_ms bigint, gone_at timestamptz, gone boolean)
LANGUAGE sql STABLE AS $$
    SELECT w.id, w.host, w.pid, w.queues, w.job_types, w.concurrency,
           CASE WHEN g.gone_at <= now() THEN 0 ELSE w.in_flight END,
           w.started_at, w.last_seen_at, w.lease_ms, g.gone_at, g.gone_at <= now()
      FROM pendulum.workers w
     CROSS JOIN LATERAL (SELECT pendulum.worker_gone_at(w.last_seen_at,
                                                        coalesce(window_ms, w.lease_ms)) AS gone_at) g
$$;

CREATE VIEW pendulum.live_workers AS
SELECT * FROM pendulum.worker_states() WHERE NOT gone;

-- 1 when a live worker takes jobs of job_type from queue.
CREATE FUNCTION pendulum.served(queue text, job_type text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM pendulum.live_workers w
                    WHERE served.queue = ANY (w.queues)
                      AND (served.job_type = ANY (w.job_types) OR '*' = ANY (w.job_types)))
$$;

-- The PENDING jobs no live worker serves, by queue and type: how many, and
-- since when the oldest waits (created_at).
CREATE VIEW pendulum.unserved AS
SELECT p.queue, p.job_type, p.jobs, p.oldest_created_at
  FROM (SELECT queue, job_type, count(*) AS jobs, min(created_at) AS oldest_created_at
          FROM pendulum.jobs WHERE state = 'PENDING' GROUP BY queue, job_type) p
 WHERE NOT pendulum.served(p.queue, p.job_type);

-- The workers_gone kind of prune counts from when a worker went, not from
-- when it was last seen. 011's prune goes on doing the other kinds, under
-- another name; pendulum.prune takes workers_gone itself.
ALTER FUNCTION pendulum.prune(text, bigint, integer) RENAME TO prune_history;
COMMENT ON FUNCTION pendulum.prune_history(text, bigint, integer) IS
    'pendulum.prune of sql/011, for every kind but workers_gone (sql/013).';

-- The worker rows gone for longer than older_ms, oldest first, at most n
-- (NULL: all).
CREATE FUNCTION pendulum.workers_gone(older_ms bigint, n integer) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT w.id FROM pendulum.workers w
     WHERE pendulum.worker_gone_at(w.last_seen_at, w.lease_ms)
           < now() - older_ms * interval '1 millisecond'
     ORDER BY w.last_seen_at LIMIT n
$$;

-- Delete them (those no other session holds), at most n; how many went.
CREATE FUNCTION pendulum.prune_workers_gone(older_ms bigint, n integer) RETURNS integer
LANGUAGE sql AS $$
    WITH c AS (SELECT w.id FROM pendulum.workers w
                WHERE w.id IN (SELECT pendulum.workers_gone(older_ms, n))
                  FOR UPDATE SKIP LOCKED),
         d AS (DELETE FROM pendulum.workers w USING c WHERE w.id = c.id RETURNING 1)
    SELECT count(*)::integer FROM d
$$;

CREATE FUNCTION pendulum.prune(kind text, older_ms bigint, n integer) RETURNS integer
LANGUAGE sql AS $$
    SELECT CASE WHEN kind = 'workers_gone' THEN pendulum.prune_workers_gone(older_ms, n)
                ELSE pendulum.prune_history(kind, older_ms, n) END
$$;

CREATE OR REPLACE FUNCTION pendulum.prune_count(kind text, older_ms bigint)
RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN kind = 'workers_gone'
                THEN (SELECT count(*) FROM pendulum.workers_gone(older_ms, NULL))
                ELSE (SELECT count(*) FROM pendulum.prune_candidates(kind, older_ms, NULL)) END
$$;

-- Someone waits for this job's end (pd-enqueue --wait sets it): when it
-- reaches SUCCEEDED, DEAD_LETTERED or CANCELLED, by whatever statement,
-- pg_notify('pendulum_done', id) is sent on commit. Only for these jobs: a
-- NOTIFY per finished job would make every worker's commit take the
-- notification queue's lock (see the README's measurements).
ALTER TABLE pendulum.jobs ADD COLUMN notify_done boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN pendulum.jobs.notify_done IS
    'Send pg_notify(''pendulum_done'', id) when the job ends (set by pd-enqueue --wait).';

CREATE FUNCTION pendulum.notify_done() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pendulum_done', NEW.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_done AFTER UPDATE OF state ON pendulum.jobs
    FOR EACH ROW
    WHEN (NEW.notify_done AND NEW.state IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELLED')
          AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION pendulum.notify_done();

-- A waiter joins: mark job id (notify_done) and return its state (NULL: no
-- such job). The caller LISTENs on pendulum_done first and reads the job
-- again after each notification, so an end that commits meanwhile is not
-- missed: either that UPDATE waits for this row lock and then sees the mark,
-- or this call waits for that one and sees the end. pd-enqueue --wait calls
-- it in the enqueuing transaction, before any worker can see the job: a
-- mark made later could hold the row while a worker's claim passes it by
-- (SKIP LOCKED).
CREATE FUNCTION pendulum.wait_job(id bigint) RETURNS text
LANGUAGE sql AS $$
    UPDATE pendulum.jobs j SET notify_done = true WHERE j.id = wait_job.id
    RETURNING j.state
$$;
