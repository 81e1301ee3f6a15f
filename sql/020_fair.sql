-- 020_fair: fair claims across tenants, limits by key that hold across the
-- fleet (at most N running, at most N started per window), and pause.
--
-- Vocabulary:
--   * a job's lane within a queue and a priority is its tenant; claims go
--     round-robin across the tenants with work, weighted by
--     pendulum.tenants.weight (default 1);
--   * a limit (pendulum.limits) is named by a key: a job's concurrency_key,
--     or one of the reserved keys 'queue:NAME', 'tenant:NAME', 'type:NAME'
--     that apply to every job of that queue, tenant or type. A limit caps
--     the jobs running at once (concurrency), the starts per window (rate,
--     period), or stops all starts (paused);
--   * a PENDING job that a claim found over one of its limits is parked on
--     that key (parked_on): out of the claim's index, its run_at untouched,
--     taken again by a later claim once the limit has room.

ALTER TABLE pendulum.jobs
    ADD COLUMN concurrency_key text,
    ADD COLUMN parked_on text;
-- Keys with a reserved prefix name a queue, tenant or type, never a job's own.
ALTER TABLE pendulum.jobs ADD CONSTRAINT jobs_concurrency_key_check
    CHECK (concurrency_key <> '' AND concurrency_key !~ '^(queue|tenant|type):') NOT VALID;
COMMENT ON COLUMN pendulum.jobs.concurrency_key IS
    'The limit key this job counts against (pendulum.limits), besides queue:, tenant: and type:.';
COMMENT ON COLUMN pendulum.jobs.parked_on IS
    'PENDING and held back by this limit key (over its concurrency or rate, or paused); NULL: claimable.';

-- The claim's walk (claim_jobs below): queue, level, tenant, then due order.
DROP INDEX pendulum.jobs_claim_idx;
CREATE INDEX jobs_fair_idx ON pendulum.jobs (queue, priority DESC, tenant_id, run_at, id)
    WHERE state = 'PENDING' AND parked_on IS NULL;
-- The parked jobs of a key, in the order they are taken back.
CREATE INDEX jobs_parked_idx ON pendulum.jobs (parked_on, queue, priority DESC, run_at, id)
    WHERE state = 'PENDING' AND parked_on IS NOT NULL;
-- What runs, for the limits' counts (pendulum.limit_running).
CREATE INDEX jobs_running_key_idx ON pendulum.jobs (concurrency_key)
    WHERE state IN ('LEASED', 'RUNNING') AND concurrency_key IS NOT NULL;
CREATE INDEX jobs_running_idx ON pendulum.jobs (queue, tenant_id, job_type)
    WHERE state IN ('LEASED', 'RUNNING');

CREATE TABLE pendulum.tenants (
    tenant_id  text PRIMARY KEY CHECK (tenant_id <> ''),
    weight     integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000),
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pendulum.tenants IS
    'A tenant''s share of the claims (weight; a tenant without a row has weight 1).';

CREATE TABLE pendulum.limits (
    key         text PRIMARY KEY CHECK (key <> ''),
    concurrency integer CHECK (concurrency BETWEEN 0 AND 1000000),
    rate        integer CHECK (rate BETWEEN 1 AND 10000),
    period      interval CHECK (period > interval '0' AND period <= interval '1 day'),
    paused      boolean NOT NULL DEFAULT false,
    starts      timestamptz[] NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((rate IS NULL) = (period IS NULL)),
    CHECK (key !~ '^(queue|tenant|type):$')
);
COMMENT ON TABLE pendulum.limits IS
    'Per key: at most concurrency running at once, at most rate started per period, or paused (sql/020).';
COMMENT ON COLUMN pendulum.limits.starts IS
    'The claim instants of the starts in the last period, oldest first (at most rate of them).';

-- How many jobs of this limit key are LEASED or RUNNING now. A queue's
-- count is a prefix of jobs_running_idx; a tenant's and a type's read the
-- running set in that index; a job key's is jobs_running_key_idx.
CREATE FUNCTION pendulum.limit_running(key text) RETURNS integer
LANGUAGE sql STABLE
SET search_path = pendulum, pg_temp
AS $$
    SELECT (CASE
        WHEN limit_running.key LIKE 'queue:%' THEN
            (SELECT count(*) FROM pendulum.jobs x
              WHERE x.queue = substr(limit_running.key, 7) AND x.state IN ('LEASED', 'RUNNING'))
        WHEN limit_running.key LIKE 'tenant:%' THEN
            (SELECT count(*) FROM pendulum.jobs x
              WHERE x.tenant_id = substr(limit_running.key, 8) AND x.state IN ('LEASED', 'RUNNING'))
        WHEN limit_running.key LIKE 'type:%' THEN
            (SELECT count(*) FROM pendulum.jobs x
              WHERE x.job_type = substr(limit_running.key, 6) AND x.state IN ('LEASED', 'RUNNING'))
        ELSE
            (SELECT count(*) FROM pendulum.jobs x
              WHERE x.concurrency_key = limit_running.key AND x.state IN ('LEASED', 'RUNNING'))
        END)::integer
$$;

