#!/usr/bin/env bats
# pd-relay against a real PostgreSQL: what it publishes and with what
# environment, retries with backoff, dead letters, the visibility timeout
# (a claim hides a message; an abandoned one comes back), fencing, per-key
# order with several relays, publish timeouts, drain, and the claim's plan.

# Publish command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_outbox
	LOG=$BATS_TEST_TMPDIR/publish.log
	CFG=$BATS_TEST_TMPDIR/pd.yaml
	# fast retries, a short kill grace: the visibilities below can be short
	printf 'retry: {base: 50ms, cap: 200ms}\nrelay: {kill_grace: 300ms}\n' >"$CFG"
}

@test "usage errors: no command, a timeout longer than the visibility, --once with --until-idle" {
	run --separate-stderr pd-relay --once
	[ "$status" -eq 64 ]
	[ "$stderr" = "pd-relay: no publish command: give --publish COMMAND, --exec PATH, or relay.topics in the config file" ]
	run --separate-stderr pd-relay --publish true --timeout 1m
	[ "$status" -eq 64 ]
	[ "$stderr" = "pd-relay: the publish timeout for topic '*' (1m) plus the kill grace (5s) must be shorter than the visibility timeout (1m)" ]
	run --separate-stderr pd-relay --publish true --once --until-idle
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-relay: give --once or --until-idle, not both"* ]]
	run --separate-stderr pd-relay --publish true --exec /bin/true
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-relay: give --publish or --exec once"* ]]
	run --separate-stderr pd-relay --publish true --visibility 5x
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-relay: option --visibility: invalid duration '5x'"* ]]
	run --separate-stderr pd-relay --publish true -j 0
	[ "$status" -eq 64 ]
	run --separate-stderr pd-relay --publish true extra
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-relay: unexpected argument 'extra'"* ]]
	printf 'relay:\n  topics:\n    orders: {run: "true"}\n' >"$CFG"
	run --separate-stderr pd-relay -c "$CFG" --topic invoices
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-relay: no publish command for topic 'invoices'"* ]]
	printf 'relay:\n  visibilty: 1m\n' >"$CFG"
	run --separate-stderr pd-relay -c "$CFG" --publish true
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"pd.yaml:2:3: unknown key 'visibilty' in 'relay'; did you mean 'visibility'?" ]]
	run --separate-stderr pd-relay -d "host=/nonexistent-dir dbname=x" --publish true --once
	[ "$status" -eq 69 ]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox")" -eq 0 ]
}

@test "the payload on stdin, the message in PD_* variables, headers as PD_HEADER_*" {
	sql "SELECT pendulum.outbox_record('acme', 'orders', '{\"total\": 12, \"note\": \"a \\\"b\\\"\"}',
	     'order-42', '{\"ce-type\": \"order.created\", \"X-Trace.ID\": \"t-1\"}', 7)" >/dev/null
	sql "SELECT pendulum.outbox_record('default', 'audit', '[1]')" >/dev/null
	out=$BATS_TEST_TMPDIR/out
	mkdir "$out"
	run --separate-stderr env PD_TOPIC=stale PD_HEADER_STALE=x pd-relay --until-idle -j 1 --publish \
		"cat >'$out'/\$PD_MESSAGE_ID.in; env | grep -E '^PD_(TOPIC|MESSAGE_|TENANT|ATTEMPT|MAX_ATTEMPTS|CLAIM_TOKEN|HEADER_)' | LC_ALL=C sort >'$out'/\$PD_MESSAGE_ID.env"
	[ "$status" -eq 0 ]
	id1=$(sql "SELECT id FROM pendulum.outbox WHERE topic = 'orders'")
	id2=$(sql "SELECT id FROM pendulum.outbox WHERE topic = 'audit'")
	[ "$(cat "$out/$id1.in")" = '{"note": "a \"b\"", "total": 12}' ]
	[ "$(cat "$out/$id2.in")" = '[1]' ]
	token=$(sql "SELECT claim_token FROM pendulum.outbox WHERE id = $id1")
	[ "$(cat "$out/$id1.env")" = "$(printf '%s\n' PD_ATTEMPT=1 "PD_CLAIM_TOKEN=$token" \
		PD_HEADER_CE_TYPE=order.created PD_HEADER_X_TRACE_ID=t-1 PD_MAX_ATTEMPTS=7 \
		"PD_MESSAGE_ID=$id1" PD_MESSAGE_KEY=order-42 PD_TENANT=acme PD_TOPIC=orders)" ]
	# no key: PD_MESSAGE_KEY is unset; inherited PD_HEADER_* and PD_TOPIC are replaced
	[ "$(grep -c -E '^PD_(MESSAGE_KEY|HEADER_)' "$out/$id2.env")" -eq 0 ]
	grep -qx PD_TOPIC=audit "$out/$id2.env"
	[ "$(sql "SELECT string_agg(state || ' ' || attempts || ' ' || (published_at IS NOT NULL)
	          || ' ' || coalesce(claimed_by, '-'), ',') FROM pendulum.outbox")" = \
		"PUBLISHED 1 true -,PUBLISHED 1 true -" ]
	[[ "$stderr" == *'msg="message published" message='"$id1"' topic=orders key=order-42 attempt=1'* ]]
}

