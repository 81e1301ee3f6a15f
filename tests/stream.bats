#!/usr/bin/env bats
# Stream handlers (pd-worker --stream, --stream-exec, mode: stream): one
# long-lived process per handler, a JSON line per job each way. Jobs run
# exactly once through it; a handler killed, timed out or writing garbage is
# restarted, and only the job that caused it is charged an attempt (the
# others in flight are re-sent, one at a time when the culprit is not
# known); a stale worker's answers are fenced; a drain waits for answers,
# then releases.

# Handler scripts are single-quoted on purpose: they expand their own variables.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	LOG=$BATS_TEST_TMPDIR/exec.log
	# the handler scripts below keep their files here (the worker's environment reaches them)
	T_DIR=$BATS_TEST_TMPDIR
	export T_DIR
	CFG=$BATS_TEST_TMPDIR/pd.yaml
	# retries at once: --until-idle does not wait for a backoff
	printf 'retry: {base: 0, cap: 0}\n' >"$CFG"
}

# handler FILE: write a handler script from stdin to FILE, executable.
handler() {
	cat >"$1"
	chmod +x "$1"
}

# readme_example LANG FILE: the README's stream handler example in LANG (the
# code block after its "<!-- stream example: LANG" marker) into FILE, executable.
readme_example() {
	sed -n "/<!-- stream example: $1/,/^\`\`\`\$/p" "$PD_ROOT/README.md" | sed '1,2d;$d' | handler "$2"
}

# A sh + jq handler: records "ID ATTEMPT" in $T_DIR/ran and its pid in
# $T_DIR/pids; a job whose payload has hang: true hangs on its first attempt
# (touching $T_DIR/hanging), one with bad: true writes a line that is not
# JSON on its first attempt; every other job is answered with its payload.
misbehaving_handler() {
	handler "$1" <<'EOF'
#!/bin/sh
echo $$ >>"$T_DIR/pids"
while IFS= read -r job; do
	set -- $(printf '%s\n' "$job" | jq -r '"\(.id) \(.attempt) \(.payload.hang) \(.payload.bad)"')
	echo "$1 $2" >>"$T_DIR/ran"
	if [ "$3" = true ] && [ "$2" = 1 ]; then
		touch "$T_DIR/hanging"
		sleep 600
	fi
	if [ "$4" = true ] && [ "$2" = 1 ]; then
		echo 'this is not JSON'
		continue
	fi
	printf '%s\n' "$job" | jq -c '{id, result: .payload}'
done
EOF
}

# A sh + jq handler that reads a job, waits for $T_DIR/gate, then answers
# {"by": $1}, recording the ids read in $T_DIR/$1-read and answered in
# $T_DIR/$1-answered.
gated_handler() {
	handler "$2" <<EOF
#!/bin/sh
echo \$\$ >>"\$T_DIR/$1-pids"
while IFS= read -r job; do
	id=\$(printf '%s\n' "\$job" | jq .id)
	echo "\$id" >>"\$T_DIR/$1-read"
	while [ ! -e "\$T_DIR/gate" ]; do sleep 0.05; done
	printf '{"id":%s,"result":{"by":"$1"}}\n' "\$id"
	echo "\$id" >>"\$T_DIR/$1-answered"
done
EOF
}

@test "the jq echo handler: one process answers every job, the results are stored" {
	a=$(pd-enqueue t '{"n": 1}')
	b=$(pd-enqueue t '{"n": [2, "two"]}')
	c=$(pd-enqueue t '"three"')
	run --separate-stderr pd-worker -j 4 --until-idle --stream "t=jq -c --unbuffered '{id, result: .payload}'"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT string_agg(state || ' ' || attempt || ' ' || result::text, ',' ORDER BY id) FROM pendulum.jobs")" = \
		'SUCCEEDED 1 {"n": 1},SUCCEEDED 1 {"n": [2, "two"]},SUCCEEDED 1 "three"' ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE id IN ($a, $b, $c) AND started_at IS NOT NULL AND started_at <= finished_at")" -eq 3 ]
	[ "$(sql "SELECT string_agg(outcome, ',') FROM pendulum.job_attempts")" = succeeded,succeeded,succeeded ]
	# one process for the three, closed at the end
	[ "$(grep -c 'stream handler started' <<<"$stderr")" -eq 1 ]
	[ "$(grep -c 'stream handler stopped' <<<"$stderr")" -eq 1 ]
}

