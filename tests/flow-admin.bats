#!/usr/bin/env bats
# Workflow runs from the command line: pd-enqueue --workflow (and --wait on a
# run), pd-admin flow runs/show/signal/cancel, the pendulum_workflow_runs
# metric. No worker runs here: the state of a run is driven by SQL (stored
# steps, its position, its job's state), as a worker would leave it.

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

# start RUN_ARGS...: pd-enqueue --workflow ARGS; prints the run id.
start() {
	pd-enqueue --workflow "$@"
}

# run_job RUN: the id of the job that drives the run.
run_job() {
	sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $1"
}

# nruns: the number of runs.
nruns() {
	sql "SELECT count(*) FROM pendulum.workflow_runs"
}

# done_step RUN INDEX NAME OUTPUT: record step INDEX as completed with the
# JSON OUTPUT and move the run's position past it.
done_step() {
	sql "INSERT INTO pendulum.workflow_steps (run_id, step_index, step_name, kind, output, attempts)
	     VALUES ($1, $2, '$3', 'run', '$4', 2);
	     UPDATE pendulum.workflow_runs SET position = $2 + 1 WHERE id = $1"
}

# park RUN SIGNAL: the run waits for SIGNAL at its position; its job is due in an hour.
park() {
	sql "UPDATE pendulum.workflow_runs SET waiting_for = '$2', wait_step = position WHERE id = $1;
	     UPDATE pendulum.jobs SET run_at = now() + interval '1 hour'
	      WHERE id = (SELECT job_id FROM pendulum.workflow_runs WHERE id = $1)"
}

# job_to STATE RUN [SQL SET...]: set the run's job to STATE, with what the state needs.
job_to() {
	sql "UPDATE pendulum.jobs SET state = '$1', attempt = greatest(attempt, 1),
	       finished_at = CASE WHEN '$1' IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELLED') THEN now() END,
	       lease_token = CASE WHEN '$1' IN ('LEASED', 'RUNNING') THEN nextval('pendulum.lease_token_seq') END,
	       lease_owner = CASE WHEN '$1' IN ('LEASED', 'RUNNING') THEN 'test-worker' END,
	       lease_expires_at = CASE WHEN '$1' IN ('LEASED', 'RUNNING') THEN now() + interval '1 min' END
	       ${3:+, $3}
	     WHERE id = (SELECT job_id FROM pendulum.workflow_runs WHERE id = $2)"
}

# run_state RUN: the run's state in pendulum.workflow_run_states.
run_state() {
	sql "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $1"
}

# --- pd-enqueue --workflow ---

@test "--workflow starts a run: its job drives it, the options are the job's" {
	run --separate-stderr start orders -t acme -q q1 -p high -k key1 --max-attempts 3 '{"order": 7}'
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^[0-9]+$ ]]
	id=$output
	job=$(run_job "$id")
	[ "$(sql "SELECT job_type FROM pendulum.jobs WHERE id = $job")" = workflow:orders ]
	[ "$(sql "SELECT payload->>'run' FROM pendulum.jobs WHERE id = $job")" = "$id" ]
	[ "$(sql "SELECT tenant_id || ' ' || queue || ' ' || priority || ' ' || max_attempts FROM pendulum.jobs WHERE id = $job")" = "acme q1 10 3" ]
	[ "$(sql "SELECT input->>'order' FROM pendulum.workflow_runs WHERE id = $id")" = 7 ]
	[ "$(sql "SELECT workflow || ' ' || tenant_id || ' ' || position FROM pendulum.workflow_runs WHERE id = $id")" = "orders acme 0" ]
	[ "$(sql "SELECT steps IS NULL FROM pendulum.workflow_runs WHERE id = $id")" = t ]
	[ "$(run_state "$id")" = RUNNING ]
}

@test "--workflow: INPUT from stdin, --delay in SQL time, --json prints the run's row" {
	run --separate-stderr start orders --delay 1h --json <<<'[1, 2]'
	[ "$status" -eq 0 ]
	id=$(printf '%s\n' "$output" | jq -r .id)
	[ "$(printf '%s\n' "$output" | jq -c .input)" = '[1,2]' ]
	[ "$(printf '%s\n' "$output" | jq -r .workflow)" = orders ]
	[ "$(sql "SELECT run_at > now() + interval '59 min' FROM pendulum.jobs WHERE id = $(run_job "$id")")" = t ]
}

