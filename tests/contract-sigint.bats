#!/usr/bin/env bats
# DESIGN: SIGINT is SIGTERM for pd-worker, pd-relay and pd-reaper: each
# drains (takes nothing new, finishes what is in flight) and exits 0.
# (pd-cron's SIGINT: daemons.bats.)

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	reset_outbox
	GATE=$BATS_TEST_TMPDIR/gate
	STARTED=$BATS_TEST_TMPDIR/started
}

logged() {
	grep -qF -- "$2" "$BATS_FILE_TMPDIR/$1.log"
}

# a command that says it started, then waits for the gate, then succeeds
gated() {
	printf "touch '%s'; while [ ! -e '%s' ]; do sleep 0.05; done" "$STARTED" "$GATE"
}

@test "pd-worker: SIGINT drains: the running handler finishes, its job SUCCEEDED, exit 0" {
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --lease 2s --poll 100ms --no-reap --handler "t=$(gated)"
	wait_for 30 test -e "$STARTED"
	kill -INT "$(bg_pid w)"
	wait_for 10 logged w 'msg="draining: no new jobs" signal=2'
	# drained, not stopped: the handler still runs until the gate opens
	alive "$(bg_pid w)"
	touch "$GATE"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/w.status"
	[ "$(bg_status w)" -eq 0 ]
	[ "$(job_state "$id")" = SUCCEEDED ]
}

@test "pd-relay: SIGINT drains: the running publish command finishes, its message published, exit 0" {
	id=$(record orders '{"n": 1}')
	start_relay r -j 1 --poll 100ms --publish "$(gated)"
	wait_for 30 test -e "$STARTED"
	kill -INT "$(bg_pid r)"
	wait_for 10 logged r 'signal=2'
	alive "$(bg_pid r)"
	touch "$GATE"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/r.status"
	[ "$(bg_status r)" -eq 0 ]
	[ "$(outbox_state "$id")" = PUBLISHED ]
}

@test "pd-reaper: SIGINT during a pass: the pass finishes (the expired lease given back), exit 0" {
	id=$(make_job LEASED)
	sql "UPDATE pendulum.jobs SET lease_expires_at = now() - interval '1 h' WHERE id = $id"
	# the pass will wait on this lock, held by a session of the test's
	start_psql t_locker \
		-c "BEGIN" -c "LOCK TABLE pendulum.jobs IN EXCLUSIVE MODE" -c "SELECT pg_sleep(600)"
	wait_for 10 backend_waiting t_locker
	start_bg reaper pd-reaper --interval 1h
	wait_for 30 sql_is "SELECT count(*) > 0 FROM pg_stat_activity
	                    WHERE wait_event_type = 'Lock' AND query LIKE '%pendulum.jobs%'" t
	# (the reaper reads its signal once the statement returns: no log line yet)
	kill -INT "$(bg_pid reaper)"
	sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 't_locker'" >/dev/null
	wait_for 30 test -s "$BATS_FILE_TMPDIR/reaper.status"
	[ "$(bg_status reaper)" -eq 0 ]
	logged reaper 'msg="reaper stopped"'
	[ "$(job_state "$id")" = PENDING ]
}
