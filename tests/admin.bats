#!/usr/bin/env bats
# pd-admin: listing, filtering and paging jobs; job show; replay and cancel
# and their refusals; the dead-letter queue; queues, depth and workers; top;
# --json on every listing.

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

# jobs_ids ARGS...: the ids `pd-admin --json jobs ARGS` lists, space-separated.
jobs_ids() {
	pd-admin --json jobs "$@" | jq -r .id | tr '\n' ' '
}

@test "every subcommand has its own --help on stdout" {
	for c in "migrate" "jobs" "job show" "job replay" "job cancel" "dlq list" "dlq replay" \
		"dlq delete" "dlq purge" "queues" "depth" "workers" "metrics" "top" "tenant set" "tenants" \
		"limit set" "limit unset" "limits" "queue pause" "queue resume"; do
		# shellcheck disable=SC2086 # two words on purpose
		run --separate-stderr pd-admin $c --help
		[ "$status" -eq 0 ] || { echo "$c: $status"; return 1; }
		[[ "$output" == "usage: pd-admin $c"* ]] || { echo "$c: $output"; return 1; }
		[ -z "$stderr" ]
	done
	run --separate-stderr pd-admin job --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"pd-admin job replay ID"* ]]
}

@test "every option in a subcommand's --help is in the man page" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	man_opts=$(mandoc -T ascii "$PD_ROOT/man/pd-admin.1" | col -b | grep -oE -- '--[a-z][a-z-]+' | sort -u)
	for c in "migrate" "jobs" "job show" "job replay" "job cancel" "dlq list" "dlq replay" \
		"dlq delete" "dlq purge" "queues" "depth" "workers" "metrics" "top" "tenant set" "tenants" \
		"limit set" "limit unset" "limits" "queue pause" "queue resume"; do
		# shellcheck disable=SC2086 # two words on purpose
		help_opts=$(pd-admin $c --help | grep -oE -- '--[a-z][a-z-]+' | sort -u)
		missing=$(comm -23 <(echo "$help_opts") <(echo "$man_opts"))
		[ -z "$missing" ] || { echo "$c: not in the man page: $missing"; return 1; }
	done
}

@test "a group without its command, or with an unknown one, exits 64" {
	run --separate-stderr pd-admin job
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"pd-admin: missing job command"* ]]
	run --separate-stderr pd-admin dlq frob
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"pd-admin: unknown dlq command 'frob'"* ]]
	[[ "$stderr" == *"pd-admin dlq purge --older-than DURATION"* ]]
}

@test "usage errors exit 64 and name what is wrong" {
	run --separate-stderr pd-admin jobs --state FINISHED
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-admin: option --state: unknown state 'FINISHED'"* ]]
	run --separate-stderr pd-admin jobs --limit 0
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--limit"* ]]
	run --separate-stderr pd-admin jobs --offset -1
	[ "$status" -eq 64 ]
	run --separate-stderr pd-admin jobs extra
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unexpected argument 'extra'"* ]]
	run --separate-stderr pd-admin job show
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"missing job id"* ]]
	[[ "$stderr" == *"Try 'pd-admin job show --help'"* ]]
	run --separate-stderr pd-admin job show 12x
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"invalid job id '12x'"* ]]
	run --separate-stderr pd-admin job replay 0
	[ "$status" -eq 64 ]
	run --separate-stderr pd-admin job cancel 1 --reason
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option '--reason' needs a value"* ]]
	run --separate-stderr pd-admin queues --limit 3
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"unknown option '--limit'"* ]]
	run --separate-stderr pd-admin depth
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"missing queue name"* ]]
	run --separate-stderr pd-admin workers --stale soon
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option --stale: invalid duration 'soon'"* ]]
}

@test "jobs: newest first, with the total, in a table" {
	a=$(make_job PENDING)
	b=$(make_job SUCCEEDED)
	c=$(make_job DEAD_LETTERED)
	run --separate-stderr pd-admin jobs
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "ID  TYPE  STATE"*"ATTEMPTS  REPLAYS  QUEUE"*"TENANT"*"AGE"*"NOTE" ]]
	[[ "${lines[1]}" == "$c "*"DEAD_LETTERED  1/25 "*"terminal exit code" ]]
	[[ "${lines[2]}" == "$b "*"SUCCEEDED "* ]]
	[[ "${lines[3]}" == "$a "*"PENDING "*"0/25 "* ]]
	[ "${lines[4]}" = "1-3 of 3 jobs" ]
	[ "${#lines[@]}" -eq 5 ]
}

