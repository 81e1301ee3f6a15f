#!/usr/bin/env bats
# Crashes: a worker killed with SIGKILL loses nothing; its jobs come back
# when their leases expire and run elsewhere; duplicates are bounded by what
# it had in flight. (Restarting PostgreSQL: tests/restart.bats.)

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
}

@test "kill -9 a worker with jobs in flight: every job still succeeds, on another worker" {
	gate=$BATS_TEST_TMPDIR/gate
	for _ in 1 2 3; do pd-enqueue t '{}' >/dev/null; done
	# a's handlers run until the gate opens: in flight, whatever the load
	start_worker a -j 3 --lease 2s --heartbeat 200ms --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done")"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING'" 3
	a_id=$(worker_id a)
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE lease_owner = '$a_id'")" -eq 3 ]
	kill -KILL "$(bg_pid a)"
	wait_for 10 test -s "$BATS_FILE_TMPDIR/a.status"
	[ "$(bg_status a)" -eq 137 ]
	touch "$gate" # a's orphaned handlers finish now: nobody records them
	# a fresh worker reaps the expired leases itself and runs the jobs again
	start_worker b -j 3 --lease 10s --heartbeat 1s --poll 200ms \
		--handler "t=$(counting_handler "$LOG" 'echo "{\"by\": \"b\"}"')"
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 3
	b_id=$(worker_id b)
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE attempt = 2 AND result->>'by' = 'b'")" -eq 3 ]
	# each job: attempt 1 lost with a, attempt 2 succeeded on b
	[ "$(sql "SELECT DISTINCT string_agg(a.attempt || ':' || a.outcome || ':' ||
	            CASE a.worker WHEN '$a_id' THEN 'a' WHEN '$b_id' THEN 'b' ELSE '?' END, ' '
	            ORDER BY a.attempt) FROM pendulum.job_attempts a GROUP BY a.job_id")" = \
		"1:lease_expired:a 2:succeeded:b" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE last_error IS NOT NULL OR finished_at IS NULL")" -eq 0 ]
	# each ran twice (a's handlers had started): 6 lines, 2 per job
	[ "$(lines "$LOG")" -eq 6 ]
	[ "$(cut -d' ' -f1 "$LOG" | sort | uniq -c | awk '$1 != 2' | wc -l)" -eq 0 ]
}

@test "a fleet of 4 losing one worker mid-flight loses nothing; duplicates <= its concurrency" {
	gate=$BATS_TEST_TMPDIR/gate
	awk 'BEGIN { for (i = 1; i <= 200; i++) printf "{\"n\": %d}\n", i }' |
		pd-enqueue --ndjson t >/dev/null
	# Three workers with long leases (a loaded machine's late heartbeat must
	# not give their jobs away), pd-reaper doing the reaping.
	for w in 1 2 3; do
		start_worker "w$w" -j 2 --lease 10s --heartbeat 1s --poll 200ms --no-reap \
			--handler "t=$(counting_handler "$LOG" 'sleep 0.05')"
	done
	start_bg reaper pd-reaper --interval 200ms
	# The victim: same handler, but its jobs wait for a gate, so that it
	# certainly has work in flight when it dies. Its lease is short.
	start_worker victim -j 2 --lease 2s --heartbeat 200ms --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done; sleep 0.05")"
	victim_pid=$(bg_pid victim)
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs j JOIN pendulum.workers w ON w.id = j.lease_owner
	                    WHERE w.pid = $victim_pid AND j.state = 'RUNNING'" 2
	victim=$(worker_id victim)
	wait_for 60 sql_is "SELECT count(*) >= 20 FROM pendulum.jobs WHERE state = 'SUCCEEDED'" t
	held=$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) FROM pendulum.jobs WHERE lease_owner = '$victim'")
	kill -KILL "$victim_pid"
	touch "$gate" # its orphaned handlers may finish: they write nothing

	wait_for 90 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 200
	# every job ran; the only extra runs are the two the victim had in flight
	[ "$(cut -d' ' -f1 "$LOG" | sort -u | wc -l)" -eq 200 ]
	dups=$(cut -d' ' -f1 "$LOG" | sort -n | uniq -d | tr '\n' ' ')
	[ "$dups" = "$held " ] || {
		echo "ran twice: '$dups'; the victim held: '$held'"
		sql "SELECT * FROM pendulum.job_attempts WHERE outcome <> 'succeeded' OR job_id IN
		     (SELECT job_id FROM pendulum.job_attempts GROUP BY 1 HAVING count(*) > 1) ORDER BY job_id, attempt"
		return 1
	}
	[ "$(lines "$LOG")" -eq 202 ]
	# exactly those lost an attempt, to the victim, and succeeded on attempt 2
	[ "$(sql "SELECT string_agg(job_id || ':' || (worker = '$victim'), ' ' ORDER BY job_id)
	          FROM pendulum.job_attempts WHERE outcome = 'lease_expired'")" = \
		"$(for id in $held; do printf '%s:true ' "$id"; done | sed 's/ $//')" ]
	[ "$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) FROM pendulum.jobs WHERE attempt = 2")" = "$held" ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome IS NULL OR finished_at IS NULL")" -eq 0 ]
	[ "$(fenced)" -eq 0 ]
}

