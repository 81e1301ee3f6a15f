#!/usr/bin/env bats
# Cancelling a job a worker holds (issue 24 part 1, sql/022): pd-admin job
# cancel of a RUNNING job asks its worker, which stops the handler (SIGTERM,
# SIGKILL after the kill grace; a stream handler gets {"cancel": ID}) and
# records CANCELLED through the lease fence; a stalled worker's job is
# CANCELLED by the reaper once its lease expires, and the worker, resumed,
# writes nothing; lease check says "cancelled"; flow cancel of a running run.

# Handler command lines are single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	D=$BATS_TEST_TMPDIR
	export D
	CFG=$D/pendulum.yaml
	printf 'retry: {base: 0, cap: 0}\nworker: {kill_grace: 300ms}\n' >"$CFG"
}

# worker NAME ARGS...: pd-worker on $CFG, a 2 s lease, quick polls.
worker() {
	local name=$1
	shift
	start_worker "$name" -c "$CFG" --lease 2s --poll 100ms "$@"
}

# handler FILE: write a handler script from stdin to FILE, executable.
handler() {
	cat >"$1"
	chmod +x "$1"
}

state_of() {
	sql "SELECT state FROM pendulum.jobs WHERE id = $1"
}

@test "a RUNNING handler that ignores SIGTERM: CANCELLED within heartbeat + kill grace, nothing of it left" {
	id=$(pd-enqueue t '{}')
	# a heartbeat every 60 s: only the cancel's notification makes it come sooner
	worker w1 -j 1 --lease 180s --heartbeat 60s \
		--handler 't=echo $$ >"$D/pids"; trap "" TERM; sleep 120 & echo $! >>"$D/pids"; wait'
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	wait_for 10 eval '[ "$(lines "$D/pids")" -eq 2 ]'
	w=$(worker_id w1)
	run --separate-stderr pd-admin job cancel "$id"
	[ "$status" -eq 0 ]
	[ "$output" = "job $id: cancel asked of worker $w (t, RUNNING, queue default)" ]
	# the notification hurries the heartbeat, then 300 ms of grace: well
	# within the 60 s of the next heartbeat and the 120 s of the handler
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" CANCELLED
	[ "$(sql "SELECT dead_reason || '|' || last_error || '|' || (finished_at IS NOT NULL) || '|' || (lease_owner IS NULL)
	          FROM pendulum.jobs WHERE id = $id")" = "cancelled by operator|cancelled by operator|true|true" ]
	# SIGTERM was ignored: SIGKILL after the grace
	[ "$(sql "SELECT outcome || ' ' || signal FROM pendulum.job_attempts WHERE job_id = $id")" = "cancelled 9" ]
	while read -r pid; do
		wait_for 30 eval "! alive $pid"
	done <"$D/pids"
	grep -q 'cancel asked: stopping the handler' "$BATS_FILE_TMPDIR/w1.log"
	alive "$(bg_pid w1)"
}

@test "a sleep 60 handler cancelled with a reason: the reason, attempt outcome cancelled, its dependent cancelled too" {
	id=$(pd-enqueue t '{}')
	dep=$(pd-enqueue --after "$id" u '{}')
	[ "$(state_of "$dep")" = BLOCKED ]
	worker w1 -j 1 --heartbeat 500ms --handler 't=sleep 60' --handler 'u=true'
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	run --separate-stderr pd-admin --json job cancel "$id" --reason "customer asked"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e --argjson id "$id" --arg w "$(worker_id w1)" \
		'.id == $id and .state == "RUNNING" and .dead_reason == "customer asked" and .cancel_asked_of == $w'
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" CANCELLED
	[ "$(sql "SELECT dead_reason || '|' || last_error FROM pendulum.jobs WHERE id = $id")" = "customer asked|customer asked" ]
	[ "$(sql "SELECT attempt || ':' || outcome FROM pendulum.job_attempts WHERE job_id = $id")" = "1:cancelled" ]
	[ "$(sql "SELECT attempt FROM pendulum.jobs WHERE id = $id")" = 1 ]
	[ "$(state_of "$dep")" = CANCELLED ]
	# a finished job cannot be cancelled again
	run --separate-stderr pd-admin job cancel "$id"
	[ "$status" -eq 1 ]
	[ "$stderr" = "pd-admin: job $id is CANCELLED; cancel works only from PENDING, BLOCKED, LEASED or RUNNING" ]
	# a replay clears the request (else it would be cancelled again at once)
	pd-admin job replay "$id" >/dev/null
	[ "$(sql "SELECT cancel_requested_at IS NULL AND cancel_reason IS NULL FROM pendulum.jobs WHERE id = $id")" = t ]
}

