#!/usr/bin/env bats
# One rule for names (tenant, queue, type, topic, idempotency and message
# keys): valid UTF-8, no control character (C0, DEL, C1), at most 200 bytes,
# on every path, refused with 65 naming the field (and for NDJSON the line),
# nothing written. Durations beyond 100 years and instants before year 0001
# are refused the same way. The outbox's default budget is 25 attempts.

# SQL is single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	reset_outbox
	LONG=$(printf 'n%.0s' $(seq 201))
}

njobs() {
	sql "SELECT count(*) FROM pendulum.jobs"
}

# bad_names: "KIND<TAB>VALUE<TAB>WHY" per bad name, the value as bytes.
bad_names() {
	printf '%s\t%s\t%s\n' \
		control $'a\x01b' 'control character U+0001 at byte 2' \
		del $'ab\x7f' 'control character U+007F at byte 3' \
		c1 $'a\xc2\x9bb' 'control character U+009B at byte 2' \
		utf8 $'a\xffb' 'invalid UTF-8 at byte 2' \
		long "$LONG" '201 bytes, at most 200'
}

@test "pd-enqueue: a bad TYPE, -t, -q or -k is refused with 65 naming it, nothing written" {
	while IFS=$'\t' read -r kind v why; do
		for f in TYPE -t -q -k; do
			case $f in
			TYPE) args=("$v" '{}') name=TYPE ;;
			-t) args=(-t "$v" t '{}') name='tenant (-t)' ;;
			-q) args=(-q "$v" t '{}') name='queue (-q)' ;;
			-k) args=(-k "$v" t '{}') name='idempotency key (-k)' ;;
			esac
			run --separate-stderr pd-enqueue "${args[@]}"
			echo "$kind $f: $status $stderr"
			[ "$status" -eq 65 ]
			[ "$stderr" = "pd-enqueue: invalid $name: $why" ]
			[ -z "$output" ]
		done
	done < <(bad_names)
	[ "$(njobs)" -eq 0 ]
	# the edges that pass: 200 bytes, multi-byte UTF-8, U+00A0
	run --separate-stderr pd-enqueue -q "${LONG:1}" $'caf\xc3\xa9\xc2\xa0' '{}'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT octet_length(queue) || ' ' || job_type FROM pendulum.jobs")" = $'200 caf\xc3\xa9\xc2\xa0' ]
}

# ndjson N BAD_LINE KEY VALUE_JSON: N job lines, line BAD_LINE with "KEY": VALUE_JSON.
ndjson() {
	awk -v n="$1" -v bad="$2" -v key="$3" -v val="$4" 'BEGIN {
		for (i = 1; i <= n; i++)
			if (i == bad && key == "type") print "{\"type\": " val ", \"payload\": {\"i\": " i "}}"
			else if (i == bad) print "{\"type\": \"t\", \"" key "\": " val ", \"payload\": {\"i\": " i "}}"
			else print "{\"type\": \"t\", \"payload\": {\"i\": " i "}}" }'
}

@test "pd-enqueue --ndjson: a bad name on line 2 of 3 (one statement) or 250 of 300 (COPY): 65 naming the line, nothing written" {
	for n_bad in "3 2" "300 250"; do
		read -r n bad <<<"$n_bad"
		for key in type queue tenant idempotency_key; do
			while IFS=$'\t' read -r kind val why; do
				ndjson "$n" "$bad" "$key" "$val" >"$BATS_TEST_TMPDIR/in.ndjson"
				run --separate-stderr pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/in.ndjson"
				echo "$n $key $kind: $status $stderr"
				[ "$status" -eq 65 ]
				if [ "$kind" = utf8 ]; then # the JSON parser refuses it first
					[[ "$stderr" == "pd-enqueue: invalid JSON on stdin line $bad, column "*": $why" ]]
				else
					[ "$stderr" = "pd-enqueue: stdin line $bad: key '$key': invalid name: $why" ]
				fi
				[ -z "$output" ]
			done <<-EOF
				control	"a\u0001b"	control character U+0001 at byte 2
				c1	"a\u0085b"	control character U+0085 at byte 2
				utf8	$(printf '"a\xffb"')	invalid UTF-8
				long	"$LONG"	201 bytes, at most 200
			EOF
		done
	done
	# TYPE and -q from the command line, for every line of a small or a large batch
	for n in 3 300; do
		run --separate-stderr pd-enqueue --ndjson $'t\xff' < <(seq "$n" | sed 's/.*/{"i": &}/')
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-enqueue: invalid TYPE: invalid UTF-8 at byte 2" ]
		run --separate-stderr pd-enqueue --ndjson -q $'q\x01' < <(ndjson "$n" 0 x x)
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-enqueue: invalid queue (-q): control character U+0001 at byte 2" ]
	done
	[ "$(njobs)" -eq 0 ]
	# the same batches with good names go in, through both paths
	ndjson 3 2 queue '"q"' | pd-enqueue --ndjson >/dev/null
	ndjson 300 250 queue '"q"' | pd-enqueue --ndjson >/dev/null
	[ "$(njobs)" -eq 303 ]
}