@test "a message recorded in a rolled-back transaction is never published" {
	sql "CREATE TABLE IF NOT EXISTS orders (id integer PRIMARY KEY)"
	psql -X -q -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" >/dev/null <<-'EOF'
		BEGIN;
		INSERT INTO orders VALUES (1);
		SELECT pendulum.outbox_record('default', 'orders', '{"order": 1}', 'order-1');
		ROLLBACK;
	EOF
	kept=$(record orders '{"order": 2}' order-2)
	run --separate-stderr pd-relay --until-idle --publish "$(publish_cmd "$LOG")"
	[ "$status" -eq 0 ]
	[ "$(cat "$LOG")" = "$kept order-2" ]
	[ "$(sql "SELECT count(*) FROM orders")" -eq 0 ]
	[ "$(sql "SELECT count(*) || ' ' || min(state) FROM pendulum.outbox")" = "1 PUBLISHED" ]
}

@test "failures back off with full jitter, then publish; the error is kept until then" {
	# each message fails twice (exit 3 with a reason on stderr), then publishes
	cmd="$(publish_cmd "$LOG" '[ "$PD_ATTEMPT" -ge 3 ] || { echo "broker down ($PD_ATTEMPT)" >&2; exit 3; }')"
	for i in 1 2 3 4 5; do record orders "{\"n\": $i}" "k$i" >/dev/null; done
	# one pass: every message fails once and gets a backoff
	# days, not hours: a backoff that fell within the seconds this test takes
	# would be due again on the second pass
	printf 'retry: {base: 100d, cap: 100d}\n' >"$CFG"
	run --separate-stderr pd-relay -c "$CFG" --once -j 5 --publish "$cmd"
	[ "$status" -eq 0 ]
	[ "$(lines "$LOG")" -eq 5 ]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox WHERE state = 'PENDING' AND attempts = 1
	          AND last_error = 'exit 3: broker down (1)' AND claimed_by IS NULL")" -eq 5 ]
	# uniform(0, min(cap, base * 2^0)) = uniform(0, 100 days): within it, and not all alike
	[ "$(sql "SELECT bool_and(next_attempt_at <= now() + interval '100 days')
	          AND bool_or(next_attempt_at > now() + interval '1 second')
	          AND count(DISTINCT next_attempt_at) > 1 FROM pendulum.outbox")" = t ]
	[[ "$stderr" == *'msg="publish failed" message='*' state=PENDING retry_ms='*' error="exit 3: broker down (1)"'* ]]
	# nothing is due: another pass publishes nothing
	run --separate-stderr pd-relay -c "$CFG" --until-idle --publish "$cmd"
	[ "$status" -eq 0 ]
	[ "$(lines "$LOG")" -eq 5 ]
	# with short backoffs they go through on the third attempt
	sql "UPDATE pendulum.outbox SET next_attempt_at = now()"
	printf 'retry: {base: 50ms, cap: 200ms}\n' >"$CFG"
	start_relay relay -c "$CFG" --poll 50ms -j 5 --publish "$cmd"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.outbox WHERE state = 'PUBLISHED'" 5
	[ "$(sql "SELECT count(*) FROM pendulum.outbox WHERE attempts = 3 AND last_error IS NULL")" -eq 5 ]
	[ "$(lines "$LOG")" -eq 15 ]
}

