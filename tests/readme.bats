#!/usr/bin/env bats
# README.md agrees with the binaries, and its shell blocks run (issue 27).
#
# - The pd-admin table of "## Operating it" lists every command of
#   `pd-admin --help` and no other, and every --flag a row shows is one that
#   the --help of the row's commands lists.
# - Every shell block of README.md runs here, unless marked. A shell block is
#   a fenced block whose info string is sh, shell, bash or console, or a bare
#   fence whose first line starts with "$ ". A mark is an HTML comment on the
#   line right before the fence (GitHub shows nothing of it):
#     <!-- needs a running service: WHAT -->   not run here: WHAT (PostgreSQL,
#                                              a worker, Docker ...) is not
#                                              there; say which
#     <!-- ... tests/NAME.bats runs ... -->    another test runs it: NAME.bats
#                                              must exist and read README.md
#     <!-- file PATH -->                       (any fence) not commands: the
#                                              text of file PATH, written for
#                                              the blocks after it
#   An unmarked block runs in a scratch directory, $SCRATCH, with the build's
#   binaries on PATH and no database in its environment (no PD_DATABASE_URL,
#   no PG* variable), /etc/pendulum standing for $SCRATCH/etc/pendulum: an sh
#   block as one `sh -e` script; a console block's `$ ` lines (with their `\`
#   continuations and here-documents) as one, the other lines being output.
#   Each must exit 0. Output is not compared: what these print moves with the
#   clock (next fire times). sudo, systemctl, apt-get, apt, dpkg and make are
#   stand-ins there that fail, naming the block: a block that changes the
#   machine is never run by this test; mark it.

load helpers

setup() {
	SCRATCH=$(mktemp -d "${BATS_TMPDIR:-/tmp}/pd-readme.XXXXXX")
	BLOCKS=$SCRATCH/.blocks
	mkdir -p "$BLOCKS" "$SCRATCH/etc/pendulum" "$SCRATCH/.stubs"
	local c
	for c in sudo systemctl apt-get apt dpkg make; do
		printf '#!/bin/sh\necho "%s: a README block that runs %s needs a mark (tests/readme.bats)" >&2\nexit 1\n' \
			"$c" "$c" >"$SCRATCH/.stubs/$c"
		chmod +x "$SCRATCH/.stubs/$c"
	done
}

teardown() {
	[ -z "${SCRATCH:-}" ] || rm -rf "$SCRATCH"
}

# split_blocks: each fenced block of README.md as $BLOCKS/LINE.{info,mark,body}
# (LINE: the fence's line number, zero-padded; mark: the comment line right
# before the fence, or nothing).
split_blocks() {
	awk -v dir="$BLOCKS" '
		/^```/ {
			if (!fence) {
				fence = 1
				n = sprintf("%s/%05d", dir, NR)
				printf "%s", substr($0, 4) > (n ".info")
				close(n ".info")
				printf "%s", (prev ~ /^<!--.*-->$/ ? prev : "") > (n ".mark")
				close(n ".mark")
				printf "" > (n ".body")
			} else {
				fence = 0
				close(n ".body")
			}
			prev = $0
			next
		}
		fence { print > (n ".body") }
		{ prev = $0 }' "$PD_ROOT/README.md"
}

# is_shell N: block N is a shell block.
is_shell() {
	local info
	info=$(cat "$1.info")
	case ${info%% *} in
	sh | shell | bash | console) return 0 ;;
	'') head -n 1 "$1.body" | grep -q '^\$ ' ;;
	*) return 1 ;;
	esac
}

# as_script N: block N's commands as an sh script, /etc/pendulum rewritten.
as_script() {
	local info
	info=$(cat "$1.info")
	if [ "${info%% *}" = console ] || [ -z "$info" ]; then
		awk '
			heredoc != "" { print; if ($0 == heredoc) heredoc = ""; next }
			cont { print; cont = /\\$/; next }
			/^\$ / {
				line = substr($0, 3)
				print line
				cont = /\\$/
				if (match(line, /<<-?[ ]*'"'"'?[A-Za-z_]+'"'"'?/)) {
					heredoc = substr(line, RSTART, RLENGTH)
					gsub(/[<'"'"' -]/, "", heredoc)
				}
			}' "$1.body"
	else
		cat "$1.body"
	fi | sed "s|/etc/pendulum|$SCRATCH/etc/pendulum|g"
}

@test "the README's pd-admin table lists every command of pd-admin --help, and their flags" {
	local help table missing extra
	# The commands of pd-admin --help: the leading lowercase words of each
	# synopsis under "Commands:".
	help=$(pd-admin --help | awk '
		/^Commands:/ { on = 1; next }
		on && !/^  / { on = 0 }
		on {
			# the synopsis column ends at the first two blanks
			line = substr($0, 3)
			sub(/  .*/, "", line)
			n = split(line, w, " ")
			c = ""
			for (i = 1; i <= n && w[i] ~ /^[a-z][a-z-]*$/; i++)
				c = c (c == "" ? "" : " ") w[i]
			# (a description carried over to a line of its own has none)
			if (c != "")
				print c
		}' | sort -u)
	# The table: each `...` of a row's first cell, less "pd-admin ", read
	# the same way.
	table=$(table_spans | awk '
		{
			c = ""
			for (i = 1; i <= NF && $i ~ /^[a-z][a-z-]*$/; i++)
				c = c (c == "" ? "" : " ") $i
			if (c != "")
				print c
		}' | sort -u)
	[ "$(printf '%s\n' "$help" | grep -c .)" -ge 30 ]
	printf '%s\n' "$help" | grep -qx 'outbox list'
	missing=$(comm -23 <(printf '%s\n' "$help") <(printf '%s\n' "$table") | paste -sd, -)
	extra=$(comm -13 <(printf '%s\n' "$help") <(printf '%s\n' "$table") | paste -sd, -)
	[ -z "$missing" ] || {
		echo "pd-admin --help has, the README's table has not: $missing" >&2
		return 1
	}
	[ -z "$extra" ] || {
		echo "the README's table has, pd-admin --help has not: $extra" >&2
		return 1
	}
	# Every --flag of a row is in the --help of one of the row's commands.
	local row cmds flags f c ok bad=""
	while IFS= read -r row; do
		cmds=$(printf '%s\n' "$row" | tr '\t' '\n' | awk '
			{ c = ""; for (i = 1; i <= NF && $i ~ /^[a-z][a-z-]*$/; i++) c = c (c == "" ? "" : " ") $i
			  if (c != "") print c }')
		flags=$(printf '%s\n' "$row" | grep -o -- '--[a-z][a-z-]*' | sort -u)
		for f in $flags; do
			ok=
			while IFS= read -r c; do
				# shellcheck disable=SC2086 # the command's words
				if pd-admin $c --help | grep -q -- "^ *\(-[a-zA-Z], \)\{0,1\}$f\b"; then
					ok=1
				fi
			done <<<"$cmds"
			[ -n "$ok" ] || bad="$bad ${cmds%%$'\n'*}:$f"
		done
	done < <(table_rows)
	[ -z "$bad" ] || {
		echo "flags in the README's pd-admin table that no --help of their row lists:$bad" >&2
		return 1
	}
}

# table_rows: each row of the pd-admin table, its first cell's `...` spans
# tab-separated, "pd-admin " taken off.
table_rows() {
	awk '
		/^## / { on = ($0 == "## Operating it") }
		on && /^\| command \| what it does \|$/ { t = 1; next }
		t && !/^\|/ { exit }
		t && /^\|---/ { next }
		t {
			cell = $0
			sub(/^\| /, "", cell)
			sub(/ \| .*/, "", cell)
			out = ""
			while (match(cell, /`[^`]*`/)) {
				s = substr(cell, RSTART + 1, RLENGTH - 2)
				sub(/^pd-admin /, "", s)
				out = out (out == "" ? "" : "\t") s
				cell = substr(cell, RSTART + RLENGTH)
			}
			print out
		}' "$PD_ROOT/README.md"
}

