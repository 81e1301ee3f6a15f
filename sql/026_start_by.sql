-- 026_start_by: start deadlines (issue 24, part 6). A job may say "if I have
-- not started by then, do not start me": jobs.start_by. Until its first
-- claim (lease_token NULL: never claimed), a job whose start_by has passed
-- is never claimed again (pendulum.claim_jobs_fair skips it), and the reap
-- pass (pendulum.cancel_late_starts) moves it from PENDING to CANCELLED,
-- dead_reason and last_error 'start deadline passed', with the jobs
-- BLOCKED on it (pendulum.fail_dependents). Once claimed, a job has
-- started: its retries, a workflow run's later steps and a replay are not
-- held to it. A BLOCKED job is not cancelled while BLOCKED: once its
-- dependencies succeed it is PENDING, never claimed and cancelled by the
-- next pass.
--
-- Where jobs are made, as sql/021 added concurrency_key: pendulum.enqueue,
-- enqueue_ex and start_workflow get a trailing start_by timestamptz
-- (DEFAULT NULL; dropped and created again, for the reasons sql/021 gives);
-- the bulk paths read the NDJSON key "start_by", an instant or a duration
-- from now, into the job_input attributes start_by (an instant) and
-- start_within (a duration from the statement's now()). A start_by not
-- after the job's run_at (run_at or now, plus delay) is refused: SQLSTATE
-- 22023, "job N: key 'start_by': …" from the bulk JSON path.

-- Names in the SQL-standard bodies below bind now: builtins only from pg_catalog.
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TABLE pendulum.jobs ADD COLUMN start_by timestamptz;
COMMENT ON COLUMN pendulum.jobs.start_by IS
    'Never claimed after this instant: cancelled (start deadline passed) if still PENDING '
    'and never claimed then; NULL: no deadline.';

-- The reap pass's sweep: the never-claimed PENDING jobs with a deadline, by deadline.
CREATE INDEX jobs_start_by_idx ON pendulum.jobs (start_by)
    WHERE start_by IS NOT NULL AND state = 'PENDING' AND lease_token IS NULL;

ALTER TYPE pendulum.job_input ADD ATTRIBUTE start_by timestamptz,
                              ADD ATTRIBUTE start_within interval;

-- The message for a start deadline start_by not after run_at.
CREATE FUNCTION pendulum.start_by_problem(start_by timestamptz, run_at timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN format('start deadline %s is not after the job''s run_at %s (it could never start)',
              to_char(start_by AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
              to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));

DROP FUNCTION pendulum.enqueue(text, text, jsonb, text, integer, timestamptz, interval, text,
                               integer, interval, text, text, bigint[], text);
DROP FUNCTION pendulum.enqueue_ex(text, text, jsonb, text, integer, timestamptz, interval, text,
                                  integer, interval, text, text, bigint[], text);
DROP FUNCTION pendulum.start_workflow(text, text, jsonb, text, integer, text, integer, text[],
                                      timestamptz, interval, text);

CREATE FUNCTION pendulum.enqueue_ex(
    tenant          text,
    job_type        text,
    payload         jsonb,
    queue           text DEFAULT 'default',
    priority        integer DEFAULT 0,
    run_at          timestamptz DEFAULT NULL,
    delay           interval DEFAULT NULL,
    idempotency_key text DEFAULT NULL,
    max_attempts    integer DEFAULT 25,
    timeout         interval DEFAULT NULL,
    delivery        text DEFAULT 'at-least-once',
    traceparent     text DEFAULT NULL,
    depends_on      bigint[] DEFAULT NULL,
    concurrency_key text DEFAULT NULL,
    start_by        timestamptz DEFAULT NULL,
    OUT id bigint,
    OUT created boolean)
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_state text := 'PENDING';
    v_missing bigint;
    v_run_at timestamptz := COALESCE(enqueue_ex.run_at, now()) + COALESCE(enqueue_ex.delay, interval '0');
BEGIN
    PERFORM pendulum.check_name('tenant', enqueue_ex.tenant), pendulum.check_name('queue', enqueue_ex.queue), pendulum.check_name('type', enqueue_ex.job_type), pendulum.check_name('idempotency_key', enqueue_ex.idempotency_key), pendulum.check_concurrency_key('concurrency_key', enqueue_ex.concurrency_key);
    IF enqueue_ex.start_by <= v_run_at THEN
        RAISE EXCEPTION 'start_by: %', pendulum.start_by_problem(enqueue_ex.start_by, v_run_at)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF enqueue_ex.depends_on IS NOT NULL AND cardinality(enqueue_ex.depends_on) > 0 THEN
        SELECT x INTO v_missing FROM unnest(enqueue_ex.depends_on) x
         WHERE NOT EXISTS (SELECT 1 FROM pendulum.jobs d WHERE d.id = x) LIMIT 1;
        IF v_missing IS NOT NULL THEN
            RAISE EXCEPTION 'dependency job % does not exist', v_missing
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF EXISTS (SELECT 1 FROM pendulum.jobs d
                   WHERE d.id = ANY (enqueue_ex.depends_on) AND d.state <> 'SUCCEEDED') THEN
            v_state := 'BLOCKED';
        END IF;
    END IF;
    INSERT INTO pendulum.jobs AS j (tenant_id, queue, job_type, payload, priority, state, run_at,
                                    max_attempts, timeout, delivery, idempotency_key, traceparent,
                                    depends_on, concurrency_key, start_by)
    VALUES (COALESCE(tenant, 'default'), COALESCE(enqueue_ex.queue, 'default'), enqueue_ex.job_type,
            COALESCE(enqueue_ex.payload, '{}'), COALESCE(enqueue_ex.priority, 0), v_state, v_run_at,
            COALESCE(enqueue_ex.max_attempts, 25), enqueue_ex.timeout,
            COALESCE(enqueue_ex.delivery, 'at-least-once'), enqueue_ex.idempotency_key,
            enqueue_ex.traceparent, enqueue_ex.depends_on, enqueue_ex.concurrency_key,
            enqueue_ex.start_by)
    ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING j.id INTO id;
    IF id IS NOT NULL THEN
        created := true;
        IF v_state = 'PENDING' THEN
            PERFORM pg_notify('pendulum_jobs', COALESCE(enqueue_ex.queue, 'default'));
        END IF;
        RETURN;
    END IF;
    created := false;
    SELECT j.id INTO id FROM pendulum.jobs j
     WHERE j.tenant_id = COALESCE(tenant, 'default') AND j.idempotency_key = enqueue_ex.idempotency_key;
END
$$;

CREATE FUNCTION pendulum.enqueue(
    tenant          text,
    job_type        text,
    payload         jsonb,
    queue           text DEFAULT 'default',
    priority        integer DEFAULT 0,
    run_at          timestamptz DEFAULT NULL,
    delay           interval DEFAULT NULL,
    idempotency_key text DEFAULT NULL,
    max_attempts    integer DEFAULT 25,
    timeout         interval DEFAULT NULL,
    delivery        text DEFAULT 'at-least-once',
    traceparent     text DEFAULT NULL,
    depends_on      bigint[] DEFAULT NULL,
    concurrency_key text DEFAULT NULL,
    start_by        timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE sql
SET search_path = pendulum, pg_temp
AS $$
    SELECT (pendulum.enqueue_ex(tenant, job_type, payload, queue, priority, run_at, delay,
                                idempotency_key, max_attempts, timeout, delivery, traceparent,
                                depends_on, concurrency_key, start_by)).id
$$;

-- A run of workflow name (sql/010), its job created with concurrency_key:
-- the key of the definition's first step, which the caller knows (NULL:
-- none). The worker gives the job each next step's key as the run moves on.
-- start_by: the run's first step starts by then or the run is cancelled.
CREATE FUNCTION pendulum.start_workflow(
    tenant          text,
    name            text,
    input           jsonb DEFAULT 'null',
    queue           text DEFAULT 'default',
    priority        integer DEFAULT 0,
    idempotency_key text DEFAULT NULL,
    max_attempts    integer DEFAULT 25,
    steps           text[] DEFAULT NULL,
    run_at          timestamptz DEFAULT NULL,
    delay           interval DEFAULT NULL,
    concurrency_key text DEFAULT NULL,
    start_by        timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
DECLARE
    v_job  record;
    v_run  bigint;
BEGIN
    PERFORM pendulum.check_name('workflow', start_workflow.name);
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'start_workflow: the workflow name must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_run := nextval(pg_get_serial_sequence('pendulum.workflow_runs', 'id'));
    v_job := pendulum.enqueue_ex(coalesce(tenant, 'default'), 'workflow:' || name,
                                 jsonb_build_object('run', v_run), coalesce(queue, 'default'),
                                 coalesce(priority, 0), run_at, delay, idempotency_key,
                                 coalesce(max_attempts, 25), NULL, 'at-least-once', NULL, NULL,
                                 start_workflow.concurrency_key, start_workflow.start_by);
    IF NOT v_job.created THEN
        SELECT r.id INTO v_run FROM pendulum.workflow_runs r WHERE r.job_id = v_job.id;
        IF v_run IS NULL THEN
            RAISE EXCEPTION 'start_workflow: idempotency key % belongs to job %, not a workflow run',
                idempotency_key, v_job.id USING ERRCODE = 'unique_violation';
        END IF;
        RETURN v_run;
    END IF;
    INSERT INTO pendulum.workflow_runs (id, tenant_id, workflow, job_id, input, steps)
    VALUES (v_run, coalesce(tenant, 'default'), name, v_job.id, coalesce(input, 'null'), steps);
    RETURN v_run;
END
$$;

-- sql/021's enqueue_parse with the key start_by: an instant (a string
-- parse_instant reads) or a duration from now (a string parse_duration
-- reads, or a number of seconds), after the job's run_at.
CREATE OR REPLACE FUNCTION pendulum.enqueue_parse(jobs jsonb) RETURNS SETOF pendulum.job_input
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT c.ord, c.tenant_id, c.queue, c.job_type, c.payload, c.priority, c.run_at, c.delay,
           c.idempotency_key, c.max_attempts, c.timeout, c.delivery, c.traceparent, c.depends_on,
           c.concurrency_key, c.start_by, c.start_within
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
                pendulum.string_key_problem(v.j, 'concurrency_key'),
                pendulum.name_problem('type', v.job_type),
                pendulum.name_problem('tenant', v.tenant_id),
                pendulum.name_problem('queue', v.queue),
                pendulum.name_problem('idempotency_key', v.idempotency_key),
                pendulum.concurrency_key_problem('concurrency_key', v.concurrency_key),
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
                    'key ''depends_on'': expected an array of job ids' END,
                CASE WHEN jsonb_typeof(v.j->'start_by') <> 'null' AND v.start_by IS NULL
                          AND v.start_within IS NULL THEN
                    format('key ''start_by'': invalid start deadline %s: expected a duration '
                           '(a number with ms, s, m, h or d) or an ISO 8601 time with Z or an '
                           'offset', v.j->'start_by')
                     WHEN COALESCE(v.start_by, now() + v.start_within)
                          <= COALESCE(v.run_at, now()) + COALESCE(v.delay, interval '0') THEN
                    'key ''start_by'': ' || pendulum.start_by_problem(
                        COALESCE(v.start_by, now() + v.start_within),
                        COALESCE(v.run_at, now()) + COALESCE(v.delay, interval '0')) END)
            END AS problem
        FROM (
            SELECT e.ord::integer AS ord, e.j,
                '{type,payload,tenant,queue,priority,run_at,delay,idempotency_key,'
                'max_attempts,timeout,delivery,traceparent,depends_on,concurrency_key,'
                'start_by}'::text[]
                    AS known,
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
                END AS depends_on,
                e.j->>'concurrency_key' AS concurrency_key,
                CASE WHEN jsonb_typeof(e.j->'start_by') = 'string'
                     THEN pendulum.parse_instant(e.j->>'start_by') END AS start_by,
                CASE WHEN jsonb_typeof(e.j->'start_by') IN ('string', 'number')
                          AND (jsonb_typeof(e.j->'start_by') = 'number'
                               OR pendulum.parse_instant(e.j->>'start_by') IS NULL)
                     THEN pendulum.parse_duration(e.j->>'start_by') END AS start_within
            FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)
            OFFSET 0) v
        OFFSET 0) c
    WHERE c.problem IS NULL OR pendulum.enqueue_reject(c.ord, c.problem)