@test "a job's line carries id, attempt, lease_token, type, queue, tenant, traceparent and payload" {
	tp=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	id=$(pd-enqueue -q mail -t acme --traceparent "$tp" --max-attempts 3 t '{"to": "ada"}')
	run --separate-stderr pd-worker -q mail --until-idle --stream "t=jq -c --unbuffered '{id, result: .}'"
	[ "$status" -eq 0 ]
	token=$(sql "SELECT lease_token FROM pendulum.job_attempts WHERE job_id = $id")
	[ "$(sql "SELECT result->>'id' FROM pendulum.jobs WHERE id = $id")" = "$id" ]
	[ "$(sql "SELECT result->>'attempt' FROM pendulum.jobs WHERE id = $id")" = 1 ]
	[ "$(sql "SELECT result->>'lease_token' FROM pendulum.jobs WHERE id = $id")" = "$token" ]
	[ "$(sql "SELECT result->>'type' FROM pendulum.jobs WHERE id = $id")" = t ]
	[ "$(sql "SELECT result->>'queue' FROM pendulum.jobs WHERE id = $id")" = mail ]
	[ "$(sql "SELECT result->>'tenant' FROM pendulum.jobs WHERE id = $id")" = acme ]
	[ "$(sql "SELECT result->>'traceparent' FROM pendulum.jobs WHERE id = $id")" = "$tp" ]
	[ "$(sql "SELECT result->'payload' FROM pendulum.jobs WHERE id = $id")" = '{"to": "ada"}' ]
	[ "$(sql "SELECT result->>'max_attempts' FROM pendulum.jobs WHERE id = $id")" = 3 ]
}

