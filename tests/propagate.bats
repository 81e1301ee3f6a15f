#!/usr/bin/env bats
# Failed dependencies propagate: a dead-lettered or cancelled job takes the
# jobs BLOCKED on it, transitively, with it in the same transaction; a
# replay --with-dependents brings them back; a replayed propagated
# dependent waits BLOCKED behind its still-failed dependency; and two
# dependencies succeeding at the same moment always unblock their dependent
# in one of their two transactions (sql/012).

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

# a handler that fails terminally (65) until $BATS_TEST_TMPDIR/fixed exists
broken() {
	printf 'p=test -e %s/fixed || exit 65' "$BATS_TEST_TMPDIR"
}

# the state, failed_dependency and dead_reason of job $1, "|"-separated
job() {
	sql "SELECT state || '|' || coalesce(failed_dependency::text, '') || '|' || coalesce(dead_reason, '') FROM pendulum.jobs WHERE id = $1"
}

@test "A -> B -> C: A dead-lettered takes B and C with it; replay --with-dependents A brings them back and the chain succeeds" {
	a=$(pd-enqueue p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	c=$(pd-enqueue --after "$b" p '{}')
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	[ "$(job "$a")" = "DEAD_LETTERED||terminal exit code" ]
	[ "$(job "$b")" = "DEAD_LETTERED|$a|dependency $a dead-lettered" ]
	[ "$(job "$c")" = "DEAD_LETTERED|$b|dependency $b dead-lettered" ]
	# in the same transaction as A's outcome: finished at the same instant
	[ "$(sql "SELECT count(DISTINCT finished_at) FROM pendulum.jobs")" = 1 ]
	# B and C never ran
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id <> $a")" = 0 ]
	touch "$BATS_TEST_TMPDIR/fixed"
	run --separate-stderr pd-admin job replay --with-dependents "$a"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "job $a replayed: PENDING, replay_count 1 (p, queue default)" ]
	[ "${lines[1]}" = "job $b back to BLOCKED, behind job $a (p, queue default)" ]
	[ "${lines[2]}" = "job $c back to BLOCKED, behind job $b (p, queue default)" ]
	[ "${lines[3]}" = "2 dependents back to BLOCKED" ]
	[ "$(job "$b")" = "BLOCKED||" ]
	[ "$(job "$c")" = "BLOCKED||" ]
	[ "$(sql "SELECT string_agg(replay_count::text, ',' ORDER BY id) FROM pendulum.jobs")" = 1,1,1 ]
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	[ "$(sql "SELECT string_agg(state, ',' ORDER BY id) FROM pendulum.jobs")" = SUCCEEDED,SUCCEEDED,SUCCEEDED ]
}