;
END;

-- sql/021's bulk statement, written once for both functions, with the
-- column start_by: the instant, or now() plus start_within (see sql/009 for
-- what it does and why).
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
               COALESCE(s.max_attempts, 25) AS max_attempts, s.timeout,
               COALESCE(s.delivery, 'at-least-once') AS delivery, s.idempotency_key,
               s.traceparent, s.depends_on, s.concurrency_key,
               COALESCE(s.start_by, now() + s.start_within) AS start_by
        FROM %3$s s
    ),
    plain AS (
        INSERT INTO pendulum.jobs (id, tenant_id, queue, job_type, payload, priority, state,
                                   run_at, max_attempts, timeout, delivery, traceparent,
                                   depends_on, concurrency_key, start_by)
        SELECT s.id, s.tenant_id, s.queue, s.job_type, s.payload, s.priority, s.state,
               s.run_at, s.max_attempts, s.timeout, s.delivery, s.traceparent, s.depends_on,
               s.concurrency_key, s.start_by
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
                                        traceparent, depends_on, concurrency_key, start_by)
        SELECT s.id, s.tenant_id, s.queue, s.job_type, s.payload, s.priority, s.state,
               s.run_at, s.max_attempts, s.timeout, s.delivery, s.idempotency_key,
               s.traceparent, s.depends_on, s.concurrency_key, s.start_by
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
        CREATE OR REPLACE FUNCTION pendulum.enqueue_many_ex(jobs jsonb)
        RETURNS TABLE (ord integer, id bigint, created boolean)
        LANGUAGE plpgsql STRICT
        SET jit = off
        SET work_mem = '64MB'
        SET search_path = pendulum, pg_temp
        AS $body$
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
        CREATE OR REPLACE FUNCTION pendulum.enqueue_staged()
        RETURNS TABLE (ord integer, id bigint, created boolean)
        LANGUAGE plpgsql
        SET jit = off
        SET work_mem = '64MB'
        SET search_path = pendulum, pg_temp
        AS $body$
        #variable_conflict use_column
        BEGIN
            RETURN QUERY %s;
        END
        $body$ $fn$,
        format(core, 'NOT MATERIALIZED', 's.id', 'pg_temp.pendulum_stage'));
