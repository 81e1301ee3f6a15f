#!/usr/bin/env bats
# pd-cron: preview, the schedule commands and their exit codes, the ticker
# (firing, each misfire policy after a simulated outage, catch_up_limit,
# run_at of catch-up jobs, racing tickers, the election, schedules that can
# no longer be evaluated), and apply (idempotent, --dry-run, --prune).
#
# Outages are simulated by moving a schedule's progress into the past
# (outage below), never by sleeping; every wait is bounded.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.cron_schedules CASCADE" # and its pendulum.cron_fires
}

# outage NAME INTERVAL: as if the last tick was INTERVAL before the current
# whole minute: last_fired_at there, and next_fire_at too (due).
outage() {
	sql "UPDATE pendulum.cron_schedules
	     SET last_fired_at = date_trunc('minute', now()) - interval '$2',
	         next_fire_at = date_trunc('minute', now()) - interval '$2'
	     WHERE name = '$1'" >/dev/null
}

# jobs_of NAME: the run_at of each job of schedule NAME, one a line, in order.
jobs_of() {
	sql "SELECT to_char(j.run_at, 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM pendulum.jobs j
	     JOIN pendulum.cron_schedules s ON j.idempotency_key LIKE 'cron:' || s.id || ':%'
	     WHERE s.name = '$1' ORDER BY j.run_at"
}

# A cron expression firing once an hour, at the minute half an hour away
# from the database's current minute: its latest occurrence is about 30
# minutes old whenever the test looks.
half_hour_ago_cron() {
	echo "$(sql "SELECT (extract(minute FROM now())::int + 30) % 60") * * * *"
}

@test "preview: the spring-forward gap in Berlin, one UTC instant a line" {
	run --separate-stderr pd-cron preview '30 2 * * *' --tz Europe/Berlin --from 2026-03-28T00:00:00Z -n 2
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$output" = "$(printf '2026-03-28T01:30:00Z\n2026-03-29T01:30:00Z')" ]
	# --local adds the wall time: 02:30 CET, then 03:30 CEST (shifted past the gap)
	run --separate-stderr pd-cron preview '30 2 * * *' --tz Europe/Berlin --from 2026-03-28T00:00:00Z -n 3 --local
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf '2026-03-28T01:30:00Z\t2026-03-28 02:30:00 CET')" ]
	[ "${lines[1]}" = "$(printf '2026-03-29T01:30:00Z\t2026-03-29 03:30:00 CEST')" ]
	[ "${lines[2]}" = "$(printf '2026-03-30T00:30:00Z\t2026-03-30 02:30:00 CEST')" ]
	run --separate-stderr pd-cron --json preview '30 2 * * *' --tz Europe/Berlin --from 2026-03-28T00:00:00Z -n 1 --local
	[ "$output" = '{"at":"2026-03-28T01:30:00Z","local":"2026-03-28 02:30:00 CET"}' ]
}

@test "preview: --from is included, the default count is 5, and hourly fires 24 times on a fall-back day" {
	run --separate-stderr pd-cron preview '0 * * * *' --from 2026-01-01T10:00:00Z
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	[ "${lines[0]}" = 2026-01-01T10:00:00Z ]
	[ "${lines[4]}" = 2026-01-01T14:00:00Z ]
	run --separate-stderr pd-cron preview '0 * * * *' --from 2026-01-01T10:00:00.5Z -n 1
	[ "$output" = 2026-01-01T11:00:00Z ]
	# New York falls back on 2026-11-01: 25 hours, 24 fires of the local date
	run --separate-stderr pd-cron preview @hourly --tz America/New_York --from 2026-11-01T04:00:00Z -n 30 --local
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -c $'\t2026-11-01 ')" -eq 24 ]
	# Vixie day rule: the 13th or a Friday
	run --separate-stderr pd-cron preview '0 0 13 * fri' --from 2026-02-01T00:00:00Z -n 4
	[ "$output" = "$(printf '2026-02-06T00:00:00Z\n2026-02-13T00:00:00Z\n2026-02-20T00:00:00Z\n2026-02-27T00:00:00Z')" ]
}

