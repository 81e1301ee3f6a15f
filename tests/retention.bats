#!/usr/bin/env bats
# Retention: finished history older than its window is pruned in batches
# (pd-admin prune, pd-reaper, a worker's reap pass) while work goes on;
# live rows and the dependencies of BLOCKED jobs stay; no counter of
# pd-admin metrics goes down.

load helpers
pd_db_hooks

setup() {
	reset_jobs
	reset_outbox
}

# counters: the monotonic series of `pd-admin metrics` (every _total, and
# the histograms' _bucket, _sum and _count), "series value" a line.
counters() {
	pd-admin metrics | awk '!/^#/ && ($1 ~ /_total($|\{)/ || $1 ~ /_(bucket|sum|count)($|\{)/)'
}

# not_lower BEFORE AFTER: every series of BEFORE is in AFTER, with a value
# at least as high; prints each one that is not.
not_lower() {
	awk 'NR == FNR { before[$1] = $2; next }
	     { after[$1] = $2 }
	     END {
		for (s in before) {
			if (!(s in after)) { print "gone: " s; bad = 1 }
			else if (after[s] + 0 < before[s] + 0) { print "lower: " s " " before[s] " -> " after[s]; bad = 1 }
		}
		exit bad
	     }' "$1" "$2"
}

# old_history N STATE AGE: N finished jobs of queue old, finished AGE ago,
# each with a recorded run (started a second before, due two seconds before).
old_history() {
	make_jobs "$1" "$2" old t default "$3" >/dev/null
	sql "UPDATE pendulum.jobs SET lease_token = id, started_at = finished_at - interval '1 s',
	       run_at = finished_at - interval '2 s'
	     WHERE queue = 'old' AND started_at IS NULL"
}

@test "50,000 old jobs go in batches while a worker drains; live rows and dependencies stay; no counter goes down" {
	old_history 50000 SUCCEEDED '8 days'
	old_history 300 DEAD_LETTERED '31 days'
	old_history 200 CANCELLED '8 days'
	# failed attempts before the success, on 1000 of them
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, started_at, finished_at, outcome)
	     SELECT id, 1, -id, finished_at - interval '1 min', finished_at - interval '50 s', 'failed'
	     FROM pendulum.jobs WHERE queue = 'old' ORDER BY id LIMIT 1000"
	dep=$(old_history 1 SUCCEEDED '8 days'; sql "SELECT max(id) FROM pendulum.jobs WHERE queue = 'old'")
	pend=$(make_job PENDING held)
	make_jobs 4 PENDING held >/dev/null
	make_jobs 3 RUNNING held >/dev/null
	blocked=$(sql "INSERT INTO pendulum.jobs (state, queue, job_type, depends_on)
	               VALUES ('BLOCKED', 'held', 't', ARRAY[$dep, $pend]) RETURNING id")
	recent=$(make_job SUCCEEDED old t default '1 day')
	make_jobs 3000 PENDING live >/dev/null
	counters >"$BATS_TEST_TMPDIR/before"

	start_worker w --queue live --no-reap --poll 100ms -j 8 --handler 't=true'
	wait_for 30 sql_is "SELECT count(*) > 0 FROM pendulum.jobs WHERE queue = 'live' AND state = 'SUCCEEDED'" t
	drained=$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'live' AND state = 'SUCCEEDED'")
	run --separate-stderr pd-admin --json prune
	[ "$status" -eq 0 ]
	after_prune=$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'live' AND state = 'SUCCEEDED'")
	printf '%s\n' "$output" | jq -e -s 'map(select(.kind == "succeeded"))[0] | .rows == 50000 and .batches == 10'
	printf '%s\n' "$output" | jq -e -s 'map(select(.kind == "dead_lettered"))[0].rows == 300'
	printf '%s\n' "$output" | jq -e -s 'map(select(.kind == "cancelled"))[0].rows == 200'
	# the worker went on claiming and finishing while the batches ran
	[ "$after_prune" -gt "$drained" ]
	wait_for 120 sql_is "SELECT count(*) FROM pendulum.jobs WHERE queue = 'live' AND state = 'SUCCEEDED'" 3000

	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'old'")" -eq 2 ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $dep")" = SUCCEEDED ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $recent")" = SUCCEEDED ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $blocked")" = BLOCKED ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'held' AND state = 'PENDING'")" -eq 5 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'held' AND state = 'RUNNING'")" -eq 3 ]
	# attempts went with their jobs
	[ "$(sql "SELECT count(*) FROM pendulum.attempt_rows a
	          WHERE NOT EXISTS (SELECT 1 FROM pendulum.jobs j WHERE j.id = a.job_id)")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.attempt_rows")" -eq 0 ]

	counters >"$BATS_TEST_TMPDIR/after"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/before")" -gt 40 ]
	not_lower "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	grep -qx 'pendulum_queue_attempts_total{queue="old",outcome="succeeded"} 50001' "$BATS_TEST_TMPDIR/after"
	grep -qx 'pendulum_queue_attempts_total{queue="old",outcome="failed"} 1000' "$BATS_TEST_TMPDIR/after"
	grep -qx 'pendulum_queue_wait_seconds_bucket{queue="old",le="1"} 50301' "$BATS_TEST_TMPDIR/after"
	grep -qx 'pendulum_queue_wait_seconds_bucket{queue="old",le="0.5"} 0' "$BATS_TEST_TMPDIR/after"
	grep -qx 'pendulum_job_duration_seconds_count{queue="live"} 3000' "$BATS_TEST_TMPDIR/after"
	stop_worker w
}

