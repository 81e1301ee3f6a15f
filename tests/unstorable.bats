#!/usr/bin/env bats
# A handler's outcome that PostgreSQL cannot store (a number out of numeric's
# range, a \u0000 escape, invalid UTF-8 in a JSON string, or anything else the
# database refuses) fails its own attempt with the reason; it never stops the
# worker nor loses the other outcomes of its round trip (DESIGN.md, Jobs).

# Handler scripts are single-quoted on purpose: they expand their own variables.
# shellcheck disable=SC2016

bats_require_minimum_version 1.5.0

load helpers
pd_db_hooks

teardown() {
	kill_all_bg
	sql "DROP TRIGGER IF EXISTS t_refuse ON pendulum.jobs"
	sql "DROP TRIGGER IF EXISTS t_rollback ON pendulum.jobs"
}

setup() {
	reset_jobs
	CFG=$BATS_TEST_TMPDIR/pd.yaml
	printf 'retry: {base: 10ms, cap: 50ms}\n' >"$CFG"
	H=$BATS_TEST_TMPDIR/h.sh
	T_DIR=$BATS_TEST_TMPDIR
	export T_DIR
}

# handler FILE: write a handler script from stdin to FILE, executable.
handler() {
	cat >"$1"
	chmod +x "$1"
}

# enqueue_mix KIND...: $GOOD (default 50) jobs of type t whose payload is
# {"kind": "good"}, with one job of each KIND among them (every 13th line, or
# every 5th for fewer than 13), max_attempts 1.
enqueue_mix() {
	local kinds="$*" good=${GOOD:-50}
	awk -v kinds="$kinds" -v good="$good" 'BEGIN { n = split(kinds, k, " "); b = 1
		every = good < 13 ? 5 : 13
		for (i = 1; i <= good + n; i++) {
			kind = (i % every == 0 && b <= n) ? k[b++] : "good"
			printf "{\"type\": \"t\", \"max_attempts\": 1, \"payload\": {\"kind\": \"%s\"}}\n", kind } }' |
		pd-enqueue --ndjson >"$BATS_TEST_TMPDIR/ids"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/ids")" -eq $((good + $#)) ]
}

# test_files PREFIX N: there are N files $T_DIR/PREFIX.*.
test_files() {
	[ "$(find "$T_DIR" -name "$1.*" | wc -l)" -eq "$2" ]
}

# kind_id KIND: the id of the job of that kind.
kind_id() {
	sql "SELECT id FROM pendulum.jobs WHERE payload->>'kind' = '$1'"
}

# all_final: every job has ended.
all_final() {
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE state NOT IN ('SUCCEEDED', 'DEAD_LETTERED')" 0
}

# failed_with KIND ERROR: the job of that kind failed once with last_error
# ERROR, no result, its attempt recorded as failed.
failed_with() {
	local id
	id=$(kind_id "$1")
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || dead_reason || ' / ' || last_error
	          FROM pendulum.jobs WHERE id = $id")" = "DEAD_LETTERED 1 attempts exhausted / $2" ]
	[ "$(sql "SELECT result IS NULL FROM pendulum.jobs WHERE id = $id")" = t ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $id")" = failed ]
}

# still_serving: the worker w runs, and runs a job enqueued now.
still_serving() {
	alive "$(bg_pid w)"
	id=$(pd-enqueue t '{"kind": "good"}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	alive "$(bg_pid w)"
	run ! grep -q 'database error' "$BATS_FILE_TMPDIR/w.log"
}

NUM_ERR='result cannot be stored: number out of range (PostgreSQL numeric cannot store it) at line 1, column 6'
NUL_ERR='result cannot be stored: \u0000 (NUL) is not allowed (PostgreSQL jsonb cannot store it) at line 1, column 8'
UTF8_ERR='result cannot be stored: invalid UTF-8 at line 1, column 7'

@test "a handler printing JSON jsonb cannot store: that attempt fails with the reason, the other 50 succeed, the worker serves on" {
	handler "$H" <<'EOF'
#!/bin/sh
case $(jq -r .kind) in
num) echo '{"n":1e999999}' ;;
nul) printf '{"s":"a\\u0000b"}\n'; printf 'x\000y\377z\n' >&2 ;;
utf8) printf '{"s":"\377"}\n' ;;
*) echo '{"ok":true}' ;;
esac
EOF
	enqueue_mix num nul utf8
	start_worker w -c "$CFG" -j 8 --poll 200ms --handler "t=$H"
	wait_for 60 all_final
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED' AND result = '{\"ok\": true}'")" -eq 50 ]
	failed_with num "$NUM_ERR"
	failed_with nul "$NUL_ERR"
	failed_with utf8 "$UTF8_ERR"
	# stderr with a NUL and invalid UTF-8 is kept (as valid text) with the attempt
	[ "$(sql "SELECT stderr_tail IS NOT NULL FROM pendulum.job_attempts WHERE job_id = $(kind_id nul)")" = t ]
	wait_for 10 grep -q "job=$(kind_id num) attempt=1 outcome=failed state=DEAD_LETTERED error=\"result cannot be stored: number out of range" "$BATS_FILE_TMPDIR/w.log"
	still_serving
}

@test "a stream handler answering a job with a result jsonb cannot store: that job fails with the reason, not the line nor the others" {
	handler "$H" <<'EOF'
#!/bin/sh
while IFS= read -r job; do
	set -- $(printf '%s\n' "$job" | jq -r '"\(.id) \(.payload.kind)"')
	case $2 in
	num) printf '{"id":%s,"result":{"n":1e999999}}\n' "$1" ;;
	nul) printf '{"id":%s,"result":{"s":"a\\u0000b"},"x":"\\u0000"}\n' "$1" ;;
	utf8) printf '{"id":%s,"result":{"s":"\377"}}\n' "$1" ;;
	*) printf '{"id":%s,"result":{"ok":true}}\n' "$1" ;;
	esac
