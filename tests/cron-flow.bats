#!/usr/bin/env bats
# Scheduled workflows (issue 24 part 7): a crontab line '# pd: workflow=NAME'
# (command '-') or a schedule of type workflow:NAME starts a run of NAME per
# occurrence (pendulum.cron_enqueue, sql/027), keyed by the occurrence, its
# payload the run's input; pd-cron check names the workflow and warns when
# the config does not define it.
#
# Minutes are not waited for: as in cron.bats, an outage is simulated by
# moving a schedule's progress into the past (outage below), and one
# `pd-cron run --once` catches the missed occurrences up.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.cron_schedules CASCADE"
	D=$BATS_TEST_TMPDIR
	CFG=$D/pendulum.yaml
	# order: its first step echoes the run's input, the second adds to it.
	cat >"$CFG" <<-'EOF'
		workflows:
		  order:
		    steps:
		      - name: take
		        run: 'jq -c "{took: .input}"'
		      - name: ship
		        run: 'jq -c "{shipped: .outputs.take.took}"'
	EOF
	# Every minute, each missed occurrence caught up, a run whatever the last one does.
	cat >"$D/orders" <<-'EOF'
		# pd: name=orders workflow=order misfire=FIRE_ALL overlap=allow
		* * * * * -
	EOF
}

# outage NAME INTERVAL: as if the last tick was INTERVAL before the current
# whole minute (cron.bats).
outage() {
	sql "UPDATE pendulum.cron_schedules
	     SET last_fired_at = date_trunc('minute', now()) - interval '$2',
	         next_fire_at = date_trunc('minute', now()) - interval '$2'
	     WHERE name = '$1'" >/dev/null
}

# earlier: as if every occurrence recorded so far was 10 minutes earlier (its
# fire row moved, its job's key no longer the minute's), so that the current
# minute can fire again.
earlier() {
	sql "UPDATE pendulum.cron_fires SET fire_at = fire_at - interval '10 minutes';
	     UPDATE pendulum.jobs SET idempotency_key = idempotency_key || ':earlier'" >/dev/null
}

# runs_of WORKFLOW: how many runs of WORKFLOW there are.
runs_of() {
	sql "SELECT count(*) FROM pendulum.workflow_runs WHERE workflow = '$1'"
}

# tick: one pd-cron run --once; prints what it says it enqueued.
tick() {
	pd-cron run --once 2>/dev/null | sed -n 's/^enqueued \([0-9]*\),.*/\1/p'
}

@test "a '* * * * *' crontab line with workflow=order: one run a minute, keyed by the occurrence" {
	run --separate-stderr pd-cron apply "$D/orders"
	[ "$status" -eq 0 ]
	[ "$output" = "create orders" ]
	[ "$(sql "SELECT job_type || ' ' || payload::text FROM pendulum.cron_schedules")" = 'workflow:order {"crontab": "orders"}' ]
	outage orders '5 minutes'
	m0=$(sql "SELECT extract(epoch FROM date_trunc('minute', now()))::bigint / 60")
	n=$(tick)
	# five minutes missed, six when a minute began meanwhile
	[ "$n" -ge 5 ]
	[ "$n" -le 6 ]
	[ "$(runs_of order)" -eq "$n" ]
	# each run's job is of the workflow, due at its minute, keyed by it; consecutive minutes
	[ "$(sql "SELECT count(DISTINCT j.run_at), bool_and(j.run_at = date_trunc('minute', j.run_at)),
	              max(j.run_at) - min(j.run_at) = ($n - 1) * interval '1 minute',
	              bool_and(j.job_type = 'workflow:order'),
	              bool_and(j.idempotency_key = 'cron:' || s.id || ':' ||
	                       to_char(j.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))
	          FROM pendulum.workflow_runs r JOIN pendulum.jobs j ON j.id = r.job_id
	          CROSS JOIN pendulum.cron_schedules s")" = "$n|t|t|t|t" ]
	# the schedule's payload is each run's input; each occurrence recorded with the run's job
	[ "$(sql "SELECT DISTINCT input::text FROM pendulum.workflow_runs")" = '{"crontab": "orders"}' ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_fires f JOIN pendulum.workflow_runs r ON r.job_id = f.job_id
	          WHERE f.kind = 'fired'")" -eq "$n" ]
	# not due again: nothing more, but for a minute begun since the first tick
	k=$(tick)
	m1=$(sql "SELECT extract(epoch FROM date_trunc('minute', now()))::bigint / 60")
	[ "$k" -le "$((m1 - m0))" ]
	[ "$(runs_of order)" -eq "$((n + k))" ]
	# pd-admin flow runs lists them, pd-cron list shows the schedule's type and last job
	run --separate-stderr pd-admin --json flow runs
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '"workflow":"order"')" -eq "$((n + k))" ]
	run --separate-stderr pd-cron --json list
	[ "$status" -eq 0 ]
	[[ "$output" == *'"type":"workflow:order"'* ]]
	[[ "$output" == *"\"last_job\":$(sql "SELECT max(job_id) FROM pendulum.workflow_runs")"* ]]
}

