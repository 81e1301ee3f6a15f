-- 024_progress: a running job's latest progress note (issue 24 part 3).
--
-- A process handler writes lines to PD_PROGRESS_FD, a stream handler
-- {"id":…,"progress":"…"} lines on its stdout; the worker keeps the latest
-- of each job it holds (at most 200 bytes, no control characters) and
-- stores it at most once per heartbeat, and the last one with the outcome,
-- by a statement of its round trip fenced like every write of a holder
-- (lease_token and state LEASED or RUNNING): a worker that lost the lease
-- writes nothing.
--
-- The note stays when the job finishes (pd-admin job show of a finished job
-- shows how far it got) and is cleared when the job is claimed again: a new
-- lease token starts a new attempt with no progress (the trigger below, so
-- that every claim statement, present and future, does it).

-- Names in the bodies below bind now: builtins only from pg_catalog.
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TABLE pendulum.jobs
    ADD COLUMN progress text,
    ADD COLUMN progress_at timestamptz;

COMMENT ON COLUMN pendulum.jobs.progress IS
    'The latest progress note of the job''s handler (PD_PROGRESS_FD); NULL: none this attempt.';
COMMENT ON COLUMN pendulum.jobs.progress_at IS
    'When the worker stored progress.';

-- A new lease token (a claim): the last attempt's progress goes.
CREATE FUNCTION pendulum.progress_reset() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    NEW.progress := NULL;
    NEW.progress_at := NULL;
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_progress_reset BEFORE UPDATE OF lease_token ON pendulum.jobs
    FOR EACH ROW
    WHEN (OLD.progress IS NOT NULL AND NEW.lease_token IS DISTINCT FROM OLD.lease_token)
    EXECUTE FUNCTION pendulum.progress_reset();