@test "jobs: filters by state, queue, tenant and type, and their totals" {
	make_jobs 3 PENDING q1 email acme >/dev/null
	make_jobs 2 RUNNING q1 email acme >/dev/null
	make_jobs 4 PENDING q2 sms acme >/dev/null
	make_jobs 2 DEAD_LETTERED q2 email other >/dev/null
	make_jobs 1 BLOCKED q1 sms other >/dev/null
	total() { pd-admin --json jobs "$@" | jq -s 'if length == 0 then 0 else .[0].total end'; }
	count() { pd-admin --json jobs "$@" | jq -s length; }
	[ "$(total)" -eq 12 ]
	[ "$(total --state PENDING)" -eq 7 ]
	[ "$(count --state PENDING)" -eq 7 ]
	[ "$(total --state pending,blocked)" -eq 8 ]
	[ "$(total --state PENDING --state RUNNING)" -eq 9 ]
	[ "$(total --queue q1)" -eq 6 ]
	[ "$(total --tenant other)" -eq 3 ]
	[ "$(total --type email --queue q2)" -eq 2 ]
	[ "$(total --type email --queue q2 --state DEAD_LETTERED --tenant other)" -eq 2 ]
	[ "$(total --queue nope)" -eq 0 ]
	[ "$(count --queue nope)" -eq 0 ]
	# every row matches its filter
	pd-admin --json jobs --queue q2 --type sms | jq -e -s 'all(.queue == "q2" and .job_type == "sms") and length == 4'
	pd-admin --json jobs --tenant other | jq -e -s 'all(.tenant_id == "other")'
	pd-admin --json jobs --state RUNNING | jq -e -s 'all(.state == "RUNNING" and .lease_owner == "test-worker" and .lease_expires_in_s > 0)'
}

@test "jobs: --limit and --offset page through newest first" {
	ids=$(make_jobs 12 PENDING | sort -rn | tr '\n' ' ')
	# shellcheck disable=SC2086
	set -- $ids # newest first
	[ "$(jobs_ids --limit 5)" = "$1 $2 $3 $4 $5 " ]
	[ "$(jobs_ids --limit 5 --offset 5)" = "$6 $7 $8 $9 ${10} " ]
	[ "$(jobs_ids --limit 5 --offset 10)" = "${11} ${12} " ]
	[ "$(jobs_ids --offset 12)" = "" ]
	run --separate-stderr pd-admin jobs --limit 5 --offset 5
	[ "$status" -eq 0 ]
	[ "${lines[${#lines[@]} - 1]}" = "6-10 of 12 jobs" ]
	run --separate-stderr pd-admin jobs --offset 20
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[1]}" = "0 of 12 jobs (past the last page)" ]
	# the default page is 50
	make_jobs 45 PENDING >/dev/null
	[ "$(pd-admin --json jobs | jq -s length)" -eq 50 ]
	[ "$(pd-admin --json jobs | jq -s '.[0].total')" -eq 57 ]
}

@test "--json after the subcommand is the same as before it" {
	make_jobs 2 PENDING >/dev/null
	a=$(pd-admin --json jobs | jq -c 'del(.age_s)')
	b=$(pd-admin jobs --json | jq -c 'del(.age_s)')
	[ "$a" = "$b" ]
	[ -n "$a" ]
}

@test "job show: every field, the result, and the attempt chain with stderr tails" {
	id=$(make_job DEAD_LETTERED q9 boom acme)
	sql "UPDATE pendulum.jobs SET attempt = 2, payload = '{\"n\": 1}', idempotency_key = 'k-1' WHERE id = $id"
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, worker, started_at,
	       finished_at, outcome, exit_code, signal, stderr_tail) VALUES
	     ($id, 1, 101, 'w1', now() - interval '90 s', now() - interval '88 s', 'timeout', NULL, 15,
	      E'first line\nkilled after 2s\n'),
	     ($id, 2, 102, 'w2', now() - interval '60 s', now() - interval '59.5 s', 'terminal', 65, NULL,
	      E'poison: bad payload\n')"
	run --separate-stderr pd-admin job show "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *"state "*"DEAD_LETTERED"* ]]
	[[ "$output" == *"queue "*"q9"* ]]
	[[ "$output" == *"tenant_id "*"acme"* ]]
	[[ "$output" == *"attempts "*"2/25"* ]]
	[[ "$output" == *"idempotency_key "*"k-1"* ]]
	[[ "$output" == *"dead_reason "*"terminal exit code"* ]]
	[[ "$output" == *'payload '*'{"n": 1}'* ]]
	printf '%s\n' "$output" | grep -E '^ATTEMPT +TOKEN +WORKER +STARTED +DURATION +OUTCOME +EXIT +SIGNAL +STDERR$'
	printf '%s\n' "$output" | grep -E '^1 +101 +w1 +[0-9T:.Z-]+ +2s +timeout +- +15 +killed after 2s$'
	printf '%s\n' "$output" | grep -E '^2 +102 +w2 +[0-9T:.Z-]+ +0.5s +terminal +65 +- +poison: bad payload$'
	[[ "$output" == *"stderr of attempt 1 (token 101):"$'\n'"  first line"$'\n'"  killed after 2s"* ]]

	run --separate-stderr pd-admin --json job show "$id"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	printf '%s\n' "$output" | jq -e --argjson id "$id" '
		.id == $id and .state == "DEAD_LETTERED" and .payload == {n: 1}
		and .result == null and .replay_count == 0 and .attempt == 2
		and (.attempts | length) == 2
		and .attempts[0].outcome == "timeout" and .attempts[0].signal == 15
		and .attempts[0].duration_s == 2 and .attempts[0].stderr_tail == "first line\nkilled after 2s\n"
		and .attempts[1].exit_code == 65 and .attempts[1].worker == "w2"'
}

