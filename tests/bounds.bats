#!/usr/bin/env bats
# Bounded input: max_payload (pd-enqueue, pd-admin flow signal), pd-enqueue
# --ndjson in bounded memory, handler output kept within its limits, and
# configuration files bounded in size and loaded in linear time.

load helpers
pd_db_hooks

setup() {
	reset_jobs
	CFG=$BATS_TEST_TMPDIR/pendulum.yaml
}

# json_of_size N: a JSON string of exactly N bytes ("xxx...").
json_of_size() {
	awk -v n="$1" 'BEGIN { s = sprintf("%*s", n - 2, ""); gsub(/ /, "x", s); printf "\"%s\"", s }'
}

# peak_kb CMD...: run CMD (stdin and stdout as given), print its peak RSS in KiB on fd 3.
peak_kb() {
	/usr/bin/time -f '%M' -o "$BATS_TEST_TMPDIR/rss" "$@"
}

# plain_bin: where the build without sanitizers is. Memory bounds are measured
# on it: under ASan (make check runs the bats files on build-asan) shadow
# memory and the quarantine of freed blocks add tens of MB that are not ours.
plain_bin() {
	local b=$PD_ROOT/build/bin
	[ -x "$b/pd-enqueue" ] || b=$PD_BIN
	if nm "$b/pd-enqueue" 2>/dev/null | grep -q __asan_init; then
		skip "no build without sanitizers to measure memory on"
	fi
	PLAIN=$b
}

@test "a PAYLOAD argument over max_payload: exit 65 naming its size, the limit and where; no job" {
	run --separate-stderr pd-enqueue --max-payload 1KiB t "$(json_of_size 1025)"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: PAYLOAD: 1025 bytes, over max_payload 1KiB" ]
	[ -z "$output" ]
	[ "$(njobs)" -eq 0 ]
	# exactly the limit is taken
	run pd-enqueue --max-payload 1KiB t "$(json_of_size 1024)"
	[ "$status" -eq 0 ]
	[ "$(njobs)" -eq 1 ]
}

@test "a payload on stdin over max_payload: exit 65; at most the limit plus one byte is read" {
	run --separate-stderr sh -c 'head -c 3000000 /dev/zero | tr "\0" " " | pd-enqueue t'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: payload on stdin: more than 1048576 bytes, over max_payload 1MiB" ]
	[ "$(njobs)" -eq 0 ]
	# an endless stdin is refused too: nothing waits for its end
	run --separate-stderr timeout 20 sh -c 'yes | pd-enqueue --max-payload 64KiB t'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: payload on stdin: more than 65536 bytes, over max_payload 64KiB" ]
}

@test "max_payload from the file; --max-payload overrides it; a bad size is a usage or config error" {
	printf 'max_payload: 100\n' >"$CFG"
	run --separate-stderr pd-enqueue -c "$CFG" t "$(json_of_size 101)"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: PAYLOAD: 101 bytes, over max_payload 100" ]
	run pd-enqueue -c "$CFG" --max-payload 2KiB t "$(json_of_size 101)"
	[ "$status" -eq 0 ]
	run --separate-stderr pd-enqueue --max-payload 1.5MiB t '{}'
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option --max-payload: expected a size such as 512KiB or 1MiB, got '1.5MiB'"* ]]
	printf 'max_payload: lots\n' >"$CFG"
	run --separate-stderr pd-enqueue -c "$CFG" t '{}'
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"pendulum.yaml:1:14: 'max_payload': expected a size such as 512KiB or 1MiB, got 'lots'" ]]
}