@test "answers: a terminal error dead-letters at once, another error is retried, stderr lines naming a job are kept" {
	h=$BATS_TEST_TMPDIR/answers.sh
	handler "$h" <<'EOF'
#!/bin/sh
while IFS= read -r job; do
	set -- $(printf '%s\n' "$job" | jq -r '"\(.id) \(.attempt) \(.payload.fail)"')
	echo "job=$1 looking at job $1" >&2
	echo "a line about nothing in particular" >&2
	case "$3/$2" in
	terminal/*) printf '{"id":%s,"error":"no such user","terminal":true}\n' "$1" ;;
	retry/1) printf '{"id":%s,"error":"try again","terminal":false}\n' "$1" ;;
	*) printf '{"id":%s,"result":{"attempt":%s}}\n' "$1" "$2" ;;
	esac
done
EOF
	dead=$(pd-enqueue t '{"fail": "terminal"}')
	retried=$(pd-enqueue t '{"fail": "retry"}')
	fine=$(pd-enqueue t '{}')
	run --separate-stderr pd-worker -c "$CFG" --until-idle --stream-exec "t=$h"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || dead_reason || ' ' || last_error FROM pendulum.jobs WHERE id = $dead")" = \
		"DEAD_LETTERED 1 terminal error no such user" ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts WHERE job_id = $dead")" = terminal ]
	[ "$(sql "SELECT state || ' ' || attempt || ' ' || result::text FROM pendulum.jobs WHERE id = $retried")" = 'SUCCEEDED 2 {"attempt": 2}' ]
	[ "$(sql "SELECT string_agg(outcome, ',' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $retried")" = failed,succeeded ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $fine")" = SUCCEEDED ]
	# stderr: a line naming its job is logged with it and kept with the attempt; others with the stream
	grep -q "msg=\"handler stderr\" job=$fine attempt=1 line=\"looking at job $fine\"" <<<"$stderr"
	[ "$(sql "SELECT stderr_tail FROM pendulum.job_attempts WHERE job_id = $fine")" = "looking at job $fine" ]
	grep -q 'msg="handler stderr" stream=t pid=[0-9]* line="a line about nothing in particular"' <<<"$stderr"
}

# readme_jobs LANG: the README's example in LANG as the handler of three
# jobs: a width ($a), no width ($b), a width that is a string ($c).
readme_jobs() {
	h=$BATS_TEST_TMPDIR/halve.$1
	readme_example "$1" "$h"
	a=$(pd-enqueue halve '{"width": 641}')
	b=$(pd-enqueue halve '{"height": 1}')
	c=$(pd-enqueue halve '{"width": "wide"}')
	run --separate-stderr pd-worker --until-idle --stream-exec "halve=$h"
}

@test "the README's stream handler in sh and jq works" {
	readme_jobs sh
	[ "$status" -eq 0 ]
	[ "$(head -n 1 "$h")" = '#!/bin/sh' ]
	[ "$(sql "SELECT state || ' ' || result::text FROM pendulum.jobs WHERE id = $a")" = 'SUCCEEDED {"width": 320}' ]
	[ "$(sql "SELECT state || ' ' || last_error FROM pendulum.jobs WHERE id = $b")" = 'DEAD_LETTERED no width' ]
	[ "$(sql "SELECT state || ' ' || last_error FROM pendulum.jobs WHERE id = $c")" = 'DEAD_LETTERED no width' ]
}

@test "the README's stream handler in Python works" {
	command -v python3 >/dev/null || skip "python3 not installed"
	readme_jobs python
	[ "$status" -eq 0 ]
	[ "$(head -n 1 "$h")" = '#!/usr/bin/env python3' ]
	[ "$(sql "SELECT state || ' ' || result::text FROM pendulum.jobs WHERE id = $a")" = 'SUCCEEDED {"width": 320}' ]
	[ "$(sql "SELECT state || ' ' || last_error FROM pendulum.jobs WHERE id = $b")" = "DEAD_LETTERED no width: KeyError('width')" ]
	[[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $c")" == "no width: TypeError"* ]]
}

@test "10,000 jobs through 4 slots: each runs exactly once" {
	make_jobs 10000 PENDING >/dev/null
	# jq's debug writes ["DEBUG:",ID] to stderr, which goes to $LOG: one line per execution
	run --separate-stderr pd-worker -j 4 --batch 100 --until-idle \
		--stream "t=jq -c --unbuffered '(.id | debug) as \$x | {id}' 2>>'$LOG'"
	[ "$status" -eq 0 ]
	[ "$(lines "$LOG")" -eq 10000 ]
	[ "$(sort -u "$LOG" | wc -l)" -eq 10000 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED' AND attempt = 1")" -eq 10000 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts")" -eq 10000 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'succeeded'")" -eq 10000 ]
	# the ids executed are the jobs'
	[ "$(sed 's/.*,\([0-9]*\)]$/\1/' "$LOG" | sort -n | head -n 1)" = "$(sql "SELECT min(id) FROM pendulum.jobs")" ]
	[ "$(sed 's/.*,\([0-9]*\)]$/\1/' "$LOG" | sort -n | tail -n 1)" = "$(sql "SELECT max(id) FROM pendulum.jobs")" ]
	[ "$(grep -c 'stream handler started' <<<"$stderr")" -eq 1 ]
}

# A sh + jq handler that records "ID ATTEMPT" in $T_DIR/ran and its pid in
# $T_DIR/pids, exits with status 3 when it reads a job whose payload has
# poison: true, and answers every other job after a short pause (so that
# several are in flight behind it).
poison_handler() {
	handler "$1" <<'EOF'
#!/bin/sh
echo $$ >>"$T_DIR/pids"
while IFS= read -r job; do
	set -- $(printf '%s\n' "$job" | jq -r '"\(.id) \(.attempt) \(.payload.poison)"')
	echo "$1 $2" >>"$T_DIR/ran"
	[ "$3" = true ] && exit 3
	sleep 0.02
	printf '{"id":%s,"result":null}\n' "$1"
done
EOF
}

@test "a stream handler killed with kill -9 with jobs in flight: none is charged; they are re-sent one at a time, and the one killed alone is" {
	h=$BATS_TEST_TMPDIR/h.sh
	misbehaving_handler "$h"
	hang=$(pd-enqueue t '{"hang": true}')
	make_jobs 3 PENDING >/dev/null
	start_worker w -c "$CFG" -j 4 --stream-exec "t=$h"
	wait_for 30 test -e "$T_DIR/hanging"
	# the hanging job and the three behind it are written to the handler
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING'" 4
	first=$(head -n 1 "$T_DIR/pids")
	rm "$T_DIR/hanging"
	kill -KILL "$first"
	wait_for 30 grep -q "msg=\"stream handler exited\" stream=t pid=$first status=\"killed by signal 9 (Killed)\" in_flight=4" "$BATS_FILE_TMPDIR/w.log"
	grep -q 'msg="stream jobs in flight held as suspects: re-sent one at a time" stream=t suspects=4' "$BATS_FILE_TMPDIR/w.log"
	# a second process gets the suspects one at a time: the hanging job hangs again, alone
	wait_for 30 test -e "$T_DIR/hanging"
	second=$(sed -n 2p "$T_DIR/pids")
	[ "$second" != "$first" ]
	[ "$(sql "SELECT attempt FROM pendulum.jobs WHERE id = $hang")" -eq 1 ]
	kill -KILL "$second"
	wait_for 60 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 4
	wait_for 10 grep -q "msg=\"stream handler exited\" stream=t pid=$second status=\"killed by signal 9 (Killed)\" in_flight=1" "$BATS_FILE_TMPDIR/w.log"
	# charged alone, with the reason; the others ran once, on attempt 1
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome, ',' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $hang")" = 1:failed,2:succeeded ]
	wait_for 10 grep -q "job=$hang attempt=1 outcome=failed state=PENDING error=\"stream handler killed by signal 9 (Killed) while running this job\"" "$BATS_FILE_TMPDIR/w.log"
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE id <> $hang AND attempt = 1")" -eq 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id <> $hang AND outcome = 'succeeded'")" -eq 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id <> $hang")" -eq 3 ]
	# a third process served the rest
	[ "$(lines "$T_DIR/pids")" -eq 3 ]
	stop_worker w
	[ "$(bg_status w)" -eq 0 ]
}

@test "a handler that dies on one poison job among 40 on -j 8: only the poison job uses attempts, and dead-letters" {
	h=$BATS_TEST_TMPDIR/h.sh
	poison_handler "$h"
	for i in $(seq 1 43); do
		case $i in
		3 | 20 | 37) echo '{"poison": true}' ;;
		*) echo "{\"n\": $i}" ;;
		esac
	done | pd-enqueue --ndjson --max-attempts 3 t >/dev/null
	run --separate-stderr pd-worker -c "$CFG" -j 8 --batch 8 --until-idle --stream-exec "t=$h"
	[ "$status" -eq 0 ]
	# the handler died with several jobs in flight: the case this is about
	grep -q 'msg="stream handler exited" stream=t pid=[0-9]* status="exit 3" in_flight=[2-8]$' <<<"$stderr"
	grep -q 'msg="stream jobs in flight held as suspects: re-sent one at a time"' <<<"$stderr"
	# the three poison jobs: three attempts each, all charged to them alone, dead-lettered
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE payload->>'poison' = 'true' AND state = 'DEAD_LETTERED' AND attempt = 3")" -eq 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts a JOIN pendulum.jobs j ON j.id = a.job_id WHERE j.payload->>'poison' = 'true' AND a.outcome = 'failed'")" -eq 9 ]
	[ "$(sql "SELECT string_agg(DISTINCT last_error, ',') FROM pendulum.jobs WHERE payload->>'poison' = 'true'")" = "stream handler exited with status 3 while running this job" ]
	# every good job: succeeded on attempt 1, one attempt row
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE payload ? 'n' AND state = 'SUCCEEDED' AND attempt = 1")" -eq 40 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts a JOIN pendulum.jobs j ON j.id = a.job_id WHERE j.payload ? 'n'")" -eq 40 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts a JOIN pendulum.jobs j ON j.id = a.job_id WHERE j.payload ? 'n' AND a.outcome = 'succeeded'")" -eq 40 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE payload ? 'n' AND last_error IS NOT NULL")" -eq 0 ]
}

@test "a handler that dies with one job in flight: that job is charged, with the reason" {
	h=$BATS_TEST_TMPDIR/h.sh
	poison_handler "$h"
	bad=$(pd-enqueue --max-attempts 2 t '{"poison": true}')
	good=$(pd-enqueue t '{"n": 1}')
	run --separate-stderr pd-worker -c "$CFG" -j 1 --until-idle --stream-exec "t=$h"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $bad")" = "DEAD_LETTERED 2" ]
	[ "$(sql "SELECT last_error FROM pendulum.jobs WHERE id = $bad")" = "stream handler exited with status 3 while running this job" ]
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome || ':' || exit_code, ',' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $bad")" = 1:failed:3,2:failed:3 ]
	grep -q "job=$bad attempt=1 outcome=failed state=PENDING error=\"stream handler exited with status 3 while running this job\"" <<<"$stderr"
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $good")" = "SUCCEEDED 1" ]
	# no suspects: it was alone every time
	run grep -c 'held as suspects' <<<"$stderr"
	[ "$output" = 0 ]
}

@test "a handler that exits by itself with nothing in flight: nobody is charged, it is restarted for the next job" {
	h=$BATS_TEST_TMPDIR/h.sh
	# answers one job, then exits
	handler "$h" <<'EOF'
#!/bin/sh
echo $$ >>"$T_DIR/pids"
IFS= read -r job
printf '%s\n' "$job" | jq -c '{id, result: .payload}'
exit 0
EOF
	a=$(pd-enqueue t '{"n": 1}')
	start_worker w -c "$CFG" -j 1 --poll 200ms --stream-exec "t=$h"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $a" SUCCEEDED
	wait_for 30 grep -q 'msg="stream handler exited" stream=t pid=[0-9]* status="exit 0" in_flight=0' "$BATS_FILE_TMPDIR/w.log"
	b=$(pd-enqueue t '{"n": 2}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $b" SUCCEEDED
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome, ',' ORDER BY job_id) FROM pendulum.job_attempts")" = 1:succeeded,1:succeeded ]
	[ "$(lines "$T_DIR/pids")" -eq 2 ]
	stop_worker w
	[ "$(bg_status w)" -eq 0 ]
}

@test "a job over its timeout fails with outcome timeout, the handler is restarted, and the job behind it is re-sent" {
	h=$BATS_TEST_TMPDIR/h.sh
	misbehaving_handler "$h"
	hang=$(pd-enqueue --timeout 3s t '{"hang": true}')
	other=$(pd-enqueue t '{}')
	start_worker w -c "$CFG" -j 2 --stream-exec "t=$h"
	wait_for 30 test -e "$T_DIR/hanging"
	first=$(head -n 1 "$T_DIR/pids")
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 2
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome, ',' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $hang")" = 1:timeout,2:succeeded ]
	wait_for 10 grep -q "job=$hang attempt=1 outcome=timeout state=PENDING error=\"timeout after 3s\"" "$BATS_FILE_TMPDIR/w.log"
	# the other job was in flight behind it: re-sent to the next process, no attempt used
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome, ',' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $other")" = 1:succeeded ]
	wait_for 10 grep -q "msg=\"stream jobs in flight re-sent after the restart\" stream=t jobs=1 timed_out=$hang" "$BATS_FILE_TMPDIR/w.log"
	# the first process is gone (its group was terminated), a second one served the retries
	wait_for 10 eval "! alive $first"
	[ "$(lines "$T_DIR/pids")" -eq 2 ]
	stop_worker w
	[ "$(bg_status w)" -eq 0 ]
}

@test "a line that is not JSON fails the job alone in flight as retryable, and the handler is restarted" {
	h=$BATS_TEST_TMPDIR/h.sh
	misbehaving_handler "$h"
	bad=$(pd-enqueue t '{"bad": true}')
	run --separate-stderr pd-worker -c "$CFG" -j 2 --until-idle --stream-exec "t=$h"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $bad")" = "SUCCEEDED 2" ]
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome, ',' ORDER BY attempt) FROM pendulum.job_attempts WHERE job_id = $bad")" = 1:failed,2:succeeded ]
	grep -q 'msg="stream handler wrote a bad line: restarting it" stream=t pid=[0-9]* in_flight=1 error="invalid JSON at line 1, column ' <<<"$stderr"
	grep -q "job=$bad attempt=1 outcome=failed state=PENDING error=\"stream handler protocol error: invalid JSON" <<<"$stderr"
	[ "$(lines "$T_DIR/pids")" -eq 2 ]
}

@test "a stale worker's stream answers are fenced: counted in writes_fenced, nothing overwritten" {
	gated_handler w1 "$BATS_TEST_TMPDIR/w1.sh"
	a=$(pd-enqueue t '{}')
	b=$(pd-enqueue t '{}')
	start_worker w1 -j 2 --lease 1s --heartbeat 300ms --poll 200ms --no-reap --stream-exec "t=$BATS_TEST_TMPDIR/w1.sh"
	wait_for 30 lines_at_least "$T_DIR/w1-read" 1
	w1_id=$(worker_id w1)
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE lease_owner = '$w1_id'" 2
	kill -STOP "$(bg_pid w1)"
	before=$(fenced)
	# the leases run out (database clock), the reaper gives both jobs back
	wait_for 30 sql_is "SELECT bool_and(lease_expires_at < now()) FROM pendulum.jobs" t
	run --separate-stderr pd-reaper --once
	[ "$status" -eq 0 ]
	[ "$output" = "requeued 2, dead-lettered 0" ]
	# another worker takes them and finishes them
	start_worker w2 -j 2 --poll 200ms --stream "t=jq -c --unbuffered '{id, result: {by: \"w2\"}}'"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 2
	stop_worker w2
	rows=$(sql "SELECT string_agg(row_to_json(j)::text, ',' ORDER BY id) FROM pendulum.jobs j")
	# w1's handler answers both meanwhile, into the pipe of its stopped worker
	touch "$T_DIR/gate"
	wait_for 30 lines_at_least "$T_DIR/w1-answered" 2
	kill -CONT "$(bg_pid w1)"
	# w1 writes both outcomes, and both are fenced off and counted
	wait_for 30 sql_is "SELECT value FROM pendulum.counters WHERE name = 'writes_fenced'" $((before + 2))
	wait_for 10 grep -q "fenced: the lease was taken over, outcome not written\" job=$a" "$BATS_FILE_TMPDIR/w1.log"
	wait_for 10 grep -q "fenced: the lease was taken over, outcome not written\" job=$b" "$BATS_FILE_TMPDIR/w1.log"
	# nothing of w1's is written: the rows and the attempts are w2's
	[ "$(sql "SELECT string_agg(row_to_json(j)::text, ',' ORDER BY id) FROM pendulum.jobs j")" = "$rows" ]
	[ "$(sql "SELECT string_agg(DISTINCT result->>'by', ',') FROM pendulum.jobs")" = w2 ]
	[ "$(sql "SELECT string_agg(attempt || ':' || outcome || ':' || (worker = '$w1_id'), ',' ORDER BY attempt)
	          FROM pendulum.job_attempts WHERE job_id = $a")" = "1:lease_expired:true,2:succeeded:false" ]
	# and w1 goes on serving with the same handler process
	c=$(pd-enqueue t '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $c" SUCCEEDED
	[ "$(sql "SELECT result->>'by' FROM pendulum.jobs WHERE id = $c")" = w1 ]
	[ "$(lines "$T_DIR/w1-pids")" -eq 1 ]
	[ "$(fenced)" -eq $((before + 2)) ]
}

@test "a lease taken over while its job is in flight: the answer is dropped, the attempt is lease_lost" {
	gated_handler w "$BATS_TEST_TMPDIR/w.sh"
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --lease 2s --heartbeat 200ms --poll 200ms --stream-exec "t=$BATS_TEST_TMPDIR/w.sh"
	wait_for 30 lines_at_least "$T_DIR/w-read" 1
	token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	sql "UPDATE pendulum.jobs SET lease_token = nextval('pendulum.lease_token_seq'), lease_owner = 'thief',
	     lease_expires_at = now() + interval '1 h' WHERE id = $id" >/dev/null
	after=$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")
	wait_for 10 grep -q "lease lost: the stream handler's answer will be dropped\" job=$id" "$BATS_FILE_TMPDIR/w.log"
	touch "$T_DIR/gate"
	wait_for 10 grep -q 'nothing written' "$BATS_FILE_TMPDIR/w.log"
	wait_for 10 sql_is "SELECT outcome FROM pendulum.job_attempts WHERE lease_token = $token" lease_lost
	[ "$(sql "SELECT row_to_json(j)::text FROM pendulum.jobs j WHERE id = $id")" = "$after" ]
	[ "$(fenced)" -eq 0 ]
	# the handler process goes on serving
	id2=$(pd-enqueue t '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id2" SUCCEEDED
	[ "$(lines "$T_DIR/w-pids")" -eq 1 ]
}

@test "suspects waiting for their turn keep their leases, and a drain releases them at once with the attempt refunded" {
	gated_handler w "$BATS_TEST_TMPDIR/w.sh"
	make_jobs 4 PENDING >/dev/null
	start_worker w -j 4 --lease 1s --heartbeat 200ms --poll 200ms --drain-timeout 60s --stream-exec "t=$BATS_TEST_TMPDIR/w.sh"
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'RUNNING'" 4
	wait_for 30 lines_at_least "$T_DIR/w-read" 1
	kill -KILL "$(head -n 1 "$T_DIR/w-pids")"
	wait_for 30 grep -q 'held as suspects: re-sent one at a time" stream=t suspects=4' "$BATS_FILE_TMPDIR/w.log"
	# a second process reads one suspect and waits at the gate; the three others wait their turn
	wait_for 30 lines_at_least "$T_DIR/w-read" 2
	alone=$(sed -n 2p "$T_DIR/w-read")
	# the leases of all four are renewed meanwhile
	t0=$(sql "SELECT max(lease_expires_at) FROM pendulum.jobs")
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.jobs WHERE lease_expires_at > '$t0'" 4
	kill -TERM "$(bg_pid w)"
	# the three waiting are released at once; the one in flight goes on
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING' AND attempt = 0 AND lease_owner IS NULL" 3
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $alone")" = RUNNING ]
	touch "$T_DIR/gate"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/w.status"
	[ "$(bg_status w)" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $alone")" = "SUCCEEDED 1" ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE outcome = 'released'")" -eq 3 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts")" -eq 4 ]
	[ "$(lines "$T_DIR/w-read")" -eq 2 ]
}

@test "SIGTERM with a short drain timeout: the stream handler is stopped, its jobs released with the attempt refunded" {
	gated_handler w "$BATS_TEST_TMPDIR/w.sh"
	a=$(pd-enqueue t '{}')
	b=$(pd-enqueue t '{}')
	start_worker w -j 2 --poll 200ms --drain-timeout 500ms --stream-exec "t=$BATS_TEST_TMPDIR/w.sh"
	wait_for 30 lines_at_least "$T_DIR/w-read" 1
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state IN ('LEASED', 'RUNNING')" 2
	pid=$(cat "$T_DIR/w-pids")
	stop_worker w TERM 20
	[ "$(bg_status w)" -eq 0 ]
	[ "$(sql "SELECT string_agg(state || ' ' || attempt || ' ' || (lease_owner IS NULL), ',') FROM pendulum.jobs")" = "PENDING 0 true,PENDING 0 true" ]
	[ "$(sql "SELECT string_agg(outcome, ',') FROM pendulum.job_attempts")" = released,released ]
	[ "$(fenced)" -eq 0 ]
	wait_for 10 eval "! alive $pid"
}

@test "SIGTERM with time to spare: the answers in flight are written, nothing new is sent, the handler gets end of file" {
	gated_handler w "$BATS_TEST_TMPDIR/w.sh"
	a=$(pd-enqueue t '{}')
	start_worker w -j 1 --poll 200ms --drain-timeout 60s --stream-exec "t=$BATS_TEST_TMPDIR/w.sh"
	wait_for 30 lines_at_least "$T_DIR/w-read" 1
	next=$(pd-enqueue t '{}')
	kill -TERM "$(bg_pid w)"
	wait_for 30 grep -q 'draining' "$BATS_FILE_TMPDIR/w.log"
	touch "$T_DIR/gate"
	wait_for 30 test -s "$BATS_FILE_TMPDIR/w.status"
	[ "$(bg_status w)" -eq 0 ]
	[ "$(sql "SELECT state || ' ' || result::text FROM pendulum.jobs WHERE id = $a")" = 'SUCCEEDED {"by": "w"}' ]
	[ "$(sql "SELECT state || ' ' || attempt FROM pendulum.jobs WHERE id = $next")" = "PENDING 0" ]
	[ "$(lines "$T_DIR/w-read")" -eq 1 ]
	grep -q 'msg="stream handler stopped" stream=t pid=[0-9]* status="exit 0"' "$BATS_FILE_TMPDIR/w.log"
}

@test "process and stream handlers in one worker, from flags and from the config file" {
	cfg=$BATS_TEST_TMPDIR/handlers.yaml
	cat >"$cfg" <<'EOF'
handlers:
  s:
    run: "jq -c --unbuffered '{id, result: {mode: \"stream\"}}'"
    mode: stream
EOF
	make_jobs 30 PENDING default s >/dev/null
	make_jobs 30 PENDING default p >/dev/null
	make_jobs 30 PENDING default f >/dev/null
	run --separate-stderr pd-worker -c "$cfg" -j 3 --until-idle --handler 'p=echo "{\"mode\": \"process\"}"' \
		--stream-exec "f=$(command -v cat)"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT string_agg(job_type || ':' || state || ':' || coalesce(result->>'mode', '-') || ':' || n, ',' ORDER BY job_type)
	          FROM (SELECT job_type, state, result, count(*) n FROM pendulum.jobs GROUP BY 1, 2, 3) x")" = \
		"f:SUCCEEDED:-:30,p:SUCCEEDED:process:30,s:SUCCEEDED:stream:30" ]
	[ "$(grep -c 'stream handler started' <<<"$stderr")" -eq 2 ]
}

@test "--stream and --stream-exec take TYPE=COMMAND; a bad mode in the file is a configuration error" {
	run --separate-stderr pd-worker --stream t
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--stream 't': expected TYPE=COMMAND"* ]]
	run --separate-stderr pd-worker --stream-exec =x
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--stream-exec '=x': expected TYPE=PATH"* ]]
	printf 'handlers:\n  t:\n    run: cat\n    mode: steam\n' >"$BATS_TEST_TMPDIR/bad.yaml"
	run --separate-stderr pd-worker -c "$BATS_TEST_TMPDIR/bad.yaml"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"bad.yaml:4:11: 'mode': expected process or stream, got 'steam'"* ]]
}
