#!/usr/bin/env bats
# Idle costs nothing (issue 20): on a database of 100,000 finished jobs, an
# idle pd-worker, pd-reaper, pd-relay, pd-cron daemon and pd-worker
# --crontab (its ticker) each run at most 10 statements in 10 s, and none
# of them scans pendulum.jobs sequentially.
#
# Statements are counted in the server log: log_statement = all for the
# test database only, each line carrying the backend's pid (the default
# log_line_prefix "%m [%p] "); each daemon's backend is found by its
# application_name. Sequential scans: pg_stat_user_tables before and after.
# The daemons run with their defaults (poll 1 s, lease 30 s, ...); the
# window opens once each has done its start-up statements.

load helpers
pd_db_hooks

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	sql "ALTER DATABASE $PD_DB_NAME SET log_statement = 'all'"
	sql "INSERT INTO pendulum.jobs (job_type, state, started_at, finished_at, lease_token)
	     SELECT 't', 'SUCCEEDED', now() - interval '1 s', now(), g FROM generate_series(1, 100000) g"
	sql "ANALYZE pendulum.jobs"
}

# backend APP: the pid of the one backend of application APP on the test database.
backend() {
	sql "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = '$1'"
}

# logged PID [FROM]: statements the backend PID ran, in the server log from line FROM on.
logged() {
	tail -n +"${2:-1}" "$PD_PG_DIR/log" | grep -cE "\[$1\] LOG:  (statement|execute [^:]*):" || true
}

# at_least N PID PATTERN: the backend PID ran N statements matching PATTERN.
at_least() {
	[ "$(grep -E "\[$2\] LOG:  (statement|execute [^:]*):.*$3" "$PD_PG_DIR/log" | wc -l)" -ge "$1" ]
}

seq_scans() {
	sql "SELECT pg_stat_force_next_flush(); SELECT seq_scan FROM pg_stat_user_tables
	     WHERE relid = 'pendulum.jobs'::regclass" | tail -n 1
}

@test "idle worker, reaper, relay, ticker and crontab worker: at most 10 statements in 10 s each, no sequential scan of jobs" {
	printf '0 0 1 1 * true\n' >"$BATS_TEST_TMPDIR/yearly.cron"
	start_worker w --handler 't=true'
	start_bg reaper pd-reaper
	start_bg relay pd-relay --publish true
	start_bg ticker pd-cron run
	wait_for 10 test -n "$(backend pd-worker)"
	w=$(backend pd-worker)
	# the crontab worker after the plain one: two pd-worker backends then
	start_worker cw --crontab "$BATS_TEST_TMPDIR/yearly.cron" --queue crontab
	wait_for 10 test -n "$(backend pd-reaper)"
	wait_for 10 test -n "$(backend pd-relay)"
	wait_for 10 test -n "$(backend pd-cron)"
	wait_for 10 test "$(backend pd-worker | wc -l)" -eq 2
	cw=$(backend pd-worker | grep -vx "$w")
	reaper=$(backend pd-reaper) relay=$(backend pd-relay) ticker=$(backend pd-cron)
	# start-up done: each has polled again after its first pass
	wait_for 15 at_least 2 "$w" claim_jobs
	wait_for 15 at_least 2 "$cw" claim_jobs
	wait_for 15 at_least 2 "$relay" 'pendulum.outbox'
	# the reap pass and its first prune: by whichever holds the reaper role
	wait_for 15 at_least 5 "($w|$cw|$reaper)" 'pendulum.prune'
	wait_for 15 grep -q 'msg="reaper \(on standby\|role taken\)' "$BATS_FILE_TMPDIR/reaper.log"
	wait_for 15 grep -q 'msg="ticker active' "$BATS_FILE_TMPDIR/ticker.log"
	from=$(($(wc -l <"$PD_PG_DIR/log") + 1))
	scans=$(seq_scans)
	sleep 10 # the measured window
	after=$(seq_scans)
	for b in w cw reaper relay ticker; do
		echo "$b: $(logged "${!b}" "$from") statements" >&3
	done
	echo "seq scans of pendulum.jobs: $scans -> $after" >&3
	[ "$(logged "$w" "$from")" -le 10 ]
	[ "$(logged "$cw" "$from")" -le 10 ]
	[ "$(logged "$reaper" "$from")" -le 10 ]
	[ "$(logged "$relay" "$from")" -le 10 ]
	[ "$(logged "$ticker" "$from")" -le 10 ]
	[ "$after" -eq "$scans" ]
}
