#!/usr/bin/env bats
# Through a primary failover (make check, or alone: make ha-check): a real etcd
# and a two-node Patroni cluster (scripts/ha, synchronous_mode on), three
# pd-workers with 2 s leases and a loop of pd-enqueue, all on the multi-host
# conninfo with target_session_attrs=read-write. Under that load the
# primary's postmaster is SIGKILLed (one test) or switched over with
# patronictl (the other). After the cluster settles: every id pd-enqueue
# printed exists, every job finishes, none is dead-lettered, the handler runs
# beyond one per job are at most the jobs in flight at the switch, the lease
# tokens issued after it are all greater than those issued before, and
# pendulum_writes_fenced_total counts only writes of attempts the reaper took
# over. The stall (the longest time with no job finishing) and the
# duplicates are printed and appended to $PD_HA_REPORT (default
# build/ha-check.txt).

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

PD_BIN=${PD_BIN:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build/bin}
load ../helpers
PD_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
PD_HA_REPORT=${PD_HA_REPORT:-$PD_ROOT/build/ha-check.txt}

setup_file() {
	HA_DIR=$(mktemp -d /tmp/pendulum-ha.XXXXXX)
	export HA_DIR
	PD_DATABASE_URL=$(sh "$PD_ROOT/scripts/ha" start "$HA_DIR")
	export PD_DATABASE_URL
	pd-admin migrate >/dev/null
}

teardown_file() {
	kill_all_bg
	sh "$PD_ROOT/scripts/ha" stop "$HA_DIR"
}

setup() {
	LOG=$BATS_TEST_TMPDIR/runs.log # "job token", one line per handler run
	IDS=$BATS_TEST_TMPDIR/ids      # the ids pd-enqueue printed
	STOP=$BATS_TEST_TMPDIR/stop
	sh "$PD_ROOT/scripts/ha" wait "$HA_DIR" 120
	reset_jobs
}

teardown() {
	kill_all_bg
}

# The cluster may be switching: retry until the statement goes through.
sql_retry() {
	local i out
	for i in $(seq 1 200); do
		if out=$(sql "$1" 2>/dev/null); then
			printf '%s\n' "$out"
			return 0
		fi
		sleep 0.1
	done
	sql "$1"
}

# start_load: three workers of 4 slots (lease 2 s) and an enqueue loop that
# retries on failure (an id counts only once printed).
start_load() {
	for w in w1 w2 w3; do
		start_worker "$w" -j 4 --lease 2s --heartbeat 500ms --poll 200ms \
			--handler "t=$(counting_handler "$LOG" 'sleep 0.1')"
	done
	start_bg enq bash -c 'while [ ! -e "$1" ]; do
		if id=$(pd-enqueue t "{}" 2>>"$2.err"); then echo "$id" >>"$2"; else sleep 0.05; fi
		sleep 0.02
	done' enq "$STOP" "$IDS"
}

# the longest gap in seconds between two jobs finishing, from 5 s before
# time $1 on
stall() {
	sql_retry "SELECT round(extract(epoch FROM max(g))::numeric, 2) FROM (
	             SELECT finished_at - lag(finished_at) OVER (ORDER BY finished_at) AS g
	               FROM pendulum.jobs WHERE finished_at >= timestamptz '$1' - interval '5 s') s"
}

