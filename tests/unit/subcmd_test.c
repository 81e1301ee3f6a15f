/*
 * subcmd_test: the subcommand dispatcher without a database: finding a
 * command (one word or a group's two), options taken in order through the
 * program's setter, operand counts, --help, unknown options, and a real
 * handler (pd-cron preview) run through it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "croncmd.h"
#include "subcmd.h"
#include "tap.h"

enum { T_NAME, T_FLAG, T_JSON, T_NOPTS };

static const struct pd_subopt opts[T_NOPTS] = {
    [T_NAME] = {"name", 0, "NAME", "a name"},
    [T_FLAG] = {"flag", 'f', NULL, "a flag"},
    [T_JSON] = {"json", 0, NULL, "JSON lines"},
};

struct vals {
	char seen[16]; /* the option ids set, in order, as digits */
	const char *name;
};

static int ran, ran_argc;
static const char *ran_cmd;

static int handler(struct pd_subcall *k, struct pd_err *e)
{
	(void)e;
	ran++;
	ran_argc = k->argc;
	ran_cmd = k->cmd->name;
	pd_buf_puts(&k->out, "");
	return 0;
}

static int set(struct pd_subcall *k, int opt, const char *val, struct pd_err *e)
{
	struct vals *x = k->x;
	size_t n = strlen(x->seen);

	if (opt == T_NAME && strcmp(val, "bad") == 0)
		return pd_errf(e, PD_EX_USAGE, "option --name: bad");
	if (n + 1 < sizeof(x->seen))
		x->seen[n] = (char)('0' + opt);
	if (opt == T_NAME)
		x->name = val;
	return 0;
}

static struct vals last;

static int record(struct pd_subcall *k, struct pd_err *e)
{
	last = *(struct vals *)k->x;
	return handler(k, e);
}

static const struct pd_subcmd cmds[] = {
    {NULL, "solo", record, "solo [--name NAME] [-f] ARG", "one word", "A one-word command.",
     "name,flag,json", 1, 1, "ARG", 0, 0, 0},
    {"grp", "two", handler, "grp two", "a group's", "A command of a group.", "json", 0, 0, NULL, 0,
     0, 0},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, 0, 0, 0},
};

static const struct pd_subprog prog = {
    .name = "pd-test",
    .synopsis = "usage: pd-test command\n",
    .opts = opts,
    .nopts = T_NOPTS,
    .cmds = cmds,
    .count_help = "%lld %lld",
    .xsize = sizeof(struct vals),
    .set = set,
};

