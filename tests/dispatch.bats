#!/usr/bin/env bats
# Durable dispatch: what a worker claims and in what order (priority, queues,
# run_at), lease tokens, and many workers draining one backlog exactly once.

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
}

# run_until_idle ARGS...: a foreground worker that exits once nothing is runnable.
run_until_idle() {
	run --separate-stderr timeout 60 pd-worker --until-idle --poll 200ms "$@"
	[ "$status" -eq 0 ] || { echo "pd-worker: status $status: $stderr"; return 1; }
}

@test "priority: a concurrency-1 worker runs high, then normal, then low; FIFO within one" {
	low=$(pd-enqueue -p low t '{}')
	n1=$(pd-enqueue t '{}')
	high=$(pd-enqueue -p high t '{}')
	n2=$(pd-enqueue -p normal t '{}')
	p5=$(pd-enqueue -p 5 t '{}')
	m1=$(pd-enqueue -p -1 t '{}')
	high2=$(pd-enqueue -p high t '{}')
	run_until_idle -j 1 --handler "t=$(counting_handler "$LOG")"
	[ "$(cut -d' ' -f1 "$LOG" | tr '\n' ' ')" = "$high $high2 $p5 $n1 $n2 $m1 $low " ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'")" -eq 7 ]
}

@test "priority: a higher-priority job enqueued later overtakes a waiting backlog" {
	gate=$BATS_TEST_TMPDIR/gate
	for _ in 1 2 3 4 5; do pd-enqueue t '{}' >/dev/null; done
	# every handler waits for the gate: the first holds the only slot until
	# the urgent job is in
	start_worker w -j 1 --poll 200ms \
		--handler "t=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done")"
	wait_for 30 lines_at_least "$LOG" 1
	urgent=$(pd-enqueue -p 100 t '{}')
	touch "$gate"
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 6
	[ "$(sed -n 2p "$LOG" | cut -d' ' -f1)" = "$urgent" ] || { cat "$LOG"; return 1; }
}

@test "queue isolation: a worker on queue a never runs queue b's jobs" {
	for _ in 1 2 3; do
		pd-enqueue -q a t '{}' >/dev/null
		pd-enqueue -q b t '{}' >/dev/null
		pd-enqueue t '{}' >/dev/null # the default queue
	done
	run_until_idle -q a -j 2 --handler "t=$(counting_handler "$LOG")"
	[ "$(sql "SELECT string_agg(queue || '=' || state || '/' || attempt, ' ' ORDER BY queue)
	          FROM (SELECT DISTINCT queue, state, attempt FROM pendulum.jobs) s")" = \
		"a=SUCCEEDED/1 b=PENDING/0 default=PENDING/0" ]
	[ "$(lines "$LOG")" -eq 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts a JOIN pendulum.jobs j ON j.id = a.job_id
	          WHERE j.queue <> 'a'")" -eq 0 ]
	# the executed ids are exactly queue a's
	[ "$(cut -d' ' -f1 "$LOG" | sort -n | tr '\n' ' ')" = \
		"$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) || ' ' FROM pendulum.jobs WHERE queue = 'a'")" ]
	# a worker on several queues takes from each of them
	run_until_idle -q b -q default -j 2 --handler "t=$(counting_handler "$LOG")"
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'")" -eq 9 ]
	[ "$(lines "$LOG")" -eq 9 ]
}

@test "a worker claims only the job types it has a handler for; '*' takes the rest" {
	pd-enqueue mine '{}' >/dev/null
	other=$(pd-enqueue theirs '{}')
	run_until_idle --handler "mine=$(counting_handler "$LOG")"
	[ "$(lines "$LOG")" -eq 1 ]
	[ "$(sql "SELECT state || '/' || attempt FROM pendulum.jobs WHERE id = $other")" = PENDING/0 ]
	run_until_idle --handler "mine=exit 70" --handler "*=$(counting_handler "$LOG")"
	[ "$(job_state "$other")" = SUCCEEDED ]
	[ "$(lines "$LOG")" -eq 2 ]
}

