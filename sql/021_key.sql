-- 021_key: a job's concurrency_key (sql/020) given where jobs are made:
-- pendulum.enqueue and enqueue_ex (a trailing parameter), the bulk paths
-- (the NDJSON field "concurrency_key" of enqueue_many, enqueue_many_ex and
-- pd-enqueue's staged COPY), pendulum.start_workflow (the key of the run's
-- first step), and cron schedules (cron_schedules.concurrency_key, given to
-- each occurrence's job).
--
-- A key is a name (pendulum.name_problem: at most 200 bytes, no control
-- characters), not empty, and not one of the reserved forms 'queue:…',
-- 'tenant:…', 'type:…' that name a queue's, tenant's or type's limit:
-- SQLSTATE 22023 otherwise, as for the other names, "job N: …" from the
-- bulk paths. The jobs table's CHECK (sql/020) stays the last word.
--
-- enqueue, enqueue_ex and start_workflow get the parameter last, with
-- DEFAULT NULL, so every call written before still means what it did; they
-- are dropped and created again (CREATE OR REPLACE cannot add a parameter,
-- and a second overload would make the old calls ambiguous), with the
-- search_path of sql/019 and the default grants (EXECUTE to PUBLIC) they
-- had. enqueue_parse, enqueue_many_ex and enqueue_staged keep their
-- signatures and are replaced whole: sql/009's statement with the column
-- added, sql/014's default of 25 attempts and sql/017's name checks.

-- Names in the SQL-standard bodies below bind now: builtins only from pg_catalog.
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TYPE pendulum.job_input ADD ATTRIBUTE concurrency_key text;

ALTER TABLE pendulum.cron_schedules ADD COLUMN concurrency_key text
    CONSTRAINT cron_schedules_concurrency_key_check
    CHECK (concurrency_key <> '' AND concurrency_key !~ '^(queue|tenant|type):');
COMMENT ON COLUMN pendulum.cron_schedules.concurrency_key IS
    'The concurrency_key of each occurrence''s job (pendulum.limits); NULL: none.';

-- What is wrong with value as a job's concurrency_key (field names it in
-- the message), or NULL. Inlined.
CREATE FUNCTION pendulum.concurrency_key_problem(field text, value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN value IS NULL THEN NULL
    WHEN value = '' THEN format('invalid %s: must not be empty', field)
    WHEN value ~ '^(queue|tenant|type):' THEN
        format('invalid %s ''%s'': the prefixes queue:, tenant: and type: are reserved '
               '(they name the limits of a queue, a tenant and a job type)', field,
               left(value, 60))
    ELSE pendulum.name_problem(field, value)
END;

-- value, or SQLSTATE 22023 naming field when it is no concurrency key.
CREATE FUNCTION pendulum.check_concurrency_key(field text, value text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pendulum, pg_temp
AS $$
DECLARE
    v_problem text := pendulum.concurrency_key_problem(field, value);
BEGIN
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION '%', v_problem USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN value;
END
$$;

DROP FUNCTION pendulum.enqueue(text, text, jsonb, text, integer, timestamptz, interval, text,
                               integer, interval, text, text, bigint[]);
DROP FUNCTION pendulum.enqueue_ex(text, text, jsonb, text, integer, timestamptz, interval, text,
                                  integer, interval, text, text, bigint[]);
DROP FUNCTION pendulum.start_workflow(text, text, jsonb, text, integer, text, integer, text[],
                                      timestamptz, interval);

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
                                    depends_on, concurrency_key)
    VALUES (COALESCE(tenant, 'default'), COALESCE(enqueue_ex.queue, 'default'), enqueue_ex.job_type,
            COALESCE(enqueue_ex.payload, '{}'), COALESCE(enqueue_ex.priority, 0), v_state, v_run_at,
            COALESCE(enqueue_ex.max_attempts, 25), enqueue_ex.timeout,
            COALESCE(enqueue_ex.delivery, 'at-least-once'), enqueue_ex.idempotency_key,
            enqueue_ex.traceparent, enqueue_ex.depends_on, enqueue_ex.concurrency_key)
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
    concurrency_key text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql
SET search_path = pendulum, pg_temp
AS $$
    SELECT (pendulum.enqueue_ex(tenant, job_type, payload, queue, priority, run_at, delay,
                                idempotency_key, max_attempts, timeout, delivery, traceparent,
                                depends_on, concurrency_key)).id
$$;

-- A run of workflow name (sql/010), its job created with concurrency_key:
-- the key of the definition's first step, which the caller knows (NULL:
-- none). The worker gives the job each next step's key as the run moves on.
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
    concurrency_key text DEFAULT NULL)
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
                                 start_workflow.concurrency_key);
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

-- sql/009's enqueue_parse (as sql/017 and sql/019 left it), with the key
-- concurrency_key: a string, checked by concurrency_key_problem.
CREATE OR REPLACE FUNCTION pendulum.enqueue_parse(jobs jsonb) RETURNS SETOF pendulum.job_input
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT c.ord, c.tenant_id, c.queue, c.job_type, c.payload, c.priority, c.run_at, c.delay,
           c.idempotency_key, c.max_attempts, c.timeout, c.delivery, c.traceparent, c.depends_on,
           c.concurrency_key
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
                    'key ''depends_on'': expected an array of job ids' END)
            END AS problem
        FROM (
            SELECT e.ord::integer AS ord, e.j,
                '{type,payload,tenant,queue,priority,run_at,delay,idempotency_key,'
                'max_attempts,timeout,delivery,traceparent,depends_on,concurrency_key}'::text[]
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
                e.j->>'concurrency_key' AS concurrency_key
            FROM jsonb_array_elements(jobs) WITH ORDINALITY AS e(j, ord)
            OFFSET 0) v
        OFFSET 0) c
    WHERE c.problem IS NULL OR pendulum.enqueue_reject(c.ord, c.problem)
;
END;

-- sql/009's bulk statement, written once for both functions, with the
-- column concurrency_key (see sql/009 for what it does and why).
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
               s.traceparent, s.depends_on, s.concurrency_key
        FROM %3$s s
    ),
    plain AS (
        INSERT INTO pendulum.jobs (id, tenant_id, queue, job_type, payload, priority, state,
                                   run_at, max_attempts, timeout, delivery, traceparent,
                                   depends_on, concurrency_key)
        SELECT s.id, s.tenant_id, s.queue, s.job_type, s.payload, s.priority, s.state,
               s.run_at, s.max_attempts, s.timeout, s.delivery, s.traceparent, s.depends_on,
               s.concurrency_key
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
                                        traceparent, depends_on, concurrency_key)
        SELECT s.id, s.tenant_id, s.queue, s.job_type, s.payload, s.priority, s.state,
               s.run_at, s.max_attempts, s.timeout, s.delivery, s.idempotency_key,
               s.traceparent, s.depends_on, s.concurrency_key
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