@test "preview needs no database, and bad input is refused with the right codes" {
	run --separate-stderr env PD_DATABASE_URL="host=/nonexistent-dir dbname=x" pd-cron preview @daily -n 1 --from 2026-01-01
	[ "$status" -eq 0 ]
	[ "$output" = 2026-01-01T00:00:00Z ]
	run --separate-stderr pd-cron preview '61 * * * *'
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[[ "$stderr" == "pd-cron: invalid cron expression '61 * * * *': minute field '61'"* ]]
	run --separate-stderr pd-cron preview '@daily' --tz '+02:00'
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"time zone '+02:00' is a fixed offset"* ]]
	run --separate-stderr pd-cron preview '30 2 31 2 *'
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"never matches"* ]]
	run --separate-stderr pd-cron preview '@daily' -n 0
	[ "$status" -eq 64 ]
	run --separate-stderr pd-cron preview '@daily' --from tomorrow
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option --from: invalid instant 'tomorrow'"* ]]
	run --separate-stderr pd-cron preview 0 3 '*' '*' '*'
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unexpected argument '3' (quote the expression"* ]]
	run --separate-stderr pd-cron preview
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"missing EXPR"* ]]
}

@test "preview: Feb 29 across 2100 is found; only an expression that can never fire is refused" {
	# How fast (months and days that cannot match skipped, not scanned minute
	# by minute) is make bench's "cron preview" figure.
	run --separate-stderr pd-cron preview '0 0 29 2 *' --from 2096-03-01T00:00:00Z -n 2
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '2104-02-29T00:00:00Z\n2108-02-29T00:00:00Z')" ]
	run --separate-stderr pd-cron preview '0 0 30 2 *'
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[ "$stderr" = "pd-cron: cron expression never matches: day-of-month 30 never falls in February" ]
	run --separate-stderr pd-cron add never --cron '0 0 31 4,6,9,11 *' --tz UTC --type t
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"day-of-month 31 never falls in April, June, September or November"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" = 0 ]
	run --separate-stderr pd-cron preview '0 0 31 4,5 *' --from 2026-01-01T00:00:00Z -n 1
	[ "$output" = 2026-05-31T00:00:00Z ]
}

@test "commands: --help, an unknown command, missing options" {
	run --separate-stderr pd-cron add --help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: pd-cron add NAME --cron EXPR"* ]]
	run --separate-stderr pd-cron frobnicate
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unknown command 'frobnicate'"* ]]
	run --separate-stderr pd-cron add x --cron @daily --type t
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"missing option --tz"* ]]
	[[ "$stderr" == *"Try 'pd-cron add --help'"* ]]
	run --separate-stderr pd-cron add x --cron @daily --tz UTC --type t --misfire sometimes
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"invalid misfire policy 'sometimes'"* ]]
	run --separate-stderr pd-cron add x --cron @daily --tz UTC --type t --catch-up-limit 0
	[ "$status" -eq 64 ]
	run --separate-stderr pd-cron run --interval 0
	[ "$status" -eq 64 ]
	run --separate-stderr pd-cron rm
	[ "$status" -eq 64 ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" -eq 0 ]
}

