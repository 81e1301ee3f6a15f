#!/usr/bin/env bats
# pd-cron operations (issue 14): overlap skip (never two runs at once, the
# skipped occurrences in history), a fixed jitter per schedule, the jobs'
# attempts and timeout, trigger, history, list's last fire and job, and
# --json before or after the command.
#
# The ticker is driven with `pd-cron run --once` after moving a schedule's
# progress into the past (rewind below), never by waiting for real minutes;
# every wait is bounded.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.cron_schedules CASCADE"
}

# rewind NAME MINUTES: as if the last tick was MINUTES before the current
# whole minute (due now; FIRE_ALL then fires every minute since).
rewind() {
	sql "UPDATE pendulum.cron_schedules
	     SET last_fired_at = date_trunc('minute', now()) - interval '$2 minutes',
	         next_fire_at = date_trunc('minute', now()) - interval '$2 minutes' + interval '1 minute'
	     WHERE name = '$1'" >/dev/null
}

# tick_after NAME MINUTES: rewind, then one tick (sets $status and $output).
tick_after() {
	rewind "$1" "$2"
	run --separate-stderr pd-cron run --once
}

# njobs_of NAME: the number of jobs of schedule NAME.
njobs_of() {
	sql "SELECT count(*) FROM pendulum.jobs j JOIN pendulum.cron_schedules s
	     ON j.idempotency_key LIKE 'cron:' || s.id || ':%' WHERE s.name = '$1'"
}

# active_of NAME: how many of its jobs are PENDING, BLOCKED, LEASED or RUNNING.
active_of() {
	sql "SELECT count(*) FROM pendulum.jobs j JOIN pendulum.cron_schedules s
	     ON j.idempotency_key LIKE 'cron:' || s.id || ':%' WHERE s.name = '$1'
	     AND j.state IN ('PENDING', 'BLOCKED', 'LEASED', 'RUNNING')"
}

# skipped_of NAME: its occurrences recorded as skipped.
skipped_of() {
	sql "SELECT count(*) FROM pendulum.cron_fires f JOIN pendulum.cron_schedules s
	     ON s.id = f.schedule_id WHERE s.name = '$1' AND f.kind = 'skipped'"
}

# max_running LOG: the most handlers that were running at once, from their
# "start"/"end" lines.
max_running() {
	awk '/^start/ { n++; if (n > m) m = n } /^end/ { n-- } END { print m + 0 }' "$1"
}

@test "overlap skip: never two runs at once; the skipped occurrences are in history" {
	log=$BATS_TEST_TMPDIR/runs
	gate=$BATS_TEST_TMPDIR/gate
	cat >"$BATS_TEST_TMPDIR/s.yaml" <<-EOF
		schedules:
		  - name: long
		    cron: "* * * * *"
		    timezone: UTC
		    type: long
		    misfire: FIRE_ALL
		    overlap: skip
	EOF
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/s.yaml"
	[ "$status" -eq 0 ]
	# three missed minutes: the first fires, the two after it find it pending
	tick_after long 3
	[ "$status" -eq 0 ]
	[[ "$output" == "enqueued 1, already enqueued 0, disabled 0, skipped "[23]" (overlap)" ]]
	[ "$(njobs_of long)" -eq 1 ]
	[ "$(skipped_of long)" -ge 2 ]
	start_worker w -j 4 --poll 100ms --handler "long=echo start >>'$log'; while [ ! -e '$gate' ]; do sleep 0.05; done; echo end >>'$log'"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs" RUNNING
	# while it runs, every occurrence is skipped, naming the running job
	tick_after long 10
	[ "$status" -eq 0 ]
	[[ "$output" == "enqueued 0, already enqueued 0, disabled 0, skipped "* ]]
	[ "$(njobs_of long)" -eq 1 ]
	[ "$(active_of long)" -eq 1 ]
	[ "$(skipped_of long)" -ge 9 ]
	job=$(sql "SELECT id FROM pendulum.jobs")
	run --separate-stderr pd-cron history long -n 50
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == FIRE_AT*KIND*JOB*STATE*ATTEMPTS*EXIT*DURATION* ]]
	[ "$(printf '%s\n' "$output" | grep -c " skipped  ($job) ")" -ge 9 ]
	[ "$(printf '%s\n' "$output" | grep -c " fired  *$job  *RUNNING ")" -eq 1 ]
	run --separate-stderr pd-cron --json history long -n 50
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -s -e "map(select(.kind == \"skipped\")) | length >= 9 and all(.busy_job_id == $job and .job_id == null)"
	# it ends; the next tick fires again, one job at a time
	touch "$gate"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	tick_after long 20
	[ "$status" -eq 0 ]
	[[ "$output" == "enqueued 1, "* ]]
	[ "$(active_of long)" -le 1 ]
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 2
	[ "$(lines "$log")" -eq 4 ]
	[ "$(max_running "$log")" -eq 1 ]
}

