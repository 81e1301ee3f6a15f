/*
 * cli: what every main() shares — start-up, --version, usage errors,
 * range-checked option values, and table or JSON-lines output.
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
 * After pd_cli_getopt returned '?', ':' (optstring starts with "+:" or ":")
 * or PD_CLI_OPT_LOOKS_LIKE_OPTION, report the unknown option, the missing
 * value or the value that looks like an option, by name; returns 64.
 */
int pd_cli_bad_option(const char *synopsis, int ch, char **argv);

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

/*
 * A table for listings: aligned columns on a terminal or when asked, or one
 * JSON object a line (--json) with the column names as keys.
 */
struct pd_table {
	int ncols;
	const char **names; /* column headers; JSON keys */
	const char
	    *numeric; /* per column 'n' = JSON number when it parses, 'b' = boolean, else string */
	char **cells; /* nrows * ncols, NULL = null */
	int nrows, cap;
};

void pd_table_init(struct pd_table *t, int ncols, const char **names, const char *numeric);
void pd_table_add(struct pd_table *t, const char *const *row);
/* Print to f as a table (its header line even without rows), or with json = 1 as JSON lines. */
void pd_table_print(const struct pd_table *t, FILE *f, int json);
void pd_table_release(struct pd_table *t);

/* 1 when colour may be used on f (a terminal, and NO_COLOR unset). */
int pd_cli_color(FILE *f);

#endif