@test "add, list, pause, resume, rm; exit 1 for an existing name, 2 for an unknown one" {
	run --separate-stderr pd-cron add nightly --cron '30 2 * * *' --tz Europe/Berlin --type report \
		--payload '{"kind": "daily"}' --queue reports --priority high
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^created\ nightly,\ next\ fire\ [0-9-]+T01:30:00Z\ \([0-9-]+\ 02:30:00\ CET\)$ ||
		"$output" =~ ^created\ nightly,\ next\ fire\ [0-9-]+T00:30:00Z\ \([0-9-]+\ 02:30:00\ CEST\)$ ]]
	[ "$(sql "SELECT tenant_id, job_type, payload::text, queue, priority, misfire_policy, catch_up_limit, enabled,
	              last_fired_at <= now() AND last_fired_at > now() - interval '1 minute', next_fire_at > now()
	          FROM pendulum.cron_schedules WHERE name = 'nightly'")" = \
		'default|report|{"kind": "daily"}|reports|10|FIRE_ONCE|100|t|t|t' ]

	run --separate-stderr pd-cron add nightly --cron @daily --tz UTC --type other
	[ "$status" -eq 1 ]
	[ "$stderr" = "pd-cron: schedule 'nightly' already exists in tenant 'default'" ]
	# the same name in another tenant is another schedule
	run --separate-stderr pd-cron add nightly --cron @hourly --tz UTC --type ping -t acme --misfire fire-all --catch-up-limit 7
	[ "$status" -eq 0 ]

	run --separate-stderr pd-cron add bad --cron '* * * *' --tz UTC --type t
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-cron: invalid cron expression '* * * *'"* ]]
	run --separate-stderr pd-cron add bad --cron @daily --tz Mars/Base --type t
	[ "$status" -eq 65 ]
	run --separate-stderr pd-cron add bad --cron @daily --tz UTC --type t --payload '{"a" 1}'
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"invalid payload: invalid JSON at line 1, column 6"* ]]
	run --separate-stderr pd-cron add 'bad name' --cron @daily --tz UTC --type t
	[ "$status" -eq 65 ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" -eq 2 ]

	run --separate-stderr pd-cron list --wide
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == NAME*TENANT*CRON*TIMEZONE*TYPE*STATE*NEXT_FIRE*NEXT_FIRE_UTC*REASON*COMMAND ]]
	[[ "${lines[1]}" == "nightly  acme "*"@hourly"*"UTC"*"active"*" UTC  "*Z* ]]
	[[ "${lines[2]}" == "nightly  default  30 2 * * *  Europe/Berlin"*"active"*" 02:30:00 CE"*T*Z* ]]
	run --separate-stderr pd-cron --json list -t acme
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -s -e '.[0] | .name == "nightly" and .tenant == "acme" and .misfire == "FIRE_ALL"
		and .catch_up_limit == 7 and .enabled == true and .state == "active" and .payload == {}
		and (.next_fire_utc | test("^[0-9-]+T[0-9:]+:00Z$")) and (.next_fire | endswith(" UTC"))'
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]

	run --separate-stderr pd-cron pause nightly
	[ "$status" -eq 0 ]
	[ "$output" = "paused schedule nightly" ]
	[ "$(sql "SELECT enabled, next_fire_at IS NULL FROM pendulum.cron_schedules WHERE tenant_id = 'default'")" = 'f|t' ]
	run --separate-stderr pd-cron --json list -t default
	printf '%s\n' "$output" | jq -e '.state == "paused" and .next_fire == null and .enabled == false'
	# pausing twice is fine; a paused schedule does not fire
	run --separate-stderr pd-cron pause nightly
	[ "$status" -eq 0 ]
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = now() - interval '3 days' WHERE tenant_id = 'default'"
	pd-cron run --once >/dev/null
	[ "$(njobs)" -eq 0 ]
	# resume: from now on, the paused days are not caught up
	run --separate-stderr pd-cron resume nightly
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT enabled, next_fire_at > now() FROM pendulum.cron_schedules WHERE tenant_id = 'default'")" = 't|t' ]
	pd-cron run --once >/dev/null
	[ "$(njobs)" -eq 0 ]

	for cmd in rm pause resume; do
		run --separate-stderr pd-cron "$cmd" nosuch
		[ "$status" -eq 2 ]
		[ "$stderr" = "pd-cron: no schedule 'nosuch' in tenant 'default'" ]
	done
	run --separate-stderr pd-cron rm nightly -t acme
	[ "$status" -eq 0 ]
	run --separate-stderr pd-cron rm nightly -t acme
	[ "$status" -eq 2 ]
	[ "$(sql "SELECT string_agg(tenant_id, ',') FROM pendulum.cron_schedules")" = default ]
}

