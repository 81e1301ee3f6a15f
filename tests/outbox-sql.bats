#!/usr/bin/env bats
# The SQL API through psql, as an application uses it: pendulum.enqueue and
# pendulum.outbox_record live and die with the caller's transaction (rolled
# back, committed, or cut off by a killed connection), never commit it, and
# wake their consumers on commit. outbox_record checks its arguments, and
# serialises the transactions that record for one key.

# SQL and publish command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	sql "CREATE TABLE orders (id integer PRIMARY KEY, email text NOT NULL);
	     CREATE TABLE gate (open boolean)"
}

teardown_file() {
	kill_all_bg
	pd_teardown_db
}

setup() {
	reset_jobs
	reset_outbox
	sql "TRUNCATE orders, gate"
	LOG=$BATS_TEST_TMPDIR/publish.log
}

teardown() {
	kill_all_bg
}

# app: psql as the application: a script on stdin, stop at the first error.
app() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" "$@"
}

# A transaction in a background psql holds itself open at this statement
# until open_gate; backend_waiting sees it there (the text has pg_sleep).
GATE="DO \$\$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM gate) LOOP PERFORM pg_sleep(0.02); END LOOP; END \$\$;"

open_gate() {
	sql "INSERT INTO gate VALUES (true)"
}

counts() {
	sql "SELECT (SELECT count(*) FROM orders) || ' ' || (SELECT count(*) FROM pendulum.jobs)
	     || ' ' || (SELECT count(*) FROM pendulum.outbox)"
}

@test "a business insert, enqueue and outbox_record rolled back together leave nothing" {
	app <<-'EOF'
		BEGIN;
		INSERT INTO orders VALUES (1, 'ada@example.com');
		SELECT pendulum.enqueue('default', 'send-email', '{"order": 1}');
		SELECT pendulum.outbox_record('default', 'orders', '{"order": 1}', 'order-1');
		ROLLBACK;
	EOF
	[ "$(counts)" = "0 0 0" ]
}

@test "committed together, all three exist, with what was given" {
	run --separate-stderr app <<-'EOF'
		BEGIN;
		INSERT INTO orders VALUES (2, 'bob@example.com');
		SELECT pendulum.enqueue('acme', 'send-email', '{"order": 2}', queue => 'mail',
		                        idempotency_key => 'order-2');
		SELECT pendulum.outbox_record('acme', 'orders', '{"order": 2}', 'order-2',
		                              '{"ce-type": "order.created"}');
		COMMIT;
	EOF
	[ "$status" -eq 0 ]
	[ "$(counts)" = "1 1 1" ]
	job=${lines[0]}
	msg=${lines[1]}
	[ "$(sql "SELECT tenant_id || ' ' || queue || ' ' || job_type || ' ' || state || ' ' || payload
	          FROM pendulum.jobs WHERE id = $job")" = 'acme mail send-email PENDING {"order": 2}' ]
	[ "$(sql "SELECT tenant_id || ' ' || topic || ' ' || message_key || ' ' || state || ' '
	          || attempts || '/' || max_attempts || ' ' || headers::text || ' ' || payload::text
	          FROM pendulum.outbox WHERE id = $msg")" = \
		'acme orders order-2 PENDING 0/25 {"ce-type": "order.created"} {"order": 2}' ]
	# a repeated idempotency key returns the first job's id, inside a transaction too
	run --separate-stderr app -c "SELECT pendulum.enqueue('acme', 'send-email', '{}', idempotency_key => 'order-2')"
	[ "$output" = "$job" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -eq 1 ]
}

