-- 025_hooks: hook jobs (pendulum.yaml(5) hooks:, pendulum(7)).
--
-- A hook is a command a worker's configuration names for an event of a
-- job's outcome: dead_letter (the job became DEAD_LETTERED), failure (an
-- attempt failed: retried or dead-lettered) or success (SUCCEEDED). The
-- event becomes an ordinary job of the reserved type 'pd:hook', durable and
-- retried like any other, in the transaction that writes the outcome: the
-- worker sends pendulum.hook_jobs right after its outcomes (lib/jobs.c,
-- finish_sql), the reap pass right after it dead-letters expired leases.
--
-- Reserved: pendulum.name_problem refuses 'pd:hook' as a job type, so that
-- pendulum.enqueue and friends (and pd-enqueue, which checks the same in C)
-- cannot make one; hook_jobs inserts its rows directly.

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
    WHEN field = 'type' AND value = 'pd:hook' THEN
        'invalid type: pd:hook is reserved for hook jobs'
END;

-- The hook jobs of a batch of outcomes just written in this transaction:
-- batch is a JSON array of {id, token, events: [EVENT, ...]}, the events
-- the writer has a hook command for. A hook job is made for an event only
-- when the job row is the one this transaction wrote (xmin: a fenced-off
-- outcome wrote nothing, and the row another transaction left under the
-- same token makes no hook) and its new state fits the event
-- (dead_letter: DEAD_LETTERED; failure: PENDING or DEAD_LETTERED; success:
-- SUCCEEDED). Its payload is the job's JSON with the event and the stderr
-- tail of the attempt that token ran; tenant and queue are the job's; its
-- idempotency key pd:hook:EVENT:ID:TOKEN makes one hook job per event even
-- when the outcome is written twice. Returns how many were made.
CREATE OR REPLACE FUNCTION pendulum.hook_jobs(batch jsonb) RETURNS bigint
LANGUAGE sql SET search_path = pendulum, pg_temp AS $$
    WITH b AS (
        SELECT DISTINCT b.id, b.token, ev.event
        FROM jsonb_to_recordset(batch) AS b(id bigint, token bigint, events text[])
        CROSS JOIN LATERAL unnest(b.events) AS ev(event)
    ), h AS (
        INSERT INTO pendulum.jobs AS n (tenant_id, queue, job_type, payload, idempotency_key)
        SELECT j.tenant_id, j.queue, 'pd:hook',
               jsonb_build_object('event', b.event, 'id', j.id, 'type', j.job_type,
                                  'queue', j.queue, 'tenant', j.tenant_id, 'state', j.state,
                                  'attempt', j.attempt, 'max_attempts', j.max_attempts,
                                  'exit_code', j.exit_code, 'error', j.last_error,
                                  'dead_reason', j.dead_reason, 'stderr_tail', a.stderr_tail,
                                  'payload', j.payload),
               'pd:hook:' || b.event || ':' || j.id || ':' || b.token
        FROM b
        JOIN pendulum.jobs j ON j.id = b.id AND j.lease_token = b.token
         AND j.xmin = pg_current_xact_id()::xid
         AND j.job_type <> 'pd:hook'
         AND CASE b.event WHEN 'dead_letter' THEN j.state = 'DEAD_LETTERED'
                          WHEN 'failure' THEN j.state IN ('PENDING', 'DEAD_LETTERED')
                          WHEN 'success' THEN j.state = 'SUCCEEDED'
                          ELSE false END
        LEFT JOIN pendulum.attempt_rows a ON a.job_id = j.id AND a.lease_token = b.token
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING n.queue
    ), w AS (
        SELECT pg_notify('pendulum_jobs', q.queue) FROM (SELECT DISTINCT queue FROM h) q
    )
    SELECT (SELECT count(*) FROM h) + 0 * (SELECT count(*) FROM w)
$$;

-- The engine's (workers and the reap pass), not the tenants'.
REVOKE EXECUTE ON FUNCTION pendulum.hook_jobs(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pendulum.hook_jobs(jsonb) TO pendulum_worker, pendulum_admin;