@test "job show: the result of a succeeded job; an unknown job exits 2" {
	id=$(make_job SUCCEEDED)
	run --separate-stderr pd-admin --json job show "$id"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e '.result == {ok: true} and .attempts == [] and .result_is_text == false'
	run --separate-stderr pd-admin job show "$id"
	[[ "$output" == *"no attempts yet"* ]]
	run --separate-stderr pd-admin job show 987654
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[ "$stderr" = "pd-admin: job 987654 not found" ]
}

@test "job replay: from SUCCEEDED, DEAD_LETTERED and CANCELLED; attempts reset, replay_count grows" {
	for st in SUCCEEDED DEAD_LETTERED CANCELLED; do
		id=$(make_job "$st" qr)
		sql "UPDATE pendulum.jobs SET replay_count = 3, attempt = 5, run_at = now() + interval '1 day'
		     WHERE id = $id"
		run --separate-stderr pd-admin job replay "$id"
		[ "$status" -eq 0 ] || { echo "$st: $status $stderr"; return 1; }
		[ "$output" = "job $id replayed: PENDING, replay_count 4 (t, queue qr)" ]
		[ "$(sql "SELECT state, attempt, replay_count, run_at <= now(), finished_at IS NULL,
		          dead_reason IS NULL, last_error IS NULL, result IS NULL, lease_owner IS NULL
		          FROM pendulum.jobs WHERE id = $id")" = "PENDING|0|4|t|t|t|t|t|t" ]
	done
	# replay again after it ends again: the count keeps growing
	sql "UPDATE pendulum.jobs SET state = 'SUCCEEDED' WHERE id = $id"
	run --separate-stderr pd-admin --json job replay "$id"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e --argjson id "$id" '.id == $id and .state == "PENDING" and .replay_count == 5'
}

@test "job replay refuses live jobs with exit 1 naming the state, and changes nothing" {
	for st in PENDING BLOCKED LEASED RUNNING; do
		id=$(make_job "$st")
		before=$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")
		run --separate-stderr pd-admin job replay "$id"
		[ "$status" -eq 1 ] || { echo "$st: $status"; return 1; }
		[ -z "$output" ]
		[ "$stderr" = "pd-admin: job $id is $st; replay works only from SUCCEEDED, DEAD_LETTERED or CANCELLED" ]
		[ "$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")" = "$before" ]
	done
	run --separate-stderr pd-admin job replay 424242
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: job 424242 not found" ]
}

@test "job cancel: PENDING and BLOCKED at once, LEASED and RUNNING asked of their worker, with the reason kept" {
	p=$(make_job PENDING)
	b=$(make_job BLOCKED)
	run --separate-stderr pd-admin job cancel "$p" --reason "customer asked"
	[ "$status" -eq 0 ]
	[ "$output" = "job $p cancelled (t, queue default)" ]
	[ "$(sql "SELECT state, dead_reason, last_error, finished_at IS NOT NULL FROM pendulum.jobs WHERE id = $p")" = \
		"CANCELLED|customer asked|customer asked|t" ]
	run --separate-stderr pd-admin --json job cancel "$b"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e --argjson id "$b" '.id == $id and .state == "CANCELLED" and .dead_reason == "cancelled by operator"'
	for st in LEASED RUNNING; do
		id=$(make_job "$st")
		run --separate-stderr pd-admin job cancel "$id" --reason "r $st"
		[ "$status" -eq 0 ] || { echo "$st: $status"; return 1; }
		[ "$output" = "job $id: cancel asked of worker test-worker (t, $st, queue default)" ]
		[ "$(sql "SELECT state || '|' || cancel_reason || '|' || (cancel_requested_at IS NOT NULL) FROM pendulum.jobs WHERE id = $id")" = \
			"$st|r $st|true" ]
	done
	for st in SUCCEEDED DEAD_LETTERED CANCELLED; do
		id=$(make_job "$st")
		run --separate-stderr pd-admin job cancel "$id"
		[ "$status" -eq 1 ] || { echo "$st: $status"; return 1; }
		[ "$stderr" = "pd-admin: job $id is $st; cancel works only from PENDING, BLOCKED, LEASED or RUNNING" ]
		[ "$(job_state "$id")" = "$st" ]
	done
	run --separate-stderr pd-admin job cancel 424242
	[ "$status" -eq 2 ]
}

