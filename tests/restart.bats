#!/usr/bin/env bats
# Restarting PostgreSQL under a running worker and reaper: they reconnect
# (both through lib/daemon's link), outcomes that waited in memory are
# written, and every job finishes once.
# This file starts a private cluster (the restart would disturb the other
# files sharing scripts/check's).

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers

setup_file() {
	unset PD_PG_DIR PD_PG_URL
	pd_setup_db
	pd-admin migrate >/dev/null
}

teardown_file() {
	kill_all_bg
	pd_teardown_db
}

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
}

teardown() {
	kill_all_bg
	# never leave commits waiting for the ghost standby of the test below
	psql -X -q -d "$PD_PG_URL" -c "ALTER SYSTEM RESET synchronous_standby_names" \
		-c "SELECT pg_reload_conf()" >/dev/null || true
}

@test "a PostgreSQL restart under a running worker: it reconnects and every job finishes once" {
	gate=$BATS_TEST_TMPDIR/gate # the slow job runs until the gate opens, after the restart
	start_worker w -j 2 --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG" 'sleep 0.2')" \
		--handler "slow=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done; echo '{\"slow\": true}'")"
	start_bg reaper pd-reaper --interval 200ms
	slow=$(pd-enqueue slow '{}')
	awk 'BEGIN { for (i = 1; i <= 20; i++) printf "{\"n\": %d}\n", i }' | pd-enqueue --ndjson t >/dev/null
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $slow" RUNNING
	wait_for 30 sql_is "SELECT count(*) >= 2 FROM pendulum.jobs WHERE state = 'SUCCEEDED'" t
	worker_pid=$(bg_pid w)

	sh "$PD_ROOT/scripts/pg" restart "$PD_PG_DIR"
	touch "$gate"

	# new work after the restart, and a lease for the reaper to give back
	awk 'BEGIN { for (i = 21; i <= 30; i++) printf "{\"n\": %d}\n", i }' | pd-enqueue --ndjson t >/dev/null
	orphan=$(expired_lease)

	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 32
	# the same processes, still running, having noticed and recovered
	alive "$worker_pid"
	alive "$(bg_pid reaper)"
	wait_for 10 grep -q 'database connection lost' "$BATS_FILE_TMPDIR/w.log"
	wait_for 10 grep -q 'msg=reconnected' "$BATS_FILE_TMPDIR/w.log"
	wait_for 10 grep -q 'database connection lost' "$BATS_FILE_TMPDIR/reaper.log"
	wait_for 10 grep -q 'msg=reconnected' "$BATS_FILE_TMPDIR/reaper.log"
	# the slow job, in flight across the restart, was recorded once
	[ "$(sql "SELECT attempt || ' ' || result::text FROM pendulum.jobs WHERE id = $slow")" = '1 {"slow": true}' ]
	[ "$(sql "SELECT string_agg(outcome, ' ') FROM pendulum.job_attempts WHERE job_id = $slow")" = succeeded ]
	# the reaper gave the orphan back after the restart
	[ "$(sql "SELECT string_agg(outcome, ' ' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $orphan")" = \
		"lease_expired succeeded" ]
	# every handler ran exactly once (the orphan never ran before)
	[ "$(lines "$LOG")" -eq 32 ]
	[ "$(cut -d' ' -f1 "$LOG" | sort -u | wc -l)" -eq 32 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome IS NULL")" -eq 0 ]
	[ "$(fenced)" -eq 0 ]
	stop_worker w
	[ "$(bg_status w)" -eq 0 ]
	stop_bg reaper
	[ "$(bg_status reaper)" -eq 0 ]
}

@test "a worker or reaper that cannot reach the database at start exits 69 naming it" {
	run --separate-stderr timeout 30 pd-worker -d "host=/nonexistent-dir port=5999 dbname=x" --handler t=true
	[ "$status" -eq 69 ]
	[[ "$stderr" == "pd-worker: cannot connect to the database"*"/nonexistent-dir"* ]]
	run --separate-stderr timeout 30 pd-reaper -d "host=/nonexistent-dir port=5999 dbname=x" --once
	[ "$status" -eq 69 ]
	[[ "$stderr" == "pd-reaper: cannot connect to the database"*"/nonexistent-dir"* ]]
	[ -z "$output" ]
}

