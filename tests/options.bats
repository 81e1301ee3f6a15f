#!/usr/bin/env bats
# Unix manners of every program: one letter, one meaning (pendulum(7),
# Options: the table, each program's --help and its man page agree, both
# ways); an option's value that looks like an option is refused; a closed
# standard output ends a listing quietly with status 0.

load helpers

PROGS="pd-enqueue pd-worker pd-reaper pd-cron pd-relay pd-admin"

# helps PROG: its --help, and each command's for pd-admin and pd-cron.
helps() {
	local p=$1 c
	"$p" --help
	case $p in
	pd-admin | pd-cron)
		"$p" --help | sed -n '/^Commands:/,/^$/p' | grep -E '^  [a-z]' |
			sed -E 's/^  (([a-z]+)( [a-z]+)?).*/\1/' | while read -r c; do
			# shellcheck disable=SC2086 # "dlq list": two words
			"$p" $c --help
		done
		;;
	esac
}

# help_pairs PROG: "LETTER LONG" for each "-x, --long" option line of its helps.
help_pairs() {
	helps "$1" | grep -oE '^ +-[a-zA-Z], --[a-z][a-z-]*' | sed -E 's/^ +-(.), --/\1 /' | sort -u
}

# help_longs PROG: every --long its helps list as an option line.
help_longs() {
	helps "$1" | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*$' | sort -u
}

# man_pairs PROG: "LETTER LONG" for each ".It Fl x ... , Fl Fl long" of its page.
man_pairs() {
	sed -nE 's/^\.It Fl ([a-zA-Z])( Ar [a-z]+)? , Fl Fl ([a-z][a-z-]*).*/\1 \3/p' "$PD_ROOT/man/$1.1" | sort -u
}

# man_longs PROG: the --long options of its page: every one in SYNOPSIS,
# and those of the option lists (.It) elsewhere.
man_longs() {
	awk '/^\.Sh /{syn = ($2 == "SYNOPSIS")} syn || /^\.It /' "$PD_ROOT/man/$1.1" |
		grep -oE 'Fl Fl [a-z][a-z-]*' | sed 's/^Fl Fl /--/' | sort -u
}

# man_letters PROG: the short options its SYNOPSIS shows (.Op Fl hVv, .Op Fl q Ar queue, ...).
man_letters() {
	awk '/^\.Sh /{syn = ($2 == "SYNOPSIS")} syn' "$PD_ROOT/man/$1.1" |
		sed -E 's/Fl Fl [a-z-]+//g' | grep -oE 'Fl [a-zA-Z]+( |$)' | sed -E 's/^Fl //; s/ $//' |
		grep -o . | sort -u
}

# table_pairs PROG: "LETTER LONG" for each row of pendulum(7)'s table naming PROG.
table_pairs() {
	sed -n '/^\.Ss Options/,/^\.El/p' "$PD_ROOT/man/pendulum.7" |
		sed -nE 's/^\.It Fl ([a-zA-Z])( Ar [a-z]+)? Ta Fl Fl ([a-z][a-z-]*) Ta (.*)/\1 \3 \4 /p' |
		awk -v p="$1" '{ for (i = 3; i <= NF; i++) if ($i == p) print $1, $2 }' | sort -u
}

# Two tests make a database of their own (pd_setup_db): drop it (and stop a
# cluster the test started) whatever happened; nothing when the test made none.
teardown() {
	pd_teardown_db
}

@test "pendulum(7) has a table of every short option" {
	[ "$(table_pairs pd-worker | wc -l)" -ge 6 ]
	[ "$(table_pairs pd-enqueue | cut -d' ' -f1 | tr -d '\n')" = "Vcdhkpqtv" ]
}

@test "one letter, one meaning: --help, the man page and pendulum(7) agree on every short option" {
	for p in $PROGS; do
		table=$(table_pairs "$p")
		[ -n "$table" ] || { echo "$p: not in pendulum(7)'s table"; return 1; }
		diff -u <(echo "$table") <(help_pairs "$p") || { echo "$p: pendulum(7) and --help differ"; return 1; }
		diff -u <(echo "$table") <(man_pairs "$p") || { echo "$p: pendulum(7) and $p(1) differ"; return 1; }
		diff -u <(echo "$table" | cut -d' ' -f1 | sort -u) <(man_letters "$p") ||
			{ echo "$p: pendulum(7) and $p(1)'s SYNOPSIS differ"; return 1; }
	done
	# across programs, a letter has one long option
	dups=$(sed -n '/^\.Ss Options/,/^\.El/p' "$PD_ROOT/man/pendulum.7" |
		sed -nE 's/^\.It Fl ([a-zA-Z]) .*/\1/p' | sort | uniq -d | tr -d '\n')
	[ -z "$dups" ]
}