@test "a cancelled job is never run; a replayed one runs again and sees its replay count" {
	log=$BATS_TEST_TMPDIR/runs
	handler='echo "$PD_JOB_ID $PD_REPLAY_COUNT $PD_ATTEMPT" >>'"'$log'"'; echo "{\"replay\": $PD_REPLAY_COUNT}"'
	keep=$(pd-enqueue t '{}')
	drop=$(pd-enqueue t '{}')
	pd-admin job cancel "$drop" >/dev/null
	timeout 60 pd-worker --until-idle --poll 200ms --handler "t=$handler" 2>/dev/null
	[ "$(cat "$log")" = "$keep 0 1" ]
	pd-admin job replay "$keep" >/dev/null
	pd-admin job replay "$drop" >/dev/null
	timeout 60 pd-worker --until-idle --poll 200ms --handler "t=$handler" 2>/dev/null
	[ "$(sort "$log" | tr '\n' ' ')" = "$(printf '%s\n' "$keep 0 1" "$keep 1 1" "$drop 1 1" | sort | tr '\n' ' ')" ]
	[ "$(sql "SELECT string_agg(state || ':' || replay_count || ':' || (result->>'replay'), ',' ORDER BY id)
	          FROM pendulum.jobs")" = "SUCCEEDED:1:1,SUCCEEDED:1:1" ]
	# the chain keeps both runs of the first job
	[ "$(pd-admin --json job show "$keep" | jq '.attempts | length')" -eq 2 ]
}

@test "replay wakes an idle worker at once (NOTIFY), not at its next poll" {
	log=$BATS_TEST_TMPDIR/runs
	id=$(pd-enqueue t '{}')
	start_worker w --poll 1h --handler "t=$(counting_handler "$log")"
	wait_for 30 lines_at_least "$log" 1
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	pd-admin job replay "$id" >/dev/null
	wait_for 30 lines_at_least "$log" 2
}

@test "dlq list: dead letters only, most recently dead first, with reason and total" {
	old=$(make_job DEAD_LETTERED q1 a default '2 hours')
	new=$(make_job DEAD_LETTERED q2 b default '1 minute')
	make_jobs 2 SUCCEEDED >/dev/null
	make_job PENDING >/dev/null
	run --separate-stderr pd-admin dlq list
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "ID "*"TYPE "*"QUEUE "*"DEAD_FOR "*"REASON "*"ERROR "*"STDERR" ]]
	[[ "${lines[1]}" == "$new "*"b "*"q2 "*"1m"*"terminal exit code  exit 65"* ]]
	[[ "${lines[2]}" == "$old "*"a "*"q1 "*"2h"*"terminal exit code  exit 65"* ]]
	[ "${lines[3]}" = "1-2 of 2 dead letters" ]
	run --separate-stderr pd-admin --json dlq list --queue q1
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e -s --argjson id "$old" 'length == 1 and .[0].id == $id and .[0].total == 1
		and .[0].dead_reason == "terminal exit code" and .[0].dead_for_s >= 7200'
	[ "$(pd-admin --json dlq list --limit 1 --offset 1 | jq .id)" = "$old" ]
}