@test "exhausted attempts dead-letter; exit 64 and 65 dead-letter at once" {
	a=$(record orders '{"fail": 3}' a "headers => '{}', max_attempts => 3")
	b=$(record orders '{"fail": 65}' b)
	c=$(record orders '{"fail": 64}' c)
	start_relay relay -c "$CFG" --poll 50ms --publish \
		"$(publish_cmd "$LOG" 'code=$(sed "s/[^0-9]//g"); echo "nope $code" >&2; exit $code')"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.outbox WHERE state = 'DEAD_LETTERED'" 3
	[ "$(sql "SELECT attempts || ' ' || dead_reason || ' ' || last_error || ' '
	          || (dead_lettered_at IS NOT NULL) FROM pendulum.outbox WHERE id = $a")" = \
		"3 attempts exhausted exit 3: nope 3 true" ]
	[ "$(sql "SELECT attempts || ' ' || dead_reason || ' ' || last_error FROM pendulum.outbox
	          WHERE id = $b")" = "1 terminal exit code exit 65: nope 65" ]
	[ "$(sql "SELECT attempts || ' ' || dead_reason FROM pendulum.outbox WHERE id = $c")" = \
		"1 terminal exit code" ]
	[ "$(grep -c "^$a " "$LOG")" -eq 3 ]
	[ "$(lines "$LOG")" -eq 5 ]
}

@test "a dead-lettered message blocks its key until an operator replays or deletes it" {
	poison=$(record orders '{"poison": true}' K)
	next=$(record orders '{"n": 2}' K)
	other=$(record orders '{"n": 3}' L)
	other_topic=$(record invoices '{"n": 4}' K)
	cmd=$(publish_cmd "$LOG" 'grep -q poison && exit 65; true')
	run --separate-stderr pd-relay -c "$CFG" --until-idle --publish "$cmd"
	[ "$status" -eq 0 ]
	[ "$(outbox_state "$poison")" = DEAD_LETTERED ]
	[ "$(outbox_state "$next")" = PENDING ]
	[ "$(sql "SELECT attempts FROM pendulum.outbox WHERE id = $next")" -eq 0 ]
	[ "$(outbox_state "$other")" = PUBLISHED ]
	[ "$(outbox_state "$other_topic")" = PUBLISHED ]
	# a replay (after the publisher was fixed) goes first, then the rest in order
	sql "UPDATE pendulum.outbox SET state = 'PENDING', attempts = 0, next_attempt_at = now(),
	     dead_reason = NULL, dead_lettered_at = NULL, replay_count = replay_count + 1
	     WHERE id = $poison"
	run --separate-stderr pd-relay -c "$CFG" --until-idle --publish "$(publish_cmd "$LOG")"
	[ "$status" -eq 0 ]
	[ "$(grep -E "^($poison|$next) " "$LOG" | cut -d' ' -f1 | tr '\n' ' ')" = "$poison $poison $next " ]
	# a deleted dead letter unblocks its key too
	dead=$(record orders '{"poison": true}' M)
	after=$(record orders '{"n": 5}' M)
	pd-relay -c "$CFG" --until-idle --publish "$cmd" 2>/dev/null
	[ "$(outbox_state "$after")" = PENDING ]
	sql "DELETE FROM pendulum.outbox WHERE id = $dead"
	pd-relay -c "$CFG" --until-idle --publish "$cmd" 2>/dev/null
	[ "$(outbox_state "$after")" = PUBLISHED ]
}

