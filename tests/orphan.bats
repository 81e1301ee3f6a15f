#!/usr/bin/env bats
# Orphans: a handler never outlives its worker by more than the lease. The
# handler's own process dies with the worker (PR_SET_PDEATHSIG); what it left
# behind (its children) is killed by the reap pass on the same host that gives
# the job back, before it gives it back. A live worker's handler is its own
# business, and so is anything on another host or of another installation.

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

bats_require_minimum_version 1.5.0

setup() {
	reset_jobs
	PIDS=$BATS_TEST_TMPDIR/pids
}

teardown() {
	kill_all_bg
	if [ -n "${DB2:-}" ]; then
		psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $DB2 WITH (FORCE)" || true
	fi
}

# pid_handler FILE: a handler command line that appends the pid of its shell,
# then of a background sleep 30 (its child, which PR_SET_PDEATHSIG does not
# cover), to FILE, and waits.
pid_handler() {
	printf 'echo $$ >>'\''%s'\''; sleep 30 & echo $! >>'\''%s'\''; wait' "$1" "$1"
}

# poke_handler FILE: like pid_handler, but both processes answer a poke: once
# FILE.poke exists, each appends its pid to FILE.ack (the child then turns
# into a sleep 30, the same pid). A process that answers after a reaper
# exited was not killed by it: a signal sent is acted on before the process
# runs again, so a plain "alive" right after the reaper could miss a kill
# still in flight.
poke_handler() {
	printf 'sh -c '\''while [ ! -e "$0.poke" ]; do sleep 0.05; done; echo $$ >>"$0.ack"; exec sleep 30'\'' '\''%s'\'' &
echo $$ >>'\''%s'\''; echo $! >>'\''%s'\''
while [ ! -e '\''%s.poke'\'' ]; do sleep 0.05; done; echo $$ >>'\''%s.ack'\''; wait' "$1" "$1" "$1" "$1" "$1"
}

# answered PID...: poke $PIDS's processes, and wait until each PID answered.
answered() {
	local pid
	touch "$PIDS.poke"
	for pid in "$@"; do
		wait_for 10 grep -qx "$pid" "$PIDS.ack"
	done
}

# dead PID: the process is gone (or a zombie).
dead() {
	! alive "$1"
}

# start_victim NAME ID [HANDLER]: a worker with a short lease, no reaping of
# its own, running HANDLER (default pid_handler) into $PIDS; waits until job
# ID runs and both pids are recorded, then sets SH_PID and SLEEP_PID.
start_victim() {
	start_worker "$1" -j 1 --lease 2s --heartbeat 500ms --poll 200ms --no-reap \
		--handler "t=$("${3:-pid_handler}" "$PIDS")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $2" RUNNING
	wait_for 10 lines_at_least "$PIDS" 2
	SH_PID=$(sed -n 1p "$PIDS")
	SLEEP_PID=$(sed -n 2p "$PIDS")
}

# kill_worker NAME: kill -9 it and wait until it has been reaped.
kill_worker() {
	kill -KILL "$(bg_pid "$1")"
	wait_for 10 test -s "$BATS_FILE_TMPDIR/$1.status"
}

lease_expired() {
	sql_is "SELECT lease_expires_at < now() FROM pendulum.jobs WHERE id = $1" t
}

@test "kill -9 of a worker running sh -c 'sleep 30': nothing of the handler is left once pd-reaper gave the job back" {
	id=$(pd-enqueue t '{}')
	start_victim a "$id"
	a_id=$(worker_id a)
	kill_worker a
	# PR_SET_PDEATHSIG: the handler's shell dies with the worker, its sleep does not
	wait_for 30 dead "$SH_PID"
	alive "$SLEEP_PID"
	wait_for 30 lease_expired "$id"
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 1, dead-lettered 0" ]
	wait_for 30 dead "$SLEEP_PID"
	[[ "$stderr" == *'msg="killed a leftover handler process"'*" job=$id "*" pid=$SLEEP_PID "* ]]
	[ "$(job_state "$id")" = PENDING ]
	[ "$(sql "SELECT attempt || ':' || outcome || ':' || worker || ':' || (finished_at IS NOT NULL)
	          FROM pendulum.job_attempts WHERE job_id = $id")" = "1:lease_expired:$a_id:true" ]
	[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $id")" = "lease expired (worker $a_id)" ]
}