@test "--workflow refuses the options of a job with 64, and writes nothing" {
	for opt in --ndjson "--after 1" "--timeout 5s" --at-most-once "--traceparent 00-x"; do
		# shellcheck disable=SC2086 # an option and its value
		run --separate-stderr start orders $opt '{}'
		[ "$status" -eq 64 ] || { echo "$opt: $status"; return 1; }
		[[ "$stderr" == "pd-enqueue: --workflow: ${opt%% *} does not apply to a workflow run"* ]] || { echo "$stderr"; return 1; }
	done
	run --separate-stderr start orders '{}' extra
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unexpected argument 'extra'"* ]]
	run --separate-stderr start '' '{}'
	[ "$status" -eq 64 ]
	[ "$(nruns)" -eq 0 ]
	[ "$(njobs)" -eq 0 ]
}

@test "an invalid INPUT: exit 65 naming line and column, nothing written" {
	run --separate-stderr start orders '{"a": }'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: invalid JSON in INPUT at line 1, column 7: expected a value" ]
	run --separate-stderr start orders <<<$'{\n  "a": 1,\n  oops\n}'
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-enqueue: invalid JSON in stdin at line 3, column 3: "* ]]
	[ -z "$output" ]
	[ "$(nruns)" -eq 0 ]
	[ "$(njobs)" -eq 0 ]
}

@test "an idempotency key names the existing run; a job's key is a conflict (1)" {
	first=$(start orders -k k1 '{}')
	run --separate-stderr start orders -k k1 '{"other": true}'
	[ "$status" -eq 0 ]
	[ "$output" = "$first" ]
	[[ "$stderr" == *"idempotency key already used in tenant 'default': existing workflow run $first"* ]]
	[ "$(nruns)" -eq 1 ]
	pd-enqueue -k jobkey sometype '{}' >/dev/null
	run --separate-stderr start orders -k jobkey '{}'
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"idempotency key jobkey belongs to job"*"not a workflow run"* ]]
	[ "$(nruns)" -eq 1 ]
}

# --- --wait on a run ---

# started: the background pd-enqueue w has printed its run id (--print-id: on stderr).
started() {
	[ -s "$BATS_FILE_TMPDIR/w.log" ]
}

# start_waiting: pd-enqueue --workflow orders --wait --print-id in the
# background (w); sets id to its run once it has printed it.
start_waiting() {
	start_bg w pd-enqueue --workflow orders --wait --print-id '{}'
	wait_for 20 started
	id=$(head -n 1 "$BATS_FILE_TMPDIR/w.log")
}

# err_rest: its standard error after the run id, but for the warning that
# no live worker serves the run (no worker runs here: it comes after 3 s).
err_rest() {
	tail -n +2 "$BATS_FILE_TMPDIR/w.log" | grep -v "^pd-enqueue: warning: workflow run [0-9]* (job [0-9]*) waits, but no live worker serves type 'workflow:orders' in queue 'default'$"
}

# waited: the background pd-enqueue has exited (its stderr shown if not).
waited() {
	wait_for 60 test -s "$BATS_FILE_TMPDIR"/w.status || {
		echo "pd-enqueue --wait still running; its stderr:"
		cat "$BATS_FILE_TMPDIR/w.log"
		return 1
	}
}

# out_line N: line N of its standard output.
out_line() {
	sed -n "$1p" "$BATS_FILE_TMPDIR/w.out"
}

@test "--wait: the run succeeds; its last step's output on stdout, exit 0" {
	start_waiting
	done_step "$id" 0 charge '{"paid": 1}'
	job_to SUCCEEDED "$id" "result = '{\"shipped\": true}'"
	waited
	[ "$(bg_status w)" -eq 0 ]
	[ "$(cat "$BATS_FILE_TMPDIR/w.out")" = '{"shipped":true}' ]
	[ -z "$(err_rest)" ]
}

@test "--wait: a text output comes back as the text the step printed" {
	start_waiting
	job_to SUCCEEDED "$id" "result = to_jsonb(E'hello\\nworld\\n'::text), result_is_text = true"
	waited
	[ "$(bg_status w)" -eq 0 ]
	[ "$(out_line 1)" = hello ]
	[ "$(out_line 2)" = world ]
}

@test "--wait: a dead-lettered run names the run, its state and reason; exit 1" {
	start_waiting
	job_to DEAD_LETTERED "$id" "dead_reason = 'step charge: terminal exit code', last_error = 'exit 65'"
	waited
	[ "$(bg_status w)" -eq 1 ]
	[ "$(err_rest)" = "pd-enqueue: workflow run $id (job $(run_job "$id")) dead-lettered: step charge: terminal exit code: exit 65" ]
	[ ! -s "$BATS_FILE_TMPDIR/w.out" ]
}