@test "durations beyond 100 years and instants before year 0001: 65 (flags, NDJSON both paths), nothing written" {
	run --separate-stderr pd-enqueue --delay 1000000000d t '{}'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: option --delay: invalid duration '1000000000d': more than 100 years (36525d)" ]
	run --separate-stderr pd-enqueue --timeout 99999999999999999999s t '{}'
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-enqueue: option --timeout: invalid duration "*"more than 100 years (36525d)" ]]
	run --separate-stderr pd-enqueue --timeout 36525d1ms t '{}'
	[ "$status" -eq 65 ]
	run --separate-stderr pd-enqueue --run-at 0000-06-01T00:00:00Z t '{}'
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-enqueue: invalid instant '0000-06-01T00:00:00Z': out of range: years 0001 to 9999"* ]]
	for n_bad in "3 2" "300 250"; do
		read -r n bad <<<"$n_bad"
		for kv in 'delay "1000000000d"' 'timeout "106751991167.99d"' 'delay 99999999999999999999'; do
			read -r key val <<<"$kv"
			ndjson "$n" "$bad" "$key" "$val" >"$BATS_TEST_TMPDIR/in.ndjson"
			run --separate-stderr pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/in.ndjson"
			echo "$n $kv: $status $stderr"
			[ "$status" -eq 65 ]
			[[ "$stderr" == "pd-enqueue: stdin line $bad: key '$key': invalid duration "*"more than 100 years (36525d)" ]]
		done
		ndjson "$n" "$bad" run_at '"0000-01-01"' >"$BATS_TEST_TMPDIR/in.ndjson"
		run --separate-stderr pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/in.ndjson"
		[ "$status" -eq 65 ]
		[[ "$stderr" == "pd-enqueue: stdin line $bad: key 'run_at': invalid instant '0000-01-01': out of range"* ]]
	done
	[ "$(njobs)" -eq 0 ]
	# the maxima themselves are taken, and the time is far off (not "at once")
	run --separate-stderr pd-enqueue --delay 36525d --timeout 36525d t '{}'
	[ "$status" -eq 0 ]
	ndjson 300 250 delay '"36525d"' | pd-enqueue --ndjson >/dev/null
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE run_at > now() + interval '36524 days'")" -eq 2 ]
	[ "$(sql "SELECT extract(epoch FROM timeout)::bigint FROM pendulum.jobs WHERE timeout IS NOT NULL")" -eq 3155760000 ]
}

@test "the SQL functions refuse a bad name with SQLSTATE 22023 naming the field, writing nothing" {
	sqlerr() {
		run --separate-stderr psql -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -d "$PD_DATABASE_URL" -c "$1"
		echo "$1: $status $stderr"
		[ "$status" -ne 0 ]
		[[ "$stderr" == *"ERROR:  22023: $2"* ]]
	}
	sqlerr "SELECT pendulum.enqueue('default', E'a\\x01b', '{}')" 'invalid type: control character U+0001 at character 2'
	sqlerr "SELECT pendulum.enqueue('default', 't', '{}', queue => E'a\\u009bb')" 'invalid queue: control character U+009B at character 2'
	sqlerr "SELECT pendulum.enqueue(E'\\x7f', 't', '{}')" 'invalid tenant: control character U+007F at character 1'
	sqlerr "SELECT pendulum.enqueue('default', 't', '{}', idempotency_key => repeat('k', 201))" 'invalid idempotency_key: 201 bytes, at most 200'
	sqlerr "SELECT pendulum.enqueue_many('[{\"type\": \"t\"}, {\"type\": \"t\", \"queue\": \"a\\u0001\"}]')" 'job 2: invalid queue: control character U+0001 at character 2'
	sqlerr "SELECT pendulum.enqueue_many('[{\"type\": \"t\"}, {\"type\": \"t\"}, {\"type\": \"$LONG\"}]')" 'job 3: invalid type: 201 bytes, at most 200'
	sqlerr "SELECT pendulum.start_workflow('default', E'w\\n')" 'invalid workflow: control character U+000A at character 2'
	sqlerr "SELECT pendulum.start_workflow('default', 'w', queue => E'q\\t')" 'invalid queue: control character U+0009 at character 2'
	sqlerr "SELECT pendulum.outbox_record('default', E'to\\x1fpic', '{}')" 'invalid topic: control character U+001F at character 3'
	sqlerr "SELECT pendulum.outbox_record(E'a\\x01', 'topic', '{}')" 'invalid tenant: control character U+0001 at character 2'
	sqlerr "SELECT pendulum.outbox_record('default', 'topic', '{}', repeat('é', 101))" 'invalid message_key: 202 bytes, at most 200'
	[ "$(njobs)" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.workflow_runs")" -eq 0 ]
	# 200 bytes of multi-byte UTF-8 pass
	[ "$(sql "SELECT count(*) FROM (SELECT pendulum.enqueue('default', repeat('é', 100), '{}')) x")" -eq 1 ]
}

