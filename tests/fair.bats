#!/usr/bin/env bats
# Issue 23's acceptance: fair shares across tenants (weighted round-robin,
# priority above it), limits by key that hold across the fleet (concurrency,
# rate, pause), on real workers and the claim of sql/020_fair.sql.

# SQL is single-quoted on purpose.
# shellcheck disable=SC2016

load helpers

pd_db_hooks

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.limits, pendulum.tenants"
	D=$BATS_TEST_TMPDIR
}

# jobs N TENANT [QUEUE [TYPE [PRIORITY [KEY]]]]: N PENDING jobs, due now, in
# one statement, created (and due) after every job already there.
jobs() {
	local key=${6:+"'$6'"}
	sql "INSERT INTO pendulum.jobs (tenant_id, queue, job_type, priority, concurrency_key,
	       run_at, created_at, payload)
	     SELECT '$2', '${3:-default}', '${4:-noop}', ${5:-0}, ${key:-NULL},
	            now() + g * interval '1 us', now() + g * interval '1 us', jsonb_build_object('i', g)
	       FROM generate_series(1, $1) g"
}

# all_started TENANT: every job of TENANT has started.
all_started() {
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE tenant_id = '$1' AND started_at IS NULL" 0
}

# succeeded N [WHERE]: N jobs (matching WHERE) have succeeded.
succeeded() {
	sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED' AND ${2:-true}" "$1"
}

# max_overlap FILE: the most 's ID' lines not yet closed by their 'e ID'
# line, over FILE (written under flock: its order is the order of events).
max_overlap() {
	awk '$1 == "s" { c++; if (c > m) m = c } $1 == "e" { c-- } END { print m + 0 }' "$1"
}

# recorder FILE: a handler script that appends "s ID" to FILE, sleeps 50 ms,
# then appends "e ID", each under flock of FILE.lock; prints its path.
recorder() {
	cat >"$D/rec.sh" <<-EOF
		#!/bin/sh
		flock '$1.lock' sh -c 'echo "s \$PD_JOB_ID" >>"\$0"' '$1'
		sleep 0.05
		flock '$1.lock' sh -c 'echo "e \$PD_JOB_ID" >>"\$0"' '$1'
	EOF
	echo "$D/rec.sh"
}

@test "tenant B's 10 jobs are claimed before tenant A, 20,000 jobs ahead, has 100 claimed, and finish before A has finished 5,000" {
	jobs 20000 a
	jobs 10 b
	start_worker w1 --quiet --exec noop=/bin/true -j 16 --batch 16 --lease 2s
	start_worker w2 --quiet --exec noop=/bin/true -j 16 --batch 16 --lease 2s
	wait_for 60 succeeded 10 "tenant_id = 'b'"
	kill_all_bg
	# The claim's order is the lease tokens' (a sequence each claim draws
	# from): B's jobs go in the first claims, where a queue in age order
	# would hand out all of A's 20,000 first. Each job's first claim: on a
	# loaded machine a 2 s lease can lapse, and the job is claimed again,
	# later, under a new token (one make check beside another saw B's last
	# token come after 100 of A's).
	run sql "WITH f AS (SELECT j.tenant_id, least(j.lease_token, (SELECT min(a.lease_token)
	                      FROM pendulum.job_attempts a WHERE a.job_id = j.id)) AS tok
	                      FROM pendulum.jobs j WHERE j.lease_token IS NOT NULL)
	         SELECT count(*) FROM f WHERE tenant_id = 'a' AND tok < (SELECT max(tok) FROM f WHERE tenant_id = 'b')"
	echo "# A's jobs claimed before B's last: $output (B's attempts: $(sql "SELECT string_agg(attempt::text, ',') FROM pendulum.jobs WHERE tenant_id = 'b'"))" >&3
	[ "$status" -eq 0 ]
	[ "$output" -lt 100 ]
	# Finishing also depends on how soon each handler gets the CPU: one
	# make check beside another measured 529 A jobs finished by B's last,
	# hence the generous bound (age order would be about 20,000).
	run sql "SELECT count(*) FROM pendulum.jobs
	         WHERE tenant_id = 'a' AND state = 'SUCCEEDED'
	           AND finished_at <= (SELECT max(finished_at) FROM pendulum.jobs WHERE tenant_id = 'b')"
	echo "# A's jobs finished by B's last: $output" >&3
	[ "$status" -eq 0 ]
	[ "$output" -lt 5000 ]
}

