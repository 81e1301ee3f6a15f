#!/usr/bin/env bats
# The outbox claim costs nothing per message queued behind a key's head:
# with 100,000 messages behind a dead-lettered head and 20,000 behind a
# head in flight, the claim, run as pd-relay runs it (the statement text of
# lib/outbox.c, its parameters bound), touches a few dozen buffers and
# returns the other keys' messages. And the head bookkeeping that makes it
# so stays right: replay, delete, publish, fencing, the claim's dead
# letters, and a recorder racing a publisher for one key.
#
# Every claim and outcome here runs in BEGIN ... ROLLBACK unless the test
# says otherwise, so the seed (made once, in setup_file) stays.

# SQL is single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers

# c_sql NAME: the statement lib/outbox.c sends as NAME, its string literals
# joined, exactly as pd-relay sends it.
c_sql() {
	awk -v n="$1" '$0 ~ "^static const char " n "\\[\\] =" { on = 1; next }
		on { print } on && /;$/ { exit }' "$PD_ROOT/lib/outbox.c" |
		sed -n 's/^[[:space:]]*"\(.*\)";\{0,1\}$/\1/p' | tr -d '\n'
}

# session_script SCRIPT: SCRIPT after the relay's statements, prepared as
# claim(topics, limit, relay, visibility_ms) and
# finish(id, token, kind, backoff_ms, error, dead_reason).
# A statement over 10 s is cancelled: the claim before 006 took minutes.
session_script() {
	printf "SET statement_timeout = '10s';\n"
	printf 'PREPARE claim(text[], integer, text, bigint) AS %s;\n' "$CLAIM_SQL"
	printf 'PREPARE finish(bigint, bigint, text, bigint, text, text) AS %s;\n' "$FINISH_SQL"
	printf '%s\n' "$1"
}

# in_session SCRIPT: psql runs session_script SCRIPT; unaligned output.
in_session() {
	session_script "$1" | psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL"
}

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	CLAIM_SQL=$(c_sql claim_sql)
	FINISH_SQL=$(c_sql finish_sql)
	export CLAIM_SQL FINISH_SQL
	sql "CREATE TABLE gate (open boolean); CREATE SEQUENCE rr_gate"
	# a poison message at the head of key "blocked", dead-lettered by the relay (exit 65)
	POISON=$(record orders '{"poison": true}' blocked)
	pd-relay --until-idle --publish 'exit 65' 2>/dev/null
	# the head of key "busy", taken by the relay's claim: in flight for an hour
	BUSY=$(record payments '{"busy": true}' busy)
	BUSY_TOKEN=$(in_session "EXECUTE claim('{payments}', 10, 'stalled-relay', 3600000)" | cut -d'|' -f2)
	# queued behind them, recorded the way applications do
	sql "SELECT count(pendulum.outbox_record('default', 'orders', jsonb_build_object('n', g), 'blocked'))
	     FROM generate_series(1, 100000) g" >/dev/null
	sql "SELECT count(pendulum.outbox_record('default', 'payments', jsonb_build_object('n', g), 'busy'))
	     FROM generate_series(1, 20000) g" >/dev/null
	# the claimable ones, recorded last: a walk in id order meets them after all the rest
	OTHERS=$(for k in 1 2 3; do record orders "{\"other\": $k}" "other-$k"; done | tr '\n' ' ')
	KEYLESS=$(record audit '{"keyless": true}')
	sql "VACUUM ANALYZE pendulum.outbox"
	export POISON BUSY BUSY_TOKEN OTHERS KEYLESS
}

teardown_file() {
	kill_all_bg
	pd_teardown_db
}

teardown() {
	kill_all_bg
}

# section PLAN FROM TO: the lines of PLAN from the one containing FROM up to
# (not including) the next one containing TO.
section() {
	printf '%s\n' "$1" | awk -v a="$2" -v b="$3" 'index($0, b) && on { exit } index($0, a) { on = 1 } on'
}