@test "dlq replay without ids replays at most the cap, the longest dead first" {
	for i in 1 2 3 4 5 6 7; do
		eval "d$i=\$(make_job DEAD_LETTERED default t default '$((10 - i)) minutes')"
	done
	run --separate-stderr pd-admin dlq replay --limit 3
	[ "$status" -eq 0 ]
	[ "${lines[${#lines[@]} - 1]}" = "replayed 3 dead letters" ]
	# shellcheck disable=SC2154 # set by eval
	[ "$(sql "SELECT string_agg(id::text, ' ' ORDER BY id) FROM pendulum.jobs WHERE state = 'PENDING'")" = "$d1 $d2 $d3" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'")" -eq 4 ]
	run --separate-stderr pd-admin --json dlq replay --limit 2
	printf '%s\n' "$output" | jq -e -s 'length == 2 and all(.state == "PENDING" and .replay_count == 1)'
	# the default cap is 100
	make_jobs 150 DEAD_LETTERED >/dev/null
	run --separate-stderr pd-admin dlq replay
	[ "$status" -eq 0 ]
	[ "${lines[${#lines[@]} - 1]}" = "replayed 100 dead letters" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'")" -eq 52 ]
	# more than 1000 in one call is refused, and nothing moves
	run --separate-stderr pd-admin dlq replay --limit 1001
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option --limit: 1001 is out of range 1-1000"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'")" -eq 52 ]
	# filters narrow the bulk replay
	make_jobs 2 DEAD_LETTERED other >/dev/null
	run --separate-stderr pd-admin dlq replay --queue other
	[ "${lines[${#lines[@]} - 1]}" = "replayed 2 dead letters" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE queue = 'other' AND state = 'PENDING'")" -eq 2 ]
	# nothing left to match
	run --separate-stderr pd-admin dlq replay --queue other
	[ "$status" -eq 0 ]
	[ "$output" = "replayed 0 dead letters" ]
}

@test "dlq replay with ids: replays the dead letters, reports the others, exit 2 or 1" {
	d1=$(make_job DEAD_LETTERED)
	d2=$(make_job DEAD_LETTERED)
	s=$(make_job SUCCEEDED)
	run --separate-stderr pd-admin dlq replay "$d1" "$s" 999999 "$d2"
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: 2 of 4 not replayed: job $s is SUCCEEDED, not DEAD_LETTERED; job 999999 not found" ]
	[[ "$output" == *"replayed 2 dead letters"* ]]
	[ "$(job_state "$d1") $(job_state "$d2") $(job_state "$s")" = "PENDING PENDING SUCCEEDED" ]
	run --separate-stderr pd-admin dlq replay "$d1"
	[ "$status" -eq 1 ]
	[ "$stderr" = "pd-admin: 1 of 1 not replayed: job $d1 is PENDING, not DEAD_LETTERED" ]
	run --separate-stderr pd-admin dlq replay abc
	[ "$status" -eq 64 ]
}

@test "dlq delete: removes dead letters and their attempts, nothing else" {
	d=$(make_job DEAD_LETTERED)
	p=$(make_job PENDING)
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, outcome) VALUES ($d, 1, 1, 'terminal')"
	run --separate-stderr pd-admin dlq delete "$d" "$p"
	[ "$status" -eq 1 ]
	[ "$stderr" = "pd-admin: 1 of 2 not deleted: job $p is PENDING, not DEAD_LETTERED" ]
	[[ "$output" == *"deleted 1 dead letter"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE id = $d")" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $d")" -eq 0 ]
	[ "$(job_state "$p")" = PENDING ]
	run --separate-stderr pd-admin dlq delete
	[ "$status" -eq 64 ]
	run --separate-stderr pd-admin dlq delete "$d"
	[ "$status" -eq 2 ]
}

@test "dlq purge removes only dead letters older than the cutoff" {
	make_jobs 3 DEAD_LETTERED default t default '8 days' >/dev/null
	make_jobs 2 DEAD_LETTERED other t default '8 days' >/dev/null
	make_jobs 2 DEAD_LETTERED default t default '6 days' >/dev/null
	make_jobs 2 SUCCEEDED default t default '30 days' >/dev/null
	make_jobs 1 CANCELLED default t default '30 days' >/dev/null
	run --separate-stderr pd-admin dlq purge --older-than 7d --dry-run
	[ "$status" -eq 0 ]
	[ "$output" = "would purge 5 dead letters that died more than 7d ago" ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -eq 10 ]
	run --separate-stderr pd-admin dlq purge --older-than 7d --queue other
	[ "$output" = "purged 2 dead letters of queue other that died more than 7d ago" ]
	run --separate-stderr pd-admin --json dlq purge --older-than 7d
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e '.purged == 3 and .older_than_s == 604800 and .dry_run == false'
	[ "$(sql "SELECT string_agg(state || ':' || n, ',' ORDER BY state) FROM
	          (SELECT state, count(*) n FROM pendulum.jobs GROUP BY state) s")" = \
		"CANCELLED:1,DEAD_LETTERED:2,SUCCEEDED:2" ]
	run --separate-stderr pd-admin dlq purge
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"missing --older-than DURATION"* ]]
	run --separate-stderr pd-admin dlq purge --older-than forever
	[ "$status" -eq 64 ]
}