@test "weight 3 against 1, 1,500 jobs each: past A's first 300 claimed, the claims hand A 2.5 to 3.5 times as many as B while both have backlog" {
	sql "SELECT pendulum.set_tenant_weight('a', 3)"
	jobs 1500 b
	jobs 1500 a
	start_worker w1 --quiet --exec noop=/bin/true -j 16 --batch 16 --lease 2s
	start_worker w2 --quiet --exec noop=/bin/true -j 16 --batch 16 --lease 2s
	# Measured in the claims' order (the lease tokens each claim draws): A,
	# three times B's share, runs out first, and its last claim ends the
	# window, which opens after A's 300th (each worker's first claims start
	# with no cursor of their own). Counted by start times instead, the
	# window also takes in B's starts while A's last claimed jobs wait for
	# the CPU: 1.9-3.1 to 1 beside two other make checks, where the claims
	# were 2.96-3.14 to 1 in the same runs.
	wait_for 120 all_started a
	kill_all_bg
	run sql "WITH a AS (SELECT lease_token FROM pendulum.jobs WHERE tenant_id = 'a'),
	              t AS (SELECT (SELECT lease_token FROM a ORDER BY lease_token OFFSET 299 LIMIT 1) AS t0,
	                           (SELECT max(lease_token) FROM a) AS t1)
	         SELECT count(*) FILTER (WHERE tenant_id = 'a') || ' ' || count(*) FILTER (WHERE tenant_id = 'b')
	           FROM pendulum.jobs, t WHERE lease_token > t.t0 AND lease_token <= t.t1"
	echo "# claims of A and B in the window: $output" >&3
	read -r na nb <<<"$output"
	[ "$na" -eq 1200 ]
	[ "$((nb * 25))" -le "$((na * 10))" ]
	[ "$((nb * 35))" -ge "$((na * 10))" ]
}

# Each worker runs at most 2: 3 at once needs two workers' jobs at once,
# so the cap is seen to hold across the fleet, not within one worker.
@test "key limit 3 across 3 workers of -j 2: never more than 3 at once, all 200 run" {
	sql "SELECT pendulum.limit_concurrency('vendor', 3)"
	jobs 200 a default rec 0 vendor
	rec=$(recorder "$D/events")
	start_worker w1 --quiet --handler "rec=sh $rec" -j 2 --lease 2s --poll 100ms
	start_worker w2 --quiet --handler "rec=sh $rec" -j 2 --lease 2s --poll 100ms
	start_worker w3 --quiet --handler "rec=sh $rec" -j 2 --lease 2s --poll 100ms
	wait_for 120 succeeded 200
	run max_overlap "$D/events"
	echo "most at once: $output"
	[ "$output" -eq 3 ]
	run grep -c '^s ' "$D/events"
	[ "$output" -eq 200 ]
	run sql "SELECT count(DISTINCT lease_owner) FROM pendulum.jobs"
	echo "workers that ran some: $output"
	[ "$output" -ge 2 ]
}

