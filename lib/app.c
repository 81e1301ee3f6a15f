#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "henv.h"
#include "log.h"
#include "migrate.h"
#include "reload.h"

/* An engine option into c: 1 taken, 0 not one, -1 a bad value. */
static int engine_option(struct pd_engine_cfg *c, int ch, const char *arg, struct pd_err *e)
{
	switch (ch) {
	case 'j':
		return pd_cli_int("--concurrency", arg, 1, 1024, &c->concurrency, e) < 0 ? -1 : 1;
	case PD_APP_OPT_BATCH:
		return pd_cli_int("--batch", arg, 1, 1000, &c->batch, e) < 0 ? -1 : 1;
	case PD_APP_OPT_BATCH_MAX:
		return pd_cli_int("--batch-max", arg, 1, 1000, &c->batch_max, e) < 0 ? -1 : 1;
	case PD_APP_OPT_POLL:
		return pd_cli_dur("--poll", arg, &c->poll_ms, e) < 0 ? -1 : 1;
	case PD_APP_OPT_DRAIN:
		return pd_cli_dur("--drain-timeout", arg, &c->drain_ms, e) < 0 ? -1 : 1;
	case PD_APP_OPT_IDLE:
		c->until_idle = 1;
		return 1;
	case PD_APP_OPT_SETTLED:
		c->until_settled = 1;
		return 1;
	default:
		return 0;
	}
}

int pd_app_option(struct pd_app *a, struct pd_engine_cfg *engine, int ch, const char *arg,
		  void (*help)(void), const char *synopsis, char **argv, struct pd_err *e)
{
	int rc = engine ? engine_option(engine, ch, arg, e) : 0;

	if (rc != 0)
		return rc < 0 ? -1 : 0;
	switch (ch) {
	case 'c':
		a->config_path = arg;
		return 0;
	case 'd':
	case PD_APP_OPT_DBFILE:
		return pd_app_database(a, (char *)arg, ch == PD_APP_OPT_DBFILE, e) < 0 ? -1 : 0;
	case PD_APP_OPT_QUIET:
		a->verbosity--;
		return 0;
	case 'v':
		a->verbosity++;
		return 0;
	case PD_APP_OPT_LOG_FORMAT:
		if ((rc = pd_log_format_parse(arg)) < 0)
			return pd_errf(e, PD_EX_USAGE,
				       "option --log-format: '%s' is not logfmt or json", arg);
		pd_log_set_format((enum pd_log_format)rc);
		return 0;
	case 'h':
		help();
		return 1;
	case 'V':
		pd_cli_version();
		return 1;
	default:
		pd_cli_bad_option(synopsis, ch, argv);
		return 2;
	}
}

int pd_app_parse_exit(int rc, const char *synopsis, const struct pd_err *e)
{
	if (rc == 1)
		return pd_cli_finish_stdout();
	if (rc == 2)
		return PD_EX_USAGE;
	/* a bad value (a name) or an unreadable file, not a misuse: no synopsis */
	if (e->code == PD_EX_DATAERR || e->code == PD_EX_CONFIG) {
		pd_die_msg(e->msg);
		return e->code;
	}
	return pd_cli_usage(synopsis, "%s", e->msg);
}

/* 1 if conninfo (a URI or key=value) carries a password, as libpq reads it. */
static int has_password(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	int found = 0;

	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val && *o->val)
			found = 1;
	PQconninfoFree(opts);
	return found;
}

/* The first line of file path, without its newline: 0, or -1 with e (78). */
static int url_file(const char *path, char **out, struct pd_err *e)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (f == NULL)
		return pd_errf(e, PD_EX_CONFIG, "--database-url-file '%s': %s", path,
			       strerror(errno));
	errno = 0;
	n = getline(&line, &cap, f);
	if (n < 0 && ferror(f)) {
		int err = errno;

		fclose(f);
		free(line);
		return pd_errf(e, PD_EX_CONFIG, "--database-url-file '%s': %s", path,
			       strerror(err));
	}
	fclose(f);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (n <= 0) {
		if (line)
			pd_henv_wipe(line, cap);
		free(line);
		return pd_errf(e, PD_EX_CONFIG, "--database-url-file '%s': %s", path,
			       n < 0 ? "the file is empty" : "its first line is empty");
	}
	*out = line;
	return 0;
}

int pd_app_database(struct pd_app *a, char *arg, int file, struct pd_err *e)
{
	static int warned;
	char *v = NULL;

	if (file && url_file(arg, &v, e) < 0)
		return -1;
	if (!file) {
		v = pd_xstrdup(arg);
		if (has_password(v)) {
			pd_henv_wipe(arg, strlen(arg)); /* what /proc/PID/cmdline shows */
			if (!warned++)
				fprintf(stderr,
					"%s: warning: the password given with -d is visible to "
					"other users until it is read: use --database-url-file, "
					"PGPASSFILE or PD_DATABASE_URL\n",
					pd_progname());
		}
	}
	if (a->database_own)
		pd_henv_wipe(a->database_own, strlen(a->database_own));
	free(a->database_own);
	a->database = a->database_own = v;
	return 0;
}

