#!/usr/bin/env bats
# pd-enqueue: bad input is refused with nothing written, idempotency keys are
# per tenant, --ndjson is all or nothing and fast, --wait reports the
# handler's result (alone on stdout) and status, listening for the job's end,
# and gives up at --wait-timeout.

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

@test "an invalid JSON payload: exit 65 naming line and column, nothing enqueued" {
	run --separate-stderr pd-enqueue t '{"a" 1}'
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[ "$stderr" = "pd-enqueue: invalid JSON in PAYLOAD at line 1, column 6: expected ':'" ]
	[ "$(njobs)" -eq 0 ]
}

@test "an invalid JSON payload on stdin: the line and column are the ones in the input" {
	run --separate-stderr pd-enqueue t < <(printf '{\n  "a": 1,\n  "b" 2\n}\n')
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[[ "$stderr" == "pd-enqueue: invalid JSON in stdin at line 3, column 7: "* ]]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	[ "$(njobs)" -eq 0 ]
	# a truncated document and trailing garbage are refused too
	run --separate-stderr pd-enqueue t '{"a": [1, 2'
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"line 1, column "* ]]
	run --separate-stderr pd-enqueue t '{"a": 1} x'
	[ "$status" -eq 65 ]
	[ "$(njobs)" -eq 0 ]
}

@test "a bad NDJSON line N among good ones: exit 65 naming line N, zero rows" {
	run --separate-stderr pd-enqueue --ndjson < <(printf '%s\n' \
		'{"type": "t", "payload": {"n": 1}}' \
		'{"type": "t"}' \
		'' \
		'{"type": "t", "payload": {"n": 4},' \
		'{"type": "t"}')
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[[ "$stderr" == "pd-enqueue: invalid JSON on stdin line 4, column "* ]]
	[ "$(njobs)" -eq 0 ]
	# with TYPE given, every line is a payload: line 2 is bad
	run --separate-stderr pd-enqueue --ndjson t < <(printf '{"a": 1}\n[1, 2\n{"a": 3}\n')
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-enqueue: invalid JSON on stdin line 2, column "* ]]
	[ "$(njobs)" -eq 0 ]
}

@test "a bad NDJSON line far into a second batch: nothing of the first batch stays" {
	# line 5500 parses as JSON but PostgreSQL refuses the number: the
	# failure comes from the database after the first 5000 were inserted
	awk 'BEGIN { for (i = 1; i <= 6000; i++) print (i == 5500 ? "{\"x\": 1e200000}" : "{\"i\": " i "}") }' \
		>"$BATS_TEST_TMPDIR/in.ndjson"
	run --separate-stderr pd-enqueue --ndjson t <"$BATS_TEST_TMPDIR/in.ndjson"
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[ "$(njobs)" -eq 0 ]
}

@test "an unknown NDJSON key: exit 65 naming the key and the line, zero rows" {
	run --separate-stderr pd-enqueue --ndjson < <(printf '%s\n' \
		'{"type": "t", "payload": {}}' \
		'{"type": "t", "payloda": {}}')
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: stdin line 2: unknown key 'payloda'" ]
	[ "$(njobs)" -eq 0 ]
	# a line that is not an object, and one without a type
	run --separate-stderr pd-enqueue --ndjson < <(printf '[1]\n')
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-enqueue: stdin line 1: "* ]]
	run --separate-stderr pd-enqueue --ndjson < <(printf '{"payload": {}}\n')
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"stdin line 1: missing key 'type'"* ]]
	[ "$(njobs)" -eq 0 ]
}

@test "bad --priority, --delay, --run-at values: exit 64 naming the value, nothing enqueued" {
	for p in urgent 1x '' 2.5 99999999999; do
		run --separate-stderr pd-enqueue -p "$p" t '{}'
		[ "$status" -eq 64 ] || { echo "-p '$p': status $status"; return 1; }
		[[ "$stderr" == "pd-enqueue: invalid priority '$p'"* ]] || { echo "$stderr"; return 1; }
		[[ "$stderr" == *"Try 'pd-enqueue --help'"* ]]
	done
	for d in '5 minutes' -1s abc 1y '' 5m-; do
		run --separate-stderr pd-enqueue --delay "$d" t '{}'
		[ "$status" -eq 64 ] || { echo "--delay '$d': status $status"; return 1; }
		[[ "$stderr" == *"--delay"*"'$d'"* ]] || { echo "$stderr"; return 1; }
	done
	for when in tomorrow 2024-13-01T00:00:00Z 2024-02-30T00:00:00Z '' 2024-01-01T25:00:00Z; do
		run --separate-stderr pd-enqueue --run-at "$when" t '{}'
		[ "$status" -eq 64 ] || { echo "--run-at '$when': status $status"; return 1; }
		[[ "$stderr" == "pd-enqueue: invalid instant '$when'"* ]] || { echo "$stderr"; return 1; }
	done
	run --separate-stderr pd-enqueue --run-at 2030-01-01T00:00:00Z --delay 5s t '{}'
	[ "$status" -eq 64 ]
	[ "$(njobs)" -eq 0 ]
}

