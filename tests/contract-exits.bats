#!/usr/bin/env bats
# The exit codes of pd-cron(1) and pd-enqueue(1) that no other test held:
# 69 (the database cannot be reached) and 78 (a configuration error, a
# schema that needs pd-admin migrate) from pd-cron; 78 from pd-enqueue's
# configuration file. Each with its one-line message and nothing written.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers

# This file's database stays unmigrated (the schema test); dropped at the end.
setup_file() {
	pd_setup_db
}

teardown_file() {
	pd_teardown_db
}

setup() {
	D=$BATS_TEST_TMPDIR
	NOWHERE="host=$D/nowhere dbname=x"
}

@test "pd-cron exits 69 when the database cannot be reached, list and run --once alike" {
	run --separate-stderr pd-cron -d "$NOWHERE" list
	[ "$status" -eq 69 ]
	[[ "$stderr" == "pd-cron: cannot connect to the database ("*"): connection to server on socket \"$D/nowhere/.s.PGSQL.5432\" failed: No such file or directory" ]]
	run --separate-stderr pd-cron -d "$NOWHERE" run --once
	[ "$status" -eq 69 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "pd-cron exits 78 on a bad configuration file (an unknown key, a bad value, bad YAML), naming file, line and column" {
	printf 'cron:\n  bogus: 1\n' >"$D/unknown.yaml"
	printf 'worker: {lease: banana}\n' >"$D/value.yaml"
	printf 'a: [\n' >"$D/syntax.yaml"
	run --separate-stderr pd-cron -c "$D/unknown.yaml" -d "$NOWHERE" list
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-cron: $D/unknown.yaml:1:1: unknown key 'cron'" ]
	run --separate-stderr pd-cron -c "$D/value.yaml" -d "$NOWHERE" run --once
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-cron: $D/value.yaml:1:17: 'lease': invalid duration 'banana': expected a number with ms, s, m, h or d" ]
	run --separate-stderr pd-cron -c "$D/syntax.yaml" -d "$NOWHERE" list
	[ "$status" -eq 78 ]
	[[ "$stderr" == "pd-cron: $D/syntax.yaml:2:1: "* ]]
}

@test "pd-cron exits 78 on a database that needs pd-admin migrate, and writes nothing" {
	run --separate-stderr pd-cron list
	[ "$status" -eq 78 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pd-cron: the database schema is "*" migrations behind ("*"): run 'pd-admin migrate'" ]]
	run --separate-stderr pd-cron add nightly --cron '0 3 * * *' --tz UTC --type t
	[ "$status" -eq 78 ]
	[ "$(sql "SELECT count(*) FROM pg_namespace WHERE nspname = 'pendulum'")" -eq 0 ]
}

@test "pd-enqueue exits 78 on a bad configuration file, before it connects; no id printed" {
	printf 'worker: {lease: banana}\n' >"$D/value.yaml"
	printf 'nope: 1\n' >"$D/unknown.yaml"
	run --separate-stderr pd-enqueue -c "$D/value.yaml" -d "$NOWHERE" t '{}'
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-enqueue: $D/value.yaml:1:17: 'lease': invalid duration 'banana': expected a number with ms, s, m, h or d" ]
	# on a database that works, too: nothing enqueued
	run --separate-stderr pd-enqueue -c "$D/unknown.yaml" t '{}'
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-enqueue: $D/unknown.yaml:1:1: unknown key 'nope'" ]
	[ "$output" = "" ]
}