@test "--wait: a run cancelled with pd-admin flow cancel; exit 1" {
	start_waiting
	run --separate-stderr pd-admin flow cancel "$id" --reason "no longer wanted"
	[ "$status" -eq 0 ]
	waited
	[ "$(bg_status w)" -eq 1 ]
	[[ "$(err_rest)" == "pd-enqueue: workflow run $id (job "*") cancelled: no longer wanted"* ]]
}

# --- pd-admin flow ---

@test "flow --help and each flow command's --help are on stdout; their options are in the man page" {
	run --separate-stderr pd-admin flow --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"pd-admin flow signal RUN NAME [PAYLOAD]"* ]]
	[ "$(printf '%s\n' "$output" | wc -l)" -le 24 ]
	command -v mandoc >/dev/null || skip "mandoc not installed"
	man_opts=$(mandoc -T ascii "$PD_ROOT/man/pd-admin.1" | col -b | grep -oE -- '--[a-z][a-z-]+' | sort -u)
	for c in runs show signal cancel; do
		run --separate-stderr pd-admin flow "$c" --help
		[ "$status" -eq 0 ] || { echo "$c: $status"; return 1; }
		[[ "$output" == "usage: pd-admin flow $c"* ]] || { echo "$c: $output"; return 1; }
		[ "$(printf '%s\n' "$output" | wc -l)" -le 24 ] || { echo "$c: too long"; return 1; }
		missing=$(comm -23 <(echo "$output" | grep -oE -- '--[a-z][a-z-]+' | sort -u) <(echo "$man_opts"))
		[ -z "$missing" ] || { echo "$c: not in the man page: $missing"; return 1; }
	done
}

# usage_error TEXT ARGS...: pd-admin ARGS exits 64 with TEXT in its stderr.
usage_error() {
	local text=$1
	shift
	run --separate-stderr pd-admin "$@"
	[ "$status" -eq 64 ] || { echo "pd-admin $*: exit $status"; return 1; }
	[[ "$stderr" == *"$text"* ]] || { echo "pd-admin $*: $stderr"; return 1; }
}

@test "flow usage errors exit 64 and name the bad input" {
	usage_error "missing run id" flow show
	usage_error "invalid run id '1x'" flow show 1x
	usage_error "missing signal NAME" flow signal 1
	usage_error "the signal name must not be empty" flow signal 1 ''
	usage_error "unknown run state 'PENDING' (RUNNING, SLEEPING, WAITING, SUCCEEDED, DEAD_LETTERED or CANCELLED)" flow runs --state PENDING
	usage_error "unknown option '--type'" flow runs --type x
	usage_error "unknown flow command 'frob'" flow frob
}

@test "flow runs: newest first with the step each is at, filters, total" {
	a=$(start orders '{}')
	b=$(start orders '{}')
	c=$(start billing '{}')
	sql "UPDATE pendulum.workflow_runs SET steps = '{charge,ship}' WHERE id = $b"
	done_step "$b" 0 charge '1'
	park "$b" approve
	job_to SUCCEEDED "$c"
	run --separate-stderr pd-admin flow runs
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "RUN"*"WORKFLOW"*"STATE"*"STEP"* ]]
	[[ "${lines[1]}" == "$c "*"billing"*"SUCCEEDED"* ]]
	[[ "${lines[2]}" == "$b "*"orders"*"WAITING"*"1/2 ship"*"signal approve"* ]]
	[[ "${lines[3]}" == "$a "*"orders"*"RUNNING"* ]]
	[ "${lines[4]}" = "1-3 of 3 runs" ]
	run --separate-stderr pd-admin --json flow runs --workflow orders
	[ "$(printf '%s\n' "$output" | jq -r .id | tr '\n' ' ')" = "$b $a " ]
	[ "$(printf '%s\n' "$output" | jq -r .total | sort -u)" = 2 ]
	run --separate-stderr pd-admin flow runs --state waiting,succeeded --json
	[ "$(printf '%s\n' "$output" | jq -r .id | tr '\n' ' ')" = "$c $b " ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.id == '"$b"') | .step')" = ship ]
	[ "$(printf '%s\n' "$output" | jq -r 'select(.id == '"$b"') | .waiting_for')" = approve ]
	run --separate-stderr pd-admin flow runs --limit 1 --offset 1 --json
	[ "$(printf '%s\n' "$output" | jq -r .id)" = "$b" ]
	json_lines_ok
}

