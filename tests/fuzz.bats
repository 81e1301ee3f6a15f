#!/usr/bin/env bats
# The libFuzzer targets of tests/fuzz/ (make fuzz) keep building and
# running: each runs over its seed corpus, the inputs of crashes found
# included, and fuzzes on for two seconds. No database.
#
# make check builds them (make fuzz-targets, into build-fuzz/fuzz;
# PD_FUZZ_BIN names another directory).

PD_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
FUZZ_BIN=${PD_FUZZ_BIN:-$PD_ROOT/build-fuzz/fuzz}

targets() {
	for f in "$PD_ROOT"/tests/fuzz/*_fuzz.c; do
		basename "$f" _fuzz.c
	done
}

setup() {
	[ -d "$FUZZ_BIN" ] || skip "no fuzz build in $FUZZ_BIN (make fuzz-targets)"
}

@test "every target has a seed corpus in the tree and was built" {
	[ "$(targets | wc -l)" -ge 7 ]
	for t in $(targets); do
		[ -n "$(ls -A "$PD_ROOT/tests/fuzz/corpus/$t")" ]
		[ -x "$FUZZ_BIN/${t}_fuzz" ]
	done
}

# A copy receives what the run finds; the tree's corpus is only read.
run_target() {
	local t=$1 dict=()
	[ -f "$PD_ROOT/tests/fuzz/$t.dict" ] && dict=(-dict="$PD_ROOT/tests/fuzz/$t.dict")
	mkdir -p "$BATS_TEST_TMPDIR/new" "$BATS_TEST_TMPDIR/out"
	run "$FUZZ_BIN/${t}_fuzz" -max_total_time=2 -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$BATS_TEST_TMPDIR/out/" "${dict[@]}" \
		"$BATS_TEST_TMPDIR/new" "$PD_ROOT/tests/fuzz/corpus/$t"
	if [ "$status" -ne 0 ]; then
		printf '# %s\n' "${lines[@]}" | grep -E 'ERROR|SUMMARY|runtime error|#[0-9]+ 0x' | head -20 >&3
	fi
	[ "$status" -eq 0 ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/out")" ]
}

@test "json: parse, quote and read back" {
	run_target json
}

@test "ndjson: pd-enqueue --ndjson's lines and jobs" {
	run_target ndjson
}

@test "cron: expressions and the next fire in a zone" {
	run_target cron
}

@test "crontab: crontab files" {
	run_target crontab
}

@test "config: pendulum.yaml decoded" {
	run_target config
}

@test "dur: durations, instants, names" {
	run_target dur
}

@test "stream: stream handler answer and stderr lines" {
	run_target stream
}
