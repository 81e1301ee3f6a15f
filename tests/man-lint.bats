#!/usr/bin/env bats
# scripts/man-lint, which `make lint` runs on every manual page, passes the
# pages as they are and fails on each rendering fault issue 27 found, put
# back into a copy of its page: "No such file" read as a macro (pd-worker(1),
# pd-relay(1)), "-default -60s" (pd-cron(1)), troff's "can't break line"
# at 80 columns (pd-admin(1)), and a line mandoc -W style warns about.

load helpers

setup() {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	command -v groff >/dev/null || skip "groff not installed"
	PAGES=$(mktemp -d "${BATS_TMPDIR:-/tmp}/pd-man-lint.XXXXXX")
}

teardown() {
	[ -z "${PAGES:-}" ] || rm -rf "$PAGES"
}

# broken PAGE SED: a copy of man/PAGE with the sed script applied, which
# must change it; prints the copy's path.
broken() {
	local out=$PAGES/$1
	sed "$2" "$PD_ROOT/man/$1" >"$out"
	! cmp -s "$PD_ROOT/man/$1" "$out" || {
		echo "the sed script $2 changed nothing in man/$1" >&2
		return 1
	}
	printf '%s\n' "$out"
}

@test "every manual page passes man-lint as it is" {
	run sh "$PD_ROOT/scripts/man-lint" "$PD_ROOT"/man/*.[1-9]
	[ "$status" -eq 0 ]
	[ -z "$output" ] || [[ "$output" == "man-lint: "*" pages clean" ]]
}

@test "man-lint fails on 'No such file' read as a macro, in pd-worker(1) and pd-relay(1)" {
	local p
	for p in pd-worker.1 pd-relay.1; do
		f=$(broken "$p" 's/nope: \\&No such file/nope: No such file/')
		run sh "$PD_ROOT/scripts/man-lint" "$f"
		[ "$status" -eq 1 ]
		[[ "$output" == *"$f:"*": No read as a macro after plain text"* ]]
	done
}

@test "man-lint fails on Fl carried past a comma: -default -60s in pd-cron(1)" {
	f=$(broken pd-cron.1 's/skip-grace , No default 60s/skip-grace , default 60s/')
	run sh "$PD_ROOT/scripts/man-lint" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"renders \"-default\" as a flag"* ]]
}

@test "man-lint fails on troff's can't break line at 80 columns, in pd-admin(1)" {
	f=$(broken pd-admin.1 's/",\\:"/","/g')
	run sh "$PD_ROOT/scripts/man-lint" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"warning"*"can't break line"* ]]
}

@test "man-lint fails on a mandoc style warning, and not on an Xr to a page not installed" {
	f=$(broken pendulum.7 's/^\.Ql queue\\&:$/.Ql queue:/')
	run sh "$PD_ROOT/scripts/man-lint" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"STYLE: no blank before trailing delimiter"* ]]
	[[ "$output" != *"referenced manual not found"* ]]
}
