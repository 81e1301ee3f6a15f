-- 009_enqueue_many: many jobs in one statement, for applications
-- (pendulum.enqueue_many) and for `pd-enqueue --ndjson` (COPY into a
-- staging table, then pendulum.enqueue_staged). The statement is written
-- once, below, for both, so the two paths cannot drift.
--
-- pendulum.enqueue_many(jobs jsonb) RETURNS bigint[]: jobs is a JSON array
-- of the objects `pd-enqueue --ndjson` reads, one a line; the result holds
-- the jobs' ids in the order of the array. pendulum.enqueue_many_ex(jobs)
-- returns (ord, id, created) rows instead, ord from 1, in that order,
-- created false where an idempotency key gave an existing job. Both run in
-- the caller's transaction, which they neither open nor commit, and use no
-- temporary table (a transaction that touched one cannot be PREPAREd).
--
-- What a call does, set-based rather than job by job (enqueue_ex):
--
--   * enqueue_parse checks every element first and raises 22023
--     (invalid_parameter_value) naming the first bad one, "job 3: unknown
--     key 'prority'"; nothing is inserted then;
--   * the new jobs take their ids from the identity sequence in input order,
--     so ids grow with the position and equal jobs are claimed in input
--     order;
--   * the jobs without an idempotency key go in with one INSERT (no
--     ON CONFLICT, so no speculative insertion for them); the first job of
--     each (tenant, key) in a second INSERT with ON CONFLICT DO NOTHING, in
--     key order (two batches lock their keys in the same order: no
--     deadlock). A later job with the same tenant and key gets the first
--     one's id, and a job whose key is already in the table gets that job's
--     id (created false), also when another transaction committed it while
--     the statement waited for it;
--   * depends_on naming a job that does not exist raises 23503
--     (foreign_key_violation), as enqueue_ex does; a job that waits for one
--     not yet SUCCEEDED starts BLOCKED;
--   * run_at (default now()) plus delay is resolved by the database clock;
--   * one pg_notify('pendulum_jobs', queue) per queue that got a new PENDING
--     job: one NOTIFY per queue per call, delivered on commit, not one per
--     job.

-- One job as the bulk statement reads it: a checked element of the array
-- (enqueue_parse) or a row pd-enqueue copied into its staging table
-- (enqueue_stage). NULL means the default, as for enqueue_ex.
CREATE TYPE pendulum.job_input AS (
    ord             integer, -- position in the input, from 1
    tenant_id       text,
    queue           text,
    job_type        text,
    payload         jsonb,
    priority        integer,
    run_at          timestamptz,
    delay           interval,
    idempotency_key text,
    max_attempts    integer,
    timeout         interval,
    delivery        text,
    traceparent     text,
    depends_on      bigint[]
);

-- A Pendulum duration, as lib/dur reads it: parts with the units d, h, m, s,
-- ms, largest first and each at most once ("1h30m", "250ms", "1.5s"), or a
-- plain number of seconds ("12", "1.5"); no sign, spaces or exponent;
-- sub-millisecond fractions dropped. NULL when d is not such a string.
CREATE FUNCTION pendulum.parse_duration(d text) RETURNS interval
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    m text[];
BEGIN
    IF d ~ '^[0-9]+(\.[0-9]+)?$' THEN
        RETURN make_interval(secs => floor(d::numeric * 1000) / 1000);
    END IF;
    m := regexp_match(d, '^(?:([0-9]+(?:\.[0-9]+)?)d)?(?:([0-9]+(?:\.[0-9]+)?)h)?'
                         '(?:([0-9]+(?:\.[0-9]+)?)m(?!s))?(?:([0-9]+(?:\.[0-9]+)?)s)?'
                         '(?:([0-9]+(?:\.[0-9]+)?)ms)?$');
    IF m IS NULL OR d = '' THEN
        RETURN NULL;
    END IF;
    RETURN make_interval(secs => (COALESCE(floor(m[1]::numeric * 86400000), 0)
                                  + COALESCE(floor(m[2]::numeric * 3600000), 0)
                                  + COALESCE(floor(m[3]::numeric * 60000), 0)
                                  + COALESCE(floor(m[4]::numeric * 1000), 0)
                                  + COALESCE(floor(m[5]::numeric), 0)) / 1000);