@test "queues: depth by state per queue and the oldest runnable job's age" {
	make_jobs 3 PENDING alpha >/dev/null
	sql "UPDATE pendulum.jobs SET run_at = now() - interval '100 s' WHERE id = (SELECT min(id) FROM pendulum.jobs)"
	make_jobs 1 RUNNING alpha >/dev/null
	make_jobs 2 DEAD_LETTERED alpha >/dev/null
	make_jobs 1 PENDING beta >/dev/null
	sql "UPDATE pendulum.jobs SET run_at = now() + interval '1 hour' WHERE queue = 'beta'"
	make_jobs 1 SUCCEEDED beta >/dev/null
	run --separate-stderr pd-admin queues
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "QUEUE  PENDING  BLOCKED  LEASED  RUNNING  SUCCEEDED  DEAD_LETTERED  CANCELLED  RUNNABLE  OLDEST_RUNNABLE  WORKERS  PAUSED  UNSERVED" ]]
	# no worker at all: every PENDING type is unserved, even one due later
	# 100 s old when it was set: up to 40 s more by the time pd-admin reads it
	printf '%s\n' "${lines[1]}" | grep -E '^alpha +3 +0 +0 +1 +0 +2 +0 +3 +(1m[45][0-9]s|2m(1?[0-9]s)?) +0 +no +t$'
	printf '%s\n' "${lines[2]}" | grep -E '^beta +1 +0 +0 +0 +1 +0 +0 +0 +- +0 +no +t$'
	run --separate-stderr pd-admin --json queues
	printf '%s\n' "$output" | jq -e -s '.[0].queue == "alpha" and .[0].pending == 3 and .[0].running == 1
		and .[0].dead_lettered == 2 and .[0].runnable == 3
		and .[0].oldest_runnable_age_s >= 100 and .[0].oldest_runnable_age_s < 140
		and .[1].queue == "beta" and .[1].runnable == 0 and .[1].oldest_runnable_age_s == null'
	printf '%s\n' "$output" | jq -e -s 'all(.workers == 0 and .unserved == ["t"])'
}

@test "depth QUEUE prints one number" {
	make_jobs 4 PENDING alpha >/dev/null
	make_jobs 2 DEAD_LETTERED alpha >/dev/null
	make_jobs 1 PENDING beta >/dev/null
	sql "UPDATE pendulum.jobs SET run_at = now() + interval '1 hour'
	     WHERE id = (SELECT max(id) FROM pendulum.jobs WHERE queue = 'alpha' AND state = 'PENDING')"
	run --separate-stderr pd-admin depth alpha
	[ "$status" -eq 0 ]
	[ "$output" = 4 ]
	run --separate-stderr pd-admin depth alpha --runnable
	[ "$output" = 3 ]
	run --separate-stderr pd-admin depth alpha --state dead_lettered
	[ "$output" = 2 ]
	run --separate-stderr pd-admin depth nosuchqueue
	[ "$status" -eq 0 ]
	[ "$output" = 0 ]
	run --separate-stderr pd-admin --json depth alpha
	printf '%s\n' "$output" | jq -e '.queue == "alpha" and .state == "PENDING" and .depth == 4'
	run --separate-stderr pd-admin depth alpha --state PENDING,RUNNING
	[ "$status" -eq 64 ]
}

@test "workers: host, pid, queues, in flight / concurrency, last seen; gone ones marked" {
	sql "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency, in_flight, last_seen_at)
	     VALUES ('h1:10:aaaa', 'h1', 10, '{default,email}', '{*}', 8, 3, now() - interval '2 s'),
	            ('h2:20:bbbb', 'h2', 20, '{default}', '{t}', 4, 1, now() - interval '5 min')"
	run --separate-stderr pd-admin workers
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "WORKER"*"HOST"*"PID"*"QUEUES"*"BUSY"*"LAST_SEEN"*"STATUS" ]]
	# 2 s and 5 min ago when they were set: up to 40 s more by the time pd-admin reads them
	printf '%s\n' "${lines[1]}" | grep -E '^h1:10:aaaa +h1 +10 +default,email +3/8 +([2-9]|[1-4][0-9])(\.[0-9])?s +live$'
	# a row without a lease (an older worker's) is gone after 60 s; its slots are not busy
	printf '%s\n' "${lines[2]}" | grep -E '^h2:20:bbbb +h2 +20 +default +-/4 +5m([1-3]?[0-9]s)? +gone$'
	run --separate-stderr pd-admin --json workers
	printf '%s\n' "$output" | jq -e -s '.[0].queues == ["default", "email"] and .[0].in_flight == 3
		and .[0].concurrency == 8 and .[0].gone == false and .[1].gone == true and .[1].job_types == ["t"]'
	printf '%s\n' "$output" | jq -e -s '.[1].in_flight == 0 and .[1].stale == true and .[0].stale == false'
	run --separate-stderr pd-admin --json workers --stale 10m
	printf '%s\n' "$output" | jq -e -s 'all(.gone == false)'
	# each worker's own lease is its window
	sql "UPDATE pendulum.workers SET lease_ms = 1000 WHERE id = 'h1:10:aaaa'"
	run --separate-stderr pd-admin --json workers
	printf '%s\n' "$output" | jq -e -s '.[0].gone == true and .[0].in_flight == 0 and .[0].lease_ms == 1000'
}

