/*
 * app: the start-up every binary shares once its options are parsed — load
 * the configuration (flags override the file, which overrides defaults),
 * then connect to the database and check the schema version.
 */
#ifndef PD_APP_H
#define PD_APP_H

#include "config.h"
#include "db.h"

struct pd_app {
	const char *config_path; /* -c FILE, or NULL */
	const char *database;	 /* -d CONNINFO or --database-url-file's line (a copy), or NULL */
	int verbosity;		 /* +1 per -v, -1 per --quiet */
	int json;		 /* --json */
	struct pd_config cfg;
	struct pd_db db;
	struct pd_config **retired; /* configs a reload replaced, kept until pd_app_release */
	int nretired;
	int base_level;	    /* the log level before the file's (pd_app_load) */
	char *database_own; /* what database points to */
};

/* Long-option values the programs share; a program's own start at PD_APP_OPT_OWN. */
enum {
	PD_APP_OPT_QUIET = 256,
	PD_APP_OPT_BATCH,
	PD_APP_OPT_POLL,
	PD_APP_OPT_DRAIN,
	PD_APP_OPT_IDLE,
	PD_APP_OPT_LOG_FORMAT,
	PD_APP_OPT_DBFILE,
	PD_APP_OPT_SETTLED,   /* --until-settled: pd-worker lists it in its own table */
	PD_APP_OPT_BATCH_MAX, /* --batch-max: pd-worker lists it in its own table */
	PD_APP_OPT_OWN
};

/* The long options every daemon takes, for the end of its table (needs <getopt.h>). */
#define PD_APP_LONG_OPTIONS                                                                        \
	{"config", required_argument, NULL, 'c'}, {"database", required_argument, NULL, 'd'},      \
	    {"database-url-file", required_argument, NULL, PD_APP_OPT_DBFILE},                     \
	    {"quiet", no_argument, NULL, PD_APP_OPT_QUIET}, {"verbose", no_argument, NULL, 'v'},   \
	    {"log-format", required_argument, NULL, PD_APP_OPT_LOG_FORMAT},                        \
	    {"help", no_argument, NULL, 'h'},                                                      \
	{                                                                                          \
		"version", no_argument, NULL, 'V'                                                  \
	}

/* The long options of the daemons that run children (pd_app_engine_option). */
#define PD_APP_ENGINE_LONG_OPTIONS                                                                 \
	{"concurrency", required_argument, NULL, 'j'},                                             \
	    {"batch", required_argument, NULL, PD_APP_OPT_BATCH},                                  \
	    {"poll", required_argument, NULL, PD_APP_OPT_POLL},                                    \
	    {"drain-timeout", required_argument, NULL, PD_APP_OPT_DRAIN},                          \
	{                                                                                          \
		"until-idle", no_argument, NULL, PD_APP_OPT_IDLE                                   \
	}

/*
 * Take getopt's ch if it is an option the daemons share: with engine, the
 * PD_APP_ENGINE_LONG_OPTIONS (-j N, --batch N, --poll DURATION,
 * --drain-timeout DURATION, --until-idle; --until-settled and --batch-max N,
 * for the programs that list them) into it; always -c FILE,
 * -d CONNINFO and --database-url-file PATH (pd_app_database), --quiet, -v,
 * --log-format logfmt|json (set at once),
 * -h (help is called), -V. Anything else is
 * reported as a bad option under synopsis. Returns 0 (taken), 1 (help or
 * version printed: exit 0), 2 (a bad option, reported: exit 64) or -1 (a bad
 * value: e filled, 64); for parse_args to return when not 0.
 */
int pd_app_option(struct pd_app *a, struct pd_engine_cfg *engine, int ch, const char *arg,
		  void (*help)(void), const char *synopsis, char **argv, struct pd_err *e);

/*
 * The exit code after parse_args returned rc (not 0): 1 after help or
 * version, 64 for a bad option (2, reported) or for e (-1, reported here).
 */
int pd_app_parse_exit(int rc, const char *synopsis, const struct pd_err *e);

/*
 * -d's value arg (from argv: its bytes are overwritten in place once copied
 * when it holds a password, which is then said once on stderr: it would
 * show in /proc/PID/cmdline, ps(1)), or with file set, the first line of
 * the file arg (--database-url-file; code 78 naming the file when it
 * cannot be read or its first line is empty). The last one given wins.
 */
int pd_app_database(struct pd_app *a, char *arg, int file, struct pd_err *e);

/*
 * Also takes PD_DATABASE_URL and PGPASSWORD out of this process's
 * environment (lib/henv: pd_henv_withhold), before anything reads it or
 * starts a child: /proc/PID/environ no longer shows them. The connection
 * still uses them (pd_app_connect, lib/db).
 */
void pd_app_init(struct pd_app *a);
/* Load the config file and apply the log level. Code 78 on a bad file. */
int pd_app_load(struct pd_app *a, struct pd_err *e);
/*
 * Connect to -d (or --database-url-file's), else $PD_DATABASE_URL, else the
 * file's database_url, else libpq's defaults (code 69 on failure); with
 * check_schema, refuse a database that needs migrating (78).
 */
int pd_app_connect(struct pd_app *a, int check_schema, struct pd_err *e);
void pd_app_release(struct pd_app *a);

struct pd_config_source;

/*
 * The source a daemon reloads its config from on SIGHUP (lib/reload): the
 * file pd_app_load found (-c, else $PD_CONFIG, else the default path) read
 * again. The config the engine moves onto becomes a->cfg, with the log
 * level applied again (-v and -q still count); the one before is kept until
 * pd_app_release, since the engine's old settings may point into it. A
 * database_url, listen_url or prepared_statements that changed is logged:
 * it needs a restart.
 */
void pd_app_source(struct pd_app *a, struct pd_config_source *src);

#endif
