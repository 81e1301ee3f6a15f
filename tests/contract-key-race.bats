#!/usr/bin/env bats
# DESIGN: one job per idempotency key and tenant; a repeat gets its id. Two
# single-job enqueues with one key, at once: one job, both print its id,
# both exit 0. The race is forced: a session of the test holds a lock on
# pendulum.jobs that both enqueues wait on, then lets them go together.

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

waiting_on_lock() {
	sql_is "SELECT count(*) FROM pg_stat_activity
	        WHERE datname = current_database() AND wait_event_type = 'Lock'
	          AND application_name <> 't_locker'" "$1"
}

@test "two single-job enqueues racing on one idempotency key: one job, both get its id, exit 0" {
	start_psql t_locker \
		-c "BEGIN" -c "LOCK TABLE pendulum.jobs IN SHARE MODE" -c "SELECT pg_sleep(600)"
	wait_for 10 backend_waiting t_locker
	start_bg e1 pd-enqueue --no-stdin -k race-1 t '{"n": 1}'
	start_bg e2 pd-enqueue --no-stdin -k race-1 t '{"n": 2}'
	# both are in, waiting on the lock
	wait_for 30 waiting_on_lock 2
	sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 't_locker'" >/dev/null
	wait_for 30 test -s "$BATS_FILE_TMPDIR/e1.status"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/e2.status"
	[ "$(bg_status e1)" -eq 0 ]
	[ "$(bg_status e2)" -eq 0 ]
	[ "$(njobs)" -eq 1 ]
	id=$(sql "SELECT id FROM pendulum.jobs WHERE idempotency_key = 'race-1'")
	[ "$(cat "$BATS_FILE_TMPDIR/e1.out")" = "$id" ]
	[ "$(cat "$BATS_FILE_TMPDIR/e2.out")" = "$id" ]
}
