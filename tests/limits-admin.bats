#!/usr/bin/env bats
# pd-admin and fair shares and limits (issue 23): limit set, unset and
# limits; tenant set and tenants; queue pause and resume (a queue, a job
# type) against a live worker; parked jobs as `jobs` shows them; the
# PAUSED column of queues and top; the limit and pause metrics.

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	sql "DELETE FROM pendulum.limits; DELETE FROM pendulum.tenants"
}

# keyed_job TYPE KEY [QUEUE]: a PENDING job under concurrency key KEY; prints its id.
keyed_job() {
	sql "INSERT INTO pendulum.jobs (queue, job_type, concurrency_key)
	     VALUES ('${3:-default}', '$1', '$2') RETURNING id"
}

# marker_runs QUEUE: enqueue a job of type mark into QUEUE and wait until it
# has succeeded: the worker is alive and claiming.
marker_runs() {
	local id
	id=$(pd-enqueue -q "$1" mark '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
}

@test "limit set, limits and limit unset: a round trip through pendulum.limits" {
	run --separate-stderr pd-admin limit set vendor-x --concurrency 5
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "KEY "*"CONCURRENCY"*"RUNNING"*"RATE"*"WINDOW"*"WAITING"*"PAUSED" ]]
	[[ "${lines[1]}" == "vendor-x "*" 5 "*" no" ]]
	sql_is "SELECT concurrency, rate IS NULL FROM pendulum.limits WHERE key = 'vendor-x'" "5|t"
	# --rate adds a rate and keeps the cap
	run --separate-stderr pd-admin --json limit set vendor-x --rate 100/1m
	[ "$status" -eq 0 ]
	[ "$(jq -c '[.key, .concurrency, .rate, .period_s, .window_used, .paused]' <<<"$output")" = \
		'["vendor-x",5,100,60,0,false]' ]
	sql_is "SELECT concurrency, rate, period FROM pendulum.limits WHERE key = 'vendor-x'" "5|100|00:01:00"
	pd-admin limit set tenant:acme --concurrency 10 --rate 20/2s >/dev/null
	sql_is "SELECT concurrency, rate, period FROM pendulum.limits WHERE key = 'tenant:acme'" "10|20|00:00:02"
	# limits: one line a key, in key order
	run --separate-stderr pd-admin limits
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[1]}" =~ ^tenant:acme\ +10\ +0\ +20/2s\ +0/20\ +0\ +no$ ]]
	[[ "${lines[2]}" =~ ^vendor-x\ +5\ +0\ +100/1m\ +0/100\ +0\ +no$ ]]
	run --separate-stderr pd-admin --json limits
	[ "$(jq -r .key <<<"$output" | tr '\n' ' ')" = "tenant:acme vendor-x " ]
	# none takes one cap away; with none left the row goes
	pd-admin limit set vendor-x --concurrency none >/dev/null
	sql_is "SELECT concurrency IS NULL, rate FROM pendulum.limits WHERE key = 'vendor-x'" "t|100"
	run --separate-stderr pd-admin limit set vendor-x --rate none
	[ "$status" -eq 0 ]
	[ "$output" = "limit vendor-x caps nothing now: removed" ]
	sql_is "SELECT count(*) FROM pendulum.limits WHERE key = 'vendor-x'" 0
	# unset: the row goes; a second time there is none (2)
	run --separate-stderr pd-admin limit unset tenant:acme
	[ "$status" -eq 0 ]
	[ "$output" = "limit tenant:acme removed; its waiting jobs may run" ]
	sql_is "SELECT count(*) FROM pendulum.limits" 0
	run --separate-stderr pd-admin limit unset tenant:acme
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: no limit on key 'tenant:acme'" ]
	run --separate-stderr pd-admin limits
	[ "$output" = "KEY  CONCURRENCY  RUNNING  RATE  WINDOW  WAITING  PAUSED" ]
}

@test "tenant set --weight and tenants: a round trip through pendulum.tenants" {
	run --separate-stderr pd-admin tenant set acme --weight 3
	[ "$status" -eq 0 ]
	[ "$output" = "tenant acme weight 3" ]
	sql_is "SELECT weight FROM pendulum.tenants WHERE tenant_id = 'acme'" 3
	pd-admin tenant set big --weight 1000 >/dev/null
	run --separate-stderr pd-admin --json tenants
	[ "$status" -eq 0 ]
	[ "$(jq -c '[.tenant, .weight]' <<<"$output" | tr '\n' ' ')" = '["acme",3] ["big",1000] ' ]
	run --separate-stderr pd-admin tenants
	[[ "${lines[1]}" =~ ^acme\ +3\  ]]
	run --separate-stderr pd-admin tenant set acme --weight default
	[ "$status" -eq 0 ]
	[ "$output" = "tenant acme weight 1 (the default)" ]
	sql_is "SELECT string_agg(tenant_id, ',') FROM pendulum.tenants" big
}

