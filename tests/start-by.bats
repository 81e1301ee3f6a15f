#!/usr/bin/env bats
# Start deadlines (issue 24, part 6; sql/026): a job given --start-by (the
# NDJSON key start_by, pendulum.enqueue's start_by) that is still PENDING
# and was never claimed when its start_by passes is cancelled by the reap
# pass with reason "start deadline passed", its BLOCKED dependents with it,
# and no claim takes it after its start_by, reaped or not. A job claimed in
# time has started: a retry after the deadline runs.

load helpers
pd_db_hooks

setup() {
	reset_jobs
	D=$BATS_TEST_TMPDIR
}

# col ID COLUMN: the job's COLUMN as text.
col() {
	sql "SELECT $2 FROM pendulum.jobs WHERE id = $1"
}

# state_is ID STATE: for wait_for.
state_is() {
	[ "$(col "$1" state)" = "$2" ]
}

@test "--start-by 2s and no worker: CANCELLED with the reason once 2 s have passed, its dependent too; a worker started afterwards does not run it" {
	id=$(pd-enqueue --start-by 2s t '{}')
	dep=$(pd-enqueue --after "$id" t '{}')
	[ "$(col "$id" "start_by - created_at = interval '2 s'")" = t ]
	start_bg reaper pd-reaper --interval 200ms
	wait_for 15 state_is "$id" CANCELLED
	[ "$(col "$id" "finished_at >= start_by")" = t ]
	[ "$(col "$id" dead_reason)" = "start deadline passed" ]
	[ "$(col "$id" last_error)" = "start deadline passed" ]
	[ "$(col "$dep" state)" = CANCELLED ]
	[ "$(col "$dep" dead_reason)" = "dependency $id cancelled" ]
	wait_for 10 grep -q 'cancelled=1 reason="start deadline passed"' "$BATS_FILE_TMPDIR/reaper.log"
	# A worker for it now: it runs the job enqueued after, never the cancelled one.
	start_worker w --lease 2s --poll 100ms --handler "t=touch '$D/ran-'\$PD_JOB_ID"
	later=$(pd-enqueue t '{}')
	wait_for 15 state_is "$later" SUCCEEDED
	[ ! -e "$D/ran-$id" ]
	[ "$(col "$id" state)" = CANCELLED ]
	[ "$(col "$id" attempt)" = 0 ]
}

@test "a job past its start_by is never claimed, even before any reap pass" {
	id=$(pd-enqueue --start-by 1h t '{}')
	sql "UPDATE pendulum.jobs SET start_by = now() - interval '1 s' WHERE id = $id"
	start_worker w --no-reap --lease 2s --poll 100ms --handler "t=touch '$D/ran-'\$PD_JOB_ID"
	# the worker claims from the queue: a job enqueued after it runs
	later=$(pd-enqueue t '{}')
	wait_for 15 state_is "$later" SUCCEEDED
	[ ! -e "$D/ran-$id" ]
	[ "$(col "$id" state)" = PENDING ]
	[ "$(col "$id" attempt)" = 0 ]
	# the claim itself, straight: it takes none
	[ "$(sql "SELECT count(*) FROM pendulum.claim_jobs('{default}', NULL, 10, 'x', '30 s')")" = 0 ]
	# the reap pass then cancels it
	pd-reaper --once >/dev/null
	[ "$(col "$id" state)" = CANCELLED ]
}

@test "a job claimed before its start_by runs, and is retried after it" {
	# the first attempt waits at a gate, fails; the second succeeds
	start_worker w --lease 2s --poll 100ms --handler \
		"t=touch '$D/started'; while [ ! -e '$D/gate' ]; do sleep 0.05; done; [ -e '$D/second' ] || { touch '$D/second'; exit 1; }"
	id=$(pd-enqueue --start-by 30s t '{}')
	wait_for 15 test -e "$D/started"
	# the deadline passes while it runs: it has started, so it is retried
	sql "UPDATE pendulum.jobs SET start_by = now() - interval '1 s' WHERE id = $id"
	touch "$D/gate"
	wait_for 20 state_is "$id" SUCCEEDED
	[ "$(col "$id" attempt)" = 2 ]
	[ "$(col "$id" "start_by IS NOT NULL")" = t ]
}