@test "priority names and numbers are stored as integers, higher first" {
	for p in low normal high 7 -3; do
		pd-enqueue -p "$p" t '{}' >/dev/null
	done
	[ "$(sql "SELECT string_agg(priority::text, ' ' ORDER BY id) FROM pendulum.jobs WHERE priority IN (0, 7, -3)")" = "0 7 -3" ]
	[ "$(sql "SELECT (array_agg(priority ORDER BY id))[1] < 0 AND (array_agg(priority ORDER BY id))[3] > 0
	            FROM pendulum.jobs")" = t ]
}

@test "idempotency keys are per tenant: same tenant returns the first id with a note" {
	run --separate-stderr pd-enqueue -t acme -k order-1 t '{"v": 1}'
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	first=$output
	[[ "$first" =~ ^[0-9]+$ ]]
	run --separate-stderr pd-enqueue -t acme -k order-1 t '{"v": 2}'
	[ "$status" -eq 0 ]
	[ "$output" = "$first" ]
	[ "$stderr" = "pd-enqueue: idempotency key already used in tenant 'acme': existing job $first" ]
	run --separate-stderr pd-enqueue -t other -k order-1 t '{"v": 3}'
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$output" != "$first" ]
	second=$output
	# the default tenant is a third one
	run --separate-stderr pd-enqueue -k order-1 t '{"v": 4}'
	[ "$status" -eq 0 ]
	[ "$output" != "$first" ]
	[ "$output" != "$second" ]
	[ "$(njobs)" -eq 3 ]
	# the first payload stands
	[ "$(sql "SELECT payload->>'v' FROM pendulum.jobs WHERE id = $first")" = 1 ]
	[ "$(sql "SELECT tenant_id || ':' || idempotency_key FROM pendulum.jobs WHERE id = $second")" = other:order-1 ]
}

@test "idempotency keys in NDJSON: a repeat inside one input and across inputs" {
	run --separate-stderr pd-enqueue --ndjson < <(printf '%s\n' \
		'{"type": "t", "tenant": "a", "idempotency_key": "k1"}' \
		'{"type": "t", "tenant": "b", "idempotency_key": "k1"}' \
		'{"type": "t", "tenant": "a", "idempotency_key": "k2"}')
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 3 ]
	a_k1=${lines[0]}
	run --separate-stderr pd-enqueue --ndjson < <(printf '%s\n' \
		'{"type": "t", "tenant": "a", "idempotency_key": "k1"}' \
		'{"type": "t", "tenant": "c", "idempotency_key": "k1"}')
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$a_k1" ]
	[[ "$stderr" == *"existing job $a_k1"* ]]
	[ "$(njobs)" -eq 4 ]
}

@test "--ndjson of 10000 lines: all enqueued, each line its own job, in input order" {
	awk 'BEGIN { for (i = 1; i <= 10000; i++) printf "{\"type\": \"bulk\", \"payload\": {\"i\": %d}, \"priority\": %d}\n", i, i % 3 }' \
		>"$BATS_TEST_TMPDIR/in.ndjson"
	# How fast is make bench's "enqueue --ndjson" figure.
	run --separate-stderr timeout 300 pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/in.ndjson"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 10000 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 10000 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'bulk' AND state = 'PENDING'")" -eq 10000 ]
	# every line became its own job, with its own payload, in input order
	[ "$(sql "SELECT count(DISTINCT payload->>'i') FROM pendulum.jobs")" -eq 10000 ]
	[ "$(sql "SELECT bool_and((payload->>'i')::int % 3 = priority) FROM pendulum.jobs")" = t ]
	[ "$(sql "SELECT payload->>'i' FROM pendulum.jobs WHERE id = ${lines[9999]}")" = 10000 ]
}

@test "--wait: exit 0 and only the handler's result on stdout, as compact JSON" {
	start_worker w --handler 'echo=cat' --handler 'text=printf "hello\nworld\n"' --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue --wait echo '{"x": [1, "a"], "y": null}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"x":[1,"a"],"y":null}' ]
	[ -z "$stderr" ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE job_type = 'echo'")" = SUCCEEDED ]
	# a result that is not JSON comes back as the text the handler printed
	run --separate-stderr timeout 60 pd-enqueue --wait text '{}'
	[ "$status" -eq 0 ]
	[ "$output" = $'hello\nworld' ]
}

