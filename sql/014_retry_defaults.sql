-- 014_retry_defaults: a default retry budget that outlasts an outage.
--
-- A job given no max_attempts gets 25 (it was 5). With the default backoff
-- (full jitter: the delay after failed attempt n is uniform between 0 and
-- min(1h, 1s * 2^(n-1)), lib/retry), 24 retries wait 6 h 34 min in all on
-- average and at most 13 h 8 min; less than an hour only when the twelve
-- delays capped at 1 h add up to less than one of them, a chance below
-- 1 in 400 million. Five attempts waited 7.5 s on average: a one-minute
-- outage of a downstream service dead-lettered everything that ran into it.
-- The schedule is in pd-worker(1), Retries.
--
-- The default lives in the table and in every function that enqueues:
-- enqueue and enqueue_ex (sql/002), enqueue_many_ex and enqueue_staged
-- (sql/009), start_workflow (sql/010). Rather than repeat their bodies
-- here, each is replaced by its own current definition with the 5 of its
-- max_attempts default (a parameter's DEFAULT 5, a COALESCE(…max_attempts,
-- 5)) made 25, so whatever a later migration changed in them stays; a
-- function with no such 5 left is an error, not a silent no-op. Jobs that
-- exist keep the max_attempts they were given.

ALTER TABLE pendulum.jobs ALTER COLUMN max_attempts SET DEFAULT 25;

DO $migration$
DECLARE
    f   record;
    def text;
    new text;
BEGIN
    FOR f IN
        SELECT p.oid FROM pg_proc p
        WHERE p.pronamespace = 'pendulum'::regnamespace
          AND p.proname IN ('enqueue', 'enqueue_ex', 'enqueue_many_ex', 'enqueue_staged',
                            'start_workflow')
    LOOP
        def := pg_get_functiondef(f.oid);
        new := regexp_replace(def, '(max_attempts integer DEFAULT )5\M', '\125', 'g');
        new := regexp_replace(new, '(coalesce\(\s*[a-z_.]*max_attempts,\s*)5\)', '\125)', 'gi');
        IF new = def THEN
            RAISE EXCEPTION '014_retry_defaults: no default of 5 attempts in %',
                f.oid::regprocedure;
        END IF;
        EXECUTE new;
    END LOOP;
END
$migration$;
