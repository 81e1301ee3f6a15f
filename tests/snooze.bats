#!/usr/bin/env bats
# Snooze (pendulum(7), pd-worker(1)): a handler exiting 75 (EX_TEMPFAIL)
# with `snooze DURATION` or {"snooze":"DURATION"} as its last stdout line,
# or a stream handler's {"id":…,"snooze":"DURATION"}, puts its job back
# PENDING for that long without using an attempt, recorded as `snoozed`;
# max_snoozes caps it; exit 75 without a snooze line is a retry as before;
# a bad duration is a retryable failure naming the line.

# Handler scripts are single-quoted on purpose: they expand their own variables.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	T_DIR=$BATS_TEST_TMPDIR
	export T_DIR
	CFG=$BATS_TEST_TMPDIR/pd.yaml
	printf 'retry: {base: 0, cap: 0}\n' >"$CFG"
}

# handler FILE: write a handler script from stdin to FILE, executable.
handler() {
	cat >"$1"
	chmod +x "$1"
}

# gap_ok ID N MS: the job's attempt N (by start) started MS ms or more after
# attempt N-1 finished (pendulum.job_attempts).
gap_ok() {
	sql_is "SELECT extract(epoch FROM b.started_at - a.finished_at) * 1000 >= $3
	        FROM (SELECT started_at, finished_at, row_number() OVER (ORDER BY started_at) AS n
	              FROM pendulum.job_attempts WHERE job_id = $1) a
	        JOIN (SELECT started_at, row_number() OVER (ORDER BY started_at) AS n
	              FROM pendulum.job_attempts WHERE job_id = $1) b ON b.n = a.n + 1
	        WHERE b.n = $2" t
}

@test "a handler snoozing twice, then succeeding: attempt 1, two snoozed rows, each 1s apart at least" {
	handler "$T_DIR/h" <<'EOF'
#!/bin/sh
n=$(($(cat "$T_DIR/runs" 2>/dev/null || echo 0) + 1))
echo "$n" >"$T_DIR/runs"
case $n in
1) echo 'working'; echo 'snooze 1s'; exit 75 ;;
2) echo '{"snooze": "1s"}'; exit 75 ;;
esac
echo '{"done": true}'
EOF
	start_worker w --handler "s=$T_DIR/h" --poll 100ms --lease 2s
	id=$(pd-enqueue s '{}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(cat "$T_DIR/runs")" -eq 3 ]
	sql_is "SELECT attempt, snoozes FROM pendulum.jobs WHERE id = $id" "1|2"
	sql_is "SELECT string_agg(outcome || ':' || attempt || ':' || exit_code, ',' ORDER BY started_at)
	        FROM pendulum.job_attempts WHERE job_id = $id" "snoozed:1:75,snoozed:1:75,succeeded:1:0"
	gap_ok "$id" 2 1000
	gap_ok "$id" 3 1000
	run pd-admin job show "$id"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -c ' snoozed ')" -eq 2 ]
	printf '%s\n' "$output" | grep -Eq '^snoozes +2$'
}

