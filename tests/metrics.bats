#!/usr/bin/env bats
# pd-admin metrics: the Prometheus text format, line by line, and numbers
# that match the database.

# $output holds literal exposition text with quotes and backslashes.
# shellcheck disable=SC2089,SC2090

load helpers
pd_db_hooks

setup() {
	reset_jobs
	reset_outbox
}

# check_exposition: $output is valid Prometheus text format 0.0.4 as
# Pendulum writes it: every line a HELP, a TYPE (gauge or counter; counters
# or histogram; counters named *_total) or a sample; each family's HELP and TYPE once, before its
# samples, which follow together; label values escaped; numeric values; no
# series twice. Prints what is wrong.
check_exposition() {
	printf '%s\n' "$output" | awk '
	function fail(msg) { print "line " NR ": " msg ": " $0; bad = 1 }
	/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* [^ ]/ {
		if (help[$3]++) fail("second HELP")
		if (sampled[$3]) fail("HELP after samples")
		next
	}
	/^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (gauge|counter|histogram)$/ {
		if (type[$3]) fail("second TYPE")
		if (sampled[$3]) fail("TYPE after samples")
		if ($4 == "counter" && $3 !~ /_total$/) fail("counter not named _total")
		type[$3] = $4
		family = $3
		next
	}
	/^#/ { fail("unknown comment"); next }
	{
		label = "[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\[\\\\\"n])*\""
		re = "^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{" label "(," label ")*\\})? -?[0-9]+(\\.[0-9]+)?$"
		if ($0 !~ re) { fail("not a sample"); next }
		name = $0; sub(/[{ ].*/, "", name)
		# a histogram family h has samples h_bucket (with le), h_sum, h_count
		if (!(name in type) && type[family] == "histogram" &&
		    (name == family "_bucket" || name == family "_sum" || name == family "_count"))
			name = family
		if (!type[name]) fail("sample without TYPE")
		if (name != family) fail("sample outside its family")
		series = $0; sub(/ [^ ]*$/, "", series)
		if (seen[series]++) fail("series twice")
		sampled[name] = 1
	}
	END {
		for (f in type) if (!help[f]) { print "no HELP for " f; bad = 1 }
		exit bad
	}'
}

# value SERIES: the value of one series in $output (empty if absent).
value() {
	# through the environment: awk -v would unescape the backslashes
	printf '%s\n' "$output" | K="$1" awk '!/^#/ { s = $0; sub(/ [^ ]*$/, "", s); if (s == ENVIRON["K"]) print $NF }'
}

@test "an empty database: every family, valid, counters at zero" {
	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	check_exposition
	for f in pendulum_queue_depth pendulum_oldest_runnable_age_seconds pendulum_dead_letters \
		pendulum_writes_fenced_total pendulum_workers pendulum_worker_in_flight \
		pendulum_attempts_total pendulum_outbox_messages \
		pendulum_outbox_oldest_pending_age_seconds pendulum_outbox_writes_fenced_total; do
		printf '%s\n' "$output" | grep -q "^# TYPE $f " || { echo "no family $f"; return 1; }
	done
	printf '%s\n' "$output" | grep -q '^# TYPE pendulum_writes_fenced_total counter$'
	printf '%s\n' "$output" | grep -q '^# TYPE pendulum_attempts_total counter$'
	printf '%s\n' "$output" | grep -q '^# TYPE pendulum_queue_depth gauge$'
	[ "$(value pendulum_writes_fenced_total)" = 0 ]
	[ "$(value pendulum_workers)" = 0 ]
	[ "$(value 'pendulum_attempts_total{outcome="succeeded"}')" = 0 ]
	[ "$(printf '%s\n' "$output" | grep -c '^pendulum_queue_depth')" -eq 0 ]
	printf '%s\n' "$output" | grep -q '^# TYPE pendulum_outbox_writes_fenced_total counter$'
	printf '%s\n' "$output" | grep -q '^# TYPE pendulum_outbox_messages gauge$'
	[ "$(value pendulum_outbox_writes_fenced_total)" = 0 ]
	[ "$(printf '%s\n' "$output" | grep -c '^pendulum_outbox_messages')" -eq 0 ]
}

@test "the format checker catches what it should" {
	output=$'# HELP x_total X.\n# TYPE x_total counter\nx_total 1\nx_total 2'
	run -1 check_exposition
	[[ "$output" == *"series twice"* ]]
	output=$'# HELP x X.\n# TYPE x counter\nx 1'
	run -1 check_exposition
	[[ "$output" == *"counter not named _total"* ]]
	output=$'# HELP x X.\n# TYPE x gauge\nx{q="a"b"} 1'
	run -1 check_exposition
	[[ "$output" == *"not a sample"* ]]
	output=$'# HELP x X.\n# TYPE x gauge\nx{q="a\\"b"} one'
	run -1 check_exposition
	output=$'# TYPE x gauge\nx 1'
	run -1 check_exposition
	[[ "$output" == *"no HELP for x"* ]]
	output=$'# HELP x X.\n# TYPE x gauge\nx{q="a\\"b\\\\c\\nd",s="2"} 1.5'
	run -0 check_exposition
}

@test "the numbers match the database" {
	make_jobs 3 PENDING q1 >/dev/null
	sql "UPDATE pendulum.jobs SET run_at = now() + interval '1 hour'
	     WHERE id = (SELECT max(id) FROM pendulum.jobs WHERE queue = 'q1')"
	sql "UPDATE pendulum.jobs SET run_at = now() - interval '42 s'
	     WHERE id = (SELECT min(id) FROM pendulum.jobs WHERE queue = 'q1')"
	make_jobs 2 RUNNING q1 >/dev/null
	make_jobs 1 LEASED q1 >/dev/null
	make_jobs 4 DEAD_LETTERED q1 >/dev/null
	make_jobs 5 SUCCEEDED q1 >/dev/null
	make_jobs 1 BLOCKED q2 >/dev/null
	make_jobs 2 CANCELLED q2 >/dev/null
	make_jobs 1 DEAD_LETTERED q3 >/dev/null
	j=$(sql "SELECT min(id) FROM pendulum.jobs")
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, outcome)
	     SELECT $j, g, g, (ARRAY['succeeded', 'succeeded', 'succeeded', 'failed', 'failed',
	                             'lease_expired', 'timeout', NULL])[g]
	     FROM generate_series(1, 8) g"
	sql "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency, in_flight, last_seen_at)
	     VALUES ('a', 'h', 1, '{q1}', '{*}', 4, 1, now()), ('b', 'h', 2, '{q1}', '{*}', 8, 2, now()),
	            ('c', 'h', 3, '{q1}', '{*}', 16, 5, now() - interval '10 min')"
	sql "UPDATE pendulum.counters SET value = 7 WHERE name = 'writes_fenced'"

	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	check_exposition

	# every queue x state, against SQL, in order, and nothing more
	want=$(sql "SELECT format('pendulum_queue_depth{queue=\"%s\",state=\"%s\"} %s', q, s,
	              (SELECT count(*) FROM pendulum.jobs j WHERE j.queue = q AND j.state = s))
	            FROM (SELECT DISTINCT queue AS q FROM pendulum.jobs) qs,
	                 unnest(ARRAY['PENDING', 'BLOCKED', 'LEASED', 'RUNNING', 'SUCCEEDED',
	                              'DEAD_LETTERED', 'CANCELLED']) WITH ORDINALITY AS st(s, i)
	            ORDER BY q, i")
	[ "$(printf '%s\n' "$output" | grep '^pendulum_queue_depth{')" = "$want" ]
	[ "$(printf '%s\n' "$want" | wc -l)" -eq 21 ]
	want=$(sql "SELECT format('pendulum_dead_letters{queue=\"%s\"} %s', queue,
	              count(*) FILTER (WHERE state = 'DEAD_LETTERED'))
	            FROM pendulum.jobs GROUP BY queue ORDER BY queue")
	[ "$(printf '%s\n' "$output" | grep '^pendulum_dead_letters{')" = "$want" ]
	want=$(sql "SELECT format('pendulum_queue_runnable{queue=\"%s\"} %s', queue,
	              count(*) FILTER (WHERE state = 'PENDING' AND run_at <= now()))
	            FROM pendulum.jobs GROUP BY queue ORDER BY queue")
	[ "$(printf '%s\n' "$output" | grep '^pendulum_queue_runnable{')" = "$want" ]
	[ "$(value 'pendulum_queue_depth{queue="q1",state="PENDING"}')" = 3 ]
	[ "$(value 'pendulum_queue_depth{queue="q1",state="DEAD_LETTERED"}')" = 4 ]
	[ "$(value 'pendulum_queue_runnable{queue="q1"}')" = 2 ]

	age=$(value 'pendulum_oldest_runnable_age_seconds{queue="q1"}')
	awk -v a="$age" 'BEGIN { exit !(a >= 42 && a < 100) }' || { echo "age $age"; return 1; }
	[ "$(value 'pendulum_oldest_runnable_age_seconds{queue="q2"}')" = 0 ]

	[ "$(value pendulum_writes_fenced_total)" = 7 ]
	[ "$(value pendulum_workers)" = 2 ]
	[ "$(value pendulum_workers_stale)" = 1 ]
	[ "$(value pendulum_worker_in_flight)" = 3 ]
	[ "$(value pendulum_worker_concurrency)" = 12 ]
	want=$(sql "SELECT format('pendulum_attempts_total{outcome=\"%s\"} %s', o,
	              (SELECT count(*) FROM pendulum.job_attempts WHERE outcome = o))
	            FROM unnest(ARRAY['succeeded', 'failed', 'terminal', 'timeout', 'could_not_start',
	                              'lease_expired', 'lease_lost', 'released', 'claim_lost',
	                              'snoozed', 'cancelled']) WITH ORDINALITY AS x(o, i)
	            ORDER BY i")
	[ "$(printf '%s\n' "$output" | grep '^pendulum_attempts_total{')" = "$want" ]
	[ "$(value 'pendulum_attempts_total{outcome="succeeded"}')" = 3 ]
	[ "$(value 'pendulum_attempts_total{outcome="failed"}')" = 2 ]
}

