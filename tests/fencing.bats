#!/usr/bin/env bats
# Fencing: a worker that lost its lease writes nothing; heartbeats keep a
# long job's lease; a drained worker gives its job back with the attempt
# refunded.

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
}

@test "a worker stopped past its lease is fenced off when it resumes: the new owner's result stands" {
	h1=$BATS_TEST_TMPDIR/w1-handler.pid
	gate=$BATS_TEST_TMPDIR/gate
	id=$(pd-enqueue t '{}')
	# w1's handler runs until the gate opens (a long handler, whatever the load)
	start_worker w1 -j 1 --lease 1s --heartbeat 300ms --poll 200ms --no-reap \
		--handler "t=$(counting_handler "$LOG" "echo \$\$ >'$h1'; while [ ! -e '$gate' ]; do sleep 0.05; done; echo '{\"by\": \"w1\"}'")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	kill -STOP "$(bg_pid w1)"
	w1_id=$(worker_id w1)
	token1=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	before=$(fenced)

	# the lease runs out (database clock); the reaper gives the job back
	wait_for 30 sql_is "SELECT lease_expires_at < now() FROM pendulum.jobs WHERE id = $id" t || {
		sql "SELECT now(), row_to_json(j) FROM pendulum.jobs j"
		ps -o pid,stat,args -p "$(bg_pid w1)"
		cat "$BATS_FILE_TMPDIR/w1.log"
		return 1
	}
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 1, dead-lettered 0" ]
	[ "$(sql "SELECT state || '/' || attempt || '/' || (lease_owner IS NULL) FROM pendulum.jobs WHERE id = $id")" = PENDING/1/true ]
	[[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $id")" == "lease expired"*"$w1_id"* ]]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE lease_token = $token1")" = lease_expired ]

	# a second worker takes it and finishes it
	start_worker w2 -j 1 --lease 1s --heartbeat 300ms --poll 200ms \
		--handler "t=$(counting_handler "$LOG" "echo '{\"by\": \"w2\"}'")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	stop_worker w2
	finished=$(sql "SELECT finished_at FROM pendulum.jobs WHERE id = $id")

	# w1's handler finishes meanwhile (a zombie: its parent is stopped);
	# resumed, w1 tries to record its outcome
	touch "$gate"
	wait_for 30 test -s "$h1"
	wait_for 30 eval "! alive $(cat "$h1")"
	kill -CONT "$(bg_pid w1)"
	# it notices, one way or the other
	wait_for 30 grep -qE 'fenced|lease lost' "$BATS_FILE_TMPDIR/w1.log"
	alive "$(bg_pid w1)"
	# it tried to write its outcome, and the write was fenced off and counted
	wait_for 30 sql_is "SELECT value FROM pendulum.counters WHERE name = 'writes_fenced'" $((before + 1)) || {
		grep -E 'fenced|lease lost' "$BATS_FILE_TMPDIR/w1.log"
		return 1
	}
	wait_for 10 grep -q 'fenced' "$BATS_FILE_TMPDIR/w1.log"

	# nothing of w1's is written: the job, its result and its attempts are w2's
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || result::text FROM pendulum.jobs WHERE id = $id")" = \
		'SUCCEEDED 2 {"by": "w2"}' ]
	[ "$(sql "SELECT finished_at FROM pendulum.jobs WHERE id = $id")" = "$finished" ]
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome || ':' || (worker = '$w1_id'), ' ' ORDER BY attempt)
	          FROM pendulum.job_attempts WHERE job_id = $id")" = "1:lease_expired:true 2:succeeded:false" ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'lease_expired'")" -eq 1 ]
	# the handler ran twice, with different tokens, the second larger
	[ "$(lines "$LOG")" -eq 2 ]
	[ "$(sed -n 1p "$LOG")" = "$id $token1" ]
	[ "$(sed -n 2p "$LOG" | cut -d' ' -f2)" -gt "$token1" ]
	# and w1 goes on serving: it still works after being fenced
	id2=$(pd-enqueue t '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id2" SUCCEEDED
	[ "$(sql "SELECT result->>'by' FROM pendulum.jobs WHERE id = $id2")" = w1 ]
	[ "$(fenced)" -eq $((before + 1)) ]
}