@test "firing: a due occurrence becomes one job with the schedule's fields, key and run_at" {
	pd-cron add every --cron "$(half_hour_ago_cron)" --tz UTC --type tick --payload '{"n": 1}' \
		--queue q1 --priority 5 -t acme >/dev/null
	outage every '1 hour'
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[ "$output" = "enqueued 1, already enqueued 0, disabled 0" ]
	[[ "$stderr" == *'msg="schedule fired" tenant=acme schedule=every occurrences=1 new=1'* ]]
	id=$(sql "SELECT id FROM pendulum.cron_schedules WHERE name = 'every'")
	# one job, whose run_at is the occurrence (about half an hour ago) and whose key names it
	[ "$(njobs)" -eq 1 ]
	[ "$(sql "SELECT j.tenant_id, j.job_type, j.payload::text, j.queue, j.priority, j.state,
	              j.idempotency_key = 'cron:$id:' || to_char(j.run_at, 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
	              j.run_at = s.last_fired_at, j.run_at = date_trunc('minute', j.run_at),
	              now() - j.run_at BETWEEN interval '28 minutes' AND interval '32 minutes',
	              s.next_fire_at = j.run_at + interval '1 hour'
	          FROM pendulum.jobs j, pendulum.cron_schedules s WHERE s.id = $id")" = \
		'acme|tick|{"n": 1}|q1|5|PENDING|t|t|t|t|t' ]
	[[ "$(sql "SELECT idempotency_key FROM pendulum.jobs")" =~ ^cron:$id:20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:00Z$ ]]
	# not due any more: a second tick does nothing
	run --separate-stderr pd-cron run --once
	[ "$output" = "enqueued 0, already enqueued 0, disabled 0" ]
	[ "$(njobs)" -eq 1 ]
}

@test "misfire policies after a three-hour outage: SKIP none, FIRE_ONCE the latest, FIRE_ALL each" {
	expr=$(half_hour_ago_cron)
	pd-cron add skip --cron "$expr" --tz UTC --type t --misfire SKIP >/dev/null
	pd-cron add once --cron "$expr" --tz UTC --type t >/dev/null
	pd-cron add all --cron "$expr" --tz UTC --type t --misfire FIRE_ALL >/dev/null
	for s in skip once all; do outage "$s" '3 hours'; done
	before=$(sql "SELECT last_fired_at FROM pendulum.cron_schedules WHERE name = 'skip'")
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[ "$output" = "enqueued 4, already enqueued 0, disabled 0" ]
	[[ "$stderr" == *'msg="missed occurrences skipped" tenant=default schedule=skip policy=SKIP'* ]]
	# SKIP: its latest occurrence is half an hour old, beyond the 60 s grace
	[ -z "$(jobs_of skip)" ]
	[ "$(sql "SELECT last_fired_at FROM pendulum.cron_schedules WHERE name = 'skip'")" = "$before" ]
	# FIRE_ONCE: the latest missed occurrence only, at its own instant
	[ "$(jobs_of once | wc -l)" -eq 1 ]
	latest=$(jobs_of once)
	[ "$(sql "SELECT to_char(last_fired_at, 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM pendulum.cron_schedules WHERE name = 'once'")" = "$latest" ]
	[ "$(sql "SELECT now() - '$latest'::timestamptz BETWEEN interval '28 minutes' AND interval '32 minutes'")" = t ]
	# FIRE_ALL: the three missed occurrences, an hour apart, each keeping its run_at
	[ "$(jobs_of all | wc -l)" -eq 3 ]
	[ "$(jobs_of all | tail -n 1)" = "$latest" ]
	[ "$(sql "SELECT string_agg(to_char(j.run_at, 'HH24:MI'), ' ' ORDER BY j.run_at) FROM pendulum.jobs j
	          WHERE j.run_at IN ('$latest'::timestamptz - interval '2 hours', '$latest'::timestamptz - interval '1 hour', '$latest')
	          AND j.idempotency_key LIKE 'cron:' || (SELECT id FROM pendulum.cron_schedules WHERE name = 'all') || ':%'")" = \
		"$(sql "SELECT to_char('$latest'::timestamptz - interval '2 hours', 'HH24:MI') || ' ' ||
		              to_char('$latest'::timestamptz - interval '1 hour', 'HH24:MI') || ' ' || to_char('$latest'::timestamptz, 'HH24:MI')")" ]
	# every schedule now waits for its next occurrence, about half an hour away
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules
	          WHERE next_fire_at BETWEEN now() + interval '28 minutes' AND now() + interval '32 minutes'")" -eq 3 ]
	run --separate-stderr pd-cron run --once
	[ "$output" = "enqueued 0, already enqueued 0, disabled 0" ]
}

@test "SKIP fires an occurrence that is on time (within --skip-grace)" {
	pd-cron add skip --cron '* * * * *' --tz UTC --type t --misfire SKIP >/dev/null
	outage skip '3 hours'
	# the latest minutely occurrence is less than 60 s old
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[ "$(jobs_of skip | wc -l)" -eq 1 ]
	[[ "$(jobs_of skip)" == "$(sql "SELECT to_char(date_trunc('minute', now()), 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")" ||
		"$(jobs_of skip)" == "$(sql "SELECT to_char(date_trunc('minute', now()) - interval '1 minute', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")" ]]
	# with a grace shorter than how late it is, nothing fires
	expr=$(half_hour_ago_cron)
	pd-cron add late --cron "$expr" --tz UTC --type t --misfire SKIP >/dev/null
	outage late '3 hours'
	pd-cron run --once --skip-grace 1h >/dev/null
	[ "$(jobs_of late | wc -l)" -eq 1 ]
}

@test "catch_up_limit: FIRE_ALL keeps the most recent N, each at its occurrence's run_at" {
	pd-cron add all --cron '* * * * *' --tz UTC --type t --misfire FIRE_ALL --catch-up-limit 5 >/dev/null
	outage all '3 hours'
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[ "$output" = "enqueued 5, already enqueued 0, disabled 0" ]
	[[ "$stderr" == *"occurrences=5 new=5"*"dropped_older=yes"* ]]
	[ "$(jobs_of all | wc -l)" -eq 5 ]
	# five consecutive minutes, the last being the schedule's last_fired_at
	[ "$(sql "SELECT max(run_at) - min(run_at), count(DISTINCT run_at), bool_and(run_at = date_trunc('minute', run_at)),
	              max(run_at) = (SELECT last_fired_at FROM pendulum.cron_schedules), max(run_at) > now() - interval '2 minutes'
	          FROM pendulum.jobs")" = '00:04:00|5|t|t|t' ]
	# under the limit, every missed occurrence fires, the first one after the outage began
	sql "TRUNCATE pendulum.jobs CASCADE"
	sql "UPDATE pendulum.cron_schedules SET catch_up_limit = 1000"
	outage all '20 minutes'
	# where outage put it (a second date_trunc of now() could be a minute on)
	start=$(sql "SELECT last_fired_at FROM pendulum.cron_schedules WHERE name = 'all'")
	pd-cron run --once >/dev/null
	[ "$(sql "SELECT min(run_at) = '$start'::timestamptz + interval '1 minute',
	              count(*) = extract(epoch FROM max(run_at) - '$start'::timestamptz) / 60,
	              count(*) = count(DISTINCT idempotency_key)
	          FROM pendulum.jobs")" = 't|t|t' ]
}

@test "two tickers racing the same occurrences produce one job each, many times over" {
	for i in $(seq 1 12); do
		pd-cron add "s$i" --cron '* * * * *' --tz UTC --type t --misfire FIRE_ALL >/dev/null
	done
	for round in 1 2 3 4 5; do
		sql "TRUNCATE pendulum.jobs CASCADE"
		sql "UPDATE pendulum.cron_schedules SET last_fired_at = date_trunc('minute', now()) - interval '10 minutes',
		     next_fire_at = date_trunc('minute', now()) - interval '10 minutes'"
		start_bg tick-a pd-cron run --once
		start_bg tick-b pd-cron run --once
		wait_bg tick-a
		wait_bg tick-b
		# one job per occurrence: 10 (or 11 when a minute passed) per schedule
		[ "$(sql "SELECT count(*) = count(DISTINCT (tenant_id, idempotency_key)) FROM pendulum.jobs")" = t ] ||
			{ echo "round $round: duplicate jobs"; return 1; }
		[ "$(sql "SELECT bool_and(n BETWEEN 10 AND 11) FROM (SELECT count(*) n FROM pendulum.jobs GROUP BY split_part(idempotency_key, ':', 2)) c")" = t ]
		[ "$(sql "SELECT count(DISTINCT split_part(idempotency_key, ':', 2)) FROM pendulum.jobs")" -eq 12 ]
		# the two together report every job once as new
		total=$(($(sed -n 's/^enqueued \([0-9]*\),.*/\1/p' "$BATS_FILE_TMPDIR/tick-a.out") + $(sed -n 's/^enqueued \([0-9]*\),.*/\1/p' "$BATS_FILE_TMPDIR/tick-b.out")))
		[ "$total" -eq "$(njobs)" ] || { echo "round $round: reported $total, have $(njobs)"; return 1; }
	done
}

@test "a ticker that died after the insert re-fires into the unique key harmlessly" {
	pd-cron add all --cron '* * * * *' --tz UTC --type t --misfire FIRE_ALL >/dev/null
	outage all '5 minutes'
	pd-cron run --once >/dev/null
	n=$(njobs)
	[ "$n" -ge 5 ]
	# the progress is lost (as if the ticker died before recording it): fire again
	outage all '5 minutes'
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^enqueued\ [01],\ already\ enqueued\ [0-9]+,\ disabled\ 0$ ]]
	[[ "$output" == *"already enqueued $n,"* || "$output" == *"already enqueued $((n - 1)),"* ]]
	[ "$(sql "SELECT count(*) = count(DISTINCT idempotency_key) FROM pendulum.jobs")" = t ]
}

@test "a stored schedule that can no longer be evaluated disables itself; the others still fire" {
	for s in good badcron badzone; do
		pd-cron add "$s" --cron '* * * * *' --tz UTC --type t >/dev/null
		outage "$s" '5 minutes'
	done
	sql "UPDATE pendulum.cron_schedules SET cron = 'every day at noon' WHERE name = 'badcron'"
	sql "UPDATE pendulum.cron_schedules SET timezone = 'Atlantis/Capital' WHERE name = 'badzone'"
	run --separate-stderr pd-cron run --once
	[ "$status" -eq 0 ]
	[ "$output" = "enqueued 1, already enqueued 0, disabled 2" ]
	[ "$(jobs_of good | wc -l)" -eq 1 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -eq 1 ]
	[ "$(sql "SELECT enabled, next_fire_at IS NULL FROM pendulum.cron_schedules WHERE name = 'badcron'")" = "f|t" ]
	[[ "$(sql "SELECT disabled_reason FROM pendulum.cron_schedules WHERE name = 'badcron'")" == "invalid cron expression 'every day at noon'"* ]]
	[[ "$(sql "SELECT disabled_reason FROM pendulum.cron_schedules WHERE name = 'badzone'")" == "unknown time zone 'Atlantis/Capital'"* ]]
	[[ "$stderr" == *'level=warn msg="schedule disabled: it can no longer be evaluated" tenant=default schedule=badzone reason="unknown time zone '"'Atlantis/Capital'"* ]]
	[ "$(sql "SELECT enabled FROM pendulum.cron_schedules WHERE name = 'good'")" = t ]
	run --separate-stderr pd-cron --json list
	printf '%s\n' "$output" | jq -s -e 'map(select(.name == "badzone"))[0] | .state == "disabled" and (.disabled_reason | startswith("unknown time zone"))'
	# resume checks again and refuses
	run --separate-stderr pd-cron resume badzone
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-cron: cannot resume schedule 'badzone': unknown time zone 'Atlantis/Capital'"* ]]
	# fixed, it can be resumed
	sql "UPDATE pendulum.cron_schedules SET timezone = 'UTC' WHERE name = 'badzone'"
	run --separate-stderr pd-cron resume badzone
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT enabled, disabled_reason IS NULL FROM pendulum.cron_schedules WHERE name = 'badzone'")" = 't|t' ]
}

