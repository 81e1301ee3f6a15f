#!/usr/bin/env bats
# lib/'s includes point only down the layers mapped at the top of
# lib/README.md (scripts/layers). No database.

PD_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

# A copy of lib/ (sources, headers, the map) to break.
copy_lib() {
	mkdir -p "$BATS_TEST_TMPDIR/lib"
	cp "$PD_ROOT"/lib/*.[ch] "$PD_ROOT/lib/README.md" "$BATS_TEST_TMPDIR/lib/"
}

@test "every include of lib/ points down the map of lib/README.md" {
	run sh "$PD_ROOT/scripts/layers"
	if [ "$status" -ne 0 ]; then
		printf '# %s\n' "${lines[@]}" >&3
	fi
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "the map places every module of lib/ and has the five layers" {
	local map
	map=$(grep -E '^layer [0-9]+ ' "$PD_ROOT/lib/README.md")
	[ "$(printf '%s\n' "$map" | wc -l)" -eq 5 ]
	[[ "$map" == *"layer 1  base "* ]]
	[[ "$map" == *"layer 5  presentation "* ]]
	for f in "$PD_ROOT"/lib/*.c; do
		m=$(basename "$f" .c)
		printf '%s\n' "$map" | grep -qw "$m"
	done
}

@test "a lower module including a higher one fails, named with both layers" {
	copy_lib
	sed -i 's/^#include "buf.h"$/#include "buf.h"\n#include "worker.h"/' "$BATS_TEST_TMPDIR/lib/json.c"
	run sh "$PD_ROOT/scripts/layers" "$BATS_TEST_TMPDIR/lib"
	[ "$status" -eq 1 ]
	[[ "$output" == *"lib/json (layer 1, base) includes worker.h (layer 3, engine): an arrow up"* ]]
}

@test "a module the map does not place fails" {
	copy_lib
	printf '#include "err.h"\n' >"$BATS_TEST_TMPDIR/lib/newmod.c"
	run sh "$PD_ROOT/scripts/layers" "$BATS_TEST_TMPDIR/lib"
	[ "$status" -eq 1 ]
	[ "$output" = "lib/newmod is in no layer of lib/README.md: add it to the map" ]
}

@test "a circle of includes within a layer fails (err including log, the old circle)" {
	copy_lib
	sed -i 's/^#include "err.h"$/#include "err.h"\n#include "log.h"/' "$BATS_TEST_TMPDIR/lib/err.c"
	run sh "$PD_ROOT/scripts/layers" "$BATS_TEST_TMPDIR/lib"
	[ "$status" -eq 1 ]
	[[ "$output" == *"a circle of includes in lib/: err -> log -> err"* ]]
}
