#!/usr/bin/env bats
# The job claim (pendulum.claim_jobs, sql/005_claim.sql) is an index walk
# whatever the backlog: on 340,000 PENDING jobs over 10 queues, 3 priority
# levels, about a third future-dated, a claim of 8 from 1 or from 3 queues
# reads a few dozen buffers, sorts nothing but the rows it is about to take,
# and takes exactly the first 8 in the order priority DESC, run_at, id. Its
# plan is the one really executed (auto_explain, nested statements, JSON), and
# every claim is rolled back, so that the backlog stays as seeded.

# SQL is single-quoted on purpose; run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	# q0..q9, types t0..t3, priorities 10, 0 and -10 (0 twice as often), 30 %
	# future-dated; the top level of q9 is all future-dated, and large.
	sql "SELECT setseed(0.25);
	     INSERT INTO pendulum.jobs (queue, job_type, priority, run_at)
	     SELECT queue, 't' || (g % 4), priority,
	            CASE WHEN (queue = 'q9' AND priority = 10) OR random() < 0.3
	                 THEN now() + interval '1 day' + random() * interval '1 day'
	                 ELSE now() - random() * interval '1 day' END
	       FROM (SELECT g, 'q' || (g % 10) AS queue,
	                    (ARRAY[10, 0, 0, -10])[1 + floor(random() * 4)::int] AS priority
	               FROM generate_series(1, 300000) g) s;
	     INSERT INTO pendulum.jobs (queue, job_type, priority, run_at)
	     SELECT 'q9', 't' || (g % 4), 10, now() + interval '1 day' + g * interval '1 s'
	       FROM generate_series(1, 40000) g;
	     INSERT INTO pendulum.jobs (queue, job_type) VALUES ('small', 't0'), ('small', 't1');
	     ANALYZE pendulum.jobs;
	     CREATE TABLE gate (open boolean)" >/dev/null
}

teardown_file() {
	pd_teardown_db
}

setup() {
	PLAN=$BATS_TEST_TMPDIR/plan.json
}

teardown() {
	sql "INSERT INTO gate VALUES (true)" # let a background transaction end
}

# claim QUEUES [TYPES [START]]: in one transaction, rolled back: the first 8
# runnable jobs of QUEUES (and TYPES, an array literal or NULL) by a plain
# query, then pendulum.claim_jobs(QUEUES, TYPES, 8, ...). Prints two lines,
# the ids of each in claim order. The claim statement's plan goes to $PLAN.
claim() {
	local q=$1 t=${2:-NULL} start=${3:-false} log=$BATS_TEST_TMPDIR/explain.log
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" 2>"$log" <<-EOF
		LOAD 'auto_explain';
		SET auto_explain.log_nested_statements = on;
		SET auto_explain.log_analyze = on;
		SET auto_explain.log_buffers = on;
		SET auto_explain.log_timing = off;
		SET auto_explain.log_format = json;
		SET client_min_messages = log;
		BEGIN;
		SELECT string_agg(id::text, ' ' ORDER BY priority DESC, run_at, id) FROM (
		    SELECT id, priority, run_at FROM pendulum.jobs
		     WHERE state = 'PENDING' AND queue = ANY ('$q') AND run_at <= now()
		       AND ($t::text[] IS NULL OR job_type = ANY ($t::text[]))
		     ORDER BY priority DESC, run_at, id LIMIT 8) s;
		SET auto_explain.log_min_duration = 0;
		SELECT string_agg(id::text, ' ' ORDER BY priority DESC, run_at, id)
		  FROM pendulum.claim_jobs('$q', $t, 8, 'w', '30 s', $start);
		SET auto_explain.log_min_duration = -1;
		ROLLBACK;
	EOF
	# Each plan is a JSON object from a "{" line to a "}" line; the claim's is
	# the one whose text takes a lease token.
	sed -n '/^{/,/^}/p' "$log" | jq -s '[.[] | select(."Query Text" | test("lease_token_seq"))] | first' >"$PLAN"
}

# plan JQ: evaluate JQ on the claim's plan.
plan() {
	jq -r "$1" "$PLAN"
}

# Nodes of the plan; a node's shared buffers (hit + read, its subtree's).
NODES='[.Plan | .. | objects | select(has("Node Type"))]'
BUFS='((."Shared Hit Blocks" // 0) + (."Shared Read Blocks" // 0))'

bitmap_scans() {
	plan "$NODES | map(select(.\"Node Type\" | startswith(\"Bitmap\"))) | length"
}

seq_scans_of_jobs() {
	plan "$NODES | map(select(.\"Node Type\" == \"Seq Scan\" and .\"Relation Name\" == \"jobs\")) | length"
}

# The most rows any Sort was given (input rows of its child, over all loops).
largest_sort() {
	plan "$NODES | map(select(.\"Node Type\" == \"Sort\") | .Plans[0] | .\"Actual Rows\" * .\"Actual Loops\") | max // 0"
}

# The buffers of the walk (the CTE that picks and locks the rows) and of the
# whole statement (the update, which includes the walk, and the insert).
walk_buffers() {
	plan "$NODES | map(select(.\"Subplan Name\" == \"CTE c\") | $BUFS) | first // 999999"
}

statement_buffers() {
	plan "$NODES | map(select(.\"Node Type\" == \"ModifyTable\") | $BUFS) | add // 999999"
}

@test "the seeded backlog is what the other tests assume" {
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING'")" -eq 340002 ]
	[ "$(sql "SELECT count(*) FILTER (WHERE run_at > now()) * 100 / count(*) FROM pendulum.jobs")" -ge 30 ]
	[ "$(sql "SELECT count(DISTINCT priority) FROM pendulum.jobs WHERE queue = 'q1'")" -eq 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'q9' AND priority = 10 AND run_at <= now()")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'q9' AND priority = 10")" -gt 40000 ]
}

