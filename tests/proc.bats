#!/usr/bin/env bats
# lib/proc through pd-test-tool: a handler as a child process (DESIGN.md,
# "The handler contract"; STYLE.md, "Child with pipe and timeout").

bats_require_minimum_version 1.5.0

setup() {
	T=${PD_TEST_TOOL:-$BATS_TEST_DIRNAME/../build/tests/pd-test-tool}
	if [ ! -x "$T" ]; then
		echo "pd-test-tool not found at $T (run make, or set PD_TEST_TOOL)" >&2
		return 1
	fi
	OK='result exit=0 signal=0 timed_out=0 truncated=0 killed=- tail_len=0'
}

# The tool blocks SIGTERM (as the worker does), so bound it with SIGKILL:
# 90 s, past the 60 s bounds on elapsed time below, generous under load.
tool() {
	timeout -s KILL 90 "$T" "$@"
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# Succeeds once no live (non-zombie) process has exactly the command line
# "$1"; the caller has already signalled them, so allow 2 s for it to land.
gone() {
	for _ in $(seq 40); do
		if ! ps -eo stat=,args= | awk -v want="$1" '
			$1 !~ /^Z/ { $1 = ""; sub(/^ /, ""); if ($0 == want) found = 1 }
			END { exit !found }'; then
			return 0
		fi
		sleep 0.05
	done
	echo "still running: $1" >&2
	ps -eo pid,stat,args | grep -F -- "$1" >&2
	return 1
}

@test "the payload arrives on stdin" {
	run --separate-stderr tool run --input 'hello world' -- cat
	[ "$status" -eq 0 ]
	[ "$output" = "hello world" ]
	[ "$stderr" = "$OK" ]
}

@test "no payload: stdin is at EOF at once" {
	run --separate-stderr tool run -- cat
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	[ "$stderr" = "$OK" ]
}

@test "the payload arrives even when the parent's own stdin is closed" {
	# (CI runs with no stdin. The unit test closes 0 and 2 under pd_proc_start.)
	run --separate-stderr tool run --input 'abc' -- cat <&-
	[ "$status" -eq 0 ]
	[ "$output" = "abc" ]
	[ "$stderr" = "$OK" ]
}

@test "a binary payload arrives byte for byte, and stdout comes back the same" {
	printf 'a\0b\377\r\n\0\n\n' >"$BATS_TEST_TMPDIR/in"
	tool run --input-file "$BATS_TEST_TMPDIR/in" -- cat \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "$OK" ]
}

@test "a 1 MiB payload reaches a handler that reads it all" {
	head -c 1048576 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr tool run --input-file "$BATS_TEST_TMPDIR/in" -- wc -c
	[ "$status" -eq 0 ]
	[ "$output" = "1048576" ]
	[ "$stderr" = "$OK" ]

	# Exactly the default 1 MiB stdout limit: all of it, not truncated.
	tool run --input-file "$BATS_TEST_TMPDIR/in" -- cat \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "$OK" ]
}

@test "a 1 MiB payload to a handler that never reads stdin neither hangs nor fails" {
	head -c 1048576 /dev/zero >"$BATS_TEST_TMPDIR/in"
	run --separate-stderr tool run --input-file "$BATS_TEST_TMPDIR/in" -- true
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	[ "$stderr" = "$OK" ]

	# Closes stdin and carries on: the writer gets EPIPE, the run goes on.
	run --separate-stderr tool run --input-file "$BATS_TEST_TMPDIR/in" -- \
		sh -c 'exec 0<&-; sleep 0.1; echo still here'
	[ "$status" -eq 0 ]
	[ "$output" = "still here" ]
	[ "$stderr" = "$OK" ]
}

@test "stdout is captured exactly" {
	tool run -- printf 'a\nb\n\n c \n\n' >"$BATS_TEST_TMPDIR/out"
	printf 'a\nb\n\n c \n\n' | cmp - "$BATS_TEST_TMPDIR/out"

	tool run -- printf 'no newline' >"$BATS_TEST_TMPDIR/out"
	printf 'no newline' | cmp - "$BATS_TEST_TMPDIR/out"
}

