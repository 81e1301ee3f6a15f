#!/usr/bin/env bats
# Behind PgBouncer in transaction mode (issue 25, part 1): Debian's
# pgbouncer (scripts/pgbouncer) in front of this file's database, with a
# pool of 4 server connections, so that the clients really share them.
# Every daemon, pd-enqueue, pd-admin and the crontab worker run through it,
# several at once; LISTEN goes to a direct listen_url or nowhere
# (poll-only); migrations refuse the pool; named statements forced on fail
# there as they did before the detection.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	DIRECT=$PD_DATABASE_URL
	POOL=$(PD_BOUNCER_POOL=4 sh "$PD_ROOT/scripts/pgbouncer" start "$DIRECT")
	BOUNCER_DIR=$(printf '%s\n' "$POOL" | sed -n 's/^host=\([^ ]*\) .*/\1/p')
	export DIRECT POOL BOUNCER_DIR
}

teardown_file() {
	kill_all_bg
	if [ -n "${BOUNCER_DIR:-}" ]; then
		sh "$PD_ROOT/scripts/pgbouncer" stop "$BOUNCER_DIR"
	fi
	pd_teardown_db
}

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.cron_schedules, pendulum.outbox CASCADE" 2>/dev/null
	D=$BATS_TEST_TMPDIR
	# command prefixes (start_bg runs them with sh): through the pool without a
	# listen_url, and with the direct URL as listen_url
	pooled=(env PD_DATABASE_URL="$POOL" PD_LISTEN_URL=)
	listening=(env PD_DATABASE_URL="$POOL" PD_LISTEN_URL="$DIRECT")
}

teardown() {
	kill_all_bg
}

# no_errors NAME...: none of these background commands logged an error, and each still runs.
no_errors() {
	local n
	for n in "$@"; do
		if grep -q 'level=error' "$BATS_FILE_TMPDIR/$n.log"; then
			grep 'level=error' "$BATS_FILE_TMPDIR/$n.log" >&2
			return 1
		fi
		alive "$(bg_pid "$n")" || {
			echo "$n exited" >&2
			return 1
		}
	done
}

