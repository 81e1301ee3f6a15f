#!/usr/bin/env bats
# One reaper for the fleet (lib/reap.h): the reap pass is the elected role
# 'reaper' (lib/elect, pendulum.leaders). Every worker that reaps and every
# pd-reaper stands; the holder runs the pass, the others stand by and take
# over within about a lease when it dies or freezes, at once when it stops
# cleanly. Orphan killing stays per host: a standby kills what a dead
# worker of its own host left, before the holder (another host) gives the
# job back.
#
# The passes are counted from PostgreSQL: each calls
# pendulum.cancel_late_starts once (sql/026), counted in
# pg_stat_user_functions with track_functions = 'all' on this database.

# Handler command lines are single-quoted on purpose; run sets $output.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

bats_require_minimum_version 1.5.0

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	psql -X -q -d "$PD_PG_URL" -c "ALTER DATABASE $PD_DB_NAME SET track_functions = 'all'"
}

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.leaders"
	PIDS=$BATS_TEST_TMPDIR/pids
}

# holder: the reaper role's holder (a daemon id), while held.
holder() {
	sql "SELECT holder FROM pendulum.leaders WHERE role = 'reaper' AND expires_at > now()"
}

# holds NAME: the background daemon NAME holds the reaper role.
holds() {
	[ "$(sql "SELECT split_part(holder, ':', 2) FROM pendulum.leaders
	          WHERE role = 'reaper' AND expires_at > now()")" = "$(bg_pid "$1")" ]
}

logged() {
	grep -q "$2" "$BATS_FILE_TMPDIR/$1.log"
}

# calls FUNCTION: its calls so far in this database, as the backends have
# reported them (each reports at most once a second, when idle).
calls() {
	sql "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
	     WHERE schemaname = 'pendulum' AND funcname = '$1'"
}

# passes_in SECONDS: the reap passes (cancel_late_starts calls) the fleet
# ran in a window of SECONDS, read 2 s after each end so that the backends'
# reports have caught up with both ends alike.
passes_in() {
	local a b
	sleep 2
	a=$(calls cancel_late_starts)
	sleep "$1" # the measured window
	sleep 2
	b=$(calls cancel_late_starts)
	echo $((b - a))
}

# idle_worker NAME [ARGS...]: a worker with a handler and nothing to do, a 1 s lease.
idle_worker() {
	local name=$1
	shift
	start_worker "$name" -j 1 --lease 1s --heartbeat 300ms --poll 1s --handler 'idle=true' "$@"
}

# pid_handler FILE: a handler command line that appends the pid of its shell,
# then of a background sleep 30 (its child, which PR_SET_PDEATHSIG does not
# cover), to FILE, and waits.
pid_handler() {
	printf 'echo $$ >>'\''%s'\''; sleep 30 & echo $! >>'\''%s'\''; wait' "$1" "$1"
}

@test "10 idle workers run the reap passes of one: counted in PostgreSQL against one worker" {
	idle_worker w1
	wait_for 10 holds w1
	one=$(passes_in 6)
	for i in 2 3 4 5 6 7 8 9 10; do
		idle_worker "w$i"
	done
	for i in 2 3 4 5 6 7 8 9 10; do
		wait_for 10 logged "w$i" 'msg="reaper on standby'
	done
	ten=$(passes_in 6)
	echo "passes in 6 s (1 s lease): one worker $one, ten workers $ten" >&3
	[ "$one" -ge 3 ]
	# each worker reaping on its own: about ten times as many
	[ "$ten" -le $((one * 3 / 2 + 2)) ]
	holds w1
	[ "$(sql "SELECT count(*) FROM pendulum.leaders")" -eq 1 ]
}