@test "a claim of 8 from 1 queue walks the index: no bitmap scan, no sort of the backlog, few buffers" {
	run --separate-stderr claim '{q1}'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "${lines[1]}" = "${lines[0]}" ]
	[ "$(plan '."Query Text" | length')" -gt 0 ]
	[ "$(bitmap_scans)" -eq 0 ]
	[ "$(seq_scans_of_jobs)" -eq 0 ]
	[ "$(largest_sort)" -le 8 ]
	[ "$(walk_buffers)" -lt 64 ]
	[ "$(statement_buffers)" -lt 500 ]
}

@test "a claim of 8 from 3 queues: the same, and the exact order across the queues" {
	run --separate-stderr claim '{q1,q2,q3}'
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "${lines[1]}" = "${lines[0]}" ]
	[ "$(bitmap_scans)" -eq 0 ]
	[ "$(seq_scans_of_jobs)" -eq 0 ]
	[ "$(largest_sort)" -le 24 ]
	[ "$(walk_buffers)" -lt 160 ]
	[ "$(statement_buffers)" -lt 600 ]
}

@test "a top priority level with only future rows left is stepped over, not read" {
	run --separate-stderr claim '{q9}'
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "${lines[1]}" = "${lines[0]}" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE priority = 0
	          AND id IN ($(tr ' ' ',' <<<"${lines[1]}"))")" -eq 8 ]
	[ "$(bitmap_scans)" -eq 0 ]
	[ "$(largest_sort)" -le 8 ]
	[ "$(walk_buffers)" -lt 64 ]
}

@test "with a type filter, a queue listed twice, and a queue with 2 jobs" {
	run --separate-stderr claim '{q4,small,q4}' "'{t0,t1}'"
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "${lines[1]}" = "${lines[0]}" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type IN ('t0', 't1')
	          AND id IN ($(tr ' ' ',' <<<"${lines[1]}"))")" -eq 8 ]
	[ "$(bitmap_scans)" -eq 0 ]
	[ "$(largest_sort)" -le 24 ]
	[ "$(walk_buffers)" -lt 160 ]
}

@test "what a claim writes: LEASED, or RUNNING with start; a token, attempt + 1 and an attempt row each" {
	run --separate-stderr psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" <<-'EOF'
		BEGIN;
		SELECT string_agg(state || ' ' || (started_at IS NULL) || ' ' || attempt || ' '
		                  || lease_owner || ' ' || (lease_expires_at = now() + interval '30 s'),
		                  ',' ORDER BY id)
		  FROM pendulum.claim_jobs('{small}', NULL, 1, 'w1', '30 s');
		SELECT string_agg(state || ' ' || (started_at = now()) || ' ' || attempt || ' '
		                  || lease_owner || ' ' || (lease_expires_at = now() + interval '1 min'),
		                  ',' ORDER BY id)
		  FROM pendulum.claim_jobs('{small}', NULL, 5, 'w2', '1 min', start => true);
		SELECT count(*) FROM pendulum.claim_jobs('{small}', NULL, 5, 'w3', '1 min');
		SELECT count(DISTINCT j.lease_token) || ' ' || string_agg(a.worker || ':' || a.attempt, ' ' ORDER BY j.id)
		  FROM pendulum.jobs j JOIN pendulum.job_attempts a ON a.job_id = j.id AND a.lease_token = j.lease_token
		 WHERE j.queue = 'small';
		ROLLBACK;
	EOF
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "LEASED true 1 w1 true" ]
	[ "${lines[1]}" = "RUNNING true 1 w2 true" ]
	[ "${lines[2]}" = 0 ]
	[ "${lines[3]}" = "2 w1:1 w2:1" ]
}

@test "a claim skips the rows a concurrent claim holds, and takes the next ones in order" {
	# The holder claims 4 from q5 and q6 and keeps its transaction open. It
	# has locked the first 4 of each queue (it took the first 4 of the two).
	sql "TRUNCATE gate"
	PGAPPNAME=pd-holder psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" >/dev/null 2>&1 <<-'EOF' &
		BEGIN;
		SELECT count(*) FROM pendulum.claim_jobs('{q5,q6}', NULL, 4, 'holder', '30 s');
		DO $$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM gate) LOOP PERFORM pg_sleep(0.02); END LOOP; END $$;
		ROLLBACK;
	EOF
	bg=$!
	wait_for 20 backend_waiting pd-holder
	run --separate-stderr psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" <<-'EOF'
		BEGIN;
		SELECT string_agg(id::text, ' ' ORDER BY priority DESC, run_at, id) FROM (
		    SELECT id, priority, run_at FROM (
		        SELECT id, priority, run_at,
		               row_number() OVER (PARTITION BY queue ORDER BY priority DESC, run_at, id) AS rank
		          FROM pendulum.jobs
		         WHERE state = 'PENDING' AND queue IN ('q5', 'q6') AND run_at <= now()) r
		     WHERE rank > 4 ORDER BY priority DESC, run_at, id LIMIT 8) s;
		SELECT string_agg(id::text, ' ' ORDER BY priority DESC, run_at, id)
		  FROM pendulum.claim_jobs('{q5,q6}', NULL, 8, 'w', '30 s');
		ROLLBACK;
	EOF
	sql "INSERT INTO gate VALUES (true)"
	wait "$bg"
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "${lines[1]}" = "${lines[0]}" ]
}
