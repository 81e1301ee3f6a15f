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

@test "bg: a start with &, coproc, setsid or nohup is reported anywhere in the file, with its file and line" {
	f=$(fixture bg.bats <<'EOF'
setup() {
	sleep 60 &
}

%test "t" {
	pd-worker --until-idle >"$BATS_TEST_TMPDIR/w" 2>&1 &
	PGAPPNAME=x psql -X <<-'SQL' &
		SELECT 1;
	SQL
	coproc P { psql -X; }
	FOO=1 setsid pd-relay
	{ nohup pd-cron run; }
	x=1; sleep 1 & y=2
	[ 1 = 1 ]
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 7 ]
	[ "${lines[0]}" = "$f:2: bg: a command put in the background with & outside the helpers: start_bg, start_psql or psql_coproc registers it for kill_all_bg" ]
	[[ "${lines[1]}" == "$f:6: bg: a command put in the background with & "* ]]
	[[ "${lines[2]}" == "$f:7: bg: a command put in the background with & "* ]]
	[[ "${lines[3]}" == "$f:10: bg: coproc outside the helpers: "* ]]
	[[ "${lines[4]}" == "$f:11: bg: setsid outside the helpers: "* ]]
	[[ "${lines[5]}" == "$f:12: bg: nohup outside the helpers: "* ]]
	[[ "${lines[6]}" == "$f:13: bg: a command put in the background with & "* ]]
}

@test "bg: a start inside \$(...) is reported, quoted or not; arithmetic, quoted text and comments there pass" {
	f=$(fixture bg-subst.bats <<'EOF'
%test "t" {
	pid=$(sleep 60 & echo $!)
	x="$(pd-worker --until-idle >/dev/null 2>&1 & echo $!)"
	y=$(echo "$(setsid sleep 9)")
	[ "$(( (5 & 3) + 1 ))" -eq 2 ]
	z=$(echo 'a & b' "c & d" 2>&1 && echo $((1 & 1)))
	w=$(printf x # a comment & more
	)
	[ 1 = 1 ]
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == "$f:2: bg: a command put in the background with & "* ]]
	[[ "${lines[1]}" == "$f:3: bg: a command put in the background with & "* ]]
	[[ "${lines[2]}" == "$f:4: bg: setsid outside the helpers: "* ]]
}

@test "bg: quoted command lines, && and redirections, words as arguments, here-documents and allowed lines pass" {
	f=$(fixture bg-ok.bats <<'EOF'
%test "t" {
	run tool run -- sh -c 'setsid sleep 60 & echo $!'
	pd-worker --handler "t=sleep 30 & wait" 2>&1 >/dev/null && true
	exec 3>&- 4<&0
	echo x &>/dev/null
	command -v setsid >/dev/null
	[ "$((5 & 3))" -eq 1 ]
	cat >"$BATS_TEST_TMPDIR/x" <<'END'
sleep 60 &
END
	sleep 60 & # bats-lint: allow bg because killed two lines down
	kill "$!"
	[ "$status" -eq 0 ]
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "bg: a psql session under start_bg is flagged: start_psql ends its backend too" {
	f=$(fixture bg-psql.bats <<'EOF'
pd_db_hooks

%test "t" {
	start_bg locker psql -X -c 'SELECT pg_sleep(60)'
	start_psql locker -c 'SELECT 1'
	start_bg w pd-worker --handler "t=psql -c x"
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$f"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" = "$f:4: bg: a psql session started with start_bg: start_psql also ends its backend, which outlives a killed psql" ]
}

@test "teardown: start_bg needs a teardown that calls kill_all_bg: pd_db_hooks' or the file's own" {
	none=$(fixture none.bats <<'EOF'
%test "t" {
	start_bg w pd-worker
}
EOF
	)
	own=$(fixture own.bats <<'EOF'
teardown() {
	kill_all_bg
}

%test "t" {
	start_psql p -c 'SELECT 1'
}
EOF
	)
	hooks=$(fixture hooks.bats <<'EOF'
pd_db_hooks

%test "t" {
	start_worker w
}
EOF
	)
	replaced=$(fixture replaced.bats <<'EOF'
pd_db_hooks
teardown() {
	rm -f x
}

%test "t" {
	true
	start_relay r
}
EOF
	)
	run sh "$PD_ROOT/scripts/bats-lint" "$none" "$own" "$hooks" "$replaced"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "$none:2: teardown: a background start with no teardown that calls kill_all_bg" ]
	[ "${lines[1]}" = "$replaced:8: teardown: a background start with no teardown that calls kill_all_bg" ]
}

@test "a file it cannot read: exit 2, named" {
	run sh "$PD_ROOT/scripts/bats-lint" "$BATS_TEST_TMPDIR/missing.bats"
	[ "$status" -eq 2 ]
	[ "$output" = "bats-lint: cannot read $BATS_TEST_TMPDIR/missing.bats" ]
}
