#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "subcmd.h"
#include "text.h"

#define OPT_BASE 256 /* getopt's value of option id i: OPT_BASE + i */
#define KEY(o)	 ((o)->key ? (o)->key : (o)->name)

int pd_subcmd_takes(const struct pd_subcmd *c, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = c->opts; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p = end ? end + 1 : p + len;
	}
	return 0;
}

/* "usage: pd-admin dlq purge --older-than DURATION\n", wrapped within PD_CLI_WIDTH. */
static const char *synopsis(const struct pd_subprog *p, const struct pd_subcmd *c)
{
	static char syn[1024];
	struct pd_buf b = PD_BUF_INIT;

	pd_buf_printf(&b, "usage: %s ", p->name);
	pd_text_wrap(&b, c->usage, (int)b.len, 7, PD_CLI_WIDTH);
	snprintf(syn, sizeof(syn), "%s", pd_buf_str(&b));
	pd_buf_release(&b);
	return syn;
}

/* The left column of an option's help line: "-t, --tenant TENANT", "    --cron EXPR". */
static void opt_left(const struct pd_subopt *o, int shorts, char *left, size_t n)
{
	if (o->letter)
		snprintf(left, n, "-%c, --%s%s%s", o->letter, o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
	else
		snprintf(left, n, "%s--%s%s%s", shorts ? "    " : "", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
}

/* PROG COMMAND --help: usage, about, and the options c takes, aligned. */
static void sub_help(const struct pd_subprog *p, const struct pd_subcmd *c)
{
	char left[64], count[96];
	int shorts = 0, w = 22;
	struct pd_buf b = PD_BUF_INIT;

	for (int i = 0; i < p->nopts; i++)
		shorts |= p->opts[i].letter && pd_subcmd_takes(c, KEY(&p->opts[i]));
	for (int i = 0; i < p->nopts; i++) {
		if (!pd_subcmd_takes(c, KEY(&p->opts[i])))
			continue;
		opt_left(&p->opts[i], shorts, left, sizeof(left));
		if ((int)strlen(left) + 1 > w)
			w = (int)strlen(left) + 1;
	}
	pd_buf_printf(&b, "%s\n%s\n\n", synopsis(p, c), c->about);
	for (int i = 0; i < p->nopts; i++) {
		const struct pd_subopt *o = &p->opts[i];

		if (!pd_subcmd_takes(c, KEY(o)))
			continue;
		opt_left(o, shorts, left, sizeof(left));
		if (o->help == NULL)
			snprintf(count, sizeof(count), p->count_help, c->count_def, c->count_max);
		pd_cli_help_item(&b, 2, w + 1, left, o->help ? o->help : count);
	}
	pd_cli_help_item(&b, 2, w + 1, "-h, --help", "show this help");
	pd_buf_printf(&b, "\nSee %s(1).\n", p->name);
	fputs(pd_buf_str(&b), stdout);
	pd_buf_release(&b);
}

/* `PROG GROUP` alone (bad NULL), with --help (to_stdout), or with an unknown command. */
static int group_usage(const struct pd_subprog *p, const char *group, const char *bad,
		       int to_stdout)
{
	FILE *f = to_stdout ? stdout : stderr;
	struct pd_buf b = PD_BUF_INIT;
	struct pd_text_near near;
	char left[128];
	int n = 0;

	pd_text_near_init(&near, bad ? bad : "");
	for (const struct pd_subcmd *c = p->cmds; c->name; c++)
		if (c->group && strcmp(c->group, group) == 0)
			pd_text_near_add(&near, c->name);
	if (!to_stdout)
		pd_buf_printf(&b, "%s: %s %s command%s%s%s%s%s%s\n", pd_progname(),
			      bad ? "unknown" : "missing", group, bad ? " '" : "", bad ? bad : "",
			      bad ? "'" : "", near.best ? "; did you mean '" : "",
			      near.best ? near.best : "", near.best ? "'?" : "");
	/* "usage: pd-admin dlq replay [ID...]", each command's summary on the line below */
	for (const struct pd_subcmd *c = p->cmds; c->name; c++)
		if (c->group && strcmp(c->group, group) == 0) {
			snprintf(left, sizeof(left), "%s %s ", n++ ? "      " : "usage:", p->name);
			pd_buf_puts(&b, left);
			pd_text_wrap(&b, c->usage, (int)strlen(left), 7, PD_CLI_WIDTH);
			pd_buf_printf(&b, "%*s", 11, "");
			pd_text_wrap(&b, c->summary, 11, 11, PD_CLI_WIDTH);
		}
	if (!to_stdout)
		pd_buf_printf(&b, "Try '%s %s --help' for more information.\n", p->name, group);
	fputs(pd_buf_str(&b), f);
	pd_buf_release(&b);
	return to_stdout ? 0 : PD_EX_USAGE;
}

/* The command argv names (*used words), or NULL with *rc the status to exit with. */
static const struct pd_subcmd *find(const struct pd_subprog *p, int argc, char **argv, int *used,
				    int *rc)
{
	int group = 0;

	*used = 1;
	for (const struct pd_subcmd *c = p->cmds; c->name; c++) {
		if (c->group == NULL && strcmp(c->name, argv[0]) == 0)
			return c;
		if (c->group && strcmp(c->group, argv[0]) == 0) {
			group = 1;
			if (argc > 1 && strcmp(c->name, argv[1]) == 0) {
				*used = 2;
				return c;
			}
		}
	}
	if (!group) {
		struct pd_text_near n;

		pd_text_near_init(&n, argv[0]);
		for (const struct pd_subcmd *c = p->cmds; c->name; c++)
			pd_text_near_add(&n, c->group ? c->group : c->name);
		if (n.best)
			*rc = pd_cli_usage(p->synopsis, "unknown command '%s'; did you mean '%s'?",
					   argv[0], n.best);
		else
			*rc = pd_cli_usage(p->synopsis, "unknown command '%s'", argv[0]);
		return NULL;
	}
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		*rc = group_usage(p, argv[0], NULL, 1);
	else
		*rc = group_usage(p, argv[0], argc > 1 ? argv[1] : NULL, 0);
	return NULL;
}

/*
 * The usage error for operand number have (from 0) missing: c->operand names
 * the operands in order, comma-separated ("role,tenant"); a shorter list's
 * last name stands for the rest.
 */
static int missing_operand(const struct pd_subcmd *c, int have, struct pd_err *e)
{
	const char *s = c->operand;

	for (int i = 0; i < have && strchr(s, ','); i++)
		s = strchr(s, ',') + 1;
	return pd_errf(e, PD_EX_USAGE, "missing %.*s", (int)strcspn(s, ","), s);
}

/*
 * Parse the options of k->cmd into k->x and its operands into k->argc,
 * k->argv. Returns 0, 1 after --help, or -1 with e (an empty msg: said).
 */
#define SHORTS_MAX 80

/*
 * getopt's tables for command c: the long options (malloc'd, ending with a
 * zero entry; getopt's value of option id i is OPT_BASE + i, of --help 'h')
 * and the short ones into shorts (SHORTS_MAX bytes). parse and completion
 * both read them.
 */
static struct option *getopt_tables(const struct pd_subprog *p, const struct pd_subcmd *c,
				    char *shorts)
{
	struct option *lo = pd_xcalloc((size_t)p->nopts + 2, sizeof(*lo));
	size_t ns = 2;
	int n = 0;

	strcpy(shorts, ":h");
	for (int i = 0; i < p->nopts; i++) {
		const struct pd_subopt *o = &p->opts[i];

		if (!pd_subcmd_takes(c, KEY(o)))
			continue;
		lo[n++] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
					  OPT_BASE + i};
		if (o->letter && ns + 3 < SHORTS_MAX) {
			shorts[ns++] = (char)o->letter;
			if (o->arg)
				shorts[ns++] = ':';
			shorts[ns] = '\0';
		}
	}
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	return lo;
}

/* What PROG --complete-words prints after the program's own line: a line per command. */
static void complete_commands(const void *arg)
{
	const struct pd_subprog *p = arg;
	char shorts[SHORTS_MAX], path[128];

	for (const struct pd_subcmd *c = p->cmds; c->name; c++) {
		struct option *lo = getopt_tables(p, c, shorts);

		snprintf(path, sizeof(path), "%s%s%s", c->group ? c->group : "",
			 c->group ? " " : "", c->name);
		pd_cli_complete_line(path, shorts, lo);
		free(lo);
	}
}

void pd_subcmd_complete(const struct pd_subprog *p)
{
	pd_cli_complete_more(complete_commands, p);
}

static int parse(struct pd_subcall *k, int argc, char **argv, struct pd_err *e)
{
	const struct pd_subprog *p = k->prog;
	const struct pd_subcmd *c = k->cmd;
	char shorts[SHORTS_MAX];
	struct option *lo = getopt_tables(p, c, shorts);
	int ch, rc = 0;

	while (rc == 0 && (ch = pd_cli_getopt(argc, argv, shorts, lo)) != -1) {
		int id = ch - OPT_BASE;

		if (ch == 'h') {
			sub_help(p, c);
			free(lo);
			return 1;
		}
		for (int i = 0; ch < OPT_BASE && ch != 'h' && i < p->nopts; i++)
			if (p->opts[i].letter == ch && pd_subcmd_takes(c, KEY(&p->opts[i])))
				id = i;
		if (id < 0 || id >= p->nopts) {
			/* pd_cli_bad_option says it */
			e->code = pd_cli_bad_option(synopsis(p, c), ch, argv);
			e->msg[0] = '\0';
			free(lo);
			return -1;
		}
		if (strcmp(p->opts[id].name, "json") == 0)
			k->a->json = 1;
		else
			rc = p->set(k, id, p->opts[id].arg ? optarg : NULL, e);
	}
	free(lo);
	if (rc < 0)
		return -1;
	k->argc = argc - optind;
	k->argv = argv + optind;
	if (k->argc < c->min_args)
		return missing_operand(c, k->argc, e);
	if (c->max_args >= 0 && k->argc > c->max_args)
		return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'", k->argv[c->max_args]);
	return p->check ? p->check(k, e) : 0;
}

/* The exit status of a failed command: e said as a usage error (64) or as an error. */
static int report(const struct pd_subcall *k, const struct pd_err *e)
{
	if (e->msg[0] == '\0')
		return e->code ? e->code : PD_EX_SOFTWARE;
	if (e->code == PD_EX_USAGE)
		return pd_cli_usage(synopsis(k->prog, k->cmd), "%s", e->msg);
	pd_die_msg(e->msg);
	return e->code ? e->code : PD_EX_SOFTWARE;
}

/* Parse, connect, run and print the command k->cmd: the exit status. */
static int run(struct pd_subcall *k, int argc, char **argv)
{
	const struct pd_subprog *p = k->prog;
	struct pd_err e = PD_ERR_INIT;
	char try[128];
	int rc;

	snprintf(try, sizeof(try), "%s %s%s%s", p->name, k->cmd->group ? k->cmd->group : "",
		 k->cmd->group ? " " : "", k->cmd->name);
	pd_cli_try(try);
	k->x = pd_xcalloc(1, p->xsize);
	if (p->init)
		p->init(k);
	optind = 0; /* re-initialise getopt for the command */
	rc = parse(k, argc, argv, &e);
	if (rc == 0) {
		k->fmt.json = k->a->json;
		k->fmt.color = !k->a->json && pd_cli_color(stdout);
		if (k->cmd->db)
			rc = pd_app_connect(k->a, k->cmd->db == 1, &e);
		if (rc == 0)
			rc = k->cmd->fn(k, &e);
		fwrite(pd_buf_str(&k->out), 1, k->out.len, stdout);
		if (rc < 0)
			fflush(stdout);
	}
	rc = rc == 1 ? 0 : rc < 0 ? report(k, &e) : 0;
	pd_cli_try(NULL);
	pd_buf_release(&k->out);
	free(k->x);
	return rc;
}

int pd_subcmd_main(const struct pd_subprog *p, struct pd_app *a, int argc, char **argv)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_subcall k = {.prog = p, .a = a, .out = PD_BUF_INIT};
	int used = 1, rc = 0;

	if (argc < 1)
		rc = pd_cli_usage(p->synopsis, "missing command");
	else
		k.cmd = find(p, argc, argv, &used, &rc); /* NULL: said, or a group listed */
	if (k.cmd && p->found && p->found(a, &e) < 0) {
		pd_die_msg(e.msg);
		rc = e.code;
	} else if (k.cmd) {
		rc = run(&k, argc - (used - 1), argv + (used - 1));
	}
	pd_app_release(a);
	if (pd_cli_finish_stdout() && rc == 0)
		rc = PD_EX_SOFTWARE;
	return rc;
}