END
$$;

-- An instant, as lib/dur reads it: "2026-03-29T01:30:00Z", an offset
-- ("+02:00", "+0200", "+02") instead of the Z, a fraction of a second, a
-- space instead of the T, no seconds ("2026-03-29T01:30Z"), or a date alone,
-- which is midnight UTC. NULL for a time without a zone (ambiguous), for a
-- day or time that does not exist, and for anything else.
CREATE FUNCTION pendulum.parse_instant(s text) RETURNS timestamptz
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
DECLARE
    m text[] := regexp_match(s, '^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})'
                                '(?::([0-9]{2})(?:[.,]([0-9]+))?)?([Zz]|([-+])([0-9]{2})(?::?([0-9]{2}))?))?$');
BEGIN
    IF m IS NULL OR m[2]::integer NOT BETWEEN 1 AND 12 OR m[3]::integer < 1
       OR make_date(m[1]::integer, m[2]::integer, 1) + (m[3]::integer - 1)
          >= make_date(m[1]::integer, m[2]::integer, 1) + interval '1 month'
       OR m[4]::integer > 23 OR m[5]::integer > 59 OR m[6]::integer > 60
       OR m[10]::integer > 23 OR m[11]::integer > 59 THEN
        RETURN NULL;
    END IF;
    RETURN make_timestamptz(m[1]::integer, m[2]::integer, m[3]::integer,
                            COALESCE(m[4]::integer, 0), COALESCE(m[5]::integer, 0), 0, 'UTC')
         + make_interval(secs => COALESCE(m[6]::numeric, 0)
                                 + COALESCE(('0.' || left(m[7], 6))::numeric, 0))
         - CASE m[9] WHEN '-' THEN -1 ELSE 1 END
           * make_interval(hours => COALESCE(m[10]::integer, 0),
                           mins => COALESCE(m[11]::integer, 0));
END
$$;

-- The state a new job starts in: BLOCKED while one of deps has not
-- SUCCEEDED, else PENDING. Raises 23503 when one of them does not exist.
CREATE FUNCTION pendulum.dependency_state(deps bigint[]) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_missing bigint;
BEGIN
    IF deps IS NULL OR cardinality(deps) = 0 THEN
        RETURN 'PENDING';
    END IF;
    SELECT x INTO v_missing FROM unnest(deps) x
     WHERE NOT EXISTS (SELECT 1 FROM pendulum.jobs d WHERE d.id = x) LIMIT 1;
    IF v_missing IS NOT NULL THEN
        RAISE EXCEPTION 'dependency job % does not exist', v_missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM pendulum.jobs d WHERE d.id = ANY (deps) AND d.state <> 'SUCCEEDED') THEN
        RETURN 'BLOCKED';
    END IF;
    RETURN 'PENDING';
END
$$;

