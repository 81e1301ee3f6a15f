#!/usr/bin/env bats
# The handler contract: how an exit is classified (succeed, retry, dead-letter,
# timeout), what the handler is given (stdin, PD_* environment) and what is
# kept (result, stderr tail).

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
	# fast retries: backoff at most 50 ms
	CFG=$BATS_TEST_TMPDIR/pd.yaml
	printf 'retry: {base: 10ms, cap: 50ms}\n' >"$CFG"
}

# worker ARGS...: one background worker with fast retries and polling.
worker() {
	start_worker w -c "$CFG" -j 2 --poll 200ms "$@"
}

# wait_final ID: wait until the job has ended (SUCCEEDED or DEAD_LETTERED).
wait_final() {
	wait_for 60 sql_is "SELECT state IN ('SUCCEEDED', 'DEAD_LETTERED') FROM pendulum.jobs WHERE id = $1" t
}

# attempts ID: "attempt:outcome:exit_code:signal ..." in order.
attempts() {
	sql "SELECT string_agg(attempt || ':' || coalesce(outcome, '-') || ':' || coalesce(exit_code::text, '-')
	     || ':' || coalesce(signal::text, '-'), ' ' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $1"
}

@test "exit 0 succeeds on the first attempt" {
	worker --handler "t=$(counting_handler "$LOG" 'exit 0')"
	id=$(pd-enqueue t '{}')
	wait_final "$id"
	# the lease is over; lease_owner names the worker that ran it (sql/008)
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || (last_error IS NULL) || ' ' || (dead_reason IS NULL)
	          || ' ' || (finished_at IS NOT NULL) || ' ' || (lease_expires_at IS NULL) FROM pendulum.jobs WHERE id = $id")" = \
		"SUCCEEDED 1 true true true true" ]
	[ "$(sql "SELECT lease_owner FROM pendulum.jobs WHERE id = $id")" = "$(worker_id w)" ]
	[ "$(attempts "$id")" = "1:succeeded:0:-" ]
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "exit 65 and exit 64 dead-letter on attempt 1" {
	worker --handler "data=$(counting_handler "$LOG" 'exit 65')" --handler "usage=$(counting_handler "$LOG" 'exit 64')"
	id=$(pd-enqueue --max-attempts 5 data '{}')
	id2=$(pd-enqueue --max-attempts 5 usage '{}')
	wait_final "$id"
	wait_final "$id2"
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || dead_reason || ' / ' || last_error
	          FROM pendulum.jobs WHERE id = $id")" = "DEAD_LETTERED 1 terminal exit code / exit 65" ]
	[ "$(attempts "$id")" = "1:terminal:65:-" ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $id2")" = "DEAD_LETTERED 1" ]
	[ "$(attempts "$id2")" = "1:terminal:64:-" ]
	[ "$(lines "$LOG")" -eq 2 ]
}

@test "exit 1 retries through the whole budget, then dead-letters: attempts exhausted" {
	worker --handler "t=$(counting_handler "$LOG" 'echo "attempt $PD_ATTEMPT of $PD_MAX_ATTEMPTS" >&2; exit 1')"
	id=$(pd-enqueue --max-attempts 3 t '{}')
	wait_final "$id"
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || dead_reason || ' / ' || last_error
	          FROM pendulum.jobs WHERE id = $id")" = "DEAD_LETTERED 3 attempts exhausted / exit 1" ]
	[ "$(attempts "$id")" = "1:failed:1:- 2:failed:1:- 3:failed:1:-" ]
	[ "$(sql "SELECT string_agg(stderr_tail, '' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $id")" = \
		"$(printf 'attempt 1 of 3\nattempt 2 of 3\nattempt 3 of 3\n')" ]
	[ "$(lines "$LOG")" -eq 3 ]
	# nothing more happens to it: the worker claims and runs a later job, not it
	next=$(pd-enqueue --max-attempts 1 t '{}')
	wait_final "$next"
	[ "$(lines "$LOG")" -eq 4 ]
	[ "$(grep -c "^$id " "$LOG")" -eq 3 ]
	[ "$(sql "SELECT attempt FROM pendulum.jobs WHERE id = $id")" -eq 3 ]
}