@test "outbox series match the database" {
	for t in orders billing orders orders audit; do
		sql "SELECT pendulum.outbox_record('default', '$t', '{}')" >/dev/null
	done
	sql "UPDATE pendulum.outbox SET state = 'PUBLISHED' WHERE id = (SELECT min(id) FROM pendulum.outbox)"
	sql "UPDATE pendulum.outbox SET state = 'DEAD_LETTERED'
	     WHERE id = (SELECT max(id) FROM pendulum.outbox WHERE topic = 'orders')"
	sql "UPDATE pendulum.outbox SET created_at = now() - interval '90 s'
	     WHERE state = 'PENDING' AND topic = 'orders'"
	sql "UPDATE pendulum.outbox SET state = 'PUBLISHED' WHERE topic = 'audit'"
	sql "UPDATE pendulum.counters SET value = 4 WHERE name = 'outbox_writes_fenced'"
	sql "UPDATE pendulum.counters SET value = 9 WHERE name = 'writes_fenced'"

	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	check_exposition
	want=$(sql "SELECT format('pendulum_outbox_messages{topic=\"%s\",state=\"%s\"} %s', t, s,
	              (SELECT count(*) FROM pendulum.outbox o WHERE o.topic = t AND o.state = s))
	            FROM (SELECT DISTINCT topic AS t FROM pendulum.outbox) ts,
	                 unnest(ARRAY['PENDING', 'PUBLISHED', 'DEAD_LETTERED']) WITH ORDINALITY AS st(s, i)
	            ORDER BY t COLLATE \"C\", i")
	[ "$(printf '%s\n' "$output" | grep '^pendulum_outbox_messages{')" = "$want" ]
	[ "$(printf '%s\n' "$want" | wc -l)" -eq 9 ]
	[ "$(value 'pendulum_outbox_messages{topic="orders",state="PENDING"}')" = 1 ]
	[ "$(value 'pendulum_outbox_messages{topic="orders",state="PUBLISHED"}')" = 1 ]
	[ "$(value 'pendulum_outbox_messages{topic="orders",state="DEAD_LETTERED"}')" = 1 ]
	age=$(value 'pendulum_outbox_oldest_pending_age_seconds{topic="orders"}')
	awk -v a="$age" 'BEGIN { exit !(a >= 90 && a < 150) }' || { echo "age $age"; return 1; }
	[ "$(value 'pendulum_outbox_oldest_pending_age_seconds{topic="audit"}')" = 0 ]
	b=$(value 'pendulum_outbox_oldest_pending_age_seconds{topic="billing"}')
	awk -v a="$b" 'BEGIN { exit !(a >= 0 && a < 60) }' || { echo "billing age $b"; return 1; }
	[ "$(printf '%s\n' "$output" | grep -c '^pendulum_outbox_oldest_pending_age_seconds{')" -eq 3 ]
	[ "$(value pendulum_outbox_writes_fenced_total)" = 4 ]
	[ "$(value pendulum_writes_fenced_total)" = 9 ]

	run --separate-stderr pd-admin metrics --json
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e -s '
		(map(select(.name == "pendulum_outbox_writes_fenced_total"))[0] | .value == 4 and .type == "counter")
		and (map(select(.name == "pendulum_outbox_messages" and .labels == {topic: "billing", state: "PENDING"}))[0]
		     | .value == 1 and .type == "gauge")'
}

