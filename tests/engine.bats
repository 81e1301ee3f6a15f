#!/usr/bin/env bats
# The engine (lib/worker on lib/pool and lib/daemon): lease and heartbeat
# defaults, a retry woken at its run_at rather than at the next poll, a
# batch of outcomes with one stale token, and the ready jobs (claimed ahead of
# a free slot) given back on a drain or after a crash, their starts recorded.

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
}

@test "--lease alone starts: the heartbeat defaults to a third of it" {
	run --separate-stderr pd-worker --lease 5s --handler t=true --until-idle
	[ "$status" -eq 0 ]
	[[ "$stderr" == *'msg="worker started" '*' lease_ms=5000 heartbeat_ms=1666'* ]]
	# the documented defaults: a 30 s lease, a 10 s heartbeat
	run --separate-stderr pd-worker --handler t=true --until-idle
	[ "$status" -eq 0 ]
	[[ "$stderr" == *'msg="worker started" '*' lease_ms=30000 heartbeat_ms=10000'* ]]
	# --lease without --heartbeat: a third of it, whatever the file says
	printf 'worker: {heartbeat: 4s}\n' >"$BATS_TEST_TMPDIR/pd.yaml"
	run --separate-stderr pd-worker -c "$BATS_TEST_TMPDIR/pd.yaml" --lease 6s --handler t=true --until-idle
	[ "$status" -eq 0 ]
	[[ "$stderr" == *' lease_ms=6000 heartbeat_ms=2000'* ]]
	run --separate-stderr pd-worker -c "$BATS_TEST_TMPDIR/pd.yaml" --handler t=true --until-idle
	[ "$status" -eq 0 ]
	[[ "$stderr" == *' lease_ms=30000 heartbeat_ms=4000'* ]]
	run --separate-stderr pd-worker --lease 5s --heartbeat 5s --handler t=true --until-idle
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"heartbeat"*"shorter than the lease"* ]]
	run --separate-stderr pd-worker --lease 0s --handler t=true --until-idle
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--lease"*"longer than 0"* ]]
}

@test "a retry with a 200 ms backoff starts at its backoff, not at the next poll (60 s)" {
	cfg=$BATS_TEST_TMPDIR/pd.yaml
	marker=$BATS_TEST_TMPDIR/failed-once
	printf 'retry: {base: 200ms, cap: 200ms}\n' >"$cfg"
	id=$(pd-enqueue t '{}')
	start_worker w -c "$cfg" -j 1 --poll 60s \
		--handler "t=$(counting_handler "$LOG" "if [ -e '$marker' ]; then exit 0; fi; touch '$marker'; exit 1")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $id")" -eq 2 ]
	gap=$(sql "SELECT (extract(epoch FROM b.started_at - a.finished_at) * 1000)::int
	           FROM pendulum.job_attempts a JOIN pendulum.job_attempts b
	           ON b.job_id = a.job_id AND b.attempt = 2 WHERE a.job_id = $id AND a.attempt = 1")
	echo "gap between attempts: ${gap} ms" >&2
	# Half the poll interval: a worker that waited for its poll is 60 s late.
	# How soon it starts is make bench's "retry start" figure.
	[ "$gap" -lt 30000 ]
}

@test "a batch of outcomes with one stale token: the others land, the stale one is fenced and counted" {
	gate=$BATS_TEST_TMPDIR/gate
	a=$(pd-enqueue t '{}')
	b=$(pd-enqueue t '{}')
	c=$(pd-enqueue t '{}')
	start_worker w -j 3 --lease 30s --heartbeat 10s \
		--handler "t=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done; echo '{\"ok\": 1}'")"
	wait_for 30 lines_at_least "$LOG" 3
	before=$(fenced)
	stale=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $b")
	# someone else holds b now, still RUNNING under a new token
	sql "UPDATE pendulum.jobs SET lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'thief'
	     WHERE id = $b" >/dev/null
	after=$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $b")
	touch "$gate"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE id IN ($a, $c) AND state = 'SUCCEEDED'" 2
	wait_for 10 sql_is "SELECT value FROM pendulum.counters WHERE name = 'writes_fenced'" $((before + 1))
	[ "$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $b")" = "$after" ]
	# nothing of the stale attempt was written: the job row (the thief's) is its only record
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $b AND lease_token = $stale")" -eq 0 ]
	[ "$(sql "SELECT result::text FROM pendulum.jobs WHERE id = $a")" = '{"ok": 1}' ]
}

@test "SIGTERM while short jobs stream through: nothing is left LEASED or RUNNING, unstarted jobs get their attempt back" {
	# Short handlers make the worker claim jobs ahead of its free slots
	# (ready jobs, LEASED); a drain must give those back, not strand them.
	make_jobs 2000 PENDING >/dev/null
	start_worker w -j 4 --no-reap --handler 't=true'
	wait_for 60 sql_is "SELECT count(*) >= 100 FROM pendulum.jobs WHERE state = 'SUCCEEDED'" t
	stop_worker w TERM
	[ "$(bg_status w)" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state IN ('LEASED', 'RUNNING')")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING' AND attempt <> 0")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state NOT IN ('SUCCEEDED', 'PENDING')")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED' AND started_at IS NULL")" -eq 0 ]
}

@test "kill -9 while jobs stream through: every job runs to success once the leases are given back" {
	make_jobs 300 PENDING >/dev/null
	start_worker a -j 4 --lease 2s --no-reap --handler 't=true'
	wait_for 60 sql_is "SELECT count(*) >= 50 FROM pendulum.jobs WHERE state = 'SUCCEEDED'" t
	kill -KILL "$(bg_pid a)"
	# a's ready jobs (LEASED) and running ones come back when their leases expire
	start_worker b -j 4 --lease 2s --handler 't=true'
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state <> 'SUCCEEDED'" 0
	stop_worker b TERM
	[ "$(bg_status b)" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state <> 'SUCCEEDED'")" -eq 0 ]
}

@test "short jobs: every start is recorded, by the start write or by the outcome of a job over before it" {
	make_jobs 300 PENDING >/dev/null
	run --separate-stderr pd-worker -j 4 --until-idle --handler 't=true'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'")" -eq 300 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE started_at IS NULL")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE started_at > finished_at")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE started_at < created_at")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE started_at > finished_at")" -eq 0 ]
}