@test "replay --with-dependents --json: one object per job, the dependents marked" {
	a=$(pd-enqueue p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	run --separate-stderr pd-admin --json job replay --with-dependents "$a"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	printf '%s\n' "${lines[0]}" | jq -e --argjson a "$a" '.id == $a and .state == "PENDING" and .dependent == false'
	printf '%s\n' "${lines[1]}" | jq -e --argjson a "$a" --argjson b "$b" '.id == $b and .state == "BLOCKED" and .waits_for == $a and .waits_for_state == "PENDING" and .dependent == true'
}

@test "a plain job replay of the failed dependency leaves its dependents dead-lettered" {
	a=$(pd-enqueue p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	run --separate-stderr pd-admin job replay "$a"
	[ "$status" -eq 0 ]
	[ "$output" = "job $a replayed: PENDING, replay_count 1 (p, queue default)" ]
	[ "$(job "$b")" = "DEAD_LETTERED|$a|dependency $a dead-lettered" ]
}

@test "a dependent of two: the failed one is named; one still running does not stop it" {
	a1=$(pd-enqueue p '{}')
	a2=$(pd-enqueue --queue other p '{}')
	b=$(pd-enqueue --after "$a1" --after "$a2" p '{}')
	# only a1's queue is served: a2 stays PENDING
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	[ "$(job "$a2")" = "PENDING||" ]
	[ "$(job "$b")" = "DEAD_LETTERED|$a1|dependency $a1 dead-lettered" ]
}

@test "cancelling a BLOCKED job's dependency cancels the job, and the jobs blocked on it" {
	a=$(pd-enqueue p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	c=$(pd-enqueue --after "$b" p '{}')
	run --separate-stderr pd-admin job cancel "$a"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "job $a cancelled (p, queue default)" ]
	[ "${lines[1]}" = "2 jobs blocked on it cancelled too" ]
	[ "$(job "$a")" = "CANCELLED||cancelled by operator" ]
	[ "$(job "$b")" = "CANCELLED|$a|dependency $a cancelled" ]
	[ "$(job "$c")" = "CANCELLED|$b|dependency $b cancelled" ]
	# a BLOCKED one cancelled in the middle of a chain takes the rest
	d=$(pd-enqueue p '{}')
	e=$(pd-enqueue --after "$d" p '{}')
	f=$(pd-enqueue --after "$e" p '{}')
	run --separate-stderr pd-admin --json job cancel "$e"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e --argjson e "$e" '.id == $e and .state == "CANCELLED" and .dependents_cancelled == 1'
	[ "$(job "$d")" = "PENDING||" ]
	[ "$(job "$f")" = "CANCELLED|$e|dependency $e cancelled" ]
}

@test "replay --with-dependents of a cancelled job brings its cancelled dependents back" {
	a=$(pd-enqueue p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	pd-admin job cancel "$a" >/dev/null
	run --separate-stderr pd-admin job replay --with-dependents "$a"
	[ "$status" -eq 0 ]
	[ "$(job "$a")" = "PENDING||" ]
	[ "$(job "$b")" = "BLOCKED||" ]
}

@test "dlq replay of a propagated dependent alone re-blocks it behind its still-failed dependency, and says so" {
	a=$(pd-enqueue p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	[ "$(job "$b")" = "DEAD_LETTERED|$a|dependency $a dead-lettered" ]
	run --separate-stderr pd-admin dlq replay "$b"
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "replayed 1 dead letter" ]
	[ "${lines[3]}" = "job $b is BLOCKED: it waits for job $a, which is DEAD_LETTERED: replay that one to run it" ]
	[[ "${lines[1]}" == "$b "*BLOCKED* ]]
	[ "$(job "$b")" = "BLOCKED||" ]
	# a worker does not run it; the reaper's pass leaves it waiting
	pd-worker --until-idle --poll 200ms --handler "$(broken)" 2>/dev/null
	[ "$(job "$b")" = "BLOCKED||" ]
	# its dependency replayed and fixed: it runs after it
	touch "$BATS_TEST_TMPDIR/fixed"
	pd-admin job replay "$a" >/dev/null
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	[ "$(sql "SELECT string_agg(state, ',' ORDER BY id) FROM pendulum.jobs")" = SUCCEEDED,SUCCEEDED ]
}

@test "dlq replay --json of a propagated dependent names what it waits for" {
	a=$(pd-enqueue p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	pd-worker --until-idle --no-reap --poll 200ms --handler "$(broken)" 2>/dev/null
	run --separate-stderr pd-admin --json dlq replay "$b"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e --argjson a "$a" --argjson b "$b" '.id == $b and .state == "BLOCKED" and .waits_for == $a and .waits_for_state == "DEAD_LETTERED"'
}

@test "an at-most-once dependency whose lease expired: the reaper dead-letters its dependents with it" {
	a=$(pd-enqueue --at-most-once p '{}')
	b=$(pd-enqueue --after "$a" p '{}')
	# a's worker died holding the lease
	sql "UPDATE pendulum.jobs SET state = 'RUNNING', attempt = 1, lease_token = nextval('pendulum.lease_token_seq'),
	     lease_owner = 'gone:1:x', lease_expires_at = now() - interval '1 second', started_at = now() WHERE id = $a"
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $a")" = DEAD_LETTERED ]
	[ "$(job "$b")" = "DEAD_LETTERED|$a|dependency $a dead-lettered" ]
}

@test "a workflow that fails dead-letters the jobs waiting for its job" {
	run_id=$(sql "SELECT pendulum.start_workflow('default', 'wf', '{}')")
	wf=$(sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $run_id")
	b=$(pd-enqueue --after "$wf" p '{}')
	# a workflow job nobody defines: its worker dead-letters it like any job
	sql "UPDATE pendulum.jobs SET max_attempts = 1 WHERE id = $wf"
	run --separate-stderr pd-worker --until-idle --no-reap --poll 200ms --handler 'workflow:wf=exit 65' --handler "$(broken)"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $wf")" = DEAD_LETTERED ]
	[ "$(job "$b")" = "DEAD_LETTERED|$wf|dependency $wf dead-lettered" ]
}

@test "the race: two last dependencies succeeding at the same moment, 200 times; the dependent is never left BLOCKED" {
	# pd-test-tool drives the worker's own outcome statement on two
	# connections, each success written while the other is uncommitted; no
	# reaper runs, so nothing but those two transactions can unblock it
	run --separate-stderr "$PD_TEST_TOOL" unblock-race 200
	[ "$status" -eq 0 ]
	[ "$output" = "200 rounds, 0 left BLOCKED" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'race_after' AND state = 'BLOCKED'")" = 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'race_after' AND state = 'PENDING'")" = 200 ]
}
