/*
 * cli: what every main() shares — start-up, --version, usage errors,
 * range-checked option values, whether colour may be used. Listings are
 * rendered by render, subcommands dispatched by subcmd.
 */
#ifndef PD_CLI_H
#define PD_CLI_H

#include <stdio.h>

#include "buf.h"
#include "err.h"

/* Set progname, make sure fds 0-2 are open, ignore SIGPIPE, apply $PD_LOG_LEVEL. */
void pd_cli_init(const char *argv0);

/* Print "pd-x (Pendulum) VERSION" on stdout. */
void pd_cli_version(void);

/*
 * What the "Try 'X --help'" line of pd_cli_usage names from now on: a
 * subcommand ("pd-admin dlq purge"), NULL for the program. cmd is kept.
 */
void pd_cli_try(const char *cmd);

/*
 * Report a usage error: "pd-x: MSG", then the synopsis and "Try 'pd-x --help'"
 * on stderr. Returns 64 for `return pd_cli_usage(...)` in main.
 */
int pd_cli_usage(const char *synopsis, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * getopt_long(3) (no longindex), which also refuses an option's value that
 * looks like an option: given as a word of its own, starting with '-' and
 * not a negative number nor "-" alone (`pd-worker -q --until-idle` is a
 * forgotten value, not a queue named "--until-idle"). It returns
 * PD_CLI_OPT_LOOKS_LIKE_OPTION then, for pd_cli_bad_option() to report.
 * A value attached to its option is taken as it is: --queue=--odd, -q-odd.
 */
#define PD_CLI_OPT_LOOKS_LIKE_OPTION '!'
struct option;
int pd_cli_getopt(int argc, char **argv, const char *optstring, const struct option *longopts);

/*
 * Shell completion (scripts/completion.bash), from the very tables getopt
 * parses: `PROG --complete-words` (argv[1], alone; hidden) makes the
 * process's first pd_cli_getopt call print the program's line, then call
 * what pd_cli_complete_more registered (subcmd: a line per command), and
 * exit 0 (70 when stdout could not be written). A line is "PATH<TAB>WORDS":
 * PATH empty for the program, else the command ("jobs", "job show"); WORDS
 * space-separated "-x" and "--long", each followed by "=" when it takes a
 * value.
 */
#define PD_CLI_COMPLETE "--complete-words"
void pd_cli_complete_more(void (*fn)(const void *arg), const void *arg);

/* Print one such line: path, the letters of optstring, the names of longopts. */
void pd_cli_complete_line(const char *path, const char *optstring, const struct option *longopts);

/*
 * After pd_cli_getopt returned '?', ':' (optstring starts with "+:" or ":")
 * or PD_CLI_OPT_LOOKS_LIKE_OPTION, report the unknown option, the missing
 * value or the value that looks like an option, by name; returns 64. An
 * unknown long option near one of the options pd_cli_getopt was given is
 * followed by "did you mean '--NAME'?" (pd_text_near).
 */
int pd_cli_bad_option(const char *synopsis, int ch, char **argv);

/* The width every help line fits in. */
#define PD_CLI_WIDTH 80

/*
 * An item of a help listing into out: indent spaces, left, then right in
 * a column w wide from the indent's end (on the next line when left does
 * not leave it a space), wrapped within PD_CLI_WIDTH (pd_text_wrap).
 */
void pd_cli_help_item(struct pd_buf *out, int indent, int w, const char *left, const char *right);

/*
 * Option values, each checked; errors name the option and are code 64, but
 * 65 for a well-formed duration beyond the maximum (PD_DUR_MAX_MS).
 */
int pd_cli_int(const char *opt, const char *s, long long min, long long max, long long *out,
	       struct pd_err *e);
int pd_cli_dur(const char *opt, const char *s, long long *ms, struct pd_err *e);

/*
 * Option opt's value s is a name: not empty (64), and valid as
 * pd_name_check says (65, "option -q: invalid name: ..."): a name is data
 * whatever brought it, and a flag's is refused as one from a job would be.
 */
int pd_cli_name(const char *opt, const char *s, struct pd_err *e);

/*
 * A repeatable option's value (what: "queues", "topics"): s, a name
 * (pd_cli_name), appended to list (*n of max used). Errors name the
 * option; code 64, or 65 for a bad name.
 */
int pd_cli_push(const char *opt, const char *what, const char *s, const char **list, int *n,
		int max, struct pd_err *e);

/*
 * Flush stdout and report a write error (a full disk): returns 0 or 70. A
 * reader that went away (EPIPE: `pd-admin jobs | head -1`) is no error:
 * nothing is said and it returns 0, the status a pipeline expects.
 */
int pd_cli_finish_stdout(void);

/* 1 when colour may be used on f (a terminal, and NO_COLOR unset). */
int pd_cli_color(FILE *f);

#endif