@test "a cancelled job on a stalled worker: RUNNING until the lease expires, then the reaper's CANCELLED; resumed, the worker writes nothing and goes on" {
	id=$(pd-enqueue t '{}')
	worker w1 -j 2 --heartbeat 500ms --no-reap --handler 't=echo $$ >"$D/pid"; sleep 60' --handler 'u=echo "{\"by\": 1}"'
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	kill -STOP "$(bg_pid w1)"
	# the lease's end set by hand (the worker is stopped: no heartbeat moves it), whatever the load
	sql "UPDATE pendulum.jobs SET lease_expires_at = now() + interval '1 hour' WHERE id = $id"
	before=$(fenced)
	run --separate-stderr pd-admin job cancel "$id" --reason stalled
	[ "$status" -eq 0 ]
	# nobody else writes it while its lease holds
	[ "$(sql "SELECT state || ' ' || (cancel_requested_at IS NOT NULL) || ' ' || cancel_reason FROM pendulum.jobs WHERE id = $id")" = "RUNNING true stalled" ]
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$(state_of "$id")" = RUNNING ]
	# expired: the reap pass makes it CANCELLED, not PENDING
	sql "UPDATE pendulum.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $id"
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 0, dead-lettered 0" ]
	[ "$(sql "SELECT state || '|' || dead_reason || '|' || (finished_at IS NOT NULL) FROM pendulum.jobs WHERE id = $id")" = "CANCELLED|stalled|true" ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $id")" = cancelled ]
	row=$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")
	attempts=$(sql "SELECT json_agg(a)::text FROM pendulum.attempt_rows a WHERE job_id = $id")
	# resumed: it finds the lease lost, stops the handler, writes nothing
	kill -CONT "$(bg_pid w1)"
	wait_for 30 grep -q 'lease lost' "$BATS_FILE_TMPDIR/w1.log"
	wait_for 10 eval "! alive $(cat "$D/pid")"
	alive "$(bg_pid w1)"
	[ "$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")" = "$row" ]
	[ "$(sql "SELECT json_agg(a)::text FROM pendulum.attempt_rows a WHERE job_id = $id")" = "$attempts" ]
	[ "$(fenced)" -eq "$before" ]
	# and goes on serving
	id2=$(pd-enqueue u '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id2" SUCCEEDED
	[ "$(fenced)" -eq "$before" ]
}

@test "a stream handler gets {\"cancel\": ID}: answered, or not within the grace, the job is CANCELLED; a late answer is dropped" {
	handler "$D/stream.sh" <<'EOF'
#!/bin/sh
echo $$ >>"$D/pids"
late=
while IFS= read -r line; do
	echo "$line" >>"$D/lines"
	id=$(printf '%s\n' "$line" | jq -r '.cancel // empty')
	if [ -n "$id" ]; then
		# a deaf job's cancel is not answered now; another's is
		grep -q "^deaf $id\$" "$D/deaf" 2>/dev/null && { late="$late $id"; continue; }
		printf '{"id":%s,"error":"stopped on request"}\n' "$id"
		continue
	fi
	set -- $(printf '%s\n' "$line" | jq -r '"\(.id) \(.payload.deaf) \(.payload.quick)"')
	for l in $late; do printf '{"id":%s,"result":"late"}\n' "$l"; done
	late=
	[ "$2" = true ] && echo "deaf $1" >>"$D/deaf"
	[ "$3" = true ] && printf '{"id":%s,"result":{"ok":true}}\n' "$1"
done
EOF
	a=$(pd-enqueue s '{}')
	b=$(pd-enqueue s '{"deaf": true}')
	worker w1 -j 4 --heartbeat 500ms --stream-exec "s=$D/stream.sh"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING'" 2
	wait_for 10 grep -q '"deaf"' "$D/lines"
	pd-admin job cancel "$a" >/dev/null
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $a" CANCELLED
	grep -qx "{\"cancel\":$a}" "$D/lines"
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $a")" = cancelled ]
	# the deaf job: cancelled after the kill grace without an answer
	pd-admin job cancel "$b" --reason deaf >/dev/null
	wait_for 10 sql_is "SELECT state || ' ' || dead_reason FROM pendulum.jobs WHERE id = $b" "CANCELLED deaf"
	grep -qx "{\"cancel\":$b}" "$D/lines"
	wait_for 10 grep -q 'not answered within the grace' "$BATS_FILE_TMPDIR/w1.log"
	# its late answer comes with the next job: dropped, not a protocol error
	c=$(pd-enqueue s '{"quick": true}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $c" SUCCEEDED
	[ "$(lines "$D/pids")" -eq 1 ]
	run grep -c 'bad line' "$BATS_FILE_TMPDIR/w1.log"
	[ "$output" = 0 ]
	[ "$(state_of "$b")" = CANCELLED ]
	[ "$(fenced)" -eq 0 ]
}

@test "lease check inside a handler: held, then cancelled (exit 3) once cancellation is asked" {
	printf 'retry: {base: 0, cap: 0}\nworker: {kill_grace: 5s}\n' >"$CFG"
	id=$(pd-enqueue t '{}')
	worker w1 -j 1 --heartbeat 500ms --handler 't=trap "" TERM; pd-admin lease check >"$D/first"; echo $? >>"$D/first"
		while :; do out=$(pd-admin lease check); rc=$?; [ $rc -eq 0 ] || break; sleep 0.05; done
		echo "$rc $out" >"$D/rc"
		pd-admin --json lease check >"$D/json"; true'
	wait_for 30 test -s "$D/first"
	[ "$(cat "$D/first")" = 0 ]
	pd-admin job cancel "$id" >/dev/null
	wait_for 10 test -s "$D/rc"
	[ "$(cat "$D/rc")" = "3 cancelled" ]
	wait_for 10 test -s "$D/json"
	jq -e --argjson id "$id" '.job == $id and .held == true and .cancelled == true' "$D/json"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" CANCELLED
	# outside a worker (no PD_WORKER_FD), on a connection of its own: the same
	sql "UPDATE pendulum.jobs SET state = 'RUNNING', lease_expires_at = now() + interval '1 hour',
	     cancel_requested_at = now() WHERE id = $id"
	token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	run --separate-stderr env PD_JOB_ID="$id" PD_LEASE_TOKEN="$token" pd-admin lease check
	[ "$status" -eq 3 ]
	[ "$output" = cancelled ]
}

@test "flow cancel of a run whose step runs: the worker stops it, the run ends cancelled" {
	cat >>"$CFG" <<EOF
workflows:
  slow:
    steps:
      - name: first
        run: 'sleep 60'
      - name: second
        run: 'echo {}'
EOF
	run_id=$(sql "SELECT pendulum.start_workflow('default', 'slow', '{}'::jsonb)")
	job=$(sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $run_id")
	worker w1 -j 1 --heartbeat 500ms
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" RUNNING
	run --separate-stderr pd-admin flow cancel "$run_id" --reason "not needed"
	[ "$status" -eq 0 ]
	[ "$output" = "workflow run $run_id: cancel asked of worker $(worker_id w1) (job $job, RUNNING, queue default)" ]
	wait_for 10 sql_is "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $run_id" CANCELLED
	[ "$(sql "SELECT state || '|' || dead_reason FROM pendulum.jobs WHERE id = $job")" = "CANCELLED|not needed" ]
	[ "$(sql "SELECT count(*) FROM pendulum.workflow_steps WHERE run_id = $run_id")" = 0 ]
	run --separate-stderr pd-admin flow cancel "$run_id"
	[ "$status" -eq 1 ]
}

@test "finish_cancel_asked: an outcome that would make a job with a cancel request PENDING again cancels it; others pass as they are" {
	a=$(make_job RUNNING)
	b=$(make_job RUNNING)
	sql "UPDATE pendulum.jobs SET cancel_requested_at = now(), cancel_reason = 'r' WHERE id = $a" >/dev/null
	ta=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $a")
	tb=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $b")
	kinds() {
		sql "SELECT string_agg(e->>'kind', ' ' ORDER BY o)
		       FROM jsonb_array_elements(pendulum.finish_cancel_asked('$1'::jsonb)) WITH ORDINALITY AS x(e, o)"
	}
	[ "$(kinds "[{\"id\":$a,\"token\":$ta,\"kind\":\"retry\"},{\"id\":$b,\"token\":$tb,\"kind\":\"retry\"}]")" = "cancel retry" ]
	for k in release advance wait; do
		[ "$(kinds "[{\"id\":$a,\"token\":$ta,\"kind\":\"$k\"}]")" = cancel ]
	done
	# final outcomes stand; another token's outcome (fenced anyway) is not touched
	[ "$(kinds "[{\"id\":$a,\"token\":$ta,\"kind\":\"succeeded\"},{\"id\":$a,\"token\":$ta,\"kind\":\"dead\"}]")" = "succeeded dead" ]
	[ "$(kinds "[{\"id\":$a,\"token\":$((ta + 1000)),\"kind\":\"retry\"}]")" = retry ]
	# through the worker: CANCELLED with the request's reason, its exit 1 or the cancel first
	id=$(pd-enqueue t '{}')
	gate=$D/gate
	worker w1 -j 1 --heartbeat 500ms --handler "t=while [ ! -e '$gate' ]; do sleep 0.05; done; exit 1"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" RUNNING
	kill -STOP "$(bg_pid w1)"
	sql "UPDATE pendulum.jobs SET lease_expires_at = now() + interval '1 hour' WHERE id = $id"
	pd-admin job cancel "$id" --reason "late" >/dev/null
	touch "$gate"
	kill -CONT "$(bg_pid w1)"
	wait_for 30 sql_is "SELECT state || ' ' || dead_reason FROM pendulum.jobs WHERE id = $id" "CANCELLED late"
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $id")" = 1 ]
}
