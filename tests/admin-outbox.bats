#!/usr/bin/env bats
# pd-admin outbox: stats per topic, list with filters and paging, replay of
# dead letters and its refusals; --json everywhere; help and the man page.

load helpers
pd_db_hooks

setup() {
	reset_outbox
}

# dead ID...: dead-letter these messages as the relay would.
dead() {
	local ids
	ids=$(IFS=,; echo "$*")
	sql "UPDATE pendulum.outbox SET state = 'DEAD_LETTERED', attempts = max_attempts,
	       claim_token = nextval('pendulum.outbox_claim_token_seq'), claimed_by = 'relay-x',
	       dead_reason = 'attempts exhausted', last_error = 'exit 1', dead_lettered_at = now()
	     WHERE id IN ($ids)"
}

# published ID...: mark these messages published.
published() {
	local ids
	ids=$(IFS=,; echo "$*")
	sql "UPDATE pendulum.outbox SET state = 'PUBLISHED', attempts = 1, published_at = now()
	     WHERE id IN ($ids)"
}

@test "outbox subcommands have --help on stdout, and their options are in the man page" {
	for c in "outbox stats" "outbox list" "outbox replay" "outbox delete" "outbox purge"; do
		# shellcheck disable=SC2086 # two words on purpose
		run --separate-stderr pd-admin $c --help
		[ "$status" -eq 0 ] || { echo "$c: $status"; return 1; }
		[[ "$output" == "usage: pd-admin $c"* ]] || { echo "$c: $output"; return 1; }
		[ -z "$stderr" ]
	done
	run --separate-stderr pd-admin outbox --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"pd-admin outbox replay ID..."* ]]
	run --separate-stderr pd-admin --help
	[[ "$output" == *"outbox list [options]"* ]]
	command -v mandoc >/dev/null || skip "mandoc not installed"
	man_opts=$(mandoc -T ascii "$PD_ROOT/man/pd-admin.1" | col -b | grep -oE -- '--[a-z][a-z-]+' | sort -u)
	man_text=$(mandoc -T ascii "$PD_ROOT/man/pd-admin.1" | col -b)
	for c in "outbox stats" "outbox list" "outbox replay" "outbox delete" "outbox purge"; do
		# shellcheck disable=SC2086 # two words on purpose
		help_opts=$(pd-admin $c --help | grep -oE -- '--[a-z][a-z-]+' | sort -u)
		missing=$(comm -23 <(echo "$help_opts") <(echo "$man_opts"))
		[ -z "$missing" ] || { echo "$c: not in the man page: $missing"; return 1; }
		[[ "$man_text" == *"$c"* ]] || { echo "$c: not in the man page"; return 1; }
	done
}

@test "outbox usage errors exit 64 and name what is wrong" {
	run --separate-stderr pd-admin outbox frob
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"pd-admin: unknown outbox command 'frob'"* ]]
	run --separate-stderr pd-admin outbox list --state LEASED
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-admin: option --state: unknown outbox state 'LEASED' (PENDING, PUBLISHED or DEAD_LETTERED)"* ]]
	run --separate-stderr pd-admin outbox list --limit 0
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--limit"* ]]
	run --separate-stderr pd-admin outbox list --queue q
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unknown option '--queue'"* ]]
	run --separate-stderr pd-admin outbox replay
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"missing message id"* ]]
	run --separate-stderr pd-admin outbox replay 3 x7
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"invalid message id 'x7'"* ]]
	run --separate-stderr pd-admin outbox stats extra
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unexpected argument 'extra'"* ]]
	# jobs keeps its own states
	run --separate-stderr pd-admin jobs --state PUBLISHED
	[ "$status" -eq 64 ]
}

