#!/usr/bin/env bats
# pd-enqueue(1) --json: each job's row of pendulum.jobs as a JSON object, one
# a line, instead of its id; in input order with --ndjson; a repeated
# idempotency key prints the existing job's row.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

# row ID: the job's row as the database has it, keys sorted.
row() {
	sql "SELECT row_to_json(j) FROM pendulum.jobs j WHERE id = $1" | jq -S -c .
}

@test "pd-enqueue --json prints the new job's row, the database's, not its id" {
	run --separate-stderr pd-enqueue --json -q q1 -p 5 t '{"a": 1}'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	id=$(printf '%s\n' "$output" | jq -r .id)
	[ "$(sql "SELECT job_type || '/' || queue || '/' || priority FROM pendulum.jobs WHERE id = $id")" = t/q1/5 ]
	[ "$(printf '%s\n' "$output" | jq -S -c .)" = "$(row "$id")" ]
}

@test "pd-enqueue --ndjson --json: a row a line, in input order" {
	run --separate-stderr pd-enqueue --ndjson --json <<<'{"type": "a"}
{"type": "b", "payload": {"x": 2}}
{"type": "c"}'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	json_lines_ok
	[ "$(printf '%s\n' "$output" | jq -r .job_type | tr '\n' ' ')" = "a b c " ]
	for l in "${lines[@]}"; do
		[ "$(printf '%s\n' "$l" | jq -S -c .)" = "$(row "$(printf '%s\n' "$l" | jq -r .id)")" ]
	done
	[ "$(njobs)" -eq 3 ]
}

@test "pd-enqueue --json with a repeated idempotency key: the existing job's row, unchanged" {
	first=$(pd-enqueue --json -k k1 t '{"n": 1}')
	run --separate-stderr pd-enqueue --json -k k1 t '{"n": 2}'
	[ "$status" -eq 0 ]
	[ "$output" = "$first" ]
	[ "$stderr" = "pd-enqueue: idempotency key already used in tenant 'default': existing job $(printf '%s\n' "$first" | jq -r .id)" ]
	[ "$(printf '%s\n' "$output" | jq -c .payload)" = '{"n":1}' ]
	[ "$(njobs)" -eq 1 ]
}
