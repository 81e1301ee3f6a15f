#!/usr/bin/env bats
# make demo: scripts/demo runs unattended (no terminal, no stdin) to the end,
# its final tables match the README's, and the replay sends the dead letters
# round again with their replay count up. It starts its own PostgreSQL.

load helpers

# section TITLE: the table printed after the line starting with TITLE.
section() {
	printf '%s\n' "$output" | awk -v t="$1" 'index($0, t) == 1 { on = 1; next } on && /^$/ { exit } on'
}

# row TYPE STATE ATTEMPTS REPLAYS: the section ($table) has that row.
row() {
	printf '%s\n' "$table" | grep -E "^[0-9]+ +$1 +$2 +$3 +$4 +default " >/dev/null ||
		{ echo "no row '$*' in:"; echo "$table"; return 1; }
}

# the demo, its workers and its PostgreSQL, whatever happened
teardown() {
	kill_demo demo
}

@test "the demo settles as documented, replays its dead letters, and cleans up" {
	start_bg demo sh "$PD_ROOT/scripts/demo"
	st=0
	wait_bg demo 150 || st=$?
	output=$(bg_out demo)
	stderr=$(bg_log demo)
	[ "$st" -eq 0 ] || { echo "status $st"; echo "$output"; echo "$stderr"; return 1; }
	[[ "$output" != *$'\033'* ]] # no terminal: no escape codes

	table=$(section "settled after")
	[ "$(printf '%s\n' "$table" | grep -cE '^[0-9]+ ')" -eq 4 ]
	row noop SUCCEEDED 1/5 0
	row sleep SUCCEEDED 1/5 0
	row boom DEAD_LETTERED 5/5 0
	row poison DEAD_LETTERED 1/5 0

	[[ "$output" == *"replayed 2 dead letters"* ]]
	# the sleep job was shown outliving its lease
	[[ "$output" == *"on a 2s lease, renewed by heartbeats"* ]]

	table=$(section "settled again after")
	[ "$(printf '%s\n' "$table" | grep -cE '^[0-9]+ ')" -eq 4 ]
	row noop SUCCEEDED 1/5 0
	row sleep SUCCEEDED 1/5 0
	row boom DEAD_LETTERED 5/5 1
	row poison DEAD_LETTERED 1/5 1

	# it stopped its PostgreSQL and removed the directory (other test files may
	# have clusters of their own meanwhile: look at the demo's only)
	dir=$(printf '%s\n' "$output" | sed -n 's/^demo: PostgreSQL at \([^;]*\);.*/\1/p')
	[ -n "$dir" ]
	[ ! -e "$dir" ]
}

@test "the demo stops everything it started when interrupted" {
	start_bg demo sh "$PD_ROOT/scripts/demo"
	log=$BATS_FILE_TMPDIR/demo.out
	wait_for 60 grep -q 'a worker (lease 2s' "$log"
	dir=$(sed -n 's/^demo: PostgreSQL at \([^;]*\);.*/\1/p' "$log")
	[ -d "$dir" ]
	wait_for 30 grep -q '^t+' "$log"
	stop_bg demo TERM 60
	[ "$(bg_status demo)" -eq 143 ]
	[ ! -e "$dir" ] # the cluster was stopped and removed
	# no worker, reaper or handler of it is left
	run pgrep -f "$dir/demo.yaml"
	[ "$status" -eq 1 ]
}