@test "workers lists a running pd-worker with its slots" {
	start_worker w -j 3 --heartbeat 200ms --lease 5s --handler 't=sleep 30'
	pd-enqueue t '{}' >/dev/null
	pd-enqueue t '{}' >/dev/null
	wait_for 30 eval '[ "$(pd-admin --json workers | jq .in_flight)" = 2 ]'
	run --separate-stderr pd-admin workers
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[1]}" | grep -E " $(bg_pid w) +default +2/3 .* live$"
}

@test "top without a terminal prints one snapshot and exits" {
	make_jobs 2 PENDING alpha >/dev/null
	make_job DEAD_LETTERED alpha boom >/dev/null
	run --separate-stderr timeout 10 pd-admin top
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "pendulum top  "*" UTC" ]]
	[[ "$output" == *"Queues"*"alpha "*"Workers"*"0 live, 0 gone; 0 of 0 slots busy"*"Newest dead letters"*"1 in all"* ]]
	printf '%s\n' "$output" | grep -E '^[0-9]+ +boom +alpha +0 +[0-9.]+s +terminal exit code$'
	[[ "$output" != *$'\033'* ]]
	run --separate-stderr timeout 10 pd-admin top --once --interval 1s
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "pendulum top  "*" UTC" ]]
	run --separate-stderr pd-admin top --interval 10ms
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-admin: option --interval: at least 100ms" ]
}

@test "top on a terminal: q quits and the terminal is restored" {
	command -v script >/dev/null || skip "script(1) not installed"
	make_jobs 1 PENDING alpha >/dev/null
	ts=$BATS_TEST_TMPDIR/ts
	keys=$BATS_TEST_TMPDIR/keys
	mkfifo "$keys"
	start_bg top sh -c 'exec script -qfec "$1" "$2" <"$3"' top \
		"stty cols 120 rows 30; pd-admin top --interval 200ms; echo rc=\$?; stty -a" "$ts" "$keys"
	exec 7<>"$keys" # read-write: opening it does not wait for the reader
	# q only once top has drawn its screen twice (a redraw), however slow
	wait_for 60 eval "[ \"\$(grep -c 'pendulum top' '$ts')\" -ge 2 ]"
	printf q >&7
	exec 7>&-
	wait_for 60 test -s "$BATS_FILE_TMPDIR/top.status"
	grep -q 'rc=0' "$ts"
	grep -q $'\033\\[?1049h' "$ts" # the alternate screen
	grep -q $'\033\\[?1049l' "$ts" # left again
	[ "$(grep -c 'pendulum top' "$ts")" -ge 2 ] # redrawn
	grep -qw icanon "$ts" # raw mode undone
	[ "$(grep -c -- '-icanon' "$ts")" -eq 0 ]
}

@test "--json output parses with jq on every listing command" {
	make_jobs 2 PENDING >/dev/null
	make_jobs 2 DEAD_LETTERED >/dev/null
	d=$(make_job DEAD_LETTERED)
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, outcome, stderr_tail)
	     VALUES ($d, 1, 1, 'terminal', E'tab\there \"quoted\" \\\\ back\n\x01ctl')"
	sql "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency)
	     VALUES ('h:1:a', 'h', 1, '{default}', '{*}', 1)"
	for c in "jobs" "job show $d" "dlq list" "queues" "depth default" "workers" "migrate --status" "top" \
		"metrics"; do
		# shellcheck disable=SC2086
		run --separate-stderr pd-admin --json $c
		[ "$status" -eq 0 ] || { echo "$c: $status $stderr"; return 1; }
		[ -n "$output" ] || { echo "$c: no output"; return 1; }
		json_lines_ok || { echo "$c: $output"; return 1; }
	done
	[ "$(pd-admin --json job show "$d" | jq -r '.attempts[0].stderr_tail')" = $'tab\there "quoted" \\ back\n\001ctl' ]
}

@test "colour only on a terminal, never with NO_COLOR" {
	command -v script >/dev/null || skip "script(1) not installed"
	make_job DEAD_LETTERED >/dev/null
	run --separate-stderr pd-admin jobs
	[[ "$output" != *$'\033'* ]]
	script -qfec "pd-admin jobs" "$BATS_TEST_TMPDIR/c" >/dev/null
	grep -q $'\033\\[31mDEAD_LETTERED' "$BATS_TEST_TMPDIR/c"
	NO_COLOR=1 script -qfec "pd-admin jobs" "$BATS_TEST_TMPDIR/n" >/dev/null
	grep -q 'DEAD_LETTERED' "$BATS_TEST_TMPDIR/n"
	[ "$(grep -c $'\033' "$BATS_TEST_TMPDIR/n")" -eq 0 ]
}

