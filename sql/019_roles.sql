-- 019_roles: least privilege. Three NOLOGIN group roles with the grants
-- their programs need, row-level security keyed on the tenant on every table
-- that holds a tenant's data, views that run as their caller, and a fixed
-- search_path for every function.
--
-- Roles (cluster-wide: created when missing; the migrator needs CREATEROLE
-- the first time, or an operator creates them beforehand, NOLOGIN):
--   pendulum_enqueue  pd-enqueue and applications: enqueue (the bulk and the
--                     staged COPY paths), start and signal workflows, record
--                     outbox messages, wait for and read their own jobs.
--   pendulum_worker   pd-worker, pd-relay, pd-cron, pd-reaper: claim,
--                     heartbeat, finish, workflow steps, relay, tick, elect,
--                     reap and prune.
--   pendulum_admin    pd-admin (but migrate: the schema's owner runs that).
-- Nobody gets TRUNCATE or ownership; the schema's owner migrates.
--
-- Row-level security (pendulum(7), Roles and tenants): on jobs,
-- attempt_rows, outbox, outbox_heads, workflow_runs, workflow_steps,
-- cron_schedules, cron_fires, three permissive policies: "service" for
-- pendulum_worker (every row: workers serve every tenant), "admin" for
-- pendulum_admin (every row, unless the role is mapped to tenants: an
-- admin mapped to tenants administers only those), both on the group role
-- because BYPASSRLS, a role attribute, is not inherited through
-- membership; and "tenant" for everyone: the rows of the tenants
-- pendulum.tenant_members maps the current user (or a role it is a member
-- of) to. The tables' owner and superusers bypass row-level security (no
-- FORCE): pd-admin migrate, the tests and the benchmarks see what they
-- saw. Views are security_invoker, so reading through one applies the
-- caller's policies.
--
-- Functions stay SECURITY INVOKER, enqueue, start_workflow, signal_workflow
-- and wait_job too: the caller's table grants and row-level security decide
-- what a call touches, so no function needs to work out who called it (as
-- a SECURITY DEFINER function would, current_user being its owner there).
-- The exceptions, SECURITY DEFINER with search_path pendulum, pg_temp and
-- EXECUTE revoked from PUBLIC: the outbox's head triggers, which keep
-- pendulum.outbox_heads for whoever records a message, and tenant_scoped
-- (below), which takes the role it answers for as its argument. The small SQL functions called per row get
-- SQL-standard bodies (bound when created, whatever the caller's
-- search_path, and still inlined); every other function gets SET
-- search_path = pendulum, pg_temp. tests/roles.bats checks that each
-- function in the schema has one or the other: a later CREATE OR REPLACE
-- without the SET clause drops it.

-- Names in the SQL-standard bodies below bind now: builtins only from pg_catalog.
SET LOCAL search_path = pg_catalog, pg_temp;

-- The roles, tolerating another database of the cluster creating them at the same time.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['pendulum_enqueue', 'pendulum_worker', 'pendulum_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created meanwhile by another migrator
            END;
        END IF;
    END LOOP;
END
$$;

-- Which login roles see which tenants. role is a regrole (an OID shown as
-- the name): renaming the role keeps its tenants, a typo is refused when the
-- row is written, and a dropped role's rows match nobody (pg_has_role on a
-- name that no longer exists would raise inside every policy instead).
CREATE TABLE pendulum.tenant_members (
    role       regrole NOT NULL,
    tenant_id  text NOT NULL CHECK (tenant_id <> ''),
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (role, tenant_id)
);
COMMENT ON TABLE pendulum.tenant_members IS 'A role (and its members) sees and writes the rows of these tenants (pd-admin tenant grant|revoke|list).';

-- The tenant of every row that holds tenant data: the three tables that had
-- none take their parent's. Pendulum's statements fill it; an insert that
-- leaves it NULL gets the parent's through a trigger that fires only then.
ALTER TABLE pendulum.attempt_rows ADD COLUMN tenant_id text;
ALTER TABLE pendulum.workflow_steps ADD COLUMN tenant_id text;
ALTER TABLE pendulum.cron_fires ADD COLUMN tenant_id text;
UPDATE pendulum.attempt_rows a SET tenant_id = j.tenant_id FROM pendulum.jobs j WHERE j.id = a.job_id;
UPDATE pendulum.workflow_steps s SET tenant_id = r.tenant_id FROM pendulum.workflow_runs r
 WHERE r.id = s.run_id;
