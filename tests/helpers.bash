# shellcheck shell=bash
# Shared by every bats file: where the binaries are, a fresh database per
# file on the throwaway PostgreSQL (started here if scripts/check did not),
# and bounded waits on conditions.

bats_require_minimum_version 1.5.0

PD_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
PD_BIN=${PD_BIN:-$PD_ROOT/build/bin}
PD_TEST_TOOL=${PD_TEST_TOOL:-$PD_ROOT/build/tests/pd-test-tool}
export PATH="$PD_BIN:$PATH"

# Start (if needed) the cluster and create this file's own database.
pd_setup_db() {
	if [ -z "${PD_PG_DIR:-}" ]; then
		PD_PG_URL=$(sh "$PD_ROOT/scripts/pg" start)
		PD_PG_DIR=$(printf '%s\n' "$PD_PG_URL" | sed -n 's/^host=\([^ ]*\) .*/\1/p')
		PD_PG_OWNED=1
		export PD_PG_OWNED
	fi
	export PD_PG_DIR PD_PG_URL
	PD_DB_NAME="t_$(basename "$BATS_TEST_FILENAME" .bats | tr -c 'a-z0-9_\n' '_')_$$"
	export PD_DB_NAME
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $PD_DB_NAME" -c "CREATE DATABASE $PD_DB_NAME"
	PD_DATABASE_URL=$(printf '%s\n' "$PD_PG_URL" | sed "s/dbname=[^ ]*/dbname=$PD_DB_NAME/")
	export PD_DATABASE_URL
}

pd_teardown_db() {
	if [ -n "${PD_DB_NAME:-}" ]; then
		psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $PD_DB_NAME WITH (FORCE)" || true
	fi
	if [ -n "${PD_PG_OWNED:-}" ]; then
		sh "$PD_ROOT/scripts/pg" stop "$PD_PG_DIR"
	fi
}

# The usual hooks of a file on its own database: create and migrate it once;
# kill every background process after each test and at the end. Called
# right after `load helpers`; a hook defined later in the file wins.
pd_db_hooks() {
	setup_file() {
		pd_setup_db
		pd-admin migrate >/dev/null
	}
	teardown_file() {
		kill_all_bg
		pd_teardown_db
	}
	teardown() {
		kill_all_bg
	}
}

# Query the test database; prints unaligned, tuples only.
sql() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" -c "$1"
}

