#!/usr/bin/env bats
# pd-enqueue --wait while the job takes its time: the client and its
# PostgreSQL backend sleep between reads (one statement about a second,
# however long the job runs, retries or waits for a signal), and each
# failed attempt that is tried again is one line on standard error, once,
# even when several failed between two reads; --quiet keeps them back.

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	CFG=$BATS_TEST_TMPDIR/pendulum.yaml
	COUNT=$BATS_TEST_TMPDIR/count
}

# flaky N CODE [SECONDS]: a handler that sleeps SECONDS (default 0), then
# exits CODE on its first N runs (counted in $COUNT), then prints {"n": RUN}.
flaky() {
	printf 'sleep %s; n=$(cat %s 2>/dev/null || echo 0); n=$((n + 1)); echo $n >%s; [ $n -gt %s ] || exit %s; echo "{\\"n\\": $n}"' \
		"${3:-0}" "$COUNT" "$COUNT" "$1" "$2"
}

# retry_fast: a config file whose retries wait at most 100 ms (pendulum.yaml(5), retry).
retry_fast() {
	printf 'retry:\n  base: 100ms\n  cap: 100ms\n' >"$CFG"
}

# backend_pid: the pid of the backend of this database's pd-enqueue (one at a time).
backend_pid() {
	sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'pd-enqueue'
	      AND datname = current_database()" | grep -E '^[0-9]+$'
}

# cpu_ticks PID: utime + stime of a process, in clock ticks (proc(5)).
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# commits: the transactions committed in this database so far.
commits() {
	sql "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
}

@test "--wait on a long job a worker serves: the backend sleeps, about a statement a second" {
	local gate=$BATS_TEST_TMPDIR/gate pid t0 t1 c0 c1 hz
	# the job runs until the gate opens; the worker stays quiet meanwhile
	start_worker w --handler "slow=while [ ! -e '$gate' ]; do sleep 0.05; done; echo '{\"ok\": 1}'" \
		--poll 1h --no-reap
	start_bg waiter pd-enqueue --wait slow '{}'
	wait_for 30 backend_pid
	pid=$(backend_pid)
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE job_type = 'slow'" RUNNING
	# Measured over 5 s from 4 s of waiting on (past the 3 s check for a
	# worker, after which the old wait read the job in a loop): the sleeps
	# are the measurement's window, not synchronisation.
	sleep 4
	t0=$(cpu_ticks "$pid")
	c0=$(commits)
	sleep 5
	t1=$(cpu_ticks "$pid")
	c1=$(commits)
	touch "$gate"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/waiter.status"
	[ "$(bg_status waiter)" -eq 0 ]
	[ "$(cat "$BATS_FILE_TMPDIR/waiter.out")" = '{"ok":1}' ]
	[ -z "$(bg_log waiter)" ]
	hz=$(getconf CLK_TCK)
	echo "backend: $((t1 - t0)) ticks of $((5 * hz)) in 5 s; $((c1 - c0)) commits"
	# under 5 % of a core: 0.25 s of CPU in 5 s
	[ $((t1 - t0)) -lt $((hz / 4)) ]
	# a read a second (5), and the worker's heartbeat, autovacuum, the psql: not
	# thousands (7 alone; 32 once on make check's shared cluster, autovacuum
	# busy with the other files' databases)
	[ $((c1 - c0)) -le 60 ]
}

@test "a job that fails twice, then succeeds: a line for each failed attempt, the result, exit 0" {
	retry_fast
	# 1.5 s an attempt: the wait reads the job (once a second) between them
	start_worker w -c "$CFG" --handler "flaky=$(flaky 2 7 1.5)" --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue --wait flaky '{}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"n":3}' ]
	printf '%s\n' "$stderr"
	id=$(sql "SELECT id FROM pendulum.jobs WHERE job_type = 'flaky'")
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" =~ ^"pd-enqueue: job $id: attempt 1 of 25 failed: exit 7; next try "(in [0-9]+ms|in 1s|now)$ ]]
	[[ "${stderr_lines[1]}" =~ ^"pd-enqueue: job $id: attempt 2 of 25 failed: exit 7; next try "(in [0-9]+ms|in 1s|now)$ ]]
}

@test "attempts that fail between two reads are each reported once; the last one is the end's line" {
	retry_fast
	start_worker w -c "$CFG" --handler "fails=$(flaky 1000 3)" --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue --wait --max-attempts 4 fails '{}'
	[ "$status" -eq 3 ]
	[ -z "$output" ]
	printf '%s\n' "$stderr"
	# four attempts, 100 ms apart at most: several between two reads
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'failed'")" -eq 4 ]
	[ "${#stderr_lines[@]}" -eq 4 ]
	[[ "${stderr_lines[0]}" == *": attempt 1 of 4 failed: exit 3; next try "* ]]
	[[ "${stderr_lines[1]}" == *": attempt 2 of 4 failed: exit 3; next try "* ]]
	[[ "${stderr_lines[2]}" == *": attempt 3 of 4 failed: exit 3; next try "* ]]
	[[ "${stderr_lines[3]}" == "pd-enqueue: job "*" dead-lettered: attempts exhausted: exit 3" ]]
}

@test "a failed attempt is reported while the job waits for its next try, not only at the end" {
	printf 'retry:\n  base: 100d\n  cap: 100d\n' >"$CFG"
	start_worker w -c "$CFG" --handler 'bad=echo nope >&2; exit 7' --poll 200ms
	start_bg waiter pd-enqueue --wait --wait-timeout 60s bad '{}'
	wait_for 20 grep -q 'attempt 1 of 25 failed' "$BATS_FILE_TMPDIR/waiter.log"
	alive "$(bg_pid waiter)"
	grep -E '^pd-enqueue: job [0-9]+: attempt 1 of 25 failed: exit 7; stderr: nope; next try (in [0-9dhms]+|now)$' \
		"$BATS_FILE_TMPDIR/waiter.log"
	[ "$(grep -c failed "$BATS_FILE_TMPDIR/waiter.log")" -eq 1 ]
}

@test "--quiet: no lines for failed attempts; the result and the status as without it" {
	retry_fast
	start_worker w -c "$CFG" --handler "flaky=$(flaky 2 7)" --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue --quiet --wait flaky '{}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"n":3}' ]
	[ -z "$stderr" ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'failed'")" -eq 2 ]
}

@test "--workflow --wait: a line for each failed attempt of a step, naming the step" {
	cat >"$CFG" <<EOF
retry:
  base: 100ms
  cap: 100ms
workflows:
  orders:
    steps:
      - name: reserve
        run: 'echo "{\"r\": 1}"'
      - name: charge
        run: '$(flaky 2 9)'
EOF
	start_worker w -c "$CFG" --poll 200ms
	run --separate-stderr timeout 60 pd-enqueue -c "$CFG" --workflow orders --wait '{}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"n":3}' ]
	printf '%s\n' "$stderr"
	run_id=$(sql "SELECT id FROM pendulum.workflow_runs")
	job=$(sql "SELECT job_id FROM pendulum.workflow_runs")
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == "pd-enqueue: workflow run $run_id (job $job): step 'charge' attempt 1 of 25 failed: exit 9; next try "* ]]
	[[ "${stderr_lines[1]}" == "pd-enqueue: workflow run $run_id (job $job): step 'charge' attempt 2 of 25 failed: exit 9; next try "* ]]
}