@test "after a reconnect the worker gives back the jobs leased to it under tokens it does not hold (a claim whose reply was lost)" {
	gate=$BATS_TEST_TMPDIR/gate # the slow job runs across the reconnect
	start_worker w -j 2 --lease 2s --heartbeat 500ms --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG")" \
		--handler "slow=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done")"
	slow=$(pd-enqueue slow '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $slow" RUNNING
	wid=$(worker_id w)
	[ -n "$wid" ]
	slow_token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $slow")
	# a claim of w's that committed while its reply was lost: two jobs leased
	# to w for an hour under tokens w never saw, one of them at-most-once
	lost=$(pd-enqueue --delay 1h t '{}')
	amo=$(pd-enqueue --delay 1h --at-most-once t '{}')
	sql "UPDATE pendulum.jobs SET state = 'LEASED', attempt = 1, run_at = now(),
	       lease_token = nextval('pendulum.lease_token_seq'), lease_owner = '$wid',
	       lease_expires_at = now() + interval '1 hour' WHERE id IN ($lost, $amo)" >/dev/null
	lost_token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $lost")
	before=$(fenced)

	# the connection drops; w reconnects with the same id
	[ "$(sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'pd-worker'")" = 1 ]
	wait_for 30 grep -q 'msg=reconnected' "$BATS_FILE_TMPDIR/w.log"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $lost" SUCCEEDED
	[ "$(worker_id w)" = "$wid" ]
	# given back at once, attempt refunded, recorded as claim_lost; then run by w
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome || ':' || (lease_token = $lost_token), ' ' ORDER BY lease_token)
	          FROM pendulum.job_attempts WHERE job_id = $lost")" = "1:claim_lost:true 1:succeeded:false" ]
	[ "$(sql "SELECT worker FROM pendulum.job_attempts WHERE job_id = $lost AND outcome = 'claim_lost'")" = "$wid" ]
	# the at-most-once job is dead-lettered, as its release would be, and never ran
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $amo")" = "DEAD_LETTERED 1" ]
	[[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $amo")" == *"at-most-once"* ]]
	[ "$(sql "SELECT string_agg(outcome, ' ') FROM pendulum.job_attempts WHERE job_id = $amo")" = claim_lost ]
	grep -q "given back.*jobs=2 dead=1 ids=$lost,$amo" "$BATS_FILE_TMPDIR/w.log"
	# the lease w does hold is kept: the slow job runs on and finishes once
	[ "$(sql "SELECT state || ' ' || lease_token FROM pendulum.jobs WHERE id = $slow")" = "RUNNING $slow_token" ]
	touch "$gate"
	wait_for 30 sql_is "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $slow" "SUCCEEDED 1"
	[ "$(lines "$LOG")" -eq 2 ]
	[ "$(grep -c "^$amo " "$LOG")" -eq 0 ]
	[ "$(fenced)" -eq "$before" ]
	stop_worker w
	[ "$(bg_status w)" -eq 0 ]
}

@test "an outcome whose commit the lost connection hid is written once, not counted fenced, when sent again" {
	# The handler makes every commit wait for a synchronous standby that does
	# not exist, then exits: its outcome commits here but no reply comes (as
	# when a primary fails before its standby acknowledges). The restart
	# cuts that connection; the worker sends the outcome again on the new one.
	h=$BATS_TEST_TMPDIR/h.sh
	cat >"$h" <<SH
psql -X -q -d "$PD_PG_URL" -c "ALTER SYSTEM SET synchronous_standby_names = 'ghost'" -c "SELECT pg_reload_conf()"
until [ "\$(psql -X -At -d "$PD_PG_URL" -c 'SHOW synchronous_standby_names')" = ghost ]; do sleep 0.02; done
SH
	start_worker w --lease 2s --heartbeat 1s --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG" "sh '$h'")"
	id=$(pd-enqueue t '{}')
	wait_for 30 sql_is "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'
	                    AND application_name = 'pd-worker'" 1
	sql "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
	sh "$PD_ROOT/scripts/pg" restart "$PD_PG_DIR"
	wait_for 30 grep -q 'msg=reconnected' "$BATS_FILE_TMPDIR/w.log"
	# sent again: found written before (or, wrongly, fenced)
	wait_for 30 grep -Eq "(written before the connection was lost|fenced: ).*job=$id" "$BATS_FILE_TMPDIR/w.log"
	[ "$(fenced)" -eq 0 ]
	grep -q "written before the connection was lost.*job=$id" "$BATS_FILE_TMPDIR/w.log"
	[ "$(job_state "$id")" = SUCCEEDED ]
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome, ' ') FROM pendulum.job_attempts WHERE job_id = $id")" = 1:succeeded ]
	[ "$(lines "$LOG")" -eq 1 ]
	stop_worker w
	[ "$(bg_status w)" -eq 0 ]
}
