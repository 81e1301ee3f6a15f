#!/usr/bin/env bats
# The bad-input catalogue (issue 22, item 6): every program and subcommand
# through its bad inputs, one row a case. A row is
#
#   row NAME CODE SUBSTRING STDIN PROGRAM ARGS...
#
# and holds when PROGRAM ARGS (stdin STDIN, empty: /dev/null, @FILE: FILE; at most 5 s,
# so a daemon that wrongly starts fails its row) exits CODE, its standard
# error is ONE message line (for 64 the usage block may follow it:
# "usage: ..." with its indented lines, then "Try '... --help' ...") that
# contains SUBSTRING, and no row of any pendulum table changed (a checksum
# of every base table, compared with the one taken after the fixtures).
# Each @test walks the rows of one program (of one pd-admin group) and
# fails naming every row that did not hold; the last @test fails when
# `pd-admin --help` or `pd-cron --help` lists a command no row runs.
# Exit codes from pendulum(7) and each program's EXIT STATUS.

load helpers
pd_db_hooks

# One test's rows at most 5 s each; the whole file well under a minute.
BATS_TEST_TIMEOUT=120

HUGE=99999999999999999999
LONG_NAME=$(printf 'n%.0s' {1..201})

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	T=$BATS_FILE_TMPDIR
	# A database that is down: a port nothing listens on, a socket directory that does not exist.
	DOWN="host=127.0.0.1 port=1 dbname=pendulum user=nobody connect_timeout=2"
	DOWN_SOCK="host=$T/no-such-dir dbname=pendulum connect_timeout=2"
	CFG=$T/pd.yaml
	cat >"$CFG" <<-'EOF'
		workflows:
		  wf:
		    steps:
		      - name: a
		        run: cat
		      - name: b
		        wait_for: go
	EOF
	printf 'bogus_key: 1\n' >"$T/unknown-key.yaml"
	printf 'worker:\n  lease: soon\n' >"$T/bad-lease.yaml"
	printf 'worker:\n  concurrency: %s\n' "$HUGE" >"$T/huge-concurrency.yaml"
	printf 'handlers:\n  t:\n    run: cat\n    timeout: 99999999d\n' >"$T/huge-timeout.yaml"
	printf 'handlers:\n  t:\n    run: cat\n    bogus: 1\n' >"$T/handler-key.yaml"
	printf 'handlers:\n  "a\\x01b":\n    run: cat\n' >"$T/handler-ctl.yaml"
	printf 'reaper:\n  interval: -5s\n' >"$T/reaper-neg.yaml"
	printf 'relay:\n  visibility: forever\n' >"$T/relay-bad.yaml"
	printf 'relay:\n  topics:\n    x:\n      run: cat\n      bogus: 1\n' >"$T/relay-key.yaml"
	printf 'retention:\n  succeeded: maybe\n' >"$T/retention-bad.yaml"
	printf 'workflows:\n  w:\n    steps:\n      - name: a\n        sleep: 99999999999d\n' >"$T/wf-huge-sleep.yaml"
	printf 'handlers:\n  t:\n    run: cat\n    concurrency_key: "queue:q"\n' >"$T/handler-reserved-key.yaml"
	printf 'workflows:\n  w:\n    steps:\n      - name: a\n        run: cat\n        concurrency_key: ""\n' >"$T/wf-empty-key.yaml"
	printf '# pd: name=x key=type:t\n0 * * * * echo hi\n' >"$T/crontab-reserved-key"
	printf 'crontab: jobs.cron\n' >"$T/crontab-relative.yaml"
	printf '# pd: name=sched\n0 * * * * echo hi\n' >"$T/crontab-owned"
	printf 'key: [unclosed\n' >"$T/syntax.yaml"
	printf '{"a": "x\0y"}' >"$T/nul.json"
	printf '{"type": "t"}\n{"type": "t", "payload": {"a": "x\0y"}}\n' >"$T/nul.ndjson"
	printf '\xff\xfe: 1\n' >"$T/not-utf8.yaml"
	sched_file sched-ok.yaml 'cron: "0 * * * *"'
	sched_file sched-bad-cron.yaml 'cron: "61 * * * *"'
	sched_file sched-huge-jitter.yaml 'cron: "0 * * * *"' 'jitter: 99999999999d'
	sched_file sched-key.yaml 'cron: "0 * * * *"' 'bogus: 1'
	sched_file sched-attempts.yaml 'cron: "0 * * * *"' "max_attempts: $HUGE"
	sched_file sched-reserved-key.yaml 'cron: "0 * * * *"' 'concurrency_key: "tenant:a"'
	sed 's|UTC|Mars/Olympus|' "$T/sched-ok.yaml" >"$T/sched-zone.yaml"
	sed 's|name: s|name: "s\\nx"|' "$T/sched-ok.yaml" >"$T/sched-name.yaml"
	printf '0 * * * * echo hi\n61 * * * * echo bad\n' >"$T/crontab-bad"
	printf 'CRON_TZ=Mars/Olympus\n0 * * * * echo hi\n' >"$T/crontab-zone"
	printf '# pd: workflow=\n0 * * * * -\n' >"$T/crontab-flow-empty"
	printf '# pd: workflow=a/b\n0 * * * * -\n' >"$T/crontab-flow-name"
	printf '# pd: workflow=wf\n0 * * * * echo hi\n' >"$T/crontab-flow-command"
	printf '# pd: workflow=wf\n0 * * * * -\n' >"$T/crontab-ok-flow"
	sed 's|type: t|type: "workflow:wf"|' "$T/sched-ok.yaml" >"$T/sched-flow-timeout.yaml"
	printf '    timeout: 1m\n' >>"$T/sched-flow-timeout.yaml"
	printf 'handlers:\n  t: {run: cat}\nhooks:\n  on_dead: {run: cat}\n' >"$T/hooks-key.yaml"
	printf 'handlers:\n  t:\n    run: cat\n    hooks: {on_failure: {run: cat, bogus: 1}}\n' >"$T/hook-key.yaml"
	printf 'handlers:\n  pd:hook: {run: cat}\n' >"$T/hook-handler.yaml"

	# Rows of every kind for the checksum to guard and the commands to miss.
	pd-enqueue t '{"fixture": 1}' >"$T/job.id"
	sql "INSERT INTO pendulum.jobs (state, queue, job_type, tenant_id, attempt, finished_at,
	       dead_reason, last_error)
	     VALUES ('DEAD_LETTERED', 'default', 't', 'default', 1, now(), 'terminal exit code', 'exit 65')
	     RETURNING id" >"$T/dead.id"
	pd-enqueue -c "$CFG" --workflow wf '{"in": 1}' >"$T/run.id"
	sql "SELECT pendulum.outbox_record('default', 'topic', '{\"m\": 1}', 'key')" >/dev/null
	pd-cron add sched --cron '0 * * * *' --tz UTC --type t >/dev/null
	export T DOWN DOWN_SOCK CFG
	# The checksum of every pendulum base table: a count and an md5 of the rows of each.
	sql "SELECT 'SELECT md5(string_agg(x, '' '')) || '' '' || string_agg(split_part(x, '':'', 1) || ''='' || split_part(x, '':'', 2), '' '') FROM ('
	     || string_agg(format('SELECT %L || '':'' || count(*) || '':'' || coalesce(md5(string_agg(t::text, '','' ORDER BY t::text)), '''') FROM pendulum.%I t',
	                          table_name, table_name), ' UNION ALL ' ORDER BY table_name)
	     || ') AS s(x)'
	     FROM information_schema.tables
	     WHERE table_schema = 'pendulum' AND table_type = 'BASE TABLE'" >"$T/checksum.sql"
	sql "$(cat "$T/checksum.sql")" >"$T/base.sum"
}

# sched_file NAME FIELD...: a schedules file of one schedule 's' (UTC, type t) with FIELDs.
sched_file() {
	local f=$T/$1
	shift
	printf 'schedules:\n  - name: s\n    timezone: UTC\n    type: t\n' >"$f"
	printf '    %s\n' "$@" >>"$f"
}

# checksum: set SUM to one line that changes when any row of any pendulum
# base table does, through the psql session rows_begin opened (one psql a
# row would be slow). No subshell: the coprocess (psql_coproc) is this shell's.
checksum() {
	local line
	SUM=""
	printf '%s;\n\\echo --end--\n' "$CHECKSUM_SQL" >&"${PSQL[1]}"
	while IFS= read -r -t 30 line <&"${PSQL[0]}"; do
		[ "$line" = --end-- ] && return 0
		SUM+=$line
	done
	SUM="no answer from psql: $SUM"
}

# rows_begin: a test's rows start; rows_end: fail naming every row that did not hold.
rows_begin() {
	: >"$T/failed"
	CHECKSUM_SQL=$(<"$T/checksum.sql")
	BASE_SUM=$(<"$T/base.sum")
	psql_coproc "$PD_DATABASE_URL"
}

rows_end() {
	local pid=$PSQL_PID fd=${PSQL[1]}
	exec {fd}>&- # psql ends at end of file
	wait "$pid" || true
	printf '%s\n' "$BASE_SUM" >"$T/base.sum"
	if [ -s "$T/failed" ]; then
		cat "$T/failed" >&2
		return 1
	fi
}

# usage_block LINE...: the lines are a usage block (after the message line
# of a 64): "usage: ...", lines indented, "Try '... --help' for more information.".
usage_block() {
	local l
	[[ $# -ge 2 && $1 == "usage: "* && ${!#} == "Try '"*" --help' for more information." ]] || return 1
	for l in "${@:2:$#-2}"; do
		[[ $l == " "* ]] || return 1
	done
}

# row NAME CODE SUBSTRING STDIN PROGRAM ARGS...: see the top of the file.
row() {
	local name=$1 code=$2 want=$3 input=$4 in=/dev/null rc=0 why="" err
	shift 4
	if [[ $input == @* ]]; then
		in=${input#@}
	elif [ -n "$input" ]; then
		in=$T/in
		printf '%s' "$input" >"$in"
	fi
	timeout -k 1 5 "$@" <"$in" >"$T/out" 2>"$T/err" || rc=$?
	mapfile -t err <"$T/err"
	if [ "$rc" -ne "$code" ]; then
		why="exit $rc, want $code"
	elif [ "${#err[@]}" -lt 1 ]; then
		why="no message on stderr"
	elif [ "$code" -eq 64 ] && [ "${#err[@]}" -gt 1 ] && ! usage_block "${err[@]:1}"; then
		why="more than the message and the usage block on stderr"
	elif [ "$code" -ne 64 ] && [ "${#err[@]}" -ne 1 ]; then
		why="${#err[@]} lines on stderr, want 1"
	elif [[ ${err[0]} != *"$want"* ]]; then
		why="the message does not name '$want'"
	fi
	checksum
	if [ "$SUM" != "$BASE_SUM" ]; then
		why="${why:+$why; }rows changed: $SUM"
		BASE_SUM=$SUM # one culprit, not every row after it
	fi
	if [ -n "$why" ]; then
		{
			printf '# row %s: %s\n#   %s\n' "$name" "$why" "$(printf '%q ' "$@")"
			printf '#   stderr: %s\n' "${err[@]}"
		} >>"$T/failed"
	fi
	return 0
}

@test "pd-enqueue: bad inputs" {
	rows_begin
	local deep
	deep=$(printf '[%.0s' {1..100000})
	row unknown-flag 64 "--bogus" "" pd-enqueue --bogus t '{}'
	row missing-type 64 "missing TYPE" "" pd-enqueue
	row extra-arg 64 "extra" "" pd-enqueue t '{}' extra
	row json-arg 65 "PAYLOAD" "" pd-enqueue t '{"a":'
	row json-stdin 65 "stdin" '{x}' pd-enqueue t
	row json-not-utf8 65 "UTF-8" "" pd-enqueue t $'{"a": "\xff"}'
	row json-ctl 65 "PAYLOAD" "" pd-enqueue t $'{"a": "\x01"}'
	row json-deep 65 "stdin" "$deep" pd-enqueue t
	row json-nul 65 "stdin" "@$T/nul.json" pd-enqueue t
	row ndjson-nul 65 "line 2" "@$T/nul.ndjson" pd-enqueue --ndjson
	row log-format-bad 64 "xml" "" pd-enqueue --log-format xml t '{}'
	row ndjson-bad-line 65 "line 2" $'{"type":"t"}\n{"type":\n' pd-enqueue --ndjson
	row ndjson-unknown-key 65 "bogus" $'{"type":"t","bogus":1}\n' pd-enqueue --ndjson
	row ndjson-empty 65 "no jobs" "" pd-enqueue --ndjson
	row ndjson-no-type 65 "type" $'{"payload":{}}\n' pd-enqueue --ndjson
	row ndjson-bad-delay 65 "delay" $'{"type":"t","delay":"forever"}\n' pd-enqueue --ndjson
	row ndjson-huge-delay 65 "delay" $'{"type":"t","delay":"99999999999d"}\n' pd-enqueue --ndjson
	row ndjson-bad-run-at 65 "run_at" $'{"type":"t","run_at":"yesterday"}\n' pd-enqueue --ndjson
	row ndjson-huge-run-at 65 "run_at" $'{"type":"t","run_at":"99999-01-01T00:00:00Z"}\n' pd-enqueue --ndjson
	row ndjson-type-ctl 65 "type" $'{"type":"a\\u0001b"}\n' pd-enqueue --ndjson
	row ndjson-type-not-utf8 65 "line 1" $'{"type":"\xff"}\n' pd-enqueue --ndjson
	row ndjson-attempts-neg 65 "max_attempts" $'{"type":"t","max_attempts":-1}\n' pd-enqueue --ndjson
	row ndjson-attempts-zero 65 "max_attempts" $'{"type":"t","max_attempts":0}\n' pd-enqueue --ndjson
	row ndjson-attempts-huge 65 "max_attempts" "{\"type\":\"t\",\"max_attempts\":$HUGE}" pd-enqueue --ndjson
	row ndjson-priority-huge 65 "priority" "{\"type\":\"t\",\"priority\":$HUGE}" pd-enqueue --ndjson
	row ndjson-unknown-dep 2 "99999999" $'{"type":"t","depends_on":[99999999]}\n' pd-enqueue --ndjson
	row ndjson-second-bad 65 "line 3" $'{"type":"t"}\n{"type":"t"}\n[]\n' pd-enqueue --ndjson
	row bad-delay 64 "--delay" "" pd-enqueue --delay soon t '{}'
	row neg-delay 64 "--delay" "" pd-enqueue --delay=-5s t '{}'
	row huge-delay 65 "--delay" "" pd-enqueue --delay 99999999999d t '{}'
	row huge-delay-digits 65 "--delay" "" pd-enqueue --delay "$HUGE" t '{}'
	row bad-run-at 64 "tomorrow" "" pd-enqueue --run-at tomorrow t '{}'
	row huge-run-at 64 "99999-01-01" "" pd-enqueue --run-at 99999-01-01T00:00:00Z t '{}'
	row run-at-and-delay 64 "--delay" "" pd-enqueue --run-at 2030-01-01T00:00:00Z --delay 1s t '{}'
	row huge-timeout 65 "--timeout" "" pd-enqueue --timeout 99999999999d t '{}'
	row attempts-zero 64 "--max-attempts" "" pd-enqueue --max-attempts 0 t '{}'
	row attempts-neg 64 "--max-attempts" "" pd-enqueue --max-attempts -1 t '{}'
	row attempts-huge 64 "--max-attempts" "" pd-enqueue --max-attempts "$HUGE" t '{}'
	row priority-huge 64 "priority '$HUGE'" "" pd-enqueue -p "$HUGE" t '{}'
	row priority-word 64 "priority 'urgent'" "" pd-enqueue -p urgent t '{}'
	row tenant-not-utf8 65 "tenant" "" pd-enqueue -t $'\xff' t '{}'
	row tenant-newline 65 "tenant" "" pd-enqueue -t $'a\nb' t '{}'
	row queue-tab 65 "queue" "" pd-enqueue -q $'a\tb' t '{}'
	row type-ctl 65 "TYPE" "" pd-enqueue $'a\x01b' '{}'
	row type-long 65 "TYPE" "" pd-enqueue "$LONG_NAME" '{}'
	row key-ctl 65 "key" "" pd-enqueue -k $'k\x7f' t '{}'
	row after-unknown 2 "99999999" "" pd-enqueue --after 99999999 t '{}'
	row after-neg 64 "--after" "" pd-enqueue --after -1 t '{}'
	row after-huge 64 "--after" "" pd-enqueue --after "$HUGE" t '{}'
	row wait-timeout-bad 64 "--wait-timeout" "" pd-enqueue --wait --wait-timeout soon t '{}'
	row key-reserved 65 "--key 'queue:q'" "" pd-enqueue --key queue:q t '{}'
	row key-empty 65 "--key" "" pd-enqueue --key '' t '{}'
	row key-ctl 65 "--key" "" pd-enqueue --key $'k\x01' t '{}'
	row key-long 65 "--key" "" pd-enqueue --key "$LONG_NAME" t '{}'
	row ndjson-key-reserved 65 "line 2" $'{"type":"t"}\n{"type":"t","concurrency_key":"type:t"}\n' pd-enqueue --ndjson
	row ndjson-key-number 65 "concurrency_key" $'{"type":"t","concurrency_key":1}\n' pd-enqueue --ndjson
	row type-reserved 65 "pd:hook" "" pd-enqueue pd:hook '{}'
	row ndjson-type-reserved 65 "pd:hook" $'{"type":"pd:hook"}\n' pd-enqueue --ndjson
	row ndjson-key-empty 65 "concurrency_key" $'{"type":"t","concurrency_key":""}\n' pd-enqueue --ndjson
	row start-by-bad 64 "--start-by" "" pd-enqueue --start-by soon t '{}'
	row start-by-before-run-at 65 "start deadline" "" pd-enqueue --delay 1h --start-by 10m t '{}'
	row start-by-past 65 "start deadline" "" pd-enqueue --start-by 2020-01-01T00:00:00Z t '{}'
	row workflow-start-by-before 65 "start deadline" "" pd-enqueue -c "$CFG" --run-at 2099-01-02 --start-by 2099-01-01 --workflow wf '{}'
	row ndjson-start-by-bad 65 "start_by" $'{"type":"t","start_by":"soon"}\n' pd-enqueue --ndjson
	row ndjson-start-by-before 65 "line 2" $'{"type":"t"}\n{"type":"t","delay":"1h","start_by":"1m"}\n' pd-enqueue --ndjson
	row config-handler-reserved-key 78 "concurrency_key" "" pd-enqueue -c "$T/handler-reserved-key.yaml" t '{}'
	row config-wf-empty-key 78 "concurrency_key" "" pd-enqueue -c "$T/wf-empty-key.yaml" --workflow w '{}'
	row workflow-key 64 "--key" "" pd-enqueue -c "$CFG" --key k --workflow wf '{}'
	row workflow-unknown 64 "nosuch" "" pd-enqueue -c "$CFG" --workflow nosuch '{}'
	row workflow-bad-input 65 "INPUT" "" pd-enqueue -c "$CFG" --workflow wf '{'
	row config-unknown-key 78 "bogus_key" "" pd-enqueue -c "$T/unknown-key.yaml" t '{}'
	row config-missing 78 "no-such.yaml" "" pd-enqueue -c "$T/no-such.yaml" t '{}'
	row config-syntax 78 "syntax.yaml" "" pd-enqueue -c "$T/syntax.yaml" t '{}'
	row config-not-utf8 78 "not-utf8.yaml" "" pd-enqueue -c "$T/not-utf8.yaml" t '{}'
	row db-down 69 "127.0.0.1" "" pd-enqueue -d "$DOWN" t '{}'
	row db-down-socket 69 "no-such-dir" "" pd-enqueue -d "$DOWN_SOCK" t '{}'
	: >"$T/empty-url"
	row url-file-missing 78 "no-such-url" "" pd-enqueue --database-url-file "$T/no-such-url" t '{}'
	row url-file-empty 78 "empty-url" "" pd-enqueue --database-url-file "$T/empty-url" t '{}'
	row db-down-ndjson 69 "127.0.0.1" $'{"type":"t"}\n' pd-enqueue -d "$DOWN" --ndjson
	head -c 1100000 /dev/zero | tr '\0' x | sed 's/.*/"&"/' >"$T/big.json"
	{
		echo '{"type":"t"}'
		printf '{"type":"t","payload":"%s"}\n' "$(head -c 2000 /dev/zero | tr '\0' x)"
	} >"$T/big.ndjson"
	row oversize-stdin 65 "max_payload" "@$T/big.json" pd-enqueue t
	row oversize-arg 65 "max_payload 1KiB" "" pd-enqueue --max-payload 1KiB t "\"$(head -c 2000 /dev/zero | tr '\0' x)\""
	row oversize-ndjson 65 "line 2" "@$T/big.ndjson" pd-enqueue --max-payload 1KiB --ndjson
	row max-payload-bad 64 "--max-payload" "" pd-enqueue --max-payload lots t '{}'
	row max-payload-neg 64 "--max-payload" "" pd-enqueue --max-payload -1 t '{}'
	rows_end
}

@test "pd-worker: bad flags and config exit at start" {
	rows_begin
	row unknown-flag 64 "--bogus" "" pd-worker --bogus --handler t=cat
	row no-handler 64 "handler" "" pd-worker
	row extra-arg 64 "extra" "" pd-worker --handler t=cat extra
	row handler-no-equals 64 "--handler" "" pd-worker --handler cat
	row handler-type-ctl 65 "handler" "" pd-worker --handler $'a\x01b=cat'
	row handler-type-not-utf8 65 "handler" "" pd-worker --handler $'\xff=cat'
	row exec-missing 78 "/no/such/program" "" pd-worker --exec t=/no/such/program
	row queue-not-utf8 65 "queue" "" pd-worker -q $'\xff' --handler t=cat
	row queue-long 65 "queue" "" pd-worker -q "$LONG_NAME" --handler t=cat
	row lease-bad 64 "--lease" "" pd-worker --lease soon --handler t=cat
	row lease-zero 64 "--lease" "" pd-worker --lease 0 --handler t=cat
	row lease-huge 65 "--lease" "" pd-worker --lease 99999999999d --handler t=cat
	row heartbeat-over-lease 64 "heartbeat" "" pd-worker --lease 2s --heartbeat 5s --handler t=cat
	row poll-huge 65 "--poll" "" pd-worker --poll "$HUGE" --handler t=cat
	row concurrency-zero 64 "--concurrency" "" pd-worker -j 0 --handler t=cat
	row url-file-missing 78 "no-such-url" "" pd-worker --database-url-file "$T/no-such-url" --handler t=cat
	row concurrency-neg 64 "--concurrency" "" pd-worker -j -1 --handler t=cat
	row concurrency-huge 64 "--concurrency" "" pd-worker -j "$HUGE" --handler t=cat
	row batch-zero 64 "--batch" "" pd-worker --batch 0 --handler t=cat
	row batch-max-zero 64 "--batch-max" "" pd-worker --batch-max 0 --handler t=cat
	row batch-max-huge 64 "--batch-max" "" pd-worker --batch-max 1001 --handler t=cat
	row drain-bad 64 "--drain-timeout" "" pd-worker --drain-timeout x --handler t=cat
	row log-format-bad 64 "xml" "" pd-worker --log-format xml --handler t=cat
	row crontab-missing 65 "no-such-crontab" "" pd-worker --crontab "$T/no-such-crontab"
	row crontab-bad-cron 65 "crontab-bad:2:" "" pd-worker --crontab "$T/crontab-bad"
	row crontab-bad-zone 65 "Mars/Olympus" "" pd-worker --crontab "$T/crontab-zone"
	row crontab-reserved-key 65 "crontab-reserved-key:1:" "" pd-worker --crontab "$T/crontab-reserved-key"
	row config-crontab-relative 78 "not an absolute path" "" pd-worker -c "$T/crontab-relative.yaml"
	row config-unknown-key 78 "bogus_key" "" pd-worker -c "$T/unknown-key.yaml" --handler t=cat
	row config-bad-lease 78 "lease" "" pd-worker -c "$T/bad-lease.yaml" --handler t=cat
	row config-huge-concurrency 78 "concurrency" "" pd-worker -c "$T/huge-concurrency.yaml" --handler t=cat
	row config-huge-timeout 78 "timeout" "" pd-worker -c "$T/huge-timeout.yaml"
	row config-handler-key 78 "bogus" "" pd-worker -c "$T/handler-key.yaml"
	row config-handler-ctl 78 "handler" "" pd-worker -c "$T/handler-ctl.yaml"
	row config-wf-huge-sleep 78 "sleep" "" pd-worker -c "$T/wf-huge-sleep.yaml" --handler t=cat
	row config-missing 78 "no-such.yaml" "" pd-worker -c "$T/no-such.yaml" --handler t=cat
	row db-down 69 "127.0.0.1" "" pd-worker -d "$DOWN" --handler t=cat
	row db-down-socket 69 "no-such-dir" "" pd-worker -d "$DOWN_SOCK" --handler t=cat
	printf 'retry:\n  max_snoozes: -1\n' >"$T/snoozes-neg.yaml"
	printf 'handlers:\n  t:\n    run: cat\n    max_snoozes: 0\n' >"$T/handler-snoozes-0.yaml"
	row config-max-snoozes-neg 78 "max_snoozes" "" pd-worker -c "$T/snoozes-neg.yaml" --handler t=cat
	row config-handler-max-snoozes-0 78 "max_snoozes" "" pd-worker -c "$T/handler-snoozes-0.yaml"
	row config-hooks-key 78 "hooks-key.yaml:4:" "" pd-worker -c "$T/hooks-key.yaml"
	row config-hook-key 78 "bogus" "" pd-worker -c "$T/hook-key.yaml"
	row config-hook-handler 78 "reserved" "" pd-worker -c "$T/hook-handler.yaml"
	row handler-reserved 64 "reserved" "" pd-worker --handler pd:hook=cat
	rows_end
}

@test "pd-reaper: bad flags and config exit at start" {
	rows_begin
	row unknown-flag 64 "--bogus" "" pd-reaper --bogus
	row extra-arg 64 "extra" "" pd-reaper extra
	row interval-bad 64 "--interval" "" pd-reaper --interval soon
	row interval-zero 64 "--interval" "" pd-reaper --interval 0
	row interval-neg 64 "--interval" "" pd-reaper --interval=-1s
	row interval-huge 64 "--interval" "" pd-reaper --interval 99999999999d
	row log-format-bad 64 "xml" "" pd-reaper --log-format xml
	row config-unknown-key 78 "bogus_key" "" pd-reaper -c "$T/unknown-key.yaml" --once
	row config-neg-interval 78 "interval" "" pd-reaper -c "$T/reaper-neg.yaml"
	row config-bad-retention 78 "succeeded" "" pd-reaper -c "$T/retention-bad.yaml" --once
	row db-down-once 69 "127.0.0.1" "" pd-reaper -d "$DOWN" --once
	row db-down 69 "127.0.0.1" "" pd-reaper -d "$DOWN"
	rows_end
}

@test "pd-relay: bad flags and config exit at start" {
	rows_begin
	row unknown-flag 64 "--bogus" "" pd-relay --bogus --publish cat
	row no-command 64 "publish" "" pd-relay
	row extra-arg 64 "extra" "" pd-relay --publish cat extra
	row exec-missing 78 "/no/such/program" "" pd-relay --exec /no/such/program
	row topic-not-utf8 65 "topic" "" pd-relay --publish cat --topic $'\xff'
	row topic-newline 65 "topic" "" pd-relay --publish cat --topic $'a\nb'
	row timeout-over-visibility 64 "visibility" "" pd-relay --publish cat --timeout 90s --visibility 60s
	row visibility-bad 64 "--visibility" "" pd-relay --publish cat --visibility soon
	row visibility-huge 65 "--visibility" "" pd-relay --publish cat --visibility 99999999999d
	row concurrency-zero 64 "--concurrency" "" pd-relay --publish cat -j 0
	row concurrency-huge 64 "--concurrency" "" pd-relay --publish cat -j "$HUGE"
	row batch-neg 64 "--batch" "" pd-relay --publish cat --batch -1
	row poll-bad 64 "--poll" "" pd-relay --publish cat --poll 5x
	row log-format-bad 64 "xml" "" pd-relay --publish cat --log-format xml
	row once-and-until-idle 64 "--once" "" pd-relay --publish cat --once --until-idle
	row config-unknown-key 78 "bogus_key" "" pd-relay -c "$T/unknown-key.yaml" --publish cat
	row config-bad-visibility 78 "visibility" "" pd-relay -c "$T/relay-bad.yaml" --publish cat
	row config-topic-key 78 "bogus" "" pd-relay -c "$T/relay-key.yaml"
	row db-down 69 "127.0.0.1" "" pd-relay -d "$DOWN" --publish cat
	row db-down-once 69 "127.0.0.1" "" pd-relay -d "$DOWN" --publish cat --once
	rows_end
}

@test "pd-cron: bad inputs of every command" {
	rows_begin
	local run_id job
	row unknown-command 64 "bogus" "" pd-cron bogus
	row unknown-flag 64 "--bogus" "" pd-cron list --bogus
	row config-unknown-key 78 "bogus_key" "" pd-cron -c "$T/unknown-key.yaml" list
	row db-down 69 "127.0.0.1" "" pd-cron -d "$DOWN" list
	# add
	row add-missing-name 64 "NAME" "" pd-cron add
	row add-missing-cron 64 "--cron" "" pd-cron add s2 --tz UTC --type t
	row add-bad-cron 65 "cron" "" pd-cron add s2 --cron 'every day' --tz UTC --type t
	row add-cron-range 65 "61" "" pd-cron add s2 --cron '61 * * * *' --tz UTC --type t
	row add-cron-never 65 "never" "" pd-cron add s2 --cron '0 0 31 2 *' --tz UTC --type t
	row add-cron-huge-step 65 "cron" "" pd-cron add s2 --cron "*/$HUGE * * * *" --tz UTC --type t
	row add-cron-ctl 65 "cron" "" pd-cron add s2 --cron $'0 * * * *\n0' --tz UTC --type t
	row add-bad-zone 65 "Mars/Olympus" "" pd-cron add s2 --cron '0 * * * *' --tz Mars/Olympus --type t
	row add-zone-path 65 "zone" "" pd-cron add s2 --cron '0 * * * *' --tz ../../etc/passwd --type t
	row add-name-newline 65 "name" "" pd-cron add $'s\n2' --cron '0 * * * *' --tz UTC --type t
	row add-type-not-utf8 65 "type" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type $'\xff'
	row add-tenant-long 65 "tenant" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t -t "$LONG_NAME"
	row add-bad-payload 65 "payload" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --payload '{'
	row add-priority-huge 64 "priority '$HUGE'" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --priority "$HUGE"
	row add-misfire-bad 64 "misfire policy 'sometimes'" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --misfire sometimes
	row add-catch-up-zero 64 "--catch-up-limit" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --catch-up-limit 0
	row add-catch-up-neg 64 "--catch-up-limit" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --catch-up-limit -1
	row add-overlap-bad 64 "overlap 'maybe'" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --overlap maybe
	row add-jitter-huge 65 "--jitter" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --jitter 99999999999d
	# 65, not 64: the range of a value (as in an apply file), not the shape of the option
	row add-jitter-over-day 65 "jitter 2d" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --jitter 2d
	row add-attempts-zero 64 "--max-attempts" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --max-attempts 0
	row add-timeout-bad 64 "--timeout" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --timeout soon
	row add-key-reserved 65 "concurrency key 'queue:q'" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type t --key queue:q
	row add-exists 1 "sched" "" pd-cron add sched --cron '0 * * * *' --tz UTC --type t
	row add-db-down 69 "127.0.0.1" "" pd-cron -d "$DOWN" add s2 --cron '0 * * * *' --tz UTC --type t
	# list
	row list-extra 64 "extra" "" pd-cron list extra
	row list-tenant-not-utf8 65 "tenant" "" pd-cron list -t $'\xff'
	# rm, pause, resume, trigger, history
	row rm-unknown 2 "nosuch" "" pd-cron rm nosuch
	row rm-empty 64 "NAME" "" pd-cron rm ''
	row history-empty 64 "NAME" "" pd-cron history ''
	row rm-name-ctl 65 "name" "" pd-cron rm $'a\x01'
	row rm-db-down 69 "127.0.0.1" "" pd-cron -d "$DOWN" rm sched
	row pause-unknown 2 "nosuch" "" pd-cron pause nosuch
	row pause-tenant-ctl 65 "tenant" "" pd-cron pause sched -t $'a\tb'
	row resume-unknown 2 "nosuch" "" pd-cron resume nosuch
	row resume-name-long 65 "name" "" pd-cron resume "$LONG_NAME"
	row trigger-unknown 2 "nosuch" "" pd-cron trigger nosuch
	row trigger-name-not-utf8 65 "name" "" pd-cron trigger $'\xff'
	row history-unknown 2 "nosuch" "" pd-cron history nosuch
	row history-count-zero 64 "-n" "" pd-cron history sched -n 0
	row history-count-huge 64 "-n" "" pd-cron history sched -n "$HUGE"
	# preview, check: no database
	row preview-bad-cron 65 "cron" "" pd-cron preview 'not a cron'
	row preview-never 65 "never" "" pd-cron preview '0 0 30 2 *'
	row preview-bad-zone 65 "Mars/Olympus" "" pd-cron preview '0 * * * *' --tz Mars/Olympus
	row preview-bad-from 64 "--from" "" pd-cron preview '0 * * * *' --from tomorrow
	row preview-huge-from 64 "--from" "" pd-cron preview '0 * * * *' --from 99999-01-01T00:00:00Z
	row preview-count-zero 64 "-n" "" pd-cron preview '0 * * * *' -n 0
	row preview-count-neg 64 "-n" "" pd-cron preview '0 * * * *' -n -1
	row check-missing 65 "no-such-file" "" pd-cron check "$T/no-such-file"
	row check-bad-cron 65 "61" "" pd-cron check "$T/sched-bad-cron.yaml"
	row check-crontab-bad 65 "crontab-bad:2:" "" pd-cron check --crontab "$T/crontab-bad"
	row check-bad-from 64 "--from" "" pd-cron check "$T/sched-ok.yaml" --from yesterday
	# apply
	row apply-missing 65 "no-such-file" "" pd-cron apply "$T/no-such-file"
	row apply-syntax 65 "syntax.yaml" "" pd-cron apply "$T/syntax.yaml"
	row apply-unknown-key 65 "bogus" "" pd-cron apply "$T/sched-key.yaml"
	row apply-huge-jitter 65 "jitter" "" pd-cron apply "$T/sched-huge-jitter.yaml"
	row apply-huge-attempts 65 "max_attempts" "" pd-cron apply "$T/sched-attempts.yaml"
	row apply-reserved-key 65 "concurrency_key" "" pd-cron apply "$T/sched-reserved-key.yaml"
	row apply-crontab-reserved-key 65 "annotation 'key'" "" pd-cron apply --crontab "$T/crontab-reserved-key"
	row apply-crontab-owned 1 "crontab-owned:2: schedule 'sched' (type 't') belongs to no crontab" "" pd-cron apply "$T/crontab-owned"
	row apply-name-newline 65 "name" "" pd-cron apply "$T/sched-name.yaml"
	row apply-bad-cron 65 "61" "" pd-cron apply "$T/sched-bad-cron.yaml"
	row apply-bad-zone 65 "Mars/Olympus" "" pd-cron apply "$T/sched-zone.yaml"
	row apply-crontab-bad 65 "crontab-bad:2:" "" pd-cron apply --crontab "$T/crontab-bad"
	row apply-not-utf8 65 "not-utf8.yaml" "" pd-cron apply "$T/not-utf8.yaml"
	row apply-db-down 69 "127.0.0.1" "" pd-cron -d "$DOWN" apply "$T/sched-ok.yaml"
	# run: the ticker, a daemon
	row run-interval-zero 64 "--interval" "" pd-cron run --interval 0
	row run-interval-huge 64 "--interval" "" pd-cron run --interval 99999999999d
	row run-lease-bad 64 "--lease" "" pd-cron run --lease soon
	row run-grace-huge 64 "--skip-grace" "" pd-cron run --skip-grace "$HUGE"
	row run-extra 64 "extra" "" pd-cron run extra
	row run-log-format 64 "xml" "" pd-cron --log-format xml run
	row run-config 78 "bogus_key" "" pd-cron -c "$T/unknown-key.yaml" run
	row run-db-down 69 "127.0.0.1" "" pd-cron -d "$DOWN" run
	row run-once-db-down 69 "127.0.0.1" "" pd-cron -d "$DOWN" run --once
	# scheduled workflows: type workflow:NAME, a crontab's workflow=NAME
	row add-flow-empty 65 "workflow name" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type workflow:
	row add-flow-bad-name 65 "workflow name" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type 'workflow:a b'
	row add-flow-timeout 65 "timeout" "" pd-cron add s2 --cron '0 * * * *' --tz UTC --type workflow:wf --timeout 1m
	row apply-flow-timeout 65 "timeout" "" pd-cron apply "$T/sched-flow-timeout.yaml"
	row check-crontab-flow-empty 65 "crontab-flow-empty:1:7: annotation: expected KEY=VALUE, got 'workflow='" "" pd-cron check --crontab "$T/crontab-flow-empty"
	row apply-crontab-flow-name 65 "crontab-flow-name:1:7: annotation 'workflow'" "" pd-cron apply --crontab "$T/crontab-flow-name"
	row check-crontab-flow-command 65 "crontab-flow-command:2:11: the command of a workflow=wf line must be '-'" "" pd-cron check --crontab "$T/crontab-flow-command"
	row check-flow-config 78 "bogus_key" "" pd-cron -c "$T/unknown-key.yaml" check --crontab "$T/crontab-ok-flow"
	rows_end
}

@test "pd-admin: global options, migrate, jobs, queues, depth, workers, metrics, top, prune" {
	rows_begin
	row unknown-command 64 "bogus" "" pd-admin bogus
	row unknown-flag 64 "--bogus" "" pd-admin --bogus jobs
	row config-unknown-key 78 "bogus_key" "" pd-admin -c "$T/unknown-key.yaml" jobs
	row config-missing 78 "no-such.yaml" "" pd-admin -c "$T/no-such.yaml" jobs
	row config-env 78 "bogus_key" "" env PD_CONFIG="$T/unknown-key.yaml" pd-admin jobs
	row db-down-env 69 "127.0.0.1" "" env PD_DATABASE_URL="$DOWN" pd-admin jobs
	row migrate-extra 64 "extra" "" pd-admin migrate extra
	row migrate-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" migrate
	row migrate-status-db-down 69 "no-such-dir" "" pd-admin -d "$DOWN_SOCK" migrate --status
	row jobs-limit-zero 64 "--limit" "" pd-admin jobs --limit 0
	row jobs-limit-huge 64 "--limit" "" pd-admin jobs --limit "$HUGE"
	row jobs-offset-neg 64 "--offset" "" pd-admin jobs --offset -1
	row jobs-state-bad 64 "BOGUS" "" pd-admin jobs --state BOGUS
	row jobs-state-ctl 64 "--state" "" pd-admin jobs --state $'PENDING\nX'
	row jobs-tenant-not-utf8 65 "--tenant" "" pd-admin jobs --tenant $'\xff'
	row jobs-type-newline 65 "--type" "" pd-admin jobs --type $'a\nb'
	row jobs-queue-long 65 "--queue" "" pd-admin jobs --queue "$LONG_NAME"
	row jobs-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" jobs
	row queues-extra 64 "extra" "" pd-admin queues extra
	row queues-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" queues
	row depth-missing 64 "queue" "" pd-admin depth
	row depth-empty 64 "QUEUE" "" pd-admin depth ''
	row depth-not-utf8 65 "QUEUE" "" pd-admin depth $'\xff'
	row depth-state-two 64 "--state" "" pd-admin depth default --state PENDING,RUNNING
	row workers-stale-bad 64 "--stale" "" pd-admin workers --stale soon
	row workers-stale-huge 65 "--stale" "" pd-admin workers --stale 99999999999d
	row workers-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" workers
	row leaders-extra 64 "extra" "" pd-admin leaders extra
	row leaders-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" leaders
	row metrics-stale-neg 64 "--stale" "" pd-admin metrics --stale=-1s
	row metrics-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" metrics
	row top-interval-short 64 "--interval" "" pd-admin top --once --interval 50ms
	row top-interval-huge 65 "--interval" "" pd-admin top --once --interval "$HUGE"
	row top-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" top --once
	row prune-extra 64 "extra" "" pd-admin prune extra
	row prune-bad-retention 78 "succeeded" "" pd-admin -c "$T/retention-bad.yaml" prune --dry-run
	row prune-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" prune --dry-run
	rows_end
}

@test "pd-admin: job and dlq commands" {
	rows_begin
	local job dead
	job=$(cat "$T/job.id")
	dead=$(cat "$T/dead.id")
	row job-unknown-sub 64 "bogus" "" pd-admin job bogus 1
	row job-show-unknown 2 "99999999" "" pd-admin job show 99999999
	row job-show-neg 64 "-1" "" pd-admin job show -1
	row job-show-zero 64 "'0'" "" pd-admin job show 0
	row job-show-huge 64 "$HUGE" "" pd-admin job show "$HUGE"
	row job-show-word 64 "abc" "" pd-admin job show abc
	row job-show-newline 64 "job id" "" pd-admin job show $'1\n2'
	row job-show-two 64 "argument '2'" "" pd-admin job show 1 2
	row job-show-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" job show "$job"
	row job-replay-unknown 2 "99999999" "" pd-admin job replay 99999999
	row job-replay-pending 1 "$job" "" pd-admin job replay "$job"
	row job-replay-huge 64 "$HUGE" "" pd-admin job replay "$HUGE"
	row job-cancel-unknown 2 "99999999" "" pd-admin job cancel 99999999
	row job-cancel-dead 1 "$dead" "" pd-admin job cancel "$dead"
	row job-cancel-neg 64 "-5" "" pd-admin job cancel -5
	row job-cancel-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" job cancel "$job"
	row dlq-list-limit-huge 64 "--limit" "" pd-admin dlq list --limit "$HUGE"
	row dlq-list-tenant-ctl 65 "--tenant" "" pd-admin dlq list --tenant $'\x1b[31m'
	row dlq-list-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" dlq list
	row dlq-replay-unknown 2 "99999999" "" pd-admin dlq replay 99999999
	row dlq-replay-pending 1 "$job" "" pd-admin dlq replay "$job"
	row dlq-replay-word 64 "abc" "" pd-admin dlq replay abc
	row dlq-replay-limit-over 64 "--limit" "" pd-admin dlq replay --limit 1001
	row dlq-replay-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" dlq replay "$dead"
	row dlq-delete-none 64 "job id" "" pd-admin dlq delete
	row dlq-delete-unknown 2 "99999999" "" pd-admin dlq delete 99999999
	row dlq-delete-pending 1 "$job" "" pd-admin dlq delete "$job"
	row dlq-delete-too-many 64 "1000" "" pd-admin dlq delete $(seq 1 1001)
	row dlq-delete-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" dlq delete "$dead"
	row dlq-purge-missing 64 "--older-than" "" pd-admin dlq purge
	row dlq-purge-bad 64 "--older-than" "" pd-admin dlq purge --older-than soon
	row dlq-purge-neg 64 "--older-than" "" pd-admin dlq purge --older-than=-1d
	row dlq-purge-huge 65 "--older-than" "" pd-admin dlq purge --older-than 99999999999d
	row dlq-purge-queue-ctl 65 "--queue" "" pd-admin dlq purge --older-than 1d --queue $'q\x01'
	row dlq-purge-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" dlq purge --older-than 1d
	rows_end
}

@test "pd-admin: outbox, flow and lease commands" {
	rows_begin
	local run job
	run=$(cat "$T/run.id")
	job=$(cat "$T/job.id")
	row outbox-unknown-sub 64 "bogus" "" pd-admin outbox bogus
	row outbox-stats-extra 64 "extra" "" pd-admin outbox stats extra
	row outbox-stats-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" outbox stats
	row outbox-list-state-bad 64 "LEASED" "" pd-admin outbox list --state LEASED
	row outbox-list-topic-not-utf8 65 "--topic" "" pd-admin outbox list --topic $'\xff'
	row outbox-list-offset-huge 64 "--offset" "" pd-admin outbox list --offset "$HUGE"
	row outbox-list-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" outbox list
	row outbox-replay-unknown 2 "99999999" "" pd-admin outbox replay 99999999
	row outbox-replay-pending 1 "1" "" pd-admin outbox replay 1
	row outbox-replay-word 64 "abc" "" pd-admin outbox replay abc
	row outbox-replay-none 64 "message id" "" pd-admin outbox replay
	row outbox-replay-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" outbox replay 1
	row flow-runs-state-bad 64 "BOGUS" "" pd-admin flow runs --state BOGUS
	row flow-runs-workflow-ctl 65 "--workflow" "" pd-admin flow runs --workflow $'w\nx'
	row flow-runs-limit-zero 64 "--limit" "" pd-admin flow runs --limit 0
	row flow-runs-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" flow runs
	row flow-show-unknown 2 "99999999" "" pd-admin flow show 99999999
	row flow-show-neg 64 "-1" "" pd-admin flow show -1
	row flow-show-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" flow show "$run"
	row flow-signal-unknown 2 "99999999" "" pd-admin flow signal 99999999 go
	row flow-signal-missing-name 64 "NAME" "" pd-admin flow signal "$run"
	row flow-signal-empty-name 64 "signal name" "" pd-admin flow signal "$run" ''
	row flow-signal-bad-payload 65 "PAYLOAD" "" pd-admin flow signal "$run" go '{'
	row flow-signal-bad-stdin 65 "stdin" '[1,' pd-admin flow signal "$run" go -
	row flow-signal-nul-stdin 65 "stdin" "@$T/nul.json" pd-admin flow signal "$run" go -
	row flow-signal-name-ctl 65 "signal NAME" "" pd-admin flow signal "$run" $'g\x01o'
	row flow-signal-name-not-utf8 65 "signal NAME" "" pd-admin flow signal "$run" $'\xff'
	row flow-signal-huge 64 "$HUGE" "" pd-admin flow signal "$HUGE" go
	row flow-signal-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" flow signal "$run" go
	row flow-cancel-unknown 2 "99999999" "" pd-admin flow cancel 99999999
	row flow-cancel-word 64 "abc" "" pd-admin flow cancel abc
	row flow-cancel-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" flow cancel "$run"
	row lease-check-no-env 64 "PD_JOB_ID" "" pd-admin lease check
	row lease-check-bad-id 64 "abc" "" env PD_JOB_ID=abc PD_LEASE_TOKEN=1 pd-admin lease check
	row lease-check-bad-token 64 "lease token" "" env PD_JOB_ID="$job" PD_LEASE_TOKEN="$HUGE" pd-admin lease check
	row lease-check-lost 1 "lease lost" "" env PD_JOB_ID="$job" PD_LEASE_TOKEN=12345 pd-admin lease check
	row lease-check-db-down 69 "127.0.0.1" "" env PD_JOB_ID="$job" PD_LEASE_TOKEN=1 pd-admin -d "$DOWN" lease check
	row lease-check-extra 64 "extra" "" pd-admin lease check extra
	row tenant-grant-one-arg 64 "missing tenant" "" pd-admin tenant grant postgres
	row tenant-grant-extra 64 "extra" "" pd-admin tenant grant postgres acme extra
	row tenant-grant-no-role 2 "no_such_role_x" "" pd-admin tenant grant no_such_role_x acme
	row tenant-grant-tenant-ctl 65 "tenant" "" pd-admin tenant grant postgres $'a\x01b'
	row tenant-grant-tenant-long 65 "tenant" "" pd-admin tenant grant postgres "$LONG_NAME"
	row tenant-revoke-not-granted 2 "acme" "" pd-admin tenant revoke postgres acme
	row tenant-list-no-role 2 "no_such_role_x" "" pd-admin tenant list no_such_role_x
	row tenant-grant-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" tenant grant postgres acme
	rows_end
}

@test "pd-admin: limit, tenant weight and pause commands" {
	rows_begin
	# tenant set, tenants
	row tenant-set-missing-weight 64 "--weight" "" pd-admin tenant set acme
	row tenant-set-weight-zero 64 "--weight" "" pd-admin tenant set acme --weight 0
	row tenant-set-weight-over 64 "--weight" "" pd-admin tenant set acme --weight 1001
	row tenant-set-weight-huge 64 "--weight" "" pd-admin tenant set acme --weight "$HUGE"
	row tenant-set-weight-word 64 "--weight" "" pd-admin tenant set acme --weight heavy
	row tenant-set-missing 64 "missing tenant" "" pd-admin tenant set --weight 2
	row tenant-set-empty 64 "TENANT" "" pd-admin tenant set '' --weight 2
	row tenant-set-ctl 65 "TENANT" "" pd-admin tenant set $'a\x01b' --weight 2
	row tenant-set-long 65 "TENANT" "" pd-admin tenant set "$LONG_NAME" --weight 2
	row tenant-set-unknown-flag 64 "--bogus" "" pd-admin tenant set acme --weight 2 --bogus
	row tenant-set-extra 64 "extra" "" pd-admin tenant set acme extra --weight 2
	row tenant-set-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" tenant set acme --weight 2
	row tenants-extra 64 "extra" "" pd-admin tenants extra
	row tenants-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" tenants
	# limit set
	row limit-set-missing-key 64 "limit key" "" pd-admin limit set
	row limit-set-no-option 64 "--concurrency or --rate" "" pd-admin limit set k
	row limit-set-key-empty 64 "KEY" "" pd-admin limit set '' --concurrency 1
	row limit-set-key-ctl 65 "limit key" "" pd-admin limit set $'k\x01' --concurrency 1
	row limit-set-key-newline 65 "limit key" "" pd-admin limit set $'k\nx' --concurrency 1
	row limit-set-key-not-utf8 65 "limit key" "" pd-admin limit set $'\xff' --concurrency 1
	row limit-set-key-long 65 "limit key" "" pd-admin limit set "$LONG_NAME" --concurrency 1
	row limit-set-key-queue-only 65 "queue:" "" pd-admin limit set queue: --concurrency 1
	row limit-set-key-tenant-only 65 "tenant:" "" pd-admin limit set tenant: --rate 5/1s
	row limit-set-key-type-only 65 "type:" "" pd-admin limit set type: --concurrency 1
	row limit-set-concurrency-neg 64 "--concurrency" "" pd-admin limit set k --concurrency -1
	row limit-set-concurrency-huge 64 "--concurrency" "" pd-admin limit set k --concurrency "$HUGE"
	row limit-set-concurrency-word 64 "--concurrency" "" pd-admin limit set k --concurrency lots
	row limit-set-rate-zero 64 "--rate" "" pd-admin limit set k --rate 0/1m
	row limit-set-rate-over 64 "--rate" "" pd-admin limit set k --rate 10001/1m
	row limit-set-rate-no-period 64 "--rate" "" pd-admin limit set k --rate 5
	row limit-set-rate-no-count 64 "--rate" "" pd-admin limit set k --rate /1m
	row limit-set-rate-zero-period 64 "--rate" "" pd-admin limit set k --rate 5/0s
	row limit-set-rate-bad-period 64 "--rate" "" pd-admin limit set k --rate 5/soon
	# 65, not 64: the range of a value, as for pd-cron add --jitter 2d
	row limit-set-rate-two-days 65 "--rate" "" pd-admin limit set k --rate 5/2d
	row limit-set-rate-huge-period 65 "--rate" "" pd-admin limit set k --rate 5/99999999999d
	row limit-set-unknown-flag 64 "--bogus" "" pd-admin limit set k --concurrency 1 --bogus
	row limit-set-extra 64 "extra" "" pd-admin limit set k extra --concurrency 1
	row limit-set-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" limit set k --concurrency 1
	# limit unset, limits
	row limit-unset-missing 64 "limit key" "" pd-admin limit unset
	row limit-unset-none 2 "nosuch" "" pd-admin limit unset nosuch
	row limit-unset-empty 64 "KEY" "" pd-admin limit unset ''
	row limit-unset-ctl 65 "limit key" "" pd-admin limit unset $'k\tx'
	row limit-unset-type-only 65 "type:" "" pd-admin limit unset type:
	row limit-unset-unknown-flag 64 "--concurrency" "" pd-admin limit unset k --concurrency 1
	row limit-unset-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" limit unset k
	row limits-extra 64 "extra" "" pd-admin limits extra
	row limits-unknown-flag 64 "--bogus" "" pd-admin limits --bogus
	row limits-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" limits
	# queue pause, queue resume
	row queue-unknown-sub 64 "bogus" "" pd-admin queue bogus
	row queue-pause-missing 64 "QUEUE" "" pd-admin queue pause
	row queue-pause-both 64 "not both" "" pd-admin queue pause q --type t
	row queue-pause-empty 64 "QUEUE" "" pd-admin queue pause ''
	row queue-pause-ctl 65 "QUEUE" "" pd-admin queue pause $'q\tx'
	row queue-pause-long 65 "QUEUE" "" pd-admin queue pause "$LONG_NAME"
	row queue-pause-type-empty 64 "--type" "" pd-admin queue pause --type ''
	row queue-pause-type-ctl 65 "--type" "" pd-admin queue pause --type $'t\x01'
	row queue-pause-type-missing 64 "--type" "" pd-admin queue pause --type
	row queue-pause-unknown-flag 64 "--bogus" "" pd-admin queue pause q --bogus
	row queue-pause-extra 64 "extra" "" pd-admin queue pause q extra
	row queue-pause-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" queue pause q
	row queue-resume-missing 64 "QUEUE" "" pd-admin queue resume
	row queue-resume-not-utf8 65 "QUEUE" "" pd-admin queue resume $'\xff'
	row queue-resume-type-long 65 "--type" "" pd-admin queue resume --type "$LONG_NAME"
	row queue-resume-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" queue resume --type t
	# wait; outbox delete and purge; pd-worker --until-settled
	row wait-unknown-id 2 "job 99999999 not found" "" pd-admin wait 99999999
	row wait-bad-id 64 "x7" "" pd-admin wait x7
	row wait-timeout-bad 64 "--timeout" "" pd-admin wait --timeout soon
	row wait-type-ctl 65 "--type" "" pd-admin wait --type $'t\x01'
	row wait-unknown-flag 64 "--bogus" "" pd-admin wait --bogus
	row wait-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" wait 1
	row outbox-delete-missing 64 "message id" "" pd-admin outbox delete
	row outbox-delete-bad-id 64 "x7" "" pd-admin outbox delete x7
	row outbox-delete-unknown 2 "message 99999999 not found" "" pd-admin outbox delete 99999999
	row outbox-delete-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" outbox delete 1
	row outbox-purge-missing 64 "--older-than" "" pd-admin outbox purge
	row outbox-purge-bad 64 "--older-than" "" pd-admin outbox purge --older-than soon
	row outbox-purge-topic-not-utf8 65 "--topic" "" pd-admin outbox purge --older-than 1d --topic $'\xff'
	row outbox-purge-extra 64 "extra" "" pd-admin outbox purge --older-than 1d extra
	row outbox-purge-db-down 69 "127.0.0.1" "" pd-admin -d "$DOWN" outbox purge --older-than 1d
	row until-settled-and-idle 64 "--until-settled" "" pd-worker --until-idle --until-settled --handler t=cat
	rows_end
}

# uncovered PROG: each command PROG --help lists ("job show", "migrate") that no
# row of this file runs; a row runs it when it names PROG, then the command's words.
uncovered() {
	local p=$1 c
	"$p" --help | sed -n '/^Commands:/,/^$/p' | grep -E '^  [a-z]' |
		sed -E 's/^  (([a-z]+)( [a-z]+)?).*/\1/' | while read -r c; do
		grep -qE "^[[:space:]]*row .*$p .*\\b$c( |\$)" "$BATS_TEST_FILENAME" || echo "$p $c"
	done
}

@test "every command pd-admin --help and pd-cron --help list has rows" {
	run uncovered pd-admin
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	run uncovered pd-cron
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

# dump_cmdlines FILE: a handler's line that writes every process's command line to FILE.
dump_cmdlines() {
	printf 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " <"$f"; echo; done >%s 2>/dev/null' "$1"
}

@test "a payload of shell metacharacters reaches sh -c, exec, stream, workflow and relay commands byte for byte, on no command line" {
	local d=$BATS_TEST_TMPDIR marker raw json id run stored msg cfg
	marker="PDMARK${RANDOM}x${RANDOM}"
	# No part of the payload may be run by a shell: each would create $d/pwned.
	raw="$marker \$(touch $d/pwned) \`touch $d/pwned\` ; touch $d/pwned ; | touch $d/pwned && touch $d/pwned || true & wait"
	raw+=$' \' " \\ \\n \n\ttab\r * ? [a-z] {a,b} $IFS ${IFS} $HOME ~root > /dev/null < /etc/passwd 2>&1 # ! %s %n'
	raw+=" héllo ☃ 𝄞 日本語 ‮rtl﻿ $marker"
	json=$(jq -cn --arg m "$raw" '{m: $m}')
	cat >"$d/argv.sh" <<-EOF
		#!/bin/sh
		cat >'$d/argv.in'
		$(dump_cmdlines "'$d/argv.ps'")
	EOF
	cat >"$d/stream.sh" <<-EOF
		#!/bin/sh
		while IFS= read -r line; do
			printf '%s\n' "\$line" >'$d/stream.in'
			$(dump_cmdlines "'$d/stream.ps'")
			printf '%s\n' "\$line" | jq -c '{id}'
		done
	EOF
	chmod +x "$d/argv.sh" "$d/stream.sh"
	cfg=$d/meta.yaml
	printf 'workflows:\n  meta:\n    steps:\n      - name: a\n        run: %s\n' \
		"$(jq -cn --arg r "cat >'$d/step.in'; $(dump_cmdlines "'$d/step.ps'")" '$r')" >"$cfg"
	for t in sh argv stream; do
		printf '%s' "$json" | pd-enqueue "$t" >/dev/null
	done
	run=$(printf '%s' "$json" | pd-enqueue -c "$cfg" --workflow meta)
	stored=$(sql "SELECT payload::text FROM pendulum.jobs WHERE job_type = 'sh'")
	[ "$(jq -r .m <<<"$stored")" = "$raw" ]
	printf '%s' "$stored" >"$d/expected"
	run --separate-stderr timeout 60 pd-worker -c "$cfg" --until-idle --poll 200ms --lease 2s \
		--handler "sh=cat >'$d/sh.in'; $(dump_cmdlines "'$d/sh.ps'")" \
		--exec "argv=$d/argv.sh" --stream "stream=$d/stream.sh"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT string_agg(job_type || '=' || state, ' ' ORDER BY job_type) FROM pendulum.jobs
	          WHERE job_type IN ('sh', 'argv', 'stream', 'workflow:meta')")" = \
		"argv=SUCCEEDED sh=SUCCEEDED stream=SUCCEEDED workflow:meta=SUCCEEDED" ]
	cmp "$d/expected" "$d/sh.in"
	cmp "$d/expected" "$d/argv.in"
	[[ "$(cat "$d/stream.in")" == *"\"payload\": $stored"* || "$(cat "$d/stream.in")" == *"\"payload\":$stored"* ]]
	[[ "$(cat "$d/step.in")" == *"$stored"* ]]
	# the outbox: pd-relay's publish command gets the message's payload
	psql -X -q -At -v ON_ERROR_STOP=1 -v p="$json" -d "$PD_DATABASE_URL" \
		<<<"SELECT pendulum.outbox_record('default', 'meta', :'p', 'k')" >/dev/null
	msg=$(sql "SELECT payload::text FROM pendulum.outbox WHERE topic = 'meta'")
	[ "$msg" = "$stored" ]
	run --separate-stderr timeout 30 pd-relay --until-idle --poll 200ms --topic meta \
		--publish "cat >'$d/relay.in'; $(dump_cmdlines "'$d/relay.ps'")"
	[ "$status" -eq 0 ]
	cmp "$d/expected" "$d/relay.in"
	# nothing ran, and the marker was on no command line while each command ran
	[ ! -e "$d/pwned" ]
	for f in sh argv stream step relay; do
		grep -q pd- "$d/$f.ps" # the dump sees the daemons' own command lines
		run grep -c "$marker" "$d/$f.ps"
		[ "$output" = 0 ]
	done
}
