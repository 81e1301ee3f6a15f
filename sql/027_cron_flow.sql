-- 027_cron_flow: a schedule of type 'workflow:NAME' starts a workflow run
-- (sql/010) per occurrence instead of enqueueing a job of that type, which
-- no run drove and so dead-lettered.
--
-- pendulum.cron_enqueue is what an occurrence (the tick, lib/schedtick.c)
-- and pd-cron trigger (lib/sched.c) make of a schedule: for 'workflow:NAME',
-- pendulum.start_workflow(NAME) with the schedule's payload as the run's
-- input, its queue, priority, max_attempts and concurrency_key (the run's
-- first step's), the occurrence's run_at and idempotency key; the run's
-- job, of type 'workflow:NAME', is the occurrence's job (cron_fires.job_id,
-- overlap, history). Any other type: pendulum.enqueue_ex as before. The
-- fencing of fires is the callers' and unchanged: the schedule's row held
-- FOR UPDATE SKIP LOCKED, the unique idempotency key (a second fire of an
-- occurrence finds the first's run), the unique (schedule_id, fire_at) of
-- cron_fires.
--
-- PL/pgSQL, so that enqueue_ex and start_workflow are looked up when called
-- (by name, with named arguments): a later migration may drop and create
-- them again with a trailing parameter, as 021 did.

CREATE OR REPLACE FUNCTION pendulum.cron_enqueue(
    schedule_id     bigint,
    run_at          timestamptz,
    idempotency_key text,
    OUT id          bigint,
    OUT created     boolean)
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
DECLARE
    s     pendulum.cron_schedules;
    v_run bigint;
BEGIN
    SELECT * INTO STRICT s FROM pendulum.cron_schedules c WHERE c.id = cron_enqueue.schedule_id;
    IF s.job_type LIKE 'workflow:%' THEN
        v_run := pendulum.start_workflow(
            tenant => s.tenant_id, name => substr(s.job_type, length('workflow:') + 1),
            input => s.payload, queue => s.queue, priority => s.priority,
            idempotency_key => cron_enqueue.idempotency_key, max_attempts => s.max_attempts,
            run_at => cron_enqueue.run_at, concurrency_key => s.concurrency_key);
        -- A run this transaction inserted is new; one the key named was there before.
        SELECT r.job_id, r.xmin = pg_current_xact_id()::xid INTO id, created
          FROM pendulum.workflow_runs r WHERE r.id = v_run;
        RETURN;
    END IF;
    SELECT e.id, e.created INTO id, created
      FROM pendulum.enqueue_ex(tenant => s.tenant_id, job_type => s.job_type,
                               payload => s.payload, queue => s.queue, priority => s.priority,
                               run_at => cron_enqueue.run_at,
                               idempotency_key => cron_enqueue.idempotency_key,
                               max_attempts => s.max_attempts, timeout => s.timeout,
                               concurrency_key => s.concurrency_key) e;
END
$$;

COMMENT ON FUNCTION pendulum.cron_enqueue(bigint, timestamptz, text) IS
    'An occurrence of a schedule: its job, or for type workflow:NAME a run of NAME (sql/027); '
    'id is the job (the run''s job), created false when the key existed.';
