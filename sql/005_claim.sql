-- 005_claim: the job claim as a function, pendulum.claim_jobs, an index walk
-- whatever the backlog and the number of queues.
--
-- claim_jobs(queues, types, n, worker, lease, start): claim up to n runnable
-- jobs (PENDING, run_at <= now()) of these queues and job types (types NULL:
-- any type) for worker, in one statement: SKIP LOCKED, a new token each from
-- lease_token_seq, attempt + 1, lease_owner, lease_expires_at = now() + lease,
-- and a job_attempts row each. start false: LEASED, started_at NULL (the
-- worker starts them later, fenced); start true: RUNNING, started_at = now()
-- (the worker starts their handlers at once). Returns the claimed rows, in no
-- particular order: callers sort them (priority DESC, run_at, id).
--
-- Which jobs: the first n of all runnable jobs of the given queues in the
-- order priority DESC, run_at, id, leaving out rows another transaction has
-- locked (SKIP LOCKED). How, without sorting the backlog:
--
--   * per served queue (a LATERAL over the distinct names), walk that queue's
--     priority levels from the top, one index probe each on jobs_claim_idx
--     (queue, priority DESC, run_at, id) WHERE state = 'PENDING': the
--     recursive CTE lv (priority < the previous level, ORDER BY priority DESC
--     LIMIT 1). The walk is lazy: a level is only probed when the levels above
--     it did not give n jobs.
--   * within (queue, level), take the due rows in index order with run_at <=
--     now() as an index bound, so future-dated rows are never read, even when
--     a level has nothing but future rows left; LIMIT n, FOR UPDATE SKIP
--     LOCKED. The type filter is a filter on those heap rows.
--   * each queue thus yields its own first n (<= n rows locked per queue); a
--     Sort of these at most nqueues * n rows and LIMIT n give the first n of
--     the union, which is the exact global order. The price: the rows of the
--     per-queue tops that lose the merge (at most (nqueues - 1) * n) stay
--     locked, not claimed, until the claim's transaction ends; a concurrent
--     claim skips them as it skips any locked row.
--
-- Cost: per queue, one index descent per priority level probed plus the heap
-- rows taken (and those left out by the type filter or a lock); independent of
-- the number of pending and future-dated rows. Not bounded by this design: a
-- queue with many priority levels holding only future rows (one probe each),
-- and a type filter that matches few of a level's due rows (they are read and
-- skipped; give such types a queue of their own).
--
-- Plan (EXPLAIN ANALYZE via auto_explain, 1,000,000 PENDING rows over 10
-- queues, 3 levels, 30 % future-dated; claim of 8 from 3 queues: ~90 shared
-- buffers for the walk, ~1 ms, the same as with 100 rows):
--
--   CTE Scan on j
--     CTE c
--       -> Limit
--          -> Sort  (Key: priority DESC, run_at, id; at most nqueues * n rows)
--             -> Nested Loop
--                -> HashAggregate, or Unique -> Sort (the queue names)
--                   -> Function Scan on unnest
--                -> Limit                                  (per queue: n)
--                   CTE lv
--                     -> Recursive Union                   (the levels)
--                        -> Limit -> Index Only Scan using jobs_claim_idx
--                                      Index Cond: (queue = $1)
--                        -> WorkTable Scan on lv
--                             SubPlan -> Limit -> Index Only Scan using
--                               jobs_claim_idx
--                               Index Cond: (queue = $1 AND priority < lv.p)
--                   -> Nested Loop
--                      -> CTE Scan on lv
--                      -> Subquery Scan -> Limit -> LockRows
--                         -> Index Scan using jobs_claim_idx
--                              Index Cond: (queue = u.name AND priority = lv.p
--                                           AND run_at <= now())
--     CTE j
--       -> Update on jobs
--            InitPlan (returns the ids) -> CTE Scan on c
--            -> Index Scan using jobs_pkey  Index Cond: (id = ANY ($8))
--     CTE a
--       -> Insert on job_attempts -> CTE Scan on j
--
-- No Bitmap Heap Scan, no Sort of the backlog: tests/claim-plan.bats checks
-- this on a seeded backlog.
--
-- plpgsql rather than a SQL function so that the statement gets a custom plan
-- with n and the arrays known (the plan cache keeps choosing custom plans:
-- the generic one, LIMIT unknown, costs far more). jit = off: a generic plan
-- (plan_cache_mode = force_generic_plan) looks expensive enough to be JIT
-- compiled, which costs hundreds of milliseconds per claim and saves nothing.
CREATE FUNCTION pendulum.claim_jobs(
    queues text[],
    types  text[],
    n      integer,
    worker text,
    lease  interval,
    start  boolean DEFAULT false)
RETURNS SETOF pendulum.jobs
LANGUAGE plpgsql
SET jit = off
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
    ), j AS (
        -- = ANY (ARRAY(...)) rather than a join with c: an index probe per
        -- id even when the planner cannot tell that c is small.
        UPDATE pendulum.jobs x
           SET state = CASE WHEN claim_jobs.start THEN 'RUNNING' ELSE 'LEASED' END,
               lease_token = nextval('pendulum.lease_token_seq'),
               lease_owner = claim_jobs.worker,
               lease_expires_at = now() + claim_jobs.lease,
               attempt = x.attempt + 1,
               started_at = CASE WHEN claim_jobs.start THEN now() END
         WHERE x.id = ANY (ARRAY(SELECT c.id FROM c))
        RETURNING x.*
    ), a AS (
        INSERT INTO pendulum.job_attempts (job_id, attempt, lease_token, worker)
        SELECT j.id, j.attempt, j.lease_token, claim_jobs.worker FROM j
    )
    SELECT * FROM j;
END
$$;
