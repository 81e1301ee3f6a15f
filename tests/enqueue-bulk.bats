#!/usr/bin/env bats
# The bulk enqueue path: pd-enqueue --ndjson (a JSON array for small
# batches, COPY into a staging table beyond PD_ENQUEUE_COPY_MIN = 200 jobs,
# or straight into pendulum.jobs when no job has a key or a dependency)
# and pendulum.enqueue_many, which make the same jobs: all or nothing, ids
# in input order, idempotency keys inside the batch and against the table,
# one NOTIFY per queue.

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

# keyed_lines N KEYS: N job lines whose idempotency keys cycle through KEYS
# keys (k0, k1, ...), payload {"n": line number}.
keyed_lines() {
	awk -v n="$1" -v k="$2" 'BEGIN { for (i = 1; i <= n; i++)
		printf "{\"type\": \"t\", \"idempotency_key\": \"k%d\", \"payload\": {\"n\": %d}}\n", (i - 1) % k, i }'
}

@test "100,000 lines with invalid JSON, or a bad field, on line 99,999: exit 65 naming line 99999, zero rows" {
	awk 'BEGIN { for (i = 1; i <= 100000; i++)
		print (i == 99999 ? "{\"type\": \"t\", \"payload\": {\"n\": 1}," : "{\"type\": \"t\", \"payload\": {\"n\": " i "}}") }' \
		>"$BATS_TEST_TMPDIR/in.ndjson"
	run --separate-stderr pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/in.ndjson"
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[[ "$stderr" == "pd-enqueue: invalid JSON on stdin line 99999, column "* ]]
	[ "$(njobs)" -eq 0 ]
	# a bad field is named with its line the same way
	sed -i '99999s/.*/{"type": "t", "priority": "urgent"}/' "$BATS_TEST_TMPDIR/in.ndjson"
	run --separate-stderr pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/in.ndjson"
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-enqueue: stdin line 99999: key 'priority': invalid priority 'urgent'"* ]]
	[ "$(njobs)" -eq 0 ]
}

@test "100,000 lines, line 99,999 a number PostgreSQL cannot store: exit 65 naming line 99999, zero rows" {
	# the number is JSON but not a PostgreSQL numeric: refused while the
	# input is read (pd_json_storable), before any row is copied
	awk 'BEGIN { for (i = 1; i <= 100000; i++)
		print (i == 99999 ? "{\"x\": 1e200000}" : "{\"i\": " i "}") }' >"$BATS_TEST_TMPDIR/in.ndjson"
	run --separate-stderr pd-enqueue --ndjson t <"$BATS_TEST_TMPDIR/in.ndjson"
	[ "$status" -eq 65 ]
	[ -z "$output" ]
	[ "$stderr" = "pd-enqueue: invalid JSON on stdin line 99999, column 7: number out of range (PostgreSQL numeric cannot store it)" ]
	[ "$(njobs)" -eq 0 ]
}

@test "100,000 lines: one id a line in input order, one job each" {
	awk 'BEGIN { for (i = 1; i <= 100000; i++) print "{\"i\": " i "}" }' >"$BATS_TEST_TMPDIR/in.ndjson"
	run --separate-stderr pd-enqueue --ndjson t <"$BATS_TEST_TMPDIR/in.ndjson"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 100000 ]
	[ "$(njobs)" -eq 100000 ]
	# ids grow with the line, and each is the job of its line
	printf '%s\n' "${lines[@]}" | sort -n -c -u
	printf '%s\n' "${lines[@]}" | awk '{ print NR "\t" $1 }' >"$BATS_TEST_TMPDIR/ids.tsv"
	sql "CREATE TABLE line_ids (line int, id bigint)"
	psql -X -q -d "$PD_DATABASE_URL" -c "\\copy line_ids FROM '$BATS_TEST_TMPDIR/ids.tsv'"
	[ "$(sql "SELECT count(*) FROM line_ids l JOIN pendulum.jobs j USING (id)
	          WHERE (j.payload->>'i')::int = l.line")" -eq 100000 ]
	sql "DROP TABLE line_ids"
}

