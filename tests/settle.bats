#!/usr/bin/env bats
# Waiting until jobs settle: pd-admin wait (0 all succeeded, 1 one
# dead-lettered or cancelled, 124 at --timeout) and pd-worker
# --until-settled (exits once no job it serves is due, in a retry's
# backoff, due within the retry cap, running, or blocked on a dependency
# that can still succeed; unlike --until-idle, which stops while a retry
# waits).

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

bats_require_minimum_version 1.5.0

setup() {
	reset_jobs
	sql "DELETE FROM pendulum.limits"
	CFG=$BATS_TEST_TMPDIR/pendulum.yaml
	COUNT=$BATS_TEST_TMPDIR/count
	# retries wait at most a second (full jitter: 0 to 1 s)
	printf 'retry:\n  base: 1s\n  cap: 1s\n' >"$CFG"
}

# flaky N CODE: a handler that exits CODE on its first N runs (counted in
# $COUNT), then prints {"n": RUN}.
flaky() {
	printf 'n=$(cat %s 2>/dev/null || echo 0); n=$((n + 1)); echo $n >%s; [ $n -gt %s ] || exit %s; echo "{\\"n\\": $n}"' \
		"$COUNT" "$COUNT" "$1" "$2"
}

# backoff_job TYPE SECONDS: a PENDING job of TYPE as a failed first attempt
# leaves it: attempt 1, due in SECONDS (its retry's backoff). Prints its id.
backoff_job() {
	sql "INSERT INTO pendulum.jobs (job_type, attempt, run_at, last_error)
	     VALUES ('$1', 1, now() + interval '$2 s', 'exit 1') RETURNING id"
}

@test "wait --type: a job that fails twice, then succeeds, exits 0 only once it has succeeded" {
	id=$(pd-enqueue t '{}')
	start_bg waiter pd-admin wait --type t --timeout 50s
	# not a terminal: a line each time the count changes
	wait_for 30 grep -qx "pd-admin: waiting for 1 of 1 job" "$BATS_FILE_TMPDIR/waiter.log"
	start_worker w -c "$CFG" --handler "t=$(flaky 2 1)" --poll 100ms --lease 2s
	wait_for 50 test -s "$BATS_FILE_TMPDIR/waiter.status"
	[ "$(bg_status waiter)" = 0 ]
	[ "$(cat "$BATS_FILE_TMPDIR/waiter.out")" = "1 job: 1 succeeded, 0 dead-lettered, 0 cancelled" ]
	[ "$(job_state "$id")" = SUCCEEDED ]
	[ "$(sql "SELECT attempt FROM pendulum.jobs WHERE id = $id")" = 3 ]
	[ "$(cat "$COUNT")" = 3 ]
}

@test "wait: a dead letter among the jobs exits 1 naming it, after the others ended" {
	ok=$(pd-enqueue t '{}')
	bad=$(pd-enqueue t '{"bad": 1}')
	start_worker w --handler 't=grep -q bad && exit 65; exit 0' --poll 100ms --lease 2s
	run --separate-stderr timeout 60 pd-admin wait "$ok" "$bad" --timeout 50s
	[ "$status" -eq 1 ]
	[ "$output" = "2 jobs: 1 succeeded, 1 dead-lettered, 0 cancelled" ]
	[[ "$stderr" == *"pd-admin: 1 of 2 jobs did not succeed (1 dead-lettered, 0 cancelled): $bad" ]]
	[ "$(job_state "$bad")" = DEAD_LETTERED ]
	[ "$(job_state "$ok")" = SUCCEEDED ]
	# --json: one object
	run --separate-stderr pd-admin --json wait --type t
	[ "$status" -eq 1 ]
	printf '%s\n' "$output" | jq -e '. == {jobs: 2, succeeded: 1, dead_lettered: 1,
		cancelled: 0, unfinished: 0, timed_out: false}'
}

@test "wait: a cancelled job exits 1; nothing that matches exits 0 at once" {
	id=$(pd-enqueue t '{}')
	pd-admin job cancel "$id" >/dev/null
	run --separate-stderr pd-admin wait "$id"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"(0 dead-lettered, 1 cancelled): $id" ]]
	run --separate-stderr pd-admin wait --type nosuch
	[ "$status" -eq 0 ]
	[ "$output" = "0 jobs: 0 succeeded, 0 dead-lettered, 0 cancelled" ]
}

