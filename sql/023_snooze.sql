-- 023_snooze: a handler puts its job off without using an attempt.
--
-- A handler that exits 75 (EX_TEMPFAIL) with a duration on its last stdout
-- line, or a stream handler's {"id":…,"snooze":"30s"}, snoozes the job: the
-- worker's outcome (lib/jobs.c, finish_sql, kind 'snooze') puts it back
-- PENDING at now() + the duration, the attempt refunded as a release's is,
-- jobs.snoozes + 1, and records the attempt as 'snoozed'. A job snoozed
-- max_snoozes times already (the handler's, else the worker's; the outcome
-- carries it) is not snoozed again: pendulum.snooze_cap turns that outcome
-- into a retryable failure, "snoozed N times (max_snoozes)", before the
-- write (pendulum(7), pd-worker(1), pendulum.yaml(5)).

ALTER TABLE pendulum.jobs ADD COLUMN IF NOT EXISTS snoozes integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN pendulum.jobs.snoozes IS
    'How many times a handler snoozed the job (attempts refunded); capped by max_snoozes.';

-- The attempt outcome 'snoozed': added to the CHECK as it stands (whatever
-- values other migrations gave it stay), once.
DO $migration$
DECLARE
    c   record;
    def text;
BEGIN
    SELECT conname, pg_get_constraintdef(oid) AS d INTO c FROM pg_constraint
     WHERE conrelid = 'pendulum.attempt_rows'::regclass AND contype = 'c'
       AND pg_get_constraintdef(oid) LIKE '%outcome%';
    IF NOT FOUND THEN
        RAISE EXCEPTION '023_snooze: no CHECK on pendulum.attempt_rows.outcome';
    END IF;
    IF c.d LIKE '%''snoozed''%' THEN
        RETURN;
    END IF;
    def := regexp_replace(c.d, '\]\)', ', ''snoozed''::text])');
    IF def = c.d THEN
        RAISE EXCEPTION '023_snooze: cannot extend %: %', c.conname, c.d;
    END IF;
    EXECUTE format('ALTER TABLE pendulum.attempt_rows DROP CONSTRAINT %I', c.conname);
    EXECUTE format('ALTER TABLE pendulum.attempt_rows ADD CONSTRAINT %I %s', c.conname, def);
END
$migration$;

-- A batch of worker outcomes (finish_sql's $1: a JSON array of objects with
-- id, kind, max_snoozes, …) with each 'snooze' of a job already snoozed
-- max_snoozes times made a retryable failure: kind 'retry', outcome
-- 'failed', error "snoozed N times (max_snoozes)"; its backoff_ms is the
-- retry's. Order kept; a batch without a snooze comes back as it is.
CREATE OR REPLACE FUNCTION pendulum.snooze_cap(batch jsonb) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pendulum, pg_temp
AS $$
    SELECT CASE WHEN NOT batch @> '[{"kind": "snooze"}]' THEN batch
    ELSE (SELECT coalesce(jsonb_agg(CASE WHEN j.snoozes >= (b.e->>'max_snoozes')::integer
                      THEN b.e || jsonb_build_object('kind', 'retry', 'outcome', 'failed',
                           'error', format('snoozed %s times (max_snoozes)', j.snoozes))
                      ELSE b.e END ORDER BY b.i), '[]'::jsonb)
            FROM jsonb_array_elements(batch) WITH ORDINALITY AS b(e, i)
            LEFT JOIN pendulum.jobs j
              ON b.e->>'kind' = 'snooze' AND j.id = (b.e->>'id')::bigint)
    END
$$;