@test "a key repeated inside one small batch: one job, its id printed for every repeat" {
	run --separate-stderr pd-enqueue --ndjson < <(keyed_lines 5 2)
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	[ "${lines[2]}" = "${lines[0]}" ]
	[ "${lines[4]}" = "${lines[0]}" ]
	[ "${lines[3]}" = "${lines[1]}" ]
	[ "${lines[0]}" != "${lines[1]}" ]
	[ "$(njobs)" -eq 2 ]
	# the first line of each key made the job
	[ "$(sql "SELECT payload->>'n' FROM pendulum.jobs WHERE id = ${lines[1]}")" = 2 ]
	[ "$(printf '%s\n' "$stderr" | grep -c 'idempotency key already used')" -eq 3 ]
}

@test "a key repeated inside one large (copied) batch: one job, its id printed for every repeat" {
	run --separate-stderr pd-enqueue --ndjson < <(keyed_lines 1000 7)
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1000 ]
	[ "$(njobs)" -eq 7 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 7 ]
	# line i has the id of line ((i - 1) % 7) + 1, the first with its key
	for i in 7 8 500 999; do
		[ "${lines[$i]}" = "${lines[$((i % 7))]}" ] || { echo "line $((i + 1))"; return 1; }
	done
	[ "$(sql "SELECT payload->>'n' FROM pendulum.jobs WHERE id = ${lines[999]}")" = 6 ]
	[ "$(printf '%s\n' "$stderr" | grep -c 'idempotency key already used')" -eq 993 ]
}

@test "a key already in the table: the existing id, at its line, in a small and in a large batch" {
	old=$(pd-enqueue -t acme -k k3 t '{"old": true}')
	run --separate-stderr pd-enqueue --ndjson < <(printf '%s\n' \
		'{"type": "t", "tenant": "acme", "idempotency_key": "k1"}' \
		'{"type": "t", "tenant": "acme", "idempotency_key": "k3"}' \
		'{"type": "t", "idempotency_key": "k3"}')
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "$old" ]
	[ "${lines[0]}" != "$old" ]
	[ "${lines[2]}" != "$old" ]
	[ "$stderr" = "pd-enqueue: idempotency key already used in tenant 'acme': existing job $old" ]
	run --separate-stderr pd-enqueue --ndjson < <(keyed_lines 300 300 | sed 's/"type"/"tenant": "acme", "type"/')
	[ "$status" -eq 0 ]
	[ "${lines[3]}" = "$old" ]
	[ "${lines[1]}" = "$(sql "SELECT id FROM pendulum.jobs WHERE tenant_id = 'acme' AND idempotency_key = 'k1'")" ]
	[ "$(njobs)" -eq 301 ]
	[ "$(sql "SELECT payload FROM pendulum.jobs WHERE id = $old")" = '{"old": true}' ]
}

@test "--after with a large batch: every job BLOCKED on it; a missing one: exit 2, zero rows" {
	dep=$(pd-enqueue t '{}')
	run --separate-stderr pd-enqueue --ndjson --after "$dep" t < <(seq 1 500 | sed 's/.*/{"i": &}/')
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'BLOCKED' AND depends_on = '{$dep}'")" -eq 500 ]
	reset_jobs
	run --separate-stderr pd-enqueue --ndjson --after 424242 t < <(seq 1 500 | sed 's/.*/{"i": &}/')
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"dependency job 424242 does not exist"* ]]
	[ "$(njobs)" -eq 0 ]
}

