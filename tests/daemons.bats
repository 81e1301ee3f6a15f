#!/usr/bin/env bats
# pd-reaper and pd-cron run on the one daemon loop (lib/daemon), like
# pd-worker and pd-relay: SIGHUP reloads the config (tests/reload.bats); SIGTERM and SIGINT
# end them at once with status 0, whatever they wait for (the next pass an
# hour away, or a database that is gone); an outage of the database is
# ridden out: they log it, retry with backoff, reconnect and go on.
#
# An outage here is this file's database refusing new connections and the
# daemons' sessions terminated: nothing is restarted, so the cluster
# scripts/check shares between files is left alone.

load helpers

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
}

teardown_file() {
	kill_all_bg
	db_open
	pd_teardown_db
}

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.cron_schedules CASCADE" # and its pendulum.cron_fires
}

teardown() {
	kill_all_bg
	db_open
}

# cluster_sql SQL: run SQL in the cluster's own database, which stays open.
cluster_sql() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_PG_URL" -c "$1"
}

# db_close: this file's database refuses new connections and its sessions end.
db_close() {
	cluster_sql "ALTER DATABASE $PD_DB_NAME WITH ALLOW_CONNECTIONS false"
	cluster_sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	             WHERE datname = '$PD_DB_NAME'" >/dev/null
}

db_open() {
	cluster_sql "ALTER DATABASE $PD_DB_NAME WITH ALLOW_CONNECTIONS true"
}

# logged NAME TEXT: NAME's log holds TEXT.
logged() {
	grep -qF -- "$2" "$BATS_FILE_TMPDIR/$1.log"
}

# start_daemons INTERVAL: pd-reaper and pd-cron run, both at INTERVAL, up and ticking.
start_daemons() {
	start_bg reaper pd-reaper --interval "$1"
	start_bg ticker pd-cron run --interval "$1"
	wait_for 10 logged reaper 'msg="reaper started"'
	wait_for 10 logged ticker 'msg="ticker active: holding the ticker role"'
}

@test "SIGHUP reloads the config (none: the defaults); SIGTERM and SIGINT end them at once with 0, an hour before the next pass" {
	start_daemons 1h
	kill -HUP "$(bg_pid reaper)"
	kill -HUP "$(bg_pid ticker)"
	wait_for 10 logged reaper 'msg="config reloaded" daemon=reaper file=-'
	wait_for 10 logged ticker 'msg="config reloaded" daemon=ticker file=-'
	alive "$(bg_pid reaper)"
	alive "$(bg_pid ticker)"
	stop_bg reaper TERM 5
	[ "$(bg_status reaper)" -eq 0 ]
	stop_bg ticker INT 5
	[ "$(bg_status ticker)" -eq 0 ]
	logged reaper 'msg="reaper stopped"'
	logged ticker 'msg="ticker stopped"'
}

@test "a database outage: both retry, reconnect, and go on reaping and ticking (the ticker still holding the role)" {
	start_daemons 100ms
	db_close
	wait_for 20 logged reaper 'msg="database connection lost"'
	wait_for 20 logged ticker 'msg="database connection lost"'
	wait_for 20 logged reaper 'msg="database unavailable, will retry"'
	wait_for 20 logged ticker 'msg="database unavailable, will retry"'
	db_open
	wait_for 20 logged reaper 'msg=reconnected'
	wait_for 20 logged ticker 'msg=reconnected'
	# work made after the outage is done
	orphan=$(expired_lease)
	pd-cron add every --cron '* * * * *' --tz UTC --type tick >/dev/null
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = now() - interval '2 minutes',
	     next_fire_at = now() - interval '2 minutes'" >/dev/null
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $orphan" PENDING
	wait_for 20 sql_is "SELECT count(*) > 0 FROM pendulum.jobs WHERE job_type = 'tick'" t
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $orphan")" = lease_expired ]
	# the role is a row, not the session's: the ticker holds it across the reconnect
	[ "$(grep -c 'msg="ticker active' "$BATS_FILE_TMPDIR/ticker.log")" -eq 1 ]
	[ "$(sql "SELECT split_part(holder, ':', 2) FROM pendulum.leaders WHERE role = 'ticker'")" = "$(bg_pid ticker)" ]
	# the same processes throughout
	alive "$(bg_pid reaper)"
	alive "$(bg_pid ticker)"
	stop_bg reaper
	[ "$(bg_status reaper)" -eq 0 ]
	stop_bg ticker
	[ "$(bg_status ticker)" -eq 0 ]
}

@test "SIGTERM while the database is away ends them at once with 0" {
	start_daemons 100ms
	db_close
	wait_for 20 logged reaper 'msg="database unavailable, will retry"'
	wait_for 20 logged ticker 'msg="database unavailable, will retry"'
	stop_bg reaper TERM 5
	[ "$(bg_status reaper)" -eq 0 ]
	stop_bg ticker TERM 5
	[ "$(bg_status ticker)" -eq 0 ]
	logged reaper 'msg="reaper stopped"'
	logged ticker 'msg="ticker stopped"'
}
