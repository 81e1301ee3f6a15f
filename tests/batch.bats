#!/usr/bin/env bats
# Adaptive batches (lib/batch): a worker's claim follows its handlers' rate
# and the round trip, between --batch and --batch-max. A fast stream
# handler's claims grow past --batch, a slow handler's stay within it, and
# two workers draining one queue share it about evenly.

# Handler scripts are single-quoted on purpose: they expand their own variables.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	FAST=$BATS_TEST_TMPDIR/fast
	# a stream handler in the shell alone (no process per job): {"id":N} for each line
	cat >"$FAST" <<'EOF_H'
#!/bin/sh
while IFS= read -r job; do
	id=${job#*\"id\":}
	printf '{"id":%s}\n' "${id%%[!0-9]*}"
done
EOF_H
	chmod +x "$FAST"
	SLOW=$BATS_TEST_TMPDIR/slow
	# the same, a fifth of a second a job
	sed 's/^while IFS= read -r job; do$/&\n\tsleep 0.2/' "$FAST" >"$SLOW"
	chmod +x "$SLOW"
}

# enqueue N: N jobs of type t, one pd-enqueue --ndjson.
enqueue() {
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"i\":%d}\n", i }' |
		pd-enqueue --ndjson t >/dev/null
}

# largest_claim LOG: the largest claim= of the worker's "batch written" lines in LOG.
largest_claim() {
	grep 'msg="batch written"' "$1" | sed 's/.* claim=\([0-9]*\) .*/\1/' | sort -n | tail -n 1
}

@test "a fast stream handler's claims grow past --batch, up to --batch-max" {
	enqueue 4000
	run --separate-stderr timeout 120 pd-worker -v --stream-exec "t=$FAST" -j 4 --batch 4 \
		--batch-max 300 --until-idle
	[ "$status" -eq 0 ]
	printf '%s\n' "$stderr" >"$BATS_TEST_TMPDIR/log"
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 4000
	big=$(largest_claim "$BATS_TEST_TMPDIR/log")
	echo "largest claim: $big"
	[ "$big" -gt 4 ]
	[ "$big" -le 300 ]
}

@test "a slow handler's claims stay within --batch" {
	enqueue 12
	run --separate-stderr timeout 120 pd-worker -v --stream-exec "t=$SLOW" -j 4 --batch 4 \
		--until-idle
	[ "$status" -eq 0 ]
	printf '%s\n' "$stderr" >"$BATS_TEST_TMPDIR/log"
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 12
	big=$(largest_claim "$BATS_TEST_TMPDIR/log")
	echo "largest claim: $big"
	[ "$big" -gt 0 ]
	[ "$big" -le 4 ]
}

# largest NAME FIELD: the largest FIELD= of the "batch written" lines in worker NAME's log.
largest() {
	grep 'msg="batch written"' "$BATS_FILE_TMPDIR/$1.log" | sed "s/.* $2=\([0-9]*\).*/\1/" |
		sort -n | tail -n 1
}

@test "two fast stream workers draining one queue: neither starves the other, each batch within its bounds" {
	start_worker a -v --stream-exec "t=$FAST" -j 4 --batch 4 --batch-max 100 --poll 200ms
	start_worker b -v --stream-exec "t=$FAST" -j 4 --batch 4 --batch-max 100 --poll 200ms
	wait_for 20 sql_is "SELECT count(*) FROM pendulum.workers" 2
	enqueue 12000
	wait_for 120 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 12000
	a=$(sql "SELECT count(*) FROM pendulum.job_attempts
	          WHERE outcome = 'succeeded' AND worker = '$(worker_id a)'")
	b=$(sql "SELECT count(*) FROM pendulum.job_attempts
	          WHERE outcome = 'succeeded' AND worker = '$(worker_id b)'")
	echo "worker a: $a jobs, worker b: $b"
	[ "$((a + b))" -eq 12000 ]
	# Neither starves the other. How close to half depends on the CPU each
	# process gets: alone on the machine 47.5-53.5 % over 12 runs (README
	# "Adaptive batches"), but make check runs two files at once under ASan
	# and CI saw 62/38 there; the split is a figure for the bench, the test
	# asks at least 30 % each.
	[ "$a" -ge 3600 ]
	[ "$b" -ge 3600 ]
	# both grew past --batch, neither past --batch-max
	echo "largest claims: a $(largest a claim), b $(largest b claim)"
	[ "$(largest a claim)" -gt 4 ]
	[ "$(largest a claim)" -le 100 ]
	[ "$(largest b claim)" -gt 4 ]
	[ "$(largest b claim)" -le 100 ]
}
