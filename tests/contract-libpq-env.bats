#!/usr/bin/env bats
# With neither -d nor PD_DATABASE_URL (nor a configuration file's
# database), the programs connect as libpq does by itself: PGHOST, PGPORT,
# PGUSER, PGDATABASE, and PGSERVICE from PGSERVICEFILE.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	# the parts of this file's conninfo, as libpq's variables
	PGHOST_=$(conn_part host)
	PGPORT_=$(conn_part port)
	PGUSER_=$(conn_part user)
}

# conn_part KEY: KEY's value in $PD_DATABASE_URL (key=value words).
conn_part() {
	printf '%s\n' "$PD_DATABASE_URL" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# libpq_env CMD...: CMD with libpq's variables only, no PD_DATABASE_URL.
libpq_env() {
	env -u PD_DATABASE_URL PGHOST="$PGHOST_" PGPORT="$PGPORT_" PGUSER="$PGUSER_" \
		PGDATABASE="$PD_DB_NAME" "$@"
}

@test "PGHOST/PGPORT/PGUSER/PGDATABASE: pd-enqueue enqueues into that database, pd-admin reads it" {
	[ -n "$PGHOST_" ]
	[ -n "$PGPORT_" ]
	run --separate-stderr libpq_env pd-enqueue --no-stdin t '{"via": "libpq"}'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT payload->>'via' FROM pendulum.jobs WHERE id = $output")" = libpq ]
	id=$output
	run --separate-stderr libpq_env pd-admin --json job show "$id"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | jq -r .id)" = "$id" ]
}

@test "PGDATABASE names the database: another one is refused as libpq refuses it" {
	run --separate-stderr env -u PD_DATABASE_URL PGHOST="$PGHOST_" PGPORT="$PGPORT_" \
		PGUSER="$PGUSER_" PGDATABASE=t_no_such_db pd-enqueue --no-stdin t '{}'
	[ "$status" -eq 69 ]
	[[ "$stderr" == *'database "t_no_such_db" does not exist'* ]]
	[ "$(njobs)" -eq 0 ]
}

@test "PGSERVICE from PGSERVICEFILE: pd-enqueue enqueues into the service's database" {
	svc=$BATS_TEST_TMPDIR/pg_service.conf
	printf '[pdtest]\nhost=%s\nport=%s\nuser=%s\ndbname=%s\n' \
		"$PGHOST_" "$PGPORT_" "$PGUSER_" "$PD_DB_NAME" >"$svc"
	run --separate-stderr env -u PD_DATABASE_URL -u PGHOST -u PGPORT -u PGDATABASE \
		PGSERVICEFILE="$svc" PGSERVICE=pdtest pd-enqueue --no-stdin t '{"via": "service"}'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT payload->>'via' FROM pendulum.jobs WHERE id = $output")" = service ]
}