-- A limit key as given: a name (pendulum.check_name), 'queue:', 'tenant:' or
-- 'type:' followed by one. SQLSTATE 22023 otherwise.
CREATE FUNCTION pendulum.check_limit_key(key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    IF key IS NULL OR key = '' THEN
        RAISE EXCEPTION 'limit key: must not be empty' USING ERRCODE = '22023';
    END IF;
    PERFORM pendulum.check_name('key', key);
    IF key ~ '^(queue|tenant|type):$' THEN
        RAISE EXCEPTION 'limit key "%": no name after the prefix', key USING ERRCODE = '22023';
    END IF;
    RETURN key;
END
$$;

-- The jobs parked on key go back to the claim's index (the limit is gone),
-- and the workers of their queues are woken. Returns how many.
CREATE FUNCTION pendulum.unpark(key text) RETURNS bigint
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
DECLARE
    v_n bigint;
    v_w bigint;
BEGIN
    WITH u AS (
        UPDATE pendulum.jobs x SET parked_on = NULL
         WHERE x.parked_on = unpark.key AND x.state = 'PENDING'
        RETURNING x.queue
    ), q AS (
        SELECT u.queue, count(*) AS n FROM u GROUP BY u.queue
    )
    SELECT COALESCE(sum(q.n), 0), count(pg_notify('pendulum_jobs', q.queue))
      INTO v_n, v_w FROM q;
    RETURN v_n;
END
$$;

-- Wake the workers that may now take jobs held by key: its parked jobs'
-- queues, or the queue itself for 'queue:NAME'.
CREATE FUNCTION pendulum.limit_wake(key text) RETURNS void
LANGUAGE sql
SET search_path = pendulum, pg_temp
AS $$
    SELECT pg_notify('pendulum_jobs', q)
      FROM (SELECT substr(limit_wake.key, 7) AS q WHERE limit_wake.key LIKE 'queue:%'
            UNION
            SELECT DISTINCT x.queue FROM pendulum.jobs x
             WHERE x.parked_on = limit_wake.key AND x.state = 'PENDING') s;
$$;

-- After a change to key's limit: the workers that may take its jobs now are
-- woken; a limit row that caps nothing any more is deleted (its parked jobs
-- are claimed like the others: claim_jobs_fair takes a parked job whose
-- limit is gone). No job row is written here: this runs holding the limit
-- row, and a claim holding job rows may be waiting for it.
CREATE FUNCTION pendulum.limit_tidy(key text) RETURNS void
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    PERFORM pendulum.limit_wake(limit_tidy.key);
    DELETE FROM pendulum.limits l
     WHERE l.key = limit_tidy.key AND l.concurrency IS NULL AND l.rate IS NULL AND NOT l.paused;
END
$$;

-- At most n of key's jobs running at once (n NULL: no cap).
CREATE FUNCTION pendulum.limit_concurrency(key text, n integer) RETURNS void
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    PERFORM pendulum.check_limit_key(limit_concurrency.key);
    INSERT INTO pendulum.limits AS l (key, concurrency) VALUES (limit_concurrency.key, n)
    ON CONFLICT ON CONSTRAINT limits_pkey DO UPDATE SET concurrency = EXCLUDED.concurrency, updated_at = now();
    PERFORM pendulum.limit_tidy(limit_concurrency.key);
END
$$;

-- At most n of key's jobs started per period, across the fleet (n NULL: no
-- rate limit). The window slides: any period-long span holds at most n
-- claims of the key's jobs.
CREATE FUNCTION pendulum.limit_rate(key text, n integer, period interval) RETURNS void
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    PERFORM pendulum.check_limit_key(limit_rate.key);
    IF (n IS NULL) <> (limit_rate.period IS NULL) THEN
        RAISE EXCEPTION 'limit rate of "%": give both a count and a period, or neither', key
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO pendulum.limits AS l (key, rate, period)
    VALUES (limit_rate.key, n, limit_rate.period)
    ON CONFLICT ON CONSTRAINT limits_pkey DO UPDATE
        SET rate = EXCLUDED.rate, period = EXCLUDED.period, updated_at = now(),
            starts = CASE WHEN EXCLUDED.rate IS NULL THEN '{}' ELSE l.starts END;
    PERFORM pendulum.limit_tidy(limit_rate.key);
END
$$;

-- Pause (claims take none of key's jobs; running ones finish) or resume.
CREATE FUNCTION pendulum.limit_pause(key text, paused boolean) RETURNS void
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    PERFORM pendulum.check_limit_key(limit_pause.key);
    INSERT INTO pendulum.limits AS l (key, paused) VALUES (limit_pause.key, limit_pause.paused)
    ON CONFLICT ON CONSTRAINT limits_pkey DO UPDATE SET paused = EXCLUDED.paused, updated_at = now();
    PERFORM pendulum.limit_tidy(limit_pause.key);
END
$$;

-- The limit is removed (caps, rate and pause) and its jobs unparked.
-- Returns whether there was one.
CREATE FUNCTION pendulum.limit_unset(key text) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pendulum.limits l WHERE l.key = limit_unset.key) THEN
        RETURN false;
    END IF;
    -- Unparked before the row is locked (see limit_tidy).
    PERFORM pendulum.limit_wake(limit_unset.key);
    PERFORM pendulum.unpark(limit_unset.key);
    DELETE FROM pendulum.limits l WHERE l.key = limit_unset.key;
    RETURN FOUND;
END
$$;

