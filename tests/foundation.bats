#!/usr/bin/env bats
# The skeleton: every binary's --help/--version/bad options, migrations, and
# the error contract for an unreachable database and a bad config file.

load helpers

setup_file() {
	pd_setup_db
}

teardown_file() {
	kill_all_bg
	pd_teardown_db
}

teardown() {
	kill_all_bg
}

PROGS="pd-enqueue pd-worker pd-reaper pd-cron pd-relay pd-admin"

@test "every binary answers --help on stdout with exit 0" {
	for p in $PROGS; do
		run --separate-stderr "$p" --help
		[ "$status" -eq 0 ] || { echo "$p --help: status $status"; return 1; }
		[[ "$output" == *"usage: $p"* ]] || { echo "$p --help: $output"; return 1; }
		[ -z "$stderr" ]
		# --help fits on a screen
		[ "$(printf '%s\n' "$output" | wc -l)" -le 50 ] || { echo "$p --help too long"; return 1; }
	done
}

@test "every binary answers --version" {
	for p in $PROGS; do
		run --separate-stderr "$p" --version
		[ "$status" -eq 0 ]
		[ "$output" = "$p (Pendulum) $(cat "$PD_ROOT/VERSION")" ]
	done
}

@test "an unknown flag exits 64 naming the flag, with usage" {
	for p in $PROGS; do
		run --separate-stderr "$p" --no-such-flag
		[ "$status" -eq 64 ] || { echo "$p: status $status"; return 1; }
		[ -z "$output" ]
		[[ "$stderr" == *"$p: unknown option '--no-such-flag'"* ]] || { echo "$stderr"; return 1; }
		[[ "$stderr" == *"usage: $p"* ]]
		[[ "$stderr" == *"Try '$p --help'"* ]]
	done
}

@test "a missing option value exits 64 and names the option" {
	run --separate-stderr pd-admin migrate -c
	[ "$status" -eq 64 ]
	run --separate-stderr pd-admin --config
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option '--config' needs a value"* ]]
}

@test "pd-admin: unknown command exits 64" {
	run --separate-stderr pd-admin frobnicate
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unknown command 'frobnicate'"* ]]
}

@test "migrate on an empty database creates the schema; a second run applies nothing" {
	sql "DROP SCHEMA IF EXISTS pendulum CASCADE"
	run --separate-stderr pd-admin migrate
	[ "$status" -eq 0 ]
	[[ "$output" == "applied "*" migration"*"; schema at version "* ]]
	[ "$(sql "SELECT count(*) > 0 FROM pendulum.schema_migrations")" = t ]
	before=$(sql "SELECT string_agg(version || '@' || applied_at, ',' ORDER BY version) FROM pendulum.schema_migrations")
	run --separate-stderr pd-admin migrate
	[ "$status" -eq 0 ]
	[[ "$output" == "schema up to date at version "*"; nothing applied" ]]
	after=$(sql "SELECT string_agg(version || '@' || applied_at, ',' ORDER BY version) FROM pendulum.schema_migrations")
	[ "$before" = "$after" ]
}

@test "migrate --status lists every migration as applied, and --json parses" {
	pd-admin migrate >/dev/null
	run --separate-stderr pd-admin migrate --status
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == VERSION*NAME*STATE*APPLIED_AT ]]
	[[ "${lines[1]}" == "1 "*"001_init"*applied* ]]
	run --separate-stderr pd-admin --json migrate --status
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -s -e 'map(select(.version == 1))[0] | .state == "applied" and .name == "001_init"'
	[ "$(printf '%s\n' "$output" | jq -s 'map(select(.state != "applied")) | length')" = 0 ]
}

@test "migrate --status on an empty database shows everything pending" {
	sql "DROP SCHEMA IF EXISTS pendulum CASCADE"
	run --separate-stderr pd-admin --json migrate --status
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | jq -s 'map(select(.state == "pending")) | length')" = \
		"$(find "$PD_ROOT/sql" -name '[0-9]*.sql' | wc -l)" ]
	pd-admin migrate >/dev/null
}

