#!/usr/bin/env bats
# Durable workflows (DESIGN.md, Workflows): steps whose outputs are committed
# once, runs resumed where they stopped, sleeps and waits that free the worker.

load helpers
load flow
pd_db_hooks

setup() {
	reset_jobs
	D=$BATS_TEST_TMPDIR
	CFG=$D/pendulum.yaml
}

# child_exited PID: a child of PID has exited and waits to be reaped (PID is stopped).
child_exited() {
	ps -o stat= --ppid "$1" | grep -q '^Z'
}

@test "a 4-step run: each step sees the input and the earlier outputs, and its own name" {
	cat >"$CFG" <<EOF
workflows:
  four:
    steps:
      - name: a
        run: '$(step a)'
      - name: b
        run: '$(step b)'
      - name: c
        run: '$(step c)'
      - name: d
        run: '$(step d)'
EOF
	id=$(start four '{"order": 7}')
	worker w1 -j 2
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $(run_job "$id")" SUCCEEDED
	same_json "$(cat "$D/a.in")" '{"input": {"order": 7}, "outputs": {}}'
	same_json "$(cat "$D/c.in")" '{"input": {"order": 7}, "outputs": {"a": {"step": "a", "n": 1}, "b": {"step": "b", "n": 1}}}'
	same_json "$(cat "$D/d.in")" '{"input": {"order": 7}, "outputs": {"a": {"step": "a", "n": 1}, "b": {"step": "b", "n": 1}, "c": {"step": "c", "n": 1}}}'
	[ "$(cat "$D/c.env")" = "$id four c 2" ]
	# the run's result is the last step's output; every step stored once
	same_json "$(sql "SELECT result FROM pendulum.jobs WHERE id = $(run_job "$id")")" '{"step": "d", "n": 1}'
	[ "$(sql "SELECT string_agg(step_name || ':' || attempts, ' ' ORDER BY step_index) FROM pendulum.workflow_steps WHERE run_id = $id")" = "a:1 b:1 c:1 d:1" ]
	[ "$(sql "SELECT array_to_string(steps, ',') || ' ' || position FROM pendulum.workflow_runs WHERE id = $id")" = "a,b,c,d 4" ]
	[ "$(run_state "$id")" = SUCCEEDED ]
	for s in a b c d; do [ "$(lines "$D/$s.count")" = 1 ]; done
	# flow show lists each step with its output
	run pd-admin flow show "$id" --json
	[ "$status" -eq 0 ]
	[ "$(jq -c '[.steps[] | [.name, .state, .attempts, .output.n]]' <<<"$output")" = '[["a","done",1,1],["b","done",1,1],["c","done",1,1],["d","done",1,1]]' ]
}

@test "pd-enqueue --workflow --wait starts a run and prints its last output" {
	cat >"$CFG" <<EOF
workflows:
  two:
    steps:
      - name: a
        run: 'jq -c "{twice: (.input.x * 2)}"'
      - name: b
        run: 'jq -c "{plus_one: (.outputs.a.twice + 1)}"'
EOF
	worker w1 -j 1
	run --separate-stderr pd-enqueue -c "$CFG" --workflow two --wait --print-id '{"x": 20}'
	[ "$status" -eq 0 ]
	[ "$stderr" = "$(sql "SELECT max(id) FROM pendulum.workflow_runs")" ]
	[ "$output" = '{"plus_one":41}' ]
	# a workflow the config does not define starts nothing
	run --separate-stderr pd-enqueue -c "$CFG" --workflow too '{}'
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unknown workflow 'too'"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.workflow_runs")" = 1 ]
	# a job of a workflow's type with no run behind it is dead-lettered, saying why
	job=$(sql "SELECT pendulum.enqueue('default', 'workflow:two', '{}')")
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" DEAD_LETTERED
	[[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $job")" == "no workflow run drives this job"* ]]
}