-- A tenant's weight (1 to 1000; NULL: back to the default, 1).
CREATE FUNCTION pendulum.set_tenant_weight(tenant text, weight integer) RETURNS void
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    PERFORM pendulum.check_name('tenant', tenant);
    IF set_tenant_weight.weight IS NULL THEN
        DELETE FROM pendulum.tenants t WHERE t.tenant_id = set_tenant_weight.tenant;
    ELSE
        INSERT INTO pendulum.tenants AS t (tenant_id, weight)
        VALUES (set_tenant_weight.tenant, set_tenant_weight.weight)
        ON CONFLICT (tenant_id) DO UPDATE SET weight = EXCLUDED.weight, updated_at = now();
    END IF;
END
$$;

-- Each limit: its caps, what runs under it, its window's use, what waits.
CREATE VIEW pendulum.limit_status WITH (security_invoker = true) AS
SELECT l.key,
       l.concurrency,
       pendulum.limit_running(l.key) AS running,
       l.rate,
       l.period,
       CASE WHEN l.rate IS NOT NULL THEN
           (SELECT count(*) FROM unnest(l.starts) s WHERE s > now() - l.period)::integer
       END AS window_used,
       (SELECT count(*) FROM pendulum.jobs x
         WHERE x.parked_on = l.key AND x.state = 'PENDING')::bigint AS waiting,
       l.paused,
       l.updated_at
  FROM pendulum.limits l;
COMMENT ON VIEW pendulum.limit_status IS
    'pd-admin limits: per key, caps, jobs running, starts in the rate window, jobs parked, paused.';