@test "queue pause: no start for 5 s while a worker claims; enqueue works; resume starts them before the next poll (30 s)" {
	local d t0 i
	d=$BATS_TEST_TMPDIR
	run --separate-stderr pd-admin queue pause held
	[ "$status" -eq 0 ]
	[[ "$output" == "queue held paused: "* ]]
	# enqueue still works while paused
	for i in 1 2 3; do
		pd-enqueue -q held work '{}' >/dev/null
	done
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE queue = 'held' AND state = 'PENDING'" 3
	# a long poll: only a notification wakes it within a second
	start_worker w -q held -q alive --poll 30s --lease 2s \
		--handler "work=$(counting_handler "$d/started")" --handler 'mark=true'
	# 5 s of claims that take the other queue's jobs and none of the paused one
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 5 ]; do
		marker_runs alive
	done
	[ "$(lines "$d/started")" -eq 0 ]
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE queue = 'held' AND state = 'PENDING' AND attempt = 0" 3
	# visible: queues, top, metrics
	[ "$(pd-admin --json queues | jq -r 'select(.queue == "held") | .paused')" = true ]
	[ "$(pd-admin --json queues | jq -r 'select(.queue == "alive") | .paused')" = false ]
	run --separate-stderr pd-admin top --once
	[[ "$output" == *$'\npaused: queue:held\n'* ]]
	run --separate-stderr pd-admin metrics
	[[ "$output" == *$'\npendulum_queue_paused{queue="held"} 1\n'* ]]
	[[ "$output" == *$'\npendulum_queue_paused{queue="alive"} 0\n'* ]]
	run --separate-stderr pd-admin queue pause held
	[ "$output" = "queue held was paused already" ]
	# resume: all three start on the notification, not at the next poll
	# (30 s); how soon is not checked here
	run --separate-stderr pd-admin queue resume held
	[ "$status" -eq 0 ]
	[ "$output" = "queue held resumed" ]
	wait_for 20 lines_at_least "$d/started" 3
	sql_is "SELECT count(*) FROM pendulum.limits" 0
	run --separate-stderr pd-admin queue resume held
	[ "$output" = "queue held was not paused" ]
	run --separate-stderr pd-admin metrics
	[[ "$output" == *$'\npendulum_queue_paused{queue="held"} 0\n'* ]]
}

@test "queue pause --type: that type's jobs park, jobs shows them paused; resume runs them" {
	local d id
	d=$BATS_TEST_TMPDIR
	run --separate-stderr pd-admin --json queue pause --type slow
	[ "$status" -eq 0 ]
	[ "$(jq -c '[.key, .type, .paused, .changed]' <<<"$output")" = '["type:slow","slow",true,true]' ]
	id=$(pd-enqueue slow '{}')
	start_worker w --poll 30s --lease 2s --handler "slow=$(counting_handler "$d/slow")" --handler 'mark=true'
	marker_runs default
	wait_for 10 sql_is "SELECT parked_on FROM pendulum.jobs WHERE id = $id" type:slow
	marker_runs default
	[ "$(lines "$d/slow")" -eq 0 ]
	run --separate-stderr pd-admin jobs --type slow
	[[ "${lines[1]}" == "$id "*" PENDING (paused: type:slow) "* ]]
	run --separate-stderr pd-admin --json jobs --type slow
	[ "$(jq -c '[.state, .parked_on, .held]' <<<"$output")" = '["PENDING","type:slow","paused"]' ]
	run --separate-stderr pd-admin metrics
	[[ "$output" == *$'\npendulum_limit_waiting{key="type:slow"} 1\n'* ]]
	run --separate-stderr pd-admin queue resume --type slow
	[ "$status" -eq 0 ]
	[ "$output" = "job type slow resumed" ]
	wait_for 30 lines_at_least "$d/slow" 1
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
}

@test "jobs shows jobs held by a full rate window or a full cap; metrics count them; job show the key" {
	local d r1 r2 c1 c2
	d=$BATS_TEST_TMPDIR
	pd-admin limit set rk --rate 1/1h >/dev/null
	pd-admin limit set ck --concurrency 1 >/dev/null
	r1=$(keyed_job quick rk)
	c1=$(keyed_job gated ck)
	start_worker w --poll 200ms --lease 2s --handler 'quick=true' \
		--handler "gated=$(counting_handler "$d/gated" "while [ ! -e '$d/gate' ]; do sleep 0.05; done")"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $r1" SUCCEEDED
	wait_for 10 lines_at_least "$d/gated" 1
	r2=$(keyed_job quick rk)
	c2=$(keyed_job gated ck)
	wait_for 10 sql_is "SELECT parked_on FROM pendulum.jobs WHERE id = $r2" rk
	wait_for 10 sql_is "SELECT parked_on FROM pendulum.jobs WHERE id = $c2" ck
	run --separate-stderr pd-admin jobs
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\n'"$r2 "*" PENDING (rate-limited: rk) "* ]]
	[[ "$output" == *$'\n'"$c2 "*" PENDING (waiting: ck) "* ]]
	[[ "$output" == *$'\n'"$c1 "*" RUNNING "* ]]
	run --separate-stderr pd-admin --json jobs --type gated
	[ "$(jq -c 'select(.id == '"$c2"') | [.state, .concurrency_key, .parked_on, .held]' <<<"$output")" = \
		'["PENDING","ck","ck","waiting"]' ]
	[ "$(jq -c 'select(.id == '"$c1"') | [.state, .parked_on, .held]' <<<"$output")" = '["RUNNING",null,null]' ]
	run --separate-stderr pd-admin limits
	[[ "$output" == *$'\nck '*' 1 '*' 1 '*' - '*' - '*' 1 '*' no'* ]]
	[[ "$output" == *$'\nrk '*' - '*' 0 '*' 1/1h '*' 1/1 '*' 1 '*' no'* ]]
	run --separate-stderr pd-admin metrics
	[[ "$output" == *$'\npendulum_limit_running{key="ck"} 1\n'* ]]
	[[ "$output" == *$'\npendulum_limit_waiting{key="ck"} 1\n'* ]]
	[[ "$output" == *$'\npendulum_limit_running{key="rk"} 0\n'* ]]
	[[ "$output" == *$'\npendulum_limit_waiting{key="rk"} 1\n'* ]]
	run --separate-stderr pd-admin job show "$c2"
	[[ "$output" == *$'\nconcurrency_key     ck\n'* ]]
	[[ "$output" == *$'\nparked_on           ck\n'* ]]
	# the slot frees: the parked one runs
	touch "$d/gate"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $c2" SUCCEEDED
}