@test "--help and the man page list the same long options, both ways" {
	for p in $PROGS; do
		diff -u <(help_longs "$p") <(man_longs "$p") || { echo "$p: --help (-) and $p(1) (+) differ"; return 1; }
	done
}

@test "the letters that changed: -q is the queue, --quiet has no letter, --topic has none" {
	run --separate-stderr pd-admin -q migrate
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-admin: unknown option '-q'"* ]]
	run --separate-stderr pd-reaper -q --once
	[ "$status" -eq 64 ]
	run --separate-stderr pd-relay -t orders --publish true
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-relay: unknown option '-t'"* ]]
}

@test "an option's value that looks like an option is refused, naming both (64)" {
	run --separate-stderr pd-worker -q --until-idle --handler x=true
	[ "$status" -eq 64 ]
	[ -z "$output" ]
	[[ "${stderr_lines[0]}" == "pd-worker: option '-q' needs a value, and '--until-idle' looks like an option"* ]]
	run --separate-stderr pd-worker --queue --until-idle --handler x=true
	[ "$status" -eq 64 ]
	[[ "${stderr_lines[0]}" == "pd-worker: option '--queue' needs a value, and '--until-idle' looks like an option (to mean it, attach it: --queue=--until-idle)" ]]
	for cmd in "pd-enqueue -t -x t {}" "pd-relay --topic -x --publish true" "pd-reaper --interval -v" \
		"pd-cron preview @daily -n -v" "pd-admin -c --json jobs" "pd-admin jobs --queue --json"; do
		# shellcheck disable=SC2086 # a command line
		run --separate-stderr $cmd
		[ "$status" -eq 64 ] || { echo "$cmd: status $status"; return 1; }
		[[ "$stderr" == *"looks like an option"* ]] || { echo "$cmd: $stderr"; return 1; }
	done
}

@test "a negative number, '-' alone and an attached value are taken as values" {
	run --separate-stderr pd-enqueue -p -5 -d "host=/nonexistent-dir dbname=x" t '{}'
	[ "$status" -eq 69 ]
	run --separate-stderr pd-worker --queue=--odd --handler x=true -d "host=/nonexistent-dir dbname=x"
	[ "$status" -eq 69 ]
	run --separate-stderr pd-worker -q-odd --handler x=true -d "host=/nonexistent-dir dbname=x"
	[ "$status" -eq 69 ]
	run --separate-stderr pd-cron preview @daily -n -1
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option -n: -1 is out of range"* ]]
}

@test "--help into a closed pipe: no message, status 0" {
	for p in $PROGS; do
		run --separate-stderr bash -c "set -o pipefail; $p --help | head -c1 >/dev/null"
		[ "$status" -eq 0 ] || { echo "$p: status $status"; return 1; }
		[ -z "$stderr" ] || { echo "$p: $stderr"; return 1; }
	done
}

@test "pd-admin jobs | head -1 with many jobs: no message, status 0 under pipefail" {
	pd_setup_db
	pd-admin migrate >/dev/null
	sql "INSERT INTO pendulum.jobs (job_type, payload) SELECT 't', '{}' FROM generate_series(1, 5000)"
	for i in 1 2 3; do
		run --separate-stderr bash -c 'set -o pipefail; pd-admin jobs --limit 5000 | head -1'
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
		[[ "$output" == "ID "*"TYPE"* ]]
		run --separate-stderr bash -c 'set -o pipefail; pd-admin --json jobs --limit 5000 | head -1'
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
		[[ "$output" == '{"id":5000,'* ]]
	done
	# a write error that is not a gone reader is still one
	run --separate-stderr bash -c 'pd-admin jobs --limit 5000 >/dev/full'
	[ "$status" -eq 70 ]
	[[ "$stderr" == "pd-admin: cannot write to standard output"* ]]
}

# group_helps PROG: `PROG GROUP --help` for each group of commands its --help lists.
group_helps() {
	"$1" --help | sed -n '/^Commands:/,/^$/p' | grep -E '^  [a-z]+ [a-z]+' |
		sed -E 's/^  ([a-z]+) [a-z]+.*/\1/' | sort -u | while read -r g; do
		"$1" "$g" --help
	done
}