-- The claim. claim_jobs(queues, types, n, worker, lease, start, fair):
-- claim up to n runnable jobs (PENDING, not parked, run_at <= now()) of
-- these queues and job types (types NULL: any) for worker, in one call:
-- SKIP LOCKED, a new token each from lease_token_seq, attempt + 1,
-- lease_owner, lease_expires_at = now() + lease; LEASED, or RUNNING with
-- started_at = now() when start. Returns the claimed rows (job) in no
-- particular order, each with fair_next, and one row with job NULL when
-- nothing was claimed but fair_next moved: the caller passes fair_next as
-- fair to its next claim (a jsonb object: per queue, [used, tenant], where
-- the last claim's round-robin stopped; NULL: from the start). Nothing of
-- it is kept in the server (the session may be a pooled one).
--
-- Which jobs:
--   * priority first: the served queues' levels are handed out from the
--     top (a level is probed only when the levels above gave fewer than n);
--     queues paused by a 'queue:NAME' limit are left out;
--   * within a level of a queue, round-robin across its tenants from the
--     cursor (the tenant after the last one served; the same one while it
--     has weight left in its turn): a walk of at most 16 tenants (fewer
--     when n is smaller), one index probe each on jobs_fair_idx (tenant_id
--     > the previous one), wrapping round to the first; each walked
--     tenant's turn is its weight; the rounds needed to fill n decide each
--     tenant's quota (its weight times the rounds, at most n), and its due
--     rows in run_at order, LIMIT quota,
--     FOR UPDATE SKIP LOCKED; candidates rank by round, then place in the
--     walk. Queues at the same level interleave round by round;
--   * the jobs parked on a key (a walk of the distinct keys of
--     jobs_parked_idx, then per key its first n in the served queues) are
--     candidates too, ahead of the fresh ones of their level;
--   * limits (only when pendulum.limits has a row): the candidates' keys
--     (concurrency_key, queue:, tenant:, type:) that have a limit are
--     locked FOR UPDATE, in key order. Then in a new statement -- a fresh
--     snapshot, taken after the locks, so it sees every claim committed
--     before them -- each locked key's room: concurrency minus
--     limit_running(key), rate minus the starts within its period, 0 if
--     paused. A candidate is claimed when every limit it falls under has
--     room (which it then uses up); one over a limit is parked on that key.
--
-- Why no two claims exceed a cap: a claim counts a key's running jobs only
-- while it holds the key's row locked, in a snapshot taken after the lock,
-- and keeps the lock until its transaction ends. A second claim of the same
-- key waits for the lock and then counts the first one's jobs. Finishing, a
-- lost lease being reaped or a cancel take the job out of LEASED/RUNNING,
-- which is what is counted: no counter to keep right, and a reaped lease
-- frees its slot. A rate's starts are appended under the same lock. The
-- wait cannot deadlock: claims lock limit rows in key order, and whatever
-- holds a limit row (a claim after its job rows, pd-admin's limit
-- functions) never waits for a job row (pendulum.limit_unset unparks
-- before it locks). Claims of the same key thus run their limit step one
-- at a time; a claim that finds a key's row locked waits about one claim.
--
-- Why 16: a claim of 100 over 1,000 tenants that walked 100 of them cost
-- 200 probes, 2.5 times a claim of one tenant's 100 (make bench); with 16,
-- the round-robin is the same over successive claims, in turns of a few
-- jobs instead of one.
--
-- Cost, per queue and level handed out: one probe for the level, at most
-- 17 probes for the tenant walk, and one probe per walked tenant for its
-- rows; independent of the backlog, the number of future-dated rows and the
-- number of tenants. With limits: one statement locking the keys, one
-- counting the running jobs of each (its index holds only the running set),
-- and for each key with parked jobs one probe of jobs_parked_idx. Not
-- bounded: a type filter or a tenant walk that finds few due rows (a tenant
-- whose rows at the level are all future-dated is a probe that gives none);
-- the claim then returns fewer than n and the cursor moves past them.
--
-- Plans (EXPLAIN ANALYZE, BUFFERS via auto_explain with nested statements;
-- tests/claim-plan.bats checks them on a seeded backlog of 430,000 PENDING
-- rows: 10 queues of one tenant, and queues with 1, 100 and 10,000 tenants
-- with work, 10,000 rows in pendulum.tenants). A claim of 8 reads 205
-- shared buffers with 1 tenant, 266 with 100, 262 with 10,000 -- every
-- statement an index probe:
--
--   level:       Limit -> Index Only Scan using jobs_fair_idx
--                           Index Cond: (queue = $q)            [priority < $p]
--   next tenant: Limit -> Index Only Scan using jobs_fair_idx
--                           Index Cond: (queue = $q AND priority = $p
--                                        AND tenant_id > $t)
--   weights:     SubPlan per walked tenant -> Index Scan using tenants_pkey
--   its rows:    Limit -> LockRows -> Index Scan using jobs_fair_idx
--                           Index Cond: (queue = $q AND priority = $p
--                                        AND tenant_id = $t AND run_at <= now())
--                           Filter: parked_on IS NULL, state, types
--   the claim:   Update on jobs -> Index Scan using jobs_pkey
--                           Index Cond: (id = ANY ($ids))
--   with limits: Index Scan using limits_pkey (key = ANY ($keys)) -> LockRows;
--                per locked key: Aggregate -> Index Only Scan using
--                jobs_running_key_idx / jobs_running_idx; parked keys:
--                Recursive Union over jobs_parked_idx, per key
--                Limit -> LockRows -> Index Scan using jobs_parked_idx
--
-- No Seq Scan or Bitmap Heap Scan of jobs, no Sort of more rows than the
-- candidates (at most n per walked queue).
--
-- plpgsql: a few statements per queue and level, each a prepared plan
-- (plan_cache_mode = force_generic_plan, as in 007; jit off as in 005).
CREATE FUNCTION pendulum.claim_jobs_fair(
    queues text[],
    types  text[],
    n      integer,
    worker text,
    lease  interval,
    start  boolean DEFAULT false,
    fair   jsonb DEFAULT NULL)
RETURNS TABLE (job pendulum.jobs, fair_next jsonb)
LANGUAGE plpgsql
SET jit = off
SET plan_cache_mode = force_generic_plan
SET search_path = pendulum, pg_temp
AS $$
DECLARE
    v_limited boolean;
    v_weighted boolean;        -- pendulum.tenants has a row: weights to look up
    v_fair    jsonb := CASE WHEN jsonb_typeof(claim_jobs_fair.fair) = 'object'
                            THEN claim_jobs_fair.fair ELSE '{}' END;
    v_moved   boolean := false;
    v_q       text[];          -- the served queues, paused ones left out
    v_lv      integer[];       -- each one's level being handed out (NULL: none left)
    v_p       integer;         -- the level handed out now
    v_got     integer := 0;    -- candidates so far
    -- the candidates (parallel arrays)
    c_id     bigint[]  := '{}';
    c_prio   integer[] := '{}';
    c_round  integer[] := '{}';
    c_pos    integer[] := '{}';
    c_qi     integer[] := '{}';
    c_rn     integer[] := '{}';
    c_queue  text[]    := '{}';
    c_tenant text[]    := '{}';
    c_key    text[]    := '{}';
    c_type   text[]    := '{}';
    c_parked text[]    := '{}';
    -- one queue's walk
    w_t      text[];
    w_w      integer[];
    w_cr     integer[];
    v_cur    text;
    v_used   integer;
    v_incl   boolean;
    v_t      text;
    v_cw     integer;
    v_sumcr  integer;
    v_sumw   integer;
    v_rounds integer;
    v_last   text[];           -- per queue: the last tenant walked
    v_inc    boolean[];        -- per queue: the walk began with the cursor's tenant
    i        integer;
    k        integer;
    -- limits
    l_keys   text[];
    l_locked text[] := '{}';
    l_room   integer[] := '{}';
    l_rate   boolean[] := '{}';
    l_taken  integer[] := '{}';
    x_keys   text[];
    v_ok     boolean;
    v_park   text;
    s_id     bigint[] := '{}';
    s_ord    integer[] := '{}';
    p_id     bigint[] := '{}';
    p_key    text[] := '{}';
    -- the chosen order
    o        integer[];
    -- one statement's candidates
    a_id     bigint[];
    a_prio   integer[];
    a_round  integer[];
    a_pos    integer[];
    a_rn     integer[];
    a_queue  text[];
    a_tenant text[];
    a_key    text[];
    a_type   text[];
    a_parked text[];
BEGIN
    IF claim_jobs_fair.n IS NULL OR claim_jobs_fair.n < 1 THEN
        RETURN;
    END IF;
    v_limited := EXISTS (SELECT 1 FROM pendulum.limits);
    v_weighted := EXISTS (SELECT 1 FROM pendulum.tenants);
    IF v_limited THEN
        l_keys := ARRAY(SELECT l.key FROM pendulum.limits l
                         WHERE l.key = ANY (ARRAY(SELECT 'queue:' || u.q
                                                    FROM unnest(claim_jobs_fair.queues) AS u(q)))
                           AND l.paused);
    END IF;
    v_q := ARRAY(SELECT DISTINCT u.q FROM unnest(claim_jobs_fair.queues) AS u(q)
                  WHERE u.q IS NOT NULL AND NOT ('queue:' || u.q = ANY (COALESCE(l_keys, '{}')))
                  ORDER BY u.q);
    v_lv := array_fill(NULL::integer, ARRAY[cardinality(v_q)]);
    v_last := array_fill(NULL::text, ARRAY[cardinality(v_q)]);
    v_inc := array_fill(false, ARRAY[cardinality(v_q)]);
    FOR i IN 1 .. cardinality(v_q) LOOP
        v_lv[i] := (SELECT x.priority FROM pendulum.jobs x
                     WHERE x.queue = v_q[i] AND x.state = 'PENDING' AND x.parked_on IS NULL
                     ORDER BY x.priority DESC LIMIT 1);
    END LOOP;

    -- Levels from the top until n candidates.
    v_p := NULL;
    LOOP
        -- The next level down of the queues handed out last (not probed
        -- when those gave n).
        IF v_p IS NOT NULL THEN
            EXIT WHEN v_got >= claim_jobs_fair.n;
            FOR i IN 1 .. cardinality(v_q) LOOP
                CONTINUE WHEN v_lv[i] IS DISTINCT FROM v_p;
                v_lv[i] := (SELECT x.priority FROM pendulum.jobs x
                             WHERE x.queue = v_q[i] AND x.state = 'PENDING' AND x.parked_on IS NULL
                               AND x.priority < v_p
                             ORDER BY x.priority DESC LIMIT 1);
            END LOOP;
        END IF;
        v_p := (SELECT max(u.p) FROM unnest(v_lv) AS u(p));
        EXIT WHEN v_p IS NULL;
        FOR i IN 1 .. cardinality(v_q) LOOP
            CONTINUE WHEN v_lv[i] IS DISTINCT FROM v_p;
            -- The cursor of this queue: [used, tenant].
            v_cur := v_fair -> v_q[i] ->> 1;
            v_used := COALESCE((v_fair -> v_q[i] ->> 0)::integer, 0);
            v_cw := CASE WHEN v_weighted THEN
                        COALESCE((SELECT t.weight FROM pendulum.tenants t WHERE t.tenant_id = v_cur), 1)
                        ELSE 1 END;
            v_incl := v_cur IS NOT NULL AND v_used < v_cw;
            v_inc[i] := v_incl;
            -- The walk, one statement: the cursor's tenant while it has turns
            -- left, the tenants after it, then from the first up to it; at
            -- most n, one index probe each (the Append runs its parts in
            -- order, each recursive part as far as it is read, and stops at
            -- the LIMIT).
            w_t := ARRAY(
                WITH RECURSIVE a(t) AS (
                    (SELECT x.tenant_id FROM pendulum.jobs x
                      WHERE x.queue = v_q[i] AND x.state = 'PENDING' AND x.parked_on IS NULL
                        AND x.priority = v_p AND x.tenant_id > COALESCE(v_cur, '')
                      ORDER BY x.tenant_id LIMIT 1)
                    UNION ALL
                    SELECT (SELECT x.tenant_id FROM pendulum.jobs x
                             WHERE x.queue = v_q[i] AND x.state = 'PENDING'
                               AND x.parked_on IS NULL AND x.priority = v_p AND x.tenant_id > a.t
                             ORDER BY x.tenant_id LIMIT 1)
                      FROM a WHERE a.t IS NOT NULL
                ), b(t) AS (
                    (SELECT x.tenant_id FROM pendulum.jobs x
                      WHERE v_cur IS NOT NULL AND x.queue = v_q[i] AND x.state = 'PENDING'
                        AND x.parked_on IS NULL AND x.priority = v_p
                      ORDER BY x.tenant_id LIMIT 1)
                    UNION ALL
                    SELECT (SELECT x.tenant_id FROM pendulum.jobs x
                             WHERE x.queue = v_q[i] AND x.state = 'PENDING'
                               AND x.parked_on IS NULL AND x.priority = v_p AND x.tenant_id > b.t
                             ORDER BY x.tenant_id LIMIT 1)
                      FROM b WHERE b.t < v_cur
                )
                SELECT w.t FROM (
                    SELECT v_cur AS t WHERE v_incl
                    UNION ALL
                    SELECT a.t FROM a WHERE a.t IS NOT NULL
                    UNION ALL
                    SELECT b.t FROM b WHERE b.t < v_cur OR (b.t = v_cur AND NOT v_incl)
                ) AS w
                LIMIT least(claim_jobs_fair.n, 16));
            CONTINUE WHEN cardinality(w_t) = 0;
            v_last[i] := w_t[cardinality(w_t)];
            -- Turns: each walked tenant's weight (the cursor's what is left
            -- of it); enough rounds to fill n; quota = its turns, at most n.
            IF v_weighted THEN
                w_w := ARRAY(SELECT COALESCE((SELECT t.weight FROM pendulum.tenants t
                                               WHERE t.tenant_id = u.name), 1)
                               FROM unnest(w_t) WITH ORDINALITY AS u(name, ord)
                              ORDER BY u.ord);
                v_sumw := (SELECT sum(u.c) FROM unnest(w_w) AS u(c));
            ELSE
                w_w := array_fill(1, ARRAY[cardinality(w_t)]);
                v_sumw := cardinality(w_t);
            END IF;
            w_cr := w_w;
            v_sumcr := v_sumw;
            IF v_incl THEN
                w_cr[1] := w_w[1] - v_used;
                v_sumcr := v_sumw - v_used;
            END IF;
            v_rounds := 1 + ceil(greatest(0, claim_jobs_fair.n - v_sumcr)::numeric / v_sumw)::integer;
            -- Each walked tenant's due rows, its quota of them, in one
            -- statement (a LATERAL probe per tenant), ranked by round.
            SELECT array_agg(y.id ORDER BY u.k, y.rn),
                   array_agg(CASE WHEN y.rn <= u.cr THEN 0 ELSE 1 + (y.rn - u.cr - 1) / u.w END
                             ORDER BY u.k, y.rn),
                   array_agg(u.k::integer ORDER BY u.k, y.rn),
                   array_agg(y.rn::integer ORDER BY u.k, y.rn),
                   array_agg(u.t ORDER BY u.k, y.rn),
                   array_agg(y.concurrency_key ORDER BY u.k, y.rn),
                   array_agg(y.job_type ORDER BY u.k, y.rn)
              INTO a_id, a_round, a_pos, a_rn, a_tenant, a_key, a_type
              FROM unnest(w_t, w_w, w_cr) WITH ORDINALITY AS u(t, w, cr, k)
             CROSS JOIN LATERAL (
                SELECT z.id, z.concurrency_key, z.job_type,
                       row_number() OVER (ORDER BY z.run_at, z.id) AS rn
                  FROM (SELECT x.id, x.concurrency_key, x.job_type, x.run_at FROM pendulum.jobs x
                         WHERE x.queue = v_q[i] AND x.state = 'PENDING' AND x.parked_on IS NULL
                           AND x.priority = v_p AND x.tenant_id = u.t AND x.run_at <= now()
                           AND (claim_jobs_fair.types IS NULL
                                OR x.job_type = ANY (claim_jobs_fair.types))
                         ORDER BY x.run_at, x.id
                         LIMIT least(claim_jobs_fair.n, u.cr + u.w * (v_rounds - 1))
                           FOR UPDATE OF x SKIP LOCKED) AS z) AS y;
            IF a_id IS NOT NULL THEN
                c_id := c_id || a_id;
                c_round := c_round || a_round;
                c_pos := c_pos || a_pos;
                c_rn := c_rn || a_rn;
                c_tenant := c_tenant || a_tenant;
                c_key := c_key || a_key;
                c_type := c_type || a_type;
                c_prio := c_prio || array_fill(v_p, ARRAY[cardinality(a_id)]);
                c_qi := c_qi || array_fill(i, ARRAY[cardinality(a_id)]);
                c_queue := c_queue || array_fill(v_q[i], ARRAY[cardinality(a_id)]);
                c_parked := c_parked || array_fill(NULL::text, ARRAY[cardinality(a_id)]);
                v_got := v_got + cardinality(a_id);
            END IF;
        END LOOP;
    END LOOP;

    -- Parked jobs of the served queues, per key that has some, ahead of the
    -- fresh candidates of their level (round -1). Also without limits: a
    -- job left parked on a key whose limit is gone is taken like any other.
    SELECT array_agg(y.id), array_agg(y.priority), array_agg(y.rn::integer), array_agg(y.queue),
           array_agg(y.tenant_id), array_agg(y.concurrency_key), array_agg(y.job_type),
           array_agg(y.parked_on)
      INTO a_id, a_prio, a_rn, a_queue, a_tenant, a_key, a_type, a_parked
      FROM (
        WITH RECURSIVE pk(k) AS (
            (SELECT x.parked_on FROM pendulum.jobs x
              WHERE x.state = 'PENDING' AND x.parked_on IS NOT NULL
              ORDER BY x.parked_on LIMIT 1)
            UNION ALL
            SELECT (SELECT x.parked_on FROM pendulum.jobs x
                     WHERE x.state = 'PENDING' AND x.parked_on > pk.k
                     ORDER BY x.parked_on LIMIT 1)
              FROM pk WHERE pk.k IS NOT NULL
        )
        SELECT z.*, row_number() OVER (PARTITION BY z.parked_on
                                       ORDER BY z.priority DESC, z.run_at, z.id) AS rn
          FROM pk CROSS JOIN LATERAL (
            SELECT x.id, x.priority, x.run_at, x.queue, x.tenant_id, x.concurrency_key,
                   x.job_type, x.parked_on
              FROM pendulum.jobs x
             WHERE x.parked_on = pk.k AND x.state = 'PENDING'
               AND x.queue = ANY (v_q) AND x.run_at <= now()
               AND (claim_jobs_fair.types IS NULL OR x.job_type = ANY (claim_jobs_fair.types))
             ORDER BY x.priority DESC, x.run_at, x.id
             LIMIT claim_jobs_fair.n
               FOR UPDATE OF x SKIP LOCKED) AS z
         WHERE pk.k IS NOT NULL) AS y;
    IF a_id IS NOT NULL THEN
        c_id := c_id || a_id;
        c_prio := c_prio || a_prio;
        c_round := c_round || array_fill(-1, ARRAY[cardinality(a_id)]);
        c_pos := c_pos || array_fill(0, ARRAY[cardinality(a_id)]);
        c_qi := c_qi || array_fill(0, ARRAY[cardinality(a_id)]);
        c_rn := c_rn || a_rn;
        c_queue := c_queue || a_queue;
        c_tenant := c_tenant || a_tenant;
        c_key := c_key || a_key;
        c_type := c_type || a_type;
        c_parked := c_parked || a_parked;
    END IF;

    -- The hand-out order: priority, round, place in the walk, queue, row.
    o := ARRAY(SELECT u.ord FROM unnest(c_prio, c_round, c_pos, c_qi, c_rn)
                    WITH ORDINALITY AS u(p, rd, pos, qi, rn, ord)
                ORDER BY u.p DESC, u.rd, u.pos, u.qi, u.rn);

    IF NOT v_limited THEN
        -- Parked candidates (their limit gone) are claimed like the others.
        s_ord := o[1 : claim_jobs_fair.n];
    ELSE
        -- Every limit a candidate falls under: lock those that exist.
        l_keys := ARRAY(SELECT DISTINCT u.k FROM (
                            SELECT unnest(c_key) UNION ALL
                            SELECT 'queue:' || unnest(c_queue) UNION ALL
                            SELECT 'tenant:' || unnest(c_tenant) UNION ALL
                            SELECT 'type:' || unnest(c_type)) AS u(k)
                         WHERE u.k IS NOT NULL);
        l_locked := ARRAY(SELECT l.key FROM pendulum.limits l WHERE l.key = ANY (l_keys)
                           ORDER BY l.key FOR UPDATE);
        -- A new statement, a new snapshot: after the locks.
        SELECT array_agg(CASE WHEN l.paused THEN 0
                              ELSE least(COALESCE(l.concurrency - r.running, claim_jobs_fair.n),
                                         COALESCE(l.rate - (SELECT count(*)::integer
                                                              FROM unnest(l.starts) s
                                                             WHERE s > now() - l.period),
                                                  claim_jobs_fair.n)) END
                         ORDER BY u.ord),
               array_agg(l.rate IS NOT NULL ORDER BY u.ord)
          INTO l_room, l_rate
          FROM unnest(l_locked) WITH ORDINALITY AS u(key, ord)
         CROSS JOIN LATERAL (SELECT l.* FROM pendulum.limits l WHERE l.key = u.key) AS l
         -- limit_running(key), inline (a call per key costs more than its count)
         CROSS JOIN LATERAL (
            SELECT CASE
                WHEN l.concurrency IS NULL OR l.paused THEN 0
                WHEN l.key LIKE 'queue:%' THEN
                    (SELECT count(*) FROM pendulum.jobs x
                      WHERE x.queue = substr(l.key, 7) AND x.state IN ('LEASED', 'RUNNING'))
                WHEN l.key LIKE 'tenant:%' THEN
                    (SELECT count(*) FROM pendulum.jobs x
                      WHERE x.tenant_id = substr(l.key, 8) AND x.state IN ('LEASED', 'RUNNING'))
                WHEN l.key LIKE 'type:%' THEN
                    (SELECT count(*) FROM pendulum.jobs x
                      WHERE x.job_type = substr(l.key, 6) AND x.state IN ('LEASED', 'RUNNING'))
                ELSE
                    (SELECT count(*) FROM pendulum.jobs x
                      WHERE x.concurrency_key = l.key AND x.state IN ('LEASED', 'RUNNING'))
                END::integer AS running) AS r;
        -- The first n fit every limit (the common case: one statement), or
        -- they are taken one at a time, each using up its limits' room.
        SELECT array_agg(COALESCE(t.c, 0)::integer ORDER BY l.ord), COALESCE(bool_and(COALESCE(t.c, 0) <= l.room), true)
          INTO l_taken, v_ok
          FROM unnest(l_locked, l_room) WITH ORDINALITY AS l(key, room, ord)
          LEFT JOIN (SELECT u.k, count(*) AS c
                       FROM unnest(o[1 : claim_jobs_fair.n]) AS e(i)
                      CROSS JOIN LATERAL unnest(ARRAY[c_key[e.i], 'queue:' || c_queue[e.i],
                                                      'tenant:' || c_tenant[e.i],
                                                      'type:' || c_type[e.i]]) AS u(k)
                      GROUP BY u.k) AS t ON t.k = l.key;
        IF v_ok THEN
            s_ord := o[1 : claim_jobs_fair.n];
        ELSE
            l_taken := array_fill(0, ARRAY[cardinality(l_locked)]);
            FOREACH i IN ARRAY COALESCE(o, '{}') LOOP
                EXIT WHEN cardinality(s_ord) >= claim_jobs_fair.n;
                x_keys := ARRAY[c_key[i], 'queue:' || c_queue[i], 'tenant:' || c_tenant[i],
                                'type:' || c_type[i]];
                v_ok := true;
                v_park := NULL;
                FOREACH v_t IN ARRAY x_keys LOOP
                    k := array_position(l_locked, v_t);
                    CONTINUE WHEN k IS NULL;        -- no limit on it (NULL: no key)
                    IF l_room[k] <= 0 THEN
                        v_ok := false;
                        v_park := COALESCE(v_park, v_t);
                    END IF;
                END LOOP;
                IF v_ok THEN
                    FOREACH v_t IN ARRAY x_keys LOOP
                        k := array_position(l_locked, v_t);
                        CONTINUE WHEN k IS NULL;
                        l_room[k] := l_room[k] - 1;
                        l_taken[k] := l_taken[k] + 1;
                    END LOOP;
                    s_ord := s_ord || i;
                ELSIF v_park IS NOT NULL AND v_park IS DISTINCT FROM c_parked[i] THEN
                    p_id := p_id || c_id[i];
                    p_key := p_key || v_park;
                END IF;
            END LOOP;
        END IF;
        IF cardinality(p_id) > 0 THEN
            UPDATE pendulum.jobs x SET parked_on = u.k
              FROM unnest(p_id, p_key) AS u(id, k)
             WHERE x.id = u.id;
        END IF;
        -- The rate windows: this claim's starts.
        UPDATE pendulum.limits l
           SET starts = ARRAY(SELECT s FROM unnest(l.starts) s WHERE s > now() - l.period
                               ORDER BY s)
                        || array_fill(now(), ARRAY[u.taken])
          FROM unnest(l_locked, l_taken, l_rate) AS u(key, taken, rated)
         WHERE l.key = u.key AND u.rated AND u.taken > 0;
    END IF;

    -- The cursors: per queue handed out, where its round-robin stopped (the
    -- last tenant it gave to, and how many of its turn it used), or past the
    -- last tenant walked when the claim came out short.
    FOR i IN 1 .. cardinality(v_q) LOOP
        CONTINUE WHEN v_last[i] IS NULL;
        k := (SELECT s.e FROM unnest(s_ord) WITH ORDINALITY AS s(e, ord)
               WHERE c_qi[s.e] = i ORDER BY s.ord DESC LIMIT 1);
        IF k IS NOT NULL AND cardinality(s_ord) >= claim_jobs_fair.n THEN
            v_used := (SELECT count(*) FROM unnest(s_ord) AS s(e)
                        WHERE c_qi[s.e] = i AND c_tenant[s.e] = c_tenant[k]
                          AND c_round[s.e] = c_round[k]);
            IF c_round[k] = 0 AND c_pos[k] = 1 AND v_inc[i] THEN
                v_used := v_used + COALESCE((v_fair -> v_q[i] ->> 0)::integer, 0);
            END IF;
            v_fair := v_fair || jsonb_build_object(v_q[i], jsonb_build_array(v_used, c_tenant[k]));
        ELSE
            v_fair := v_fair || jsonb_build_object(v_q[i], jsonb_build_array(1000000, v_last[i]));
        END IF;
        v_moved := true;
    END LOOP;

    s_id := ARRAY(SELECT c_id[s.e] FROM unnest(s_ord) AS s(e));
    IF cardinality(s_id) = 0 THEN
        IF v_moved THEN
            RETURN QUERY SELECT NULL::pendulum.jobs, v_fair;
        END IF;
        RETURN;
    END IF;
    RETURN QUERY
    WITH j AS (
        UPDATE pendulum.jobs x
           SET state = CASE WHEN claim_jobs_fair.start THEN 'RUNNING' ELSE 'LEASED' END,
               lease_token = nextval('pendulum.lease_token_seq'),
               lease_owner = claim_jobs_fair.worker,
               lease_expires_at = now() + claim_jobs_fair.lease,
               attempt = x.attempt + 1,
               started_at = CASE WHEN claim_jobs_fair.start THEN now() END,
               finished_at = NULL,
               exit_code = NULL,
               parked_on = NULL
         WHERE x.id = ANY (s_id)
        RETURNING x.*
    )
    SELECT j::pendulum.jobs, v_fair FROM j;
