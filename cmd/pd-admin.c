/*
 * pd-admin: operate Pendulum from a terminal. Subcommands git-style,
 * dispatched from a table.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "log.h"
#include "migrate.h"

#define SYNOPSIS "usage: pd-admin [-hqVv] [-c file] [-d conninfo] [--json] command [args]\n"

struct command {
	const char *name;
	int (*fn)(struct pd_app *a, int argc, char **argv, struct pd_err *e);
	const char *usage;
	const char *summary;
};

static int cmd_migrate(struct pd_app *a, int argc, char **argv, struct pd_err *e);

static const struct command commands[] = {
    {"migrate", cmd_migrate, "migrate [--status]", "apply pending schema migrations"},
    {NULL, NULL, NULL, NULL},
};

static void help(void)
{
	printf(SYNOPSIS
	       "\nOperate Pendulum, the durable job engine on PostgreSQL.\n\nOptions:\n"
	       "  -c, --config FILE       configuration file (default $PD_CONFIG, then\n"
	       "                          /etc/pendulum/pendulum.yaml)\n"
	       "  -d, --database CONNINFO libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --json              one JSON object a line instead of a table\n"
	       "  -q, --quiet             log warnings and errors only\n"
	       "  -v, --verbose           log debug messages\n"
	       "  -h, --help              show this help\n"
	       "  -V, --version           show the version\n\nCommands:\n");
	for (const struct command *c = commands; c->name; c++)
		printf("  %-30s %s\n", c->usage, c->summary);
	printf("\nRun 'pd-admin COMMAND --help' for a command's options. See pd-admin(1).\n");
}

/* "usage: pd-admin migrate [--status]\n" for a subcommand's usage errors. */
static const char *sub_synopsis(const struct command *c)
{
	static char syn[256];

	snprintf(syn, sizeof(syn), "usage: pd-admin %s\n", c->usage);
	return syn;
}

static const struct command *find(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static int cmd_migrate(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	static const struct option opts[] = {
	    {"status", no_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const struct command *self = find("migrate");
	int status = 0, ch, applied = 0;

	while ((ch = getopt_long(argc, argv, "+:sh", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			status = 1;
			break;
		case 'h':
			printf(
			    "usage: pd-admin %s\n\nApply the pending schema migrations in order, "
			    "each in its own transaction.\n  --status  list applied and pending "
			    "migrations instead\n",
			    self->usage);
			return 0;
		default:
			return pd_cli_bad_option(sub_synopsis(self), ch, argv);
		}
	}
	if (optind < argc)
		return pd_cli_usage(sub_synopsis(self), "unexpected argument '%s'", argv[optind]);
	if (pd_app_connect(a, 0, e) < 0)
		return -1;
	if (status) {
		static const char *names[] = {"version", "name", "state", "applied_at"};
		struct pd_migration_status *st = pd_xcalloc((size_t)pd_nmigrations, sizeof(*st));
		struct pd_table t;

		if (pd_migrate_status(&a->db, st, e) < 0) {
			free(st);
			return -1;
		}
		pd_table_init(&t, 4, names, "nsss");
		for (int i = 0; i < pd_nmigrations; i++) {
			char v[16];
			const char *row[4] = {v, st[i].name,
					      st[i].applied_at[0] ? "applied" : "pending",
					      st[i].applied_at[0] ? st[i].applied_at : NULL};

			snprintf(v, sizeof(v), "%d", st[i].version);
			pd_table_add(&t, row);
		}
		pd_table_print(&t, stdout, a->json);
		pd_table_release(&t);
		free(st);
		return 0;
	}
	if (pd_migrate_apply(&a->db, &applied, e) < 0)
		return -1;
	if (applied)
		printf("applied %d migration%s; schema at version %d\n", applied,
		       applied == 1 ? "" : "s", pd_migrations[pd_nmigrations - 1].version);
	else
		printf("schema up to date at version %d; nothing applied\n",
		       pd_migrations[pd_nmigrations - 1].version);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'}, {"database", required_argument, NULL, 'd'},
	    {"json", no_argument, NULL, 'j'},	      {"quiet", no_argument, NULL, 'q'},
	    {"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
	};
	struct pd_err e = PD_ERR_INIT;
	struct pd_app a;
	const struct command *c;
	int ch, rc;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	while ((ch = getopt_long(argc, argv, "+:c:d:qvhV", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			a.config_path = optarg;
			break;
		case 'd':
			a.database = optarg;
			break;
		case 'j':
			a.json = 1;
			break;
		case 'q':
			a.verbosity--;
			break;
		case 'v':
			a.verbosity++;
			break;
		case 'h':
			help();
			return pd_cli_finish_stdout();
		case 'V':
			pd_cli_version();
			return pd_cli_finish_stdout();
		default:
			return pd_cli_bad_option(SYNOPSIS, ch, argv);
		}
	}
	if (optind >= argc)
		return pd_cli_usage(SYNOPSIS, "missing command");
	c = find(argv[optind]);
	if (c == NULL)
		return pd_cli_usage(SYNOPSIS, "unknown command '%s'", argv[optind]);
	if (pd_app_load(&a, &e) < 0) {
		pd_die_msg(e.msg);
		pd_app_release(&a);
		return e.code;
	}
	argc -= optind;
	argv += optind;
	optind = 0; /* re-initialise getopt for the subcommand */
	rc = c->fn(&a, argc, argv, &e);
	if (rc < 0 && e.msg[0])
		pd_die_msg(e.msg);
	if (rc < 0)
		rc = e.code;
	pd_app_release(&a);
	if (pd_cli_finish_stdout() && rc == 0)
		rc = PD_EX_SOFTWARE;
	return rc;
}