@test "two migrators started at the same instant both succeed and apply once" {
	sql "DROP SCHEMA IF EXISTS pendulum CASCADE"
	start_bg migrate-a pd-admin migrate
	start_bg migrate-b pd-admin migrate
	wait_bg migrate-a
	wait_bg migrate-b
	# exactly one of them applied the migrations
	[ "$(cd "$BATS_FILE_TMPDIR" && cat migrate-a.out migrate-a.log migrate-b.out migrate-b.log | grep -c '^applied')" -eq 1 ]
	[ "$(cd "$BATS_FILE_TMPDIR" && cat migrate-a.out migrate-a.log migrate-b.out migrate-b.log | grep -c 'nothing applied')" -eq 1 ]
	[ "$(sql "SELECT count(*) = count(DISTINCT version) FROM pendulum.schema_migrations")" = t ]
	[ "$(sql "SELECT count(*) FROM pendulum.schema_migrations")" -eq "$(find "$PD_ROOT/sql" -name '[0-9]*.sql' | wc -l)" ]
}

@test "an unreachable database: exit 69, one error line naming the host, no password" {
	run --separate-stderr pd-admin -d "host=127.0.0.1 port=1 dbname=x user=u password=sekrit-pw connect_timeout=2" migrate
	[ "$status" -eq 69 ]
	# the warning that -d carries a password (tests/creds.bats), then the one error line
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 2 ]
	[[ "$(printf '%s\n' "$stderr" | sed -n 1p)" == "pd-admin: warning: the password given with -d"* ]]
	[[ "$(printf '%s\n' "$stderr" | sed -n 2p)" == "pd-admin: cannot connect to the database"*"127.0.0.1"* ]]
	[[ "$stderr" != *sekrit-pw* ]]
}

@test "an unreachable database through a URI with a password: the password is not shown" {
	run --separate-stderr env PD_DATABASE_URL="postgresql://u:sekrit-pw@127.0.0.1:1/x?connect_timeout=2" pd-admin migrate
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"127.0.0.1"* ]]
	[[ "$stderr" != *sekrit-pw* ]]
}

@test "an unreachable socket: exit 69 naming the socket" {
	run --separate-stderr pd-admin -d "host=/nonexistent-dir port=5999 dbname=x" migrate
	[ "$status" -eq 69 ]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	[[ "$stderr" == *"/nonexistent-dir"* ]]
}

@test "a config file with an unknown key: exit 78 naming file:line:column" {
	cfg="$BATS_TEST_TMPDIR/pd.yaml"
	printf 'worker:\n  concurrency: 2\n  retires: 3\n' >"$cfg"
	run --separate-stderr pd-admin -c "$cfg" migrate
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"$cfg:3:3: unknown key 'retires'"* ]]
	run --separate-stderr env PD_CONFIG="$cfg" pd-admin migrate
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"$cfg:3:3: unknown key 'retires'"* ]]
}

@test "a missing config file named with -c: exit 78" {
	run --separate-stderr pd-admin -c "$BATS_TEST_TMPDIR/nope.yaml" migrate
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"nope.yaml"* ]]
}

@test "the database URL comes from the config file, and -d overrides it" {
	cfg="$BATS_TEST_TMPDIR/pd.yaml"
	printf 'database_url: "%s"\n' "$PD_DATABASE_URL" >"$cfg"
	run --separate-stderr env -u PD_DATABASE_URL pd-admin -c "$cfg" migrate
	[ "$status" -eq 0 ]
	run --separate-stderr env -u PD_DATABASE_URL pd-admin -c "$cfg" -d "host=/nonexistent-dir dbname=x" migrate
	[ "$status" -eq 69 ]
	[[ "$stderr" == "pd-admin: cannot connect to the database (dbname=x host=/nonexistent-dir): "* ]]
}

@test "--help and the man page list the same options" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	for p in $PROGS; do
		page="$PD_ROOT/man/$p.1"
		[ -f "$page" ] || { echo "no man page for $p"; return 1; }
		help_opts=$("$p" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u)
		man_opts=$(mandoc -T ascii "$page" | col -b | grep -oE -- '--[a-z][a-z-]+' | sort -u)
		missing=$(comm -23 <(echo "$help_opts") <(echo "$man_opts"))
		[ -z "$missing" ] || { echo "$p: in --help but not in the man page: $missing"; return 1; }
	done
}