@test "outbox stats: counts by topic and state, and the oldest pending message's age" {
	run --separate-stderr pd-admin outbox stats
	[ "$status" -eq 0 ]
	[ "$output" = "TOPIC  PENDING  PUBLISHED  DEAD_LETTERED  OLDEST_PENDING" ]
	a1=$(record orders '{}' k1)
	a2=$(record orders '{}' k2)
	record orders '{}' k3 >/dev/null
	b1=$(record billing '{}')
	b2=$(record billing '{}')
	published "$a1" "$b1"
	dead "$a2" "$b2"
	sql "UPDATE pendulum.outbox SET created_at = now() - interval '200 s' WHERE id = $a1 + 2"
	run --separate-stderr pd-admin outbox stats
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "TOPIC    PENDING  PUBLISHED  DEAD_LETTERED  OLDEST_PENDING" ]
	[[ "${lines[1]}" == "billing  0        1          1              -" ]]
	# 200 s old when it was set: up to 40 s more by the time pd-admin reads it
	[[ "${lines[2]}" =~ ^orders\ +1\ +1\ +1\ +3m[2-5][0-9]s$ ]] || { echo "${lines[2]}"; return 1; }
	[ "${#lines[@]}" -eq 3 ]
	run --separate-stderr pd-admin --json outbox stats
	[ "$status" -eq 0 ]
	json_lines_ok
	printf '%s\n' "$output" | jq -e -s '
		length == 2
		and .[0] == {topic: "billing", pending: 0, published: 1, dead_lettered: 1, oldest_pending_age_s: null}
		and .[1].topic == "orders" and .[1].pending == 1 and .[1].dead_lettered == 1
		and .[1].oldest_pending_age_s >= 200 and .[1].oldest_pending_age_s < 300'
}

@test "outbox list: newest first, filters by state, topic and tenant, pages, with the total" {
	for i in 1 2 3 4 5; do record orders "{\"n\": $i}" "k$i" >/dev/null; done
	for i in 1 2; do record billing "{\"b\": $i}" >/dev/null; done
	sql "SELECT pendulum.outbox_record('acme', 'orders', '{}')" >/dev/null
	first=$(sql "SELECT min(id) FROM pendulum.outbox")
	dead "$first" "$((first + 5))"
	published "$((first + 1))"

	run --separate-stderr pd-admin outbox list
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "ID"*"TOPIC"*"STATE"*"KEY"*"ATTEMPTS"*"REPLAYS"*"TENANT"*"AGE"*"NEXT"*"NOTE" ]]
	[[ "${lines[1]}" == "$((first + 7)) "*"orders"*"PENDING"*"acme"* ]]
	[[ "${lines[8]}" == "$first "*"orders"*"DEAD_LETTERED"*"k1"*"25/25"*"attempts exhausted" ]]
	[ "${lines[9]}" = "1-8 of 8 messages" ]

	ids() { pd-admin --json outbox list "$@" | jq -r .id | tr '\n' ' '; }
	[ "$(ids --state dead_lettered)" = "$((first + 5)) $first " ]
	[ "$(ids --state PUBLISHED,DEAD_LETTERED)" = "$((first + 5)) $((first + 1)) $first " ]
	[ "$(ids --state PUBLISHED --state DEAD_LETTERED)" = "$((first + 5)) $((first + 1)) $first " ]
	[ "$(ids --topic billing)" = "$((first + 6)) $((first + 5)) " ]
	[ "$(ids --topic orders --state PENDING)" = "$((first + 7)) $((first + 4)) $((first + 3)) $((first + 2)) " ]
	[ "$(ids --tenant acme)" = "$((first + 7)) " ]
	[ "$(ids --topic nosuch)" = "" ]
	[ "$(ids --limit 2 --offset 3)" = "$((first + 4)) $((first + 3)) " ]

	run --separate-stderr pd-admin outbox list --topic orders --limit 2 --offset 2
	[ "${lines[3]}" = "3-4 of 6 messages" ]
	run --separate-stderr pd-admin outbox list --offset 100
	[ "${lines[1]}" = "0 of 8 messages (past the last page)" ]

	run --separate-stderr pd-admin outbox list --json --state DEAD_LETTERED --topic orders
	[ "$status" -eq 0 ]
	json_lines_ok
	printf '%s\n' "$output" | jq -e -s --argjson id "$first" '
		length == 1 and .[0].id == $id and .[0].state == "DEAD_LETTERED"
		and .[0].message_key == "k1" and .[0].payload == {n: 1} and .[0].headers == {}
		and .[0].attempts == 25 and .[0].max_attempts == 25 and .[0].replay_count == 0
		and .[0].dead_reason == "attempts exhausted" and .[0].last_error == "exit 1"
		and .[0].claimed_by == "relay-x" and .[0].total == 1 and (.[0].age_s | type) == "number"
		and .[0].next_attempt_in_s == null and (.[0].dead_lettered_at | test("Z$"))'
}

