#!/usr/bin/env bats
# Handlers get no credentials (issue 22, item 3): no database URL or
# password in a handler's environment nor in its worker's /proc files,
# secret_env:/pass_env:, --database-url-file, and pd-admin lease check
# answered through the worker without any credential.

load helpers
pd_db_hooks

# recognisable fake passwords: the test cluster trusts local connections,
# so the server never asks for them, but they must not leak
PW_ENV=FAKEPW_env_7q2
PW_FLAG=FAKEPW_flag_9x4
PW_PG=FAKEPW_pgpw_3k8

@test "a handler sees no password, in its environment or in its worker's /proc files" {
	out=$BATS_TEST_TMPDIR/dump
	id=$(pd-enqueue creds '{}')
	# shellcheck disable=SC2016 # expanded by the handler's shell
	start_bg w env PD_DATABASE_URL="$PD_DATABASE_URL password=$PW_ENV" PGPASSWORD="$PW_PG" \
		pd-worker --poll 100ms -d "$PD_DATABASE_URL password=$PW_FLAG" \
		--handler "creds=env >'$out.tmp'; cat /proc/\$PPID/environ /proc/\$PPID/cmdline | tr '\\0' '\\n' >>'$out.tmp'; mv '$out.tmp' '$out'"
	wait_for 20 test -s "$out"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	run grep -c "FAKEPW" "$out"
	[ "$output" = 0 ]
	run grep -c -e PD_DATABASE_URL -e PGPASSWORD "$out"
	[ "$output" = 0 ]
	# what the handler dumped is real: its own job id, and the worker's cmdline
	grep -qx "PD_JOB_ID=$id" "$out"
	grep -qx -- "--handler" "$out"
	# the worker's own files, read from outside
	pid=$(bg_pid w)
	run sh -c "tr '\\0' '\\n' </proc/$pid/cmdline; tr '\\0' '\\n' </proc/$pid/environ"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pd-worker"* ]]
	[[ "$output" != *FAKEPW* ]]
	[[ "$output" != *PD_DATABASE_URL* ]]
	[[ "$output" != *PGPASSWORD* ]]
	# and it said once that -d carried a password
	run grep -c "warning: the password given with -d" "$BATS_FILE_TMPDIR/w.log"
	[ "$output" = 1 ]
}

@test "pass_env: gives a handler what it names; secret_env: hides a variable unless passed" {
	d=$BATS_TEST_TMPDIR
	cat >"$d/cfg.yaml" <<-YAML
		secret_env: [MY_TOKEN]
		handlers:
		  passed:
		    run: env >'$d/passed'
		    pass_env: [PD_DATABASE_URL, MY_TOKEN]
		  plain:
		    run: env >'$d/plain'
	YAML
	pd-enqueue passed '{}' >/dev/null
	pd-enqueue plain '{}' >/dev/null
	MY_TOKEN=tok_5u1 OTHER_VAR=other_2 PGAPPNAME=creds_test \
		pd-worker -c "$d/cfg.yaml" --until-idle --poll 100ms 2>/dev/null
	grep -qx "PD_DATABASE_URL=$PD_DATABASE_URL" "$d/passed"
	grep -qx "MY_TOKEN=tok_5u1" "$d/passed"
	grep -qx "OTHER_VAR=other_2" "$d/plain"
	run grep -c -e "^MY_TOKEN=" -e "^PD_DATABASE_URL=" -e "^PG" "$d/plain"
	[ "$output" = 0 ]
	run grep -c "^PG" "$d/passed"
	[ "$output" = 0 ]
}

@test "a bad secret_env: or pass_env: entry is a config error naming file:line" {
	d=$BATS_TEST_TMPDIR
	printf 'handlers:\n  t:\n    run: "true"\n    pass_env: [OK_NAME, "2BAD"]\n' >"$d/bad.yaml"
	run --separate-stderr pd-worker -c "$d/bad.yaml" --until-idle
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"bad.yaml:4:"*"'2BAD' is not a variable name"* ]]
	printf 'secret_env: {a: 1}\n' >"$d/bad2.yaml"
	run --separate-stderr pd-worker -c "$d/bad2.yaml" --until-idle
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"bad2.yaml:1:"* ]]
}

