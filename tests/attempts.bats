#!/usr/bin/env bats
# Attempt records (sql/008): one write per attempt. A clean success is
# recorded by its job row alone; everything else is a row of
# pendulum.attempt_rows written when the attempt ends; pendulum.job_attempts
# (a view) shows both, and the attempt in flight.

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
}

# stored ID: the attempt rows written for job ID.
stored() {
	sql "SELECT count(*) FROM pendulum.attempt_rows WHERE job_id = $1"
}

@test "a clean success writes no attempt row; job_attempts shows it from the job row" {
	id=$(pd-enqueue t '{}')
	run --separate-stderr pd-worker -j 1 --until-idle --handler 't=true'
	[ "$status" -eq 0 ]
	[ "$(job_state "$id")" = SUCCEEDED ]
	[ "$(stored "$id")" -eq 0 ]
	[ "$(sql "SELECT attempt || ':' || outcome || ':' || exit_code || ':' || (worker LIKE '%:%')
	          || ':' || (started_at <= finished_at) FROM pendulum.job_attempts WHERE job_id = $id")" = \
		"1:succeeded:0:true:true" ]
}

@test "a success with stderr, and every failure, is a stored row" {
	ok=$(pd-enqueue t '{"say": true}')
	bad=$(pd-enqueue t '{"fail": true}')
	run --separate-stderr pd-worker -j 1 --until-idle \
		--handler 't=if grep -q fail; then echo no >&2; exit 65; else echo hello >&2; fi'
	[ "$status" -eq 0 ]
	[ "$(stored "$ok")" -eq 1 ]
	[ "$(sql "SELECT outcome || ':' || stderr_tail FROM pendulum.attempt_rows WHERE job_id = $ok")" = \
		"succeeded:hello" ]
	[ "$(sql "SELECT outcome || ':' || exit_code FROM pendulum.attempt_rows WHERE job_id = $bad")" = \
		"terminal:65" ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id IN ($ok, $bad)")" -eq 2 ]
}

@test "the attempt in flight shows in job_attempts, outcome empty, with no stored row" {
	gate=$BATS_TEST_TMPDIR/gate
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --handler "t=while [ ! -e '$gate' ]; do sleep 0.05; done"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	[ "$(stored "$id")" -eq 0 ]
	[ "$(sql "SELECT attempt || ':' || coalesce(outcome, '-') || ':' || worker FROM pendulum.job_attempts
	          WHERE job_id = $id")" = "1:-:$(worker_id w)" ]
	touch "$gate"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(sql "SELECT string_agg(coalesce(outcome, '-'), ' ') FROM pendulum.job_attempts WHERE job_id = $id")" = \
		succeeded ]
}

@test "a replayed success keeps its first run: both successes are in job_attempts" {
	id=$(pd-enqueue t '{}')
	run --separate-stderr pd-worker -j 1 --until-idle --handler 't=true'
	[ "$status" -eq 0 ]
	first=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	run --separate-stderr pd-admin job replay "$id"
	[ "$status" -eq 0 ]
	[ "$(stored "$id")" -eq 1 ]
	run --separate-stderr pd-worker -j 1 --until-idle --handler 't=true'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT string_agg(outcome || ':' || (lease_token = $first), ' ' ORDER BY lease_token)
	          FROM pendulum.job_attempts WHERE job_id = $id")" = "succeeded:true succeeded:false" ]
}

@test "an expired lease is stored by the reaper from the job row, the next success from its job row" {
	id=$(pd-enqueue t '{}')
	sql "UPDATE pendulum.jobs SET state = 'RUNNING', attempt = 1, started_at = now() - interval '3 s',
	       lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'gone:1:0000',
	       lease_expires_at = now() - interval '1 s' WHERE id = $id" >/dev/null
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT attempt || ':' || outcome || ':' || worker || ':' || (finished_at - started_at >= interval '3 s')
	          FROM pendulum.attempt_rows WHERE job_id = $id")" = "1:lease_expired:gone:1:0000:true" ]
	run --separate-stderr pd-worker -j 1 --until-idle --handler 't=true'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome, ' ' ORDER BY attempt) FROM pendulum.job_attempts
	          WHERE job_id = $id")" = "1:lease_expired 2:succeeded" ]
	[ "$(stored "$id")" -eq 1 ]
}
