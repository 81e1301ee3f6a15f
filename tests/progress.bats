#!/usr/bin/env bats
# Progress notes (issue 24 part 3): a handler's lines on PD_PROGRESS_FD, or a
# stream handler's {"id":…,"progress":"…"} lines, stored with the heartbeat
# (fenced by the lease token) and shown by pd-admin job show, jobs, top and
# pd-enqueue --wait.

load helpers
pd_db_hooks

# gate NAME: a handler's shell waits (at most 20 s) for the test to touch
# $BATS_FILE_TMPDIR/NAME.
gate() {
	printf 'i=0; while [ ! -e %s/%s ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' \
		"$BATS_FILE_TMPDIR" "$1"
}

# progress_is ID TEXT: the job's stored progress note is TEXT.
progress_is() {
	sql_is "SELECT progress FROM pendulum.jobs WHERE id = $1" "$2"
}

# shown ID TEXT: pd-admin job show prints TEXT as the job's progress.
shown() {
	pd-admin job show "$1" | grep -qE "^progress +$2\$"
}

@test "a handler's progress lines appear in pd-admin job show while it runs" {
	reset_jobs
	rm -f "$BATS_FILE_TMPDIR"/g1 "$BATS_FILE_TMPDIR"/g2
	id=$(pd-enqueue p '{}')
	# shellcheck disable=SC2016 # expanded by the handler's shell
	h='echo "10% (1/10)" >&"$PD_PROGRESS_FD"; '"$(gate g1)"'; echo "40% (400/1000)" >&"$PD_PROGRESS_FD"; '"$(gate g2)"'; echo "100%" >&"$PD_PROGRESS_FD"; echo "{}"'
	start_worker w --lease 2s --poll 100ms --handler "p=$h"
	wait_for 15 shown "$id" '10% \(1/10\)'
	[ "$(job_state "$id")" = RUNNING ]
	touch "$BATS_FILE_TMPDIR/g1"
	wait_for 15 shown "$id" '40% \(400/1000\)'
	[ "$(job_state "$id")" = RUNNING ]
	run pd-admin jobs --state running
	[[ "$output" == *"progress: 40% (400/1000)"* ]]
	run pd-admin --json job show "$id"
	[ "$(printf '%s\n' "$output" | jq -r .progress)" = "40% (400/1000)" ]
	[ "$(printf '%s\n' "$output" | jq -r '.progress_age_s | type')" = number ]
	run pd-admin top --once
	[[ "$output" == *"Running jobs"* ]]
	[[ "$output" == *"40% (400/1000)"* ]]
	touch "$BATS_FILE_TMPDIR/g2"
	wait_for 15 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	# the last note goes with the outcome, and stays on the finished job
	progress_is "$id" "100%"
}