END
$migration$;

-- The claim (sql/020) skips a never-claimed job whose start_by has passed:
-- a filter on the rows its index probes fetch (the walked tenants' due rows,
-- the parked ones), so its plans keep their shapes. Like sql/014, the
-- function is replaced by its own current definition (signature, SET
-- clauses, cursor contract and all) with the filter added after each of the
-- two "x.run_at <= now()"; any other count is an error, not a silent no-op.
DO $migration$
DECLARE
    due    CONSTANT text := 'x.run_at <= now()';
    filter CONSTANT text := ' AND (x.start_by IS NULL OR x.start_by > now()'
                            ' OR x.lease_token IS NOT NULL)';
    def text := pg_get_functiondef(
        'pendulum.claim_jobs_fair(text[], text[], integer, text, interval, boolean, jsonb)'
            ::regprocedure);
BEGIN
    IF (length(def) - length(replace(def, due, ''))) / length(due) <> 2
       OR position('SET search_path TO ''pendulum'', ''pg_temp''' IN def) = 0 THEN
        RAISE EXCEPTION '026_start_by: claim_jobs_fair is not the sql/020 claim this expects';
    END IF;
    EXECUTE replace(def, due, due || filter);
END
$migration$;

-- The reap pass's part (lib/reap): cancel the never-claimed PENDING jobs
-- whose start_by has passed, at most lim of them (earliest deadline first;
-- rows another transaction holds are left for the next pass), with
-- dead_reason and last_error 'start deadline passed', and the jobs BLOCKED
-- on them (fail_dependents). cancelled: how many it cancelled (dependents
-- not counted); next_ms: until the earliest start_by of such a job from
-- now (0 when one is due already), NULL when none has one.
CREATE FUNCTION pendulum.cancel_late_starts(lim integer DEFAULT 1000,
                                            OUT cancelled integer, OUT next_ms bigint)
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
DECLARE
    v_ids bigint[];