@test "lease check in a handler without credentials answers through the worker: 0, then 1 once lost" {
	d=$BATS_TEST_TMPDIR
	id=$(pd-enqueue lc '{}')
	# No credential and a PGHOST that leads nowhere: a database path would
	# fail (69). TERM is ignored so that the worker's own discovery of the
	# lost lease (its heartbeat) cannot stop the handler before it asks.
	# shellcheck disable=SC2016 # expanded by the handler's shell
	start_worker w --poll 100ms --lease 2s --handler "lc=trap '' TERM; export PGHOST=/nonexistent;
		pd-admin lease check; echo \$? >'$d/first'
		while [ ! -e '$d/gate' ]; do sleep 0.02; done
		pd-admin lease check 2>'$d/err'; echo \$? >'$d/second'"
	wait_for 20 test -s "$d/first"
	[ "$(cat "$d/first")" = 0 ]
	sql "UPDATE pendulum.jobs SET lease_token = lease_token + 1000 WHERE id = $id"
	touch "$d/gate"
	wait_for 20 test -s "$d/second"
	[ "$(cat "$d/second")" = 1 ]
	grep -q "lease lost: job $id" "$d/err"
}

@test "a stream handler asks lease check through the worker too, for each job on its line" {
	d=$BATS_TEST_TMPDIR
	cat >"$d/sh" <<-'SH'
		#!/bin/sh
		# each job line: its id and lease token, asked about; then one lost on purpose
		export PGHOST=/nonexistent
		while IFS= read -r line; do
			id=$(printf '%s\n' "$line" | jq -r .id)
			tok=$(printf '%s\n' "$line" | jq -r .lease_token)
			PD_JOB_ID=$id PD_LEASE_TOKEN=$tok pd-admin lease check 2>/dev/null
			held=$?
			PD_JOB_ID=$id PD_LEASE_TOKEN=$((tok + 1000)) pd-admin lease check 2>/dev/null
			printf '{"id": %s, "result": {"held": %s, "other": %s}}\n' "$id" "$held" "$?"
		done
	SH
	chmod +x "$d/sh"
	id=$(pd-enqueue st '{}')
	env -u PGHOST pd-worker --until-idle --poll 100ms --stream-exec "st=$d/sh" 2>/dev/null
	sql_is "SELECT state || ' ' || result::text FROM pendulum.jobs WHERE id = $id" 'SUCCEEDED {"held": 0, "other": 1}'
}

@test "--database-url-file: pd-enqueue and pd-worker read the URL from a file" {
	d=$BATS_TEST_TMPDIR
	printf '%s\n' "$PD_DATABASE_URL" >"$d/url"
	id=$(env -u PD_DATABASE_URL pd-enqueue --database-url-file "$d/url" urlf '{}')
	env -u PD_DATABASE_URL pd-worker --database-url-file "$d/url" --until-idle --poll 100ms \
		--handler 'urlf=true' 2>/dev/null
	sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	run --separate-stderr env -u PD_DATABASE_URL pd-enqueue --database-url-file "$d/missing" urlf '{}'
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"--database-url-file '$d/missing': No such file or directory"* ]]
	: >"$d/empty"
	run --separate-stderr env -u PD_DATABASE_URL pd-worker --database-url-file "$d/empty" --handler 'urlf=true'
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"--database-url-file '$d/empty': the file is empty"* ]]
}

@test "-d with a password: a warning on stderr, once" {
	run --separate-stderr pd-enqueue -d "$PD_DATABASE_URL password=$PW_FLAG" pw '{}'
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"warning: the password given with -d"* ]]
	[ "$(printf '%s\n' "$stderr" | grep -c warning)" = 1 ]
	run --separate-stderr pd-enqueue -d "$PD_DATABASE_URL" pw '{}'
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}
