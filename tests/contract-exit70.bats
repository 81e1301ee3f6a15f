#!/usr/bin/env bats
# Exit 70 (an internal software error) of each program, for real: the
# database refuses a write with an SQLSTATE that lib/db.c's table maps to
# nothing else. Here a read-only session (PGOPTIONS sets
# default_transaction_read_only, as a hot standby would refuse with the same
# 25006): each program exits 70 with one line naming the database error,
# and nothing is written. And pd-admin's 77: a role without the grant.

load helpers

# R_APP: a login role with pendulum_enqueue only (cluster-wide: named after
# this file's database, dropped at the end).
setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	R_APP="app_$PD_DB_NAME"
	export R_APP
	psql -X -q -d "$PD_PG_URL" -c "DROP ROLE IF EXISTS $R_APP"
	sql "CREATE ROLE $R_APP LOGIN; GRANT pendulum_enqueue TO $R_APP"
}

teardown_file() {
	kill_all_bg
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $PD_DB_NAME WITH (FORCE)" || true
	psql -X -q -d "$PD_PG_URL" -c "DROP ROLE IF EXISTS $R_APP" || true
	pd_teardown_db
}

teardown() {
	kill_all_bg
}

# url_as ROLE: the test database's conninfo as ROLE.
url_as() {
	printf '%s\n' "$PD_DATABASE_URL" | sed "s/user=[^ ]*/user=$1/"
}

RO='-c default_transaction_read_only=on'

setup() {
	reset_jobs
	reset_outbox
	sql "DELETE FROM pendulum.cron_schedules; DELETE FROM pendulum.limits"
}

# refused_ro PROGRAM: the last stderr line is PROGRAM's, naming the read-only refusal.
refused_ro() {
	[ "${#stderr_lines[@]}" -ge 1 ]
	[[ "${stderr_lines[-1]}" == "$1: "*"read-only transaction"* ]]
}

@test "pd-enqueue on a read-only database: exit 70 naming the database error, no job" {
	run --separate-stderr env PGOPTIONS="$RO" pd-enqueue t '{}'
	[ "$status" -eq 70 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pd-enqueue: database error: "*"read-only transaction" ]]
	[ "$output" = "" ]
	[ "$(njobs)" = 0 ]
}

@test "pd-worker --until-idle on a read-only database: exit 70 naming the database error, the job untouched" {
	id=$(pd-enqueue t '{}')
	run --separate-stderr env PGOPTIONS="$RO" timeout 60 pd-worker --until-idle --handler 't=true'
	[ "$status" -eq 70 ]
	refused_ro pd-worker
	[ "$(sql "SELECT state, attempt FROM pendulum.jobs WHERE id = $id")" = "PENDING|0" ]
}

@test "pd-reaper --once on a read-only database: exit 70 naming the database error, the expired lease left" {
	id=$(make_job LEASED)
	sql "UPDATE pendulum.jobs SET lease_expires_at = now() - interval '1 min' WHERE id = $id"
	run --separate-stderr env PGOPTIONS="$RO" timeout 60 pd-reaper --once
	[ "$status" -eq 70 ]
	refused_ro pd-reaper
	[ "$(job_state "$id")" = LEASED ]
}

@test "pd-relay --once on a read-only database: exit 70 naming the database error, the message unpublished" {
	mid=$(record orders '{"n": 1}')
	run --separate-stderr env PGOPTIONS="$RO" timeout 60 pd-relay --once \
		--publish "touch '$BATS_TEST_TMPDIR/published'"
	[ "$status" -eq 70 ]
	refused_ro pd-relay
	[ ! -e "$BATS_TEST_TMPDIR/published" ]
	[ "$(outbox_state "$mid")" = PENDING ]
}

@test "pd-cron run --once on a read-only database: a due schedule it cannot fire is exit 70, no job" {
	pd-cron add every --cron '* * * * *' --tz UTC --type t >/dev/null
	sql "UPDATE pendulum.cron_schedules SET next_fire_at = now() - interval '1 min'"
	run --separate-stderr env PGOPTIONS="$RO" timeout 60 pd-cron run --once
	[ "$status" -eq 70 ]
	[ "${stderr_lines[-1]}" = "pd-cron: 1 schedule could not be handled (see the log above)" ]
	[[ "$stderr" == *'msg="schedule left for the next tick"'*"read-only transaction"* ]]
	[ "$(njobs)" = 0 ]
}

@test "pd-cron add on a read-only database: exit 70 naming the database error, no schedule" {
	run --separate-stderr env PGOPTIONS="$RO" pd-cron add every --cron '* * * * *' --tz UTC --type t
	[ "$status" -eq 70 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pd-cron: database error: "*"read-only transaction" ]]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" = 0 ]
}

@test "pd-admin queue pause on a read-only database: exit 70 naming the database error, the queue not paused" {
	run --separate-stderr env PGOPTIONS="$RO" pd-admin queue pause default
	[ "$status" -eq 70 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pd-admin: database error: "*"read-only transaction" ]]
	[ "$(sql "SELECT count(*) FROM pendulum.limits WHERE paused")" = 0 ]
}

@test "pd-admin as a role without pendulum_admin: queue pause exits 77 naming the refusal, the queue not paused" {
	run --separate-stderr pd-admin -d "$(url_as "$R_APP")" queue pause default
	[ "$status" -eq 77 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pd-admin: "*"permission denied"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.limits WHERE paused")" = 0 ]
	# the same command as the owner pauses it: the refusal was the role's
	pd-admin queue pause default >/dev/null
	[ "$(sql "SELECT count(*) FROM pendulum.limits WHERE paused")" = 1 ]
}
