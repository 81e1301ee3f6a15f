#!/usr/bin/env bats
# The job claim (pendulum.claim_jobs_fair, sql/020_fair.sql) is an index walk
# whatever the backlog and the number of tenants: on 340,000 PENDING jobs over
# 10 queues, 3 priority levels, about a third future-dated, a claim of 8 from 1
# or from 3 queues reads a bounded number of buffers, sorts nothing but the
# rows it is about to take, and takes exactly the first 8 in the order
# priority DESC, then round by round across the queues (run_at, id within a
# queue); with 1, 100 or 10,000 tenants with work, the same. Its plans are the
# ones really executed (auto_explain, nested statements, JSON: the claim is a
# loop of small statements), and every claim is rolled back, so that the
# backlog stays as seeded.

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
	     INSERT INTO pendulum.jobs (tenant_id, queue, job_type, run_at)
	     SELECT 'solo', 'mt1', 't', now() - random() * interval '1 day'
	       FROM generate_series(1, 30000) g;
	     INSERT INTO pendulum.jobs (tenant_id, queue, job_type, run_at)
	     SELECT 't' || (g % 100), 'mt100', 't', now() - random() * interval '1 day'
	       FROM generate_series(1, 30000) g;
	     INSERT INTO pendulum.jobs (tenant_id, queue, job_type, run_at)
	     SELECT 'u' || (g % 10000), 'mt10k', 't', now() - random() * interval '1 day'
	       FROM generate_series(1, 30000) g;
	     INSERT INTO pendulum.tenants (tenant_id, weight)
	     SELECT 'idle' || g, 1 + g % 2 FROM generate_series(0, 9999) g;
	     ANALYZE pendulum.jobs;
	     CREATE TABLE gate (open boolean)" >/dev/null
}

teardown_file() {
	kill_all_bg
	pd_teardown_db
}

setup() {
	PLAN=$BATS_TEST_TMPDIR/plan.json
}

teardown() {
	kill_all_bg
}

# claim QUEUES [TYPES [START [FAIR]]]: in one transaction, rolled back: the
# first 8 runnable jobs of QUEUES (and TYPES, an array literal or NULL) by a
# plain query (priority DESC, then rank within the queue and level, then
# queue), then pendulum.claim_jobs_fair(QUEUES, TYPES, 8, ...) from cursor
# FAIR. Prints three lines: the ids of each in that order, and the number of
# distinct tenants claimed. The claim's nested statements' plans go to $PLAN
# (a JSON array).
claim() {
	local q=$1 t=${2:-NULL} start=${3:-false} fair=${4:-NULL} log=$BATS_TEST_TMPDIR/explain.log
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" 2>"$log" <<-EOF
		LOAD 'auto_explain';
		SET auto_explain.log_nested_statements = on;
		SET auto_explain.log_analyze = on;
		SET auto_explain.log_buffers = on;
		SET auto_explain.log_timing = off;
		SET auto_explain.log_format = json;
		SET client_min_messages = log;
		BEGIN;
		SELECT string_agg(id::text, ' ' ORDER BY priority DESC, rank, queue) FROM (
		    SELECT id, priority, rank, queue FROM (
		        SELECT id, priority, queue, run_at,
		               row_number() OVER (PARTITION BY queue, priority ORDER BY run_at, id) AS rank
		          FROM pendulum.jobs
		         WHERE state = 'PENDING' AND queue = ANY ('$q') AND run_at <= now()
		           AND ($t::text[] IS NULL OR job_type = ANY ($t::text[]))) r
		     ORDER BY priority DESC, rank, queue LIMIT 8) s;
		SET auto_explain.log_min_duration = 0;
		CREATE TEMP TABLE c ON COMMIT DROP AS
		SELECT (c.job).* FROM pendulum.claim_jobs_fair('$q', $t, 8, 'w', '30 s', $start, $fair) c
		 WHERE (c.job).id IS NOT NULL;
		SET auto_explain.log_min_duration = -1;
		SELECT string_agg(id::text, ' ' ORDER BY priority DESC, id) FROM c;
		SELECT count(DISTINCT tenant_id) FROM c;
		ROLLBACK;
	EOF
	# Each plan is a JSON object from a "{" line to a "}" line; the claim's
	# are those of the statements inside claim_jobs_fair.
	sed -n '/^{/,/^}/p' "$log" | jq -s '[.[] | select(."Query Text" | test("claim_jobs_fair\\(") | not)]' >"$PLAN"
}