@test "neither function commits or ends the caller's transaction" {
	# one transaction id throughout, and a rollback after the calls undoes them
	run --separate-stderr app <<-'EOF'
		BEGIN;
		SELECT txid_current();
		INSERT INTO orders VALUES (3, 'cy@example.com');
		SELECT pendulum.enqueue('default', 't', '{}') > 0;
		SELECT pendulum.outbox_record('default', 'orders', '{}') > 0;
		SELECT txid_current();
		ROLLBACK;
	EOF
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
	[ "${lines[0]}" = "${lines[3]}" ]
	[ "$(counts)" = "0 0 0" ]
	# and the transaction stays open: other sessions see nothing until COMMIT
	start_psql pd-open-tx <<-EOF
		BEGIN;
		INSERT INTO orders VALUES (4, 'di@example.com');
		SELECT pendulum.enqueue('default', 't', '{}');
		SELECT pendulum.outbox_record('default', 'orders', '{}');
		$GATE
		COMMIT;
	EOF
	wait_for 20 backend_waiting pd-open-tx
	[ "$(counts)" = "0 0 0" ]
	open_gate
	wait_bg pd-open-tx
	[ "$(counts)" = "1 1 1" ]
}

@test "a connection killed mid-transaction loses every half together" {
	start_relay relay --poll 100ms --publish "$(publish_cmd "$LOG")"
	start_psql pd-victim <<-'EOF'
		BEGIN;
		INSERT INTO orders VALUES (5, 'ed@example.com');
		SELECT pendulum.enqueue('default', 'send-email', '{"order": 5}');
		SELECT pendulum.outbox_record('default', 'orders', '{"order": 5}', 'order-5');
		SELECT pg_sleep(60);
		COMMIT;
	EOF
	wait_for 20 backend_waiting pd-victim
	[ "$(sql "SELECT count(*) FROM pg_terminate_backend((SELECT pid FROM pg_stat_activity
	          WHERE application_name = 'pd-victim'))")" = 1 ]
	st=0
	wait_bg pd-victim || st=$?
	[ "$st" -eq 2 ] # psql: the connection was lost
	[ "$(counts)" = "0 0 0" ]
	# the ids it took are gone with it; the next message is published, the dead one never was
	msg=$(record orders '{"order": 6}' order-6)
	wait_for 20 lines_at_least "$LOG" 1
	[ "$(cat "$LOG")" = "$msg order-6" ]
}

