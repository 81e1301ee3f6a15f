#!/usr/bin/env bats
# Dependencies: a job enqueued --after others waits BLOCKED until they all
# succeed, then runs like any other.

load helpers
pd_db_hooks

# every test on empty job tables, so that each passes run alone
setup() {
	reset_jobs
}

@test "a job --after two others is BLOCKED until both succeed, then runs after them" {
	log=$BATS_TEST_TMPDIR/order
	a=$(pd-enqueue d '{"n": "a"}')
	b=$(pd-enqueue d '{"n": "b"}')
	c=$(pd-enqueue --after "$a" --after "$b" d '{"n": "c"}')
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $c")" = BLOCKED ]
	# the success of the last dependency unblocks c in the same statement, so
	# the same worker session runs it: no reaper pass needed
	pd-worker --until-idle --no-reap --poll 200ms -j 1 --handler "d=echo \$PD_JOB_ID >>'$log'" 2>/dev/null
	[ "$(sql "SELECT string_agg(state, ',' ORDER BY id) FROM pendulum.jobs")" = SUCCEEDED,SUCCEEDED,SUCCEEDED ]
	[ "$(tail -n 1 "$log")" = "$c" ]
	[ "$(wc -l <"$log")" -eq 3 ]
}

@test "a job --after one already succeeded is PENDING at once" {
	a=$(pd-enqueue d2 '{}')
	pd-worker --until-idle --poll 200ms --handler 'd2=true' 2>/dev/null
	b=$(pd-enqueue --after "$a" d2 '{}')
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $b")" = PENDING ]
}

@test "a job --after a missing one: exit 2 naming it, nothing enqueued" {
	before=$(sql "SELECT count(*) FROM pendulum.jobs")
	run --separate-stderr pd-enqueue --after 999999 d3 '{}'
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"dependency job 999999 does not exist"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" = "$before" ]
}