@test "every --help line of every program, command and group fits 80 columns" {
	for p in $PROGS; do
		n=$({ helps "$p"; group_helps "$p"; } | wc -l)
		[ "$n" -gt 10 ] || { echo "$p: $n help lines"; return 1; }
		wide=$({ helps "$p"; group_helps "$p"; } | awk 'length > 80')
		[ -z "$wide" ] || { echo "$p: wider than 80 columns:"; echo "$wide"; return 1; }
	done
	# the usage line of a usage error too
	run --separate-stderr pd-cron add x
	[ "$status" -eq 64 ]
	[ -z "$(printf '%s\n' "$stderr" | awk 'length > 80')" ]
}

@test "a mistyped long option or command: did you mean" {
	run --separate-stderr pd-worker --concurency 3 --handler t=true
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-worker: unknown option '--concurency'; did you mean '--concurrency'?" ]
	run --separate-stderr pd-enqueue --queeu=q t '{}'
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-enqueue: unknown option '--queeu=q'; did you mean '--queue'?" ]
	run --separate-stderr pd-admin jobs --limt 3
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-admin: unknown option '--limt'; did you mean '--limit'?" ]
	run --separate-stderr pd-admin dql list
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-admin: unknown command 'dql'; did you mean 'dlq'?" ]
	run --separate-stderr pd-admin dlq replya
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-admin: unknown dlq command 'replya'; did you mean 'replay'?" ]
	run --separate-stderr pd-cron lsit
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-cron: unknown command 'lsit'; did you mean 'list'?" ]
	# nothing near: no guess
	run --separate-stderr pd-admin frobnicate
	[ "$status" -eq 64 ]
	[ "${stderr_lines[0]}" = "pd-admin: unknown command 'frobnicate'" ]
	run --separate-stderr pd-worker --xyz
	[ "${stderr_lines[0]}" = "pd-worker: unknown option '--xyz'" ]
}

@test "a database URL libpq cannot parse is named as such: 78, no password shown" {
	for p in "pd-admin jobs" "pd-enqueue t {}" "pd-worker --until-idle --handler t=true" "pd-cron list"; do
		# shellcheck disable=SC2086 # a command line
		run --separate-stderr env PD_DATABASE_URL='postgresql://u:s3cret%zz@db/x' $p
		[ "$status" -eq 78 ] || { echo "$p: $status $stderr"; return 1; }
		[[ "$stderr" == *"the database URL cannot be parsed by libpq: invalid percent-encoded token"* ]] ||
			{ echo "$p: $stderr"; return 1; }
		[[ "$stderr" != *"libpq defaults"* ]]
		[[ "$stderr" != *s3cret* ]]
	done
	run --separate-stderr pd-admin -d 'postgresql://u:pw@[::1/x' jobs
	[ "$status" -eq 78 ]
	[[ "$stderr" == "pd-admin: the database URL cannot be parsed by libpq: "* ]]
	[[ "$stderr" != *"pw@"* ]]
	run --separate-stderr pd-admin -d 'host=/nonexistent-dir bogus=1' jobs
	[ "$status" -eq 78 ]
	[ "$stderr" = "pd-admin: the database conninfo cannot be parsed by libpq: invalid connection option \"bogus\"" ]
	# a bare word is a database name, as libpq reads it: unreachable, 69
	run --separate-stderr env PGHOST=/nonexistent-dir pd-admin -d 'no-such-db' jobs
	[ "$status" -eq 69 ]
	[[ "$stderr" == *"(dbname=no-such-db)"* ]]
}

@test "pd-enqueue --no-stdin in a while-read loop leaves the loop its input" {
	pd_setup_db
	pd-admin migrate >/dev/null
	run --separate-stderr bash -c 'printf "a\nb\nc\n" | while read -r l; do
		pd-enqueue --no-stdin -q nostdin t >/dev/null || exit 1; echo "$l"; done'
	[ "$status" -eq 0 ]
	[ "$output" = $'a\nb\nc' ]
	[ "$(pd-admin depth nostdin)" = 3 ]
	[ "$(sql "SELECT string_agg(DISTINCT payload::text, ' ') FROM pendulum.jobs WHERE queue = 'nostdin'")" = "{}" ]
	# without it the first job reads the loop's input: not JSON, and the error names the flag
	run --separate-stderr bash -c 'printf "a\nb\n" | pd-enqueue -q nostdin t'
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-enqueue: invalid JSON in stdin"*"(to not read stdin: --no-stdin)" ]]
	run --separate-stderr pd-enqueue --no-stdin --ndjson </dev/null
	[ "$status" -eq 64 ]
}