@test "one run per occurrence: racing tickers, and a ticker re-firing into the keys" {
	pd-cron apply "$D/orders" >/dev/null
	for round in 1 2; do
		sql "TRUNCATE pendulum.jobs CASCADE"
		outage orders '10 minutes'
		start_bg tick-a pd-cron run --once
		start_bg tick-b pd-cron run --once
		wait_bg tick-a
		wait_bg tick-b
		n=$(runs_of order)
		[ "$n" -ge 10 ] || { echo "round $round: $n runs"; return 1; }
		[ "$n" -le 11 ] || { echo "round $round: $n runs"; return 1; }
		# every job a run's, one a key
		[ "$(sql "SELECT count(*), count(DISTINCT idempotency_key) FROM pendulum.jobs")" = "$n|$n" ] ||
			{ echo "round $round: jobs and runs differ"; return 1; }
		# the two together report every run once as new
		total=$(($(sed -n 's/^enqueued \([0-9]*\),.*/\1/p' "$BATS_FILE_TMPDIR/tick-a.out") + $(sed -n 's/^enqueued \([0-9]*\),.*/\1/p' "$BATS_FILE_TMPDIR/tick-b.out")))
		[ "$total" -eq "$n" ] || { echo "round $round: reported $total, have $n"; return 1; }
	done
	# a ticker that died after the runs and before its progress fires them again: the keys hold
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = date_trunc('minute', now()) - interval '10 minutes',
	     next_fire_at = date_trunc('minute', now()) - interval '10 minutes'"
	before=$(runs_of order)
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[[ "$output" == "enqueued "[01]", already enqueued 1"[01]", disabled 0" ]]
	new=${output#enqueued }
	new=${new%%,*}
	[ "$(runs_of order)" -eq $((before + new)) ]
	[ "$(sql "SELECT count(*) - count(DISTINCT idempotency_key) FROM pendulum.jobs")" -eq 0 ]
}

@test "the crontab's runs go to SUCCEEDED with a worker serving the workflow; overlap skip waits for the run" {
	# the crontab default: overlap skip, FIRE_ONCE
	printf '# pd: name=orders workflow=order\n* * * * * -\n' >"$D/orders"
	pd-cron apply "$D/orders" >/dev/null
	outage orders '3 minutes'
	[ "$(tick)" -eq 1 ]
	id=$(sql "SELECT id FROM pendulum.workflow_runs")
	# its run still PENDING: the next occurrence is skipped, naming the run's job
	earlier
	outage orders '2 minutes'
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[[ "$output" == *"skipped 1 (overlap)"* ]]
	[ "$(runs_of order)" -eq 1 ]
	run --separate-stderr timeout 60 pd-worker -c "$CFG" --until-idle --poll 100ms --lease 2s
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $id")" = SUCCEEDED ]
	[ "$(sql "SELECT string_agg(step_name || '=' || output::text, ' ' ORDER BY step_index)
	          FROM pendulum.workflow_steps WHERE run_id = $id")" = \
		'take={"took": {"crontab": "orders"}} ship={"shipped": {"crontab": "orders"}}' ]
	run --separate-stderr pd-cron history orders
	[ "$status" -eq 0 ]
	[[ "${lines[*]}" == *"fired "*"SUCCEEDED"* ]]
	[[ "${lines[*]}" == *"skipped"* ]]
	[ "$(sql "SELECT busy_job_id FROM pendulum.cron_fires WHERE kind = 'skipped'")" = "$(sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $id")" ]
	# the run is over: the next occurrence starts the next run
	earlier
	outage orders '1 minute'
	[ "$(tick)" -eq 1 ]
	[ "$(runs_of order)" -eq 2 ]
}

@test "a schedules file's type workflow:order, pd-cron add --type workflow:order, and trigger" {
	cat >"$D/s.yaml" <<-'EOF'
		schedules:
		  - name: nightly
		    cron: "0 3 * * *"
		    timezone: UTC
		    type: workflow:order
		    payload: {sku: tea, n: 3}
		    max_attempts: 2
	EOF
	run --separate-stderr pd-cron -c "$CFG" check "$D/s.yaml"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "nightly (line 2): 0 3 * * *  UTC" ]
	[ "${lines[2]}" = "  workflow: order (defined in $CFG, 2 steps)" ]
	[ -z "$stderr" ]
	pd-cron apply "$D/s.yaml" >/dev/null
	outage nightly '1 day'
	[ "$(tick)" -eq 1 ]
	[ "$(sql "SELECT r.input::text || ' ' || j.max_attempts FROM pendulum.workflow_runs r
	          JOIN pendulum.jobs j ON j.id = r.job_id")" = '{"n": 3, "sku": "tea"} 2' ]
	run --separate-stderr pd-cron add hourly --cron '@hourly' --tz UTC --type workflow:order --payload '{"sku": "cup"}'
	[ "$status" -eq 0 ]
	run --separate-stderr pd-cron trigger hourly
	[ "$status" -eq 0 ]
	job=${output##* }
	[ "$(sql "SELECT r.workflow || ' ' || r.input::text FROM pendulum.workflow_runs r WHERE r.job_id = $job")" = 'order {"sku": "cup"}' ]
	run --separate-stderr timeout 60 pd-worker -c "$CFG" --until-idle --poll 100ms --lease 2s
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT string_agg(state, ' ') FROM pendulum.workflow_run_states")" = "SUCCEEDED SUCCEEDED" ]
	[ "$(sql "SELECT output::text FROM pendulum.workflow_steps s JOIN pendulum.workflow_runs r ON r.id = s.run_id
	          WHERE r.job_id = $job AND s.step_name = 'ship'")" = '{"shipped": {"sku": "cup"}}' ]
}