@test "a claimed message is invisible to a second relay until published" {
	gate=$BATS_TEST_TMPDIR/gate
	id=$(record orders '{}' k)
	start_relay a -c "$CFG" --visibility 1m --publish \
		"$(publish_cmd "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done")"
	wait_for 20 lines_at_least "$LOG" 1
	a_id=$(sql "SELECT claimed_by FROM pendulum.outbox WHERE id = $id")
	[[ "$a_id" == *":$(bg_pid a):"* ]]
	[ "$(sql "SELECT next_attempt_at > now() + interval '50 seconds' FROM pendulum.outbox")" = t ]
	# relay b finds nothing to claim
	run --separate-stderr pd-relay -c "$CFG" --once --publish "$(publish_cmd "$LOG")"
	[ "$status" -eq 0 ]
	[ "$(lines "$LOG")" -eq 1 ]
	[ "$(sql "SELECT attempts || ' ' || claimed_by FROM pendulum.outbox")" = "1 $a_id" ]
	touch "$gate"
	wait_for 20 sql_is "SELECT state FROM pendulum.outbox" PUBLISHED
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "a relay killed mid-publish: the message reappears after its visibility timeout and is published" {
	id=$(record orders '{}' k)
	later=$(record orders '{}' k)
	# the publish command kills its relay (its parent) mid-publish, then hangs
	start_relay a -c "$CFG" --visibility 3s --timeout 1s --publish \
		"$(publish_cmd "$LOG" 'kill -KILL $PPID; sleep 60')"
	wait_for 20 test -s "$BATS_FILE_TMPDIR/a.status"
	[ "$(bg_status a)" -eq 137 ]
	[ "$(lines "$LOG")" -eq 1 ]
	lapsed_by=$(sql "SELECT claimed_by FROM pendulum.outbox WHERE id = $id")
	# still claimed: a relay started now publishes nothing, but keeps polling
	b_from=$(sql "SELECT clock_timestamp()")
	start_relay b -c "$CFG" --visibility 3s --timeout 1s --poll 100ms --publish "$(publish_cmd "$LOG")"
	# (once b, not a's lingering session, has run its claim statement)
	wait_for 30 sql_is "SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_start > '$b_from'
		AND pid <> pg_backend_pid() AND query LIKE 'WITH c AS ( SELECT o.id FROM pendulum.outbox o%'" t
	[ "$(lines "$LOG")" -eq 1 ]
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.outbox WHERE state = 'PUBLISHED'" 2
	# at least once: a's attempt and b's; the later message for the key after it
	[ "$(cut -d' ' -f1 "$LOG" | tr '\n' ' ')" = "$id $id $later " ]
	[ "$(sql "SELECT attempts FROM pendulum.outbox WHERE id = $id")" -eq 2 ]
	wait_for 10 grep -q 'message published" message='"$id"' topic=orders key=k attempt=2' "$BATS_FILE_TMPDIR/b.log"
	[[ "$lapsed_by" == *":$(bg_pid a):"* ]]
}

@test "an abandoned last attempt is dead-lettered when its claim lapses" {
	id=$(record orders '{}' k "headers => '{}', max_attempts => 1")
	start_relay a -c "$CFG" --visibility 2s --timeout 1s --publish \
		"$(publish_cmd "$LOG" 'kill -KILL $PPID; sleep 60')"
	wait_for 20 test -s "$BATS_FILE_TMPDIR/a.status"
	a_id=$(sql "SELECT claimed_by FROM pendulum.outbox WHERE id = $id")
	[[ "$a_id" == *":$(bg_pid a):"* ]]
	start_relay b -c "$CFG" --visibility 2s --timeout 1s --poll 100ms --publish "$(publish_cmd "$LOG")"
	wait_for 30 sql_is "SELECT state FROM pendulum.outbox" DEAD_LETTERED
	[ "$(sql "SELECT attempts || ' ' || dead_reason || ' / ' || last_error || ' / '
	          || coalesce(claimed_by, '-') FROM pendulum.outbox")" = \
		"1 attempts exhausted (the last claim lapsed) / claim lapsed: relay $a_id recorded no outcome / -" ]
	[ "$(lines "$LOG")" -eq 1 ]
	wait_for 10 grep -q 'dead-lettered: attempts used up and the last claim lapsed" messages=1' "$BATS_FILE_TMPDIR/b.log"
}

@test "a stalled relay's outcome for a claim taken over is fenced off and counted" {
	gate=$BATS_TEST_TMPDIR/gate
	id=$(record orders '{}' k)
	# a's publish command stops a (its parent) at once, then succeeds once
	# the gate opens: a cannot record that before its claim lapses
	start_relay a -c "$CFG" --visibility 2s --timeout 1s --publish \
		"$(publish_cmd "$LOG" "kill -STOP \$PPID; while [ ! -e '$gate' ]; do sleep 0.05; done")"
	wait_for 20 eval '[[ "$(ps -o stat= -p "$(bg_pid a)")" == T* ]]'
	touch "$gate"
	wait_for 20 sql_is "SELECT next_attempt_at <= now() FROM pendulum.outbox" t
	run --separate-stderr pd-relay -c "$CFG" --until-idle --publish "$(publish_cmd "$LOG")"
	[ "$status" -eq 0 ]
	token=$(sql "SELECT claim_token FROM pendulum.outbox WHERE id = $id")
	[ "$(sql "SELECT state || ' ' || attempts FROM pendulum.outbox")" = "PUBLISHED 2" ]
	kill -CONT "$(bg_pid a)"
	wait_for 20 grep -q 'fenced: the claim was taken over' "$BATS_FILE_TMPDIR/a.log"
	[ "$(outbox_fenced)" -eq 1 ]
	[ "$(sql "SELECT state || ' ' || attempts || ' ' || claim_token FROM pendulum.outbox")" = \
		"PUBLISHED 2 $token" ]
	[ "$(lines "$LOG")" -eq 2 ]
}

@test "per-key order holds with three relays at once, failures included" {
	# every seventh message fails once
	cmd=$(publish_cmd "$LOG" '[ $((PD_MESSAGE_ID % 7)) -ne 0 ] || [ "$PD_ATTEMPT" -gt 1 ] || exit 1')
	# one command at a time each: with 5 keys claimable, every relay gets work
	for r in r1 r2 r3; do
		start_relay "$r" -c "$CFG" -j 1 --poll 50ms --publish "$cmd"
	done
	for r in r1 r2 r3; do
		wait_for 20 grep -q 'relay started' "$BATS_FILE_TMPDIR/$r.log"
	done
	# 5 keys x 20 messages, recorded interleaved in one transaction
	sql "SELECT pendulum.outbox_record('default', 'orders', jsonb_build_object('n', g),
	     'key-' || (g % 5)) FROM generate_series(1, 100) g" >/dev/null
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.outbox WHERE state = 'PUBLISHED'" 100
	[ "$(lines "$LOG")" -eq "$(sql "SELECT 100 + count(*) FROM pendulum.outbox WHERE id % 7 = 0")" ]
	# each key's published ids, in the order of the log, ascend
	for k in 0 1 2 3 4; do
		got=$(awk -v k="key-$k" '$2 == k { print $1 }' "$LOG" | uniq | tr '\n' ' ')
		want=$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) || ' ' FROM pendulum.outbox
		            WHERE message_key = 'key-$k'")
		# a failed attempt logs its id, then the retry logs it again: uniq folds them
		[ "$got" = "$want" ] || { echo "key-$k: got $got, want $want"; return 1; }
	done
	# all three took part
	for r in r1 r2 r3; do
		grep -q 'message published' "$BATS_FILE_TMPDIR/$r.log" || { echo "$r idle"; return 1; }
	done
}