@test "pd-enqueue --wait prints each new progress note on stderr, --quiet none" {
	reset_jobs
	rm -f "$BATS_FILE_TMPDIR"/w1
	# shellcheck disable=SC2016 # expanded by the handler's shell
	h='echo "step one" >&"$PD_PROGRESS_FD"; '"$(gate w1)"'; echo "step two" >&"$PD_PROGRESS_FD"; echo "{\"ok\":1}"'
	start_worker w --lease 2s --poll 100ms --handler "pw=$h"
	start_bg wait pd-enqueue --wait pw '{}'
	wait_for 15 grep -q 'job [0-9]*: step one' "$BATS_FILE_TMPDIR/wait.log"
	touch "$BATS_FILE_TMPDIR/w1"
	wait_for 15 test -s "$BATS_FILE_TMPDIR/wait.status"
	[ "$(bg_status wait)" -eq 0 ]
	[ "$(grep -c 'step one' "$BATS_FILE_TMPDIR/wait.log")" -eq 1 ]
	grep -q 'job [0-9]*: step two' "$BATS_FILE_TMPDIR/wait.log"
	[ "$(cat "$BATS_FILE_TMPDIR/wait.out")" = '{"ok":1}' ]
	run --separate-stderr pd-enqueue --quiet --wait pw '{}'
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "a handler that floods its progress pipe leaves the worker alive and its job succeeding" {
	reset_jobs
	id=$(pd-enqueue flood '{}')
	# shellcheck disable=SC2016 # expanded by the handler's shell
	start_worker w --lease 2s --poll 100ms \
		--handler 'flood=timeout 1 yes 0123456789abcdef >&"$PD_PROGRESS_FD"; printf "%0300d\n" 7 >&"$PD_PROGRESS_FD"; printf "done\001\n" >&"$PD_PROGRESS_FD"; echo "{}"'
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	alive "$(bg_pid w)"
	# the last line, its control character replaced
	progress_is "$id" "done "
	# a long line is cut at 200 bytes
	id2=$(pd-enqueue long '{}')
	start_worker w2 --lease 2s --poll 100ms --handler 'long=printf "%0300d\n" 7 >&"$PD_PROGRESS_FD"; echo "{}"'
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id2" SUCCEEDED
	sql_is "SELECT length(progress) FROM pendulum.jobs WHERE id = $id2" 200
}

@test "a stream handler's progress line sets the job's progress" {
	reset_jobs
	rm -f "$BATS_FILE_TMPDIR"/s1
	id=$(pd-enqueue sp '{}')
	# shellcheck disable=SC2016 # expanded by the handler's shell
	s='while read -r line; do id=$(printf "%s" "$line" | jq -r .id); printf "{\"id\":%s,\"progress\":\"half way\"}\n" "$id"; '"$(gate s1)"'; printf "{\"id\":%s,\"result\":{}}\n" "$id"; done'
	start_worker w --lease 2s --poll 100ms --stream "sp=$s"
	wait_for 15 progress_is "$id" "half way"
	[ "$(job_state "$id")" = RUNNING ]
	touch "$BATS_FILE_TMPDIR/s1"
	wait_for 15 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	progress_is "$id" "half way"
	alive "$(bg_pid w)"
}

@test "progress is fenced: a worker whose lease was taken over stores nothing" {
	reset_jobs
	rm -f "$BATS_FILE_TMPDIR"/f1 "$BATS_FILE_TMPDIR"/f1.wrote
	id=$(pd-enqueue fp '{}')
	# shellcheck disable=SC2016 # expanded by the handler's shell
	h='echo one >&"$PD_PROGRESS_FD"; '"$(gate f1)"'; echo two >&"$PD_PROGRESS_FD"; touch '"$BATS_FILE_TMPDIR"'/f1.wrote; sleep 30'
	start_worker w --lease 2s --poll 100ms --no-reap --handler "fp=$h"
	wait_for 15 progress_is "$id" one
	kill -STOP "$(bg_pid w)"
	touch "$BATS_FILE_TMPDIR/f1"
	wait_for 15 test -e "$BATS_FILE_TMPDIR/f1.wrote"
	# the worker's heartbeat is overdue: its first pass after SIGCONT sends it
	wait_for 15 sql_is "SELECT lease_expires_at < now() FROM pendulum.jobs WHERE id = $id" t
	# another holder takes the lease over: a new token, the note cleared (as a claim does)
	sql "UPDATE pendulum.jobs SET lease_token = nextval('pendulum.lease_token_seq'), progress = NULL,
	     lease_expires_at = now() + interval '1 hour' WHERE id = $id"
	progress_is "$id" ""
	kill -CONT "$(bg_pid w)"
	wait_for 15 grep -q 'lease lost' "$BATS_FILE_TMPDIR/w.log"
	progress_is "$id" ""
	alive "$(bg_pid w)"
}

@test "a claim clears the last attempt's note, in its own UPDATE: a job claimed again starts with none" {
	reset_jobs
	id=$(pd-enqueue p '{}')
	t1=$(sql "SELECT (job).lease_token FROM pendulum.claim_jobs_fair('{default}', NULL, 1, 'w1', '1 min')")
	sql "UPDATE pendulum.jobs SET progress = 'half way', progress_at = now() WHERE id = $id"
	# the lease lost, the job back in the queue with its note (as the reaper leaves it)
	sql "UPDATE pendulum.jobs SET state = 'PENDING', lease_expires_at = NULL WHERE id = $id"
	progress_is "$id" "half way"
	t2=$(sql "SELECT (job).lease_token FROM pendulum.claim_jobs_fair('{default}', NULL, 1, 'w2', '1 min')")
	[ "$t2" -gt "$t1" ]
	progress_is "$id" ""
	sql_is "SELECT progress_at IS NULL FROM pendulum.jobs WHERE id = $id" t
}
