#!/usr/bin/env bats
# scripts/bats-lint, which `make lint` runs on every bats file: the suite
# passes it as it is, and each rule fires on a small bad file (and stays
# quiet on the idioms it must let through). No database.

PD_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

# fixture NAME: a bats file from stdin, "%test" standing for the keyword (bats
# would read the keyword at a line's start here as a test of its own); prints
# its path.
fixture() {
	sed 's/^%test/@test/' >"$BATS_TEST_TMPDIR/$1"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

@test "the suite's own bats files pass the lint" {
	run sh "$PD_ROOT/scripts/bats-lint" "$PD_ROOT"/tests/*.bats "$PD_ROOT"/tests/ha/*.bats "$PD_ROOT"/tests/deb/*.bats
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "chain: an && or || list of tests before the last line is reported with its file and line" {
	f=$(fixture chain.bats <<'EOF'
%test "t" {
	x=1
	[ "$x" = 1 ] && [ "$x" != 2 ]
	[ "$x" = 1 ] || [ "$x" = 2 ]
	[ "$x" = 1 ] || true
	[ "$(printf '%s' "a || b")" = "a || b" ] ||
		[[ "$x" == 1 ]]
	[ "$x" = 1 ] && [ "$x" != 3 ]
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 4 ]
	[ "${lines[0]}" = "$f:3: chain: an && / || list used as an assertion before the test's last line" ]
	[[ "${lines[1]}" == "$f:4: chain: "* ]]
	[[ "${lines[2]}" == "$f:5: chain: "* ]]
	[[ "${lines[3]}" == "$f:6: chain: "* ]]
}

@test "chain: one [[ a || b ]], guards, loud fallbacks and conditions pass" {
	f=$(fixture chain-ok.bats <<'EOF'
%test "t" {
	x=1
	[[ "$x" == 1 || "$x" == 2 ]]
	[ -n "$x" ] && kill -0 $$
	[ "$x" = 1 ] || y=2
	[ "$x" = 1 ] || fail "x is $x"
	[ "$x" = 1 ] || { echo "x is $x"; return 1; }
	if [ "$x" = 1 ] && [ -n "$x" ]; then :; fi
	while [ "$x" = 2 ] || [ "$x" = 3 ]; do :; done
	echo "[ a ] && [ b ]" # a string, not a list
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "run: a run nothing checks before the next run or the test's end is reported" {
	f=$(fixture run.bats <<'EOF'
%test "t" {
	run true
	run false
	[ "$status" -eq 1 ]
	run -0 true
	run --separate-stderr true
	[ "${#stderr_lines[@]}" -eq 0 ]
	run echo a
	printf '%s\n' "$output" | grep -qx a
	run true
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "$f:2: run: run with no check of \$status or \$output after it" ]
	[ "${lines[1]}" = "$f:10: run: run with no check of \$status or \$output after it" ]
}

@test "or-true: || true after pd-* or \$PD_BIN/... is reported, after anything else not" {
	f=$(fixture or-true.bats <<'EOF'
%test "t" {
	pd-worker --until-idle 2>/dev/null || true
	"$PD_BIN/pd-relay" --once || :
	timeout 5 pd-cron run --once \
		--interval 1s || true
	kill "$pid" 2>/dev/null || true
	rm -f "$BATS_TEST_TMPDIR/pd-worker.log" || true
	[ 1 = 1 ]
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "$f:2: or-true: || true after a program under test" ]
	[[ "${lines[1]}" == "$f:3: or-true: "* ]]
	[[ "${lines[2]}" == "$f:4: or-true: "* ]]
}

@test "an allow comment with a reason lets one line through; without a reason it does not" {
	f=$(fixture allow.bats <<'EOF'
%test "t" {
	pd-worker --until-idle || true # bats-lint: allow or-true because the exit is not the point here
	# bats-lint: allow run because a smoke run
	run true
	pd-worker --until-idle || true # bats-lint: allow or-true
	run true # bats-lint: allow chain because the wrong rule
	[ 1 = 1 ]
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == "$f:5: or-true: "* ]]
	[[ "${lines[1]}" == "$f:6: run: "* ]]
}

@test "only test bodies are read; here-documents inside them are skipped" {
	f=$(fixture scope.bats <<'EOF'
helper() {
	[ 1 = 1 ] && [ 2 = 2 ]
	run true
	pd-worker || true
}

setup() {
	run true
}

%test "t" {
	cat >"$BATS_TEST_TMPDIR/x" <<'END'
[ 1 = 1 ] && [ 2 = 2 ]
run true
END
	[ 1 = 1 ]
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "a file it cannot read: exit 2, named" {
	run sh "$PD_ROOT/scripts/bats-lint" "$BATS_TEST_TMPDIR/missing.bats"
	[ "$status" -eq 2 ]
	[ "$output" = "bats-lint: cannot read $BATS_TEST_TMPDIR/missing.bats" ]
}