# plan JQ: evaluate JQ on the claim's plan.
plan() {
	jq -r "$1" "$PLAN"
}

# Nodes of the plans; a node's shared buffers (hit + read, its subtree's).
NODES='[.[] | .Plan | .. | objects | select(has("Node Type"))]'
BUFS='((."Shared Hit Blocks" // 0) + (."Shared Read Blocks" // 0))'

bitmap_scans_of_jobs() {
	plan "$NODES | map(select((.\"Node Type\" | startswith(\"Bitmap\")) and .\"Relation Name\" == \"jobs\")) | length"
}

seq_scans_of_jobs() {
	plan "$NODES | map(select(.\"Node Type\" == \"Seq Scan\" and .\"Relation Name\" == \"jobs\")) | length"
}

# The most rows any Sort was given (input rows of its child, over all loops).
largest_sort() {
	plan "$NODES | map(select(.\"Node Type\" == \"Sort\") | .Plans[0] | .\"Actual Rows\" * .\"Actual Loops\") | max // 0"
}

# The buffers of all the claim's statements (each top node's subtree).
claim_buffers() {
	plan "[.[] | .Plan | $BUFS] | add // 999999"
}

# How many statements the claim ran.
statements() {
	plan 'length'
}

@test "the seeded backlog is what the other tests assume" {
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING' AND queue NOT LIKE 'mt%'")" -eq 340002 ]
	[ "$(sql "SELECT count(DISTINCT tenant_id) FROM pendulum.jobs WHERE queue = 'mt10k'")" -eq 10000 ]
	[ "$(sql "SELECT count(*) FROM pendulum.tenants")" -eq 10000 ]
	[ "$(sql "SELECT count(*) FILTER (WHERE run_at > now()) * 100 / count(*) FROM pendulum.jobs")" -ge 30 ]
	[ "$(sql "SELECT count(DISTINCT priority) FROM pendulum.jobs WHERE queue = 'q1'")" -eq 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'q9' AND priority = 10 AND run_at <= now()")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'q9' AND priority = 10")" -gt 40000 ]
}

@test "a claim of 8 from 1 queue walks the index: no bitmap scan, no sort of the backlog, few buffers" {
	run --separate-stderr claim '{q1}'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "$(tr ' ' '\n' <<<"${lines[1]}" | sort -n)" = "$(tr ' ' '\n' <<<"${lines[0]}" | sort -n)" ]
	[ "$(statements)" -gt 5 ]
	[ "$(bitmap_scans_of_jobs)" -eq 0 ]
	[ "$(seq_scans_of_jobs)" -eq 0 ]
	[ "$(largest_sort)" -le 24 ]
	[ "$(claim_buffers)" -lt 400 ]
}

@test "a claim of 8 from 3 queues: the same, round by round across the queues" {
	run --separate-stderr claim '{q1,q2,q3}'
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "$(tr ' ' '\n' <<<"${lines[1]}" | sort -n)" = "$(tr ' ' '\n' <<<"${lines[0]}" | sort -n)" ]
	[ "$(bitmap_scans_of_jobs)" -eq 0 ]
	[ "$(seq_scans_of_jobs)" -eq 0 ]
	[ "$(largest_sort)" -le 24 ]
	[ "$(claim_buffers)" -lt 600 ]
}