@test "three workers, a crontab worker, pd-relay, pd-reaper through PgBouncer: 2,000 jobs once each, a schedule fires once" {
	for i in 1 2 3; do
		start_bg "w$i" "${listening[@]}" pd-worker --handler "t=$(counting_handler "$D/runs")" \
			-j 8 --lease 2s --poll 1s --no-reap
	done
	start_bg relay "${listening[@]}" pd-relay --publish "cat >>'$D/published'; echo >>'$D/published'"
	start_bg reaper "${listening[@]}" pd-reaper --interval 500ms
	start_bg victim "${listening[@]}" pd-worker --handler "slow=sleep 60" --lease 1s --no-reap
	# a job whose worker dies with it: pd-reaper gives it back once the lease expires
	slow=$("${pooled[@]}" pd-enqueue slow '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $slow" RUNNING
	kill -KILL "$(bg_pid victim)"
	# 1,990 in one bulk enqueue, 10 one by one, all through the pool
	seq 1 1990 | sed 's/.*/{"n": &}/' | "${pooled[@]}" pd-enqueue --ndjson t >"$D/ids"
	for i in 1 2 3 4 5 6 7 8 9 10; do
		"${pooled[@]}" pd-enqueue t "{\"single\": $i}" >>"$D/ids"
	done
	[ "$(lines "$D/ids")" -eq 2000 ]
	sql "SELECT pendulum.outbox_record('default', 'orders', '{\"order\": 1}')" >/dev/null
	# A schedule at this very minute of the day (UTC), made to have last fired
	# just before it: the ticker fires that occurrence (within its 60 s grace)
	# and the next one is a day away. Early in a minute, so that the
	# occurrence is still within the grace when the ticker steps.
	wait_for 25 utc_second_below 40
	at=$(sql "SELECT to_char(now() AT TIME ZONE 'UTC', 'MI HH24')")
	printf 'CRON_TZ=UTC\n%s * * * echo fired >>%s/fired\n' "$at" "$D" >"$D/tab"
	start_bg cron "${listening[@]}" pd-worker --crontab "$D/tab" --lease 2s --poll 1s --no-reap
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.cron_schedules" 1
	sql "UPDATE pendulum.cron_schedules SET next_fire_at = date_trunc('minute', now()),
	     last_fired_at = date_trunc('minute', now()) - interval '1 second'"
	wait_for 60 lines_at_least "$D/runs" 2000
	wait_for 15 lines_at_least "$D/fired" 1
	wait_for 10 sql_is "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $slow" "PENDING 1"
	wait_for 10 test -s "$D/published"
	# once each: 2,000 runs of 2,000 distinct jobs, all SUCCEEDED
	[ "$(lines "$D/runs")" -eq 2000 ]
	[ "$(cut -d' ' -f1 "$D/runs" | sort -u | wc -l)" -eq 2000 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 't' AND state = 'SUCCEEDED' AND attempt = 1")" -eq 2000 ]
	# the schedule fired once: one fire, one run of its command
	[ "$(sql "SELECT count(*) FROM pendulum.cron_fires")" -eq 1 ]
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.jobs WHERE job_type LIKE 'crontab.%' AND state = 'SUCCEEDED'" 1
	[ "$(lines "$D/fired")" -eq 1 ]
	[ "$(cat "$D/published")" = '{"order": 1}' ]
	[ "$(sql "SELECT state FROM pendulum.outbox")" = PUBLISHED ]
	# every daemon still runs, none logged an error, each said how it connects
	no_errors w1 w2 w3 cron relay reaper
	# found pooled at connect: no named statement was ever tried (and lost) there
	run grep -c 'named statements lost' "$BATS_FILE_TMPDIR"/{w1,w2,w3,cron,relay,reaper}.log
	[[ "$output" != *:[1-9]* ]]
	grep -q "msg=\"connection pooled: LISTEN on listen_url's own session\" statements=unnamed" "$BATS_FILE_TMPDIR/w1.log"
	grep -q "msg=\"connection pooled: LISTEN on listen_url's own session\"" "$BATS_FILE_TMPDIR/relay.log"
	grep -q 'msg="ticker active: holding the ticker role"' "$BATS_FILE_TMPDIR/cron.log"
}

@test "pd-cron add, trigger and list, and the ticker (pd-cron run) through the pool: a due occurrence fires once" {
	"${pooled[@]}" pd-cron add every --cron '* * * * *' --tz UTC --type t
	"${pooled[@]}" pd-cron trigger every
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 't'")" -eq 1 ]
	run "${pooled[@]}" pd-cron list
	[ "$status" -eq 0 ]
	[[ "$output" == *every* ]]
	# the occurrence of this minute due, early in the minute (the ticker's grace)
	wait_for 25 utc_second_below 40
	sql "UPDATE pendulum.cron_schedules SET next_fire_at = date_trunc('minute', now()),
	     last_fired_at = date_trunc('minute', now()) - interval '1 second'"
	start_bg ticker "${listening[@]}" pd-cron run --interval 500ms --lease 2s
	wait_for 15 sql_is "SELECT count(*) FROM pendulum.jobs WHERE job_type = 't'" 2
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 't'")" -eq 2 ]
	no_errors ticker
	grep -q 'msg="ticker active: holding the ticker role"' "$BATS_FILE_TMPDIR/ticker.log"
	run grep -c 'named statements lost' "$BATS_FILE_TMPDIR/ticker.log"
	[ "$output" = 0 ]
}

@test "a NOTIFY wake-up through listen_url: picked up within 50 ms with --poll 5s" {
	start_bg w "${listening[@]}" pd-worker --handler "t=env >'$D/env'" --poll 5s --lease 2s
	wait_for 10 grep -q 'msg="worker started"' "$BATS_FILE_TMPDIR/w.log"
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.workers" 1
	# listen_url, like the database URL, is kept from the handlers and /proc/PID/environ
	run grep -c PD_LISTEN_URL "/proc/$(bg_pid w)/environ"
	[ "$output" = 0 ]
	for i in 1 2 3; do
		id=$("${pooled[@]}" pd-enqueue t '{}')
		wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	done
	run sql "SELECT max(extract(epoch FROM started_at - created_at) * 1000)::int FROM pendulum.jobs"
	echo "slowest pickup: $output ms"
	[ "$output" -lt 50 ]
	[ -s "$D/env" ]
	run grep -c -e PD_LISTEN_URL -e PD_DATABASE_URL "$D/env"
	[ "$output" = 0 ]
}