@test "kill -9 of the holder: a standby takes the role within about a lease and gives the expired lease back" {
	id=$(pd-enqueue t '{}')
	start_worker h -j 1 --lease 2s --heartbeat 500ms --poll 200ms --handler 't=sleep 30'
	wait_for 10 holds h
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	start_worker s1 -j 1 --lease 2s --heartbeat 500ms --poll 200ms --handler 'u=true'
	start_bg s2 pd-reaper --interval 500ms
	wait_for 10 logged s1 'msg="reaper on standby'
	wait_for 10 logged s2 'msg="reaper on standby'
	kill -KILL "$(bg_pid h)"
	# the job's lease as h left it (a heartbeat in flight at the kill lands within the lease)
	expired=$(sql "SELECT lease_expires_at FROM pendulum.jobs WHERE id = $id")
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" PENDING
	# when it was given back, on the database's clock
	took=$(sql "SELECT (extract(epoch FROM finished_at - '$expired'::timestamptz) * 1000)::int
	            FROM pendulum.job_attempts WHERE job_id = $id")
	echo "given back ${took} ms after its lease ended" >&3
	# the role's lease (2 s or 1.5 s) runs out with the job's, then a
	# standby's turn (a third of it) and its reap pass: 10 s is slack for a
	# loaded machine
	[ "$took" -lt 10000 ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $id")" = lease_expired ]
	new=$(holder)
	[[ "$new" == *":$(bg_pid s1):"* || "$new" == *":$(bg_pid s2):"* ]]
	[ "$(sql "SELECT token FROM pendulum.leaders WHERE role = 'reaper'")" -eq 2 ]
}

@test "SIGSTOP of the holder: a standby takes over and reaps; woken, the old holder stands by" {
	id=$(pd-enqueue t '{}')
	start_worker h -j 1 --lease 2s --heartbeat 500ms --poll 200ms --handler 't=sleep 30'
	wait_for 10 holds h
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	# s's role lease (6 s) outlasts h's passes (every 2 s at most)
	start_worker s -j 1 --lease 6s --heartbeat 500ms --poll 200ms --handler 'u=true'
	wait_for 10 logged s 'msg="reaper on standby'
	kill -STOP "$(bg_pid h)"
	wait_for 30 holds s
	wait_for 10 logged s 'msg="reaper role taken'
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" PENDING
	wait_for 10 logged s 'msg="expired leases given back" requeued=1'
	kill -CONT "$(bg_pid h)"
	wait_for 10 logged h 'msg="reaper role lost'
	holds s
	# the old holder finds its job's lease lost, and gives nothing back itself
	wait_for 10 logged h 'lease lost'
	run ! logged h 'expired leases given back'
	holds s
	# s frozen in turn: h gives back nothing while s's role lasts, then takes over
	kill -STOP "$(bg_pid s)"
	expires=$(sql "SELECT expires_at FROM pendulum.leaders WHERE role = 'reaper'")
	late=$(sql "INSERT INTO pendulum.jobs (job_type, state, lease_owner, lease_token, lease_expires_at, attempt)
	            VALUES ('x', 'RUNNING', 'elsewhere:1:0000', nextval('pendulum.lease_token_seq'),
	                    now() - interval '1 s', 1) RETURNING id")
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $late" PENDING
	[ "$(sql "SELECT finished_at >= '$expires' FROM pendulum.job_attempts WHERE job_id = $late")" = t ]
	holds h
	kill -CONT "$(bg_pid s)"
	wait_for 10 logged s 'msg="reaper role lost'
}

@test "a clean stop resigns: a standby takes the role at once, not a lease later" {
	start_worker h -j 1 --lease 30s --poll 1s --handler 'idle=true'
	wait_for 10 holds h
	start_worker s -j 1 --lease 30s --poll 1s --handler 'idle=true'
	wait_for 10 logged s 'msg="reaper on standby'
	stop_bg h
	[ "$(bg_status h)" -eq 0 ]
	logged h 'msg="reaper role released"'
	# pendulum_leaders wakes the standby; its next turn would be 30 s away
	wait_for 15 holds s
}

@test "--no-reap: not a candidate; pd-reaper --once passes without the election" {
	start_worker n -j 1 --lease 1s --poll 1s --no-reap --handler 'idle=true'
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.workers" 1
	start_worker h -j 1 --lease 30s --poll 1s --handler 'idle=true'
	wait_for 10 holds h
	run ! logged n reaper
	# an operator's pass while another holds the role
	sql "INSERT INTO pendulum.jobs (job_type, state, lease_owner, lease_token, lease_expires_at, attempt)
	     VALUES ('t', 'RUNNING', 'elsewhere:1:0000', nextval('pendulum.lease_token_seq'), now() - interval '1 s', 1)"
	run pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 1, dead-lettered 0" ]
	holds h
}

@test "pd-admin leaders shows who holds the reaper role" {
	start_worker h -j 1 --lease 30s --poll 1s --handler 'idle=true'
	wait_for 10 holds h
	h_id=$(worker_id h)
	run pd-admin leaders
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == ROLE*HOLDER*TOKEN*EXPIRES_IN*STATUS ]]
	[[ "${lines[1]}" == "reaper  $h_id  1  "*held ]]
	run pd-admin --json leaders
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | jq -r '.role + " " + .holder + " " + .status')" = "reaper $h_id held" ]
}

@test "orphans of a kill -9'd worker are killed on its host by a standby, the holder on another host" {
	unshare -ru true 2>/dev/null || skip "needs unshare -ru (a UTS namespace for a second host name)"
	id=$(pd-enqueue t '{}')
	# The holder runs under another host name: this host's leftovers are not its to kill.
	start_bg h unshare -ru sh -c 'hostname elsewhere && exec pd-worker -j 1 --lease 2s \
		--heartbeat 500ms --poll 200ms --handler u=true'
	wait_for 10 sql_is "SELECT holder LIKE 'elsewhere:%' FROM pendulum.leaders WHERE role = 'reaper'" t
	start_worker s -j 1 --lease 2s --heartbeat 500ms --poll 200ms --handler 'u=true'
	wait_for 10 logged s 'msg="reaper on standby'
	# the victim: no reaping of its own, a handler that leaves a sleep behind
	start_worker v -j 1 --lease 2s --heartbeat 500ms --poll 200ms --no-reap \
		--handler "t=$(pid_handler "$PIDS")"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	wait_for 10 lines_at_least "$PIDS" 2
	sleep_pid=$(sed -n 2p "$PIDS")
	kill -KILL "$(bg_pid v)"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" PENDING
	wait_for 30 eval "! alive $sleep_pid"
	# logged after the kill: waited for, as the process may be gone first
	wait_for 10 grep -q "msg=\"killed a leftover handler process\".* job=$id .* pid=$sleep_pid " "$BATS_FILE_TMPDIR/s.log"
	run ! logged h leftover
	wait_for 10 logged h 'msg="expired leases given back" requeued=1'
	# killed before the job was given back
	killed=$(grep -m1 'killed a leftover' "$BATS_FILE_TMPDIR/s.log" | sed 's/^ts=\([^ ]*\) .*/\1/')
	[ "$(sql "SELECT finished_at >= '$killed' FROM pendulum.job_attempts WHERE job_id = $id")" = t ]
}