@test "a top priority level with only future rows left is stepped over, not read" {
	run --separate-stderr claim '{q9}'
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "$(tr ' ' '\n' <<<"${lines[1]}" | sort -n)" = "$(tr ' ' '\n' <<<"${lines[0]}" | sort -n)" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE priority = 0
	          AND id IN ($(tr ' ' ',' <<<"${lines[1]}"))")" -eq 8 ]
	[ "$(bitmap_scans_of_jobs)" -eq 0 ]
	[ "$(largest_sort)" -le 24 ]
	[ "$(claim_buffers)" -lt 400 ]
}

@test "with a type filter, a queue listed twice, and a queue with 2 jobs" {
	run --separate-stderr claim '{q4,small,q4}' "'{t0,t1}'"
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "$(tr ' ' '\n' <<<"${lines[1]}" | sort -n)" = "$(tr ' ' '\n' <<<"${lines[0]}" | sort -n)" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type IN ('t0', 't1')
	          AND id IN ($(tr ' ' ',' <<<"${lines[1]}"))")" -eq 8 ]
	[ "$(bitmap_scans_of_jobs)" -eq 0 ]
	[ "$(largest_sort)" -le 24 ]
	[ "$(claim_buffers)" -lt 600 ]
}

# buffers_for QUEUE: the claim's buffers for a claim of 8 from QUEUE.
buffers_for() {
	claim "{$1}" >/dev/null
	claim_buffers
}

@test "1, 100 or 10,000 tenants with work: the same index walk, 8 tenants when there are 8, buffers independent of the count" {
	run --separate-stderr claim '{mt10k}'
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "${lines[2]}" -eq 8 ]
	[ "$(bitmap_scans_of_jobs)" -eq 0 ]
	[ "$(seq_scans_of_jobs)" -eq 0 ]
	[ "$(largest_sort)" -le 24 ]
	run --separate-stderr claim '{mt100}'
	[ "${lines[2]}" -eq 8 ]
	[ "$(seq_scans_of_jobs)" -eq 0 ]
	run --separate-stderr claim '{mt1}'
	[ "${lines[2]}" -eq 1 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	one=$(buffers_for mt1)
	hundred=$(buffers_for mt100)
	many=$(buffers_for mt10k)
	echo "buffers: 1 tenant $one, 100 tenants $hundred, 10,000 tenants $many" >&3
	[ "$many" -lt 400 ]
	[ "$hundred" -lt 400 ]
	[ "$many" -lt $((one * 3)) ]
}

@test "the cursor goes round: claims of 8 with the cursor each returns visit 80 tenants in 10 claims" {
	run --separate-stderr psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" <<-'EOF'
		BEGIN;
		CREATE TEMP TABLE seen (tenant text) ON COMMIT DROP;
		DO $$
		DECLARE f jsonb; r record;
		BEGIN
		    FOR i IN 1 .. 10 LOOP
		        FOR r IN SELECT * FROM pendulum.claim_jobs_fair('{mt10k}', NULL, 8, 'w', '30 s', false, f) LOOP
		            f := r.fair_next;
		            INSERT INTO seen VALUES ((r.job).tenant_id);
		        END LOOP;
		    END LOOP;
		END $$;
		SELECT count(*) || ' ' || count(DISTINCT tenant) FROM seen;
		ROLLBACK;
	EOF
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "80 80" ]
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
	# has locked the first 4 of each queue (it took the first 2 of each).
	sql "TRUNCATE gate"
	start_psql pd-holder <<-'EOF'
		BEGIN;
		SELECT count(*) FROM pendulum.claim_jobs('{q5,q6}', NULL, 4, 'holder', '30 s');
		DO $$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM gate) LOOP PERFORM pg_sleep(0.02); END LOOP; END $$;
		ROLLBACK;
	EOF
	wait_for 20 backend_waiting pd-holder
	run --separate-stderr psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" <<-'EOF'
		BEGIN;
		SELECT string_agg(id::text, ' ' ORDER BY id) FROM (
		    SELECT id FROM (
		        SELECT id, priority, queue,
		               row_number() OVER (PARTITION BY queue ORDER BY priority DESC, run_at, id) AS rank
		          FROM pendulum.jobs
		         WHERE state = 'PENDING' AND queue IN ('q5', 'q6') AND run_at <= now()) r
		     WHERE rank > 4 ORDER BY priority DESC, rank, queue LIMIT 8) s;
		SELECT string_agg(id::text, ' ' ORDER BY id)
		  FROM pendulum.claim_jobs('{q5,q6}', NULL, 8, 'w', '30 s');
		ROLLBACK;
	EOF
	sql "INSERT INTO gate VALUES (true)"
	wait_bg pd-holder
	[ "$status" -eq 0 ]
	[ "$(wc -w <<<"${lines[1]}")" -eq 8 ]
	[ "${lines[1]}" = "${lines[0]}" ]
}