@test "kill -9 of the worker in step 3: steps 1 and 2 are not run again, step 3 at most twice" {
	# step c's first run signals that it started, then hangs until killed
	cat >"$CFG" <<EOF
workflows:
  crashy:
    steps:
      - name: a
        run: '$(step a)'
      - name: b
        run: '$(step b)'
      - name: c
        run: '$(step c "if [ \$(wc -l <$D/c.count) -eq 1 ]; then touch $D/c.started; sleep 600; fi")'
      - name: d
        run: '$(step d)'
EOF
	id=$(start crashy)
	worker w1 -j 1
	wait_for 30 test -e "$D/c.started"
	kill -KILL "$(bg_pid w1)"
	worker w2 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $(run_job "$id")" SUCCEEDED
	[ "$(lines "$D/a.count")" = 1 ]
	[ "$(lines "$D/b.count")" = 1 ]
	[ "$(lines "$D/c.count")" = 2 ]
	[ "$(lines "$D/d.count")" = 1 ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $(run_job "$id") AND outcome = 'lease_expired'")" = lease_expired ]
	same_json "$(cat "$D/d.in")" '{"input": null, "outputs": {"a": {"step": "a", "n": 1}, "b": {"step": "b", "n": 1}, "c": {"step": "c", "n": 2}}}'
}

@test "a stalled worker finishes a step after a live one took it over: nothing of its write is stored, the run goes on from the live worker's output" {
	# b's first run (w1's) waits for gate1, its second (w2's) for gate2; each prints its token
	cat >"$CFG" <<EOF
workflows:
  twice:
    steps:
      - name: a
        run: '$(step a)'
      - name: b
        run: 'echo x >>$D/b.count; g=$D/gate\$(wc -l <$D/b.count); while [ ! -e \$g ]; do sleep 0.05; done; echo "{\"token\": \$PD_LEASE_TOKEN}"'
      - name: c
        run: '$(step c)'
EOF
	id=$(start twice)
	job=$(run_job "$id")
	worker w1 -j 1 --no-reap
	wait_for 30 lines_at_least "$D/b.count" 1
	kill -STOP "$(bg_pid w1)"
	token1=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $job")
	wait_for 30 sql_is "SELECT lease_expires_at < now() FROM pendulum.jobs WHERE id = $job" t
	run pd-reaper --once
	[ "$status" -eq 0 ]
	worker w2 -j 1 --no-reap
	wait_for 30 lines_at_least "$D/b.count" 2
	token2=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $job")
	[ "$token2" -gt "$token1" ]
	before=$(fenced)
	# the stalled worker's handler ends first, while w2 holds the lease: its write is fenced
	touch "$D/gate1"
	wait_for 30 child_exited "$(bg_pid w1)"
	kill -CONT "$(bg_pid w1)"
	wait_for 30 sql_is "SELECT value > $before FROM pendulum.counters WHERE name = 'writes_fenced'" t
	wait_for 10 grep -q 'fenced' "$BATS_FILE_TMPDIR/w1.log"
	stop_worker w1
	# nothing of the run is w1's: no step b stored, the position still at b
	[ "$(sql "SELECT count(*) FROM pendulum.workflow_steps WHERE run_id = $id AND step_index = 1")" = 0 ]
	[ "$(sql "SELECT position FROM pendulum.workflow_runs WHERE id = $id")" = 1 ]
	wait_for 10 sql_is "SELECT state || ' ' || lease_token FROM pendulum.jobs WHERE id = $job" "RUNNING $token2"
	# the live worker's b ends: its output is the one stored, and c sees it
	touch "$D/gate2"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	[ "$(lines "$D/b.count")" = 2 ]
	[ "$(lines "$D/c.count")" = 1 ]
	[ "$(sql "SELECT position FROM pendulum.workflow_runs WHERE id = $id")" = 3 ]
	same_json "$(sql "SELECT output FROM pendulum.workflow_steps WHERE run_id = $id AND step_index = 1")" "{\"token\": $token2}"
	[ "$(sql "SELECT lease_token FROM pendulum.workflow_steps WHERE run_id = $id AND step_index = 1")" = "$token2" ]
	same_json "$(cat "$D/c.in")" "{\"input\": null, \"outputs\": {\"a\": {\"step\": \"a\", \"n\": 1}, \"b\": {\"token\": $token2}}}"
}