@test "a failure followed by success: the job succeeds on attempt 2, last_error cleared" {
	marker=$BATS_TEST_TMPDIR/failed-once
	worker --handler "t=$(counting_handler "$LOG" "if [ -e '$marker' ]; then echo '{\"ok\": 1}'; else touch '$marker'; exit 7; fi")"
	id=$(pd-enqueue t '{}')
	wait_final "$id"
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || (last_error IS NULL) || ' ' || result::text
	          FROM pendulum.jobs WHERE id = $id")" = 'SUCCEEDED 2 true {"ok": 1}' ]
	[ "$(attempts "$id")" = "1:failed:7:- 2:succeeded:0:-" ]
}

@test "a handler killed by a signal is retried, the signal recorded" {
	worker --handler "t=$(counting_handler "$LOG" 'kill -KILL $$')"
	id=$(pd-enqueue --max-attempts 2 t '{}')
	wait_final "$id"
	[ "$(attempts "$id")" = "1:failed:-:9 2:failed:-:9" ]
	[ "$(sql "SELECT state || ' ' || dead_reason FROM pendulum.jobs WHERE id = $id")" = "DEAD_LETTERED attempts exhausted" ]
	[[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $id")" == *"signal 9"* ]]
}

@test "a timeout (--timeout 300ms on sleep 30) is retried with outcome timeout, the handler stopped" {
	pids=$BATS_TEST_TMPDIR/pids
	worker --handler "t=$(counting_handler "$LOG" "echo \$\$ >>'$pids'; exec sleep 30")"
	id=$(pd-enqueue --timeout 300ms --max-attempts 2 t '{}')
	wait_final "$id"
	[ "$(sql "SELECT string_agg(outcome, ' ' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $id")" = "timeout timeout" ]
	[ "$(sql "SELECT state || ' ' || dead_reason FROM pendulum.jobs WHERE id = $id")" = "DEAD_LETTERED attempts exhausted" ]
	[[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $id")" == "timeout"* ]]
	# each attempt was cut at about 300 ms, not 30 s
	[ "$(sql "SELECT bool_and(finished_at - started_at < interval '5 s') FROM pendulum.job_attempts WHERE job_id = $id")" = t ]
	while read -r pid; do
		wait_for 10 eval "! alive $pid"
	done <"$pids"
	[ "$(lines "$LOG")" -eq 2 ]
}

@test "a handler that ignores SIGTERM on timeout is killed after the grace period" {
	printf 'retry: {base: 10ms, cap: 50ms}\nworker: {kill_grace: 200ms}\n' >"$CFG"
	worker --handler "t=$(counting_handler "$LOG" "trap '' TERM; sleep 30")"
	id=$(pd-enqueue --timeout 300ms --max-attempts 1 t '{}')
	wait_final "$id"
	[ "$(attempts "$id")" = "1:timeout:-:9" ]
	[ "$(sql "SELECT finished_at - started_at < interval '5 s' FROM pendulum.job_attempts WHERE job_id = $id")" = t ]
}

@test "a timeout from the handler's config applies when the job sets none" {
	printf 'retry: {base: 10ms, cap: 50ms}\nhandlers:\n  slow: {run: "sleep 30", timeout: 300ms}\n' >"$CFG"
	worker
	id=$(pd-enqueue --max-attempts 1 slow '{}')
	wait_final "$id"
	[ "$(sql "SELECT string_agg(outcome, ' ') FROM pendulum.job_attempts WHERE job_id = $id")" = timeout ]
}

@test "a configured terminal exit code dead-letters at once; other codes still retry" {
	printf 'retry: {base: 10ms, cap: 50ms}\nhandlers:\n  t: {run: "exit 3", terminal_exit_codes: [3]}\n  u: {run: "exit 4", terminal_exit_codes: [3]}\n' >"$CFG"
	worker
	id=$(pd-enqueue --max-attempts 5 t '{}')
	id2=$(pd-enqueue --max-attempts 2 u '{}')
	wait_final "$id"
	wait_final "$id2"
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || dead_reason FROM pendulum.jobs WHERE id = $id")" = \
		"DEAD_LETTERED 1 terminal exit code" ]
	[ "$(attempts "$id")" = "1:terminal:3:-" ]
	[ "$(attempts "$id2")" = "1:failed:4:- 2:failed:4:-" ]
}

# prog NAME [BODY]: an executable shell script in the test's directory; prints its path.
prog() {
	local p=$BATS_TEST_TMPDIR/$1
	printf '#!/bin/sh\n%s\n' "${2:-cat}" >"$p"
	chmod +x "$p"
	echo "$p"
}