@test "a schedule whose jobs the database refuses disables itself; the others still fire" {
	pd-cron add refused --cron '* * * * *' --tz UTC --type forbidden >/dev/null
	pd-cron add fine --cron '* * * * *' --tz UTC --type t >/dev/null
	outage refused '5 minutes'
	outage fine '5 minutes'
	sql "ALTER TABLE pendulum.jobs ADD CONSTRAINT cron_test_no_forbidden CHECK (job_type <> 'forbidden')"
	run --separate-stderr pd-cron run --once
	sql "ALTER TABLE pendulum.jobs DROP CONSTRAINT cron_test_no_forbidden"
	[ "$status" -eq 0 ]
	[ "$output" = "enqueued 1, already enqueued 0, disabled 1" ]
	[ "$(jobs_of fine | wc -l)" -eq 1 ]
	[ "$(sql "SELECT enabled FROM pendulum.cron_schedules WHERE name = 'refused'")" = f ]
	[[ "$(sql "SELECT disabled_reason FROM pendulum.cron_schedules WHERE name = 'refused'")" == \
		"cannot enqueue its jobs: database error: "*cron_test_no_forbidden* ]]
}

@test "the daemon ticks by itself; a second one stands by and takes over when the first stops" {
	pd-cron add every --cron '* * * * *' --tz UTC --type t >/dev/null
	start_bg t1 pd-cron run --interval 100ms
	wait_for 10 grep -q 'msg="ticker active' "$BATS_FILE_TMPDIR/t1.log"
	start_bg t2 pd-cron run --interval 100ms
	wait_for 10 grep -q 'msg="ticker on standby' "$BATS_FILE_TMPDIR/t2.log"
	outage every '2 minutes'
	wait_for 10 sql_is "SELECT count(*) > 0 FROM pendulum.jobs" t
	stop_bg t1
	[ "$(bg_status t1)" -eq 0 ]
	wait_for 10 grep -q 'msg="ticker active' "$BATS_FILE_TMPDIR/t2.log"
	sql "TRUNCATE pendulum.jobs CASCADE"
	outage every '2 minutes'
	wait_for 10 sql_is "SELECT count(*) > 0 FROM pendulum.jobs" t
	stop_bg t2
	[ "$(bg_status t2)" -eq 0 ]
	# each fired while active; the standby fired nothing before it took over
	grep -q 'msg="schedule fired"' "$BATS_FILE_TMPDIR/t1.log"
	[ "$(sed -n '/msg="schedule fired"/=;/msg="ticker active/q' "$BATS_FILE_TMPDIR/t2.log")" = "" ]
	grep -q 'msg="schedule fired"' "$BATS_FILE_TMPDIR/t2.log"
}

write_file() {
	cat >"$BATS_TEST_TMPDIR/$1"
}

@test "apply: creates, then a second apply changes nothing, not even timestamps" {
	write_file s.yaml <<'EOF'
schedules:
  - name: nightly
    cron: "30 2 * * *"
    timezone: Europe/Berlin
    type: report
    payload: {kind: daily, n: 3}
    queue: reports
    priority: high
  - name: hourly
    cron: "@hourly"
    timezone: UTC
    type: ping
    misfire: FIRE_ALL
    catch_up_limit: 10
  - name: hourly
    tenant: acme
    cron: "15 * * * *"
    timezone: America/New_York
    type: ping
    enabled: false
EOF
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/s.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'create nightly\ncreate hourly\ncreate acme/hourly')" ]
	[ "$(sql "SELECT tenant_id || ' ' || name || ' ' || cron || ' ' || timezone || ' ' || job_type || ' ' || payload::text || ' ' ||
	              queue || ' ' || priority || ' ' || misfire_policy || ' ' || catch_up_limit || ' ' || enabled || ' ' || (next_fire_at IS NOT NULL)
	          FROM pendulum.cron_schedules ORDER BY tenant_id, name")" = \
		"$(printf '%s\n' 'acme hourly 15 * * * * America/New_York ping {} default 0 FIRE_ONCE 100 false false' \
			'default hourly @hourly UTC ping {} default 0 FIRE_ALL 10 true true' \
			'default nightly 30 2 * * * Europe/Berlin report {"n": 3, "kind": "daily"} reports 10 FIRE_ONCE 100 true true')" ]
	snapshot="SELECT string_agg(t::text, E'\n' ORDER BY t.id) FROM pendulum.cron_schedules t"
	before=$(sql "$snapshot")
	# a tick in between moves progress, which apply does not look at
	outage hourly '3 hours'
	pd-cron run --once >/dev/null
	progressed=$(sql "$snapshot")
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/s.yaml"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(sql "$snapshot")" = "$progressed" ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules WHERE updated_at <> created_at")" -eq 0 ]
	# and the same with --prune: nothing to delete
	run --separate-stderr pd-cron apply --prune "$BATS_TEST_TMPDIR/s.yaml"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(sql "$snapshot")" = "$progressed" ]
}

