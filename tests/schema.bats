#!/usr/bin/env bats
# sql/schema.sql is the schema the migrations leave: a freshly migrated
# database dumped the way scripts/schema-snapshot dumps it is the checked-in
# file, line for line. When a migration changes the schema, regenerate the
# snapshot with `make schema` (scripts/schema-snapshot) and commit it.

load helpers
pd_db_hooks

# The normalized dump of this file's database.
dump_schema() {
	sh "$PD_ROOT/scripts/schema-snapshot" --dump
}

# compare SNAPSHOT: 0 when this database dumps to SNAPSHOT; else 1, with the
# diff (- snapshot, + database) and the command that regenerates it on stdout.
compare() {
	local got="$BATS_TEST_TMPDIR/dump.sql"
	dump_schema >"$got" || return 2
	[ -s "$got" ] || return 2
	if ! diff -u "$1" "$got"; then
		echo "sql/schema.sql is out of date with sql/[0-9]*.sql (above: - snapshot, + migrations)."
		echo "Regenerate it and commit the result: make schema   (or: sh scripts/schema-snapshot build/bin)"
		return 1
	fi
}

@test "sql/schema.sql is the schema a fresh migration leaves" {
	run compare "$PD_ROOT/sql/schema.sql"
	if [ "$status" -ne 0 ]; then
		printf '# %s\n' "${lines[@]}" >&3
	fi
	[ "$status" -eq 0 ]
}

@test "the snapshot is no migration: pd-admin migrate applies exactly sql/[0-9]*.sql" {
	local files applied
	files=$(find "$PD_ROOT/sql" -maxdepth 1 -name '[0-9]*.sql' | wc -l)
	applied=$(sql "SELECT count(*) FROM pendulum.schema_migrations")
	[ "$files" -ge 18 ]
	[ "$applied" = "$files" ]
	run pd-admin migrate --status
	[ "$status" -eq 0 ]
	[[ "$output" != *schema* ]]
}

@test "the comparison fails when a function changes without the snapshot" {
	local snap="$BATS_TEST_TMPDIR/snap.sql"
	sql "CREATE FUNCTION pendulum.snapshot_probe() RETURNS int LANGUAGE sql AS 'SELECT 1'"
	dump_schema >"$snap"
	run compare "$snap"
	[ "$status" -eq 0 ]
	sql "CREATE OR REPLACE FUNCTION pendulum.snapshot_probe() RETURNS int LANGUAGE sql AS 'SELECT 2'"
	run compare "$snap"
	sql "DROP FUNCTION pendulum.snapshot_probe()"
	[ "$status" -eq 1 ]
	[[ "$output" == *"-    AS \$\$SELECT 1\$\$;"* ]]
	[[ "$output" == *"+    AS \$\$SELECT 2\$\$;"* ]]
	[[ "$output" == *"make schema"* ]]
}
