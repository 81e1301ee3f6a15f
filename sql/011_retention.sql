-- 011_retention: pruning finished history, and counters that pruning does
-- not lower.
--
-- pendulum.prune(kind, older_ms, n) deletes at most n rows of one kind
-- (succeeded, cancelled, dead_lettered, outbox_published, workers_gone)
-- older than older_ms, oldest first, skipping rows another session holds:
-- one call is one short transaction, callers loop (lib/prune.c). A finished
-- job that a BLOCKED job depends on is kept (its dependant would otherwise
-- wait for ever). Attempts and workflow runs go with their job (ON DELETE
-- CASCADE, sql/002, sql/010).
--
-- The _total series and histograms of pd-admin metrics are aggregates of
-- the tables (pendulum.metric_samples) plus pendulum.retired_metrics: every
-- deletion path Pendulum owns (prune, pd-admin dlq delete and purge, through
-- pendulum.delete_jobs) adds what the rows it deletes counted, in the same
-- transaction. Nothing is written on the hot path (claim, outcome): only a
-- deletion pays. Deleting jobs by hand, or TRUNCATE, lowers the series.

CREATE TABLE pendulum.retired_metrics (
    kind    text NOT NULL CHECK (kind IN ('attempt', 'wait')),
    queue   text NOT NULL,
    outcome text NOT NULL DEFAULT '',  -- an attempt's; '' for a wait
    bucket  integer NOT NULL,          -- pendulum.metric_bucket; -1: no duration
    n       bigint NOT NULL DEFAULT 0,
    seconds double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, queue, outcome, bucket)
);

COMMENT ON TABLE pendulum.retired_metrics IS
    'What deleted jobs counted in the metrics (attempts by outcome, durations, queue waits), '
    'added by pendulum.delete_jobs in the deleting transaction.';

-- The histogram bounds, in seconds (le of pendulum_*_seconds_bucket).
CREATE FUNCTION pendulum.metric_bounds() RETURNS double precision[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30,60,300,900,3600}'::double precision[]
$$;

-- The bucket of d seconds: the index (0-based) of the first bound >= d, 16
-- (+Inf) past the last; NULL for NULL. width_bucket counts the bounds <= its
-- operand, so on the negated bounds it counts the bounds >= d. Written
-- without FROM so that the planner inlines it.
CREATE FUNCTION pendulum.metric_bucket(d double precision) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 16 - width_bucket(-d, '{-3600,-900,-300,-60,-30,-10,-5,-2.5,-1,-0.5,-0.25,-0.1,-0.05,-0.025,-0.01,-0.005}'::double precision[])
$$;

-- One row per finished attempt (kind 'attempt': its outcome and run time)
-- and per finished job that started (kind 'wait': run_at to its start).
CREATE VIEW pendulum.metric_samples AS
SELECT x.job_id, 'attempt'::text AS kind, j.queue, x.outcome,
       coalesce(pendulum.metric_bucket(t.d), -1) AS bucket, t.d
  FROM pendulum.job_attempts x
  JOIN pendulum.jobs j ON j.id = x.job_id
 CROSS JOIN LATERAL (SELECT greatest(extract(epoch FROM x.finished_at - x.started_at), 0)::double precision AS d) t
 WHERE x.outcome IS NOT NULL
UNION ALL
SELECT j.id, 'wait', j.queue, '', coalesce(pendulum.metric_bucket(t.d), -1), t.d
  FROM pendulum.jobs j
 CROSS JOIN LATERAL (SELECT greatest(extract(epoch FROM j.started_at - j.run_at), 0)::double precision AS d) t
 WHERE j.state IN ('SUCCEEDED', 'DEAD_LETTERED') AND j.started_at IS NOT NULL;

-- The monotonic totals: live samples plus retired ones, by kind, queue,
-- outcome and bucket (what pd-admin metrics reads).
CREATE VIEW pendulum.metric_totals AS
SELECT kind, queue, outcome, bucket, sum(n)::bigint AS n, sum(seconds) AS seconds
  FROM (SELECT kind, queue, outcome, bucket, count(*) AS n, coalesce(sum(d), 0) AS seconds
          FROM pendulum.metric_samples GROUP BY kind, queue, outcome, bucket
        UNION ALL
        SELECT kind, queue, outcome, bucket, n, seconds FROM pendulum.retired_metrics) u
 GROUP BY kind, queue, outcome, bucket;

-- delete_jobs: delete the jobs of ids that are in state (any state when
-- NULL), first adding what they count to retired_metrics. Locks them
-- (skipping rows another session holds when skip_locked). Returns the
-- deleted jobs. Its statements share the caller's transaction.
CREATE FUNCTION pendulum.delete_jobs(ids bigint[], state text DEFAULT NULL,
                                     skip_locked boolean DEFAULT false)