# dead_why ID: "state attempt outcome(s) / dead_reason" of a finished job.
dead_why() {
	sql "SELECT j.state || ' ' || j.attempt || ' ' || (SELECT string_agg(outcome, ',' ORDER BY attempt)
	     FROM pendulum.job_attempts WHERE job_id = j.id) || ' / ' || j.dead_reason FROM pendulum.jobs j WHERE id = $1"
}

@test "pd-worker refuses an --exec program that is missing or not executable: exit 78 naming it" {
	run --separate-stderr pd-worker --exec t=/nonexistent --until-idle
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-worker: handler 't': cannot run /nonexistent: No such file or directory" ]
	p=$(prog noexec)
	chmod -x "$p"
	run --separate-stderr pd-worker --stream-exec "t=$p" --until-idle
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-worker: handler 't': cannot run $p: Permission denied" ]
	printf 'handlers:\n  t: {exec: [%s]}\n' "$BATS_TEST_TMPDIR/gone" >"$CFG"
	run --separate-stderr pd-worker -c "$CFG" --until-idle
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-worker: handler 't': cannot run $BATS_TEST_TMPDIR/gone: No such file or directory" ]
	[ "$(njobs)" -eq 0 ]
}

@test "an --exec program that disappears after start-up dead-letters its job on attempt 1, naming the path" {
	p=$(prog vanishing)
	worker --exec "t=$p"
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.workers WHERE pid = $(bg_pid w)" 1
	rm "$p"
	id=$(pd-enqueue --max-attempts 5 t '{}')
	wait_final "$id"
	[ "$(dead_why "$id")" = "DEAD_LETTERED 1 could_not_start / cannot run $p: No such file or directory" ]
	[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $id")" = "cannot run $p: No such file or directory" ]
}

@test "a program no longer executable, or not a valid executable, dead-letters on attempt 1" {
	p=$(prog perm)
	q=$(prog badformat)
	worker --exec "p=$p" --exec "q=$q"
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.workers WHERE pid = $(bg_pid w)" 1
	chmod -x "$p"
	printf 'not a program\n' >"$q" # no #! line: the kernel says ENOEXEC
	id=$(pd-enqueue --max-attempts 5 p '{}')
	id2=$(pd-enqueue --max-attempts 5 q '{}')
	wait_final "$id"
	wait_final "$id2"
	[ "$(dead_why "$id")" = "DEAD_LETTERED 1 could_not_start / cannot run $p: Permission denied" ]
	[ "$(dead_why "$id2")" = "DEAD_LETTERED 1 could_not_start / cannot run $q: Exec format error" ]
}

@test "a shell command sh cannot find (127) or execute (126) dead-letters on attempt 1 with sh's words" {
	p=$(prog gone)
	q=$(prog noexec)
	chmod -x "$q"
	rm "$p"
	worker --handler "p=$p" --handler "q=$q"
	id=$(pd-enqueue --max-attempts 5 p '{}')
	id2=$(pd-enqueue --max-attempts 5 q '{}')
	wait_final "$id"
	wait_final "$id2"
	[[ "$(dead_why "$id")" == "DEAD_LETTERED 1 could_not_start / command not found (exit 127): "*"$p"* ]]
	[[ "$(dead_why "$id2")" == "DEAD_LETTERED 1 could_not_start / command not executable (exit 126): "*"$q"* ]]
	[ "$(attempts "$id")" = "1:could_not_start:127:-" ]
}

@test "a stream handler whose program disappeared dead-letters the job given to it" {
	p=$(prog stream 'while read -r l; do id=${l#*\"id\":}; echo "{\"id\":${id%%,*},\"result\":1}"; done')
	worker --stream-exec "t=$p"
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.workers WHERE pid = $(bg_pid w)" 1
	rm "$p"
	id=$(pd-enqueue --max-attempts 5 t '{}')
	wait_final "$id"
	[ "$(dead_why "$id")" = "DEAD_LETTERED 1 could_not_start / cannot run $p: No such file or directory" ]
}