@test "wait --timeout with no worker: 124 once the time is up, the job untouched" {
	id=$(pd-enqueue t '{}')
	SECONDS=0
	run --separate-stderr timeout 60 pd-admin wait --type t --timeout 2s
	[ "$status" -eq 124 ]
	# its own 2 s, not the 60 s of timeout(1): slack for a loaded machine
	[ "$SECONDS" -lt 30 ]
	[ -z "$output" ]
	[[ "$stderr" == *"pd-admin: timed out after 2s: 1 of 1 jobs not finished" ]]
	[ "$(job_state "$id")" = PENDING ]
	run --separate-stderr timeout 30 pd-admin --json wait "$id" --timeout 200ms
	[ "$status" -eq 124 ]
	printf '%s\n' "$output" | jq -e '.timed_out == true and .unfinished == 1 and .jobs == 1'
}

@test "wait: an unknown id is not found (2), one line, before any waiting" {
	id=$(pd-enqueue t '{}')
	run --separate-stderr timeout 30 pd-admin wait "$id" 99999999
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: job 99999999 not found" ]
	[ -z "$output" ]
}

@test "--until-settled waits through a retry's backoff, where --until-idle exits at once" {
	# due in 3 s, past the retry cap (1 s): a backoff another worker's
	# settings made still holds it
	id=$(backoff_job t 3)
	run --separate-stderr timeout 30 pd-worker -c "$CFG" --until-idle --poll 100ms --handler 't=true'
	[ "$status" -eq 0 ]
	[ "$(job_state "$id")" = PENDING ]
	run --separate-stderr timeout 30 pd-worker -c "$CFG" --until-settled --poll 100ms --handler 't=true'
	[ "$status" -eq 0 ]
	[ "$(job_state "$id")" = SUCCEEDED ]
	# a job that fails twice first: every try runs in one worker's life
	id=$(pd-enqueue t '{}')
	run --separate-stderr timeout 60 pd-worker -c "$CFG" --until-settled --poll 100ms \
		--lease 2s --handler "t=$(flaky 2 1)"
	[ "$status" -eq 0 ]
	[ "$(job_state "$id")" = SUCCEEDED ]
	[ "$(sql "SELECT attempt FROM pendulum.jobs WHERE id = $id")" = 3 ]
}

@test "--until-settled: a job next week, a paused queue, a dead dependency, an unserved type do not hold it" {
	later=$(sql "INSERT INTO pendulum.jobs (job_type, run_at) VALUES ('t', now() + interval '7 days') RETURNING id")
	paused=$(sql "INSERT INTO pendulum.jobs (job_type, queue) VALUES ('t', 'q2') RETURNING id")
	pd-admin queue pause q2 >/dev/null
	dead=$(make_job DEAD_LETTERED)
	blocked=$(sql "INSERT INTO pendulum.jobs (job_type, state, depends_on)
	               VALUES ('t', 'BLOCKED', ARRAY[$dead]::bigint[]) RETURNING id")
	other=$(pd-enqueue other '{}')
	run --separate-stderr timeout 30 pd-worker -c "$CFG" --until-settled --poll 100ms \
		-q default -q q2 --handler 't=true'
	[ "$status" -eq 0 ]
	[ "$(job_state "$later")" = PENDING ]
	[ "$(job_state "$paused")" = PENDING ]
	[ "$(job_state "$blocked")" = BLOCKED ]
	[ "$(job_state "$other")" = PENDING ]
}

@test "--until-settled: a job running on another worker holds it until that one ends" {
	local gate=$BATS_TEST_TMPDIR/gate
	id=$(pd-enqueue t '{}')
	start_worker a --handler "t=while [ ! -e '$gate' ]; do sleep 0.05; done" --poll 100ms --lease 2s
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	start_worker b -c "$CFG" --until-settled --poll 100ms --lease 2s --handler 't=true'
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.workers" 2
	# b polls every 100 ms: a second is a window for a wrong exit, not synchronisation
	sleep 1
	alive "$(bg_pid b)"
	touch "$gate"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/b.status"
	[ "$(bg_status b)" = 0 ]
	[ "$(job_state "$id")" = SUCCEEDED ]
}