@test "--ndjson: a line over max_payload, in the first batch or far into the input: exit 65 naming the line, zero rows" {
	big=$(json_of_size 2000)
	{ seq 1 10 | sed 's/.*/{"n": &}/'; echo "$big"; } >"$BATS_TEST_TMPDIR/a.ndjson"
	run --separate-stderr pd-enqueue --ndjson --max-payload 1KiB t <"$BATS_TEST_TMPDIR/a.ndjson"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: stdin line 11: payload of 2000 bytes, over max_payload 1KiB" ]
	[ "$(njobs)" -eq 0 ]
	# line 50,001 of 50,005: beyond the first batch, so after jobs went in; all rolled back
	{ seq 1 50000 | sed 's/.*/{"type": "t", "payload": {"n": &}}/'
	  echo "{\"type\": \"t\", \"payload\": $big}"
	  seq 1 4 | sed 's/.*/{"type": "t"}/'; } >"$BATS_TEST_TMPDIR/b.ndjson"
	run --separate-stderr pd-enqueue --ndjson --max-payload 1KiB <"$BATS_TEST_TMPDIR/b.ndjson"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: stdin line 50001: payload of 2000 bytes, over max_payload 1KiB" ]
	[ -z "$output" ]
	[ "$(njobs)" -eq 0 ]
	# a line with no end in sight is refused once it passes the limit and the slack
	run --separate-stderr timeout 20 sh -c 'yes | tr -d "\n" | pd-enqueue --ndjson --max-payload 1KiB t'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: stdin line 1: more than 66560 bytes, over max_payload 1KiB" ]
	[ "$(njobs)" -eq 0 ]
}

@test "--ndjson streams: 200,000 lines in bounded memory, ids in input order, one transaction" {
	awk 'BEGIN { for (i = 1; i <= 200000; i++)
		printf "{\"type\": \"t\", \"payload\": {\"n\": %d, \"pad\": \"%0200d\"}}\n", i, i }' \
		>"$BATS_TEST_TMPDIR/in.ndjson"
	plain_bin
	peak_kb "$PLAIN/pd-enqueue" --ndjson <"$BATS_TEST_TMPDIR/in.ndjson" >"$BATS_TEST_TMPDIR/ids"
	# 45 MB of input: reading it all (as before) took over 100 MB
	[ "$(cat "$BATS_TEST_TMPDIR/rss")" -lt 40000 ]
	[ "$(lines "$BATS_TEST_TMPDIR/ids")" -eq 200000 ]
	sql "CREATE TABLE printed (ord serial, id bigint)"
	sql "\\copy printed (id) FROM '$BATS_TEST_TMPDIR/ids'"
	[ "$(sql "SELECT count(*) FROM printed p JOIN pendulum.jobs j ON j.id = p.id
	          WHERE (j.payload->>'n')::int = p.ord")" -eq 200000 ]
	# one transaction: every job has the same created_at (now())
	[ "$(sql "SELECT count(DISTINCT created_at) FROM pendulum.jobs")" -eq 1 ]
	sql "DROP TABLE printed"
}

@test "--ndjson streams through the staging path too: keys across batches resolved, ids in order" {
	awk 'BEGIN { for (i = 1; i <= 45000; i++)
		printf "{\"type\": \"t\", \"idempotency_key\": \"k%d\", \"payload\": {\"n\": %d}}\n", (i - 1) % 40000, i }' \
		>"$BATS_TEST_TMPDIR/in.ndjson"
	run --separate-stderr pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/in.ndjson"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 45000 ]
	[ "$(njobs)" -eq 40000 ]
	# line 40,001 repeats line 1's key (another batch): the same id, and a line on stderr
	[ "${lines[40000]}" = "${lines[0]}" ]
	[ "${lines[44999]}" = "${lines[4999]}" ]
	[ "$(grep -c 'idempotency key already used' <<<"$stderr")" -eq 5000 ]
	[ "$(sql "SELECT payload->>'n' FROM pendulum.jobs WHERE id = ${lines[39999]}")" = 40000 ]
}

@test "pd-admin flow signal: a payload over max_payload is refused, from the argument and from stdin" {
	printf 'max_payload: 1KiB\n' >"$CFG"
	run --separate-stderr pd-admin -c "$CFG" flow signal 1 go "$(json_of_size 2000)"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-admin: PAYLOAD: 2000 bytes, over max_payload 1KiB" ]
	run --separate-stderr sh -c "head -c 5000 /dev/zero | tr '\\0' ' ' | pd-admin -c '$CFG' flow signal 1 go -"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-admin: payload on stdin: more than 1024 bytes, over max_payload 1KiB" ]
}