@test "apply: --dry-run prints the changes and writes nothing; updates change only what differs" {
	write_file a.yaml <<'EOF'
schedules:
  - {name: a, cron: "0 3 * * *", timezone: UTC, type: t}
  - {name: b, cron: "@daily", timezone: UTC, type: t, payload: '{"x": 1}'}
EOF
	pd-cron apply "$BATS_TEST_TMPDIR/a.yaml" >/dev/null
	snapshot="SELECT string_agg(t::text, E'\n' ORDER BY t.id) FROM pendulum.cron_schedules t"
	before=$(sql "$snapshot")
	write_file b.yaml <<'EOF'
schedules:
  - {name: a, cron: "0 4 * * *", timezone: Europe/Paris, type: t, priority: 5}
  - {name: b, cron: "@daily", timezone: UTC, type: t, payload: {x: 1}, enabled: false}
  - {name: c, cron: "@daily", timezone: UTC, type: t}
EOF
	run --separate-stderr pd-cron apply --dry-run "$BATS_TEST_TMPDIR/b.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '%s\n' \
		"would update a (cron: '0 3 * * *' -> '0 4 * * *', timezone: 'UTC' -> 'Europe/Paris', priority: 0 -> 5)" \
		"would update b (enabled: true -> false)" \
		"would create c")" ]
	[ "$(sql "$snapshot")" = "$before" ]
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/b.yaml"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(sql "SELECT name || ' ' || cron || ' ' || timezone || ' ' || priority || ' ' || enabled || ' ' || (next_fire_at IS NULL) || ' ' || (updated_at > created_at)
	          FROM pendulum.cron_schedules ORDER BY name")" = \
		"$(printf '%s\n' 'a 0 4 * * * Europe/Paris 5 true false true' 'b @daily UTC 0 false true true' 'c @daily UTC 0 true false false')" ]
	# the new expression's next fire, in its zone
	[ "$(sql "SELECT to_char(next_fire_at AT TIME ZONE 'Europe/Paris', 'HH24:MI') FROM pendulum.cron_schedules WHERE name = 'a'")" = 04:00 ]
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/b.yaml"
	[ -z "$output" ]
}

