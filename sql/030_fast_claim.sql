-- 030_fast_claim: the claim's fast path (issue 26, pickup latency).
--
-- A claim of one queue, with no limit and no tenant weight anywhere, no
-- parked job, and one level with one tenant that has work (the queue's
-- pending jobs all at one priority and of one tenant: a single-tenant
-- deployment's usual case, and every benchmark) is decided in one statement
-- (the queue's first index entry, then three probes) and its rows chosen in
-- a second, without the fairness walk, the candidate arrays and their
-- ordering: 4 statements a claim instead of 14 (README "Pickup latency" has
-- the figures). What it hands out is what the walk would: with one tenant
-- at one level the walk takes that tenant's due rows in (run_at, id) order,
-- at most n, skipping locked ones; the cursor it leaves for the queue is
-- [1, tenant] when the claim is full ([used, tenant], and used is 1 there:
-- one row a round) and [1000000, tenant] when it comes out short, as the
-- walk's. The rows get their lease tokens from the walk's own final UPDATE
-- (a nextval each: every claim still raises a job's token). Anything else
-- (several queues, tenants or levels, a limit, a weight, a parked job, a
-- cursor that still gives its tenant a turn) takes the walk, unchanged.

-- Names in the body below bind now: builtins only from pg_catalog.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pendulum.claim_jobs_fair as in force since sql/029, with the fast path.
-- (CREATE OR REPLACE drops the SET that 019 gave every function: given again)
CREATE OR REPLACE FUNCTION pendulum.claim_jobs_fair(queues text[], types text[], n integer, worker text, lease interval, start boolean DEFAULT false, fair jsonb DEFAULT NULL::jsonb) RETURNS TABLE(job pendulum.jobs, fair_next jsonb)
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
    v_fast    boolean;         -- the fast path decides this claim (see the header)
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
    SELECT EXISTS (SELECT 1 FROM pendulum.limits), EXISTS (SELECT 1 FROM pendulum.tenants)
      INTO v_limited, v_weighted;

    -- The fast path (see the header): one queue, no limit, no weight, and
    -- no cursor that still gives its tenant a turn (a weight of 1: used < 1).
    v_fast := NOT v_limited AND NOT v_weighted AND cardinality(claim_jobs_fair.queues) = 1
              AND claim_jobs_fair.queues[1] IS NOT NULL
              AND NOT (v_fair -> claim_jobs_fair.queues[1] ->> 1 IS NOT NULL
                       AND COALESCE((v_fair -> claim_jobs_fair.queues[1] ->> 0)::integer, 0) < 1);
    IF v_fast THEN
        -- The top level and its first tenant (h), then: no other tenant at
        -- that level, no level below it, no parked job anywhere.
        SELECT h.priority, h.tenant_id,
               NOT EXISTS (SELECT 1 FROM pendulum.jobs x
                            WHERE x.state = 'PENDING' AND x.parked_on IS NOT NULL)
               AND (h.priority IS NULL
                    -- (each an ORDER BY ... LIMIT 1 in the index's order: as a
                    -- NOT EXISTS the planner chose a sequential scan)
                    OR (SELECT x.tenant_id FROM pendulum.jobs x
                         WHERE x.queue = claim_jobs_fair.queues[1] AND x.state = 'PENDING'
                           AND x.parked_on IS NULL AND x.priority = h.priority
                           AND x.tenant_id > h.tenant_id
                         ORDER BY x.priority DESC, x.tenant_id LIMIT 1) IS NULL
                       AND (SELECT x.priority FROM pendulum.jobs x
                             WHERE x.queue = claim_jobs_fair.queues[1] AND x.state = 'PENDING'
                               AND x.parked_on IS NULL AND x.priority < h.priority
                             ORDER BY x.priority DESC LIMIT 1) IS NULL)
          INTO v_p, v_t, v_fast
          FROM (SELECT 1) AS d
          LEFT JOIN LATERAL (
            SELECT x.priority, x.tenant_id FROM pendulum.jobs x
             WHERE x.queue = claim_jobs_fair.queues[1] AND x.state = 'PENDING' AND x.parked_on IS NULL
             ORDER BY x.priority DESC, x.tenant_id LIMIT 1) AS h ON true;
    END IF;
    IF v_fast AND v_p IS NULL THEN
        RETURN;                 -- nothing pending, nothing parked: the walk's answer
    ELSIF v_fast THEN
        -- The walk's rows for one tenant at one level: its due rows in
        -- (run_at, id) order, at most n.
        s_id := ARRAY(SELECT x.id FROM pendulum.jobs x
                       WHERE x.queue = claim_jobs_fair.queues[1] AND x.state = 'PENDING'
                         AND x.parked_on IS NULL AND x.priority = v_p AND x.tenant_id = v_t
                         AND x.run_at <= now() AND (x.start_by IS NULL OR x.start_by > now() OR x.lease_token IS NOT NULL)
                         AND (claim_jobs_fair.types IS NULL OR x.job_type = ANY (claim_jobs_fair.types))
                       ORDER BY x.run_at, x.id
                       LIMIT claim_jobs_fair.n
                         FOR UPDATE OF x SKIP LOCKED);
        v_fair := v_fair || jsonb_build_object(claim_jobs_fair.queues[1],
                      jsonb_build_array(CASE WHEN cardinality(s_id) >= claim_jobs_fair.n
                                             THEN 1 ELSE 1000000 END, v_t));
        v_moved := true;
    ELSE
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
                               AND x.priority = v_p AND x.tenant_id = u.t AND x.run_at <= now() AND (x.start_by IS NULL OR x.start_by > now() OR x.lease_token IS NOT NULL)
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
                   AND x.queue = ANY (v_q) AND x.run_at <= now() AND (x.start_by IS NULL OR x.start_by > now() OR x.lease_token IS NOT NULL)
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
    END IF;
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
               parked_on = NULL,
               progress = NULL,
               progress_at = NULL
         WHERE x.id = ANY (s_id)
        RETURNING x.*
    )
    SELECT j::pendulum.jobs, v_fair FROM j;
END
$$;