@test "the stdout limit truncates and flags, one byte either side" {
	run --separate-stderr tool run --limit 9 -- printf 0123456789
	[ "$output" = "012345678" ]
	[ "$stderr" = "result exit=0 signal=0 timed_out=0 truncated=1 killed=- tail_len=0" ]

	run --separate-stderr tool run --limit 10 -- printf 0123456789
	[ "$output" = "0123456789" ]
	[ "$stderr" = "$OK" ]

	run --separate-stderr tool run --limit 11 -- printf 0123456789
	[ "$output" = "0123456789" ]
	[ "$stderr" = "$OK" ]
}

@test "stdout past the limit is read and dropped, so the handler is not blocked or killed" {
	run --separate-stderr tool run --limit 4 -- sh -c 'yes | head -c 3000000; echo done >&2'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'y\ny')" ]
	[ "$stderr" = "$(printf 'stderr: done\nresult exit=0 signal=0 timed_out=0 truncated=1 killed=- tail_len=5')" ]
}

@test "stderr lines are forwarded with the prefix, a last partial line at the end" {
	run --separate-stderr tool run -- \
		sh -c 'echo one >&2; echo out; echo >&2; echo "two  three" >&2; printf last >&2'
	[ "$status" -eq 0 ]
	[ "$output" = "out" ]
	[ "$stderr" = "$(printf '%s\n' 'stderr: one' 'stderr: ' 'stderr: two  three' 'stderr: last' \
		'result exit=0 signal=0 timed_out=0 truncated=0 killed=- tail_len=20')" ]
}

@test "stderr lines longer than 4096 bytes are split; the tail is capped at 4096" {
	run --separate-stderr tool run -- sh -c 'head -c 10240 /dev/zero | tr "\0" x >&2'
	[ "$status" -eq 0 ]
	[ "${#stderr_lines[@]}" -eq 4 ]
	[ "${stderr_lines[0]}" = "stderr: $(head -c 4096 /dev/zero | tr '\0' x)" ]
	[ "${stderr_lines[1]}" = "${stderr_lines[0]}" ]
	[ "${stderr_lines[2]}" = "stderr: $(head -c 2048 /dev/zero | tr '\0' x)" ]
	[ "${stderr_lines[3]}" = "result exit=0 signal=0 timed_out=0 truncated=0 killed=- tail_len=4096" ]

	# A line of exactly 4096 bytes is one line, not a line and an empty one.
	run --separate-stderr tool run -- \
		sh -c 'head -c 4096 /dev/zero | tr "\0" y >&2; echo >&2; echo z >&2'
	[ "${#stderr_lines[@]}" -eq 3 ]
	[ "${stderr_lines[0]}" = "stderr: $(head -c 4096 /dev/zero | tr '\0' y)" ]
	[ "${stderr_lines[1]}" = "stderr: z" ]
	[ "${stderr_lines[2]}" = "result exit=0 signal=0 timed_out=0 truncated=0 killed=- tail_len=4096" ]
}

@test "many stderr lines: every one forwarded, the tail capped at 4096" {
	run --separate-stderr tool run -- sh -c 'seq 3000 >&2'
	[ "$status" -eq 0 ]
	[ "${#stderr_lines[@]}" -eq 3001 ]
	[ "${stderr_lines[0]}" = "stderr: 1" ]
	[ "${stderr_lines[2999]}" = "stderr: 3000" ]
	[ "${stderr_lines[3000]}" = "result exit=0 signal=0 timed_out=0 truncated=0 killed=- tail_len=4096" ]
}

@test "exit codes 0, 1 and 65 come back as they are" {
	for code in 0 1 65; do
		run --separate-stderr tool run -- sh -c "exit $code"
		[ "$status" -eq 0 ]
		[ "$stderr" = "result exit=$code signal=0 timed_out=0 truncated=0 killed=- tail_len=0" ]
	done
}