@test "the NDJSON key start_by, an instant or a duration, on the JSON, staged and direct COPY paths; pd-admin shows it" {
	printf '{"type": "small", "start_by": "10m"}\n{"type": "small", "start_by": "2099-01-01T00:00:00+01:00"}\n{"type": "small", "start_by": 90}\n' |
		pd-enqueue --ndjson >"$D/ids"
	[ "$(sql "SELECT string_agg(CASE WHEN start_by > now() + interval '1 year'
	                                 THEN to_char(start_by AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24')
	                                 ELSE (start_by - created_at)::text END, ',' ORDER BY id)
	            FROM pendulum.jobs WHERE job_type = 'small'")" = "00:10:00,2098-12-31 23,00:01:30" ]
	# 300 lines without idempotency keys: straight into pendulum.jobs
	for i in $(seq 300); do printf '{"type": "direct", "start_by": "7m"}\n'; done |
		pd-enqueue -v --ndjson >/dev/null 2>"$D/direct.log"
	grep -q 'path=direct' "$D/direct.log"
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'direct'
	            AND start_by - created_at = interval '7 min'")" = 300 ]
	# with idempotency keys: through the staging table
	for i in $(seq 300); do printf '{"type": "staged", "idempotency_key": "k%s", "start_by": "3m"}\n' "$i"; done |
		pd-enqueue -v --ndjson >/dev/null 2>"$D/staged.log"
	grep -q 'path=staged' "$D/staged.log"
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'staged'
	            AND start_by - created_at = interval '3 min'")" = 300 ]
	# --start-by as every line's default, a line's own over it
	printf '{"type": "dflt"}\n{"type": "dflt", "start_by": "1h"}\n' | pd-enqueue --start-by 5m --ndjson >/dev/null
	[ "$(sql "SELECT string_agg((start_by - created_at)::text, ',' ORDER BY id)
	            FROM pendulum.jobs WHERE job_type = 'dflt'")" = "00:05:00,01:00:00" ]
	id=$(head -n 1 "$D/ids")
	run pd-admin job show "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *"start_by            $(sql "SELECT to_char(start_by AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') FROM pendulum.jobs WHERE id = $id")"* ]]
	[ "$(pd-admin jobs --type small --json | jq -s -r '[.[] | .start_by != null] | all')" = true ]
}

@test "SQL: pendulum.enqueue, enqueue_ex and start_workflow take start_by; one not after run_at is refused" {
	id=$(sql "SELECT pendulum.enqueue('default', 't', '{}', start_by => now() + interval '1 h')")
	[ "$(col "$id" "start_by - created_at")" = "01:00:00" ]
	id=$(sql "SELECT (pendulum.enqueue_ex('default', 't', '{}', start_by => now() + interval '2 h')).id")
	[ "$(col "$id" "start_by - created_at")" = "02:00:00" ]
	run=$(sql "SELECT pendulum.start_workflow('default', 'w', start_by => now() + interval '3 h')")
	[ "$(sql "SELECT j.start_by - j.created_at FROM pendulum.workflow_runs r
	            JOIN pendulum.jobs j ON j.id = r.job_id WHERE r.id = $run")" = "03:00:00" ]
	# the calls written before the parameter mean what they did
	id=$(sql "SELECT pendulum.enqueue('default', 't', '{}', 'default', 0, NULL, NULL, NULL, 25,
	            NULL, 'at-least-once', NULL, NULL, NULL)")
	[ "$(col "$id" "start_by IS NULL")" = t ]
	n=$(sql "SELECT count(*) FROM pendulum.jobs")
	run sql "SELECT pendulum.enqueue('default', 't', '{}', delay => interval '1 h',
	           start_by => now() + interval '10 min')"
	[ "$status" -ne 0 ]
	[[ "$output" == *"start_by: start deadline "*" is not after the job's run_at "* ]]
	run sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\"}, {\"type\": \"t\", \"start_by\": \"2020-01-01T00:00:00Z\"}]')"
	[ "$status" -ne 0 ]
	[[ "$output" == *"job 2: key 'start_by': start deadline 2020-01-01T00:00:00Z is not after"* ]]
	run sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\", \"start_by\": \"soon\"}]')"
	[ "$status" -ne 0 ]
	[[ "$output" == *"job 1: key 'start_by': invalid start deadline \"soon\""* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" = "$n" ]
}

@test "a BLOCKED job whose start_by passes is cancelled once unblocked, never run" {
	start_worker w --lease 2s --poll 100ms --handler \
		"a=while [ ! -e '$D/gate' ]; do sleep 0.05; done" --handler "b=touch '$D/ran-b'"
	a=$(pd-enqueue a '{}')
	b=$(pd-enqueue --after "$a" --start-by 1s b '{}')
	[ "$(col "$b" state)" = BLOCKED ]
	wait_for 15 sql_is "SELECT now() > start_by FROM pendulum.jobs WHERE id = $b" t
	touch "$D/gate"
	wait_for 15 state_is "$a" SUCCEEDED
	wait_for 15 state_is "$b" CANCELLED
	[ "$(col "$b" dead_reason)" = "start deadline passed" ]
	[ ! -e "$D/ran-b" ]
}
