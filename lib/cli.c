#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dur.h"
#include "json.h"
#include "log.h"
#include "text.h"

void pd_cli_init(const char *argv0)
{
	const char *lvl = getenv("PD_LOG_LEVEL");

	pd_set_progname(argv0);
	/* A closed 0, 1 or 2 would let the next open() become our stdout. */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
			if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
				_exit(PD_EX_SOFTWARE);
	signal(SIGPIPE, SIG_IGN);
	if (lvl && pd_log_level_parse(lvl) >= 0)
		pd_log_set_level(pd_log_level_parse(lvl));
}

void pd_cli_version(void)
{
	printf("%s (Pendulum) %s\n", pd_progname(), PD_VERSION);
}

static const char *try_cmd; /* what the "Try" line names, NULL: the program */

void pd_cli_try(const char *cmd)
{
	try_cmd = cmd;
}

int pd_cli_usage(const char *synopsis, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", pd_progname());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%sTry '%s --help' for more information.\n", synopsis,
		try_cmd ? try_cmd : pd_progname());
	return PD_EX_USAGE;
}

static void (*complete_more)(const void *);
static const void *complete_arg;

void pd_cli_complete_more(void (*fn)(const void *arg), const void *arg)
{
	complete_more = fn;
	complete_arg = arg;
}

void pd_cli_complete_line(const char *path, const char *optstring, const struct option *longopts)
{
	const char *sep = "";

	printf("%s\t", path);
	for (const char *s = optstring; *s; s++) {
		if (*s == '+' || *s == ':' || *s == '-')
			continue;
		printf("%s-%c%s", sep, *s, s[1] == ':' ? "=" : "");
		sep = " ";
	}
	for (const struct option *o = longopts; o->name; o++) {
		printf("%s--%s%s", sep, o->name, o->has_arg != no_argument ? "=" : "");
		sep = " ";
	}
	printf("\n");
}

/* PROG --complete-words: the program's line, its commands' lines; exits. */
static void complete_exit(const char *optstring, const struct option *longopts)
{
	pd_cli_complete_line("", optstring, longopts);
	if (complete_more)
		complete_more(complete_arg);
	exit(pd_cli_finish_stdout());
}

/* The option pd_cli_getopt refused a value for: "-q" or "--queue" (getopt's state is global too).
 */
static char refused_opt[64];
/* The long options pd_cli_getopt was last given: what "did you mean" chooses from. */
static const struct option *last_longopts;

int pd_cli_getopt(int argc, char **argv, const char *optstring, const struct option *longopts)
{
	static int calls; /* only the first call of the process takes --complete-words */
	int li = -1, ch;
	const char *v;

	if (calls++ == 0 && argc == 2 && strcmp(argv[1], PD_CLI_COMPLETE) == 0)
		complete_exit(optstring, longopts);
	ch = getopt_long(argc, argv, optstring, longopts, &li);
	v = optarg;

	last_longopts = longopts;
	if (ch == -1 || ch == '?' || ch == ':' || v == NULL || optind < 2 || v != argv[optind - 1])
		return ch; /* no value, or one attached to its option */
	if (v[0] != '-' || v[1] == '\0' || (v[1] >= '0' && v[1] <= '9'))
		return ch;
	if (li >= 0)
		snprintf(refused_opt, sizeof(refused_opt), "--%s", longopts[li].name);
	else
		snprintf(refused_opt, sizeof(refused_opt), "-%c", ch);
	return PD_CLI_OPT_LOOKS_LIKE_OPTION;
}