@test "outbox replay: a dead letter goes back to PENDING, attempts reset, replay_count + 1" {
	m=$(record orders '{}' k1)
	dead "$m"
	sql "UPDATE pendulum.outbox SET next_attempt_at = now() + interval '1 day' WHERE id = $m"
	run --separate-stderr pd-admin outbox replay "$m"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "ID"*"TOPIC"*"STATE"*"KEY"*"REPLAYS" ]]
	[[ "${lines[1]}" =~ ^$m\ +orders\ +PENDING\ +k1\ +1$ ]]
	[ "${lines[2]}" = "replayed 1 outbox message" ]
	[ "$(sql "SELECT state, attempts, replay_count, next_attempt_at <= now(), claim_token IS NULL,
	          claimed_by IS NULL, dead_reason IS NULL, last_error IS NULL, dead_lettered_at IS NULL
	          FROM pendulum.outbox WHERE id = $m")" = "PENDING|0|1|t|t|t|t|t|t" ]
	dead "$m"
	run --separate-stderr pd-admin --json outbox replay "$m"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e --argjson id "$m" \
		'. == {id: $id, topic: "orders", state: "PENDING", message_key: "k1", replay_count: 2}'
}

@test "outbox replay refuses other states with exit 1 naming the state, unknown ids with 2" {
	p=$(record orders '{}')
	u=$(record orders '{}')
	d=$(record orders '{}')
	published "$u"
	dead "$d"
	run --separate-stderr pd-admin outbox replay "$p"
	[ "$status" -eq 1 ]
	[ "$output" = "replayed 0 outbox messages" ]
	[ "$stderr" = "pd-admin: 1 of 1 not replayed: message $p is PENDING, not DEAD_LETTERED" ]
	run --separate-stderr pd-admin outbox replay "$u"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"message $u is PUBLISHED, not DEAD_LETTERED" ]]
	[ "$(outbox_state "$u")" = PUBLISHED ]
	run --separate-stderr pd-admin outbox replay 999999
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: 1 of 1 not replayed: message 999999 not found" ]
	# a mix: the dead letter is replayed, the others reported, not-found wins
	run --separate-stderr pd-admin outbox replay "$u" "$d" 999999
	[ "$status" -eq 2 ]
	[[ "$output" == *"replayed 1 outbox message"* ]]
	[ "$stderr" = "pd-admin: 2 of 3 not replayed: message $u is PUBLISHED, not DEAD_LETTERED; message 999999 not found" ]
	[ "$(outbox_state "$d")" = PENDING ]
	[ "$(outbox_state "$p")" = PENDING ]
	[ "$(sql "SELECT replay_count FROM pendulum.outbox WHERE id IN ($p, $u) ORDER BY id")" = $'0\n0' ]
}

@test "outbox replay wakes a listening relay at once (NOTIFY), and it publishes again" {
	log=$BATS_TEST_TMPDIR/pub.log
	m=$(record orders '{}' k1)
	dead "$m"
	start_relay relay --poll 1h --publish "$(publish_cmd "$log")"
	wait_for 20 grep -q 'relay started' "$BATS_FILE_TMPDIR/relay.log"
	[ ! -e "$log" ]
	pd-admin outbox replay "$m" >/dev/null
	# polling is an hour away: only the notification can wake it
	wait_for 30 sql_is "SELECT state FROM pendulum.outbox WHERE id = $m" PUBLISHED
	[ "$(cat "$log")" = "$m k1" ]
}