@test "a hanging publish command is killed at its timeout and retried" {
	id=$(record orders '{}' k)
	pids=$BATS_TEST_TMPDIR/pids
	# the first attempt ignores SIGTERM and hangs; SIGKILL after the grace ends it
	start_relay relay -c "$CFG" --visibility 5s --timeout 500ms --poll 50ms --publish \
		"$(publish_cmd "$LOG" "echo \$\$ >>'$pids'; [ \$PD_ATTEMPT -gt 1 ] || { trap '' TERM; while :; do sleep 0.05; done; }")"
	wait_for 30 sql_is "SELECT state FROM pendulum.outbox" PUBLISHED
	[ "$(sql "SELECT attempts || ' ' || coalesce(last_error, '-') FROM pendulum.outbox")" = "2 -" ]
	[ "$(lines "$LOG")" -eq 2 ]
	[ "$(alive "$(head -n 1 "$pids")" && echo alive || echo gone)" = gone ]
	grep -q 'publish failed" message='"$id"' topic=orders key=k attempt=1 state=PENDING retry_ms=[0-9]* error="timeout after 500ms"' \
		"$BATS_FILE_TMPDIR/relay.log"
}

@test "SIGTERM drains: running commands finish; past the drain timeout they are killed and released" {
	gate=$BATS_TEST_TMPDIR/gate
	slow=$(record orders '{}' a)
	start_relay relay -c "$CFG" --publish "$(publish_cmd "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done")"
	wait_for 20 lines_at_least "$LOG" 1
	kill -TERM "$(bg_pid relay)"
	wait_for 20 grep -q 'draining: no new messages' "$BATS_FILE_TMPDIR/relay.log"
	# it waits for the command, which holds the claim
	alive "$(bg_pid relay)"
	[ "$(outbox_state "$slow")" = PENDING ]
	touch "$gate"
	wait_for 20 test -s "$BATS_FILE_TMPDIR/relay.status"
	[ "$(bg_status relay)" -eq 0 ]
	[ "$(outbox_state "$slow")" = PUBLISHED ]
	# past the drain timeout: killed, the message given back with its attempt refunded
	stuck=$(record orders '{}' b)
	start_relay relay -c "$CFG" --drain-timeout 200ms --publish "$(publish_cmd "$LOG" 'sleep 30')"
	wait_for 20 lines_at_least "$LOG" 2
	stop_bg relay TERM 20
	[ "$(bg_status relay)" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempts || ' ' || (next_attempt_at <= now()) || ' '
	          || coalesce(claimed_by, '-') FROM pendulum.outbox WHERE id = $stuck")" = "PENDING 0 true -" ]
	grep -q 'message released" message='"$stuck" "$BATS_FILE_TMPDIR/relay.log"
}