@test "apply --prune removes exactly the schedules the file does not name (of the tenant given with -t)" {
	write_file all.yaml <<'EOF'
schedules:
  - {name: a, cron: "@daily", timezone: UTC, type: t}
  - {name: b, cron: "@daily", timezone: UTC, type: t}
  - {name: c, cron: "@daily", timezone: UTC, type: t}
  - {name: a, tenant: acme, cron: "@daily", timezone: UTC, type: t}
  - {name: z, tenant: acme, cron: "@daily", timezone: UTC, type: t}
EOF
	pd-cron apply "$BATS_TEST_TMPDIR/all.yaml" >/dev/null
	pd-cron add manual --cron @hourly --tz UTC --type t >/dev/null
	write_file some.yaml <<'EOF'
schedules:
  - {name: a, cron: "@daily", timezone: UTC, type: t}
  - {name: c, cron: "@daily", timezone: UTC, type: t}
  - {name: a, tenant: acme, cron: "@daily", timezone: UTC, type: t}
EOF
	# without --prune nothing is deleted
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/some.yaml"
	[ -z "$output" ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" -eq 6 ]
	run --separate-stderr pd-cron apply --prune --dry-run "$BATS_TEST_TMPDIR/some.yaml"
	[ "$output" = "$(printf 'would delete acme/z\nwould delete b\nwould delete manual')" ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" -eq 6 ]
	# -t limits the file and the pruning to one tenant
	write_file acme.yaml <<'EOF'
schedules:
  - {name: a, cron: "@daily", timezone: UTC, type: t}
EOF
	run --separate-stderr pd-cron apply --prune -t acme "$BATS_TEST_TMPDIR/acme.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "delete acme/z" ]
	run --separate-stderr pd-cron apply --prune "$BATS_TEST_TMPDIR/some.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'delete b\ndelete manual')" ]
	[ "$(sql "SELECT string_agg(tenant_id || '/' || name, ' ' ORDER BY tenant_id, name) FROM pendulum.cron_schedules")" = \
		"acme/a default/a default/c" ]
	run --separate-stderr pd-cron apply --prune "$BATS_TEST_TMPDIR/some.yaml"
	[ -z "$output" ]
}

@test "apply: a bad file exits 65 naming file:line:column, and nothing is written" {
	write_file bad.yaml <<'EOF'
schedules:
  - name: a
    cron: "@daily"
    timezone: UTC
    type: t
  - name: b
    cron: "@daily"
    timezone: UTC
    type: t
    retries: 3
EOF
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/bad.yaml"
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-cron: $BATS_TEST_TMPDIR/bad.yaml:10:5: unknown key 'retries' in 'schedules' item 2" ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" -eq 0 ]
	write_file bad2.yaml <<'EOF'
schedules:
  - {name: a, cron: "@daily", timezone: UTC, type: t}
  - {name: b, cron: "0 25 * * *", timezone: UTC, type: t}
EOF
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/bad2.yaml"
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-cron: $BATS_TEST_TMPDIR/bad2.yaml:3:21: invalid cron expression '0 25 * * *'"* ]]
	write_file bad3.yaml <<'EOF'
schedules:
  - {name: a, cron: "@daily", timezone: Europe/Nowhere, type: t}
EOF
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/bad3.yaml"
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-cron: $BATS_TEST_TMPDIR/bad3.yaml:2:41: unknown time zone 'Europe/Nowhere'"* ]]
	run --separate-stderr pd-cron apply "$BATS_TEST_TMPDIR/nonexistent.yaml"
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"nonexistent.yaml"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_schedules")" -eq 0 ]
}