@test "delays are resolved by the database clock, in both paths" {
	printf '%s\n' '{"type": "t", "delay": "1m30s"}' '{"type": "t", "delay": 2.5, "run_at": "2030-01-01T00:00:00Z"}' |
		pd-enqueue --ndjson >/dev/null
	[ "$(sql "SELECT run_at - created_at FROM pendulum.jobs WHERE run_at < '2030-01-01'")" = 00:01:30 ]
	[ "$(sql "SELECT run_at FROM pendulum.jobs WHERE run_at > '2030-01-01'")" = "2030-01-01 00:00:02.5+00" ]
	reset_jobs
	seq 1 300 | awk '{ printf "{\"type\": \"t\", \"delay\": \"%ds\", \"payload\": {\"n\": %d}}\n", $1, $1 }' |
		pd-enqueue --ndjson >/dev/null
	[ "$(sql "SELECT count(*) FROM pendulum.jobs
	          WHERE run_at - created_at = (payload->>'n')::int * interval '1 s'")" -eq 300 ]
}

@test "one NOTIFY per queue per transaction, none for a queue that got only BLOCKED jobs" {
	dep=$(pd-enqueue t '{}')
	sql "SELECT pg_stat_reset()" >/dev/null
	gate=$BATS_TEST_TMPDIR/listen-gate
	# the session listens until the gate opens, then prints what it got
	start_psql pd-listen \
		-c "LISTEN pendulum_jobs" -c "\\! while [ ! -e '$gate' ]; do sleep 0.05; done" -c "SELECT 1"
	wait_for 30 sql_is "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pd-listen'
	                    AND state = 'idle' AND query LIKE 'LISTEN%'" 1
	awk -v d="$dep" 'BEGIN { for (i = 1; i <= 1000; i++)
		printf "{\"type\": \"t\", \"queue\": \"q%d\"}\n", i % 2
		for (i = 1; i <= 10; i++) printf "{\"type\": \"t\", \"queue\": \"q3\", \"depends_on\": [%d]}\n", d }' |
		PGOPTIONS='-c track_functions=all' pd-enqueue --ndjson >/dev/null
	touch "$gate"
	wait_bg pd-listen
	[ "$(grep -c '^Asynchronous notification "pendulum_jobs"' "$BATS_FILE_TMPDIR/pd-listen.out")" -eq 2 ]
	[ "$(grep -c 'with payload "q0"' "$BATS_FILE_TMPDIR/pd-listen.out")" -eq 1 ]
	[ "$(grep -c 'with payload "q1"' "$BATS_FILE_TMPDIR/pd-listen.out")" -eq 1 ]
	# one notify_jobs call for the whole batch: not one NOTIFY per job
	wait_for 10 sql_is "SELECT sum(calls) FROM pg_stat_user_functions WHERE funcname = 'notify_jobs'" 1
	[ "$(sql "SELECT count(*) FROM pg_stat_user_functions WHERE funcname = 'enqueue_ex'")" -eq 0 ]
}

