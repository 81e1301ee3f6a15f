#!/usr/bin/env bats
# DESIGN's state table: LEASED -> RUNNING (the start) is fenced. A start sent
# with a token that no longer holds the lease changes nothing. (A job claimed
# for a free slot is claimed RUNNING; the separate start, lib/jobs.c's
# start_sql, is for jobs claimed ahead, LEASED until a slot frees.)
#
# The state is made in SQL and the worker's own start round trip
# (pd_jobs_sync_send with a start item) is driven by pd-test-tool start, so
# nothing waits for a worker to happen to claim ahead.

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

# start ID TOKEN: the worker's start record for job ID, sent with TOKEN
start() {
	"$PD_TEST_TOOL" start "$@"
}

@test "jobs claimed ahead (LEASED): a start with a stale lease token leaves each LEASED, started_at unset" {
	mapfile -t ids < <(make_jobs 3 LEASED)
	[ "${#ids[@]}" -eq 3 ]
	list=$(IFS=,; echo "${ids[*]}")
	# the tokens their worker was given, then each leased again to another holder
	mapfile -t stale < <(sql "SELECT lease_token FROM pendulum.jobs WHERE id IN ($list) ORDER BY id")
	sql "UPDATE pendulum.jobs SET lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'other'
	     WHERE id IN ($list)" >/dev/null
	before=$(sql "SELECT json_agg(j ORDER BY id)::text FROM pendulum.jobs j WHERE id IN ($list)")
	for i in 0 1 2; do
		run --separate-stderr start "${ids[$i]}" "${stale[$i]}"
		[ "$status" -eq 0 ]
	done
	# every row as it was: LEASED to the other holder, never started
	[ "$(sql "SELECT json_agg(j ORDER BY id)::text FROM pendulum.jobs j WHERE id IN ($list)")" = "$before" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE id IN ($list) AND state = 'LEASED' AND started_at IS NULL")" -eq 3 ]
	# the same start with the token that holds the lease does start it
	current=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = ${ids[0]}")
	run --separate-stderr start "${ids[0]}" "$current"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || (started_at IS NOT NULL) FROM pendulum.jobs WHERE id = ${ids[0]}")" = "RUNNING true" ]
}