@test "outbox list: a PENDING message behind a dead-lettered head of its key says so" {
	a=$(record orders '{}' k1)
	b=$(record orders '{}' k1)
	c=$(record orders '{}' k2)
	d=$(record orders '{}')
	dead "$a"
	run --separate-stderr pd-admin outbox list
	[ "$status" -eq 0 ]
	[[ "${lines[3]}" == "$b "*"PENDING"*"k1"*"waits behind $a (dead-lettered)" ]]
	[[ "${lines[4]}" == "$a "*"DEAD_LETTERED"*"attempts exhausted" ]]
	[[ "${lines[2]}" != *"waits behind"* ]]
	[[ "${lines[1]}" != *"waits behind"* ]]
	run --separate-stderr pd-admin --json outbox list
	printf '%s\n' "$output" | jq -e -s --argjson a "$a" --argjson b "$b" --argjson c "$c" --argjson d "$d" '
		map({(.id | tostring): .waits_behind}) | add
		| .[$b | tostring] == $a and .[$a | tostring] == null
		and .[$c | tostring] == null and .[$d | tostring] == null'
	# a head only in flight (PENDING) holds its key without a note
	pd-admin outbox replay "$a" >/dev/null
	run --separate-stderr pd-admin outbox list
	[[ "$output" != *"waits behind"* ]]
}

@test "outbox delete: dead letters go, all or nothing, and the key's next message is the head" {
	a=$(record orders '{}' k1)
	b=$(record orders '{}' k1)
	c=$(record billing '{}')
	p=$(record billing '{}')
	dead "$a" "$c"
	sql "UPDATE pendulum.counters SET value = 3 WHERE name = 'outbox_writes_fenced'"
	# one that is not dead-lettered, or unknown: nothing deleted
	run --separate-stderr pd-admin outbox delete "$a" "$p"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ "$stderr" = "pd-admin: 1 of 2 not deletable (nothing deleted): message $p is PENDING, not DEAD_LETTERED" ]
	run --separate-stderr pd-admin outbox delete "$a" 99999999
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"message 99999999 not found" ]]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox")" = 4 ]
	run --separate-stderr pd-admin outbox delete "$a" "$c"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "ID"*"TOPIC"*"KEY" ]]
	[[ "${lines[1]}" =~ ^$a\ +orders\ +k1$ ]]
	[ "${lines[3]}" = "deleted 2 dead-lettered outbox messages" ]
	[ "$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) FROM pendulum.outbox")" = "$b $p" ]
	# b heads k1 now: claimable
	[ "$(sql "SELECT is_head FROM pendulum.outbox WHERE id = $b")" = t ]
	[ "$(sql "SELECT head_id FROM pendulum.outbox_heads WHERE message_key = 'k1'")" = "$b" ]
	# no counter went down
	pd-admin metrics | grep -qx 'pendulum_outbox_writes_fenced_total 3'
}

@test "outbox purge --older-than: dead letters dead that long go, newer ones and others stay" {
	old=$(record orders '{}' k1)
	new=$(record orders '{}' k2)
	other=$(record billing '{}')
	pend=$(record billing '{}')
	dead "$old" "$new" "$other"
	sql "UPDATE pendulum.outbox SET dead_lettered_at = now() - interval '2 days' WHERE id IN ($old, $other)"
	run --separate-stderr pd-admin outbox purge --older-than 1d --dry-run
	[ "$status" -eq 0 ]
	[ "$output" = "would purge 2 dead-lettered outbox messages that died more than 1d ago" ]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox")" = 4 ]
	run --separate-stderr pd-admin --json outbox purge --older-than 1d --topic billing
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e '. == {purged: 1, older_than_s: 86400, topic: "billing", dry_run: false}'
	run --separate-stderr pd-admin outbox purge --older-than 1d
	[ "$output" = "purged 1 dead-lettered outbox message that died more than 1d ago" ]
	[ "$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) FROM pendulum.outbox")" = "$new $pend" ]
}

@test "outbox commands: an unreachable database exits 69" {
	run --separate-stderr pd-admin -d "host=/nonexistent-dir port=5999 dbname=x" outbox stats
	[ "$status" -eq 69 ]
	[ -z "$output" ]
	run --separate-stderr pd-admin -d "host=/nonexistent-dir port=5999 dbname=x" outbox replay 1
	[ "$status" -eq 69 ]
}