UPDATE pendulum.cron_fires f SET tenant_id = s.tenant_id FROM pendulum.cron_schedules s
 WHERE s.id = f.schedule_id;
ALTER TABLE pendulum.attempt_rows ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE pendulum.workflow_steps ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE pendulum.cron_fires ALTER COLUMN tenant_id SET NOT NULL;

CREATE FUNCTION pendulum.fill_tenant() RETURNS trigger
LANGUAGE plpgsql SET search_path = pendulum, pg_temp AS $$
BEGIN
    IF TG_TABLE_NAME = 'attempt_rows' THEN
        SELECT j.tenant_id INTO NEW.tenant_id FROM pendulum.jobs j WHERE j.id = NEW.job_id;
    ELSIF TG_TABLE_NAME = 'workflow_steps' THEN
        SELECT r.tenant_id INTO NEW.tenant_id FROM pendulum.workflow_runs r WHERE r.id = NEW.run_id;
    ELSIF TG_TABLE_NAME = 'cron_fires' THEN
        SELECT s.tenant_id INTO NEW.tenant_id FROM pendulum.cron_schedules s
         WHERE s.id = NEW.schedule_id;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION pendulum.fill_tenant() IS 'An attempt, step or fire inserted without tenant_id gets its job''s, run''s or schedule''s (sql/019).';
CREATE TRIGGER attempt_rows_tenant BEFORE INSERT ON pendulum.attempt_rows
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION pendulum.fill_tenant();
CREATE TRIGGER workflow_steps_tenant BEFORE INSERT ON pendulum.workflow_steps
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION pendulum.fill_tenant();
CREATE TRIGGER cron_fires_tenant BEFORE INSERT ON pendulum.cron_fires
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION pendulum.fill_tenant();

