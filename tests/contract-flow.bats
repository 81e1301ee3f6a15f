#!/usr/bin/env bats
# Workflow promises of DESIGN (Workflows) that workflow.bats leaves open:
# a wait uses no attempt (the step after it keeps its whole budget); the
# position only moves on (a step write behind it never moves it back); a
# definition whose steps were renamed or reordered up to the run's
# position dead-letters the run with a reason, while a change past the
# position is simply followed.

load helpers
load flow
pd_db_hooks

setup() {
	reset_jobs
	D=$BATS_TEST_TMPDIR
	CFG=$D/pendulum.yaml
}

# approve_config [FIRST SECOND]: a, the wait_for step approval, then b; the
# first two steps' names and order as given (default: a approval).
approve_config() {
	local first=${1:-a} second=${2:-approval}
	{
		echo "workflows:"
		echo "  approve:"
		echo "    steps:"
		for s in "$first" "$second"; do
			if [ "$s" = approval ]; then
				printf '      - name: approval\n        wait_for: approved\n'
			else
				printf "      - name: %s\n        run: '%s'\n" "$s" "$(step "$s")"
			fi
		done
		printf "      - name: b\n        run: '%s'\n" "$(step b)"
	} >"$CFG"
}

# parked_run: a run of approve, on $CFG as it is, taken by a worker up to
# its wait, the worker then stopped; sets id (the run) and job (its job).
parked_run() {
	id=$(start approve)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $id" WAITING
	stop_worker w1
}

# approve_signalled: a new worker on $CFG as it is now, and the run's wait
# signalled.
approve_signalled() {
	worker w2 -j 1
	sql "SELECT pendulum.signal_workflow($id, 'approved')"
}

@test "a wait uses no attempt: parked at attempt 0, the step after it still gets its whole budget of 2" {
	cat >"$CFG" <<EOF
workflows:
  approve:
    steps:
      - name: a
        run: '$(step a)'
      - name: approval
        wait_for: approved
      - name: b
        run: '$(step b "[ \$(wc -l <$D/b.count) -ge 2 ] || exit 1")'
EOF
	id=$(start approve null 2)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $id" WAITING
	# the claim that reached the wait took attempt 1; parking gave it back
	[ "$(sql "SELECT state, attempt FROM pendulum.jobs WHERE id = $job")" = "PENDING|0" ]
	[ "$(sql "SELECT pendulum.signal_workflow($id, 'approved')")" = t ]
	# b fails its first try and succeeds its second: both within max_attempts 2
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	[ "$(lines "$D/b.count")" = 2 ]
	[ "$(sql "SELECT attempts FROM pendulum.workflow_steps WHERE run_id = $id AND step_name = 'b'")" = 2 ]
	[ "$(run_state "$id")" = SUCCEEDED ]
}

@test "a step write behind the run's position never moves it back: the steps already past are not run again" {
	cat >"$CFG" <<EOF
workflows:
  four:
    steps:
      - name: a
        run: '$(step a "while [ ! -e $D/gate ]; do sleep 0.05; done")'
      - name: b
        run: '$(step b)'
      - name: c
        run: '$(step c)'
      - name: d
        run: '$(step d)'
EOF
	id=$(start four)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 lines_at_least "$D/a.count" 1
	# While a runs under the current lease, the run moves on past a and b
	# (as a write that raced it would have left it): position 2.
	sql "INSERT INTO pendulum.workflow_steps (run_id, step_index, step_name, kind, output)
	     VALUES ($id, 0, 'a', 'run', '{\"first\": \"a\"}'), ($id, 1, 'b', 'run', '{\"first\": \"b\"}');
	     UPDATE pendulum.workflow_runs SET position = 2 WHERE id = $id"
	# a's write, for step 0, now lands behind the position
	touch "$D/gate"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	# the run went on from 2: c and d ran once each, b never
	[ "$(lines "$D/c.count")" = 1 ]
	[ "$(lines "$D/d.count")" = 1 ]
	[ "$(lines "$D/b.count")" = 0 ]
	[ "$(lines "$D/a.count")" = 1 ]
	same_json "$(cat "$D/c.in")" '{"input": null, "outputs": {"a": {"first": "a"}, "b": {"first": "b"}}}'
	[ "$(sql "SELECT position FROM pendulum.workflow_runs WHERE id = $id")" = 4 ]
	[ "$(run_state "$id")" = SUCCEEDED ]
}

@test "a step renamed before the run's position dead-letters the run, naming the step; nothing after it runs" {
	approve_config
	parked_run
	# the new definition calls step a "prepare"
	approve_config prepare approval
	approve_signalled
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" DEAD_LETTERED
	[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $job")" = "workflow 'approve' changed under the run: step 1 'a' is no longer in the definition" ]
	[ "$(run_state "$id")" = DEAD_LETTERED ]
	[ "$(lines "$D/prepare.count")" = 0 ]
	[ "$(lines "$D/b.count")" = 0 ]
	[ "$(lines "$D/a.count")" = 1 ]
}

@test "steps reordered before the run's position dead-letter the run, naming where each is now; nothing runs" {
	approve_config
	parked_run
	# the new definition waits first, then runs a
	approve_config approval a
	approve_signalled
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" DEAD_LETTERED
	[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $job")" = "workflow 'approve' changed under the run: step 1 is 'a' in the run but 'approval' in the definition (step 'a' moved to 2)" ]
	[ "$(run_state "$id")" = DEAD_LETTERED ]
	[ "$(lines "$D/a.count")" = 1 ]
	[ "$(lines "$D/b.count")" = 0 ]
}

@test "a step renamed past the run's position is followed: the run goes on with the new definition" {
	approve_config
	parked_run
	# step b, not reached yet, is now "finish"
	sed -i 's/- name: b$/- name: finish/; s/b\.count/finish.count/; s/b\.in/finish.in/' "$CFG"
	grep -q 'name: finish' "$CFG"
	approve_signalled
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	[ "$(lines "$D/finish.count")" = 1 ]
	[ "$(lines "$D/b.count")" = 0 ]
	[ "$(sql "SELECT string_agg(step_name, ' ' ORDER BY step_index) FROM pendulum.workflow_steps WHERE run_id = $id")" = "a approval finish" ]
}