# failover ACTION: the whole scenario around `scripts/ha ACTION`.
failover() {
	local action=$1 old new n0 n1 t0 t_switch settled ids nids dup inflight
	local before after fenced expired stall_s metric
	start_load
	wait_for 60 lines_at_least "$LOG" 100
	wait_for 30 lines_at_least "$IDS" 100
	old=$(sh "$PD_ROOT/scripts/ha" primary "$HA_DIR")

	n0=$(lines "$LOG") # handler runs started before the switch
	t0=$(date +%s.%N)
	sh "$PD_ROOT/scripts/ha" "$action" "$HA_DIR" >/dev/null
	t_switch=$(date '+%Y-%m-%d %H:%M:%S.%N%:z')
	sh "$PD_ROOT/scripts/ha" wait "$HA_DIR" 120
	settled=$(echo "$(date +%s.%N) - $t0" | bc)
	new=$(sh "$PD_ROOT/scripts/ha" primary "$HA_DIR")
	[ "$new" != "$old" ]
	n1=$(lines "$LOG") # handler runs started after the cluster settled
	wait_for 60 lines_at_least "$LOG" $((n1 + 100))
	touch "$STOP"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/enq.status"

	# every printed id exists and every job (printed or not) finishes once done
	ids=$(paste -sd, "$IDS")
	nids=$(lines "$IDS")
	[ "$(sql_retry "SELECT count(*) FROM pendulum.jobs WHERE id IN ($ids)")" -eq "$nids" ]
	wait_for 120 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state <> 'SUCCEEDED'" 0
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE id IN ($ids) AND state = 'SUCCEEDED'")" -eq "$nids" ]
	# every job ran; the runs beyond one per job are at most those in flight at the switch
	[ "$(cut -d' ' -f1 "$LOG" | sort -u | wc -l)" -eq "$(njobs)" ]
	dup=$(($(lines "$LOG") - $(njobs)))
	inflight=$(sql "SELECT count(*) FROM pendulum.job_attempts
	                 WHERE started_at < timestamptz '$t_switch'
	                   AND (finished_at IS NULL OR finished_at >= timestamptz '$t_switch')")
	[ "$dup" -le "$inflight" ]
	# the tokens handed to handlers after the switch are all above those before it
	before=$(head -n "$n0" "$LOG" | cut -d' ' -f2 | sort -n | tail -n 1)
	after=$(tail -n +"$((n1 + 1))" "$LOG" | cut -d' ' -f2 | sort -n | head -n 1)
	[ "$after" -gt "$before" ]
	# fenced writes: only outcomes of attempts the reaper took over (lease
	# expired during the switch), never a resent write of one's own
	fenced=$(fenced)
	expired=$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'lease_expired'")
	[ "$fenced" -le "$expired" ]
	metric=$(pd-admin metrics | awk '$1 == "pendulum_writes_fenced_total" { print $2 }')
	[ "$metric" = "$fenced" ]

	stall_s=$(stall "$t_switch")
	printf '# %s: settled %.1f s, stall %s s, jobs %d (printed %d), duplicates %d (in flight %d), lease_expired %d, fenced %d, tokens %d -> %d\n' \
		"$action" "$settled" "$stall_s" "$(njobs)" "$nids" "$dup" "$inflight" "$expired" "$fenced" "$before" "$after" >&3
	printf '%s %s: settled_s=%.1f stall_s=%s jobs=%d printed=%d duplicates=%d in_flight=%d lease_expired=%d fenced=%d workers=3x4 lease=2s heartbeat=500ms\n' \
		"$(date -u +%FT%TZ)" "$action" "$settled" "$stall_s" "$(njobs)" "$nids" "$dup" "$inflight" "$expired" "$fenced" >>"$PD_HA_REPORT"
	for w in w1 w2 w3; do
		alive "$(bg_pid "$w")"
		wait_for 10 grep -q 'database connection lost' "$BATS_FILE_TMPDIR/$w.log"
		wait_for 10 grep -q 'msg=reconnected' "$BATS_FILE_TMPDIR/$w.log"
	done
	for w in w1 w2 w3; do
		stop_worker "$w"
		[ "$(bg_status "$w")" -eq 0 ]
	done
}

@test "SIGKILL of the primary's postmaster under load: nothing lost, nothing dead, duplicates bounded, tokens monotonic" {
	failover kill-primary
}

@test "a planned switchover under load: nothing lost, nothing dead, duplicates bounded, tokens monotonic" {
	failover switchover
}