@test "--stale decides which workers count as live" {
	sql "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency, in_flight, last_seen_at)
	     VALUES ('a', 'h', 1, '{q1}', '{*}', 4, 1, now() - interval '30 s'),
	            ('b', 'h', 2, '{q1}', '{*}', 8, 2, now() - interval '10 min')"
	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	[ "$(value pendulum_workers)" = 1 ]
	run --separate-stderr pd-admin metrics --stale 1h
	[ "$status" -eq 0 ]
	[ "$(value pendulum_workers)" = 2 ]
	[ "$(value pendulum_worker_in_flight)" = 3 ]
	run --separate-stderr pd-admin metrics --stale 10s
	[ "$status" -eq 0 ]
	[ "$(value pendulum_workers)" = 0 ]
	[ "$(value pendulum_workers_stale)" = 2 ]
}

@test "queue names are escaped in labels and the output stays valid" {
	sql "INSERT INTO pendulum.jobs (queue, job_type) VALUES (E'we\"ird\\\\q\nx', 't'), ('plain', 't')"
	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	check_exposition
	[ "$(value 'pendulum_queue_depth{queue="we\"ird\\q\nx",state="PENDING"}')" = 1 ]
	[ "$(value 'pendulum_queue_depth{queue="plain",state="PENDING"}')" = 1 ]
}

