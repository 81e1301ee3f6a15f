# shellcheck shell=bash
# Workflow test helpers (workflow.bats, contract-flow.bats), loaded after
# helpers.bash; they use $D (the test's directory) and $CFG (its config).

# step NAME [AFTER]: a step's shell command: counts its run in $D/NAME.count,
# keeps its stdin in $D/NAME.in and its environment's workflow variables in
# $D/NAME.env, runs AFTER if given (an `exit` there ends the step with that
# status), then prints {"step": NAME, "n": COUNT}.
step() {
	# shellcheck disable=SC2016 # expanded by the step's shell
	printf 'echo x >>%s/%s.count; cat >%s/%s.in; echo "$PD_WORKFLOW_RUN_ID $PD_WORKFLOW $PD_STEP_NAME $PD_STEP_INDEX" >%s/%s.env; %s printf "{\\"step\\": \\"%s\\", \\"n\\": %%s}" "$(wc -l <%s/%s.count)"' \
		"$D" "$1" "$D" "$1" "$D" "$1" "${2:+$2;}" "$1" "$D" "$1"
}

# start NAME [INPUT [MAX_ATTEMPTS]]: a run of workflow NAME by SQL; prints its id.
start() {
	sql "SELECT pendulum.start_workflow('default', '$1', '${2:-null}'::jsonb,
	       max_attempts => ${3:-5})"
}

# run_job RUN: the job of a workflow run.
run_job() {
	sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $1"
}

# run_state RUN: the run's state.
run_state() {
	sql "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $1"
}

# worker NAME ARGS...: pd-worker on $CFG, short leases and polls.
worker() {
	local name=$1
	shift
	start_worker "$name" -c "$CFG" --lease 2s --heartbeat 500ms --poll 200ms "$@"
}

# same_json A B: the two JSON texts are equal as jsonb.
same_json() {
	[ "$(sql "SELECT '$1'::jsonb = '$2'::jsonb")" = t ]
}
