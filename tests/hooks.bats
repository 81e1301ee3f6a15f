#!/usr/bin/env bats
# Hooks (issue 24 part 4): hooks: on_dead_letter, on_failure and on_success
# run a command with the job's JSON on stdin, as a job of the reserved type
# pd:hook written with the outcome; a crontab's MAILTO= mails failures through
# sendmail; dlq list and pd-enqueue --wait show the stderr tail.

# Handler and hook command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	REC=$BATS_TEST_TMPDIR/received
	CFG=$BATS_TEST_TMPDIR/pd.yaml
	# A hook that keeps its stdin and appends "EVENT ID ATTEMPT" of the job it is about.
	HOOK='f=$(mktemp '"$BATS_TEST_TMPDIR"'/in.XXXXXX); cat >"$f"; id=$(grep -o "\"id\": [0-9]*" "$f" | head -1 | tr -dc 0-9); ev=$(grep -o "\"event\": \"[a-z_]*\"" "$f" | cut -d\" -f4); at=$(grep -o "\"attempt\": [0-9]*" "$f" | head -1 | tr -dc 0-9); mv "$f" '"$BATS_TEST_TMPDIR"'/in.$ev.$id.$at; echo "$ev $id $at" >>'"$REC"
}

# hook_jobs: the number of hook jobs.
hook_jobs() {
	sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'pd:hook'"
}

# hooks_done N: N hook jobs, all SUCCEEDED.
hooks_done() {
	sql_is "SELECT count(*) FILTER (WHERE state = 'SUCCEEDED') || ' ' || count(*) FROM pendulum.jobs WHERE job_type = 'pd:hook'" "$1 $1"
}

@test "on_dead_letter: one hook job per dead letter, its JSON with the stderr tail, received once each" {
	cat >"$CFG" <<YAML
hooks:
  on_dead_letter: {run: '$HOOK'}
handlers:
  t: {run: 'echo "boom \$PD_JOB_ID" >&2; exit 65'}
YAML
	start_worker w -c "$CFG" -j 2 --poll 100ms
	a=$(pd-enqueue t '{"n": 1}')
	b=$(pd-enqueue t '{"n": 2}')
	c=$(pd-enqueue t '{"n": 3}')
	wait_for 30 hooks_done 3
	[ "$(hook_jobs)" -eq 3 ]
	[ "$(sort "$REC" | uniq -d | wc -l)" -eq 0 ]
	[ "$(lines "$REC")" -eq 3 ]
	for id in "$a" "$b" "$c"; do
		grep -qx "dead_letter $id 1" "$REC"
		grep -q "\"stderr_tail\": \"boom $id" "$BATS_TEST_TMPDIR/in.dead_letter.$id.1"
		grep -q '"state": "DEAD_LETTERED"' "$BATS_TEST_TMPDIR/in.dead_letter.$id.1"
		grep -q '"exit_code": 65' "$BATS_TEST_TMPDIR/in.dead_letter.$id.1"
		grep -q '"type": "t"' "$BATS_TEST_TMPDIR/in.dead_letter.$id.1"
	done
	# one key per event, and no hook of a hook
	[ "$(sql "SELECT idempotency_key FROM pendulum.jobs WHERE job_type = 'pd:hook' AND payload->>'id' = '$a'")" = "pd:hook:dead_letter:$a:$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $a")" ]
}

@test "on_dead_letter: a worker killed (kill -9) while the hook runs: another runs it after the lease expires, one hook job, it succeeds" {
	# The hook's first attempt stops to be killed; later attempts record and succeed.
	cat >"$CFG" <<YAML
hooks:
  on_dead_letter: {run: 'if [ "\$PD_ATTEMPT" -eq 1 ]; then touch $BATS_TEST_TMPDIR/hook-started; exec sleep 60; fi; $HOOK'}
handlers:
  t: {run: 'echo "boom" >&2; exit 65'}
YAML
	start_worker w1 -c "$CFG" -j 1 --poll 100ms --lease 2s
	id=$(pd-enqueue t '{}')
	wait_for 30 test -e "$BATS_TEST_TMPDIR/hook-started"
	kill -KILL "$(bg_pid w1)"
	start_worker w2 -c "$CFG" -j 1 --poll 100ms --lease 2s
	wait_for 40 hooks_done 1
	[ "$(hook_jobs)" -eq 1 ]
	[ "$(sql "SELECT attempt FROM pendulum.jobs WHERE job_type = 'pd:hook'")" -eq 2 ]
	[ "$(cat "$REC")" = "dead_letter $id 1" ]
	[ "$(sql "SELECT outcome FROM pendulum.job_attempts a JOIN pendulum.jobs j ON j.id = a.job_id WHERE j.job_type = 'pd:hook' AND a.attempt = 1")" = "lease_expired" ]
}

