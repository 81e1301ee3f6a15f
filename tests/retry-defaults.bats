#!/usr/bin/env bats
# The default retry budget (sql/014): 25 attempts however a job is
# enqueued, unless it says otherwise; the schedule's span is a unit test
# (tests/unit/retry_test.c).

load helpers
pd_db_hooks

@test "a job that names no maximum gets 25 attempts, however it is enqueued" {
	a=$(pd-enqueue t '{}')
	b=$(echo '{"type": "t"}' | pd-enqueue --ndjson)
	c=$(sql "SELECT pendulum.enqueue('default', 't', '{}')")
	d=$(sql "SELECT (pendulum.enqueue_many('[{\"type\": \"t\"}]'))[1]")
	e=$(sql "INSERT INTO pendulum.jobs (job_type, payload) VALUES ('t', '{}') RETURNING id")
	r=$(sql "SELECT pendulum.start_workflow('default', 'w')")
	f=$(sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $r")
	[ "$(sql "SELECT string_agg(max_attempts::text, ' ' ORDER BY id) FROM pendulum.jobs
	          WHERE id IN ($a, $b, $c, $d, $e, $f)")" = "25 25 25 25 25 25" ]
}

@test "a job's own maximum is kept" {
	a=$(pd-enqueue --max-attempts 3 t '{}')
	b=$(echo '{"type": "t", "max_attempts": 7}' | pd-enqueue --ndjson)
	c=$(sql "SELECT pendulum.enqueue('default', 't', '{}', max_attempts => 2)")
	[ "$(sql "SELECT string_agg(max_attempts::text, ' ' ORDER BY id) FROM pendulum.jobs
	          WHERE id IN ($a, $b, $c)")" = "3 7 2" ]
}