@test "flow show: the run, then each step: done, the run's state at the position, pending" {
	id=$(start orders '{"order": 7}')
	sql "UPDATE pendulum.workflow_runs SET steps = '{charge,approve,ship}' WHERE id = $id"
	done_step "$id" 0 charge '{"paid": 12}'
	park "$id" approve
	run --separate-stderr pd-admin flow show "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *"state "*"WAITING"* ]]
	[[ "$output" == *"waiting_for "*"approve"* ]]
	[[ "$output" == *'input '*'{"order": 7}'* ]]
	[[ "$output" == *"INDEX"*"NAME"*"STATE"*"ATTEMPTS"*"OUTPUT"* ]]
	[[ "$(printf '%s\n' "$output" | grep '^0 ')" == *"charge"*"run"*"done"*"2"*'{"paid": 12}'* ]]
	[[ "$(printf '%s\n' "$output" | grep '^1 ')" == *"approve"*"waiting"* ]]
	[[ "$(printf '%s\n' "$output" | grep '^2 ')" == *"ship"*"pending"* ]]
	run --separate-stderr pd-admin flow show "$id" --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	[ "$(printf '%s\n' "$output" | jq -r .state)" = WAITING ]
	[ "$(printf '%s\n' "$output" | jq -r .position)" = 1 ]
	[ "$(printf '%s\n' "$output" | jq -r .job_id)" = "$(run_job "$id")" ]
	[ "$(printf '%s\n' "$output" | jq -r '[.steps[].state] | join(",")')" = done,waiting,pending ]
	[ "$(printf '%s\n' "$output" | jq -c .steps[0].output)" = '{"paid":12}' ]
	[ "$(printf '%s\n' "$output" | jq -r .steps[0].attempts)" = 2 ]
	[ "$(printf '%s\n' "$output" | jq -r .steps[1].attempts)" = 0 ]
	[ "$(printf '%s\n' "$output" | jq -r .steps[2].attempts)" = null ]
	[ "$(printf '%s\n' "$output" | jq -r '.steps[0].started_at | test("^[0-9-]+T[0-9:.]+Z$")')" = true ]
}

@test "flow show: without recorded names, the stored steps and the one at the position" {
	id=$(start orders '{}')
	done_step "$id" 0 first '"a"'
	job_to RUNNING "$id"
	run --separate-stderr pd-admin --json flow show "$id"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | jq -r '[.steps[] | "\(.index):\(.name):\(.state)"] | join(",")')" = "0:first:done,1:null:running" ]
	[ "$(printf '%s\n' "$output" | jq -r .steps[1].attempts)" = 1 ]
	job_to DEAD_LETTERED "$id" "dead_reason = 'boom'"
	run --separate-stderr pd-admin --json flow show "$id"
	[ "$(printf '%s\n' "$output" | jq -r .steps[1].state)" = dead ]
	[ "$(printf '%s\n' "$output" | jq -r .dead_reason)" = boom ]
}

@test "flow show and flow cancel of an unknown run exit 2" {
	run --separate-stderr pd-admin flow show 999999
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: workflow run 999999 not found" ]
	run --separate-stderr pd-admin flow cancel 999999
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: workflow run 999999 not found" ]
}

@test "flow signal: wakes a run parked on it; otherwise kept in its mailbox" {
	id=$(start orders '{}')
	run --separate-stderr pd-admin flow signal "$id" approve '{"by": "ann"}'
	[ "$status" -eq 0 ]
	[ "$output" = "workflow run $id: signal 'approve' sent; kept until a wait_for step of that name takes it" ]
	[ "$(sql "SELECT signals->'approve'->>'by' FROM pendulum.workflow_runs WHERE id = $id")" = ann ]
	park "$id" approve
	run --separate-stderr pd-admin --json flow signal "$id" approve
	[ "$status" -eq 0 ]
	[ "$output" = "{\"run\":$id,\"signal\":\"approve\",\"woke\":true}" ]
	[ "$(sql "SELECT signals->'approve' FROM pendulum.workflow_runs WHERE id = $id")" = null ]
	[ "$(sql "SELECT run_at <= now() FROM pendulum.jobs WHERE id = $(run_job "$id")")" = t ]
}