@test "heartbeats keep a 6 s lease alive past its first expiry; the handler runs and finishes once" {
	gate=$BATS_TEST_TMPDIR/gate
	id=$(pd-enqueue t '{}')
	# a reaper running all along would take the job back if a heartbeat were missed
	start_bg reaper pd-reaper --interval 200ms
	# a heartbeat every 1 s on a 6 s lease: five may be late before the lease runs out
	start_worker w -j 1 --lease 6s --heartbeat 1s --poll 200ms \
		--handler "t=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done; echo '{\"held\": true}'")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	first_expiry=$(sql "SELECT lease_expires_at FROM pendulum.jobs WHERE id = $id")
	token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	# the handler runs until the lease it started with is 2 s past its end
	wait_for 60 sql_is "SELECT now() > '$first_expiry'::timestamptz + interval '2 s'" t
	# still the same lease, renewed (it ends after now): not reaped, not claimed again
	[ "$(sql "SELECT state || ' ' || lease_token || ' ' || (lease_expires_at > now())
	          FROM pendulum.jobs WHERE id = $id")" = "RUNNING $token true" ]
	touch "$gate"
	wait_for 60 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(lines "$LOG")" -eq 1 ]
	[ "$(sql "SELECT count(*) || ' ' || string_agg(outcome, ',') FROM pendulum.job_attempts WHERE job_id = $id")" = "1 succeeded" ]
	[ "$(sql "SELECT attempt || ' ' || (result->>'held') FROM pendulum.jobs WHERE id = $id")" = "1 true" ]
	[ "$(fenced)" -eq 0 ]
	run grep 'expired leases given back' "$BATS_FILE_TMPDIR/reaper.log"
	[ "$status" -eq 1 ]
	stop_bg reaper
	[ "$(bg_status reaper)" -eq 0 ]
}

@test "SIGTERM with a short drain timeout: the running job goes back to PENDING, attempt refunded" {
	pidfile=$BATS_TEST_TMPDIR/handler.pid
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --poll 200ms --drain-timeout 500ms \
		--handler "t=$(counting_handler "$LOG" "echo \$\$ >'$pidfile'; exec sleep 300")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	wait_for 30 test -s "$pidfile"
	handler=$(cat "$pidfile")
	token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	stop_worker w TERM 20
	[ "$(bg_status w)" -eq 0 ]
	grep -q 'draining' "$BATS_FILE_TMPDIR/w.log"
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || (lease_owner IS NULL) || ' ' || (run_at <= now())
	          FROM pendulum.jobs WHERE id = $id")" = "PENDING 0 true true" ]
	[ "$(sql "SELECT outcome || ' ' || (finished_at IS NOT NULL) FROM pendulum.job_attempts
	          WHERE job_id = $id AND lease_token = $token")" = "released true" ]
	[ "$(fenced)" -eq 0 ]
	# the handler was stopped, not left behind
	wait_for 30 eval "! alive $handler"
	# the job is whole again: the next worker runs it as attempt 1 of 5
	start_worker w2 -j 1 --poll 200ms --handler "t=$(counting_handler "$LOG" 'echo $PD_ATTEMPT')"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(sql "SELECT attempt || ' ' || result::text FROM pendulum.jobs WHERE id = $id")" = "1 1" ]
}