void pd_app_init(struct pd_app *a)
{
	/* Before anything reads them or a child starts: see app.h. */
	pd_henv_withhold("PD_DATABASE_URL");
	pd_henv_withhold("PD_LISTEN_URL");
	pd_henv_withhold("PGPASSWORD");
	memset(a, 0, sizeof(*a));
	pd_config_init(&a->cfg);
	a->db = (struct pd_db)PD_DB_INIT;
}

/* The file's log level (else the current one), moved by -v and -q. */
static void apply_level(const struct pd_app *a)
{
	int level;

	level = a->cfg.log_level >= 0 ? a->cfg.log_level : a->base_level;
	level -= a->verbosity;
	if (level < PD_LOG_DEBUG)
		level = PD_LOG_DEBUG;
	if (level > PD_LOG_ERROR)
		level = PD_LOG_ERROR;
	pd_log_set_level((enum pd_log_level)level);
}

int pd_app_load(struct pd_app *a, struct pd_err *e)
{
	a->base_level = (int)pd_log_get_level(); /* before the file's, for a reload */
	if (pd_config_load(&a->cfg, a->config_path, e) < 0)
		return -1;
	pd_henv_set_secret((const char *const *)a->cfg.secret_env);
	apply_level(a);
	return 0;
}

int pd_app_connect(struct pd_app *a, int check_schema, struct pd_err *e)
{
	/* -d, then $PD_DATABASE_URL (withheld: pd_app_init), then the file's, then libpq's. */
	const char *env = pd_henv_held("PD_DATABASE_URL");
	const char *url = a->database		? a->database
			  : env && *env		? env
			  : a->cfg.database_url ? a->cfg.database_url
						: "";
	/* listen_url: $PD_LISTEN_URL (withheld), else the file's; used only behind a pooler */
	const char *lenv = pd_henv_held("PD_LISTEN_URL");
	const char *listen = lenv && *lenv ? lenv : a->cfg.listen_url;

	a->db.prepare = a->cfg.prepared_statements;
	free(a->db.listen_url);
	a->db.listen_url = listen ? pd_xstrdup(listen) : NULL;
	if (pd_db_connect(&a->db, url, pd_progname(), e) < 0)
		return -1;
	if (check_schema && pd_migrate_check(&a->db, e) < 0)
		return -1;
	return 0;
}

void pd_app_release(struct pd_app *a)
{
	pd_db_close(&a->db);
	pd_henv_set_secret(NULL);
	pd_config_release(&a->cfg);
	if (a->database_own)
		pd_henv_wipe(a->database_own, strlen(a->database_own));
	free(a->database_own);
	a->database = a->database_own = NULL;
	for (int i = 0; i < a->nretired; i++)
		pd_config_free(a->retired[i]);
	free(a->retired);
	a->retired = NULL;
	a->nretired = 0;
}

static struct pd_config *source_load(void *ctx, struct pd_err *e)
{
	struct pd_app *a = ctx;
	struct pd_config *c = pd_config_new();

	if (pd_config_load(c, a->config_path, e) < 0) {
		pd_config_free(c);
		return NULL;
	}
	return c;
}

/* Swap c in as a->cfg; the old one goes to the retired list (things point into it). */
static void source_keep(void *ctx, struct pd_config *c)
{
	struct pd_app *a = ctx;
	struct pd_config *old = pd_xmalloc(sizeof(*old));
	const char *was = a->cfg.database_url ? a->cfg.database_url : "";

	if (strcmp(was, c->database_url ? c->database_url : "") != 0)
		pd_log(PD_LOG_WARN, "database_url not reloaded: it needs a restart", NULL);
	if (strcmp(a->cfg.listen_url ? a->cfg.listen_url : "",
		   c->listen_url ? c->listen_url : "") != 0 ||
	    a->cfg.prepared_statements != c->prepared_statements)
		pd_log(PD_LOG_WARN,
		       "listen_url and prepared_statements not reloaded: they need a restart",
		       NULL);
	*old = a->cfg; /* a plain move: the config holds no pointer to itself */
	a->retired = pd_xrealloc(a->retired, (size_t)(a->nretired + 1) * sizeof(*a->retired));
	a->retired[a->nretired++] = old;
	a->cfg = *c;
	free(c);
	pd_henv_set_secret((const char *const *)a->cfg.secret_env);
	apply_level(a);
}

static void source_drop(void *ctx, struct pd_config *c)
{
	(void)ctx;
	pd_config_free(c);
}

void pd_app_source(struct pd_app *a, struct pd_config_source *src)
{
	src->load = source_load;
	src->keep = source_keep;
	src->drop = source_drop;
	src->ctx = a;
}
