#!/usr/bin/env bats
# Bash completion (completion/pendulum.bash): every program is completed;
# every long option that a --help lists (the programs' and each command's)
# and every command are offered where they apply, the words coming from
# `PROG --complete-words`, the tables getopt parses. No database.

load helpers

PROGS="pd-enqueue pd-worker pd-reaper pd-cron pd-relay pd-admin"

# commands PROG: the commands its --help lists ("jobs", "dlq list"), none for the others.
commands() {
	"$1" --help | sed -n '/^Commands:/,/^$/p' | grep -E '^  [a-z]' |
		sed -E 's/^  (([a-z]+)( [a-z]+)?).*/\1/'
}

# longs ARGV...: the --long options of the --help of ARGV (a program, or a program and a command).
longs() {
	"$@" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*$' | sort -u
}

# offered WORD...: what completion offers for the last WORD (the one being
# completed) of the command line WORD..., one a line, sorted.
offered() {
	(
		# shellcheck source=/dev/null
		. "$PD_ROOT/completion/pendulum.bash"
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_pendulum "$1"
		printf '%s\n' "${COMPREPLY[@]}" | sort -u
	)
}

@test "sourcing the script completes every program with _pendulum" {
	for p in $PROGS; do
		run bash -c ". '$PD_ROOT/completion/pendulum.bash' && complete -p $p"
		[ "$status" -eq 0 ] || { echo "$p: $output"; return 1; }
		[ "$output" = "complete -F _pendulum $p" ]
	done
}

@test "every long option of every --help is offered after --, the program's and each command's" {
	local n=0 c
	for p in $PROGS; do
		missing=$(comm -23 <(longs "$p") <(offered "$p" --))
		[ -z "$missing" ] || { echo "$p: not offered: $missing"; return 1; }
		n=$((n + 1))
		while read -r c; do
			# shellcheck disable=SC2086 # "dlq list": two words
			missing=$(comm -23 <(longs "$p" $c) <(offered "$p" $c --))
			[ -z "$missing" ] || { echo "$p $c: not offered: $missing"; return 1; }
			n=$((n + 1))
		done < <(commands "$p")
	done
	# the six programs and the commands of pd-admin and pd-cron
	[ "$n" -gt 40 ]
}

@test "every command of --help is offered, a group's second word after its first" {
	for p in pd-admin pd-cron; do
		missing=$(comm -23 <(commands "$p" | cut -d' ' -f1 | sort -u) <(offered "$p" ""))
		[ -z "$missing" ] || { echo "$p: not offered: $missing"; return 1; }
	done
	[ "$(offered pd-admin dlq "" | tr '\n' ' ')" = "delete list purge replay " ]
	[ "$(offered pd-admin -c /dev/null --json job s | tr '\n' ' ')" = "show " ]
}

@test "options are completed within the command the words name, after the program's options" {
	[ "$(offered pd-admin jobs --st)" = "--state" ]
	[ "$(offered pd-admin -c pendulum.yaml dlq purge --older)" = "--older-than" ]
	[ "$(offered pd-cron --json apply --dry)" = "--dry-run" ]
	# --config takes a value: the word after it is a file, not the command
	[ -z "$(offered pd-admin --config jobs --of)" ]
	[ "$(offered pd-admin --config x jobs --of)" = "--offset" ]
	[ "$(offered pd-admin --config = x jobs --of)" = "--offset" ]
	[ "$(offered pd-worker --until)" = "$(printf '%s\n' --until-idle --until-settled)" ]
	# a program without commands offers no command after an option's value
	run offered pd-enqueue --queue=x --pr
	[ "$output" = "$(printf '%s\n' --print-id --priority)" ]
}

@test "an option's value and an operand complete as file names" {
	cd "$BATS_TEST_TMPDIR"
	touch crontab.txt
	[ "$(offered pd-worker --crontab cront)" = "crontab.txt" ]
	[ "$(offered pd-worker --crontab = cront)" = "crontab.txt" ]
	[ "$(offered pd-cron apply cront)" = "crontab.txt" ]
}

@test "--complete-words is hidden and prints a line per command, nothing else" {
	for p in $PROGS; do
		run "$p" --help
		[[ "$output" != *complete-words* ]]
	done
	run --separate-stderr pd-admin --complete-words
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq "$(($(commands pd-admin | wc -l) + 1))" ]
	# not a value or an operand: only alone, as the first word
	run --separate-stderr pd-reaper --once --complete-words
	[ "$status" -eq 64 ]
}
