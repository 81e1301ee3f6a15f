-- 017_names: one rule for names, and the outbox's retry budget.
--
-- Names (tenant, queue, job type, topic, idempotency and message keys,
-- workflow names) are valid UTF-8 without control characters, at most 200
-- bytes, on every path (DESIGN, Names). The database accepts no invalid
-- UTF-8 in text already; pendulum.check_name refuses the rest: a control
-- character (C0 U+0001-U+001F, DEL U+007F, C1 U+0080-U+009F: the C1 codes
-- are controls as much as C0, a terminal reads U+009B as CSI) or more than
-- 200 bytes, raising 22023 (invalid_parameter_value) "invalid FIELD: WHY",
-- the words of lib/text's pd_name_check, so a caller tells which value it
-- was. enqueue_ex (and so enqueue, start_workflow), enqueue_parse (and so
-- enqueue_many, enqueue_many_ex) and outbox_record check their names
-- first; nothing is written when one is refused. pd-enqueue's COPY paths
-- are checked by pd-enqueue before they start.
--
-- The outbox: a message recorded without max_attempts gets 25 attempts
-- (it was 10), the jobs' default of sql/014 on the jobs' curve (full
-- jitter, base 1 s, cap 1 h, lib/retry): 10 attempts waited about 8.5 min
-- in all at most, so a few minutes' outage of the far side dead-lettered
-- messages. Messages that exist keep the max_attempts they were given.
--
-- As in sql/014, each function is replaced by its own current definition
-- with the change made in its text, so whatever a later migration changed
-- in it stays; a definition the change does not fit is an error, not a
-- silent no-op. Signatures do not change.

-- What is wrong with value as a name, as "invalid FIELD: WHY", or NULL
-- when nothing is (NULL is no name). Inlined where it is called.
CREATE OR REPLACE FUNCTION pendulum.name_problem(field text, value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN value IS NULL THEN NULL
        WHEN octet_length(value) > 200 THEN
            format('invalid %s: %s bytes, at most 200', field, octet_length(value))
        WHEN value ~ '[\x01-\x1f\x7f-\x9f]' THEN
            format('invalid %s: control character U+%s at character %s', field,
                   lpad(upper(to_hex(ascii(substring(value FROM '[\x01-\x1f\x7f-\x9f]')))), 4, '0'),
                   position(substring(value FROM '[\x01-\x1f\x7f-\x9f]') IN value))
    END
$$;

-- Raise 22023 with name_problem(field, value) unless it is NULL; returns value.
CREATE OR REPLACE FUNCTION pendulum.check_name(field text, value text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v_problem text := pendulum.name_problem(field, value);
BEGIN
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION '%', v_problem USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN value;
END
$$;

-- Durations are at most 100 years (36525 days) as lib/dur reads them
-- (DESIGN: durations and instants have documented maxima): beyond, NULL,
-- which enqueue_parse reports as an invalid duration. Otherwise as sql/009.
CREATE OR REPLACE FUNCTION pendulum.parse_duration(d text) RETURNS interval
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    m  text[];
    ms numeric;
BEGIN
    IF d ~ '^[0-9]+(\.[0-9]+)?$' THEN
        ms := floor(d::numeric * 1000);
    ELSE
        m := regexp_match(d, '^(?:([0-9]+(?:\.[0-9]+)?)d)?(?:([0-9]+(?:\.[0-9]+)?)h)?'
                             '(?:([0-9]+(?:\.[0-9]+)?)m(?!s))?(?:([0-9]+(?:\.[0-9]+)?)s)?'
                             '(?:([0-9]+(?:\.[0-9]+)?)ms)?$');
        IF m IS NULL OR d = '' THEN
            RETURN NULL;
        END IF;
        ms := COALESCE(floor(m[1]::numeric * 86400000), 0)
              + COALESCE(floor(m[2]::numeric * 3600000), 0)
              + COALESCE(floor(m[3]::numeric * 60000), 0)
              + COALESCE(floor(m[4]::numeric * 1000), 0)
              + COALESCE(floor(m[5]::numeric), 0);
    END IF;
    IF ms > 36525::numeric * 86400000 THEN
        RETURN NULL;
    END IF;
    RETURN make_interval(secs => ms / 1000);
END
$$;

ALTER TABLE pendulum.outbox ALTER COLUMN max_attempts SET DEFAULT 25;

DO $migration$
DECLARE
    -- function, the names it checks (as field, parameter)
    checks CONSTANT text[][] := ARRAY[
        ['enqueue_ex', 'PERFORM pendulum.check_name(''tenant'', enqueue_ex.tenant), '
                       'pendulum.check_name(''queue'', enqueue_ex.queue), '
                       'pendulum.check_name(''type'', enqueue_ex.job_type), '
                       'pendulum.check_name(''idempotency_key'', enqueue_ex.idempotency_key);'],
        ['start_workflow', 'PERFORM pendulum.check_name(''workflow'', start_workflow.name);'],
        ['outbox_record', 'PERFORM pendulum.check_name(''tenant'', outbox_record.tenant), '
                          'pendulum.check_name(''topic'', outbox_record.topic), '
                          'pendulum.check_name(''message_key'', outbox_record.message_key);']];
    f   record;
    def text;
    new text;
BEGIN
    FOR i IN 1 .. array_length(checks, 1) LOOP
        FOR f IN
            SELECT p.oid FROM pg_proc p
            WHERE p.pronamespace = 'pendulum'::regnamespace AND p.proname = checks[i][1]
        LOOP
            def := pg_get_functiondef(f.oid);
            IF position('pendulum.check_name(' IN def) > 0 THEN
                CONTINUE; -- checked already
            END IF;
            new := regexp_replace(def, '\nBEGIN\n', E'\nBEGIN\n    ' || checks[i][2] || E'\n');
            IF checks[i][1] = 'outbox_record' THEN
                new := regexp_replace(new, '(max_attempts integer DEFAULT )10\M', '\125');
                new := regexp_replace(new, '(coalesce\(\s*outbox_record\.max_attempts,\s*)10\)',
                                      '\125)', 'i');
                IF new !~ 'max_attempts integer DEFAULT 25' OR new !~* 'max_attempts, 25\)' THEN
                    RAISE EXCEPTION '017_names: no default of 10 attempts in %',
                        f.oid::regprocedure;
                END IF;
            END IF;
            IF new = def THEN
                RAISE EXCEPTION '017_names: no BEGIN to check names after in %',
                    f.oid::regprocedure;
            END IF;
            EXECUTE new;
        END LOOP;
    END LOOP;

    -- enqueue_parse (sql/009): the names join the problems it reports as
    -- "job ORD: PROBLEM", after the checks that they are strings.
    SELECT p.oid INTO f FROM pg_proc p
    WHERE p.pronamespace = 'pendulum'::regnamespace AND p.proname = 'enqueue_parse';
    def := pg_get_functiondef(f.oid);
    IF position('pendulum.name_problem(' IN def) = 0 THEN
        new := replace(def, $$pendulum.string_key_problem(v.j, 'traceparent'),$$,
                       $$pendulum.string_key_problem(v.j, 'traceparent'),
                pendulum.name_problem('type', v.job_type),
                pendulum.name_problem('tenant', v.tenant_id),
                pendulum.name_problem('queue', v.queue),
                pendulum.name_problem('idempotency_key', v.idempotency_key),$$);
        IF new = def THEN
            RAISE EXCEPTION '017_names: no place for the name checks in %', f.oid::regprocedure;
        END IF;
        EXECUTE new;
    END IF;
END
$migration$;
