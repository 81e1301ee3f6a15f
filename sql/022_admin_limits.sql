-- 022_admin_limits: resuming a queue wakes its workers (a fix to sql/020).
--
-- A paused queue's jobs are never parked: the claim leaves the queue out
-- (claim_jobs_fair). So when `pd-admin queue resume` (limit_pause false)
-- left the 'queue:NAME' row capping nothing, limit_tidy deleted it and
-- unparked its jobs, found none, and woke no one; limit_unset the same:
-- the queue's idle workers took its jobs only at their next poll. Both now
-- also wake the queue a 'queue:' key names (limit_wake, after the unpark
-- has left no job parked on the key, wakes that queue alone).

-- A limit row that caps nothing any more is deleted and its jobs unparked;
-- the workers that may now take jobs held by key are woken either way.
CREATE OR REPLACE FUNCTION pendulum.limit_tidy(key text) RETURNS void
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    DELETE FROM pendulum.limits l
     WHERE l.key = limit_tidy.key AND l.concurrency IS NULL AND l.rate IS NULL AND NOT l.paused;
    IF FOUND THEN
        PERFORM pendulum.unpark(limit_tidy.key);
    END IF;
    PERFORM pendulum.limit_wake(limit_tidy.key);
END
$$;

-- The limit is removed (caps, rate and pause), its jobs unparked and the
-- workers of their queues (and of the queue a 'queue:' key names) woken.
-- Returns whether there was one.
CREATE OR REPLACE FUNCTION pendulum.limit_unset(key text) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pendulum, pg_temp
AS $$
BEGIN
    DELETE FROM pendulum.limits l WHERE l.key = limit_unset.key;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pendulum.unpark(limit_unset.key);
    PERFORM pendulum.limit_wake(limit_unset.key);
    RETURN true;
END
$$;
