#!/usr/bin/env bats
# DESIGN "Retries": a retryable failure puts the job back PENDING with
# run_at = the failure's time + uniform(0, min(cap, base * 2^(attempt-1))).

load helpers
pd_db_hooks

setup() {
	reset_jobs
	CFG=$BATS_TEST_TMPDIR/pendulum.yaml
}

# in_window ATTEMPT CEILING: every job's last attempt is ATTEMPT, failed, and
# its run_at lies in [the attempt's finish, the finish + CEILING].
in_window() {
	sql_is "SELECT count(*) FILTER (WHERE j.attempt = $1 AND j.state = 'PENDING'
	          AND j.run_at >= a.finished_at AND j.run_at <= a.finished_at + interval '$2')
	        FROM pendulum.jobs j JOIN pendulum.job_attempts a
	          ON a.job_id = j.id AND a.attempt = j.attempt" 20
}

# The windows are days long: a job whose jitter fell within the seconds the
# test takes would be due again, retried, and leave the attempt waited for
# (at 10 min, 20 jobs and 3 s, one run in twenty failed that way).

@test "a failed job's run_at lands inside its backoff window: [failure, failure + base] at attempt 1" {
	printf 'retry: {base: 100d, cap: 200d}\n' >"$CFG"
	for _ in $(seq 20); do pd-enqueue t '{}' >/dev/null; done
	start_worker w -c "$CFG" -j 4 --lease 2s --poll 100ms --no-reap --handler 't=exit 1'
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING' AND attempt = 1" 20
	in_window 1 '100 days'
	# never due at once (the backoff is not dropped): none is due yet
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE run_at <= now()" 0
}

@test "the window doubles per attempt and stops at the cap: attempt 3, base 100 days, cap 250 days" {
	printf 'retry: {base: 100d, cap: 250d}\n' >"$CFG"
	for _ in $(seq 20); do pd-enqueue t '{}' >/dev/null; done
	# two attempts already spent (base * 2^2 = 400 days, capped at 250)
	sql "UPDATE pendulum.jobs SET attempt = 2"
	start_worker w -c "$CFG" -j 4 --lease 2s --poll 100ms --no-reap --handler 't=exit 1'
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING' AND attempt = 3" 20
	in_window 3 '250 days'
	# at least one beyond attempt 1's ceiling (each has a 60% chance): the window grew
	sql_is "SELECT count(*) > 0 FROM pendulum.jobs j JOIN pendulum.job_attempts a
	          ON a.job_id = j.id AND a.attempt = j.attempt
	        WHERE j.run_at > a.finished_at + interval '100 days'" t
}