@test "death by a signal is reported as the signal" {
	run --separate-stderr tool run -- sh -c 'kill -9 $$'
	[ "$status" -eq 0 ]
	[ "$stderr" = "result exit=-1 signal=9 timed_out=0 truncated=0 killed=- tail_len=0" ]
}

# The upper bounds on elapsed below are half the time the handler would take
# unkilled (120 s): generous on a loaded machine, and still red when the kill
# does not come.
@test "timeout: SIGTERM ends the handler quickly" {
	start=$(now_ms)
	run --separate-stderr tool run --timeout 300 -- sleep 120
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 0 ]
	[ "$stderr" = "result exit=-1 signal=15 timed_out=1 truncated=0 killed=timeout tail_len=0" ]
	[ "$elapsed" -ge 300 ]
	[ "$elapsed" -lt 60000 ]
}

@test "timeout: a handler that survives SIGTERM gets SIGKILL after the grace" {
	start=$(now_ms)
	run --separate-stderr tool run --timeout 200 --grace 500 -- \
		sh -c 'trap "echo got TERM >&2" TERM; while :; do sleep 0.05; done'
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 0 ]
	# (sh may also report its sleep as "Terminated", depending on timing.)
	[[ "$stderr" == *$'stderr: got TERM\n'* ]]
	[[ "${stderr_lines[-1]}" =~ ^result\ exit=-1\ signal=9\ timed_out=1\ truncated=0\ killed=timeout\ tail_len=[0-9]+$ ]]
	[ "$elapsed" -ge 700 ]
	[ "$elapsed" -lt 60000 ]
}

@test "timeout: the whole process group is killed" {
	# Both sleeps let go of the pipes, so only a signal to the group ends them.
	start=$(now_ms)
	run --separate-stderr tool run --timeout 300 -- \
		sh -c "sleep 8$$ >/dev/null 2>&1 & sleep 9$$ >/dev/null 2>&1"
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 0 ]
	[ "$stderr" = "result exit=-1 signal=15 timed_out=1 truncated=0 killed=timeout tail_len=0" ]
	[ "$elapsed" -lt 60000 ]
	gone "sleep 8$$"
	gone "sleep 9$$"
}

@test "a grandchild holding stdout open does not hold up the run, and is killed" {
	start=$(now_ms)
	run --separate-stderr tool run -- sh -c "sleep 7$$ & echo hi"
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 0 ]
	[ "$output" = "hi" ]
	[ "$stderr" = "$OK" ]
	[ "$elapsed" -lt 60000 ]
	gone "sleep 7$$"
}

@test "a grandchild outside the group holding stdout does not hold up the run" {
	command -v setsid >/dev/null || skip "no setsid"
	start=$(now_ms)
	run --separate-stderr tool run -- sh -c 'setsid sleep 120 & echo $!'
	elapsed=$(($(now_ms) - start))
	[ -n "$output" ] && kill "$output" 2>/dev/null || true
	[ "$status" -eq 0 ]
	[ "$stderr" = "$OK" ]
	[ "$elapsed" -lt 60000 ]
}

@test "could not start: exit 70 and a message naming the program" {
	run --separate-stderr tool run -- /nonexistent/pd-handler
	[ "$status" -eq 70 ]
	[ "$output" = "" ]
	[ "$stderr" = "pd-test-tool: could not start '/nonexistent/pd-handler': No such file or directory" ]

	run --separate-stderr tool run -- pd-no-such-handler arg
	[ "$status" -eq 70 ]
	[ "$stderr" = "pd-test-tool: could not start 'pd-no-such-handler': No such file or directory" ]

	printf '#!/bin/sh\necho hi\n' >"$BATS_TEST_TMPDIR/noexec"
	chmod 644 "$BATS_TEST_TMPDIR/noexec"
	run --separate-stderr tool run -- "$BATS_TEST_TMPDIR/noexec"
	[ "$status" -eq 70 ]
	[ "$stderr" = "pd-test-tool: could not start '$BATS_TEST_TMPDIR/noexec': Permission denied" ]
}