-- Whether role who is mapped to a tenant (itself or through a role it is a
-- member of): such an admin is narrowed to its tenants. SECURITY DEFINER: a
-- policy on tenant_members cannot read tenant_members as its caller
-- (infinite recursion); it reads only the rows about who.
CREATE FUNCTION pendulum.tenant_scoped(who name) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pendulum, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM pendulum.tenant_members m WHERE pg_has_role(who, m.role, 'MEMBER'))
$$;
REVOKE EXECUTE ON FUNCTION pendulum.tenant_scoped(name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pendulum.tenant_scoped(name) TO pendulum_admin;

-- Row-level security: the three policies of each tenant table. The admin
-- test is a scalar subquery, computed once a statement.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['jobs', 'attempt_rows', 'outbox', 'outbox_heads', 'workflow_runs',
                             'workflow_steps', 'cron_schedules', 'cron_fires'] LOOP
        EXECUTE format('ALTER TABLE pendulum.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY service ON pendulum.%I TO pendulum_worker '
                       'USING (true) WITH CHECK (true)', t);
        EXECUTE format('CREATE POLICY admin ON pendulum.%I TO pendulum_admin '
                       'USING ((SELECT NOT pendulum.tenant_scoped(current_user))) '
                       'WITH CHECK ((SELECT NOT pendulum.tenant_scoped(current_user)))', t);
        EXECUTE format('CREATE POLICY tenant ON pendulum.%I '
                       'USING (tenant_id IN (SELECT m.tenant_id FROM pendulum.tenant_members m)) '
                       'WITH CHECK (tenant_id IN (SELECT m.tenant_id FROM pendulum.tenant_members m))',
                       t);
    END LOOP;
END
$$;
-- A role reads its own rows of tenant_members (the "tenant" policies above
-- read it as the caller); pendulum_admin, unless mapped to tenants itself,
-- reads and writes them all.
ALTER TABLE pendulum.tenant_members ENABLE ROW LEVEL SECURITY;
CREATE POLICY admin ON pendulum.tenant_members TO pendulum_admin
    USING ((SELECT NOT pendulum.tenant_scoped(current_user)))
    WITH CHECK ((SELECT NOT pendulum.tenant_scoped(current_user)));
CREATE POLICY tenant ON pendulum.tenant_members FOR SELECT USING (pg_has_role(role, 'MEMBER'));

-- No view bypasses a policy: each runs with its caller's rights (PostgreSQL 15).
DO $$
DECLARE
    v regclass;
BEGIN
    FOR v IN SELECT c.oid FROM pg_class c
              WHERE c.relnamespace = 'pendulum'::regnamespace AND c.relkind = 'v' LOOP
        EXECUTE format('ALTER VIEW %s SET (security_invoker = true)', v);
    END LOOP;
END
$$;

-- The outbox's head triggers write pendulum.outbox_heads, which only they
-- (and pendulum_admin) touch: whoever records a message needs no grant on it.
ALTER FUNCTION pendulum.outbox_head_insert() SECURITY DEFINER SET search_path = pendulum, pg_temp;
ALTER FUNCTION pendulum.outbox_head_promote() SECURITY DEFINER SET search_path = pendulum, pg_temp;
ALTER FUNCTION pendulum.outbox_heads_truncate() SECURITY DEFINER SET search_path = pendulum, pg_temp;
REVOKE EXECUTE ON FUNCTION pendulum.outbox_head_insert(), pendulum.outbox_head_promote(),
    pendulum.outbox_heads_truncate(), pendulum.fill_tenant() FROM PUBLIC;

-- The small SQL functions called per row: the same bodies (sql/013, 016,
-- 017), SQL-standard, so that they inline and resolve names as created.
CREATE OR REPLACE FUNCTION pendulum.name_problem(field text, value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN value IS NULL THEN NULL
    WHEN octet_length(value) > 200 THEN
        format('invalid %s: %s bytes, at most 200', field, octet_length(value))
    WHEN value ~ '[\x01-\x1f\x7f-\x9f]' THEN
        format('invalid %s: control character U+%s at character %s', field,
               lpad(upper(to_hex(ascii(substring(value FROM '[\x01-\x1f\x7f-\x9f]')))), 4, '0'),
               position(substring(value FROM '[\x01-\x1f\x7f-\x9f]') IN value))
END;

CREATE OR REPLACE FUNCTION pendulum.string_key_problem(j jsonb, key text) RETURNS text
LANGUAGE sql STABLE
RETURN CASE WHEN jsonb_typeof(j->key) NOT IN ('string', 'null') THEN
                format('key ''%s'': expected a string', key)
            WHEN j->>key = '' THEN format('key ''%s'': must not be empty', key)
       END;

CREATE OR REPLACE FUNCTION pendulum.metric_bounds() RETURNS double precision[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30,60,300,900,3600}'::double precision[];

CREATE OR REPLACE FUNCTION pendulum.metric_bucket(d double precision) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 16 - width_bucket(-d, '{-3600,-900,-300,-60,-30,-10,-5,-2.5,-1,-0.5,-0.25,-0.1,-0.05,-0.025,-0.01,-0.005}'::double precision[]);

CREATE OR REPLACE FUNCTION pendulum.worker_gone_at(last_seen_at timestamptz, lease_ms bigint)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN last_seen_at + coalesce(lease_ms, 60000) * interval '1 millisecond';

CREATE OR REPLACE FUNCTION pendulum.worker_states(window_ms bigint DEFAULT NULL)
RETURNS TABLE(id text, host text, pid integer, queues text[], job_types text[],
              concurrency integer, in_flight integer, started_at timestamptz,
              last_seen_at timestamptz, lease_ms bigint, gone_at timestamptz, gone boolean)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT w.id, w.host, w.pid, w.queues, w.job_types, w.concurrency,
           CASE WHEN g.gone_at <= now() THEN 0 ELSE w.in_flight END,
           w.started_at, w.last_seen_at, w.lease_ms, g.gone_at, g.gone_at <= now()
      FROM pendulum.workers w
     CROSS JOIN LATERAL (SELECT pendulum.worker_gone_at(w.last_seen_at,
                                                        coalesce(window_ms, w.lease_ms)) AS gone_at) g;
END;

CREATE OR REPLACE FUNCTION pendulum.served(queue text, job_type text) RETURNS boolean
LANGUAGE sql STABLE
RETURN EXISTS (SELECT 1 FROM pendulum.live_workers w
                WHERE served.queue = ANY (w.queues)
                  AND (served.job_type = ANY (w.job_types) OR '*' = ANY (w.job_types)));

CREATE OR REPLACE FUNCTION pendulum.workers_gone(older_ms bigint, n integer) RETURNS SETOF text
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT w.id FROM pendulum.workers w
     WHERE pendulum.worker_gone_at(w.last_seen_at, w.lease_ms)
           < now() - older_ms * interval '1 millisecond'
     ORDER BY w.last_seen_at LIMIT n;
END;

CREATE OR REPLACE FUNCTION pendulum.enqueue_parse(jobs jsonb) RETURNS SETOF pendulum.job_input
LANGUAGE sql STABLE
BEGIN ATOMIC
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
                pendulum.name_problem('type', v.job_type),
                pendulum.name_problem('tenant', v.tenant_id),
                pendulum.name_problem('queue', v.queue),
                pendulum.name_problem('idempotency_key', v.idempotency_key),
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
;
END;

-- Every other function: a fixed search_path.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p
              WHERE p.pronamespace = 'pendulum'::regnamespace AND p.prosqlbody IS NULL
                AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pendulum, pg_temp', f);
    END LOOP;
END
$$;

-- The grants. Schema and migration ledger (every program checks the version).
GRANT USAGE ON SCHEMA pendulum TO pendulum_enqueue, pendulum_worker, pendulum_admin;
GRANT SELECT ON pendulum.schema_migrations TO pendulum_enqueue, pendulum_worker, pendulum_admin;
GRANT SELECT ON pendulum.tenant_members TO pendulum_enqueue, pendulum_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON pendulum.tenant_members TO pendulum_admin;

-- pendulum_enqueue: enqueue (enqueue_ex, enqueue_many_ex, the staging
-- table of enqueue_stage/enqueue_staged), start_workflow, outbox_record;
-- UPDATE only of the column pendulum.wait_job sets (notify_done) and of
-- those pendulum.signal_workflow sets (the job's run_at, the run's
-- signals and updated_at); reading its jobs, their attempts and runs, its
-- schedules, and the live workers (pd-enqueue --wait: is the type served?).
GRANT SELECT, INSERT ON pendulum.jobs, pendulum.workflow_runs, pendulum.outbox TO pendulum_enqueue;
GRANT UPDATE (notify_done, run_at) ON pendulum.jobs TO pendulum_enqueue;
GRANT UPDATE (signals, updated_at) ON pendulum.workflow_runs TO pendulum_enqueue;
GRANT SELECT ON pendulum.attempt_rows, pendulum.workflow_steps, pendulum.cron_schedules,
    pendulum.cron_fires, pendulum.workers TO pendulum_enqueue;
GRANT SELECT ON pendulum.job_attempts, pendulum.workflow_run_states, pendulum.cron_history,
    pendulum.live_workers, pendulum.unserved TO pendulum_enqueue;
GRANT USAGE ON SEQUENCE pendulum.jobs_id_seq, pendulum.workflow_runs_id_seq,
    pendulum.outbox_id_seq TO pendulum_enqueue;

-- pendulum_worker: pd-worker (claim_jobs, heartbeat, finish, attempts,
-- workflow steps and runs, its pendulum.workers row), pd-relay (outbox
-- claims and outcomes, counters), pd-cron's ticker (schedules, fires,
-- leaders, enqueue_ex), pd-reaper (leases, gone workers, prune: DELETE of
-- finished jobs and published messages, retired_metrics).
GRANT SELECT, INSERT, UPDATE, DELETE ON pendulum.jobs, pendulum.outbox, pendulum.workers,
    pendulum.cron_schedules TO pendulum_worker;
GRANT SELECT, INSERT, UPDATE ON pendulum.attempt_rows, pendulum.workflow_runs,
    pendulum.leaders, pendulum.retired_metrics TO pendulum_worker;
GRANT SELECT, INSERT ON pendulum.workflow_steps TO pendulum_worker;
GRANT SELECT, INSERT, DELETE ON pendulum.cron_fires TO pendulum_worker;
GRANT SELECT, UPDATE ON pendulum.counters TO pendulum_worker;
GRANT SELECT ON pendulum.job_attempts, pendulum.workflow_run_states, pendulum.cron_history,
    pendulum.live_workers, pendulum.unserved, pendulum.metric_samples, pendulum.metric_totals
    TO pendulum_worker;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA pendulum TO pendulum_worker;

-- pendulum_admin: what pd-admin does (replay, cancel, delete, purge,
-- prune, signal, listings, metrics, tenants), on every tenant.
GRANT SELECT, INSERT, UPDATE, DELETE ON pendulum.jobs, pendulum.attempt_rows, pendulum.outbox,
    pendulum.outbox_heads, pendulum.workflow_runs, pendulum.workflow_steps,
    pendulum.cron_schedules, pendulum.cron_fires, pendulum.workers, pendulum.leaders,
    pendulum.retired_metrics TO pendulum_admin;
GRANT SELECT, UPDATE ON pendulum.counters TO pendulum_admin;
GRANT SELECT ON pendulum.job_attempts, pendulum.workflow_run_states, pendulum.cron_history,
    pendulum.live_workers, pendulum.unserved, pendulum.metric_samples, pendulum.metric_totals
    TO pendulum_admin;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA pendulum TO pendulum_admin;
