#!/usr/bin/env bats
# The claim's fast path (sql/030_fast_claim.sql): a claim of one queue with
# no limit, no tenant weight, no parked job and one tenant at one level is
# taken in one statement, without the fairness walk. It must hand out what
# the walk would: the same rows in the same order, the same cursor, full or
# short. A limit on a key no job uses makes the same claim take the walk
# (the fast path is only for "no limit exists"), so each claim is made twice
# from the same backlog, in transactions rolled back, and compared. The
# number of statements the claim runs shows which path it took.

# SQL is single-quoted on purpose.
# shellcheck disable=SC2016

load helpers

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	# queue fq, tenant solo, priority 0: 6 due jobs whose run_at order is
	# not their id order, 2 future-dated, 1 whose start deadline has passed
	# (never claimed: skipped); queue two: 2 levels.
	sql "INSERT INTO pendulum.jobs (tenant_id, queue, job_type, run_at)
	     SELECT 'solo', 'fq', 't', now() - (g * 7 % 6) * interval '1 min'
	       FROM generate_series(1, 6) g;
	     INSERT INTO pendulum.jobs (tenant_id, queue, job_type, run_at)
	     SELECT 'solo', 'fq', 't', now() + interval '1 hour' FROM generate_series(1, 2);
	     INSERT INTO pendulum.jobs (tenant_id, queue, job_type, run_at, start_by)
	     VALUES ('solo', 'fq', 't', now() - interval '1 hour', now() - interval '1 min');
	     INSERT INTO pendulum.jobs (tenant_id, queue, job_type, priority)
	     SELECT 'solo', 'two', 't', g % 2 FROM generate_series(1, 4) g" >/dev/null
}

teardown_file() {
	pd_teardown_db
}

# claim QUEUE N FAIR [LIMITED]: in a transaction rolled back (with a limit on
# an unused key when LIMITED), pendulum.claim_jobs_fair('{QUEUE}', NULL, N,
# ...) from cursor FAIR; prints the ids in the order the worker takes them,
# the cursor it returned, and the number of statements it ran (auto_explain).
claim() {
	local limit="" log=$BATS_TEST_TMPDIR/explain.log
	[ -n "${4:-}" ] && limit="INSERT INTO pendulum.limits (key, concurrency) VALUES ('type:unused', 1000);"
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" 2>"$log" <<-EOF
		LOAD 'auto_explain';
		SET auto_explain.log_nested_statements = on;
		SET auto_explain.log_format = json;
		SET client_min_messages = log;
		BEGIN;
		$limit
		SET auto_explain.log_min_duration = 0;
		CREATE TEMP TABLE c ON COMMIT DROP AS
		SELECT (c.job).id, (c.job).priority, (c.job).run_at, c.fair_next
		  FROM pendulum.claim_jobs_fair('{$1}', NULL, $2, 'w', '30 s', false, $3) c;
		SET auto_explain.log_min_duration = -1;
		SELECT COALESCE(string_agg(id::text, ' ' ORDER BY priority DESC, run_at, id), '-') FROM c;
		SELECT COALESCE(min(fair_next::text), '-') FROM c;
		ROLLBACK;
	EOF
	sed -n '/^{/,/^}/p' "$log" | jq -s '[.[] | select(."Query Text" | test("claim_jobs_fair\\(") | not)] | length'
}

# same QUEUE N FAIR: the fast claim and the walk's give the same ids and
# cursor; the fast one ran fewer statements.
same() {
	local fast walk
	fast=$(claim "$@")
	walk=$(claim "$@" limited)
	echo "fast: $fast" | tr '\n' ' '
	echo
	echo "walk: $walk" | tr '\n' ' '
	echo
	[ "$(echo "$fast" | sed -n 1,2p)" = "$(echo "$walk" | sed -n 1,2p)" ]
	[ "$(echo "$fast" | sed -n 3p)" -lt "$(echo "$walk" | sed -n 3p)" ]
}

@test "a full claim of 4: the same 4 rows in run_at order and the same cursor as the walk's" {
	same fq 4 "'{\"fq\": [1, \"solo\"]}'"
	[ "$(claim fq 4 NULL | sed -n 2p)" = '{"fq": [1, "solo"]}' ]
}

@test "a short claim of 10: the 6 due rows (not the future ones, not the late start) and the walk's cursor" {
	same fq 10 NULL
	[ "$(claim fq 10 NULL | sed -n 1p | wc -w)" -eq 6 ]
	[ "$(claim fq 10 NULL | sed -n 2p)" = '{"fq": [1000000, "solo"]}' ]
}

@test "a claim of 1, the cursor of another queue kept: the walk's row and cursor" {
	same fq 1 "'{\"other\": [1, \"x\"]}'"
	[ "$(claim fq 1 "'{\"other\": [1, \"x\"]}'" | sed -n 2p)" = '{"fq": [1, "solo"], "other": [1, "x"]}' ]
}

@test "two levels, or a cursor that still gives its tenant a turn: the walk, more statements than the fast path's" {
	fast=$(claim fq 2 NULL | sed -n 3p)
	[ "$(claim two 3 NULL | sed -n 3p)" -gt "$fast" ]
	[ "$(claim fq 2 "'{\"fq\": [0, \"solo\"]}'" | sed -n 3p)" -gt "$fast" ]
}

@test "an empty queue: no row and no cursor, as the walk's" {
	same none 3 NULL
	[ "$(claim none 3 NULL | sed -n 1,2p | tr '\n' ' ')" = "- - " ]
}