@test "SIGTERM with a short drain timeout: an at-most-once job is dead-lettered, not run again" {
	id=$(pd-enqueue --at-most-once t '{}')
	start_worker w -j 1 --poll 200ms --drain-timeout 300ms \
		--handler "t=$(counting_handler "$LOG" 'exec sleep 30')"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	stop_worker w TERM 20
	[ "$(bg_status w)" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $id")" = "DEAD_LETTERED 1" ]
	[[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $id")" == *at-most-once* ]]
	# a later worker leaves it alone
	pd-worker --until-idle --poll 200ms --handler "t=$(counting_handler "$LOG")" 2>/dev/null
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "SIGTERM with time to spare: the running job finishes, nothing new is claimed" {
	gate=$BATS_TEST_TMPDIR/gate
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --poll 200ms --drain-timeout 60s \
		--handler "t=$(counting_handler "$LOG" "while [ ! -e '$gate' ]; do sleep 0.05; done; echo '{\"ok\": true}'")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	next=$(pd-enqueue t '{}')
	kill -TERM "$(bg_pid w)"
	wait_for 30 grep -q 'draining' "$BATS_FILE_TMPDIR/w.log"
	touch "$gate" # the handler finishes well within the drain timeout
	wait_for 30 test -s "$BATS_FILE_TMPDIR/w.status"
	[ "$(bg_status w)" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || result::text FROM pendulum.jobs WHERE id = $id")" = 'SUCCEEDED 1 {"ok": true}' ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $next")" = "PENDING 0" ]
	[ "$(lines "$LOG")" -eq 1 ]
}

@test "a lease taken over while the handler runs: the heartbeat stops the handler, nothing is written" {
	pidfile=$BATS_TEST_TMPDIR/handler.pid
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --lease 2s --heartbeat 200ms --poll 200ms \
		--handler "t=$(counting_handler "$LOG" "echo \$\$ >'$pidfile'; exec sleep 300")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	wait_for 30 test -s "$pidfile"
	token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	# someone else holds it now (as after a reap and a new claim)
	sql "UPDATE pendulum.jobs SET lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'thief',
	     lease_expires_at = now() + interval '1 h' WHERE id = $id" >/dev/null
	after=$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")
	wait_for 30 grep -q 'lease lost' "$BATS_FILE_TMPDIR/w.log"
	wait_for 30 eval "! alive $(cat "$pidfile")"
	# the row is the thief's, untouched; the worker's attempt is recorded as lease_lost
	wait_for 30 grep -q 'nothing written' "$BATS_FILE_TMPDIR/w.log"
	[ "$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")" = "$after" ]
	wait_for 30 sql_is "SELECT outcome FROM pendulum.job_attempts WHERE lease_token = $token" lease_lost
	# and the worker carries on
	alive "$(bg_pid w)"
	rm -f "$pidfile"
	id2=$(pd-enqueue t '{}')
	wait_for 30 test -s "$pidfile"
	[ "$(sql "SELECT lease_owner FROM pendulum.jobs WHERE id = $id2")" = "$(worker_id w)" ]
}

@test "a heartbeat not shorter than the lease is a usage error" {
	run --separate-stderr pd-worker --lease 1s --heartbeat 1s --handler t=true
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"heartbeat"*"lease"* ]]
	run --separate-stderr pd-worker --lease 1s --heartbeat 2s --handler t=true
	[ "$status" -eq 64 ]
}

@test "a second SIGTERM during the drain stops the handlers at once and releases their jobs" {
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --poll 200ms --drain-timeout 600s --handler "t=$(counting_handler "$LOG" 'exec sleep 300')"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	kill -TERM "$(bg_pid w)"
	wait_for 30 grep -q 'draining' "$BATS_FILE_TMPDIR/w.log"
	# the first signal alone waits for the handler (up to 600 s)
	[ "$(job_state "$id")" = RUNNING ]
	# The handler would run 300 s and the drain wait 600 s: an exit within
	# 60 s is the second signal's. How fast is make bench's "second SIGTERM".
	stop_worker w TERM 60
	[ "$(bg_status w)" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $id")" = "PENDING 0" ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $id")" = released ]
}