@test "a worker's own reap pass kills the leftovers too, and the job runs again" {
	id=$(pd-enqueue t '{}')
	start_victim a "$id"
	a_id=$(worker_id a)
	kill_worker a
	start_worker b -j 1 --lease 2s --heartbeat 500ms --poll 200ms \
		--handler 't=echo "{\"by\": \"b\"}"'
	wait_for 60 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	wait_for 30 dead "$SH_PID"
	wait_for 30 dead "$SLEEP_PID"
	b_id=$(worker_id b)
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome || ':' || worker, ' ' ORDER BY attempt)
	          FROM pendulum.job_attempts WHERE job_id = $id")" = "1:lease_expired:$a_id 2:succeeded:$b_id" ]
	# logged after the kill: waited for, as the process may be gone first
	wait_for 10 grep -q "msg=\"killed a leftover handler process\".* pid=$SLEEP_PID " "$BATS_FILE_TMPDIR/b.log"
}

@test "a live (stopped) worker's handler is not killed by the reap pass: the worker stops it itself" {
	id=$(pd-enqueue t '{}')
	start_victim a "$id" poke_handler
	a_id=$(worker_id a)
	kill -STOP "$(bg_pid a)"
	wait_for 30 lease_expired "$id"
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 1, dead-lettered 0" ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $id")" = lease_expired ]
	# the reaper has exited: both processes still run code afterwards
	answered "$SH_PID" "$SLEEP_PID"
	alive "$SH_PID"
	alive "$SLEEP_PID"
	[[ "$stderr" != *leftover* ]]
	# Resumed, the worker finds its lease lost and stops its handler's group.
	kill -CONT "$(bg_pid a)"
	wait_for 10 dead "$SH_PID"
	wait_for 10 dead "$SLEEP_PID"
	wait_for 10 grep -q 'lease lost' "$BATS_FILE_TMPDIR/a.log"
}

@test "only the reaped attempt's processes are killed: not another token's, not another installation's" {
	id=$(pd-enqueue t '{}')
	start_victim a "$id"
	token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	# Another installation on this host (a second database) whose job has the
	# same id and lease token, run by a live worker.
	DB2=${PD_DB_NAME}_2
	psql -X -q -d "$PD_PG_URL" -c "CREATE DATABASE $DB2"
	url2=$(printf '%s\n' "$PD_PG_URL" | sed "s/dbname=[^ ]*/dbname=$DB2/")
	PD_DATABASE_URL=$url2 pd-admin migrate >/dev/null
	psql -X -q -d "$url2" -c "INSERT INTO pendulum.jobs (id, job_type) VALUES ($id, 't')" \
		-c "SELECT setval('pendulum.lease_token_seq', $token, false)" >/dev/null
	pids2=$BATS_TEST_TMPDIR/pids2
	PD_DATABASE_URL=$url2 start_worker c -j 1 --lease 30s --heartbeat 1s --poll 200ms --no-reap \
		--handler "t=$(pid_handler "$pids2")"
	wait_for 10 lines_at_least "$pids2" 2
	[ "$(psql -X -At -d "$url2" -c "SELECT id || ' ' || lease_token FROM pendulum.jobs")" = "$id $token" ]
	# A process with the job's id and another token.
	start_bg other env PD_JOB_ID="$id" PD_LEASE_TOKEN="$((token + 1))" sleep 30
	other=$(bg_pid other)
	kill_worker a
	wait_for 30 lease_expired "$id"
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 1, dead-lettered 0" ]
	wait_for 30 dead "$SLEEP_PID"
	alive "$other"
	alive "$(sed -n 1p "$pids2")"
	alive "$(sed -n 2p "$pids2")"
}

@test "leftovers on another host are not this reaper's to kill" {
	id=$(pd-enqueue t '{}')
	start_victim a "$id" poke_handler
	a_id=$(worker_id a)
	kill_worker a
	wait_for 30 dead "$SH_PID"
	sql "UPDATE pendulum.workers SET host = 'elsewhere' WHERE id = '$a_id'"
	wait_for 30 lease_expired "$id"
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 1, dead-lettered 0" ]
	[ "$(job_state "$id")" = PENDING ]
	# the reaper has exited: the leftover still runs code afterwards
	answered "$SLEEP_PID"
	alive "$SLEEP_PID"
	[[ "$stderr" != *leftover* ]]
}

@test "a reaper that may not read a leftover's environment skips it and still gives the job back" {
	[ "$(id -u)" -eq 0 ] || skip "needs root, to run the reaper as another user"
	id postgres >/dev/null 2>&1 || skip "no user postgres"
	id=$(pd-enqueue t '{}')
	start_victim a "$id" poke_handler
	kill_worker a
	wait_for 30 dead "$SH_PID"
	wait_for 30 lease_expired "$id"
	run --separate-stderr runuser -u postgres -- env PATH="$PATH" PD_DATABASE_URL="$PD_DATABASE_URL" pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 1, dead-lettered 0" ]
	[ "$(job_state "$id")" = PENDING ]
	# the reaper has exited: the leftover still runs code afterwards
	answered "$SLEEP_PID"
	alive "$SLEEP_PID"
}