@test "key limit 3: kill -9 of a worker holding some frees their slots once the leases are reaped" {
	sql "SELECT pendulum.limit_concurrency('vendor', 3)"
	jobs 8 a default gated 0 vendor
	local h="echo \$PD_JOB_ID >>'$D/started'; while [ ! -e '$D/gate' ]; do sleep 0.05; done"
	start_worker w1 --quiet --handler "gated=$h" -j 8 --lease 2s
	start_worker w2 --quiet --handler "gated=$h" -j 8 --lease 2s
	start_worker w3 --quiet --handler "gated=$h" -j 8 --lease 2s
	wait_for 30 lines_at_least "$D/started" 3
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING'" 3
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING' AND parked_on = 'vendor'" 5
	# The worker that holds the oldest running job: killed, its handlers left.
	victim=$(sql "SELECT w.pid FROM pendulum.jobs j JOIN pendulum.workers w ON w.id = j.lease_owner
	              WHERE j.state = 'RUNNING' ORDER BY j.id LIMIT 1")
	held=$(sql "SELECT count(*) FROM pendulum.jobs j JOIN pendulum.workers w ON w.id = j.lease_owner
	            WHERE j.state = 'RUNNING' AND w.pid = $victim")
	for n in w1 w2 w3; do
		[ "$(bg_pid "$n")" != "$victim" ] || name=$n
	done
	stop_bg "$name" KILL
	# Nothing renews them now: the first of their leases ends at $expiry.
	expiry=$(sql "SELECT min(j.lease_expires_at) FROM pendulum.jobs j JOIN pendulum.workers w
	              ON w.id = j.lease_owner WHERE j.state = 'RUNNING' AND w.pid = $victim")
	[ -n "$expiry" ]
	wait_for 30 lines_at_least "$D/started" "$((3 + held))"
	wait_for 10 sql_is "SELECT pendulum.limit_running('vendor')" 3
	run lines "$D/started"
	echo "started: $output, held by the killed worker: $held"
	[ "$output" -eq "$((3 + held))" ]
	# The slots came back only when the lost leases had ended.
	run sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING' AND started_at > '$expiry'"
	[ "$output" -eq "$held" ]
	run sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING' AND started_at <= '$expiry'"
	[ "$output" -eq "$((3 - held))" ]
}

# rate_run: 100 jobs on key 'mail' limited to 20 starts per 2 s, two
# workers of -j 8 until all succeeded. Each claim's instant as the limiter
# counts it (the claiming transaction's now(), which pendulum.limits.starts
# keeps) goes to table claims, by a trigger of this test. (The handler's
# exec follows its claim by the worker's latency, which the limiter does not
# see: 0.1 to 0.6 s on this machine under load.)
rate_run() {
	sql "CREATE TABLE IF NOT EXISTS public.claims (id bigint, at timestamptz);
	     TRUNCATE public.claims;
	     CREATE OR REPLACE FUNCTION public.note_claim() RETURNS trigger LANGUAGE plpgsql AS
	       'BEGIN INSERT INTO public.claims VALUES (NEW.id, now()); RETURN NULL; END';
	     DROP TRIGGER IF EXISTS note_claim ON pendulum.jobs;
	     CREATE TRIGGER note_claim AFTER UPDATE OF state ON pendulum.jobs FOR EACH ROW
	       WHEN (OLD.state = 'PENDING' AND NEW.state IN ('LEASED', 'RUNNING'))
	       EXECUTE FUNCTION public.note_claim()"
	sql "SELECT pendulum.limit_rate('mail', 20, '2 s')"
	jobs 100 a default stamp 0 mail
	start_worker w1 --quiet --handler "stamp=:" -j 8 --lease 2s --poll 100ms
	start_worker w2 --quiet --handler "stamp=:" -j 8 --lease 2s --poll 100ms
	wait_for 60 succeeded 100
	sql "DROP TRIGGER note_claim ON pendulum.jobs"
}

# A start, for the limiter, is a claim: pendulum.limits.starts gets the
# claiming transaction's now() for each job it hands out, and any period-long
# window holds at most rate of them.
@test "rate 20 per 2 s on a key with 100 jobs: no 2-second window holds more than 20 claims; all 100 finish" {
	rate_run
	run sql "SELECT count(*) FROM public.claims"
	[ "$output" -eq 100 ]
	run sql "SELECT max((SELECT count(*) FROM public.claims d
	                      WHERE d.at >= c.at AND d.at < c.at + interval '2 s'))
	           FROM public.claims c"
	echo "most claims in 2 s: $output"
	[ "$output" -le 20 ]
	# And the limit was what held them back: five windows' worth.
	run sql "SELECT max(at) - min(at) >= interval '8 s' FROM public.claims"
	[ "$output" = t ]
}

@test "a paused queue starts nothing for 5 s while its worker serves another; resume starts it" {
	sql "SELECT pendulum.limit_pause('queue:held', true)"
	jobs 5 a held noop
	start_worker w1 --quiet --exec noop=/bin/true -q held -q other -j 8 --lease 2s
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.workers WHERE pid = $(bg_pid w1)" 1
	t0=$SECONDS
	# The worker is alive and claiming: a job of its other queue runs meanwhile.
	jobs 1 a other noop
	wait_for 30 succeeded 1 "queue = 'other'"
	while [ $((SECONDS - t0)) -lt 6 ]; do
		sql_is "SELECT count(*) FROM pendulum.jobs WHERE queue = 'held' AND state = 'PENDING'" 5
		sleep 0.2
	done
	run sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'held' AND started_at IS NOT NULL"
	[ "$output" -eq 0 ]
	resumed=$(sql "SELECT now()")
	sql "SELECT pendulum.limit_pause('queue:held', false)"
	# how soon (a notification, not the next poll) is limits-admin.bats's queue pause test
	wait_for 30 succeeded 5 "queue = 'held'"
	echo "last start after resume: $(sql "SELECT max(started_at) - '$resumed' FROM pendulum.jobs WHERE queue = 'held'")"
	run sql "SELECT bool_and(started_at >= '$resumed') FROM pendulum.jobs WHERE queue = 'held'"
	[ "$output" = t ]
}

# claims N TIMES [QUEUES]: TIMES claims of N through pendulum.claim_jobs_fair,
# each in its own transaction with the cursor the one before returned, as a
# worker makes them; each claimed job's tenant into table got (claim, tenant,
# priority).
claims() {
	local n=$1 times=$2 queues=${3:-'{default}'} cur=NULL c out
	sql "DROP TABLE IF EXISTS got; CREATE TABLE got (claim int, tenant text, priority int)"
	for ((c = 1; c <= times; c++)); do
		out=$(sql "WITH c AS (SELECT * FROM pendulum.claim_jobs_fair('$queues', NULL, $n, 'test',
		             interval '1 min', false, $cur)),
		           i AS (INSERT INTO got SELECT $c, (c.job).tenant_id, (c.job).priority FROM c
		                  WHERE (c.job).id IS NOT NULL)
		           SELECT fair_next FROM c LIMIT 1")
		cur=${out:+"'$out'::jsonb"}
		cur=${cur:-NULL}
	done
}