@test "a stream handler's snooze: the job waits, then runs again on the same attempt" {
	handler "$T_DIR/st" <<'EOF'
#!/bin/sh
while IFS= read -r job; do
	id=$(printf '%s\n' "$job" | jq -r .id)
	if [ ! -e "$T_DIR/snoozed.$id" ]; then
		touch "$T_DIR/snoozed.$id"
		printf '{"id":%s,"snooze":"1s"}\n' "$id"
	else
		printf '{"id":%s,"result":{"ok":true}}\n' "$id"
	fi
done
EOF
	start_worker w --stream "st=$T_DIR/st" --poll 100ms --lease 2s
	id=$(pd-enqueue st '{}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	sql_is "SELECT attempt, snoozes, result::text FROM pendulum.jobs WHERE id = $id" '1|1|{"ok": true}'
	sql_is "SELECT string_agg(outcome, ',' ORDER BY started_at) FROM pendulum.job_attempts
	        WHERE job_id = $id" "snoozed,succeeded"
	gap_ok "$id" 2 1000
}

@test "max_snoozes: past the cap a snooze is a retryable failure, and attempts run out" {
	cat >"$CFG" <<EOF
retry: {base: 0, cap: 0, max_snoozes: 50}
handlers:
  s:
    run: echo 'snooze 100ms'; exit 75
    max_snoozes: 2
EOF
	start_worker w -c "$CFG" --poll 100ms --lease 2s
	id=$(pd-enqueue --max-attempts 2 s '{}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" DEAD_LETTERED
	sql_is "SELECT attempt, snoozes, dead_reason FROM pendulum.jobs WHERE id = $id" \
		"2|2|attempts exhausted"
	sql_is "SELECT last_error FROM pendulum.jobs WHERE id = $id" "snoozed 2 times (max_snoozes)"
	sql_is "SELECT string_agg(outcome, ',' ORDER BY started_at) FROM pendulum.job_attempts
	        WHERE job_id = $id" "snoozed,snoozed,failed,failed"
}

@test "retry.max_snoozes is the default cap; 0 makes every snooze a retry" {
	printf 'retry: {base: 0, cap: 0, max_snoozes: 0}\n' >"$CFG"
	start_worker w -c "$CFG" --handler "s=echo 'snooze 1h'; exit 75" --poll 100ms --lease 2s
	id=$(pd-enqueue --max-attempts 1 s '{}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" DEAD_LETTERED
	sql_is "SELECT snoozes, last_error FROM pendulum.jobs WHERE id = $id" \
		"0|snoozed 0 times (max_snoozes)"
}

@test "exit 75 without a snooze line is a retry as before" {
	start_worker w -c "$CFG" --handler "s=echo 'not now'; echo 'snoozed 1s'; exit 75" --poll 100ms
	id=$(pd-enqueue --max-attempts 2 s '{}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" DEAD_LETTERED
	sql_is "SELECT attempt, snoozes, last_error FROM pendulum.jobs WHERE id = $id" "2|0|exit 75"
	sql_is "SELECT string_agg(outcome, ',' ORDER BY started_at) FROM pendulum.job_attempts
	        WHERE job_id = $id" "failed,failed"
}

@test "a bad or missing snooze duration is a retryable failure naming the line" {
	start_worker w -c "$CFG" --poll 100ms \
		--handler "bad=echo 'snooze 3 parsecs'; exit 75" \
		--handler "long=echo '{\"snooze\":\"400d\"}'; exit 75" \
		--handler "none=echo snooze; exit 75"
	b=$(pd-enqueue --max-attempts 1 bad '{}')
	l=$(pd-enqueue --max-attempts 1 long '{}')
	n=$(pd-enqueue --max-attempts 1 none '{}')
	wait_for 20 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'" 3
	sql_is "SELECT snoozes FROM pendulum.jobs WHERE id = $b" 0
	sql_is "SELECT last_error FROM pendulum.jobs WHERE id = $b" \
		"exit 75: bad snooze line 'snooze 3 parsecs': invalid duration '3 parsecs': expected a number with ms, s, m, h or d"
	sql_is "SELECT last_error FROM pendulum.jobs WHERE id = $l" \
		"exit 75: bad snooze line '{\"snooze\":\"400d\"}': snooze of '400d' longer than a year (365d)"
	sql_is "SELECT last_error FROM pendulum.jobs WHERE id = $n" \
		"exit 75: bad snooze line 'snooze': no duration"
	sql_is "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'failed'" 3
}

@test "a stream handler's bad snooze fails its job, retryable, naming it" {
	handler "$T_DIR/st" <<'EOF'
#!/bin/sh
while IFS= read -r job; do
	printf '{"id":%s,"snooze":"soon"}\n' "$(printf '%s\n' "$job" | jq -r .id)"
done
EOF
	start_worker w -c "$CFG" --stream "st=$T_DIR/st" --poll 100ms
	id=$(pd-enqueue --max-attempts 1 st '{}')
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" DEAD_LETTERED
	sql_is "SELECT snoozes, dead_reason FROM pendulum.jobs WHERE id = $id" "0|attempts exhausted"
	[[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $id")" == 'bad snooze "soon": invalid duration '* ]]
}

@test "pd-enqueue --wait: a line for the snooze on stderr, then the result" {
	handler "$T_DIR/h" <<'EOF'
#!/bin/sh
if [ ! -e "$T_DIR/once" ]; then touch "$T_DIR/once"; echo 'snooze 1500ms'; exit 75; fi
echo '{"n":1}'
EOF
	start_worker w --handler "s=$T_DIR/h" --poll 100ms
	run --separate-stderr timeout 60 pd-enqueue --wait s '{}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"n":1}' ]
	printf '%s\n' "$stderr"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "${stderr_lines[0]}" =~ ^"pd-enqueue: job "[0-9]+": attempt 1 of 25 snoozed; next try "(in [0-9]+ms|in [12]s|now)$ ]]
}

@test "a workflow step snoozes: the run's job waits, the step runs again, the run goes on" {
	handler "$T_DIR/b" <<'EOF'
#!/bin/sh
n=$(($(cat "$T_DIR/b.runs" 2>/dev/null || echo 0) + 1))
echo "$n" >"$T_DIR/b.runs"
if [ "$n" -eq 1 ]; then echo 'snooze 1s'; exit 75; fi
jq -c '{b: (.outputs.a.a + 1)}'
EOF
	cat >"$CFG" <<EOF
retry: {base: 0, cap: 0}
workflows:
  two:
    steps:
      - name: a
        run: 'echo "{\"a\": 1}"'
      - name: b
        run: '$T_DIR/b'
EOF
	start_worker w -c "$CFG" --poll 100ms --lease 2s
	run --separate-stderr timeout 60 pd-enqueue -c "$CFG" --workflow two --wait '{}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"b":2}' ]
	[ "$(cat "$T_DIR/b.runs")" -eq 2 ]
	job=$(sql "SELECT job_id FROM pendulum.workflow_runs")
	sql_is "SELECT snoozes FROM pendulum.jobs WHERE id = $job" 1
	sql_is "SELECT string_agg(step_name || ':' || attempts, ',' ORDER BY step_index)
	        FROM pendulum.workflow_steps" "a:1,b:1"
	sql_is "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $job AND outcome = 'snoozed'" 1
	gap_ok "$job" 3 1000
	[[ "${stderr_lines[0]}" == *"step 'b' attempt 1 of 25 snoozed; next try "* ]]
}