# table_spans: the spans of every row, one a line.
table_spans() {
	table_rows | tr '\t' '\n'
}

@test "the README's shell blocks run, or are marked with why they do not" {
	split_blocks
	local b mark name ran=0 files=0 skipped=0 elsewhere=0 path
	for b in "$BLOCKS"/*.info; do
		b=${b%.info}
		mark=$(cat "$b.mark")
		name="README.md line $((10#${b##*/}))"
		case $mark in
		'<!-- file '*' -->')
			path=${mark#<!-- file }
			path=${path% -->}
			path=$(printf '%s\n' "$path" | sed "s|^/etc/pendulum|$SCRATCH/etc/pendulum|")
			mkdir -p "$(dirname "$path")"
			cp "$b.body" "$path"
			files=$((files + 1))
			continue
			;;
		esac
		is_shell "$b" || continue
		case $mark in
		'<!-- needs a running service: '?*' -->')
			skipped=$((skipped + 1))
			;;
		'<!--'*'tests/'*'.bats runs'*'-->')
			local t
			t=$(printf '%s\n' "$mark" | grep -o 'tests/[a-z0-9-]*\.bats' | head -n 1)
			[ -f "$PD_ROOT/$t" ] || {
				echo "$name: $t, said to run it, does not exist" >&2
				return 1
			}
			grep -q 'README\.md' "$PD_ROOT/$t" || {
				echo "$name: $t, said to run it, does not read README.md" >&2
				return 1
			}
			elsewhere=$((elsewhere + 1))
			;;
		'')
			as_script "$b" >"$b.sh"
			run env -u PD_DATABASE_URL -u PGHOST -u PGPORT -u PGDATABASE -u PGUSER -u PGSERVICE \
				PATH="$SCRATCH/.stubs:$PD_BIN:$PATH" HOME="$SCRATCH" sh -ec "cd \"\$1\" && . \"\$2\"" sh "$SCRATCH" "$b.sh"
			[ "$status" -eq 0 ] || {
				printf '%s: exit %s:\n%s\n%s\n' "$name" "$status" "$(cat "$b.sh")" "$output" >&2
				return 1
			}
			ran=$((ran + 1))
			;;
		*)
			echo "$name: an unknown mark: $mark (see tests/readme.bats)" >&2
			return 1
			;;
		esac
	done
	echo "ran $ran, another test runs $elsewhere, $skipped need a service, $files files" >&2
	[ "$ran" -ge 1 ]
	[ "$elsewhere" -ge 1 ]
	[ "$files" -ge 1 ]
}
