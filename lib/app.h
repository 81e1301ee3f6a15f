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
	const char *database;	 /* -d CONNINFO, or NULL */
	int verbosity;		 /* +1 per -v, -1 per -q */
	int json;		 /* --json */
	struct pd_config cfg;
	struct pd_db db;
};

void pd_app_init(struct pd_app *a);
/* Load the config file and apply the log level. Code 78 on a bad file. */
int pd_app_load(struct pd_app *a, struct pd_err *e);
/* Connect (code 69 on failure); with check_schema, refuse a database that needs migrating (78). */
int pd_app_connect(struct pd_app *a, int check_schema, struct pd_err *e);
void pd_app_release(struct pd_app *a);

#endif