# buffers PLAN: shared hit + read of the first Buffers line of PLAN (a
# node's figure includes the nodes under it).
buffers() {
	printf '%s\n' "$1" | awk '/Buffers: / { for (i = 1; i <= NF; i++) if ($i ~ /^(hit|read)=/) {
		split($i, kv, "="); n += kv[2] } print n + 0; exit }'
}

# explain_claim [SQL BEFORE THE CLAIM]: the claim's EXPLAIN (ANALYZE, BUFFERS)
# in a transaction rolled back.
explain_claim() {
	in_session "BEGIN; $1
		EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE claim(NULL, 10, 'plan-test', 60000); ROLLBACK;"
}

# claim_ids [SQL BEFORE THE CLAIM]: the ids the claim returns (a dead-lettered
# one as "ID:d"), in a transaction rolled back. Other rows (an outcome's) are
# left out.
claim_ids() {
	in_session "BEGIN; $1 EXECUTE claim(NULL, 10, 'plan-test', 60000); ROLLBACK;" |
		awk -F'|' '$1 ~ /^[0-9]+$/ { printf "%s%s ", $1, ($2 == "" ? ":d" : "") }'
}

@test "the seed: one head per key, the rest queued behind it, heads named in outbox_heads" {
	[ -n "$CLAIM_SQL" ]
	[[ "$CLAIM_SQL" == "WITH c AS ("*"FOR UPDATE OF o SKIP LOCKED"* ]]
	[[ "$FINISH_SQL" == "WITH o AS ("*"claim_token = \$2"* ]]
	[ "$(outbox_state "$POISON")" = DEAD_LETTERED ]
	[ "$(sql "SELECT state || ' ' || claimed_by || ' ' || claim_token || ' ' || (next_attempt_at > now() + interval '50 minutes')
	          FROM pendulum.outbox WHERE id = $BUSY")" = "PENDING stalled-relay $BUSY_TOKEN true" ]
	[ "$(sql "SELECT message_key || ' ' || head_id FROM pendulum.outbox_heads ORDER BY head_id")" = \
		"$(printf 'blocked %s\nbusy %s\nother-1 %s\nother-2 %s\nother-3 %s' "$POISON" "$BUSY" $OTHERS)" ]
	[ "$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) || ' ' FROM pendulum.outbox WHERE is_head")" = \
		"$POISON $BUSY $OTHERS$KEYLESS " ]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox WHERE state = 'PENDING' AND NOT is_head")" -eq 120000 ]
}

@test "the claim walks only heads: 120,000 queued behind a dead-lettered and an in-flight head cost nothing" {
	run --separate-stderr explain_claim
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	plan=$output
	walk=$(section "$plan" "CTE c" "CTE d")
	[[ "$walk" == *"Index Scan using outbox_claim_idx on outbox o"* ]] || { echo "$plan"; return 1; }
	[[ "$plan" != *"SubPlan"* ]] || { echo "$plan"; return 1; }
	[[ "$plan" != *"Seq Scan"* ]] || { echo "$plan"; return 1; }
	# the one head it meets and passes over is the one in flight
	[[ "$walk" == *"(actual time="*" rows=4 loops=1)"* ]] || { echo "$plan"; return 1; }
	[ "$(printf '%s\n' "$walk" | sed -n 's/.*Rows Removed by Filter: //p')" = 1 ] || { echo "$plan"; return 1; }
	# finding them takes a few buffers (before 006: 462,000, or minutes once vacuumed)
	[ "$(buffers "$walk")" -lt 100 ] || { echo "$plan"; return 1; }
	# and the whole statement, updates of the four claimed rows included, stays small
	[ "$(buffers "$plan")" -lt 400 ] || { echo "$plan"; return 1; }
}

@test "the claim returns the other keys' messages in id order, nothing of the blocked or busy key" {
	[ "$(claim_ids)" = "$OTHERS$KEYLESS " ]
	# a relay serving only the busy key's topic finds nothing, at once
	[ -z "$(in_session "BEGIN; EXECUTE claim('{payments}', 10, 'plan-test', 60000); ROLLBACK;")" ]
}