@test "a step already stored at the run's position: the first insert wins, and the run goes on from it" {
	# Under the fence only the lease holder writes, so two workers can no
	# longer both store a step; the primary key still keeps the first output.
	cat >"$CFG" <<EOF
workflows:
  stored:
    steps:
      - name: a
        run: '$(step a)'
      - name: b
        run: '$(step b)'
EOF
	id=$(start stored)
	sql "INSERT INTO pendulum.workflow_steps (run_id, step_index, step_name, kind, output)
	     VALUES ($id, 0, 'a', 'run', '{\"first\": true}')" >/dev/null
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $(run_job "$id")" SUCCEEDED
	[ "$(lines "$D/a.count")" = 1 ]
	same_json "$(sql "SELECT output FROM pendulum.workflow_steps WHERE run_id = $id AND step_index = 0")" '{"first": true}'
	same_json "$(cat "$D/b.in")" '{"input": null, "outputs": {"a": {"first": true}}}'
	[ "$(sql "SELECT position FROM pendulum.workflow_runs WHERE id = $id")" = 2 ]
}

@test "a sleep step frees the worker: another job runs meanwhile, the run resumes after it" {
	cat >"$CFG" <<EOF
workflows:
  nap:
    steps:
      - name: a
        run: '$(step a)'
      - name: rest
        sleep: 1h
      - name: b
        run: '$(step b)'
handlers:
  other:
    run: '$(step other)'
EOF
	id=$(start nap)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $id" SLEEPING
	# the sleep's end, an hour on (database clock), is when the run's job is due
	[ "$(sql "SELECT r.finished_at - r.started_at >= interval '1 h' AND j.run_at = r.finished_at
	          FROM pendulum.workflow_steps r, pendulum.jobs j
	          WHERE r.run_id = $id AND r.step_name = 'rest' AND j.id = $job")" = t ]
	other=$(sql "SELECT pendulum.enqueue('default', 'other', '{}')")
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $other" SUCCEEDED
	# the other job ran while the run slept: b had not run yet
	[ "$(lines "$D/b.count")" = 0 ]
	[ "$(run_state "$id")" = SLEEPING ]
	# the hour passes now: the sleep's end moved to now, in the run, its job and the step
	sql "UPDATE pendulum.workflow_runs SET sleep_until = now() WHERE id = $id;
	     UPDATE pendulum.jobs SET run_at = now() WHERE id = $job;
	     UPDATE pendulum.workflow_steps SET finished_at = now() WHERE run_id = $id AND step_name = 'rest'" >/dev/null
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	# b started after the sleep's end
	[ "$(sql "SELECT s.started_at >= r.finished_at FROM pendulum.workflow_steps s, pendulum.workflow_steps r
	          WHERE s.run_id = $id AND r.run_id = $id AND s.step_name = 'b' AND r.step_name = 'rest'")" = t ]
	# sleeping used no attempt
	[ "$(sql "SELECT attempts FROM pendulum.workflow_steps WHERE run_id = $id AND step_name = 'b'")" = 1 ]
}

wait_config() {
	cat >"$CFG" <<EOF
workflows:
  approve:
    steps:
      - name: a
        run: '$(step a "${1:-}")'
      - name: approval
        wait_for: approved
        timeout: ${2:-1h}
      - name: b
        run: '$(step b)'
EOF
}

@test "wait_for: the run waits without a worker slot; a signal's payload resumes it" {
	wait_config
	id=$(start approve)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $id" WAITING
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $job")" = PENDING ]
	[ "$(sql "SELECT run_at > now() + interval '50 min' FROM pendulum.jobs WHERE id = $job")" = t ]
	[ "$(lines "$D/b.count")" = 0 ]
	[ "$(sql "SELECT pendulum.signal_workflow($id, 'approved', '{\"by\": \"alice\"}')")" = t ]
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	same_json "$(cat "$D/b.in")" '{"input": null, "outputs": {"a": {"step": "a", "n": 1}, "approval": {"by": "alice"}}}'
	[ "$(sql "SELECT signals FROM pendulum.workflow_runs WHERE id = $id")" = "{}" ]
}

@test "wait_for: a signal sent before the run reaches the step is kept and consumed there" {
	wait_config "while [ ! -e $D/gate ]; do sleep 0.05; done"
	id=$(start approve)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 lines_at_least "$D/a.count" 1
	[ "$(sql "SELECT pendulum.signal_workflow($id, 'approved', '\"early\"')")" = f ]
	touch "$D/gate"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	same_json "$(sql "SELECT output FROM pendulum.workflow_steps WHERE run_id = $id AND step_name = 'approval'")" '"early"'
	[ "$(sql "SELECT signals FROM pendulum.workflow_runs WHERE id = $id")" = "{}" ]
}

