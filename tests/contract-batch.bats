#!/usr/bin/env bats
# --batch's effect (pd-worker(1)): one claim statement takes up to --batch
# jobs, never more than the free slots, until something is measured; without
# the flag the batch is the concurrency; --batch-max equal to --batch fixes
# it however fast the handlers are. Read from the worker's "batch written"
# lines (claimed=: the rows its claim statement returned) and the jobs table.

load helpers
pd_db_hooks

setup() {
	reset_jobs
	GATE=$BATS_TEST_TMPDIR/gate
	# a handler process that runs until the test opens the gate
	HELD="while [ ! -e '$GATE' ]; do sleep 0.05; done"
}

# claims NAME: the claimed= of worker NAME's claims that took a job, one a line, in order.
claims() {
	grep 'msg="batch written"' "$BATS_FILE_TMPDIR/$1.log" | sed -n 's/.* claimed=\([0-9]*\) .*/\1/p' |
		grep -v '^0$'
}

# held N: N jobs are held (LEASED or RUNNING).
held() {
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE state IN ('LEASED', 'RUNNING')" "$1"
}

# enqueue N: N jobs of type t in one pd-enqueue --ndjson.
enqueue() {
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"i\":%d}\n", i }' |
		pd-enqueue --ndjson t >/dev/null
}

@test "-j 8 --batch 3: the first claim takes 3 jobs at once, none more than 3, until the 8 slots are full" {
	enqueue 20
	start_worker w -v -j 8 --batch 3 --poll 200ms --lease 2s --heartbeat 500ms --handler "t=$HELD"
	wait_for 30 held 8
	wait_for 10 test "$(claims w | awk '{ s += $1 } END { print s + 0 }')" = 8
	run claims w
	[ "${lines[0]}" = 3 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -n | tail -n 1)" = 3 ]
	# 8 in claims of at most 3: three claims or more
	[ "${#lines[@]}" -ge 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING'")" = 12 ]
	touch "$GATE"
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 20
}

@test "-j 8 without --batch: the first claim takes the concurrency, 8 jobs at once" {
	enqueue 20
	start_worker w -v -j 8 --poll 200ms --lease 2s --heartbeat 500ms --handler "t=$HELD"
	wait_for 30 held 8
	wait_for 10 test "$(claims w | awk '{ s += $1 } END { print s + 0 }')" = 8
	run claims w
	[ "${lines[0]}" = 8 ]
	[ "${#lines[@]}" -eq 1 ]
	touch "$GATE"
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 20
}

@test "--batch 2 --batch-max 2: a fast stream handler's claims never take more than 2" {
	local fast=$BATS_TEST_TMPDIR/fast
	# a stream handler in the shell alone: {"id":N} for each line
	cat >"$fast" <<'EOF_H'
#!/bin/sh
while IFS= read -r job; do
	id=${job#*\"id\":}
	printf '{"id":%s}\n' "${id%%[!0-9]*}"
done
EOF_H
	chmod +x "$fast"
	enqueue 400
	run --separate-stderr timeout 120 pd-worker -v --stream-exec "t=$fast" -j 4 --batch 2 \
		--batch-max 2 --until-idle
	[ "$status" -eq 0 ]
	printf '%s\n' "$stderr" >"$BATS_FILE_TMPDIR/s.log"
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 400
	run claims s
	[ "$(printf '%s\n' "${lines[@]}" | sort -n | tail -n 1)" = 2 ]
	[ "${#lines[@]}" -ge 200 ]
}