@test "poll-only without listen_url: said once at start, jobs still run; a pooled listen_url is refused (78)" {
	start_bg w "${pooled[@]}" pd-worker --handler "t=$(counting_handler "$D/runs")" --poll 200ms --lease 2s
	wait_for 10 grep -q 'msg="worker started"' "$BATS_FILE_TMPDIR/w.log"
	for i in 1 2 3 4 5; do "${pooled[@]}" pd-enqueue t '{}' >/dev/null; done
	wait_for 20 lines_at_least "$D/runs" 5
	[ "$(grep -c 'poll-only' "$BATS_FILE_TMPDIR/w.log")" -eq 1 ]
	grep -q 'msg="connection pooled and no listen_url: poll-only, no LISTEN wake-ups" statements=unnamed' "$BATS_FILE_TMPDIR/w.log"
	no_errors w
	# LISTEN never goes through the pool, not even when listen_url says so
	run --separate-stderr env PD_DATABASE_URL="$POOL" PD_LISTEN_URL="$POOL" pd-worker --handler t=true
	[ "$status" -eq 78 ]
	[[ "$stderr" == "pd-worker: listen_url ("*"host=$BOUNCER_DIR"*") goes through a pooler too: LISTEN needs a direct session to the server" ]]
}

@test "pd-enqueue (single, bulk, --wait) and pd-admin (jobs, job show, queues, workers, metrics, wait) through the pool" {
	start_bg w "${listening[@]}" pd-worker --handler "t=echo done" --poll 5s --lease 2s
	wait_for 10 grep -q 'msg="worker started"' "$BATS_FILE_TMPDIR/w.log"
	# --wait: LISTEN on listen_url; then poll-only (no listen_url): the same answer
	run --separate-stderr "${listening[@]}" pd-enqueue --wait --wait-timeout 20s t '{"a": 1}'
	[ "$status" -eq 0 ]
	[ "$output" = 'done' ]
	run --separate-stderr "${pooled[@]}" pd-enqueue --wait --wait-timeout 20s t '{"a": 2}'
	[ "$status" -eq 0 ]
	[ "$output" = 'done' ]
	id=$("${pooled[@]}" pd-enqueue t '{"a": 3}')
	mapfile -t bulk < <(printf '{"b": 1}\n{"b": 2}\n' | "${pooled[@]}" pd-enqueue --ndjson t)
	[ "${#bulk[@]}" -eq 2 ]
	run --separate-stderr "${listening[@]}" pd-admin wait "$id" "${bulk[@]}" --timeout 20s
	[ "$status" -eq 0 ]
	[ "$output" = "3 jobs: 3 succeeded, 0 dead-lettered, 0 cancelled" ]
	run --separate-stderr "${pooled[@]}" pd-admin wait --timeout 20s
	[ "$status" -eq 0 ]
	[ "$output" = "5 jobs: 5 succeeded, 0 dead-lettered, 0 cancelled" ]
	run --separate-stderr "${pooled[@]}" pd-admin job show "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *SUCCEEDED* ]]
	run --separate-stderr "${pooled[@]}" pd-admin --json jobs
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	run --separate-stderr "${pooled[@]}" pd-admin queues
	[ "$status" -eq 0 ]
	run --separate-stderr "${pooled[@]}" pd-admin workers
	[ "$status" -eq 0 ]
	[[ "$output" == *"$(worker_id w)"* ]]
	run --separate-stderr "${pooled[@]}" pd-admin metrics
	[ "$status" -eq 0 ]
	[[ "$output" == *pendulum_jobs* ]]
	run --separate-stderr "${pooled[@]}" pd-admin migrate --status
	[ "$status" -eq 0 ]
}

@test "pd-admin migrate through the pool: 78, one line saying a direct URL is needed, nothing done" {
	fresh="${PD_DB_NAME}_fresh"
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $fresh"
	psql -X -q -d "$PD_PG_URL" -c "CREATE DATABASE $fresh"
	run --separate-stderr pd-admin -d "${POOL/dbname=$PD_DB_NAME/dbname=$fresh}" migrate
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE $fresh WITH (FORCE)" >/dev/null
	[ "$status" -eq 78 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "pd-admin: migrations need a direct database URL: "*"host=$BOUNCER_DIR"*" goes through a pooler (PgBouncer); give the server's own address with -d" ]]
	[ -z "$output" ]
	# on this file's database, migrated: refused the same, the schema as it was
	before=$(sql "SELECT count(*) FROM pendulum.schema_migrations")
	run --separate-stderr "${pooled[@]}" pd-admin migrate
	[ "$status" -eq 78 ]
	[ "$(sql "SELECT count(*) FROM pendulum.schema_migrations")" -eq "$before" ]
}