/* Run argv (NULL-terminated) with stdout and stderr into /dev/null (out NULL) or the file out. */
static int run(const char *out, char **argv)
{
	struct pd_app a;
	int argc = 0, rc, o = dup(1), er = dup(2);

	while (argv[argc])
		argc++;
	fflush(stdout);
	if (!freopen(out ? out : "/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
		abort();
	pd_app_init(&a);
	rc = pd_subcmd_main(&prog, &a, argc, argv); /* releases a */
	fflush(stdout);
	dup2(o, 1);
	dup2(er, 2);
	close(o);
	close(er);
	return rc;
}

static void test_dispatch(void)
{
	char *a1[] = {"solo", "--name", "n1", "-f", "arg", NULL};
	char *a2[] = {"grp", "two", NULL};
	char *a3[] = {"solo", NULL};
	char *a4[] = {"solo", "x", "y", NULL};
	char *a5[] = {"solo", "--bogus", "x", NULL};
	char *a6[] = {"solo", "--help", NULL};
	char *a7[] = {"grp", NULL};
	char *a8[] = {"nope", NULL};
	char *a9[] = {"solo", "--name", "bad", "x", NULL};
	char *a10[] = {"solo", "-f", "x", "--name", "n2", NULL};

	ran = 0;
	is_int(run(NULL, a1), 0, "a one-word command runs");
	is_int(ran, 1, "its handler ran once");
	is_int(ran_argc, 1, "with its one operand");
	is_str(last.seen, "01", "its options were set in order (--name, then -f)");
	is_str(last.name, "n1", "with their values");
	is_int(run(NULL, a10), 0, "options after operands are taken too");
	is_str(last.seen, "10", "in the order given");
	is_int(run(NULL, a2), 0, "a group's command runs");
	is_str(ran_cmd, "two", "the group's command that was named");
	ran = 0;
	is_int(run(NULL, a3), 64, "a missing operand is a usage error");
	is_int(run(NULL, a4), 64, "an operand too many is a usage error");
	is_int(run(NULL, a5), 64, "an unknown option is a usage error");
	is_int(run(NULL, a9), 64, "a value the setter refuses is a usage error");
	is_int(ran, 0, "no handler ran on a usage error");
	is_int(run(NULL, a6), 0, "COMMAND --help exits 0");
	is_int(ran, 0, "without running the command");
	is_int(run(NULL, a7), 64, "a group alone is a usage error");
	is_int(run(NULL, a8), 64, "an unknown command is a usage error");
	ok(pd_subcmd_takes(&cmds[0], "flag"), "solo takes --flag");
	ok(!pd_subcmd_takes(&cmds[0], "fla"), "but not a prefix of it");
	ok(!pd_subcmd_takes(&cmds[1], "name"), "grp two does not take --name");
}

static void test_help(void)
{
	char path[] = "/tmp/subcmd_test.XXXXXX";
	char *a[] = {"solo", "--help", NULL}, buf[1024];
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	close(fd);
	is_int(run(path, a), 0, "solo --help");
	f = fopen(path, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	unlink(path);
	like(buf, "usage: pd-test solo [--name NAME] [-f] ARG\n\nA one-word command.\n\n",
	     "the command's usage and what it does");
	like(buf, "      --name NAME", "a long-only option beside short ones is indented");
	like(buf, "  -f, --flag", "an option with a letter");
	like(buf, "  -h, --help", "and --help");
	ok(strstr(buf, "grp two") == NULL, "no other command's usage");
}

static void test_cron_preview(void)
{
	static const struct pd_subcmd cron[] = {
	    {NULL, "preview", pd_croncmd_preview, "preview EXPR", "", "",
	     "tz-preview,from,count,local,json", 1, -1, "EXPR", 5, 10000, 0},
	    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, 0, 0, 0},
	};
	struct pd_subprog p = {
	    "pd-cron",	 "usage: pd-cron\n", pd_croncmd_opts, PD_CRON_NOPTS,  cron,
	    "%lld %lld", pd_croncmd_xsize,   pd_croncmd_init, pd_croncmd_set, pd_croncmd_check,
	    NULL};
	char path[] = "/tmp/subcmd_test.XXXXXX";
	char *a[] = {"preview", "0 3 * * *", "--from", "2026-01-01T00:00:00Z", "-n", "2", NULL};
	char *b[] = {"preview", "0", "3", NULL};
	char buf[256];
	struct pd_app app;
	int fd = mkstemp(path), o = dup(1), er = dup(2), rc, rc2;
	FILE *f;
	size_t n;

	close(fd);
	fflush(stdout);
	if (!freopen(path, "w", stdout) || !freopen("/dev/null", "w", stderr))
		abort();
	pd_app_init(&app);
	rc = pd_subcmd_main(&p, &app, 6, a); /* releases app */
	pd_app_init(&app);
	rc2 = pd_subcmd_main(&p, &app, 3, b);
	fflush(stdout);
	dup2(o, 1);
	dup2(er, 2);
	close(o);
	close(er);
	is_int(rc, 0, "pd-cron preview runs through the dispatcher");
	is_int(rc2, 64, "preview: an unquoted expression is refused");
	f = fopen(path, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	unlink(path);
	is_str(buf, "2026-01-01T03:00:00Z\n2026-01-02T03:00:00Z\n", "its next two fires");
}

int main(void)
{
	pd_cli_init("pd-test");
	test_dispatch();
	test_help();
	test_cron_preview();
	return done_testing();
}