@test "pd-cron check: the workflow shown, a warning when the config lacks it; prune deletes a removed workflow line" {
	printf '# pd: name=orders workflow=order\n* * * * * -\n# pd: name=nope workflow=nosuch\n@daily -\n@hourly echo hi\n' >"$D/jobs"
	run --separate-stderr pd-cron check "$D/jobs"
	[ "$status" -eq 0 ]
	[[ "$output" == *"orders (line 2): * * * * *"*"  workflow: order (not checked: no configuration file)"* ]]
	[[ "$output" != *"command: -"* ]]
	run --separate-stderr pd-cron -c "$CFG" check "$D/jobs"
	[ "$status" -eq 0 ]
	[[ "$output" == *"  workflow: order (defined in $CFG, 2 steps)"* ]]
	[[ "$output" == *"  workflow: nosuch (not defined in $CFG)"* ]]
	[[ "$output" == *"  command: echo hi"* ]]
	[ "$stderr" = "pd-cron: warning: $D/jobs:4: schedule 'nope': workflow 'nosuch' is not defined in $CFG (workflows:); its runs wait for a worker that defines it" ]
	run --separate-stderr pd-cron -c "$CFG" --json check "$D/jobs"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *'"type":"workflow:order"'*'"workflow":"order","workflow_check":"defined in '* ]]
	json_lines_ok
	# apply, then the workflow lines removed: --prune deletes them, not another file's
	pd-cron apply "$D/jobs" >/dev/null
	printf '# pd: name=theirs workflow=order\n@daily -\n' >"$D/other"
	pd-cron apply "$D/other" >/dev/null
	printf '@hourly echo hi\n' >"$D/jobs"
	run --separate-stderr pd-cron apply --prune "$D/jobs"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "$output" == *"delete nope"* ]]
	[[ "$output" == *"delete orders"* ]]
	[ "$(sql "SELECT string_agg(name, ' ' ORDER BY name) FROM pendulum.cron_schedules WHERE job_type LIKE 'workflow:%'")" = theirs ]
	# a command other than '-', and a timeout: refused, naming the line
	printf '# pd: workflow=order\n* * * * * echo hi\n' >"$D/bad"
	run --separate-stderr pd-cron check "$D/bad"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"$D/bad:2:11: the command of a workflow=order line must be '-'"* ]]
	printf '# pd: workflow=order timeout=1m\n* * * * * -\n' >"$D/bad"
	run --separate-stderr pd-cron check "$D/bad"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"$D/bad:2:1: invalid timeout for workflow 'order'"* ]]
}

@test "pd-worker --crontab with workflow lines: applies and ticks them, runs the config's steps, serves no '-'" {
	printf '# pd: name=orders workflow=order\n* * * * * -\n# pd: name=refunds workflow=refund\n@daily -\n@daily echo hi\n' >"$D/orders"
	start_worker w1 -c "$CFG" --crontab "$D/orders" --lease 2s --poll 100ms
	wait_for 20 sql_is "SELECT count(*) FROM pendulum.cron_schedules" 3
	# refund, which the config does not define, is no handler of the worker: its run waits, unserved
	outage refunds '1 day'
	wait_for 20 sql_is "SELECT job_type FROM pendulum.unserved" workflow:refund
	outage orders '2 minutes'
	wait_for 30 sql_is "SELECT count(*) > 0 FROM pendulum.workflow_run_states WHERE state = 'SUCCEEDED'" t
	[ "$(sql "SELECT count(*) FROM pendulum.workflow_run_states WHERE state IN ('DEAD_LETTERED', 'CANCELLED')")" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE job_type = 'workflow:refund'")" = "PENDING 0" ]
	[ "$(sql "SELECT count(*) FROM pendulum.attempt_rows WHERE exit_code <> 0")" -eq 0 ]
	[ "$(sql "SELECT output::text FROM pendulum.workflow_steps WHERE step_name = 'ship' LIMIT 1")" = '{"shipped": {"crontab": "orders"}}' ]
}