-- Raise 22023 "job ORD: PROBLEM". Called only to raise, by enqueue_parse.
CREATE FUNCTION pendulum.enqueue_reject(ord bigint, problem text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RAISE EXCEPTION 'job %: %', ord, problem USING ERRCODE = 'invalid_parameter_value';
END
$$;

-- What is wrong with the string key of the job object j, or NULL: a value
-- (null counts as absent) that is not a string, or an empty one. Inlined.
CREATE FUNCTION pendulum.string_key_problem(j jsonb, key text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN jsonb_typeof(j->key) NOT IN ('string', 'null') THEN
                    format('key ''%s'': expected a string', key)
                WHEN j->>key = '' THEN format('key ''%s'': must not be empty', key)
           END
$$;

-- The elements of jobs, a JSON array of job objects, checked, as job_input
-- rows in array order. Keys: type (required), payload, tenant, queue,
-- priority (an integer from -1000000 to 1000000, or "high" 10, "normal" 0,
-- "low" -10), run_at (an instant), delay and timeout (durations),
-- idempotency_key, max_attempts (1-1000), delivery ("at-least-once",
-- "at-most-once"), traceparent, depends_on (an array of job ids). A null
-- value is the same as a missing key; any other key is an error. Raises
-- 22023 naming the first bad element, as it reaches it. The columns are
-- computed below the OFFSET 0 fences once each, then checked, then the
-- check is forced before the row is returned.
CREATE FUNCTION pendulum.enqueue_parse(jobs jsonb) RETURNS SETOF pendulum.job_input
LANGUAGE sql STABLE AS $$
    SELECT c.ord, c.tenant_id, c.queue, c.job_type, c.payload, c.priority, c.run_at, c.delay,
           c.idempotency_key, c.max_attempts, c.timeout, c.delivery, c.traceparent, c.depends_on
    FROM (
        SELECT v.*,
            CASE
            WHEN jsonb_typeof(v.j) <> 'object' THEN
                'expected an object {"type": ..., "payload": ...}'
            WHEN v.j - v.known <> '{}' THEN
                format('unknown key ''%s''', (SELECT min(k) FROM jsonb_object_keys(v.j - v.known) k))
            WHEN v.job_type IS NULL THEN 'missing key ''type'''
            ELSE COALESCE(
                pendulum.string_key_problem(v.j, 'type'),
                pendulum.string_key_problem(v.j, 'tenant'),
                pendulum.string_key_problem(v.j, 'queue'),
                pendulum.string_key_problem(v.j, 'idempotency_key'),
                pendulum.string_key_problem(v.j, 'traceparent'),
                pendulum.string_key_problem(v.j, 'delivery'),
                CASE WHEN v.delivery NOT IN ('at-least-once', 'at-most-once') THEN
                    'key ''delivery'': expected "at-least-once" or "at-most-once"' END,
                CASE WHEN jsonb_typeof(v.j->'priority') <> 'null' AND v.priority IS NULL THEN
                    format('key ''priority'': invalid priority ''%s'': expected an integer '
                           '(higher runs first) or high, normal, low', v.j->>'priority') END,
                CASE WHEN jsonb_typeof(v.j->'max_attempts') <> 'null' AND v.max_attempts IS NULL
                    THEN 'key ''max_attempts'': expected an integer 1-1000' END,
                CASE WHEN jsonb_typeof(v.j->'run_at') <> 'null' AND v.run_at IS NULL THEN
                    format('key ''run_at'': invalid instant %s: expected an ISO 8601 time with '
                           'Z or an offset, or a date', v.j->'run_at') END,
                CASE WHEN jsonb_typeof(v.j->'delay') <> 'null' AND v.delay IS NULL THEN
                    format('key ''delay'': invalid duration %s: expected a number with ms, s, '
                           'm, h or d', v.j->'delay') END,
                CASE WHEN jsonb_typeof(v.j->'timeout') <> 'null' AND v.timeout IS NULL THEN
                    format('key ''timeout'': invalid duration %s: expected a number with ms, '
                           's, m, h or d', v.j->'timeout')
                     WHEN v.timeout = interval '0' THEN 'key ''timeout'': must be positive' END,
                CASE WHEN jsonb_typeof(v.j->'depends_on') <> 'null' AND v.depends_on IS NULL THEN
                    'key ''depends_on'': expected an array of job ids' END)
            END AS problem
        FROM (
            SELECT e.ord::integer AS ord, e.j,
                '{type,payload,tenant,queue,priority,run_at,delay,idempotency_key,'
                'max_attempts,timeout,delivery,traceparent,depends_on}'::text[] AS known,
                e.j->>'tenant' AS tenant_id,
                e.j->>'queue' AS queue,
                e.j->>'type' AS job_type,
                NULLIF(e.j->'payload', 'null') AS payload,
                CASE e.j->>'priority'
                    WHEN 'high' THEN 10 WHEN 'normal' THEN 0 WHEN 'low' THEN -10
                    ELSE CASE WHEN e.j->>'priority' ~ '^-?[0-9]{1,7}$'
                                   AND abs((e.j->>'priority')::integer) <= 1000000
                              THEN (e.j->>'priority')::integer END
                END AS priority,
                CASE WHEN jsonb_typeof(e.j->'run_at') = 'string'
                     THEN pendulum.parse_instant(e.j->>'run_at') END AS run_at,
                CASE WHEN jsonb_typeof(e.j->'delay') IN ('string', 'number')
                     THEN pendulum.parse_duration(e.j->>'delay') END AS delay,
                e.j->>'idempotency_key' AS idempotency_key,
                CASE WHEN jsonb_typeof(e.j->'max_attempts') = 'number'
                          AND e.j->>'max_attempts' ~ '^[0-9]{1,4}$'
                          AND (e.j->>'max_attempts')::integer BETWEEN 1 AND 1000
                     THEN (e.j->>'max_attempts')::integer END AS max_attempts,
                CASE WHEN jsonb_typeof(e.j->'timeout') IN ('string', 'number')
                     THEN pendulum.parse_duration(e.j->>'timeout') END AS timeout,
                e.j->>'delivery' AS delivery,
                e.j->>'traceparent' AS traceparent,
                CASE WHEN jsonb_typeof(e.j->'depends_on') = 'array'
                          AND NOT jsonb_path_exists(e.j->'depends_on',
                                  '$[*] ? (@.type() != "number" || @ < 1 || @.floor() != @)')
                     THEN ARRAY(SELECT x::numeric::bigint
                                FROM jsonb_array_elements_text(e.j->'depends_on') x)
                END AS depends_on
            FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)
            OFFSET 0) v
        OFFSET 0) c
    WHERE c.problem IS NULL OR pendulum.enqueue_reject(c.ord, c.problem)
$$;

-- Wake the workers of these queues (distinct names) when the transaction
-- commits: one pg_notify('pendulum_jobs', queue) each. Returns how many
-- it sent. The bulk statement calls it once, with the queues that got
-- PENDING jobs, so a call costs one NOTIFY per queue, not one per job.
CREATE FUNCTION pendulum.notify_jobs(queues text[]) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pendulum_jobs', q) FROM unnest(queues) q;
    RETURN COALESCE(cardinality(queues), 0);
END
$$;

-- The id of the job with this idempotency key in this tenant, or NULL.
-- VOLATILE: called from inside a statement, its query takes a snapshot of
-- its own, which holds a job that another transaction committed after the
-- calling statement's snapshot was taken (ON CONFLICT waited for it).
CREATE FUNCTION pendulum.job_by_key(tenant text, idempotency_key text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (SELECT j.id FROM pendulum.jobs j
            WHERE j.tenant_id = job_by_key.tenant AND j.idempotency_key = job_by_key.idempotency_key);
END
$$;

-- The bulk statement (see the top of this file), written once and made into
-- two functions, each with a plan of its own for its source of rows:
--
--   enqueue_many_ex(jobs): the checked elements of the array, materialized
--     once with their ids (nextval in array order);
--   enqueue_staged(): pd-enqueue's staging table, read where it is needed
--     (NOT MATERIALIZED: no copy of 100,000 rows), with the ids its COPY gave
--     the rows in input order (a column default).
--
-- It returns (ord, id, created) for each row, in ord order. The later rows
-- of a key, and the rows whose key is in the table, get the id of the job
-- that has the key: the first row's, or the existing job's (job_by_key).
-- Data-modifying CTEs run to the end whether read or not; notified is read
-- (CROSS JOIN) so that the workers are woken.
DO $migration$
DECLARE
    core CONSTANT text := $core$
    WITH src AS %1$s (
        SELECT s.ord, %2$s AS id,
               COALESCE(s.tenant_id, 'default') AS tenant_id,
               COALESCE(s.queue, 'default') AS queue, s.job_type,
               COALESCE(s.payload, '{}') AS payload, COALESCE(s.priority, 0) AS priority,
               CASE WHEN s.depends_on IS NULL THEN 'PENDING'
                    ELSE pendulum.dependency_state(s.depends_on) END AS state,
               COALESCE(s.run_at, now()) + COALESCE(s.delay, interval '0') AS run_at,
               COALESCE(s.max_attempts, 5) AS max_attempts, s.timeout,
               COALESCE(s.delivery, 'at-least-once') AS delivery, s.idempotency_key,
               s.traceparent, s.depends_on
        FROM %3$s s
    ),
    plain AS (
        INSERT INTO pendulum.jobs (id, tenant_id, queue, job_type, payload, priority, state,
                                   run_at, max_attempts, timeout, delivery, traceparent,
                                   depends_on)
        SELECT s.id, s.tenant_id, s.queue, s.job_type, s.payload, s.priority, s.state,
               s.run_at, s.max_attempts, s.timeout, s.delivery, s.traceparent, s.depends_on
        FROM src s WHERE s.idempotency_key IS NULL
    ),
    firsts AS MATERIALIZED (
        SELECT DISTINCT ON (s.tenant_id, s.idempotency_key) s.*
        FROM src s WHERE s.idempotency_key IS NOT NULL
        ORDER BY s.tenant_id, s.idempotency_key, s.ord
    ),
    keyed AS (
        INSERT INTO pendulum.jobs AS j (id, tenant_id, queue, job_type, payload, priority, state,
                                        run_at, max_attempts, timeout, delivery, idempotency_key,
                                        traceparent, depends_on)
        SELECT s.id, s.tenant_id, s.queue, s.job_type, s.payload, s.priority, s.state,
               s.run_at, s.max_attempts, s.timeout, s.delivery, s.idempotency_key,
               s.traceparent, s.depends_on
        FROM firsts s
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING j.id, j.queue, j.state
    ),
    notified AS (
        SELECT pendulum.notify_jobs(array_agg(q.queue))
        FROM (SELECT s.queue FROM src s WHERE s.idempotency_key IS NULL AND s.state = 'PENDING'
              UNION SELECT k.queue FROM keyed k WHERE k.state = 'PENDING') q
    )
    SELECT s.ord,
           CASE WHEN s.idempotency_key IS NULL THEN s.id
                WHEN k.id IS NOT NULL THEN k.id
                ELSE pendulum.job_by_key(s.tenant_id, s.idempotency_key)
           END,
           s.idempotency_key IS NULL OR (k.id IS NOT NULL AND f.ord = s.ord)
    FROM src s
    LEFT JOIN firsts f ON f.tenant_id = s.tenant_id AND f.idempotency_key = s.idempotency_key
    LEFT JOIN keyed k ON k.id = f.id
    CROSS JOIN notified n
    ORDER BY s.ord
    $core$;
BEGIN
    EXECUTE format($fn$
        CREATE FUNCTION pendulum.enqueue_many_ex(jobs jsonb)
        RETURNS TABLE (ord integer, id bigint, created boolean)
        LANGUAGE plpgsql STRICT AS $body$
        #variable_conflict use_column
        BEGIN
            IF jsonb_typeof(jobs) <> 'array' THEN
                RAISE EXCEPTION 'expected a JSON array of jobs, not %%', jsonb_typeof(jobs)
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            RETURN QUERY %s;
        END
        $body$ $fn$,
        format(core, 'MATERIALIZED', $$nextval('pendulum.jobs_id_seq')$$,
               'pendulum.enqueue_parse(jobs)'));
    EXECUTE format($fn$
        CREATE FUNCTION pendulum.enqueue_staged()
        RETURNS TABLE (ord integer, id bigint, created boolean)
        LANGUAGE plpgsql AS $body$
        #variable_conflict use_column
        BEGIN
            RETURN QUERY %s;
        END
        $body$ $fn$,
        format(core, 'NOT MATERIALIZED', 's.id', 'pg_temp.pendulum_stage'));
END
$migration$;

-- jit off: a statement over many rows is costed high enough to be
-- JIT-compiled, which takes longer than it saves here. work_mem: the sorts
-- by ord of 100,000 rows stay in memory.
ALTER FUNCTION pendulum.enqueue_many_ex(jsonb) SET jit = off;
ALTER FUNCTION pendulum.enqueue_many_ex(jsonb) SET work_mem = '64MB';
ALTER FUNCTION pendulum.enqueue_staged() SET jit = off;
ALTER FUNCTION pendulum.enqueue_staged() SET work_mem = '64MB';

CREATE FUNCTION pendulum.enqueue_many(jobs jsonb) RETURNS bigint[]
LANGUAGE sql STRICT AS $$
    SELECT COALESCE(array_agg(e.id ORDER BY e.ord), '{}') FROM pendulum.enqueue_many_ex(jobs) e
$$;

-- pd-enqueue's staging table, pg_temp.pendulum_stage, for enqueue_staged:
-- the columns of job_input, and id, which its COPY fills in row order from
-- the identity sequence of pendulum.jobs. Dropped when the transaction ends.
CREATE FUNCTION pendulum.enqueue_stage() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE pendulum_stage (LIKE pendulum.job_input,
                                      id bigint NOT NULL DEFAULT nextval('pendulum.jobs_id_seq'))
        ON COMMIT DROP;
END
$$;