@test "a delayed job is held back until its run_at, then run" {
	start_worker w -j 2 --poll 200ms --handler "t=$(counting_handler "$LOG")"
	late=$(pd-enqueue --delay 1h t '{}')
	now=$(pd-enqueue t '{}')
	[ "$(sql "SELECT run_at - created_at BETWEEN interval '3599.9 s' AND interval '3600.1 s'
	          FROM pendulum.jobs WHERE id = $late")" = t ]
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $now" SUCCEEDED
	# a claim after that one: enqueued after it ran, so claimed by a later poll
	after=$(pd-enqueue t '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $after" SUCCEEDED
	# both claims passed over the delayed job: its run_at, an hour ahead, holds it
	[ "$(sql "SELECT state || '/' || attempt FROM pendulum.jobs WHERE id = $late")" = PENDING/0 ]
	run ! grep -q "^$late " "$LOG"
	# its run_at comes (moved to now): the next poll runs it
	sql "UPDATE pendulum.jobs SET run_at = now() WHERE id = $late"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $late" SUCCEEDED
	[ "$(sql "SELECT a.started_at >= j.run_at AND j.started_at >= j.run_at
	          FROM pendulum.jobs j JOIN pendulum.job_attempts a ON a.job_id = j.id
	          WHERE j.id = $late")" = t ]
	[ "$(grep -c "^$late " "$LOG")" -eq 1 ]
}

@test "a job with a future --run-at is not claimed; its run_at is the instant given" {
	id=$(pd-enqueue --run-at 2099-06-01T12:00:00Z t '{}')
	[ "$(sql "SELECT run_at = '2099-06-01T12:00:00Z' FROM pendulum.jobs WHERE id = $id")" = t ]
	id2=$(pd-enqueue --run-at 2000-01-01T00:00:00+02:00 t '{}')
	run_until_idle --handler "t=$(counting_handler "$LOG")"
	[ "$(sql "SELECT state || '/' || attempt FROM pendulum.jobs WHERE id = $id")" = PENDING/0 ]
	# one in the past is due at once
	[ "$(job_state "$id2")" = SUCCEEDED ]
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "lease tokens: successive claims get strictly increasing tokens, all unique" {
	for _ in $(seq 20); do pd-enqueue t '{}' >/dev/null; done
	cfg=$BATS_TEST_TMPDIR/pd.yaml
	printf 'retry: {base: 10ms, cap: 50ms}\n' >"$cfg"
	pd-enqueue --max-attempts 3 retry '{}' >/dev/null
	start_worker w -c "$cfg" -j 1 --poll 200ms --handler "t=$(counting_handler "$LOG")" \
		--handler "retry=$(counting_handler "$LOG" 'exit 1')"
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state IN ('SUCCEEDED', 'DEAD_LETTERED')" 21
	[ "$(lines "$LOG")" -eq 23 ]
	# in execution order (one at a time), each token is larger than the one before
	cut -d' ' -f2 "$LOG" | awk 'NR > 1 && $1 <= prev { print "token " $1 " after " prev; bad = 1 }
		{ prev = $1 } END { exit bad }'
	[ "$(sql "SELECT count(*) = count(DISTINCT lease_token) AND count(*) = 23 FROM pendulum.job_attempts")" = t ]
	# a job's later attempts carry later tokens
	[ "$(sql "SELECT string_agg(a.attempt::text, ',' ORDER BY a.lease_token) FROM pendulum.job_attempts a
	          JOIN pendulum.jobs j ON j.id = a.job_id WHERE j.job_type = 'retry'")" = 1,2,3 ]
	# and the token a handler saw is the one recorded for its attempt
	[ "$(sort "$LOG")" = "$(sql "SELECT job_id || ' ' || lease_token FROM pendulum.job_attempts" | sort)" ]
}

@test "8 workers drain 600 jobs: every handler runs exactly once, all succeed" {
	awk 'BEGIN { for (i = 1; i <= 600; i++) printf "{\"n\": %d}\n", i }' |
		pd-enqueue --ndjson t >/dev/null
	for w in 1 2 3 4 5 6 7 8; do
		start_worker "w$w" -j 2 --poll 200ms --handler "t=$(counting_handler "$LOG")"
	done
	wait_for 120 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 600
	for w in 1 2 3 4 5 6 7 8; do
		stop_worker "w$w"
	done
	for w in 1 2 3 4 5 6 7 8; do
		[ "$(bg_status "w$w")" -eq 0 ] || { echo "w$w exited $(bg_status "w$w")"; return 1; }
	done
	# the execution log, not the states: 600 lines, 600 distinct jobs
	[ "$(lines "$LOG")" -eq 600 ]
	[ "$(cut -d' ' -f1 "$LOG" | sort -u | wc -l)" -eq 600 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state <> 'SUCCEEDED' OR attempt <> 1")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'succeeded'")" -eq 600 ]
	[ "$(sort "$LOG")" = "$(sql "SELECT job_id || ' ' || lease_token FROM pendulum.job_attempts" | sort)" ]
	# the work was shared
	[ "$(sql "SELECT count(DISTINCT worker) FROM pendulum.job_attempts")" -ge 2 ]
	# stopped workers unregister
	[ "$(sql "SELECT count(*) FROM pendulum.workers")" -eq 0 ]
}