@test "wait_for: past its timeout the run is dead-lettered with a reason" {
	wait_config "" 1s
	id=$(start approve)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" DEAD_LETTERED
	[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $job")" = "step 'approval' timed out after 1s waiting for signal 'approved'" ]
	[ "$(run_state "$id")" = DEAD_LETTERED ]
	[ "$(lines "$D/b.count")" = 0 ]
	# a signal to a run that is over is refused
	run sql "SELECT pendulum.signal_workflow($id, 'approved')"
	[ "$status" -ne 0 ]
	[[ "$output" == *"is over (DEAD_LETTERED)"* ]]
}

@test "a definition with a step removed before the resume point dead-letters the run, naming it" {
	wait_config
	id=$(start approve)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.workflow_run_states WHERE run_id = $id" WAITING
	stop_worker w1
	# the new definition lost step a
	cat >"$CFG" <<EOF
workflows:
  approve:
    steps:
      - name: approval
        wait_for: approved
      - name: b
        run: '$(step b)'
EOF
	worker w2 -j 1
	sql "SELECT pendulum.signal_workflow($id, 'approved')"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" DEAD_LETTERED
	[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $job")" = "workflow 'approve' changed under the run: step 1 'a' is no longer in the definition" ]
	[ "$(lines "$D/b.count")" = 0 ]
	[ "$(lines "$D/a.count")" = 1 ]
}

@test "a failing step dead-letters the run; replayed after the fix, it resumes at that step" {
	cat >"$CFG" <<EOF
retry:
  base: 50ms
  cap: 100ms
workflows:
  fragile:
    steps:
      - name: a
        run: '$(step a)'
      - name: b
        run: '$(step b "[ -e $D/fixed ] || exit 1")'
      - name: c
        run: '$(step c)'
EOF
	id=$(start fragile null 2)
	job=$(run_job "$id")
	worker w1 -j 1
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" DEAD_LETTERED
	[ "$(sql "SELECT dead_reason FROM pendulum.jobs WHERE id = $job")" = "attempts exhausted" ]
	[ "$(lines "$D/b.count")" = 2 ]
	touch "$D/fixed"
	run pd-admin job replay "$job"
	[ "$status" -eq 0 ]
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	[ "$(lines "$D/a.count")" = 1 ]
	[ "$(lines "$D/b.count")" = 3 ]
	[ "$(lines "$D/c.count")" = 1 ]
	same_json "$(cat "$D/c.in")" '{"input": null, "outputs": {"a": {"step": "a", "n": 1}, "b": {"step": "b", "n": 3}}}'
}

@test "the claim's context reads with a snapshot of its own (a run committed after the claim's statement began is seen)" {
	# The claim's statement calls pendulum.workflow_context for a job that
	# claim_jobs_fair, volatile, may take although its run committed after
	# the statement's snapshot. A STABLE workflow_context would read the run
	# with that older snapshot and find none (the worker then dead-letters
	# the job: "no workflow run drives this job"), as make check once showed
	# under load. Here a statement of the claim's shape begins, waits on a
	# gate while the run commits, then reads the context.
	job=$(make_job PENDING default workflow:snap)
	sql "CREATE TABLE IF NOT EXISTS snap_gate (open boolean); TRUNCATE snap_gate;
	     CREATE OR REPLACE FUNCTION snap_wait(j bigint) RETURNS bigint LANGUAGE plpgsql VOLATILE AS
	     \$\$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM snap_gate) LOOP PERFORM pg_sleep(0.02); END LOOP;
	     RETURN j; END \$\$"
	start_psql pd-ctx \
		-c "SELECT pendulum.workflow_context(g.j) ->> 'run' FROM (SELECT snap_wait($job) AS j OFFSET 0) g"
	wait_for 20 backend_waiting pd-ctx snap_wait
	run=$(sql "INSERT INTO pendulum.workflow_runs (workflow, job_id) VALUES ('snap', $job) RETURNING id")
	sql "INSERT INTO snap_gate VALUES (true)"
	wait_bg pd-ctx 20
	[ "$(bg_out pd-ctx)" = "$run" ]
}