@test "enqueue wakes a listening worker on commit, not before" {
	start_worker w --poll 1h --handler "send-email=$(counting_handler "$BATS_TEST_TMPDIR/jobs.log")"
	wait_for 20 sql_is "SELECT count(*) FROM pendulum.workers" 1
	start_psql pd-enq <<-EOF
		BEGIN;
		SELECT pendulum.enqueue('default', 'send-email', '{}');
		$GATE
		COMMIT;
	EOF
	wait_for 20 backend_waiting pd-enq
	[ "$(lines "$BATS_TEST_TMPDIR/jobs.log")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -eq 0 ]
	open_gate
	wait_bg pd-enq
	# committed: the job is in the table, as enqueued
	[ "$(sql "SELECT job_type || ' ' || queue FROM pendulum.jobs")" = "send-email default" ]
	# polling is an hour away: only the notification can wake it
	wait_for 15 sql_is "SELECT state FROM pendulum.jobs" SUCCEEDED
}

@test "outbox_record wakes a listening relay on commit, not before" {
	start_relay relay --poll 1h --publish "$(publish_cmd "$LOG")"
	wait_for 20 grep -q 'relay started' "$BATS_FILE_TMPDIR/relay.log"
	start_psql pd-rec <<-EOF
		BEGIN;
		SELECT pendulum.outbox_record('default', 'orders', '{}', 'k');
		$GATE
		COMMIT;
	EOF
	wait_for 20 backend_waiting pd-rec
	[ "$(lines "$LOG")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox")" -eq 0 ]
	open_gate
	wait_bg pd-rec
	# committed: the message is in the table, as recorded
	[ "$(sql "SELECT topic || ' ' || message_key FROM pendulum.outbox")" = "orders k" ]
	wait_for 15 lines_at_least "$LOG" 1
	[ "$(sql "SELECT state FROM pendulum.outbox")" = PUBLISHED ]
	[ "$(cat "$LOG")" = "$(sql "SELECT id FROM pendulum.outbox") k" ]
}

@test "outbox_record refuses bad arguments with SQLSTATE and a message, recording nothing" {
	run --separate-stderr app -c "SELECT pendulum.outbox_record('default', 'orders', '{}', 'k', '{\"n\": 1}')"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"outbox_record: header 'n' must have a non-empty name and a string value"* ]]
	run --separate-stderr app -c "SELECT pendulum.outbox_record('default', 'orders', '{}', 'k', '[\"a\"]')"
	[[ "$stderr" == *"headers must be a JSON object of strings, got array"* ]]
	run --separate-stderr app -c "SELECT pendulum.outbox_record('default', 'orders', '{}', 'k', '{\"\": \"x\"}')"
	[[ "$stderr" == *"header '' must have a non-empty name"* ]]
	run --separate-stderr app -c "SELECT pendulum.outbox_record('default', '', '{}')"
	[[ "$stderr" == *"outbox_record: topic must not be empty"* ]]
	run --separate-stderr app -c "SELECT pendulum.outbox_record('default', NULL, '{}')"
	[[ "$stderr" == *"topic must not be empty"* ]]
	run --separate-stderr app -c "SELECT pendulum.outbox_record('default', 'orders', NULL)"
	[[ "$stderr" == *"outbox_record: payload must not be null"* ]]
	run --separate-stderr app -c "SELECT pendulum.outbox_record('default', 'orders', '{}', max_attempts => 0)"
	[[ "$stderr" == *"outbox_max_attempts_check"* ]]
	# the SQLSTATE is invalid_parameter_value, for drivers that branch on it
	run --separate-stderr app -c "DO \$\$ BEGIN PERFORM pendulum.outbox_record('default', '', '{}');
	    EXCEPTION WHEN invalid_parameter_value THEN RAISE NOTICE 'caught 22023'; END \$\$"
	[[ "$stderr" == *"caught 22023"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox")" -eq 0 ]
	# a null tenant is 'default', null headers are {}, and max_attempts is kept
	id=$(app -c "SELECT pendulum.outbox_record(NULL, 'orders', '[1, 2]', NULL, NULL, 3)")
	[ "$(sql "SELECT tenant_id || ' ' || coalesce(message_key, '-') || ' ' || headers::text || ' '
	          || max_attempts FROM pendulum.outbox WHERE id = $id")" = "default - {} 3" ]
}

@test "two transactions recording for one key are serialised; other keys are not held up" {
	start_psql pd-first <<-EOF
		BEGIN;
		SELECT pendulum.outbox_record('default', 'orders', '{"n": 1}', 'K');
		$GATE
		COMMIT;
	EOF
	wait_for 20 backend_waiting pd-first
	# another key, and the same key under another topic or tenant, go through at once
	record orders '{"n": 2}' L >/dev/null
	record invoices '{"n": 3}' K >/dev/null
	sql "SELECT pendulum.outbox_record('other', 'orders', '{\"n\": 4}', 'K')" >/dev/null
	start_psql pd-second -c "SELECT pendulum.outbox_record('default', 'orders', '{\"n\": 5}', 'K')"
	# the second waits for the first's lock, with no row yet
	wait_for 20 sql_is "SELECT wait_event_type FROM pg_stat_activity WHERE application_name = 'pd-second'" Lock
	[ "$(sql "SELECT count(*) FROM pendulum.outbox WHERE payload->>'n' = '5'")" -eq 0 ]
	open_gate
	wait_bg pd-first
	wait_bg pd-second
	# so for key K, id order is commit order
	[ "$(sql "SELECT string_agg(payload->>'n', ' ' ORDER BY id) FROM pendulum.outbox
	          WHERE tenant_id = 'default' AND topic = 'orders' AND message_key = 'K'")" = "1 5" ]
}