done
EOF
	enqueue_mix num nul utf8
	start_worker w -c "$CFG" -j 8 --poll 200ms --stream-exec "t=$H"
	wait_for 60 all_final
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED' AND result = '{\"ok\": true}'")" -eq 50 ]
	failed_with num "$NUM_ERR"
	failed_with nul "$NUL_ERR"
	failed_with utf8 "$UTF8_ERR"
	# the lines were answers, not protocol errors: one process served them all
	[ "$(grep -c 'stream handler started' "$BATS_FILE_TMPDIR/w.log")" -eq 1 ]
	run ! grep -q 'bad line' "$BATS_FILE_TMPDIR/w.log"
	still_serving
}

@test "an outcome the database refuses all the same (a trigger raising a data exception): the round trip's outcomes go again one at a time, that one is written as a failure with the database's reason, the others succeed" {
	# What validation cannot know: the database refuses this result for its own reasons.
	sql "CREATE OR REPLACE FUNCTION public.t_refuse() RETURNS trigger LANGUAGE plpgsql AS \$\$
	     BEGIN RAISE EXCEPTION 'refused by the test trigger' USING ERRCODE = '22023'; END \$\$;
	     CREATE TRIGGER t_refuse BEFORE UPDATE ON pendulum.jobs FOR EACH ROW
	     WHEN (NEW.result @> '{\"refuse\": true}') EXECUTE FUNCTION public.t_refuse()"
	# every handler waits for the gate, so that their outcomes go in one round trip
	handler "$H" <<'EOF'
#!/bin/sh
kind=$(jq -r .kind)
touch "$T_DIR/started.$PD_JOB_ID"
while [ ! -e "$T_DIR/gate" ]; do sleep 0.05; done
case $kind in
refuse) echo '{"refuse":true}' ;;
*) echo '{"ok":true}' ;;
esac
touch "$T_DIR/finished.$PD_JOB_ID"
EOF
	GOOD=15 enqueue_mix refuse
	start_worker w -c "$CFG" -j 16 --poll 200ms --handler "t=$H"
	wait_for 30 test_files started 16
	kill -STOP "$(bg_pid w)"
	touch "$T_DIR/gate"
	wait_for 30 test_files finished 16
	kill -CONT "$(bg_pid w)"
	wait_for 60 all_final
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED' AND result = '{\"ok\": true}'")" -eq 15 ]
	failed_with refuse 'outcome cannot be stored: refused by the test trigger'
	wait_for 10 grep -q 'the database refused a batch: its outcomes go again one at a time" outcomes=[0-9]* sqlstate=22023 error="refused by the test trigger"' "$BATS_FILE_TMPDIR/w.log"
	wait_for 10 grep -q "the database refused a job's outcome: written as a failure\" job=$(kind_id refuse) attempt=1 sqlstate=22023" "$BATS_FILE_TMPDIR/w.log"
	still_serving
}

@test "a round trip the database rolls back (a deadlock) is sent again after a reconnect: the worker stays, the job succeeds once" {
	# The first finish of the job raises 40P01, as a deadlock between two
	# workers' statements would; a sequence is not rolled back with it.
	sql "CREATE SEQUENCE IF NOT EXISTS public.t_rollback_n;
	     CREATE OR REPLACE FUNCTION public.t_rollback() RETURNS trigger LANGUAGE plpgsql AS \$\$
	     BEGIN IF nextval('public.t_rollback_n') = 1 THEN
	       RAISE EXCEPTION 'rolled back by the test trigger' USING ERRCODE = '40P01'; END IF;
	     RETURN NEW; END \$\$;
	     CREATE TRIGGER t_rollback BEFORE UPDATE ON pendulum.jobs FOR EACH ROW
	     WHEN (NEW.state = 'SUCCEEDED') EXECUTE FUNCTION public.t_rollback()"
	handler "$H" <<'EOF'
#!/bin/sh
echo '{"ok":true}'
EOF
	id=$(pd-enqueue t '{"kind": "first"}')
	start_worker w -c "$CFG" -j 2 --poll 200ms --handler "t=$H"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	grep -q 'transaction rolled back by the database, will retry" retry_ms=[0-9]* sqlstate=40P01' "$BATS_FILE_TMPDIR/w.log"
	# the outcome went again: one attempt, one success
	[ "$(sql "SELECT attempt FROM pendulum.jobs WHERE id = $id")" = 1 ]
	# and serves on (the rollback is logged, so still_serving's grep does not apply)
	alive "$(bg_pid w)"
	id=$(pd-enqueue t '{"kind": "good"}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	alive "$(bg_pid w)"
}

@test "a workflow step printing JSON jsonb cannot store: its job fails with the reason, no step output is written" {
	cat >"$CFG" <<'EOF'
retry: {base: 10ms, cap: 50ms}
workflows:
  big:
    steps:
      - name: a
        run: 'echo "{\"n\": 1e999999}"'
      - name: b
        run: 'echo "{\"ok\": true}"'
EOF
	run_id=$(sql "SELECT pendulum.start_workflow('default', 'big', 'null'::jsonb, max_attempts => 1)")
	job=$(sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $run_id")
	start_worker w -c "$CFG" -j 2 --poll 200ms --handler "t=echo '{\"ok\":true}'"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" DEAD_LETTERED
	[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $job")" = \
		'result cannot be stored: number out of range (PostgreSQL numeric cannot store it) at line 1, column 7' ]
	[ "$(sql "SELECT count(*) FROM pendulum.workflow_steps WHERE run_id = $run_id")" -eq 0 ]
	still_serving
}