@test "flow signal: PAYLOAD - is read from stdin; an invalid one is 65 and sends nothing" {
	id=$(start orders '{}')
	run --separate-stderr pd-admin flow signal "$id" go - <<<'[1, 2]'
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT signals->>'go' FROM pendulum.workflow_runs WHERE id = $id")" = "[1, 2]" ]
	run --separate-stderr pd-admin flow signal "$id" later '{"a": tru}'
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-admin: invalid JSON in PAYLOAD at line 1, column "* ]]
	run --separate-stderr pd-admin flow signal "$id" later - <<<$'[\n  1,\n  ]'
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-admin: invalid JSON in stdin at line 3, column 3: "* ]]
	[ "$(sql "SELECT signals ? 'later' FROM pendulum.workflow_runs WHERE id = $id")" = f ]
}

@test "flow signal: an unknown run exits 2, a finished one 1" {
	run --separate-stderr pd-admin flow signal 999999 go
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: workflow run 999999 not found" ]
	id=$(start orders '{}')
	job_to SUCCEEDED "$id"
	run --separate-stderr pd-admin flow signal "$id" go
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"workflow run $id is over (SUCCEEDED): it takes no signal"* ]]
	[ "$(sql "SELECT signals FROM pendulum.workflow_runs WHERE id = $id")" = "{}" ]
}

@test "flow cancel: a PENDING run's job is cancelled; a RUNNING one's worker is asked; a finished one is a conflict (1)" {
	id=$(start orders '{}')
	run --separate-stderr pd-admin --json flow cancel "$id"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | jq -r .run)" = "$id" ]
	[ "$(printf '%s\n' "$output" | jq -r .state)" = CANCELLED ]
	[ "$(printf '%s\n' "$output" | jq -r .dead_reason)" = "cancelled by operator" ]
	[ "$(run_state "$id")" = CANCELLED ]
	busy=$(start orders '{}')
	job_to RUNNING "$busy"
	run --separate-stderr pd-admin flow cancel "$busy"
	[ "$status" -eq 0 ]
	[[ "$output" == "workflow run $busy: cancel asked"*"(job $(run_job "$busy"), RUNNING, queue default)" ]]
	[ "$(job_state "$(run_job "$busy")")" = RUNNING ]
	[ "$(sql "SELECT cancel_requested_at IS NOT NULL FROM pendulum.jobs WHERE id = $(run_job "$busy")")" = t ]
	run --separate-stderr pd-admin flow cancel "$id"
	[ "$status" -eq 1 ]
	[ "$stderr" = "pd-admin: workflow run $id: job $(run_job "$id") is CANCELLED; cancel works only from PENDING, BLOCKED, LEASED or RUNNING" ]
}

@test "metrics: pendulum_workflow_runs by workflow and state, every state exported" {
	start orders '{}' >/dev/null
	done_id=$(start orders '{}')
	job_to SUCCEEDED "$done_id"
	park "$(start billing '{}')" approve
	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	[[ "$output" == *"# TYPE pendulum_workflow_runs gauge"* ]]
	[[ "$output" == *'pendulum_workflow_runs{workflow="orders",state="RUNNING"} 1'* ]]
	[[ "$output" == *'pendulum_workflow_runs{workflow="orders",state="SUCCEEDED"} 1'* ]]
	[[ "$output" == *'pendulum_workflow_runs{workflow="orders",state="CANCELLED"} 0'* ]]
	[[ "$output" == *'pendulum_workflow_runs{workflow="billing",state="WAITING"} 1'* ]]
	[ "$(printf '%s\n' "$output" | grep -c '^pendulum_workflow_runs{')" -eq 12 ]
	run --separate-stderr pd-admin --json metrics
	[ "$(printf '%s\n' "$output" | jq -r 'select(.name == "pendulum_workflow_runs" and .labels.workflow == "billing" and .labels.state == "WAITING") | .value')" = 1 ]
}

@test "the man pages document --workflow, the flow commands and the workflow tables" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	[[ "$(pd-enqueue --help)" == *"--workflow NAME"* ]]
	[[ "$(mandoc -T ascii "$PD_ROOT/man/pd-enqueue.1" | col -b)" == *"--workflow name"* ]]
	page=$(mandoc -T ascii "$PD_ROOT/man/pendulum.7" | col -b)
	for w in workflow_runs workflow_steps workflow_run_states start_workflow signal_workflow; do
		[[ "$page" == *"$w"* ]] || { echo "pendulum.7 lacks $w"; return 1; }
	done
}
