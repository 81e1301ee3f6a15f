#!/usr/bin/env bats
# make demo-flow: scripts/demo-flow runs unattended (no terminal, no stdin) to
# the end, shows the place-order run WAITING, then SLEEPING, then SUCCEEDED
# with every step's output, and stops everything it started. It starts its
# own PostgreSQL.

load helpers

# section TITLE: the text printed after the line starting with TITLE, up to
# the next heading ("demo-flow: ...").
section() {
	printf '%s\n' "$output" | awk -v t="$1" 'index($0, t) == 1 { on = 1; next } on && /^demo-flow: / { exit } on'
}

# first LINE_REGEX: the number of the first line of $output matching it.
first() {
	printf '%s\n' "$output" | grep -n -m 1 -E "$1" | cut -d: -f1
}

# step INDEX NAME KIND OUTPUT: the steps table ($table) has the step done in
# one attempt with that output.
step() {
	local row
	row=$(printf '%s\n' "$table" | tr -s ' ' | awk -v i="$1" '$1 == i')
	[ "$(printf '%s\n' "$row" | cut -d' ' -f1-5)" = "$1 $2 $3 done 1" ] &&
		[ "$(printf '%s\n' "$row" | cut -d' ' -f9-)" = "$4" ] ||
		{ echo "no step '$*' in:"; echo "$table"; return 1; }
}

# demo_dir FILE, demo_worker FILE: the PostgreSQL directory and the worker's
# pid the demo printed.
demo_dir() {
	sed -n 's/^demo-flow: PostgreSQL at \([^;]*\);.*/\1/p' "$1"
}
demo_worker() {
	sed -n 's/^demo-flow: PostgreSQL at [^;]*; worker \([0-9]*\) .*/\1/p' "$1"
}

# left_behind DIR WORKER: print what of the demo still runs: its worker, its
# PostgreSQL (whose command line names DIR), a step of this checkout.
left_behind() {
	local p
	if alive "$2"; then echo "worker $2"; fi
	pgrep -a -f "$1" || true
	for p in $(pgrep -f 'examples/place-order/' || true); do
		if [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$PD_ROOT" ]; then ps -o pid=,args= -p "$p"; fi
	done
}

# the demo, its worker and its PostgreSQL, whatever happened
teardown() {
	kill_demo demo-flow
}

@test "the demo runs place-order through its wait and its sleep to the end, and cleans up" {
	start_bg demo-flow sh "$PD_ROOT/scripts/demo-flow"
	st=0
	wait_bg demo-flow 120 || st=$?
	output=$(bg_out demo-flow)
	stderr=$(bg_log demo-flow)
	[ "$st" -eq 0 ] || { echo "status $st"; echo "$output"; echo "$stderr"; return 1; }
	dir=$(demo_dir "$BATS_FILE_TMPDIR/demo-flow.out")
	worker=$(demo_worker "$BATS_FILE_TMPDIR/demo-flow.out")
	[ -n "$dir" ]
	[ -n "$worker" ]
	[[ "$output" != *$'\033'* ]] # no terminal: no escape codes
	run_id=$(section "demo-flow: pd-enqueue" | head -n 1)
	[[ "$run_id" =~ ^[0-9]+$ ]]

	# the states shown, in order: WAITING (flow show), SLEEPING (flow runs),
	# SUCCEEDED (flow show)
	waiting=$(first '^state +WAITING$')
	sleeping=$(first "^$run_id +place-order +SLEEPING ")
	succeeded=$(first '^state +SUCCEEDED$')
	[ -n "$waiting" ]
	[ -n "$sleeping" ]
	[ -n "$succeeded" ]
	[ "$waiting" -lt "$sleeping" ]
	[ "$sleeping" -lt "$succeeded" ]
	[[ "$(section "demo-flow: run $run_id is WAITING")" == *"waiting_for     approved"* ]]
	[[ "$output" == *"workflow run $run_id: signal 'approved' sent; it woke the run"* ]]

	# at the end every step is done, once, with its output
	table=$(section "demo-flow: run $run_id SUCCEEDED" | sed -n '/^INDEX /,/^$/p')
	[ "$(printf '%s\n' "$table" | grep -cE '^[0-9]+ ')" -eq 6 ]
	step 0 reserve-stock run '{"sku": "tea", "reserved": 3}'
	step 1 approval wait_for '{"by": "grace"}'
	step 2 cool-off sleep -
	step 3 charge-card run '{"charged": 13.5, "approved_by": "grace"}'
	step 4 ship run "{\"sku\": \"tea\", \"tracking\": \"PD-$run_id\"}"
	step 5 notify run "{\"notified\": \"ada@example.com\", \"tracking\": \"PD-$run_id\"}"
	[ "$(section "demo-flow: the run's result")" = "{\"notified\":\"ada@example.com\",\"tracking\":\"PD-$run_id\"}" ]
	[ "$(section "demo-flow: what the notify step wrote")" = "notify: mailing ada@example.com: your order is on its way (PD-$run_id)" ]

	# it stopped its worker and its PostgreSQL and removed the directory
	[ ! -e "$dir" ]
	[ -z "$(left_behind "$dir" "$worker")" ]
}

@test "the demo stops everything it started when interrupted while the run waits" {
	start_bg demo-flow sh "$PD_ROOT/scripts/demo-flow"
	log=$BATS_FILE_TMPDIR/demo-flow.out
	wait_for 60 grep -q '^demo-flow: run [0-9]* is WAITING' "$log" || { cat "$log"; false; }
	dir=$(demo_dir "$log")
	worker=$(demo_worker "$log")
	[ -d "$dir" ]
	alive "$worker"
	stop_bg demo-flow TERM 60
	[ "$(bg_status demo-flow)" -eq 143 ]
	[ ! -e "$dir" ] # the cluster was stopped and removed
	[ -z "$(left_behind "$dir" "$worker")" ]
}