@test "per-topic commands from the config file, --exec, and --topic" {
	a=$(record orders '{"o": 1}')
	b=$(record invoices '{"i": 1}')
	c=$(record audit '{"a": 1}')
	printf '#!/bin/sh\necho "exec $PD_MESSAGE_ID $PD_TOPIC" >>"%s"\n' "$LOG" >"$BATS_TEST_TMPDIR/pub"
	chmod +x "$BATS_TEST_TMPDIR/pub"
	cat >"$CFG" <<-EOF
		relay:
		  concurrency: 1
		  topics:
		    orders:
		      run: echo "run \$PD_MESSAGE_ID \$PD_TOPIC" >>'$LOG'
		      timeout: 2s
		    invoices:
		      exec: [$BATS_TEST_TMPDIR/pub]
	EOF
	# only the topics with a command are claimed
	run --separate-stderr pd-relay -c "$CFG" --until-idle
	[ "$status" -eq 0 ]
	[ "$(sort "$LOG")" = "$(printf 'exec %s invoices\nrun %s orders\n' "$b" "$a")" ]
	[ "$(sql "SELECT state || ' ' || attempts FROM pendulum.outbox WHERE id = $c")" = "PENDING 0" ]
	# --topic narrows; --exec is the command for every other topic
	d=$(record orders '{"o": 2}')
	run --separate-stderr pd-relay -c "$CFG" --until-idle --topic audit --exec "$BATS_TEST_TMPDIR/pub"
	[ "$status" -eq 0 ]
	[ "$(outbox_state "$c")" = PUBLISHED ]
	[ "$(outbox_state "$d")" = PENDING ]
	grep -qx "exec $c audit" "$LOG"
	run --separate-stderr pd-relay -c "$CFG" --once --topic orders --exec "$BATS_TEST_TMPDIR/pub"
	[ "$status" -eq 0 ]
	[ "$(outbox_state "$d")" = PUBLISHED ] # orders has its own command in the file
	# a command that cannot run is refused at start-up, naming it
	e=$(record audit '{}')
	run --separate-stderr pd-relay -c "$CFG" --once --exec /nonexistent/publish
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-relay: publish command for topic '*': cannot run /nonexistent/publish: No such file or directory" ]
	[ "$(sql "SELECT state || ' ' || attempts FROM pendulum.outbox WHERE id = $e")" = "PENDING 0" ]
	# and one that disappears after start-up dead-letters its message, naming it
	cp "$BATS_TEST_TMPDIR/pub" "$BATS_TEST_TMPDIR/pub2"
	start_relay r -c "$CFG" --poll 100ms --exec "$BATS_TEST_TMPDIR/pub2" --topic audit --topic other
	wait_for 10 sql_is "SELECT state FROM pendulum.outbox WHERE id = $e" PUBLISHED
	rm "$BATS_TEST_TMPDIR/pub2"
	f=$(record other '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.outbox WHERE id = $f" DEAD_LETTERED
	[ "$(sql "SELECT attempts || ' ' || dead_reason FROM pendulum.outbox WHERE id = $f")" = \
		"1 cannot run $BATS_TEST_TMPDIR/pub2: No such file or directory" ]
}

@test "the claim walks the partial index, not the published history" {
	sql "INSERT INTO pendulum.outbox (topic, message_key, payload, state, published_at)
	     SELECT 'orders', 'k' || (g % 50), '{}', 'PUBLISHED', now() FROM generate_series(1, 20000) g;
	     ANALYZE pendulum.outbox"
	for i in 1 2 3; do record orders '{}' "k$i" >/dev/null; done
	# auto_explain prints each statement's plan to the relay as a NOTICE, which libpq logs
	run --separate-stderr env PGOPTIONS="-c session_preload_libraries=auto_explain
		-c auto_explain.log_min_duration=0 -c auto_explain.log_level=notice" \
		pd-relay --once --publish true
	[ "$status" -eq 0 ]
	claim=$(printf '%s\n' "$stderr" | awk '/Query Text: WITH c AS/ { on = 1 } on && /Query Text: / && !/WITH c AS/ { on = 0 } on')
	[ -n "$claim" ]
	[[ "$claim" == *"Index Scan using outbox_claim_idx on outbox o"* ]] || { echo "$claim"; return 1; }
	# only heads are in that index: no per-candidate look for an earlier message of the key
	[[ "$claim" != *"SubPlan"* ]] || { echo "$claim"; return 1; }
	[[ "$claim" != *"Seq Scan"* ]] || { echo "$claim"; return 1; }
	[ "$(sql "SELECT count(*) FROM pendulum.outbox WHERE state = 'PENDING'")" -eq 0 ]
}