@test "300 tenants of 20 jobs each: claims of 7 with the cursor visit every tenant before any gets a second" {
	# Tenant by tenant, so that by age t001 would get its 20 first.
	sql "INSERT INTO pendulum.jobs (tenant_id, job_type, run_at, created_at)
	     SELECT 't' || lpad(t::text, 3, '0'), 'noop', now() + (t * 20 + g) * interval '1 us',
	            now() + (t * 20 + g) * interval '1 us'
	       FROM generate_series(1, 300) t, generate_series(1, 20) g"
	claims 7 43
	run sql "SELECT count(*) || ' ' || count(DISTINCT tenant) FROM got WHERE claim <= 42"
	echo "first 42 claims, jobs and tenants: $output"
	[ "$output" = "294 294" ]
	run sql "SELECT count(*) || ' ' || count(DISTINCT tenant) FROM got"
	echo "43 claims, jobs and tenants: $output"
	[ "$output" = "301 300" ]
}

@test "priority wins over fairness: tenant A's high-priority backlog goes before B's older normal jobs" {
	jobs 30 b
	jobs 30 a default noop 10
	claims 8 8
	run sql "SELECT string_agg(tenant || ':' || n, ' ' ORDER BY claim, tenant)
	           FROM (SELECT claim, tenant, count(*) AS n FROM got GROUP BY 1, 2) s"
	echo "per claim: $output"
	[ "$output" = "a:8 a:8 a:8 a:6 b:2 b:8 b:8 b:8 b:4" ]
	# And on a worker: every start of A's before the first of B's.
	sql "TRUNCATE pendulum.jobs CASCADE"
	jobs 30 b
	jobs 30 a default noop 10
	# The handler itself records the order the runs began (-j 1: one at a
	# time). Not started_at: a job prefetched and over before its start was
	# written gets now() less the ms the worker measured, and the server's
	# now() lags the worker's clock by each round trip's queueing, so two
	# starts 1 ms apart can be recorded the other way round under load.
	start_worker w1 --quiet --handler "noop=$(counting_handler "$BATS_TEST_TMPDIR/runs")" -j 1 --lease 2s
	wait_for 30 succeeded 60
	cut -d' ' -f1 "$BATS_TEST_TMPDIR/runs" >"$BATS_TEST_TMPDIR/order"
	run sql "SELECT string_agg(tenant_id, '' ORDER BY o.n)
	           FROM unnest(string_to_array('$(paste -sd, "$BATS_TEST_TMPDIR/order")', ',')::bigint[])
	                WITH ORDINALITY o(id, n) JOIN pendulum.jobs j ON j.id = o.id"
	echo "runs by tenant: $output"
	[ "$output" = "$(printf 'a%.0s' $(seq 30))$(printf 'b%.0s' $(seq 30))" ]
}
