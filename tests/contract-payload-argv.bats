#!/usr/bin/env bats
# DESIGN, the handler contract: the payload goes to the handler on stdin,
# never on a command line (anyone on the host reads /proc/PID/cmdline). The
# handler's own command line, read from /proc while it runs, holds the
# configured command only; the payload arrives whole on stdin.

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
	D=$BATS_TEST_TMPDIR
	PAYLOAD='{"secret": "payload-marker-7f3a", "n": 1}'
}

@test "a shell handler's /proc/PID/cmdline holds its command, not the payload; the payload is on stdin" {
	id=$(pd-enqueue t "$PAYLOAD")
	start_worker w -j 1 --lease 2s --poll 100ms --no-reap \
		--handler "t=tr '\\000' ' ' </proc/\$\$/cmdline >'$D/cmdline'; cat >'$D/stdin'"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	# the command line was read (the handler's shell, running the command)
	grep -qF -- "-c tr" "$D/cmdline"
	run grep -c 'payload-marker' "$D/cmdline"
	[ "$output" -eq 0 ]
	[ "$(jq -c . "$D/stdin")" = '{"n":1,"secret":"payload-marker-7f3a"}' ]
	# nor on the worker's
	run grep -c 'payload-marker' "/proc/$(bg_pid w)/cmdline"
	[ "$output" -eq 0 ]
}

@test "an --exec handler's argv is its path alone; the payload is on stdin" {
	h=$D/handler
	printf '#!/bin/sh\ntr "\\000" " " </proc/$$/cmdline >"%s/cmdline"\ncat >"%s/stdin"\n' "$D" "$D" >"$h"
	chmod +x "$h"
	id=$(pd-enqueue t "$PAYLOAD")
	start_worker w -j 1 --lease 2s --poll 100ms --no-reap --exec "t=$h"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	[ "$(cat "$D/cmdline")" = "/bin/sh $h " ]
	[ "$(jq -c . "$D/stdin")" = '{"n":1,"secret":"payload-marker-7f3a"}' ]
}