# c_sql NAME: lib/jobs.c's statement NAME on one line (as scripts/bench reads it)
c_sql() {
	awk -v n="$1" '$0 ~ "^static const char " n "\\[\\] =" { on = 1; next }
		on { print } on && /;$/ { exit }' "$BATS_TEST_DIRNAME/../lib/jobs.c" |
		sed -n 's/^[[:space:]]*"\(.*\)";\{0,1\}$/\1/p' | tr -d '\n' | sed 's/\\"/"/g'
}

@test "the finish is planned on the primary key whatever ANALYZE saw: no lease or finished index scanned, no hash of the history" {
	# ANALYZE saw no LEASED, RUNNING or SUCCEEDED row (setup_file); 20,000
	# SUCCEEDED rows and 100 RUNNING ones appear after it, in the transaction.
	fin=$(c_sql finish_sql)
	[ -n "$fin" ]
	run --separate-stderr psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" <<-EOF
		BEGIN;
		SET LOCAL plan_cache_mode = force_generic_plan;
		UPDATE pendulum.jobs SET state = 'SUCCEEDED', lease_token = id, finished_at = now()
		 WHERE queue = 'q1' AND id IN (SELECT id FROM pendulum.jobs WHERE queue = 'q1' LIMIT 20000);
		SELECT jsonb_agg(jsonb_build_object('id', (c.job).id, 'token', (c.job).lease_token,
		         'kind', 'succeeded', 'backoff_ms', 0, 'result_is_text', false,
		         'result_truncated', false, 'outcome', 'succeeded', 'exit_code', 0)) AS batch
		  FROM pendulum.claim_jobs_fair('{q2}', NULL, 100, 'w', '30 s', true) c \gset
		PREPARE fin (jsonb, text, boolean) AS $fin;
		EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE fin(:'batch', 'w', false);
		ROLLBACK;
	EOF
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | sed -n '/^\[/,/^\]/p' >"$PLAN"
	# every row of the batch written
	[ "$(plan '[.[0].Plan | .. | objects | select(."Node Type" == "ModifyTable" and ."Relation Name" == "jobs")] | .[0]."Actual Rows"')" -eq 100 ]
	run plan '[.[0].Plan | .. | objects | select(has("Index Name")) | ."Index Name"] | unique | join(" ")'
	[[ " $output " == *" jobs_pkey "* ]]
	[[ " $output " != *" jobs_running_idx "* ]]
	[[ " $output " != *" jobs_lease_idx "* ]]
	[[ " $output " != *" jobs_finished_idx "* ]]
	[ "$(plan '[.[0].Plan | .. | objects | select(."Node Type" == "Seq Scan" and (."Relation Name" == "jobs" or ."Relation Name" == "attempt_rows"))] | length')" -eq 0 ]
	[ "$(plan '[.[0].Plan | .. | objects | select(has("Index Name") and ."Actual Loops" > 0) | ."Actual Rows"] | max')" -le 1 ]
}