RETURNS TABLE (id bigint, job_type text, queue text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
    IF skip_locked THEN
        v_ids := ARRAY(SELECT j.id FROM pendulum.jobs j WHERE j.id = ANY (delete_jobs.ids)
                          AND (delete_jobs.state IS NULL OR j.state = delete_jobs.state)
                          ORDER BY j.id FOR UPDATE SKIP LOCKED);
    ELSE
        v_ids := ARRAY(SELECT j.id FROM pendulum.jobs j WHERE j.id = ANY (delete_jobs.ids)
                          AND (delete_jobs.state IS NULL OR j.state = delete_jobs.state)
                          ORDER BY j.id FOR UPDATE);
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO pendulum.retired_metrics AS r (kind, queue, outcome, bucket, n, seconds)
    SELECT s.kind, s.queue, s.outcome, s.bucket, count(*), coalesce(sum(s.d), 0)
      FROM pendulum.metric_samples s WHERE s.job_id = ANY (v_ids)
     GROUP BY s.kind, s.queue, s.outcome, s.bucket
    ON CONFLICT (kind, queue, outcome, bucket)
    DO UPDATE SET n = r.n + EXCLUDED.n, seconds = r.seconds + EXCLUDED.seconds;
    RETURN QUERY
    DELETE FROM pendulum.jobs j WHERE j.id = ANY (v_ids)
    RETURNING j.id, j.job_type, j.queue;
END
$$;

-- Finished rows by age: what prune walks. Each index holds only the rows of
-- its kind; a finished job enters one (a write per finished job, the only
-- cost retention adds to the hot path: see the README).
CREATE INDEX jobs_finished_idx ON pendulum.jobs (state, finished_at)
    WHERE state IN ('SUCCEEDED', 'CANCELLED', 'DEAD_LETTERED');
CREATE INDEX outbox_published_idx ON pendulum.outbox (published_at)
    WHERE state = 'PUBLISHED';

-- The candidates of one kind, oldest first, at most n (NULL: all).
CREATE FUNCTION pendulum.prune_candidates(kind text, older_ms bigint, n integer)
RETURNS SETOF bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_before timestamptz := now() - older_ms * interval '1 millisecond';
    v_state text := CASE kind WHEN 'succeeded' THEN 'SUCCEEDED' WHEN 'cancelled' THEN 'CANCELLED'
                              WHEN 'dead_lettered' THEN 'DEAD_LETTERED' END;
BEGIN
    IF v_state IS NOT NULL THEN
        RETURN QUERY
        SELECT j.id FROM pendulum.jobs j
         WHERE j.state = v_state AND j.finished_at < v_before
           AND NOT EXISTS (SELECT 1 FROM pendulum.jobs b
                            WHERE b.state = 'BLOCKED' AND b.depends_on @> ARRAY[j.id])
         ORDER BY j.finished_at LIMIT n;
    ELSIF kind = 'outbox_published' THEN
        RETURN QUERY
        SELECT o.id FROM pendulum.outbox o
         WHERE o.state = 'PUBLISHED' AND o.published_at < v_before
         ORDER BY o.published_at LIMIT n;
    ELSE
        RAISE EXCEPTION 'prune: unknown kind ''%''', kind USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

-- prune: delete at most n rows of kind older than older_ms; returns how
-- many went. workers_gone deletes worker rows not seen for older_ms.
CREATE FUNCTION pendulum.prune(kind text, older_ms bigint, n integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    IF kind IN ('succeeded', 'cancelled', 'dead_lettered') THEN
        SELECT count(*) INTO v_count FROM pendulum.delete_jobs(
            ARRAY(SELECT pendulum.prune_candidates(kind, older_ms, n)), NULL, true);
    ELSIF kind = 'outbox_published' THEN
        WITH c AS (SELECT o.id FROM pendulum.outbox o
                    WHERE o.id = ANY (ARRAY(SELECT pendulum.prune_candidates(kind, older_ms, n)))
                      AND o.state = 'PUBLISHED'
                      FOR UPDATE SKIP LOCKED),
             d AS (DELETE FROM pendulum.outbox o USING c WHERE o.id = c.id RETURNING 1)
        SELECT count(*) INTO v_count FROM d;
    ELSIF kind = 'workers_gone' THEN
        WITH c AS (SELECT w.id FROM pendulum.workers w
                    WHERE w.last_seen_at < now() - older_ms * interval '1 millisecond'
                    ORDER BY w.last_seen_at LIMIT n FOR UPDATE SKIP LOCKED),
             d AS (DELETE FROM pendulum.workers w USING c WHERE w.id = c.id RETURNING 1)
        SELECT count(*) INTO v_count FROM d;
    ELSE
        RAISE EXCEPTION 'prune: unknown kind ''%''', kind USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_count;
END
$$;

-- prune_count: how many rows prune would delete now (pd-admin prune --dry-run).
CREATE FUNCTION pendulum.prune_count(kind text, older_ms bigint)
RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF kind = 'workers_gone' THEN
        RETURN (SELECT count(*) FROM pendulum.workers w
                 WHERE w.last_seen_at < now() - older_ms * interval '1 millisecond');
    END IF;
    RETURN (SELECT count(*) FROM pendulum.prune_candidates(kind, older_ms, NULL));
END
$$;