@test "publishing the in-flight head hands its key to the next message; a fenced-off outcome does not" {
	next=$(sql "SELECT min(id) FROM pendulum.outbox WHERE message_key = 'busy' AND id > $BUSY")
	[ "$(claim_ids "EXECUTE finish($BUSY, $BUSY_TOKEN, 'published', 0, NULL, NULL);")" = \
		"$next $OTHERS$KEYLESS " ]
	# a stale token changes nothing: the key stays with its head
	[ "$(claim_ids "EXECUTE finish($BUSY, $((BUSY_TOKEN + 1000)), 'published', 0, NULL, NULL);")" = \
		"$OTHERS$KEYLESS " ]
	# nor do a retry or a release: the head is still the head
	[ "$(claim_ids "EXECUTE finish($BUSY, $BUSY_TOKEN, 'retry', 3600000, 'exit 1', NULL);")" = \
		"$OTHERS$KEYLESS " ]
	[ "$(claim_ids "EXECUTE finish($BUSY, $BUSY_TOKEN, 'release', 0, NULL, NULL);")" = \
		"$BUSY $OTHERS$KEYLESS " ]
	run --separate-stderr explain_claim "EXECUTE finish($BUSY, $BUSY_TOKEN, 'published', 0, NULL, NULL);"
	[ "$status" -eq 0 ]
	[ "$(buffers "$(section "$output" "CTE c" "CTE d")")" -lt 100 ] || { echo "$output"; return 1; }
	[ "$(outbox_state "$BUSY")" = PENDING ]
}

@test "an in-flight head whose last attempt lapsed is dead-lettered by the claim, a d row, and blocks its key" {
	lapse="UPDATE pendulum.outbox SET next_attempt_at = now(), attempts = max_attempts WHERE id = $BUSY;"
	[ "$(claim_ids "$lapse")" = "$BUSY:d $OTHERS$KEYLESS " ]
	# that claim, then a second one, which finds nothing: the dead letter blocks "busy"
	[ "$(claim_ids "$lapse EXECUTE claim(NULL, 10, 'x', 60000);")" = "$BUSY:d $OTHERS$KEYLESS " ]
}

@test "a replayed dead letter is claimed first; a deleted one hands its key to the next message" {
	run --separate-stderr pd-admin outbox replay "$POISON"
	[ "$status" -eq 0 ]
	[ "$(claim_ids)" = "$POISON $OTHERS$KEYLESS " ]
	run --separate-stderr explain_claim
	[ "$(buffers "$(section "$output" "CTE c" "CTE d")")" -lt 100 ] || { echo "$output"; return 1; }
	# dead-letter it again as the relay does (exit 65), for the tests after this one
	token=$(in_session "EXECUTE claim('{orders}', 1, 'plan-test', 60000)" | cut -d'|' -f2)
	[ "$(in_session "EXECUTE finish($POISON, $token, 'dead', 0, 'exit 65', 'terminal exit code')")" = "DEAD_LETTERED|0" ]
	[ "$(claim_ids)" = "$OTHERS$KEYLESS " ]
	# deleted (rolled back here), its key moves on to the first message behind it
	next=$(sql "SELECT min(id) FROM pendulum.outbox WHERE message_key = 'blocked' AND id > $POISON")
	[ "$(claim_ids "DELETE FROM pendulum.outbox WHERE id = $POISON;")" = "$next $OTHERS$KEYLESS " ]
	[ "$(outbox_state "$POISON")" = DEAD_LETTERED ]
}

# --- a recorder racing a publisher for one key (topic "race", committed) ---

GATE="DO \$\$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM gate) LOOP PERFORM pg_sleep(0.02); END LOOP; END \$\$;"

# race_head KEY: record a message for KEY of topic race (a key with nothing
# unpublished) and claim it; prints "ID TOKEN".
race_head() {
	local id
	id=$(record race '{}' "$1")
	echo "$id $(in_session "EXECUTE claim('{race}', 10, 'racer', 60000)" | awk -F'|' -v id="$id" '$1 == id { print $2 }')"
}