@test "a job type with no handler on this worker is left alone: PENDING, attempt 0" {
	worker --handler "t=$(counting_handler "$LOG")"
	other=$(pd-enqueue other '{}')
	id=$(pd-enqueue t '{}')
	wait_final "$id"
	# a few more poll rounds
	id3=$(pd-enqueue t '{}')
	wait_final "$id3"
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || (lease_token IS NULL) FROM pendulum.jobs WHERE id = $other")" = \
		"PENDING 0 true" ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $other")" -eq 0 ]
	[ "$(lines "$LOG")" -eq 2 ]
}

@test "the handler gets the payload on stdin exactly, and every PD_* variable" {
	out=$BATS_TEST_TMPDIR/out
	mkdir "$out"
	# stale values in the worker's own environment must not leak through
	PD_JOB_ID=stale PD_IDEMPOTENCY_KEY=stale TRACEPARENT=stale PD_NOT_OURS=kept \
		worker --handler "t=cat >'$out/stdin.'\"\$PD_JOB_ID\"; env >'$out/env.'\"\$PD_JOB_ID\""
	payload='{"text": "h\u00e9llo \"w\" \\ \n", "emoji": "😀", "n": [1, 2.5, -3e2], "nested": {"a": null, "b": true}, "empty": {}}'
	tp=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	id=$(pd-enqueue -t acme -q default -k key-1 --max-attempts 7 --traceparent "$tp" t "$payload")
	# a second job with no key and no trace context
	id2=$(env -u TRACEPARENT pd-enqueue t '{}')
	wait_final "$id"
	wait_final "$id2"
	# stdin: the stored payload, byte for byte, and the same JSON as given
	[ "$(cat "$out/stdin.$id")" = "$(sql "SELECT payload::text FROM pendulum.jobs WHERE id = $id")" ]
	[ "$(jq -cS . "$out/stdin.$id")" = "$(printf '%s' "$payload" | jq -cS .)" ]
	[ "$(cat "$out/stdin.$id2")" = "{}" ]
	env_of() {
		grep -E '^(PD_(JOB_ID|JOB_TYPE|QUEUE|TENANT|ATTEMPT|MAX_ATTEMPTS|LEASE_TOKEN|RUN_AT|IDEMPOTENCY_KEY|REPLAY_COUNT|NOT_OURS)|TRACEPARENT)=' \
			"$out/env.$1" | sort
	}
	expected=$(sql "SELECT 'PD_ATTEMPT=1' UNION ALL
		SELECT 'PD_IDEMPOTENCY_KEY=key-1' UNION ALL
		SELECT 'PD_JOB_ID=' || id FROM pendulum.jobs WHERE id = $id UNION ALL
		SELECT 'PD_JOB_TYPE=t' UNION ALL
		SELECT 'PD_LEASE_TOKEN=' || lease_token FROM pendulum.jobs WHERE id = $id UNION ALL
		SELECT 'PD_MAX_ATTEMPTS=7' UNION ALL
		SELECT 'PD_NOT_OURS=kept' UNION ALL
		SELECT 'PD_QUEUE=default' UNION ALL
		SELECT 'PD_REPLAY_COUNT=0' UNION ALL
		SELECT 'PD_RUN_AT=' || to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')
		  FROM pendulum.jobs WHERE id = $id UNION ALL
		SELECT 'PD_TENANT=acme' UNION ALL
		SELECT 'TRACEPARENT=$tp'" | sort)
	[ "$(env_of "$id")" = "$expected" ] || { diff <(env_of "$id") <(echo "$expected"); return 1; }
	# no key, no trace context: those variables are absent, not stale
	[ "$(env_of "$id2" | grep -cE '^(PD_IDEMPOTENCY_KEY|TRACEPARENT)=')" -eq 0 ]
	[ "$(env_of "$id2" | grep -c "^PD_JOB_ID=$id2\$")" -eq 1 ]
	[ "$(env_of "$id2" | grep -c '^PD_TENANT=default$')" -eq 1 ]
	# PD_RUN_AT is an ISO 8601 instant a program can parse back to run_at
	run_at=$(grep '^PD_RUN_AT=' "$out/env.$id" | cut -d= -f2)
	[ "$(sql "SELECT '$run_at'::timestamptz = run_at FROM pendulum.jobs WHERE id = $id")" = t ]
}

@test "the handler's attempt number and replay count follow the job" {
	worker --handler "t=$(counting_handler "$LOG" 'echo "$PD_ATTEMPT/$PD_MAX_ATTEMPTS" >&2; [ "$PD_ATTEMPT" -ge 3 ] || exit 1; echo "\"$PD_ATTEMPT\""')"
	id=$(pd-enqueue --max-attempts 4 t '{}')
	wait_final "$id"
	[ "$(sql "SELECT state || ' ' || result::text FROM pendulum.jobs WHERE id = $id")" = 'SUCCEEDED "3"' ]
	[ "$(sql "SELECT string_agg(stderr_tail, '' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $id")" = \
		"$(printf '1/4\n2/4\n3/4\n')" ]
}

@test "stdout that is JSON is stored as JSON; anything else as a JSON string; none as NULL" {
	worker --handler 'json=printf "{\"ok\": true, \"n\": [1, 2]}\n"' \
		--handler 'text=printf "hello\nworld \"q\""' \
		--handler 'num=echo 42' \
		--handler 'none=true' \
		--handler 'bad=printf "{\"ok\": tru"'
	j=$(pd-enqueue json '{}')
	t=$(pd-enqueue text '{}')
	n=$(pd-enqueue num '{}')
	z=$(pd-enqueue none '{}')
	b=$(pd-enqueue bad '{}')
	for id in $j $t $n $z $b; do wait_final "$id"; done
	[ "$(sql "SELECT result = '{\"ok\": true, \"n\": [1, 2]}'::jsonb AND NOT result_is_text FROM pendulum.jobs WHERE id = $j")" = t ]
	[ "$(sql "SELECT jsonb_typeof(result) || ' ' || result_is_text FROM pendulum.jobs WHERE id = $t")" = "string true" ]
	[ "$(sql "SELECT result #>> '{}' FROM pendulum.jobs WHERE id = $t")" = "$(printf 'hello\nworld "q"')" ]
	[ "$(sql "SELECT result::text || ' ' || result_is_text FROM pendulum.jobs WHERE id = $n")" = "42 false" ]
	[ "$(sql "SELECT state || ' ' || (result IS NULL) FROM pendulum.jobs WHERE id = $z")" = "SUCCEEDED true" ]
	[ "$(sql "SELECT (result #>> '{}') || ' ' || result_is_text FROM pendulum.jobs WHERE id = $b")" = '{"ok": tru true' ]
}

@test "the tail of stderr is stored with the attempt, and forwarded to the log with the job id" {
	worker --handler 'few=printf "one\ntwo\nthree\n" >&2; exit 1' \
		--handler 'many=seq 1 20000 >&2; exit 2'
	id=$(pd-enqueue --max-attempts 1 few '{}')
	id2=$(pd-enqueue --max-attempts 1 many '{}')
	wait_final "$id"
	wait_final "$id2"
	[ "$(sql "SELECT stderr_tail FROM pendulum.job_attempts WHERE job_id = $id")" = "$(printf 'one\ntwo\nthree')" ]
	# the last 4 KiB, ending with the last line
	[ "$(sql "SELECT length(stderr_tail) BETWEEN 4000 AND 4096 FROM pendulum.job_attempts WHERE job_id = $id2")" = t ]
	[ "$(sql "SELECT right(stderr_tail, 12) = E'19999\\n20000\\n' FROM pendulum.job_attempts WHERE job_id = $id2")" = t ]
	grep -q "job=$id .*line=two" "$BATS_FILE_TMPDIR/w.log"
	grep -q "job=$id2 .*line=20000" "$BATS_FILE_TMPDIR/w.log"
}

@test "stdout beyond the result limit is truncated and flagged" {
	printf 'retry: {base: 10ms, cap: 50ms}\nworker: {result_limit: 100}\n' >"$CFG"
	worker --handler 'big=seq 1 1000' --handler 'fits=printf "[1, 2]"'
	id=$(pd-enqueue big '{}')
	id2=$(pd-enqueue fits '{}')
	wait_final "$id"
	wait_final "$id2"
	[ "$(sql "SELECT state || ' ' || result_truncated || ' ' || result_is_text || ' ' || length(result #>> '{}')
	          FROM pendulum.jobs WHERE id = $id")" = "SUCCEEDED true true 100" ]
	[ "$(sql "SELECT left(result #>> '{}', 6) = E'1\\n2\\n3\\n' FROM pendulum.jobs WHERE id = $id")" = t ]
	[ "$(sql "SELECT result::text || ' ' || result_truncated FROM pendulum.jobs WHERE id = $id2")" = "[1, 2] false" ]
}