@test "enqueue_many returns the ids in input order, keys resolved like pd-enqueue's" {
	run sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\", \"payload\": {\"n\": 1}},
	           {\"type\": \"t\", \"payload\": {\"n\": 2}, \"idempotency_key\": \"a\"},
	           {\"type\": \"u\", \"queue\": \"q\", \"payload\": {\"n\": 3}},
	           {\"type\": \"t\", \"payload\": {\"n\": 4}, \"idempotency_key\": \"a\"}]')"
	[ "$status" -eq 0 ]
	ids=$(printf '%s' "$output" | tr -d '{}')
	IFS=, read -r a b c d <<<"$ids"
	[ "$(sql "SELECT payload->>'n' FROM pendulum.jobs WHERE id = $a")" = 1 ]
	[ "$(sql "SELECT payload->>'n' FROM pendulum.jobs WHERE id = $b")" = 2 ]
	[ "$(sql "SELECT payload->>'n' FROM pendulum.jobs WHERE id = $c")" = 3 ]
	[ "$d" = "$b" ]
	[ "$a" -lt "$b" ]
	[ "$b" -lt "$c" ]
	[ "$(njobs)" -eq 3 ]
	# a key in the table: the existing id, created false
	[ "$(sql "SELECT string_agg(ord || ':' || (id = $b) || ':' || created, ' ' ORDER BY ord)
	          FROM pendulum.enqueue_many_ex('[{\"type\": \"t\"}, {\"type\": \"t\", \"idempotency_key\": \"a\"}]')")" = "1:false:true 2:true:false" ]
}

@test "enqueue_many in a transaction that rolls back leaves no job" {
	run psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" <<'SQL'
BEGIN;
SELECT cardinality(pendulum.enqueue_many('[{"type": "t"}, {"type": "t", "idempotency_key": "r"}]'));
SELECT count(*) FROM pendulum.jobs;
ROLLBACK;
SQL
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 2 ]
	[ "${lines[1]}" = 2 ]
	[ "$(njobs)" -eq 0 ]
	# and the key is free again
	sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\", \"idempotency_key\": \"r\"}]')" >/dev/null
	[ "$(njobs)" -eq 1 ]
}

@test "enqueue_many refuses a bad element by its position, and inserts nothing" {
	run sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\"}, {\"type\": \"t\", \"prority\": 1}]')"
	[ "$status" -ne 0 ]
	[[ "$output" == *"job 2: unknown key 'prority'"* ]]
	run sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\"}, {\"type\": \"t\"}, {\"type\": \"t\", \"delay\": \"5 minutes\"}]')"
	[[ "$output" == *"job 3: key 'delay': invalid duration"* ]]
	run sql "SELECT pendulum.enqueue_many('[{\"payload\": {}}]')"
	[[ "$output" == *"job 1: missing key 'type'"* ]]
	run sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\", \"run_at\": \"2026-02-30\"}]')"
	[[ "$output" == *"job 1: key 'run_at': invalid instant"* ]]
	run sql "SELECT pendulum.enqueue_many('{\"type\": \"t\"}')"
	[[ "$output" == *"expected a JSON array of jobs"* ]]
	[ "$(njobs)" -eq 0 ]
	[ "$(sql "SELECT pendulum.enqueue_many('[]')")" = "{}" ]
}

# same_as_enqueue_many ROWS FILTER: the jobs pendulum.enqueue_many makes of
# the objects in jobs.ndjson (as one array), selected as ROWS WHERE FILTER,
# are by_cli's ten rows, no more and no fewer. Drops both tables.
same_as_enqueue_many() {
	jq -s -c . "$BATS_TEST_TMPDIR/jobs.ndjson" >"$BATS_TEST_TMPDIR/jobs.json"
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" -v "jobs=$(cat "$BATS_TEST_TMPDIR/jobs.json")" \
		>/dev/null <<<"SELECT pendulum.enqueue_many(:'jobs');"
	sql "CREATE TABLE by_sql AS SELECT DISTINCT $1 FROM pendulum.jobs WHERE $2"
	[ "$(sql "SELECT count(*) FROM by_cli")" -eq 10 ]
	[ "$(sql "SELECT count(*) FROM (SELECT * FROM by_cli EXCEPT SELECT * FROM by_sql) d")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM (SELECT * FROM by_sql EXCEPT SELECT * FROM by_cli) d")" -eq 0 ]
	sql "DROP TABLE by_cli, by_sql"
}

@test "pd-enqueue and enqueue_many make the same jobs from the same objects" {
	dep=$(pd-enqueue t '{}')
	cat >"$BATS_TEST_TMPDIR/jobs.ndjson" <<EOF
{"type": "a", "payload": {"s": "tab\\there, \\"quoted\\", back\\\\slash"}, "tenant": "x", "queue": "q1"}
{"type": "b", "priority": "high", "delay": "1h30m", "max_attempts": 3, "timeout": "2.5s"}
{"type": "c", "priority": -7, "run_at": "2031-05-06T07:08:09.5+02:00", "delivery": "at-most-once"}
{"type": "d", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "depends_on": [$dep]}
{"type": "e", "payload": [1, 2.50, null, "\\u00e9"], "idempotency_key": "same", "tenant": "x"}
{"type": "f", "delay": "1m30s500ms", "timeout": 12}
{"type": "g", "delay": 1.5, "timeout": "250ms", "priority": "7"}
{"type": "h", "run_at": "2031-05-06 07:08Z"}
{"type": "i", "run_at": "2031-05-06"}
{"type": "j", "run_at": "2031-05-06t07:08:09.1234567-0130", "delay": "1d"}
EOF
	# run_in: a delay, from the transaction's clock; run_at: a time given
	rows="tenant_id, queue, job_type, payload, priority, state,
	      CASE WHEN run_at < now() + interval '1 year' THEN run_at - created_at END AS run_in,
	      CASE WHEN run_at > now() + interval '1 year' THEN run_at END AS run_at, max_attempts,
	      timeout, delivery, traceparent, depends_on, idempotency_key"
	# 300 copies of the ten lines: the COPY path
	for i in $(seq 1 30); do cat "$BATS_TEST_TMPDIR/jobs.ndjson"; done | pd-enqueue --ndjson >/dev/null
	sql "CREATE TABLE by_cli AS SELECT DISTINCT $rows FROM pendulum.jobs WHERE id <> $dep"
	sql "DELETE FROM pendulum.jobs WHERE id <> $dep"
	same_as_enqueue_many "$rows" "id <> $dep"
}

# hold_key NAME KEY: another session enqueues a job with KEY and holds its
# transaction open until open_key_gate; returns once it holds the key.
hold_key() {
	sql "CREATE TABLE IF NOT EXISTS key_gate (open boolean); TRUNCATE key_gate"
	start_psql "$1" \
		-c "BEGIN" -c "SELECT pendulum.enqueue_many('[{\"type\": \"held\", \"idempotency_key\": \"$2\"}]')" \
		-c "DO \$\$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM key_gate) LOOP PERFORM pg_sleep(0.02); END LOOP; END \$\$" \
		-c "COMMIT"
	wait_for 10 backend_waiting "$1"
}

open_key_gate() {
	sql "INSERT INTO key_gate VALUES (true)"
}

# blocked_by APPNAME: some backend waits for a lock the session APPNAME holds.
blocked_by() {
	sql_is "SELECT count(*) > 0 FROM pg_stat_activity w, pg_stat_activity h
	        WHERE h.application_name = '$1' AND h.pid = ANY (pg_blocking_pids(w.pid))" t
}

# enqueue_blocked NAME FILE HOLDER: pd-enqueue --ndjson <FILE in the background
# (see start_bg); returns once it waits for HOLDER's transaction, still running.
enqueue_blocked() {
	start_bg "$1" sh -c 'exec pd-enqueue --ndjson <"$0"' "$2"
	wait_for 30 blocked_by "$3"
	[ ! -e "$BATS_FILE_TMPDIR/$1.status" ]
}

@test "a key another transaction is enqueueing: pd-enqueue waits for its commit, then prints that job's id" {
	hold_key holder1 race1
	keyed_lines 300 300 | sed 's/"k150"/"race1"/' >"$BATS_TEST_TMPDIR/big.ndjson"
	enqueue_blocked enq1 "$BATS_TEST_TMPDIR/big.ndjson" holder1
	# it waits as long as the holder's transaction is open
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE idempotency_key = 'race1'")" -eq 0 ]
	open_key_gate
	wait_for 30 test -s "$BATS_FILE_TMPDIR/enq1.status"
	[ "$(bg_status enq1)" -eq 0 ]
	held=$(sql "SELECT id FROM pendulum.jobs WHERE idempotency_key = 'race1'")
	[ "$(sql "SELECT job_type FROM pendulum.jobs WHERE id = $held")" = held ]
	[ "$(sed -n 151p "$BATS_FILE_TMPDIR/enq1.out")" = "$held" ]
	[ "$(wc -l <"$BATS_FILE_TMPDIR/enq1.out")" -eq 300 ]
	[ "$(bg_log enq1)" = "pd-enqueue: idempotency key already used in tenant 'default': existing job $held" ]
	# the small (JSON array) path waits the same way
	hold_key holder2 race2
	printf '%s\n' '{"type": "t"}' '{"type": "t", "idempotency_key": "race2"}' >"$BATS_TEST_TMPDIR/small.ndjson"
	enqueue_blocked enq2 "$BATS_TEST_TMPDIR/small.ndjson" holder2
	open_key_gate
	wait_for 30 test -s "$BATS_FILE_TMPDIR/enq2.status"
	[ "$(bg_status enq2)" -eq 0 ]
	[ "$(sed -n 2p "$BATS_FILE_TMPDIR/enq2.out")" = "$(sql "SELECT id FROM pendulum.jobs WHERE idempotency_key = 'race2'")" ]
	[ "$(sql "SELECT job_type FROM pendulum.jobs WHERE idempotency_key = 'race2'")" = held ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE idempotency_key IN ('race1', 'race2')")" -eq 2 ]
}

# eligible_lines: ten job lines with no key and no dependency, every other
# key used.
eligible_lines() {
	cat <<'EOF'
{"type": "a", "payload": {"s": "tab\there, \"quoted\", back\\slash"}, "tenant": "x", "queue": "q1"}
{"type": "b", "priority": "high", "delay": "1h30m", "max_attempts": 3, "timeout": "2.5s"}
{"type": "c", "priority": -7, "run_at": "2031-05-06T07:08:09.5+02:00", "delivery": "at-most-once"}
{"type": "d", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "queue": "q\"2\\"}
{"type": "e", "payload": [1, 2.50, null, "\u00e9"], "tenant": "x", "delivery": "at-least-once"}
{"type": "f", "delay": "1m30s500ms", "timeout": 12}
{"type": "g", "delay": 1.5, "timeout": "250ms", "priority": "7", "depends_on": null}
{"type": "h", "run_at": "2031-05-06 07:08Z"}
{"type": "i", "run_at": "2031-05-06", "payload": null}
{"type": "j", "run_at": "2031-05-06t07:08:09.1234567-0130", "delay": "1d"}
EOF
}

@test "no key, no dependency: copied straight into pendulum.jobs, the same rows as enqueue_many makes" {
	eligible_lines >"$BATS_TEST_TMPDIR/jobs.ndjson"
	# every column but id and created_at; run_in: a delay, from the transaction's clock
	rows="tenant_id, queue, job_type, payload, priority, state,
	      CASE WHEN run_at < now() + interval '1 year' THEN run_at - created_at END AS run_in,
	      CASE WHEN run_at > now() + interval '1 year' THEN run_at END AS run_at, attempt,
	      max_attempts, timeout, delivery, lease_token, lease_owner, lease_expires_at,
	      idempotency_key, replay_count, result, result_is_text, result_truncated, last_error,
	      dead_reason, traceparent, depends_on, started_at, finished_at, exit_code"
	# 300 copies of the ten lines: the direct path
	for i in $(seq 1 30); do cat "$BATS_TEST_TMPDIR/jobs.ndjson"; done >"$BATS_TEST_TMPDIR/300.ndjson"
	run --separate-stderr env PD_LOG_LEVEL=debug pd-enqueue --ndjson <"$BATS_TEST_TMPDIR/300.ndjson"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *'msg="jobs copied and enqueued" path=direct jobs=300 '* ]]
	[ "${#lines[@]}" -eq 300 ]
	printf '%s\n' "${lines[@]}" | sort -n -c -u
	[ "$(sql "SELECT count(DISTINCT created_at) FROM pendulum.jobs")" -eq 1 ]
	[ "$(sql "SELECT job_type FROM pendulum.jobs WHERE id = ${lines[13]}")" = d ]
	sql "CREATE TABLE by_cli AS SELECT DISTINCT $rows FROM pendulum.jobs"
	reset_jobs
	same_as_enqueue_many "$rows" true
}