@test "prune --dry-run counts and deletes nothing" {
	old_history 30 SUCCEEDED '8 days'
	old_history 5 CANCELLED '8 days'
	make_jobs 7 SUCCEEDED old t default '1 hour' >/dev/null
	sql "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency, last_seen_at)
	     VALUES ('gone', 'h', 1, '{q}', '{*}', 1, now() - interval '2 days'),
	            ('here', 'h', 2, '{q}', '{*}', 1, now())"
	run --separate-stderr pd-admin prune --dry-run
	[ "$status" -eq 0 ]
	[[ "$output" == *"would prune 36 rows"* ]]
	[ "$(printf '%s\n' "$output" | awk '$1 == "succeeded" { print $3 }')" = 30 ]
	[ "$(printf '%s\n' "$output" | awk '$1 == "workers_gone" { print $3 }')" = 1 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -eq 42 ]
	[ "$(sql "SELECT count(*) FROM pendulum.workers")" -eq 2 ]
	run --separate-stderr pd-admin prune
	[[ "$output" == *"pruned 36 rows"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -eq 7 ]
	[ "$(sql "SELECT id FROM pendulum.workers")" = here ]
}

@test "forever keeps a kind; the windows come from retention:" {
	old_history 20 SUCCEEDED '400 days'
	old_history 4 CANCELLED '3 hours'
	old_history 3 DEAD_LETTERED '3 hours'
	cfg=$BATS_TEST_TMPDIR/p.yaml
	printf 'retention:\n  succeeded: forever\n  cancelled: 2h\n  dead_lettered: 1d\n' >"$cfg"
	run --separate-stderr pd-admin -c "$cfg" prune --json
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e -s 'map(select(.kind == "succeeded"))[0] | .rows == 0 and .retention == "forever"'
	printf '%s\n' "$output" | jq -e -s 'map(select(.kind == "cancelled"))[0] | .rows == 4 and .retention == "2h"'
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'")" -eq 20 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'CANCELLED'")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'")" -eq 3 ]
}

@test "a bad retention value is a config error naming file:line:column" {
	cfg=$BATS_TEST_TMPDIR/p.yaml
	printf 'retention:\n  succeeded: 7d\n  cancelled: a week\n' >"$cfg"
	run --separate-stderr pd-admin -c "$cfg" prune
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"$cfg:3:14:"*"expected 'forever' or a duration"* ]]
	printf 'retention:\n  kept: 7d\n' >"$cfg"
	run --separate-stderr pd-reaper -c "$cfg" --once
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"$cfg:2:3: unknown key 'kept'"* ]]
}

@test "pd-reaper prunes on its passes, a worker's reap pass too" {
	old_history 120 SUCCEEDED '8 days'
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "pruned 120 rows of finished history" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -eq 0 ]

	old_history 300 SUCCEEDED '8 days'
	start_bg r pd-reaper --interval 200ms
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs" 0
	stop_bg r
	[ "$(bg_status r)" -eq 0 ]

	old_history 500 CANCELLED '8 days'
	start_worker w --queue none --poll 100ms --handler 't=true'
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs" 0
	# logged after the last batch commits: a wait, not a look
	wait_for 10 grep -q 'finished history pruned' "$BATS_FILE_TMPDIR/w.log"
	stop_worker w
}

@test "dlq purge and dlq delete lower no counter" {
	old_history 40 DEAD_LETTERED '2 days'
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, started_at, finished_at, outcome)
	     SELECT id, 1, lease_token, started_at, finished_at, 'terminal' FROM pendulum.jobs"
	counters >"$BATS_TEST_TMPDIR/before"
	grep -qx 'pendulum_attempts_total{outcome="terminal"} 40' "$BATS_TEST_TMPDIR/before"
	run --separate-stderr pd-admin dlq purge --older-than 1d
	[ "$output" = "purged 40 dead letters that died more than 1d ago" ]
	counters >"$BATS_TEST_TMPDIR/after"
	not_lower "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	grep -qx 'pendulum_attempts_total{outcome="terminal"} 40' "$BATS_TEST_TMPDIR/after"
	d=$(old_history 1 DEAD_LETTERED '1 s'; sql "SELECT max(id) FROM pendulum.jobs")
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, outcome) VALUES ($d, 1, 1, 'terminal')"
	run --separate-stderr pd-admin dlq delete "$d"
	[ "$status" -eq 0 ]
	[ "$(pd-admin metrics | grep -c '^pendulum_attempts_total{outcome="terminal"} 41$')" -eq 1 ]
}


@test "replaying finished jobs lowers no counter nor histogram" {
	old_history 3 SUCCEEDED '1 h'
	old_history 2 DEAD_LETTERED '1 h'
	counters >"$BATS_TEST_TMPDIR/before"
	grep -qx 'pendulum_queue_wait_seconds_count{queue="old"} 5' "$BATS_TEST_TMPDIR/before"
	s=$(sql "SELECT min(id) FROM pendulum.jobs WHERE state = 'SUCCEEDED'")
	run pd-admin job replay "$s"
	[ "$status" -eq 0 ]
	run pd-admin dlq replay --queue old
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING'")" = 3 ]
	counters >"$BATS_TEST_TMPDIR/after"
	not_lower "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	grep -qx 'pendulum_queue_wait_seconds_count{queue="old"} 5' "$BATS_TEST_TMPDIR/after"
}
@test "the histogram bounds of the exposition are pendulum.metric_bounds()" {
	make_jobs 1 SUCCEEDED q >/dev/null
	sql "UPDATE pendulum.jobs SET lease_token = 1, started_at = finished_at, run_at = finished_at"
	want=$(sql "SELECT string_agg(b::text, ',') FROM unnest(pendulum.metric_bounds()) b")
	got=$(pd-admin metrics | sed -n 's/^pendulum_queue_wait_seconds_bucket{queue="q",le="\([^"]*\)"}.*/\1/p' | paste -sd,)
	[ "$got" = "$want,+Inf" ]
}