@test "an outbox message recorded without max_attempts gets 25, by the function and by the column" {
	id=$(sql "SELECT pendulum.outbox_record('default', 'orders', '{}')")
	[ "$(sql "SELECT max_attempts FROM pendulum.outbox WHERE id = $id")" -eq 25 ]
	[ "$(sql "INSERT INTO pendulum.outbox (topic, payload) VALUES ('orders', '{}') RETURNING max_attempts")" -eq 25 ]
	id=$(sql "SELECT pendulum.outbox_record('default', 'orders', '{}', max_attempts => 3)")
	[ "$(sql "SELECT max_attempts FROM pendulum.outbox WHERE id = $id")" -eq 3 ]
}

@test "daemon and admin flags and config names: 65 naming the option (78 in a config file), nothing started" {
	while IFS=$'\t' read -r kind v why; do
		run --separate-stderr pd-worker -q "$v" --handler 't=true' --until-idle
		echo "worker -q $kind: $status $stderr"
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-worker: option --queue: invalid name: $why" ]
		run --separate-stderr pd-worker --handler "$v=true" --until-idle
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-worker: option --handler: invalid name: $why" ]
		run --separate-stderr pd-relay --topic "$v" --publish true --once
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-relay: option --topic: invalid name: $why" ]
		run --separate-stderr pd-admin jobs --queue "$v"
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-admin: option --queue: invalid name: $why" ]
		run --separate-stderr pd-admin depth "$v"
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-admin: invalid QUEUE: $why" ]
		run --separate-stderr pd-cron add s --cron '0 0 1 1 *' --tz UTC --type "$v"
		[ "$status" -eq 65 ]
		[ "$stderr" = "pd-cron: invalid job type: $why" ]
		for c in pause history; do
			run --separate-stderr pd-cron "$c" -t "$v" s
			[ "$status" -eq 65 ]
			[ "$stderr" = "pd-cron: invalid tenant (-t): $why" ]
		done
	done < <(bad_names)
	[ "$(sql "SELECT count(*) FROM pendulum.workers")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" -eq 0 ]
	printf 'worker:\n  queues: [default, "a\\x01b"]\n' >"$BATS_TEST_TMPDIR/q.yaml"
	run --separate-stderr pd-worker -c "$BATS_TEST_TMPDIR/q.yaml" --handler 't=true' --until-idle
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"q.yaml"*"a queue name: invalid name: control character U+0001 at byte 2"* ]]
	printf 'handlers:\n  "t\\x7f":\n    run: "true"\n' >"$BATS_TEST_TMPDIR/h.yaml"
	run --separate-stderr pd-worker -c "$BATS_TEST_TMPDIR/h.yaml" --until-idle
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"h.yaml"*"a handler's job type: invalid name: control character U+007F at byte 2"* ]]
	printf 'relay:\n  topics:\n    "\\x85": {run: "true"}\n' >"$BATS_TEST_TMPDIR/r.yaml"
	run --separate-stderr pd-relay -c "$BATS_TEST_TMPDIR/r.yaml" --once
	[ "$status" -eq 78 ]
}

@test "a number jsonb cannot hold and a reason that is not UTF-8 are bad data, 65 not 70" {
	run --separate-stderr pd-enqueue --workflow w '{}'
	[ "$status" -eq 0 ]
	run_id=$output
	# refused while the payload is read, before the database sees it
	run --separate-stderr pd-admin flow signal "$run_id" go '1e200000'
	echo "$status $stderr"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-admin: invalid JSON in PAYLOAD at line 1, column 1: number out of range (PostgreSQL numeric cannot store it)" ]
	# a reason (free text, no name) that is not UTF-8: PostgreSQL's 22021
	run --separate-stderr pd-admin job cancel "$(sql "SELECT job_id FROM pendulum.workflow_runs")" --reason $'\xff'
	echo "$status $stderr"
	[ "$status" -eq 65 ]
	[ "$stderr" = 'pd-admin: database error: invalid byte sequence for encoding "UTF8": 0xff' ]
	[ "$(sql "SELECT state FROM pendulum.jobs")" = PENDING ]
}