# A role under row-level security takes it too: tests/roles.bats.
@test "a key or a dependency: the staging path" {
	dep=$(pd-enqueue t '{}')
	for extra in '"idempotency_key": "k"' "\"depends_on\": [$dep]"; do
		run --separate-stderr env PD_LOG_LEVEL=debug pd-enqueue --ndjson < <(seq 1 300 |
			awk -v x="$extra" '{ printf "{\"type\": \"t\"%s}\n", ($1 == 150 ? ", " x : "") }')
		[ "$status" -eq 0 ]
		[[ "$stderr" == *'msg="jobs copied and enqueued" path=staged jobs=300 '* ]]
	done
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'BLOCKED'")" -eq 1 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE idempotency_key = 'k'")" -eq 1 ]
	[ "$(njobs)" -eq 601 ]
}

@test "the direct path: ids grow with the line also when the sequence gives no block" {
	# with an increment of 2 the ids are never one block: taken again, one row each
	sql "ALTER SEQUENCE pendulum.jobs_id_seq INCREMENT BY 2"
	run --separate-stderr env PD_LOG_LEVEL=debug pd-enqueue --ndjson t < <(seq 1 500 | sed 's/.*/{"n": &}/')
	sql "ALTER SEQUENCE pendulum.jobs_id_seq INCREMENT BY 1"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *'msg="ids not in one block: taken again"'* ]]
	[[ "$stderr" == *'path=direct jobs=500 '* ]]
	[ "${#lines[@]}" -eq 500 ]
	printf '%s\n' "${lines[@]}" | sort -n -c -u
	for i in 0 1 250 499; do
		[ "$(sql "SELECT payload->>'n' FROM pendulum.jobs WHERE id = ${lines[$i]}")" -eq $((i + 1)) ]
	done
	[ "$(njobs)" -eq 500 ]
}