int pd_cli_bad_option(const char *synopsis, int ch, char **argv)
{
	const char *arg = argv[optind - 1];
	char shortopt[3] = {'-', (char)optopt, '\0'};

	if (ch == PD_CLI_OPT_LOOKS_LIKE_OPTION)
		return pd_cli_usage(synopsis,
				    "option '%s' needs a value, and '%s' looks like an option "
				    "(to mean it, attach it: %s%s%s)",
				    refused_opt, arg, refused_opt, refused_opt[1] == '-' ? "=" : "",
				    arg);
	/* For a short option inside a cluster ("-qx") name the letter alone. */
	if (optopt && !(arg[0] == '-' && arg[1] == '-'))
		arg = shortopt;
	if (ch == ':')
		return pd_cli_usage(synopsis, "option '%s' needs a value", arg);
	if (arg[0] == '-' && arg[1] == '-' && last_longopts) {
		struct pd_text_near n;
		char word[64];

		/* the name alone: "--queu=x" is a mistyped --queue */
		snprintf(word, sizeof(word), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
		pd_text_near_init(&n, word);
		for (const struct option *o = last_longopts; o->name; o++)
			pd_text_near_add(&n, o->name);
		if (n.best)
			return pd_cli_usage(synopsis, "unknown option '%s'; did you mean '--%s'?",
					    arg, n.best);
	}
	return pd_cli_usage(synopsis, "unknown option '%s'", arg);
}

void pd_cli_help_item(struct pd_buf *out, int indent, int w, const char *left, const char *right)
{
	int col = indent + (int)strlen(left);

	pd_buf_printf(out, "%*s%s", indent, "", left);
	if (col + 1 > indent + w) { /* too wide: the text on a line of its own */
		pd_buf_printf(out, "\n%*s", indent + w, "");
		col = indent + w;
	} else {
		pd_buf_printf(out, "%*s", indent + w - col, "");
		col = indent + w;
	}
	pd_text_wrap(out, right, col, indent + w, PD_CLI_WIDTH);
}

int pd_cli_int(const char *opt, const char *s, long long min, long long max, long long *out,
	       struct pd_err *e)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	/* strtoll skips leading white space; a trailing one is refused, so is this. */
	if (*s == '\0' || isspace((unsigned char)*s) || *end != '\0' || errno == ERANGE)
		return pd_errf(e, PD_EX_USAGE, "option %s: '%s' is not a whole number", opt, s);
	if (v < min || v > max)
		return pd_errf(e, PD_EX_USAGE, "option %s: %lld is out of range %lld-%lld", opt, v,
			       min, max);
	*out = v;
	return 0;
}

int pd_cli_name(const char *opt, const char *s, struct pd_err *e)
{
	struct pd_err ne = PD_ERR_INIT;

	if (*s == '\0')
		return pd_errf(e, PD_EX_USAGE, "option %s: must not be empty", opt);
	if (pd_name_check("name", s, &ne) < 0)
		return pd_errf(e, ne.code, "option %s: %s", opt, ne.msg);
	return 0;
}

int pd_cli_push(const char *opt, const char *what, const char *s, const char **list, int *n,
		int max, struct pd_err *e)
{
	if (pd_cli_name(opt, s, e) < 0)
		return -1;
	if (*n == max)
		return pd_errf(e, PD_EX_USAGE, "option %s '%s': too many %s (at most %d)", opt, s,
			       what, max);
	list[(*n)++] = s;
	return 0;
}

int pd_cli_dur(const char *opt, const char *s, long long *ms, struct pd_err *e)
{
	struct pd_err e2 = PD_ERR_INIT;

	int rc = pd_dur_parse(s, ms, &e2);

	/* Well-formed but beyond the maximum: bad data (65), not a misuse. */
	if (rc < 0)
		return pd_errf(e, rc == -2 ? PD_EX_DATAERR : PD_EX_USAGE, "option %s: %s", opt,
			       e2.msg);
	return 0;
}

/*
 * The reader of stdout has gone away (a pipe with no reader left, a socket
 * whose peer closed, a terminal hung up). A write that failed long before
 * the final fflush left no errno behind: ask the descriptor itself.
 */
static int stdout_reader_gone(void)
{
	struct pollfd p = {.fd = STDOUT_FILENO, .events = 0, .revents = 0};

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

int pd_cli_finish_stdout(void)
{
	int failed = fflush(stdout) != 0, err = errno;

	if (!failed && !ferror(stdout))
		return 0;
	/* Like `ls | head`: whoever reads has all it wanted; no message, exit 0. */
	if ((failed && err == EPIPE) || stdout_reader_gone())
		return 0;
	if (failed)
		fprintf(stderr, "%s: cannot write to standard output: %s\n", pd_progname(),
			strerror(err));
	else
		fprintf(stderr, "%s: cannot write to standard output\n", pd_progname());
	return PD_EX_SOFTWARE;
}

int pd_cli_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(fileno(f)) && !(nc && *nc);
}