@test "metrics after real work: a worker's attempts are counted" {
	for _ in 1 2 3; do pd-enqueue ok '{}' >/dev/null; done
	pd-enqueue bad '{}' >/dev/null
	timeout 60 pd-worker --until-idle --poll 200ms --handler 'ok=true' --handler 'bad=exit 65' 2>/dev/null
	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	check_exposition
	[ "$(value 'pendulum_attempts_total{outcome="succeeded"}')" = 3 ]
	[ "$(value 'pendulum_attempts_total{outcome="terminal"}')" = 1 ]
	[ "$(value 'pendulum_queue_depth{queue="default",state="SUCCEEDED"}')" = 3 ]
	[ "$(value 'pendulum_dead_letters{queue="default"}')" = 1 ]
	[ "$(value pendulum_workers)" = 0 ] # it unregistered on exit
}

@test "metrics --json: one object a sample, the same numbers" {
	make_jobs 2 DEAD_LETTERED q1 >/dev/null
	sql "UPDATE pendulum.counters SET value = 5 WHERE name = 'writes_fenced'"
	run --separate-stderr pd-admin metrics
	text=$output
	run --separate-stderr pd-admin metrics --json
	[ "$status" -eq 0 ]
	json_lines_ok
	# as many samples as the text has
	[ "$(printf '%s\n' "$output" | wc -l)" -eq "$(printf '%s\n' "$text" | grep -vc '^#')" ]
	printf '%s\n' "$output" | jq -e -s '
		(map(select(.name == "pendulum_dead_letters" and .labels.queue == "q1"))[0]
		 | .value == 2 and .type == "gauge")
		and (map(select(.name == "pendulum_writes_fenced_total"))[0] | .value == 5 and .type == "counter")
		and (map(select(.name == "pendulum_queue_depth" and .labels == {queue: "q1", state: "DEAD_LETTERED"}))[0].value == 2)'
	[ "$(pd-admin --json metrics | wc -l)" -eq "$(printf '%s\n' "$output" | wc -l)" ]
}

@test "metrics: unreachable database exits 69 with nothing on stdout" {
	run --separate-stderr pd-admin -d "host=/nonexistent-dir port=5999 dbname=x" metrics
	[ "$status" -eq 69 ]
	[ -z "$output" ]
}