@test "prepared_statements: on through the pool fails as before the detection (prepared statement ... already exists)" {
	printf 'prepared_statements: on\n' >"$D/on.yaml"
	start_bg w1 "${pooled[@]}" pd-worker -c "$D/on.yaml" --handler t=true --poll 100ms --lease 2s
	wait_for 10 grep -q 'msg="worker started"' "$BATS_FILE_TMPDIR/w1.log"
	grep -q 'msg="connection pooled and no listen_url: poll-only, no LISTEN wake-ups" statements=named (prepared_statements: on)' "$BATS_FILE_TMPDIR/w1.log"
	start_bg w2 "${pooled[@]}" pd-worker -c "$D/on.yaml" --handler t=true --poll 100ms --lease 2s
	start_bg w3 "${pooled[@]}" pd-worker -c "$D/on.yaml" --handler t=true --poll 100ms --lease 2s
	wait_for 10 test -s "$BATS_FILE_TMPDIR/w2.status" -o -s "$BATS_FILE_TMPDIR/w3.status"
	cat "$BATS_FILE_TMPDIR"/w[23].log
	grep -q 'level=error msg="database error" error="database error: prepared statement \\"pd_[a-z_]*\\" already exists"' "$BATS_FILE_TMPDIR"/w[23].log
	# the same workers with the default (auto): all three run
	kill_all_bg
	for i in 1 2 3; do
		start_bg "a$i" "${pooled[@]}" pd-worker --handler "t=$(counting_handler "$D/runs")" --poll 100ms --lease 2s
	done
	for i in 1 2 3 4 5 6 7 8 9; do "${pooled[@]}" pd-enqueue t '{}' >/dev/null; done
	wait_for 20 lines_at_least "$D/runs" 9
	no_errors a1 a2 a3
}

@test "a named statement lost under an undetected pooler: auto turns to unnamed and sends again once, on fails" {
	run --separate-stderr "$PD_TEST_TOOL" prepared-lost auto lost
	[ "$status" -eq 0 ]
	[ "$output" = "rows=2 named=0 result=42" ]
	[[ "$stderr" == *'msg="named statements lost between transactions: a pooler; using unnamed ones" sqlstate=26000'* ]]
	run --separate-stderr "$PD_TEST_TOOL" prepared-lost auto taken
	[ "$status" -eq 0 ]
	[ "$output" = "rows=2 named=0 result=42" ]
	[[ "$stderr" == *"sqlstate=42P05"* ]]
	run --separate-stderr "$PD_TEST_TOOL" prepared-lost on lost
	[ "$status" -eq 70 ]
	[[ "$stderr" == *'prepared statement "pd_test_probe" does not exist (sqlstate 26000)'* ]]
	run --separate-stderr "$PD_TEST_TOOL" prepared-lost on taken
	[ "$status" -eq 70 ]
	[[ "$stderr" == *'already exists (sqlstate 42P05)'* ]]
}

@test "the time zone set at connect survives the pool: PgBouncer sets each client's on the server connection it lends" {
	# the database's default is another zone; a pool of one server connection
	# is shared by a session that set UTC and one that did not
	psql -X -q -d "$PD_PG_URL" -c "ALTER DATABASE $PD_DB_NAME SET timezone = 'Asia/Tokyo'"
	one=$(PD_BOUNCER_POOL=1 sh "$PD_ROOT/scripts/pgbouncer" start "$DIRECT")
	dir=$(printf '%s\n' "$one" | sed -n 's/^host=\([^ ]*\) .*/\1/p')
	on_teardown sh "$PD_ROOT/scripts/pgbouncer" stop "$dir"
	psql_coproc "$one"
	# as pd_db_connect sets it
	echo "SELECT pg_backend_pid() || ' ' || current_setting('TimeZone') FROM set_config('TimeZone', 'UTC', false);" >&"${PSQL[1]}"
	read -r -u "${PSQL[0]}" a1
	b=$(psql -X -At -d "$one" -c "SELECT pg_backend_pid() || ' ' || current_setting('TimeZone')")
	echo "SELECT pg_backend_pid() || ' ' || current_setting('TimeZone');" >&"${PSQL[1]}"
	read -r -u "${PSQL[0]}" a2
	echo '\q' >&"${PSQL[1]}"
	wait "$PSQL_PID" || true
	sh "$PD_ROOT/scripts/pgbouncer" stop "$dir"
	psql -X -q -d "$PD_PG_URL" -c "ALTER DATABASE $PD_DB_NAME RESET timezone"
	echo "a: $a1 / $a2, b: $b"
	# one server connection, two zones
	[ "${a1% *}" = "${b% *}" ]
	[ "${a1#* }" = UTC ]
	[ "${b#* }" = Asia/Tokyo ]
	[ "$a2" = "$a1" ]
}

@test "prepared_statements: a value other than auto, on, off is refused naming the file and line (78)" {
	printf 'log_level: info\nprepared_statements: maybe\n' >"$D/bad.yaml"
	run --separate-stderr pd-worker -c "$D/bad.yaml" --handler t=true
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"bad.yaml:2:"*"expected auto, on or off, got 'maybe'"* ]]
}
