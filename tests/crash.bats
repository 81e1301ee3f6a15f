#!/usr/bin/env bats
# Crashes: a worker killed with SIGKILL loses nothing; its jobs come back
# when their leases expire and run elsewhere; duplicates are bounded by what
# it had in flight. (Restarting PostgreSQL: tests/restart.bats.)

load helpers

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
}

teardown_file() {
	kill_all_bg
	pd_teardown_db
}

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
}

teardown() {
	kill_all_bg
}

@test "kill -9 a worker with jobs in flight: every job still succeeds, on another worker" {
	for _ in 1 2 3; do pd-enqueue t '{}' >/dev/null; done
	start_worker a -n 3 --lease 1s --heartbeat 300ms --poll 200ms \
		--handler "t=$(counting_handler "$LOG" 'sleep 2')"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING'" 3
	a_id=$(worker_id a)
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE lease_owner = '$a_id'")" -eq 3 ]
	kill -KILL "$(bg_pid a)"
	wait_for 10 test -s "$BATS_FILE_TMPDIR/a.status"
	[ "$(bg_status a)" -eq 137 ]
	# a fresh worker reaps the expired leases itself and runs the jobs again
	start_worker b -n 3 --lease 10s --heartbeat 1s --poll 200ms \
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
	awk 'BEGIN { for (i = 1; i <= 200; i++) printf "{\"n\": %d}\n", i }' |
		pd-enqueue --ndjson t >/dev/null
	# Only the victim's lease is short (it decides how soon its jobs come
	# back); the others' are long, so that a loaded machine's late heartbeat
	# cannot give their jobs away too. pd-reaper does the reaping.
	for w in 1 2 3 4; do
		lease=10s beat=1s
		[ "$w" = 2 ] && lease=2s beat=200ms
		start_worker "w$w" -n 2 --lease "$lease" --heartbeat "$beat" --poll 200ms --no-reap \
			--handler "t=$(counting_handler "$LOG" 'sleep 0.05')"
	done
	start_bg reaper pd-reaper --interval 200ms
	victim_pid=$(bg_pid w2)
	wait_for 60 sql_is "SELECT count(*) >= 20 FROM pendulum.jobs WHERE state = 'SUCCEEDED'" t
	# freeze it while it holds work, then kill it: what it held is now lost
	wait_for 30 sql_is "SELECT count(*) > 0 FROM pendulum.jobs j JOIN pendulum.workers w
	                    ON w.id = j.lease_owner WHERE w.pid = $victim_pid" t
	kill -STOP "$victim_pid"
	victim=$(worker_id w2)
	held=$(sql "SELECT count(*) FROM pendulum.jobs WHERE lease_owner = '$victim'")
	if [ "$held" -eq 0 ]; then # it had just finished them: try once more
		kill -CONT "$victim_pid"
		wait_for 30 sql_is "SELECT count(*) > 0 FROM pendulum.jobs WHERE lease_owner = '$victim'" t
		kill -STOP "$victim_pid"
		held=$(sql "SELECT count(*) FROM pendulum.jobs WHERE lease_owner = '$victim'")
	fi
	kill -KILL "$victim_pid"
	[ "$held" -ge 1 ] && [ "$held" -le 2 ]

	wait_for 90 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 200
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state <> 'SUCCEEDED'")" -eq 0 ]
	# every job ran; the extra runs are at most what the victim held (concurrency 2)
	[ "$(cut -d' ' -f1 "$LOG" | sort -u | wc -l)" -eq 200 ]
	dups=$(($(lines "$LOG") - 200))
	[ "$dups" -ge 0 ] && [ "$dups" -le "$held" ] || {
		echo "dups=$dups held=$held victim=$victim"
		sql "SELECT * FROM pendulum.job_attempts WHERE outcome <> 'succeeded' OR job_id IN
		     (SELECT job_id FROM pendulum.job_attempts GROUP BY 1 HAVING count(*) > 1) ORDER BY job_id, attempt"
		return 1
	}
	# exactly the held jobs lost an attempt, all of them to the victim, and ran again
	[ "$(sql "SELECT count(*) || ' ' || count(*) FILTER (WHERE worker = '$victim')
	          FROM pendulum.job_attempts WHERE outcome = 'lease_expired'")" = "$held $held" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE attempt = 2")" -eq "$held" ]
	# a job run twice is one the victim held
	for id in $(cut -d' ' -f1 "$LOG" | sort | uniq -d); do
		[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $id AND worker = '$victim'
		          AND outcome = 'lease_expired'")" -eq 1 ] || { echo "job $id ran twice"; return 1; }
	done
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome IS NULL OR finished_at IS NULL")" -eq 0 ]
}

@test "a job claimed but never started (LEASED) by a worker that died comes back and runs once" {
	# The claim as a worker that died right after it: LEASED, not RUNNING.
	id=$(pd-enqueue t '{}')
	sql "WITH j AS (UPDATE pendulum.jobs SET state = 'LEASED', attempt = attempt + 1,
	       lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'gone:1:0000',
	       lease_expires_at = now() + interval '1 s' WHERE id = $id RETURNING id, attempt, lease_token)
	     INSERT INTO pendulum.job_attempts (job_id, attempt, lease_token, worker)
	     SELECT id, attempt, lease_token, 'gone:1:0000' FROM j" >/dev/null
	start_worker b -n 1 --lease 1s --heartbeat 300ms --poll 200ms \
		--handler "t=$(counting_handler "$LOG")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome || ':' || worker, ' ' ORDER BY attempt)
	          FROM pendulum.job_attempts WHERE job_id = $id")" = \
		"1:lease_expired:gone:1:0000 2:succeeded:$(worker_id b)" ]
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "at-most-once: a job whose worker died is dead-lettered by pd-reaper, never run again" {
	id=$(pd-enqueue --at-most-once t '{}')
	start_worker a -n 1 --lease 1s --heartbeat 300ms --poll 200ms --no-reap \
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
	start_worker a -n 1 --lease 1s --heartbeat 300ms --poll 200ms --no-reap \
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
