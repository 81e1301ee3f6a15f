# shellcheck shell=bash
# Shared by every bats file: where the binaries are, a fresh database per
# file on the throwaway PostgreSQL (started here if scripts/check did not),
# and bounded waits on conditions.

bats_require_minimum_version 1.5.0

PD_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
PD_BIN=${PD_BIN:-$PD_ROOT/build/bin}
PD_TEST_TOOL=${PD_TEST_TOOL:-$PD_ROOT/build/tests/pd-test-tool}
export PATH="$PD_BIN:$PATH"

# Start (if needed) the cluster and create this file's own database.
pd_setup_db() {
	if [ -z "${PD_PG_DIR:-}" ]; then
		PD_PG_URL=$(sh "$PD_ROOT/scripts/pg" start)
		PD_PG_DIR=$(printf '%s\n' "$PD_PG_URL" | sed -n 's/^host=\([^ ]*\) .*/\1/p')
		PD_PG_OWNED=1
		export PD_PG_OWNED
	fi
	export PD_PG_DIR PD_PG_URL
	PD_DB_NAME="t_$(basename "$BATS_TEST_FILENAME" .bats | tr -c 'a-z0-9_\n' '_')_$$"
	export PD_DB_NAME
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $PD_DB_NAME" -c "CREATE DATABASE $PD_DB_NAME"
	PD_DATABASE_URL=$(printf '%s\n' "$PD_PG_URL" | sed "s/dbname=[^ ]*/dbname=$PD_DB_NAME/")
	export PD_DATABASE_URL
}

pd_teardown_db() {
	if [ -n "${PD_DB_NAME:-}" ]; then
		psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $PD_DB_NAME WITH (FORCE)" || true
	fi
	if [ -n "${PD_PG_OWNED:-}" ]; then
		sh "$PD_ROOT/scripts/pg" stop "$PD_PG_DIR"
	fi
}

# Query the test database; prints unaligned, tuples only.
sql() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" -c "$1"
}

# wait_for SECONDS COMMAND...: run COMMAND every 50 ms until it succeeds; fail
# (return 1, printing what was waited for) if it has not within SECONDS.
wait_for() {
	local limit=$1
	shift
	local deadline=$((SECONDS + limit))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "timed out after ${limit}s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# sql_is QUERY EXPECTED: succeed when the query prints exactly EXPECTED.
sql_is() {
	[ "$(sql "$1")" = "$2" ]
}