@test "a program without a slash is looked up in PATH" {
	mkdir "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\necho "found $1"\n' >"$BATS_TEST_TMPDIR/bin/pd-hello"
	chmod 755 "$BATS_TEST_TMPDIR/bin/pd-hello"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH" run --separate-stderr tool run -- pd-hello there
	[ "$status" -eq 0 ]
	[ "$output" = "found there" ]
	[ "$stderr" = "$OK" ]
}

@test "the handler gets the environment" {
	PD_PROC_TEST='a b=c' run --separate-stderr tool run -- sh -c 'printf %s "$PD_PROC_TEST"'
	[ "$status" -eq 0 ]
	[ "$output" = "a b=c" ]
}

@test "the handler sees only fds 0, 1 and 2" {
	# --hold-fd: the tool holds an fd without O_CLOEXEC, like libpq's socket.
	run --separate-stderr tool run --hold-fd -- sh -c 'ls /proc/$$/fd; :'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '0\n1\n2')" ]
	[ "$stderr" = "$OK" ]
}

@test "the handler starts with an empty signal mask and nothing ignored" {
	# The tool blocks SIGHUP, SIGINT, SIGTERM and SIGCHLD and ignores SIGPIPE.
	# Only signals 1-31 count: glibc reserves 32 and 33 and will not change
	# their disposition, and some parents (GNU make) leave them ignored.
	run --separate-stderr tool run -- grep -E '^Sig(Blk|Ign):' /proc/self/status
	[ "$status" -eq 0 ]
	blk=$(printf '%s\n' "$output" | sed -n 's/^SigBlk:\t//p')
	ign=$(printf '%s\n' "$output" | sed -n 's/^SigIgn:\t//p')
	[ "$blk" = 0000000000000000 ]
	[ "$((0x$ign & 0x7fffffff))" -eq 0 ]
	[ "$stderr" = "$OK" ]
}

@test "SIGTERM has its default action in the handler" {
	run --separate-stderr tool run -- sh -c 'kill -TERM $$; echo survived'
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	[ "$stderr" = "result exit=-1 signal=15 timed_out=0 truncated=0 killed=- tail_len=0" ]
}

@test "kill (lease lost, drain): SIGTERM to the group, with the reason" {
	start=$(now_ms)
	run --separate-stderr tool kill-after 200 -- sleep 120
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 0 ]
	[ "$stderr" = "result exit=-1 signal=15 timed_out=0 truncated=0 killed=test tail_len=0" ]
	[ "$elapsed" -ge 200 ]
	[ "$elapsed" -lt 60000 ]
}

@test "kill: SIGKILL after the grace when SIGTERM is ignored" {
	start=$(now_ms)
	run --separate-stderr tool kill-after 100 --grace 300 -- sh -c 'trap "" TERM; sleep 120'
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 0 ]
	[ "$stderr" = "result exit=-1 signal=9 timed_out=0 truncated=0 killed=test tail_len=0" ]
	[ "$elapsed" -ge 400 ]
	[ "$elapsed" -lt 60000 ]
}

@test "kill: a handler that ends first is not killed, and its I/O is done" {
	start=$(now_ms)
	run --separate-stderr tool kill-after 120000 --input 'in put' -- sh -c 'cat; echo err >&2'
	elapsed=$(($(now_ms) - start))
	[ "$status" -eq 0 ]
	[ "$output" = "in put" ]
	[ "$stderr" = "$(printf 'stderr: err\nresult exit=0 signal=0 timed_out=0 truncated=0 killed=- tail_len=4')" ]
	[ "$elapsed" -lt 60000 ]
}

@test "pd-test-tool: bad usage exits 64" {
	run --separate-stderr tool
	[ "$status" -eq 64 ]
	run --separate-stderr tool frobnicate
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-test-tool: unknown command 'frobnicate'" ]
	run --separate-stderr tool run
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-test-tool: no program to run" ]
	run --separate-stderr tool run --timeout soon -- true
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-test-tool: invalid number 'soon'" ]
}
