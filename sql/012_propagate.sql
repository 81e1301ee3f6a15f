-- 012_propagate: a failed dependency fails its dependents, a replay brings
-- them back, and the unblock of a job whose last dependencies succeed at the
-- same moment in two transactions happens in one of them.
--
-- When a job becomes DEAD_LETTERED (an outcome: terminal, attempts
-- exhausted, an at-most-once release, a workflow's failure; the reaper's
-- expired lease) or CANCELLED (pd-admin job cancel, flow cancel), every job
-- BLOCKED on it, transitively, can never run: the statement that fails it
-- calls pendulum.fail_dependents, which moves them in the same transaction
-- to the same state, with dead_reason "dependency N dead-lettered" (or
-- "cancelled"), N the direct dependency (for C blocked on B blocked on A,
-- C's reason names B), and failed_dependency = N: the mark that the failure
-- came from propagation, which a replay of N (--with-dependents) follows
-- back. A reason is text people read and operators may write (--reason);
-- the column is what the engine relies on.
--
-- A job BLOCKED on a dependency that is already DEAD_LETTERED or CANCELLED
-- is a state an operator can ask for (pd-admin dlq replay of a propagated
-- dependent alone: it waits for its dependency to be replayed and succeed),
-- so nothing sweeps such jobs into a failed state later: only the failure
-- itself propagates.

ALTER TABLE pendulum.jobs ADD COLUMN failed_dependency bigint;

COMMENT ON COLUMN pendulum.jobs.failed_dependency IS
    'Set when the job was dead-lettered or cancelled because this dependency was '
    '(pendulum.fail_dependents); cleared by a replay.';

-- The propagated failures of one job: what a replay --with-dependents walks.
CREATE INDEX jobs_failed_dependency_idx ON pendulum.jobs (failed_dependency)
    WHERE failed_dependency IS NOT NULL;

-- fail_dependents(ids, how): ids have just become how (DEAD_LETTERED or
-- CANCELLED) in the caller's transaction; move every job BLOCKED on one of
-- them, transitively, to how, finished now, dead_reason and last_error
-- "dependency N dead-lettered" / "dependency N cancelled" (N: the smallest
-- of its direct dependencies that failed at that level), failed_dependency
-- N. Returns how many jobs it moved.
--
-- Level by level over jobs_blocked_idx (GIN on depends_on, BLOCKED rows
-- only): lock the level's dependents in id order (FOR UPDATE; the order
-- every multi-row locker of BLOCKED rows here uses, so two of them cannot
-- deadlock), then update those still BLOCKED in a second statement, whose
-- fresh snapshot (a VOLATILE function's, READ COMMITTED) is taken after the
-- locks are held. A dependent that a concurrent transaction unblocked,
-- cancelled or failed first is left as that transaction made it.
CREATE FUNCTION pendulum.fail_dependents(ids bigint[], how text)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_word text := CASE how WHEN 'DEAD_LETTERED' THEN 'dead-lettered'
                            WHEN 'CANCELLED' THEN 'cancelled' END;
    v_front bigint[] := ids;
    v_lock bigint[];
    v_n integer := 0;
BEGIN
    IF v_word IS NULL THEN
        RAISE EXCEPTION 'fail_dependents: how must be DEAD_LETTERED or CANCELLED, not %', how
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WHILE v_front IS NOT NULL AND cardinality(v_front) > 0 LOOP
        v_lock := ARRAY(SELECT b.id FROM pendulum.jobs b
                         WHERE b.state = 'BLOCKED' AND b.depends_on && v_front
                         ORDER BY b.id FOR UPDATE);
        EXIT WHEN cardinality(v_lock) = 0;
        WITH f AS (
            UPDATE pendulum.jobs b
               SET state = how, finished_at = now(), lease_owner = NULL,
                   lease_expires_at = NULL,
                   failed_dependency = d.dep,
                   dead_reason = 'dependency ' || d.dep || ' ' || v_word,
                   last_error = 'dependency ' || d.dep || ' ' || v_word
              FROM (SELECT x.id, (SELECT min(y) FROM unnest(x.depends_on) y
                                   WHERE y = ANY (v_front)) AS dep
                      FROM pendulum.jobs x WHERE x.id = ANY (v_lock)) d
             WHERE b.id = d.id AND b.state = 'BLOCKED'
            RETURNING b.id)
        SELECT ARRAY(SELECT f.id FROM f) INTO v_front;
        v_n := v_n + cardinality(v_front);
    END LOOP;
    RETURN v_n;
END
$$;

-- unblock_dependents(ids): ids have just SUCCEEDED in the caller's
-- transaction (its statement may not show them so yet: they count as
-- SUCCEEDED here); move to PENDING every job BLOCKED on one of them whose
-- dependencies have now all succeeded. Returns the queue of each job it
-- unblocked (one wake-up per queue is the caller's).
--
-- The race this closes: B waits for A1 and A2, which succeed at the same
-- moment in transactions T1 and T2. A single UPDATE ... WHERE NOT EXISTS
-- (a dependency not SUCCEEDED) in each sees the other's success
-- uncommitted, so neither unblocks B, and B stayed BLOCKED until the
-- reaper's sweep. Locking B in the same statement does not help under READ
-- COMMITTED: the second locker waits for the first, but a lock alone makes
-- no new row version, so there is no EvalPlanQual recheck, and even with
-- one the NOT EXISTS subquery over the other rows would still read the
-- statement's old snapshot.
--
-- So two statements: the first locks the candidates (BLOCKED, depending on
-- one of ids) FOR UPDATE in id order; the second, a new statement with a new
-- snapshot taken once the locks are held, checks every dependency and
-- updates. Both T1 and T2 lock B. Whichever gets the lock second waited for
-- the first to commit or abort (row locks are held to the end of the
-- transaction), so its snapshot shows the first's success: the second
-- unblocks B if the first did not. B is unblocked in T1 or T2, never left
-- for a sweep. The price: a success whose dependents are BLOCKED takes row
-- locks on them (only then: no candidate, one index probe and no second
-- statement), and two such successes of one dependent serialize.
CREATE FUNCTION pendulum.unblock_dependents(ids bigint[])
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    v_lock bigint[];
BEGIN
    IF ids IS NULL OR cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    v_lock := ARRAY(SELECT b.id FROM pendulum.jobs b
                     WHERE b.state = 'BLOCKED' AND b.depends_on && ids
                     ORDER BY b.id FOR UPDATE);
    IF cardinality(v_lock) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE pendulum.jobs b SET state = 'PENDING', run_at = greatest(b.run_at, now())
     WHERE b.id = ANY (v_lock) AND b.state = 'BLOCKED'
       AND NOT EXISTS (SELECT 1 FROM pendulum.jobs d
                        WHERE d.id = ANY (b.depends_on) AND d.state <> 'SUCCEEDED'
                          AND NOT d.id = ANY (ids))
    RETURNING b.queue;
END
$$;

-- reblock_dependents(ids): ids have just been replayed; every job that was
-- failed by propagation from one of them (failed_dependency), transitively,
-- goes back to BLOCKED: attempts reset, replay_count + 1, dead_reason,
-- last_error, finished_at and failed_dependency cleared. Each waits at least
-- for the job it names, which is being replayed or re-blocked. Returns
-- them. They never started (a BLOCKED job has not), so no queue wait leaves
-- the metrics.
CREATE FUNCTION pendulum.reblock_dependents(ids bigint[])
RETURNS TABLE (id bigint, job_type text, state text, queue text, replay_count integer,
               failed_dependency bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_front bigint[] := ids;
    v_lock bigint[];
BEGIN
    WHILE v_front IS NOT NULL AND cardinality(v_front) > 0 LOOP
        v_lock := ARRAY(SELECT x.id FROM pendulum.jobs x
                         WHERE x.failed_dependency = ANY (v_front)
                           AND x.state IN ('DEAD_LETTERED', 'CANCELLED')
                         ORDER BY x.id FOR UPDATE);
        EXIT WHEN cardinality(v_lock) = 0;
        RETURN QUERY
        WITH r AS (
            UPDATE pendulum.jobs j
               SET state = 'BLOCKED', attempt = 0, replay_count = j.replay_count + 1,
                   run_at = now(), finished_at = NULL, dead_reason = NULL, last_error = NULL,
                   failed_dependency = NULL
              FROM pendulum.jobs o
             WHERE j.id = ANY (v_lock) AND o.id = j.id
               AND j.state IN ('DEAD_LETTERED', 'CANCELLED')
            RETURNING j.id, j.job_type, j.state, j.queue, j.replay_count, o.failed_dependency)
        SELECT r.id, r.job_type, r.state, r.queue, r.replay_count, r.failed_dependency FROM r;
        v_front := v_lock;
    END LOOP;
END
$$;