@test "on_failure for each failed attempt, on_success once; a hook job makes no hook" {
	cat >"$CFG" <<YAML
retry: {base: 10ms, cap: 50ms}
hooks:
  on_failure: {run: '$HOOK'}
  on_success: '$HOOK'
  on_dead_letter: {run: '$HOOK'}
handlers:
  t: {run: 'echo "try \$PD_ATTEMPT" >&2; [ "\$PD_ATTEMPT" -ge 3 ]'}
YAML
	start_worker w -c "$CFG" -j 2 --poll 100ms
	id=$(pd-enqueue t '{}')
	wait_for 30 hooks_done 3
	[ "$(sort "$REC" | tr '\n' ' ')" = "failure $id 1 failure $id 2 success $id 3 " ]
	grep -q '"stderr_tail": "try 2' "$BATS_TEST_TMPDIR/in.failure.$id.2"
	grep -q '"state": "PENDING"' "$BATS_TEST_TMPDIR/in.failure.$id.2"
	grep -q '"state": "SUCCEEDED"' "$BATS_TEST_TMPDIR/in.success.$id.3"
	[ "$(hook_jobs)" -eq 3 ]
}

@test "a handler's own hook wins over the global one; the global one serves the other types" {
	cat >"$CFG" <<YAML
hooks:
  on_dead_letter: {run: 'cat >/dev/null; echo "global \$PD_JOB_TYPE" >>$REC'}
handlers:
  t:
    run: exit 65
    hooks:
      on_dead_letter: {exec: [sh, -c, 'cat >/dev/null; echo own >>$REC']}
  u: {run: exit 65}
YAML
	start_worker w -c "$CFG" -j 2 --poll 100ms
	pd-enqueue t '{}' >/dev/null
	wait_for 30 hooks_done 1
	pd-enqueue u '{}' >/dev/null
	wait_for 30 hooks_done 2
	[ "$(cat "$REC" | tr '\n' ' ')" = "own global pd:hook " ]
}

@test "pd:hook is reserved: not enqueued, not a handler; a bad hooks: key is a config error naming the line" {
	run --separate-stderr pd-enqueue pd:hook '{}'
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"reserved for hook jobs"* ]]
	run --separate-stderr sql "SELECT pendulum.enqueue('default', 'pd:hook', '{}')"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"reserved for hook jobs"* ]]
	printf 'handlers:\n  pd:hook: {run: "true"}\n' >"$CFG"
	run --separate-stderr pd-worker -c "$CFG" --until-idle
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"pd.yaml:2:"*"reserved for hook jobs"* ]]
	printf 'handlers:\n  t: {run: "true"}\nhooks:\n  on_dead: {run: "true"}\n' >"$CFG"
	run --separate-stderr pd-worker -c "$CFG" --until-idle
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"pd.yaml:4:"*"on_dead"* ]]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	run --separate-stderr pd-worker --until-idle --handler 'pd:hook=true'
	[ "$status" -eq 64 ]
	[ "$(njobs)" -eq 0 ]
}

# fake_sendmail DIR: a sendmail in DIR that appends its arguments and its
# message to DIR/mail.
fake_sendmail() {
	mkdir -p "$1"
	printf '#!/bin/sh\n{ echo "ARGS $*"; cat; echo "END"; } >>%s/mail\n' "$1" >"$1/sendmail"
	chmod +x "$1/sendmail"
}