@test "an unreachable database: exit 69" {
	run --separate-stderr pd-admin -d "host=/nonexistent-dir port=5999 dbname=x" jobs
	[ "$status" -eq 69 ]
	[ -z "$output" ]
	[[ "$stderr" == "pd-admin: cannot connect to the database"* ]]
}

@test "top at 80 columns: QUEUE RUNNABLE OLDEST_RUNNABLE WORKERS UNSERVED first, states dropped first" {
	make_jobs 2 PENDING alpha >/dev/null
	make_job DEAD_LETTERED alpha boom >/dev/null
	run --separate-stderr env COLUMNS=80 pd-admin top --once
	[ "$status" -eq 0 ]
	head=$(printf '%s\n' "$output" | grep -m1 '^QUEUE ')
	[[ "$head" =~ ^QUEUE\ +RUNNABLE\ +OLDEST_RUNNABLE\ +WORKERS\ +UNSERVED( |$) ]]
	[[ "$head" != *SUCCEEDED* ]]
	printf '%s\n' "$output" | grep -E '^alpha +2 +[0-9.]+s +0 +t( |$)'
	[ -z "$(printf '%s\n' "$output" | awk 'length > 80')" ]
	# wide enough, every column, the finished states last
	run --separate-stderr env COLUMNS=400 pd-admin top --once
	head=$(printf '%s\n' "$output" | grep -m1 '^QUEUE ')
	[[ "$head" =~ ^QUEUE\ +RUNNABLE\ +OLDEST_RUNNABLE\ +WORKERS\ +UNSERVED\ +PENDING\ .*SUCCEEDED\ +CANCELLED$ ]]
}

@test "flow runs: a run no live worker serves says so" {
	run --separate-stderr pd-enqueue --no-stdin --workflow nobody-serves
	[ "$status" -eq 0 ]
	run --separate-stderr pd-admin flow runs
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" == *" RUNNING "*"no live worker serves type workflow:nobody-serves in queue default" ]]
	[ "$(pd-admin --json flow runs | jq -r .unserved)" = true ]
	sql "DELETE FROM pendulum.workflow_runs"
}

@test "every state-changing command says what it changed; every --dry-run says would" {
	a=$(make_job PENDING)
	b=$(make_job DEAD_LETTERED)
	c=$(make_job DEAD_LETTERED)
	make_job DEAD_LETTERED q t default '3 days' >/dev/null
	r=$(pd-enqueue --no-stdin --workflow wf)
	for cmd in "job cancel $a" "job replay $a" "dlq replay $b" "dlq delete $c" \
		"dlq purge --older-than 1d --dry-run" "dlq purge --older-than 1d" "prune --dry-run" "prune" \
		"outbox purge --older-than 1d --dry-run" "outbox purge --older-than 1d" "flow signal $r go" \
		"flow cancel $r" "tenant grant postgres acme" "tenant revoke postgres acme" \
		"tenant set acme --weight 2" "limit set k --concurrency 2" "limit set k --rate 5/1m" \
		"limit unset k" "queue pause q" "queue resume q" "queue pause --type t" \
		"queue resume --type t" "migrate"; do
		# shellcheck disable=SC2086 # a command line
		run --separate-stderr pd-admin $cmd
		[ "$status" -eq 0 ] || { echo "$cmd: $status $stderr"; return 1; }
		[ -n "$output" ] || { echo "$cmd: says nothing"; return 1; }
		if [[ $cmd == *--dry-run* ]]; then
			[[ "${lines[-1]}" == "would "* ]] || { echo "$cmd: $output"; return 1; }
		else
			[[ "$output" != *would* ]] || { echo "$cmd: $output"; return 1; }
		fi
	done
	run --separate-stderr pd-admin limit set k2 --concurrency 3 --rate 10/1m
	[ "${lines[-1]}" = "limit k2 set: concurrency 3, rate 10/1m" ]
	sql "DELETE FROM pendulum.limits; DELETE FROM pendulum.workflow_runs"
}

@test "a subcommand's usage error points at its own --help, a group's at the group's" {
	run --separate-stderr pd-admin dlq replay --limit 0
	[ "$status" -eq 64 ]
	[ "${stderr_lines[-1]}" = "Try 'pd-admin dlq replay --help' for more information." ]
	run --separate-stderr pd-admin dlq replay x
	[ "$status" -eq 64 ]
	[ "${stderr_lines[-1]}" = "Try 'pd-admin dlq replay --help' for more information." ]
	run --separate-stderr pd-admin dlq frob
	[ "$status" -eq 64 ]
	[ "${stderr_lines[-1]}" = "Try 'pd-admin dlq --help' for more information." ]
}