BEGIN
    v_ids := ARRAY(SELECT j.id FROM pendulum.jobs j
                    WHERE j.start_by IS NOT NULL AND j.state = 'PENDING'
                      AND j.lease_token IS NULL AND j.start_by <= now()
                    ORDER BY j.start_by LIMIT lim
                      FOR UPDATE SKIP LOCKED);
    cancelled := 0;
    IF cardinality(v_ids) > 0 THEN
        -- A new statement after the locks: the rows as they are now.
        WITH c AS (
            UPDATE pendulum.jobs j
               SET state = 'CANCELLED', finished_at = now(),
                   dead_reason = 'start deadline passed', last_error = 'start deadline passed'
             WHERE j.id = ANY (v_ids) AND j.state = 'PENDING' AND j.lease_token IS NULL
            RETURNING j.id)
        SELECT ARRAY(SELECT c.id FROM c) INTO v_ids;
        cancelled := cardinality(v_ids);
        PERFORM pendulum.fail_dependents(v_ids, 'CANCELLED');
    END IF;
    -- (greatest() skips a NULL: none due stays NULL only with the CASE)
    next_ms := (SELECT CASE WHEN m.due IS NOT NULL
                            THEN greatest(0, ceil(extract(epoch FROM m.due - now()) * 1000))
                       END::bigint
                  FROM (SELECT min(j.start_by) AS due FROM pendulum.jobs j
                         WHERE j.start_by IS NOT NULL AND j.state = 'PENDING'
                           AND j.lease_token IS NULL) m);
END
$$;
