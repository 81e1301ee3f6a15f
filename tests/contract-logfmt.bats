#!/usr/bin/env bats
# DESIGN, the handler contract: a handler's stderr goes to the worker's log,
# a line each, prefixed with the job id; it cannot forge the log's own
# fields. Every stderr line is one log line whose fields are the worker's:
# the text is the quoted value of line=, whatever it holds (a logfmt
# `level=error msg=x`, a quote, a newline that makes it two lines).

# Handler command lines are single-quoted on purpose.
# shellcheck disable=SC2016

load helpers
pd_db_hooks

setup() {
	reset_jobs
}

# fields_ok FILE: every line of FILE is logfmt (key=bare or key="quoted, \"
# escapes") with no key twice, and those with msg="handler stderr" are at
# level info; prints the lines that are not.
fields_ok() {
	perl -ne '
		chomp; my ($l, %k, $bad) = ($_);
		while ($l =~ s/\A([A-Za-z_][A-Za-z0-9_.]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?: |\z)//) {
			$bad = 1 if $k{$1}++;
			$k{"v_$1"} = $2;
		}
		$bad = 1 if length $l;
		$bad = 1 if ($k{v_msg} // "") eq q{"handler stderr"} && $k{v_level} ne "info";
		if ($bad) { print "$_\n"; $n++ } END { exit($n ? 1 : 0) }' "$1"
}

@test "handler stderr cannot forge log fields: level=error msg=x, a quote, an embedded newline" {
	out=$BATS_TEST_TMPDIR/stderr
	printf '%s\n' 'level=error msg=x' 'x" level=error msg="forged' >"$out"
	printf 'a\nlevel=error msg=nl\n' >>"$out"
	id=$(pd-enqueue t '{}')
	start_worker w -j 1 --lease 2s --poll 100ms --no-reap --handler "t=cat '$out' >&2"
	wait_for 30 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	log=$BATS_FILE_TMPDIR/w.log
	wait_for 10 eval "[ \"\$(grep -c 'msg=\"handler stderr\"' '$log')\" -eq 4 ]"
	fields_ok "$log"
	# the worker's own level and message, the handler's text inside line=, escaped
	grep -qF 'level=info msg="handler stderr" job='"$id" "$log"
	grep -qF 'line="level=error msg=x"' "$log"
	grep -qF 'line="x\" level=error msg=\"forged"' "$log"
	grep -qF 'line="level=error msg=nl"' "$log"
	# level=error only inside line= (three stderr lines hold it), never a field
	run grep -c 'level=error' "$log"
	[ "$output" -eq 3 ]
	run grep -c '^ts=[^ ]* level=error' "$log"
	[ "$output" -eq 0 ]
}