@test "a job claimed but never started (LEASED) by a worker that died comes back and runs once" {
	# The claim as a worker that died right after it: LEASED, not RUNNING.
	id=$(pd-enqueue t '{}')
	# (The job row is the attempt's record until it ends: sql/008.)
	sql "UPDATE pendulum.jobs SET state = 'LEASED', attempt = attempt + 1,
	       lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'gone:1:0000',
	       lease_expires_at = now() + interval '1 s' WHERE id = $id" >/dev/null
	start_worker b -j 1 --lease 1s --heartbeat 300ms --poll 200ms \
		--handler "t=$(counting_handler "$LOG")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome || ':' || worker, ' ' ORDER BY attempt)
	          FROM pendulum.job_attempts WHERE job_id = $id")" = \
		"1:lease_expired:gone:1:0000 2:succeeded:$(worker_id b)" ]
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "at-most-once: a job whose worker died is dead-lettered by pd-reaper, never run again" {
	id=$(pd-enqueue --at-most-once t '{}')
	start_worker a -j 1 --lease 1s --heartbeat 300ms --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG" 'sleep 30')"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	kill -KILL "$(bg_pid a)"
	wait_for 30 sql_is "SELECT lease_expires_at < now() FROM pendulum.jobs WHERE id = $id" t
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 0, dead-lettered 1" ]
	[ "$(sql "SELECT state || ' ' || (finished_at IS NOT NULL) FROM pendulum.jobs WHERE id = $id")" = "DEAD_LETTERED true" ]
	[[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $id")" == *"at-most-once"* ]]
	run --separate-stderr pd-reaper --once
	[ "$output" = "requeued 0, dead-lettered 0" ]
	run --separate-stderr timeout 30 pd-worker --until-idle --poll 200ms --handler "t=$(counting_handler "$LOG")"
	[ "$status" -eq 0 ]
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "a lease lost on the last attempt dead-letters the job with the reason" {
	id=$(pd-enqueue --max-attempts 1 t '{}')
	start_worker a -j 1 --lease 1s --heartbeat 300ms --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG" 'sleep 30')"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	kill -KILL "$(bg_pid a)"
	wait_for 30 sql_is "SELECT lease_expires_at < now() FROM pendulum.jobs WHERE id = $id" t
	run --separate-stderr pd-reaper --once
	[ "$output" = "requeued 0, dead-lettered 1" ]
	[ "$(sql "SELECT state || ' / ' || dead_reason FROM pendulum.jobs WHERE id = $id")" = \
		"DEAD_LETTERED / attempts exhausted (last lease expired)" ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $id")" = lease_expired ]
}
