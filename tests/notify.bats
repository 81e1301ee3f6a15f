#!/usr/bin/env bats
# The service manager's side (issue 12): every daemon tells $NOTIFY_SOCKET
# READY=1 once connected, STATUS= lines, WATCHDOG=1 at the rhythm
# $WATCHDOG_USEC asks even when idle, RELOADING=1 then READY=1 around a
# SIGHUP, STOPPING=1 when SIGTERM starts the drain; the socket is not passed
# on to handlers. Logs: no timestamp of our own when stderr is the journal
# ($JOURNAL_STREAM), and --log-format json lines that jq parses.
#
# A listener (pd-test-tool notify-listen) stands in for systemd: it prints
# each datagram it receives on a line.

load helpers
pd_db_hooks

# listen: a listener on $BATS_FILE_TMPDIR/notify.sock, its datagrams in notify.out.
listen() {
	SOCK=$BATS_FILE_TMPDIR/notify.sock
	OUT=$BATS_FILE_TMPDIR/notify.out
	rm -f "$SOCK" # a socket left by an earlier test would look ready
	start_bg notify "$PD_TEST_TOOL" notify-listen "$SOCK"
	wait_for 10 test -S "$SOCK"
}

# said LINE [N]: the listener got LINE at least N times (default 1).
said() {
	[ "$(grep -cxF -- "$1" "$OUT")" -ge "${2:-1}" ]
}

# said_after FIRST THEN: a line THEN came after the first line FIRST.
said_after() {
	awk -v a="$1" -v b="$2" '$0 == a && !n { n = NR } n && NR > n && $0 == b { f = 1 }
		END { exit !f }' "$OUT"
}

# a_status: some STATUS= line came.
a_status() {
	grep -q '^STATUS=.' "$OUT"
}

# daemon_speaks NAME CMD...: CMD, under the listener, goes through its life:
# READY=1, a STATUS= line, WATCHDOG=1 again and again (idle: nothing else
# wakes it), RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 on SIGTERM, exit 0.
daemon_speaks() {
	local name=$1
	shift
	listen
	start_bg "$name" env NOTIFY_SOCKET="$SOCK" WATCHDOG_USEC=400000 "$@"
	wait_for 10 said READY=1
	wait_for 10 a_status
	wait_for 10 said_after READY=1 WATCHDOG=1
	wait_for 10 said WATCHDOG=1 5
	kill -HUP "$(bg_pid "$name")"
	wait_for 10 said RELOADING=1
	wait_for 10 said_after RELOADING=1 READY=1
	grep -q '^MONOTONIC_USEC=[0-9][0-9]*$' "$OUT"
	stop_bg "$name" TERM 10
	[ "$(bg_status "$name")" -eq 0 ]
	wait_for 10 said STOPPING=1
	said_after RELOADING=1 STOPPING=1
}

@test "pd-worker: READY, STATUS, WATCHDOG, RELOADING/READY, STOPPING" {
	daemon_speaks worker pd-worker --handler 't=true'
}

@test "pd-relay: READY, STATUS, WATCHDOG, RELOADING/READY, STOPPING" {
	daemon_speaks relay pd-relay --publish true
}

@test "pd-cron run: READY, STATUS, WATCHDOG, RELOADING/READY, STOPPING" {
	daemon_speaks ticker pd-cron run --interval 1h
}

@test "pd-reaper: READY, STATUS, WATCHDOG, RELOADING/READY, STOPPING" {
	daemon_speaks reaper pd-reaper --interval 1h
}

@test "the worker's STATUS follows its handlers; handlers do not inherit NOTIFY_SOCKET" {
	local env_out=$BATS_FILE_TMPDIR/handler.env gate=$BATS_FILE_TMPDIR/gate
	rm -f "$gate"
	listen
	start_bg worker env NOTIFY_SOCKET="$SOCK" WATCHDOG_USEC=400000 \
		pd-worker --handler "t=env >'$env_out'; while [ ! -e '$gate' ]; do sleep 0.05; done"
	wait_for 10 said STATUS=idle
	pd-enqueue t '{}' >/dev/null
	wait_for 10 said 'STATUS=running 1 of 4, 0 ready'
	touch "$gate"
	wait_for 10 said_after 'STATUS=running 1 of 4, 0 ready' STATUS=idle
	grep -q '^PD_JOB_ID=' "$env_out"
	run grep -cE '^(NOTIFY_SOCKET|WATCHDOG_USEC|WATCHDOG_PID)=' "$env_out"
	[ "$output" = 0 ]
}

@test "without NOTIFY_SOCKET the worker runs as before" {
	pd-enqueue t '{}' >/dev/null
	run --separate-stderr pd-worker --until-idle --handler 't=true'
	[ "$status" -eq 0 ]
	[[ "$stderr" == *'msg="job done"'* ]]
}

@test "JOURNAL_STREAM naming stderr: no timestamp, a syslog priority; naming something else: timestamps" {
	local log=$BATS_FILE_TMPDIR/reaper.log
	: >"$log"
	start_bg reaper env JOURNAL_STREAM="$(stat -c '%d:%i' "$log")" pd-reaper -v --interval 1h
	wait_for 10 grep -q 'msg="reaper started"' "$log"
	grep -q '^<6>level=info msg="reaper started"' "$log"
	grep -q '^<7>level=debug ' "$log"
	run grep -c 'ts=' "$log"
	[ "$output" = 0 ]
	stop_bg reaper
	start_bg other env JOURNAL_STREAM="1:1" pd-reaper --interval 1h
	wait_for 10 grep -q 'msg="reaper started"' "$BATS_FILE_TMPDIR/other.log"
	grep -q '^ts=[0-9T:.-]*Z level=info msg="reaper started"' "$BATS_FILE_TMPDIR/other.log"
}

@test "--log-format json: every line is a JSON object jq parses, the fields as members" {
	local id
	id=$(pd-enqueue t '{}')
	run --separate-stderr pd-worker --log-format json --until-idle --handler 't=echo oops >&2'
	[ "$status" -eq 0 ]
	output=$stderr
	json_lines_ok
	printf '%s\n' "$stderr" | jq -e -s 'all(has("ts") and has("level") and has("msg"))'
	printf '%s\n' "$stderr" | jq -e -s --argjson id "$id" \
		'any(.msg == "job done" and .job == $id and .outcome == "succeeded")'
	printf '%s\n' "$stderr" | jq -e -s 'any(.level == "info" and .msg == "worker started")'
}

@test "--log-format json under the journal: no ts member" {
	local log=$BATS_FILE_TMPDIR/reaper.log
	: >"$log"
	start_bg reaper env JOURNAL_STREAM="$(stat -c '%d:%i' "$log")" \
		pd-reaper --log-format json --interval 1h
	wait_for 10 grep -q '"msg":"reaper started"' "$log"
	sed 's/^<[0-9]>//' "$log" | jq -e -s 'all(has("ts") | not) and any(.msg == "reaper started")'
}

@test "--log-format takes logfmt or json, on every daemon" {
	for p in pd-worker pd-relay pd-reaper pd-cron; do
		run -64 --separate-stderr "$p" --log-format yaml
		[[ "$stderr" == *"option --log-format: 'yaml' is not logfmt or json"* ]]
	done
	run -0 pd-reaper --log-format logfmt --once
}