# race_state KEY: "id:is_head" for KEY's unpublished messages, and its head
# in outbox_heads.
race_state() {
	sql "SELECT coalesce(string_agg(id || ':' || is_head, ' ' ORDER BY id), '-') || ' / '
	     || coalesce((SELECT head_id::text FROM pendulum.outbox_heads
	                  WHERE topic = 'race' AND message_key = '$1'), '-')
	     FROM pendulum.outbox WHERE topic = 'race' AND message_key = '$1' AND state <> 'PUBLISHED'"
}

@test "recorded while its key's head is being published, a message becomes the head (either order)" {
	sql "TRUNCATE gate"
	read -r h tok <<<"$(race_head K)"
	# the recorder first: its transaction stays open, the publish waits for it
	start_psql pd-rec <<-EOF
		BEGIN;
		SELECT pendulum.outbox_record('default', 'race', '{}', 'K');
		$GATE
		COMMIT;
	EOF
	wait_for 20 backend_waiting pd-rec
	session_script "EXECUTE finish($h, $tok, 'published', 0, NULL, NULL)" | start_psql pd-fin
	wait_for 20 sql_is "SELECT wait_event_type FROM pg_stat_activity WHERE application_name = 'pd-fin'" Lock
	sql "INSERT INTO gate VALUES (true)"
	wait_bg pd-rec
	wait_bg pd-fin
	m1=$(bg_out pd-rec)
	[ "$(outbox_state "$h")" = PUBLISHED ]
	[ "$(race_state K)" = "$m1:true / $m1" ]
	# the publisher first: the recorder waits for it, then finds the key free
	sql "TRUNCATE gate"
	tok=$(in_session "EXECUTE claim('{race}', 10, 'racer', 60000)" | cut -d'|' -f2)
	session_script "BEGIN; EXECUTE finish($m1, $tok, 'published', 0, NULL, NULL); $GATE COMMIT;" |
		start_psql pd-fin
	wait_for 20 backend_waiting pd-fin
	start_psql pd-rec -c "SELECT pendulum.outbox_record('default', 'race', '{}', 'K')"
	wait_for 20 sql_is "SELECT wait_event_type FROM pg_stat_activity WHERE application_name = 'pd-rec'" Lock
	sql "INSERT INTO gate VALUES (true)"
	wait_bg pd-fin
	wait_bg pd-rec
	m2=$(bg_out pd-rec)
	[ "$(outbox_state "$m1")" = PUBLISHED ]
	[ "$(race_state K)" = "$m2:true / $m2" ]
	[ "$(in_session "BEGIN; EXECUTE claim('{race}', 10, 'x', 60000); ROLLBACK;" | cut -d'|' -f1)" = "$m2" ]
}

@test "a REPEATABLE READ recorder whose snapshot predates its key's publish gets 40001, not a lost head" {
	sql "SELECT setval('rr_gate', 1)"
	read -r h tok <<<"$(race_head R)"
	[ "$(race_state R)" = "$h:true / $h" ]
	# the snapshot is taken at once; the sequence gate is read outside it
	start_psql pd-rr <<-'EOF'
		BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT count(*) FROM pendulum.outbox WHERE topic = 'race';
		DO $$ BEGIN WHILE (SELECT last_value FROM rr_gate) < 2 LOOP PERFORM pg_sleep(0.02); END LOOP; END $$;
		SELECT pendulum.outbox_record('default', 'race', '{}', 'R');
		COMMIT;
	EOF
	wait_for 20 backend_waiting pd-rr
	[ "$(in_session "EXECUTE finish($h, $tok, 'published', 0, NULL, NULL)")" = "PUBLISHED|0" ]
	sql "SELECT setval('rr_gate', 2)" >/dev/null
	st=0
	wait_bg pd-rr || st=$?
	[ "$st" -eq 3 ] # psql: a statement failed
	grep -q 'could not serialize access' "$BATS_FILE_TMPDIR/pd-rr.log" || { bg_log pd-rr; return 1; }
	# nothing recorded, and the key is free: a retry becomes the head
	[ "$(race_state R)" = "- / -" ]
	m=$(record race '{}' R)
	[ "$(race_state R)" = "$m:true / $m" ]
}