@test "crontab MAILTO=: a failing line's job is mailed through sendmail, the subject naming the job and the line; MAILTO=\"\" mails nothing" {
	D=$BATS_TEST_TMPDIR
	fake_sendmail "$D/bin"
	printf 'MAILTO=ops@example.com\n# pd: name=fails\n@daily echo "oops $PD_JOB_ID" >&2; exit 3\nMAILTO=""\n# pd: name=quiet\n@daily exit 3\n' >"$D/mt.cron"
	PATH="$D/bin:$PATH" start_worker w --crontab "$D/mt.cron" --poll 100ms
	wait_for 20 sql_is "SELECT count(*) FROM pendulum.cron_schedules WHERE job_type LIKE 'crontab.mt.%'" 2
	quiet=$(pd-enqueue --max-attempts 1 crontab.mt.quiet '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $quiet" DEAD_LETTERED
	id=$(pd-enqueue --max-attempts 1 crontab.mt.fails '{}')
	wait_for 30 hooks_done 1
	[ "$(hook_jobs)" -eq 1 ]
	[ "$(grep -c '^ARGS' "$D/bin/mail")" -eq 1 ]
	grep -qx 'ARGS -t' "$D/bin/mail"
	grep -qx 'To: ops@example.com' "$D/bin/mail"
	grep -qx "Subject: pendulum: job $id crontab.mt.fails ($D/mt.cron line 3) failed" "$D/bin/mail"
	grep -q "\"stderr_tail\": \"oops $id" "$D/bin/mail"
}

@test "pd-cron check: says whether MAILTO is mailed, and through which sendmail" {
	D=$BATS_TEST_TMPDIR
	fake_sendmail "$D/bin"
	printf 'MAILTO=ops@example.com\n@daily exit 3\n' >"$D/m.cron"
	PATH="$D/bin:$PATH" run --separate-stderr pd-cron check "$D/m.cron"
	[ "$status" -eq 0 ]
	[[ "$output" == *"MAILTO=ops@example.com: failures mailed through $D/bin/sendmail"* ]]
	mkdir -p "$D/nobin"
	if [ ! -x /usr/sbin/sendmail ] && [ ! -x /usr/lib/sendmail ]; then
		run --separate-stderr env PATH="$D/nobin" "$PD_BIN/pd-cron" check "$D/m.cron"
		[ "$status" -eq 0 ]
		[[ "$output" == *"MAILTO=ops@example.com: no sendmail on this machine: not mailed"* ]]
	fi
	printf 'MAILTO=""\n@daily exit 3\n' >"$D/q.cron"
	PATH="$D/bin:$PATH" run --separate-stderr pd-cron check "$D/q.cron"
	[ "$status" -eq 0 ]
	[[ "$output" != *MAILTO* ]]
}

@test "dlq list shows the first line of the last attempt's stderr tail" {
	printf 'handlers:\n  t: {run: '\''printf "\\nfirst %%s\\nsecond\\n" "$PD_JOB_ID" >&2; exit 65'\''}\n' >"$CFG"
	start_worker w -c "$CFG" -j 1 --poll 100ms
	id=$(pd-enqueue t '{}')
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" DEAD_LETTERED
	run --separate-stderr pd-admin dlq list
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *STDERR* ]]
	[[ "$output" == *"first $id"* ]]
	[[ "$output" != *second* ]]
	run --separate-stderr pd-admin dlq list --json
	[ "$status" -eq 0 ]
	[[ "$output" == *"\"stderr\":\"first $id\""* ]]
}

@test "pd-enqueue --wait: the retry lines and the dead letter line carry the stderr tail's first line" {
	printf 'retry: {base: 10ms, cap: 50ms}\nhandlers:\n  t: {run: '\''echo "trouble in $PD_ATTEMPT" >&2; echo more >&2; exit 3'\''}\n' >"$CFG"
	start_worker w -c "$CFG" -j 1 --poll 100ms
	run --separate-stderr timeout 60 pd-enqueue --wait --max-attempts 2 t '{}'
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"attempt 1 of 2 failed: exit 3; stderr: trouble in 1"* ]]
	[[ "$stderr" == *"dead-lettered: attempts exhausted: exit 3; stderr: trouble in 2"* ]]
	[[ "$stderr" != *more* ]]
}

@test "a dead letter the reap pass makes (lease expired, attempts exhausted) gets its hook, once" {
	cat >"$CFG" <<YAML
hooks:
  on_dead_letter: {run: '$HOOK'}
handlers:
  t: {run: 'touch $BATS_TEST_TMPDIR/started; exec sleep 60'}
YAML
	start_worker w1 -c "$CFG" -j 1 --poll 100ms --lease 2s --no-reap
	id=$(pd-enqueue --max-attempts 1 t '{}')
	wait_for 30 test -e "$BATS_TEST_TMPDIR/started"
	kill -KILL "$(bg_pid w1)"
	wait_for 30 sql_is "SELECT lease_expires_at < now() FROM pendulum.jobs WHERE id = $id" t
	run --separate-stderr pd-reaper -c "$CFG" --once
	[ "$status" -eq 0 ]
	[[ "$output" == *"dead-lettered 1"* ]]
	run --separate-stderr pd-reaper -c "$CFG" --once
	[ "$status" -eq 0 ]
	[ "$(hook_jobs)" -eq 1 ]
	start_worker w2 -c "$CFG" -j 1 --poll 100ms --no-reap
	wait_for 30 hooks_done 1
	[ "$(cat "$REC")" = "dead_letter $id 1" ]
	grep -q '"dead_reason": "attempts exhausted (last lease expired)"' "$BATS_TEST_TMPDIR/in.dead_letter.$id.1"
}