END
$$;

-- The former claim, for callers that keep no cursor: the fair claim from
-- the start of each walk.
CREATE OR REPLACE FUNCTION pendulum.claim_jobs(
    queues text[],
    types  text[],
    n      integer,
    worker text,
    lease  interval,
    start  boolean DEFAULT false)
RETURNS SETOF pendulum.jobs
LANGUAGE sql
SET search_path = pendulum, pg_temp
AS $$
    SELECT (c.job).* FROM pendulum.claim_jobs_fair(queues, types, n, worker, lease, start) c
     WHERE (c.job).id IS NOT NULL
$$;

-- Roles (019): the workers claim (limits: read, lock, their rate windows;
-- tenants: the weights); pd-admin sets weights and limits. A tenant-scoped
-- admin sees and sets its tenants' weights and 'tenant:' limits only.
ALTER TABLE pendulum.tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY service ON pendulum.tenants TO pendulum_worker USING (true) WITH CHECK (true);
CREATE POLICY admin ON pendulum.tenants TO pendulum_admin
    USING ((SELECT NOT pendulum.tenant_scoped(current_user)))
    WITH CHECK ((SELECT NOT pendulum.tenant_scoped(current_user)));
CREATE POLICY tenant ON pendulum.tenants
    USING (tenant_id IN (SELECT m.tenant_id FROM pendulum.tenant_members m))
    WITH CHECK (tenant_id IN (SELECT m.tenant_id FROM pendulum.tenant_members m));
ALTER TABLE pendulum.limits ENABLE ROW LEVEL SECURITY;
CREATE POLICY service ON pendulum.limits TO pendulum_worker USING (true) WITH CHECK (true);
CREATE POLICY admin ON pendulum.limits TO pendulum_admin
    USING ((SELECT NOT pendulum.tenant_scoped(current_user)))
    WITH CHECK ((SELECT NOT pendulum.tenant_scoped(current_user)));
CREATE POLICY tenant ON pendulum.limits
    USING (key LIKE 'tenant:%' AND substr(key, 8) IN (SELECT m.tenant_id FROM pendulum.tenant_members m))
    WITH CHECK (key LIKE 'tenant:%'
                AND substr(key, 8) IN (SELECT m.tenant_id FROM pendulum.tenant_members m));
GRANT SELECT ON pendulum.tenants TO pendulum_worker;
GRANT SELECT, UPDATE ON pendulum.limits TO pendulum_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON pendulum.tenants, pendulum.limits TO pendulum_admin;
GRANT SELECT ON pendulum.limit_status TO pendulum_worker, pendulum_admin;