@test "the direct path: one NOTIFY per queue per transaction" {
	sql "SELECT pg_stat_reset()" >/dev/null
	gate=$BATS_TEST_TMPDIR/listen-gate
	# the session listens until the gate opens, then prints what it got
	start_psql pd-listen \
		-c "LISTEN pendulum_jobs" -c "\\! while [ ! -e '$gate' ]; do sleep 0.05; done" -c "SELECT 1"
	wait_for 30 sql_is "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pd-listen'
	                    AND state = 'idle' AND query LIKE 'LISTEN%'" 1
	awk 'BEGIN { for (i = 1; i <= 1000; i++) printf "{\"type\": \"t\", \"queue\": \"q%d\"}\n", i % 3
		print "{\"type\": \"t\"}" }' |
		PGOPTIONS='-c track_functions=all' PD_LOG_LEVEL=debug pd-enqueue --ndjson \
			2>"$BATS_TEST_TMPDIR/err" >/dev/null
	grep -q 'path=direct jobs=1001 ' "$BATS_TEST_TMPDIR/err"
	touch "$gate"
	wait_bg pd-listen
	[ "$(grep -c '^Asynchronous notification "pendulum_jobs"' "$BATS_FILE_TMPDIR/pd-listen.out")" -eq 4 ]
	for q in q0 q1 q2 default; do
		[ "$(grep -c "with payload \"$q\"" "$BATS_FILE_TMPDIR/pd-listen.out")" -eq 1 ]
	done
	wait_for 10 sql_is "SELECT sum(calls) FROM pg_stat_user_functions WHERE funcname = 'notify_jobs'" 1
}
