-- 007_claim_plan: pendulum.claim_jobs plans its statement once per session.
--
-- With the default plan_cache_mode the plan cache kept choosing a custom
-- plan for the claim (the generic one, LIMIT unknown, is costed higher), so
-- every claim was planned again: about half of its time on a small table
-- (pgbench, claim of 4: 1.34 ms custom, 0.82 ms generic). The statement's
-- shape (a LATERAL per queue, the recursive walk of the priority levels,
-- LIMIT in each probe) fixes the plan either way: the generic plan is the
-- same index walk (tests/claim-plan.bats checks it on a seeded backlog).
-- jit stays off (005): the generic plan's costs would otherwise reach the
-- JIT thresholds.
ALTER FUNCTION pendulum.claim_jobs(text[], text[], integer, text, interval, boolean)
    SET plan_cache_mode = force_generic_plan;
