#!/usr/bin/env bats
# Handlers without credentials (DESIGN, the handler contract): a handler's
# environment is the worker's minus PD_DATABASE_URL, PD_LISTEN_URL and every
# PG* variable, for each kind of handler the worker starts: a process
# handler, a stream handler and a workflow step; and pd-relay's publish
# command (pd-relay(1)). creds.bats holds the
# password side (none in the environment nor in the worker's /proc files)
# for a process handler; here every connection variable, by name and by
# value (the cluster's socket directory, found in no variable at all).

load helpers
pd_db_hooks

setup() {
	reset_jobs
	D=$BATS_TEST_TMPDIR
	cat >"$D/st" <<EOF
#!/bin/sh
env >'$D/stream.tmp'
mv '$D/stream.tmp' '$D/stream.env'
while IFS= read -r job; do
	id=\${job#*\\"id\\":}
	printf '{"id":%s}\n' "\${id%%[!0-9]*}"
done
EOF
	chmod +x "$D/st"
	cat >"$D/pendulum.yaml" <<EOF
handlers:
  p:
    run: 'env >$D/process.env'
workflows:
  f:
    steps:
      - name: s
        run: 'env >$D/step.env; echo "{}"'
EOF
}

# no_credentials KIND: $D/KIND.env, a handler's environment, holds no
# connection variable and no value of one, and does hold what it should.
no_credentials() {
	local f=$D/$1.env
	[ -s "$f" ]
	run grep -c -e '^PG' -e '^PD_DATABASE_URL=' -e '^PD_LISTEN_URL=' "$f"
	[ "$output" = 0 ] || { cat "$f" >&2; false; }
	run grep -c -F -e "$PD_PG_DIR" -e FAKEPW -e leak_ "$f"
	[ "$output" = 0 ] || { cat "$f" >&2; false; }
	# the rest of the worker's environment is there
	grep -qx 'KEEP_ME=kept' "$f"
	grep -q '^PATH=' "$f"
}

@test "a process handler, a stream handler and a workflow step get no PD_DATABASE_URL, PD_LISTEN_URL or PG* variable" {
	pd-enqueue p '{}' >/dev/null
	pd-enqueue st '{}' >/dev/null
	sql "SELECT pendulum.start_workflow('default', 'f', 'null'::jsonb)" >/dev/null
	# the worker's own connection comes from PD_DATABASE_URL, whose host and
	# port override the decoys in PGHOST and PGPORT. PD_PG_URL and PD_PG_DIR
	# are this suite's own names, no credential of Pendulum's: left out.
	run --separate-stderr env -u PD_PG_URL -u PD_PG_DIR PD_DATABASE_URL="$PD_DATABASE_URL" PD_LISTEN_URL="$PD_DATABASE_URL" \
		PGHOST=/nonexistent/leak_host PGPORT=1 PGUSER=leak_user PGDATABASE=leak_db \
		PGPASSWORD=FAKEPW_pg PGPASSFILE=/nonexistent/leak_pgpass KEEP_ME=kept \
		timeout 120 pd-worker -c "$D/pendulum.yaml" --stream-exec "st=$D/st" --poll 100ms \
		--until-idle
	[ "$status" -eq 0 ]
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 3
	no_credentials process
	no_credentials stream
	no_credentials step
	grep -q '^PD_JOB_TYPE=p$' "$D/process.env"
	grep -q '^PD_STEP_NAME=s$' "$D/step.env"
}

@test "pd-relay's publish command gets no PD_DATABASE_URL, PD_LISTEN_URL or PG* variable" {
	reset_outbox
	mid=$(record orders '{"n": 1}')
	run --separate-stderr env -u PD_PG_URL -u PD_PG_DIR PD_DATABASE_URL="$PD_DATABASE_URL" \
		PD_LISTEN_URL="$PD_DATABASE_URL" PGHOST=/nonexistent/leak_host PGPORT=1 \
		PGUSER=leak_user PGDATABASE=leak_db PGPASSWORD=FAKEPW_pg \
		PGPASSFILE=/nonexistent/leak_pgpass KEEP_ME=kept \
		timeout 120 pd-relay --once --publish "env >'$D/publish.env'"
	[ "$status" -eq 0 ]
	[ "$(outbox_state "$mid")" = PUBLISHED ]
	no_credentials publish
	grep -q "^PD_MESSAGE_ID=$mid\$" "$D/publish.env"
}