@test "a handler's output past the limits: stdout truncated and flagged in job show, stderr bounded in the worker" {
	printf 'worker: {result_limit: 1000}\nhandlers:\n  noisy:\n    run: %s\n' \
		"'head -c 30000000 /dev/zero | tr \"\\\\0\" x >&2; seq 1 100000'" >"$CFG"
	printf '  small:\n    run: seq 1 100\n    result_limit: 10\n' >>"$CFG"
	plain_bin
	start_bg w "$PLAIN/pd-worker" -c "$CFG" --lease 2s
	id=$(pd-enqueue noisy '{}')
	small=$(pd-enqueue small '{}')
	wait_for 60 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	wait_for 60 sql_is "SELECT state FROM pendulum.jobs WHERE id = $small" SUCCEEDED
	# a handler's own result_limit over the worker's
	[ "$(sql "SELECT length(result #>> '{}') || ' ' || result_truncated FROM pendulum.jobs WHERE id = $small")" = "10 true" ]
	run pd-admin job show "$id"
	[ "$status" -eq 0 ]
	[[ "$output" =~ result_truncated\ +yes ]]
	[ "$(sql "SELECT length(result #>> '{}') FROM pendulum.jobs WHERE id = $id")" -eq 1000 ]
	[ "$(sql "SELECT length(stderr_tail) FROM pendulum.job_attempts WHERE job_id = $id")" -le 4096 ]
	# 30 MB on stderr without a newline: the worker never held it
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$(bg_pid w)/status")
	[ "$hwm" -lt 25000 ]
	alive "$(bg_pid w)"
}

@test "a configuration of 200,000 handlers loads in linear time" {
	awk 'BEGIN { print "handlers:"; for (i = 0; i < 200000; i++) printf "  job_%d:\n    run: echo %d\n", i, i }' \
		>"$CFG"
	# about 1.5 s of CPU; before, over two minutes
	run timeout 60 pd-enqueue -c "$CFG" job_7 '{}'
	[ "$status" -eq 0 ]
	# a duplicate among them is still found, at its line
	printf '  job_4:\n    run: echo again\n' >>"$CFG"
	run --separate-stderr timeout 60 pd-enqueue -c "$CFG" job_7 '{}'
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"pendulum.yaml:400002:3: duplicate key 'job_4' (first at line 10, column 3)" ]]
}

@test "a workflow of 200,000 steps loads in linear time; a repeated step name is still refused" {
	awk 'BEGIN { print "workflows:\n  big:\n    steps:"; for (i = 0; i < 200000; i++)
		printf "      - name: s%d\n        run: echo %d\n", i, i }' >"$CFG"
	run timeout 30 pd-enqueue -c "$CFG" t '{}'
	[ "$status" -eq 0 ]
	printf '      - name: s99\n        run: echo again\n' >>"$CFG"
	run --separate-stderr timeout 30 pd-enqueue -c "$CFG" t '{}'
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"duplicate step name 's99' (first at line 202, column 15)" ]]
}

@test "a configuration file over 16 MiB: exit 78 naming it and its size" {
	{ echo "handlers:"; head -c 17000000 /dev/zero | tr '\0' '#'; echo; } >"$CFG"
	run --separate-stderr pd-enqueue -c "$CFG" t '{}'
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-enqueue: '$CFG': 17000011 bytes, over the 16 MiB (16777216 bytes) a YAML file may hold" ]
	[ "$(njobs)" -eq 0 ]
}

@test "a stream handler's answer line over its bound fails the job, not the worker" {
	cat >"$BATS_TEST_TMPDIR/h" <<'SH'
#!/bin/sh
while IFS= read -r job; do head -c 20000000 /dev/zero | tr '\0' x; echo; done
SH
	chmod +x "$BATS_TEST_TMPDIR/h"
	printf 'worker: {result_limit: 1000}\nhandlers:\n  s:\n    exec: [%s]\n    mode: stream\n' \
		"$BATS_TEST_TMPDIR/h" >"$CFG"
	start_worker w -c "$CFG" --lease 2s
	id=$(pd-enqueue --max-attempts 1 s '{}')
	wait_for 60 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" DEAD_LETTERED
	alive "$(bg_pid w)"
	[[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $id")" == *"a line longer than 67536 bytes"* ]]
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$(bg_pid w)/status")
	[ "$hwm" -lt 25000 ]
}