# wait_for SECONDS COMMAND...: run COMMAND every 50 ms until it succeeds; fail
# (return 1, printing what was waited for) if it has not within SECONDS.
wait_for() {
	local limit=$1
	shift
	local deadline=$((SECONDS + limit))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "timed out after ${limit}s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# sql_is QUERY EXPECTED: succeed when the query prints exactly EXPECTED.
sql_is() {
	[ "$(sql "$1")" = "$2" ]
}

# utc_second_below N: the database's clock is less than N seconds into its
# minute; `wait_for 25 utc_second_below 40` before making a minute's
# occurrence due keeps the next minute from coming before it fires.
utc_second_below() {
	[ "$(sql "SELECT extract(second FROM now())::int")" -lt "$1" ]
}

# expired_lease [PD-ENQUEUE OPTION...]: a job of type t (enqueued with the
# options) leased by a worker that is gone, its lease run out; prints its id.
expired_lease() {
	local id
	id=$(pd-enqueue "$@" t '{}')
	sql "UPDATE pendulum.jobs SET state = 'LEASED', attempt = 1,
	       lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'gone:1:0000',
	       lease_expires_at = now() - interval '1 s' WHERE id = $id" >/dev/null
	echo "$id"
}

# --- Background processes and counting handlers (dispatch, fencing, crash,
# classify, enqueue, restart) ---
#
# start_bg NAME CMD... runs CMD in a session of its own (so that teardown can
# find its handlers, which live in their own process groups but the same
# session), stdin from /dev/null, stdout to $BATS_FILE_TMPDIR/NAME.out,
# stderr to NAME.log. NAME.pid gets CMD's pid, NAME.sid the session's, and
# NAME.status CMD's exit status once it has exited.
start_bg() {
	local name=$1 f
	shift
	f=$BATS_FILE_TMPDIR/$name
	# an earlier session of this name stays registered for kill_all_bg
	if [ -e "$f.sid" ]; then
		mv "$f.sid" "$f.$(date +%s%N).sid"
	fi
	rm -f "$f.pid" "$f.status"
	# the child opens NAME.out and NAME.log after NAME.pid is written: an
	# earlier run's output must be gone by then, or a test reads it as this
	# run's (one read an earlier pd-enqueue's output as its run id). Emptied,
	# not removed: a test may have named the file's inode (JOURNAL_STREAM).
	: >"$f.out"
	: >"$f.log"
	# The subshell exits at once: the session is not a job of this shell, so
	# killing it prints no "Killed" notice.
	# shellcheck disable=SC2016 # expanded by the inner shell
	(setsid sh -c 'echo $$ >"$0.sid"; "$@" </dev/null >"$0.out" 2>"$0.log" & echo $! >"$0.pid.tmp"
		mv "$0.pid.tmp" "$0.pid"; wait $!; echo $? >"$0.status"' "$f" "$@" \
		</dev/null >/dev/null 2>&1 3>&- &)
	# a short poll (wait_for's is 50 ms): a test starting two racers one after
	# the other starts them a few milliseconds apart
	local deadline=$((SECONDS + 10))
	until [ -s "$f.pid" ]; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "start_bg: $name has not started after 10 s" >&2
			return 1
		fi
		sleep 0.002
	done
}

# start_worker NAME ARGS...: pd-worker ARGS in the background (see start_bg).
start_worker() {
	local name=$1
	shift
	start_bg "$name" pd-worker "$@"
}

bg_pid() {
	cat "$BATS_FILE_TMPDIR/$1.pid"
}

# alive PID: the process exists and is not a zombie.
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[ -n "$st" ] && [[ "$st" != Z* ]]
}

# stop_bg NAME [SIGNAL [SECONDS]]: signal it (default TERM) and wait, bounded
# (default 30 s), for its exit; prints nothing, fails on timeout.
stop_bg() {
	local name=$1 sig=${2:-TERM} limit=${3:-30} pid
	pid=$(bg_pid "$name")
	kill -"$sig" "$pid" 2>/dev/null || true
	wait_for "$limit" test -s "$BATS_FILE_TMPDIR/$name.status"
}

stop_worker() {
	stop_bg "$@"
}

# bg_status NAME: the exit status of a background command that has exited.
bg_status() {
	cat "$BATS_FILE_TMPDIR/$1.status"
}

# bg_log NAME: its stderr so far.
bg_log() {
	cat "$BATS_FILE_TMPDIR/$1.log"
}

# worker_id NAME: the id the worker registered (host:pid:xxxx), from the database.
worker_id() {
	sql "SELECT id FROM pendulum.workers WHERE pid = $(bg_pid "$1")"
}

# kill_all_bg: SIGKILL every process of every session start_bg made in this
# file (workers, their handlers, even orphaned ones; psql sessions of
# start_psql, whose backends it ends too), and wait until they are gone;
# then run what on_teardown registered.
kill_all_bg() {
	local f sid pid pids="" apps="" line
	for f in "$BATS_FILE_TMPDIR"/*.sid; do
		[ -e "$f" ] || continue
		sid=$(cat "$f")
		[ -n "$sid" ] || continue
		for pid in $(ps -e -o pid=,sid= | awk -v s="$sid" '$2 == s { print $1 }'); do
			kill -KILL "$pid" 2>/dev/null || true
			pids="$pids $pid"
		done
		rm -f "$f"
	done
	for pid in $pids; do
		wait_for 10 eval "! alive $pid" || true
	done
	for f in "$BATS_FILE_TMPDIR"/*.app; do
		[ -e "$f" ] || continue
		apps="$apps,$(cat "$f")"
		rm -f "$f"
	done
	# A psql killed mid-statement leaves its backend running it (holding its
	# locks, looping at a gate): end them too, waiting up to 10 s each.
	if [ -n "$apps" ]; then
		psql -X -q -At -d "$PD_DATABASE_URL" -v apps="${apps#,}" >/dev/null 2>&1 <<-'EOF' || true
			SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
			 WHERE datname = current_database() AND pid <> pg_backend_pid()
			   AND application_name = ANY (string_to_array(:'apps', ','));
		EOF
	fi
	# then what on_teardown asked for, once
	f=$BATS_FILE_TMPDIR/on-teardown
	if [ -e "$f" ]; then
		mv "$f" "$f.run"
		while IFS= read -r line; do
			eval "$line" >/dev/null 2>&1 || true
		done <"$f.run"
		rm -f "$f.run"
	fi
}

# on_teardown CMD...: kill_all_bg runs CMD (its output and status ignored)
# after its kills: to stop a daemon a test started outside start_bg's
# sessions (scripts/pgbouncer start, scripts/pg start), whatever happened.
on_teardown() {
	printf '%q ' "$@" >>"$BATS_FILE_TMPDIR/on-teardown"
	echo >>"$BATS_FILE_TMPDIR/on-teardown"
}

# start_psql NAME [PSQL-ARGS...]: a psql session in the background (see
# start_bg) whose application_name is NAME (for backend_waiting and
# pg_stat_activity), stopping at the first error, unaligned output to
# NAME.out. With no PSQL-ARGS it runs the script on stdin (kept as NAME.sql).
# kill_all_bg kills it and ends its backend.
start_psql() {
	local name=$1 f
	shift
	f=$BATS_FILE_TMPDIR/$name
	if [ "$#" -eq 0 ]; then
		cat >"$f.sql"
		set -- -f "$f.sql"
	fi
	printf '%s\n' "$name" >"$f.app"
	start_bg "$name" env PGAPPNAME="$name" psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" "$@"
}

# psql_coproc URL: an interactive psql on URL as this shell's coprocess PSQL
# (write to ${PSQL[1]}, read ${PSQL[0]}, PSQL_PID its pid; errors come on
# the same pipe), in a session of its own that kill_all_bg ends.
psql_coproc() {
	# shellcheck disable=SC2034 # PSQL is read by the caller
	coproc PSQL { exec setsid psql -X -q -At -d "$1" 2>&1; }
	echo "$PSQL_PID" >"$BATS_FILE_TMPDIR/psql-coproc.$PSQL_PID.sid"
}

# kill_demo NAME: kill_all_bg, then stop and remove the PostgreSQL that the
# demo started as NAME announced ("...: PostgreSQL at DIR;" on its stdout or
# stderr), if it is still there: pg_ctl puts the postmaster in a session of
# its own, out of kill_all_bg's reach.
kill_demo() {
	local f=$BATS_FILE_TMPDIR/$1 dir
	kill_all_bg
	dir=$(cat "$f.out" "$f.log" 2>/dev/null | sed -n 's/^[a-z-]*: PostgreSQL at \([^;]*\);.*/\1/p' | head -n 1)
	if [ -n "$dir" ] && [ -f "$dir/port" ]; then
		sh "$PD_ROOT/scripts/pg" stop "$dir"
	fi
}

# wait_bg NAME [SECONDS]: wait (default 30 s) for a background command to
# exit and return its exit status; 124, with a message, if it has not.
wait_bg() {
	wait_for "${2:-30}" test -s "$BATS_FILE_TMPDIR/$1.status" || return 124
	return "$(bg_status "$1")"
}

# bg_out NAME: its stdout so far.
bg_out() {
	cat "$BATS_FILE_TMPDIR/$1.out"
}

kill_all_workers() {
	kill_all_bg
}

# Empty the job tables and zero the counters (between tests of one file);
# no elected role held (a killed worker's reaper role would last its lease).
reset_jobs() {
	sql "TRUNCATE pendulum.jobs, pendulum.attempt_rows, pendulum.workers, pendulum.retired_metrics,
	              pendulum.leaders CASCADE;
	     UPDATE pendulum.counters SET value = 0"
}

# counting_handler FILE [COMMAND]: a handler command line that appends
# "$PD_JOB_ID $PD_LEASE_TOKEN" to FILE (one short O_APPEND write: atomic), then
# runs COMMAND if given.
counting_handler() {
	# shellcheck disable=SC2016 # expanded by the handler's shell
	printf 'echo "$PD_JOB_ID $PD_LEASE_TOKEN" >>'\''%s'\''%s' "$1" "${2:+; $2}"
}

# lines FILE: the number of lines in FILE (0 when it does not exist).
lines() {
	if [ -e "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi
}

# lines_at_least FILE N: FILE has N lines or more (for wait_for).
lines_at_least() {
	[ "$(lines "$1")" -ge "$2" ]
}

# fenced: the writes_fenced counter.
fenced() {
	sql "SELECT value FROM pendulum.counters WHERE name = 'writes_fenced'"
}

# njobs: the number of jobs.
njobs() {
	sql "SELECT count(*) FROM pendulum.jobs"
}

# job_state ID: the job's state.
job_state() {
	sql "SELECT state FROM pendulum.jobs WHERE id = $1"
}

# --- Jobs in any state, made directly in SQL (admin, metrics) ---
#
# make_jobs N STATE [QUEUE [TYPE [TENANT [AGE]]]]: insert N jobs in STATE in
# one statement and print their ids, one a line. The fields fit the state: a
# lease for LEASED and RUNNING, a finish time (AGE ago, an interval, default
# '0 s') for SUCCEEDED, DEAD_LETTERED and CANCELLED, a reason for
# DEAD_LETTERED.
make_jobs() {
	local n=$1 state=$2 queue=${3:-default} type=${4:-t} tenant=${5:-default} age=${6:-0 s}
	sql "INSERT INTO pendulum.jobs (state, queue, job_type, tenant_id, attempt, lease_token,
	       lease_owner, lease_expires_at, finished_at, dead_reason, last_error, result, created_at)
	     SELECT '$state', '$queue', '$type', '$tenant',
	       CASE WHEN '$state' IN ('PENDING', 'BLOCKED') THEN 0 ELSE 1 END,
	       CASE WHEN '$state' IN ('LEASED', 'RUNNING') THEN nextval('pendulum.lease_token_seq') END,
	       CASE WHEN '$state' IN ('LEASED', 'RUNNING') THEN 'test-worker' END,
	       CASE WHEN '$state' IN ('LEASED', 'RUNNING') THEN now() + interval '1 min' END,
	       CASE WHEN '$state' IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELLED')
	            THEN now() - interval '$age' END,
	       CASE WHEN '$state' = 'DEAD_LETTERED' THEN 'terminal exit code' END,
	       CASE WHEN '$state' = 'DEAD_LETTERED' THEN 'exit 65' END,
	       CASE WHEN '$state' = 'SUCCEEDED' THEN '{\"ok\": true}'::jsonb END,
	       now() - interval '$age'
	     FROM generate_series(1, $n)
	     RETURNING id"
}

# make_job STATE [QUEUE [TYPE [TENANT [AGE]]]]: one such job; prints its id.
make_job() {
	make_jobs 1 "$@"
}

# json_lines_ok: every line of $output parses as one JSON object.
json_lines_ok() {
	[ -n "$output" ] || return 0
	printf '%s\n' "$output" | jq -e -s 'all(type == "object")' >/dev/null
}

# --- The outbox and pd-relay (outbox.bats, outbox-sql.bats) ---

# Empty the outbox and zero its fenced-writes counter (between tests of one file).
reset_outbox() {
	sql "TRUNCATE pendulum.outbox; UPDATE pendulum.counters SET value = 0
	     WHERE name = 'outbox_writes_fenced'"
}

# start_relay NAME ARGS...: pd-relay ARGS in the background (see start_bg).
start_relay() {
	local name=$1
	shift
	start_bg "$name" pd-relay "$@"
}

# publish_cmd FILE [COMMAND]: a publish command line that appends
# "$PD_MESSAGE_ID $PD_MESSAGE_KEY" to FILE (one short O_APPEND write: atomic),
# then runs COMMAND if given.
publish_cmd() {
	# shellcheck disable=SC2016 # expanded by the publish command's shell
	printf 'echo "$PD_MESSAGE_ID $PD_MESSAGE_KEY" >>'\''%s'\''%s' "$1" "${2:+; $2}"
}

# record TOPIC PAYLOAD [KEY [MORE SQL ARGUMENTS]]: pendulum.outbox_record in a
# transaction of its own; prints the message id.
record() {
	local key=${3:+"'$3'"}
	sql "SELECT pendulum.outbox_record('default', '$1', '$2', ${key:-NULL}${4:+, $4})"
}

# outbox_state ID: the message's state.
outbox_state() {
	sql "SELECT state FROM pendulum.outbox WHERE id = $1"
}

# outbox_fenced: the outbox_writes_fenced counter.
outbox_fenced() {
	sql "SELECT value FROM pendulum.counters WHERE name = 'outbox_writes_fenced'"
}

# backend_waiting APPNAME [WHAT]: a backend with that application_name is
# running a statement that contains WHAT (default pg_sleep).
backend_waiting() {
	sql_is "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$1'
	        AND state = 'active' AND query LIKE '%${2:-pg_sleep}%'" t
}