@test "overlap allow (the YAML default) enqueues every occurrence" {
	cat >"$BATS_TEST_TMPDIR/s.yaml" <<-EOF
		schedules:
		  - name: many
		    cron: "* * * * *"
		    timezone: UTC
		    type: t
		    misfire: FIRE_ALL
	EOF
	pd-cron apply "$BATS_TEST_TMPDIR/s.yaml" >/dev/null
	tick_after many 3
	[ "$status" -eq 0 ]
	[[ "$output" == "enqueued "[34]", already enqueued 0, disabled 0" ]]
	[ "$(skipped_of many)" -eq 0 ]
	[ "$(sql "SELECT overlap FROM pendulum.cron_schedules")" = allow ]
}

@test "jitter 30s on 20 @hourly schedules: distinct run_at within 30 s of the hour, kept on re-apply" {
	f=$BATS_TEST_TMPDIR/s.yaml
	{
		echo "schedules:"
		for i in $(seq 1 20); do
			printf '  - {name: hourly-%02d, cron: "@hourly", timezone: UTC, type: t, jitter: 30s}\n' "$i"
		done
	} >"$f"
	run --separate-stderr pd-cron apply "$f"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -c '^create hourly-')" -eq 20 ]
	[ "$(sql "SELECT DISTINCT jitter_ms FROM pendulum.cron_schedules")" = 30000 ]
	# the occurrence at the top of this hour, due now
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = date_trunc('hour', now()) - interval '1 minute',
	     next_fire_at = date_trunc('hour', now())" >/dev/null
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[ "$output" = "enqueued 20, already enqueued 0, disabled 0" ]
	[ "$(sql "SELECT count(DISTINCT run_at) FROM pendulum.jobs")" -eq 20 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE run_at >= date_trunc('hour', now())
	          AND run_at < date_trunc('hour', now()) + interval '30 seconds'")" -eq 20 ]
	# the key and the recorded instant are the unjittered hour
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE idempotency_key LIKE '%:' ||
	          to_char(date_trunc('hour', now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")" -eq 20 ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_fires WHERE fire_at = date_trunc('hour', now())")" -eq 20 ]
	before=$(sql "SELECT s.name, j.run_at FROM pendulum.jobs j JOIN pendulum.cron_fires f ON f.job_id = j.id
	              JOIN pendulum.cron_schedules s ON s.id = f.schedule_id ORDER BY s.name")
	# re-applying changes nothing, and the same hour fires at the same offsets
	run --separate-stderr pd-cron apply "$f"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	reset_jobs
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = date_trunc('hour', now()) - interval '1 minute',
	     next_fire_at = date_trunc('hour', now())" >/dev/null
	run --separate-stderr pd-cron run --once
	[ "$output" = "enqueued 20, already enqueued 0, disabled 0" ]
	after=$(sql "SELECT s.name, j.run_at FROM pendulum.jobs j JOIN pendulum.cron_fires f ON f.job_id = j.id
	             JOIN pendulum.cron_schedules s ON s.id = f.schedule_id ORDER BY s.name")
	[ "$before" = "$after" ]
}

@test "max_attempts and timeout of a schedule go into its jobs; a bad overlap or jitter is 65 at its line" {
	cat >"$BATS_TEST_TMPDIR/s.yaml" <<-EOF
		schedules:
		  - name: bounded
		    cron: "* * * * *"
		    timezone: UTC
		    type: t
		    max_attempts: 2
		    timeout: 90s
	EOF
	pd-cron apply "$BATS_TEST_TMPDIR/s.yaml" >/dev/null
	rewind bounded 1
	pd-cron run --once >/dev/null
	[ "$(sql "SELECT max_attempts || ' ' || timeout FROM pendulum.jobs")" = "2 00:01:30" ]
	printf '    overlap: sometimes\n' >>"$BATS_TEST_TMPDIR/s.yaml"
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/s.yaml"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"s.yaml:8:"*"invalid overlap 'sometimes': expected allow or skip"* ]]
	sed -i 's/overlap: sometimes/jitter: 2d/' "$BATS_TEST_TMPDIR/s.yaml"
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/s.yaml"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"s.yaml:8:"*"'jitter': out of range 0-1d"* ]]
}

@test "trigger fires now with a key of its own; history and list show it, its state, exit status and duration" {
	run --separate-stderr pd-cron add yearly --cron '0 0 1 1 *' --tz Europe/Berlin --type ok
	[ "$status" -eq 0 ]
	run --separate-stderr pd-cron add failing --cron '0 0 1 1 *' --tz UTC --type bad --max-attempts 1
	[ "$status" -eq 0 ]
	run --separate-stderr pd-cron trigger yearly
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^"triggered yearly: job "[0-9]+$ ]]
	job=${output##* }
	[[ "$(sql "SELECT idempotency_key FROM pendulum.jobs WHERE id = $job")" =~ ^cron:[0-9]+:trigger:[0-9]+$ ]]
	[ "$(sql "SELECT run_at <= now() FROM pendulum.jobs WHERE id = $job")" = t ]
	# a second trigger is a second job
	run --separate-stderr pd-cron trigger yearly
	[ "$status" -eq 0 ]
	[ "$(njobs_of yearly)" -eq 2 ]
	run --separate-stderr pd-cron trigger failing
	[ "$status" -eq 0 ]
	run --separate-stderr pd-cron trigger nosuch
	[ "$status" -eq 2 ]
	[[ "$stderr" == "pd-cron: no schedule 'nosuch' in tenant 'default'"* ]]
	run --separate-stderr pd-worker --until-idle --poll 100ms --handler 'ok=true' --handler 'bad=exit 3'
	[ "$status" -eq 0 ]
	run --separate-stderr pd-cron history yearly
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[1]}" =~ Z\ +triggered\ +[0-9]+\ +SUCCEEDED\ +1\ +0\ +[0-9]+m?s ]]
	run --separate-stderr pd-cron history failing --json
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e '.kind == "triggered" and .state == "DEAD_LETTERED" and .attempts == 1 and .exit_code == 3 and (.duration_s | type) == "number"'
	run --separate-stderr pd-cron list --wide
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == NAME*TIMEZONE*NEXT_FIRE*NEXT_FIRE_UTC*LAST_FIRE*LAST_JOB*JOB_STATE*DURATION*REASON*COMMAND ]]
	[[ "${lines[1]}" =~ ^failing\ .*\ UTC\ .*Z\ +[0-9]+\ +DEAD_LETTERED\ +[0-9]+m?s ]]
	[[ "${lines[2]}" =~ ^yearly\ .*Europe/Berlin.*\ CET\ .*Z\ +[0-9]+\ +SUCCEEDED\ +[0-9]+m?s ]]
	run --separate-stderr pd-cron list --json
	printf '%s\n' "$output" | jq -s -e '.[1] | .name == "yearly" and .last_fire_kind == "triggered" and .job_state == "SUCCEEDED" and .overlap == "allow" and .jitter_ms == 0 and .max_attempts == null'
	printf '%s\n' "$output" | jq -s -e '.[0] | .max_attempts == 1'
}

@test "--json before or after the command" {
	pd-cron add x --cron '@daily' --tz UTC --type t >/dev/null
	pd-cron trigger x >/dev/null
	for c in list "history x" "preview @daily -n 2"; do
		# shellcheck disable=SC2086 # a command line
		a=$(pd-cron --json $c)
		# shellcheck disable=SC2086
		b=$(pd-cron $c --json)
		[ -n "$a" ] || { echo "$c: empty"; return 1; }
		[ "$a" = "$b" ] || { echo "$c: '$a' != '$b'"; return 1; }
		printf '%s\n' "$a" | jq -e . >/dev/null || { echo "$c: not JSON"; return 1; }
	done
	run --separate-stderr pd-cron trigger x --json
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e '.name == "x" and (.job_id | type) == "number"'
	run --separate-stderr pd-cron --json trigger x
	printf '%s\n' "$output" | jq -e '(.job_id | type) == "number"'
	run --separate-stderr pd-cron history x --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--json"* ]]
}
