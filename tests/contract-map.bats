#!/usr/bin/env bats
# tests/README.md maps each promise of DESIGN to the test that holds it.
# Every row must name a test that exists (tests/FILE.bats: TITLE, a @test
# of exactly that title, or tests/unit/X_test.c) or say `missing`; the
# missing rows are counted, not failed. No database.

PD_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

# The table rows of the map FILE: "LINE<TAB>PROMISE<TAB>REF", REF the last
# cell with its backticks taken off and `\|` read as `|`. Header rows (those
# a separator row follows) and separator rows are left out.
map_rows() {
	awk '
		{ text[NR] = $0 }
		END {
			for (i = 1; i <= NR; i++) {
				l = text[i]
				if (l !~ /^\|/ || l ~ /^\|[-:| ]+$/) continue
				if (text[i + 1] ~ /^\|[-:| ]+$/) continue
				gsub(/\\\|/, "\001", l)
				sub(/\| *$/, "", l)
				n = split(l, c, "|")
				ref = c[n]; what = c[2]
				gsub(/^ +| +$/, "", ref); gsub(/^ +| +$/, "", what)
				if (ref ~ /^`.*`$/) ref = substr(ref, 2, length(ref) - 2)
				gsub(/\001/, "|", ref); gsub(/\001/, "|", what)
				printf "%d\t%s\t%s\n", i, what, ref
			}
		}' "$1"
}

# The @test titles of a bats FILE as bats shows them (\" \$ \\ unescaped).
bats_titles() {
	sed -n 's/^@test "\(.*\)" {$/\1/p' "$1" |
		sed 's/\\\([\\"$`]\)/\1/g'
}

# check_map MAP ROOT: prints "# row LINE (PROMISE): why" for each row whose
# test does not exist under ROOT, then "# N of M rows missing"; fails if any
# row failed or there is no row at all.
check_map() {
	local map=$1 root=$2 line what ref file title rows=0 missing=0 bad=0
	while IFS=$'\t' read -r line what ref; do
		rows=$((rows + 1))
		case $ref in
		missing)
			missing=$((missing + 1))
			continue
			;;
		tests/unit/*_test.c)
			if [ ! -f "$root/$ref" ]; then
				printf '# row %s (%s): no file %s\n' "$line" "$what" "$ref"
				bad=$((bad + 1))
			fi
			continue
			;;
		tests/*.bats:\ *) ;;
		*)
			printf '# row %s (%s): not a test reference: %s\n' "$line" "$what" "$ref"
			bad=$((bad + 1))
			continue
			;;
		esac
		file=${ref%%: *}
		title=${ref#*: }
		if [ ! -f "$root/$file" ]; then
			printf '# row %s (%s): no file %s\n' "$line" "$what" "$file"
			bad=$((bad + 1))
		elif ! bats_titles "$root/$file" | grep -Fxq -- "$title"; then
			printf '# row %s (%s): %s has no @test "%s"\n' "$line" "$what" "$file" "$title"
			bad=$((bad + 1))
		fi
	done < <(map_rows "$map")
	printf '# %d of %d rows missing\n' "$missing" "$rows"
	if [ "$rows" -eq 0 ] || [ "$bad" -ne 0 ]; then
		return 1
	fi
}

@test "every row of tests/README.md names an existing test, or says missing" {
	run check_map "$PD_ROOT/tests/README.md" "$PD_ROOT"
	printf '%s\n' "${lines[@]}" >&3
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "# "*" rows missing" ]]
}

@test "the map has a table for each kind of promise, and each has rows" {
	local h
	for h in "## Job states" "## Fencing, attempts, retries" \
		"## The handler contract" "## Exit codes per program" \
		"## Workflows" "## Cron" "## The outbox" "## Every binary" \
		"## Configuration precedence" \
		"## Capabilities of issues 21"; do
		if ! grep -q "^$h" "$PD_ROOT/tests/README.md"; then
			echo "# no section $h" >&3
			return 1
		fi
	done
	run map_rows "$PD_ROOT/tests/README.md"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -ge 100 ]
}

@test "the check fails naming a row with a renamed title, an absent file or a bad reference" {
	local root=$BATS_TEST_TMPDIR/root
	mkdir -p "$root/tests/unit"
	printf '@test "a \\"quoted\\" \\$title | piped" {\n\ttrue\n}\n' >"$root/tests/t.bats"
	: >"$root/tests/unit/x_test.c"
	cat >"$root/map.md" <<'MAP'
| promise | test |
|---|---|
| good | `tests/t.bats: a "quoted" $title \| piped` |
| unit | `tests/unit/x_test.c` |
| gap | missing |
MAP
	run check_map "$root/map.md" "$root"
	[ "$status" -eq 0 ]
	[ "$output" = "# 1 of 3 rows missing" ]

	printf '| renamed | `tests/t.bats: a title` |\n' >>"$root/map.md"
	run check_map "$root/map.md" "$root"
	[ "$status" -eq 1 ]
	[[ "$output" == *'# row 6 (renamed): tests/t.bats has no @test "a title"'* ]]

	printf '| gone | `tests/gone.bats: x` |\n| unit gone | `tests/unit/y_test.c` |\n| typo | tests/t.bats a title |\n' >>"$root/map.md"
	run check_map "$root/map.md" "$root"
	[ "$status" -eq 1 ]
	[[ "$output" == *"# row 7 (gone): no file tests/gone.bats"* ]]
	[[ "$output" == *"# row 8 (unit gone): no file tests/unit/y_test.c"* ]]
	[[ "$output" == *"# row 9 (typo): not a test reference: tests/t.bats a title"* ]]
	[[ "$output" == *"# 1 of 7 rows missing"* ]]
}