@test "--wait in a pipeline: out=\$(...) is the result alone, jq reads it" {
	start_worker w --handler 'echo=cat' --poll 200ms
	out=$(timeout 60 pd-enqueue --wait echo '{"a":1}')
	[ "$out" = '{"a":1}' ]
	run --separate-stderr bash -c "set -o pipefail; timeout 60 pd-enqueue --wait echo '{\"a\":1}' | jq .a"
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
}

@test "--wait --print-id: the id on stderr first, the result on stdout" {
	start_worker w --handler 'echo=cat' --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue --wait --print-id echo '{"a": 2}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"a":2}' ]
	[[ "$stderr" =~ ^[0-9]+$ ]]
	[ "$(job_state "$stderr")" = SUCCEEDED ]
	run --separate-stderr pd-enqueue --print-id echo '{}'
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--print-id applies to --wait only"* ]]
	run --separate-stderr pd-enqueue --wait-timeout 1s echo '{}'
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--wait-timeout applies to --wait only"* ]]
}

@test "a job marked by pendulum.wait_job notifies pendulum_done with its id when it ends" {
	id=$(pd-enqueue --delay 1h t '{}')
	other=$(pd-enqueue --delay 1h t '{}')
	[ "$(sql "SELECT pendulum.wait_job($id)")" = PENDING ]
	run --separate-stderr psql -X -q -At -d "$PD_DATABASE_URL" -c "LISTEN pendulum_done" \
		-c "UPDATE pendulum.jobs SET state = 'CANCELLED', finished_at = now() WHERE id IN ($id, $other)" \
		-c "SELECT 1"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -c 'notification "pendulum_done"')" -eq 1 ]
	[[ "$output" == *"notification \"pendulum_done\" with payload \"$id\" received"* ]]
	[ "$(sql "SELECT pendulum.wait_job(0) IS NULL")" = t ]
}

@test "--wait marks its job when it enqueues it; a job nobody waits for is not marked" {
	start_worker w --handler 'echo=cat' --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue --wait --print-id echo '{}'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT notify_done FROM pendulum.jobs WHERE id = $stderr")" = t ]
	id=$(pd-enqueue echo '{}')
	[ "$(sql "SELECT notify_done FROM pendulum.jobs WHERE id = $id")" = f ]
}

@test "--wait-timeout: exit 124 and a line on stderr; the job stays queued" {
	run --separate-stderr timeout 60 pd-enqueue --wait --wait-timeout 300ms nobody '{}'
	[ "$status" -eq 124 ]
	[ -z "$output" ]
	[[ "$stderr" == "pd-enqueue: job "*" still PENDING after 300ms: no longer waiting; it stays queued" ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'nobody' AND state = 'PENDING'")" = 1 ]
	run --separate-stderr pd-enqueue --wait --wait-timeout 0 nobody '{}'
	[ "$status" -eq 64 ]
	run --separate-stderr pd-enqueue --wait --wait-timeout soon nobody '{}'
	[ "$status" -eq 64 ]
}

@test "--wait warns once on stderr when no live worker serves the type" {
	start_worker w --handler 'billing=cat' --poll 200ms
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.live_workers" 1
	# The question is asked at the first read 3 s into the wait (the stop is
	# checked after each read): 8 s leave a read 5 s to come back.
	run --separate-stderr timeout 60 pd-enqueue --wait --wait-timeout 8s biling '{}'
	[ "$status" -eq 124 ]
	[ "$(printf '%s\n' "$stderr" | grep -c warning)" -eq 1 ]
	[[ "$stderr" == *"pd-enqueue: warning: job "*" waits, but no live worker serves type 'biling' in queue 'default'"* ]]
	# a served type: no warning
	run --separate-stderr timeout 60 pd-enqueue --wait billing '{}'
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "--wait on a handler that exits 65: exit 65 and the reason on stderr" {
	start_worker w --handler 'bad=echo "no such customer" >&2; exit 65' \
		--handler 'three=exit 3' --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue --wait bad '{}'
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	id=$(sql "SELECT id FROM pendulum.jobs WHERE job_type = 'bad'")
	[[ "$stderr" == "pd-enqueue: job $id dead-lettered: "* ]]
	[[ "$stderr" == *"terminal exit code"* ]]
	[[ "$stderr" == *"exit 65"* ]]
	[ "$(job_state "$id")" = DEAD_LETTERED ]
	# a retryable code, once the budget is spent: that code
	run --separate-stderr timeout 60 pd-enqueue --wait --max-attempts 1 three '{}'
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"dead-lettered"*"attempts exhausted"* ]]
}
