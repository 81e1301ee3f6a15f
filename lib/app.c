#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "log.h"
#include "migrate.h"

void pd_app_init(struct pd_app *a)
{
	memset(a, 0, sizeof(*a));
	pd_config_init(&a->cfg);
	a->db = (struct pd_db)PD_DB_INIT;
}

int pd_app_load(struct pd_app *a, struct pd_err *e)
{
	int level;

	if (pd_config_load(&a->cfg, a->config_path, e) < 0)
		return -1;
	level = a->cfg.log_level >= 0 ? a->cfg.log_level : (int)pd_log_get_level();
	level -= a->verbosity;
	if (level < PD_LOG_DEBUG)
		level = PD_LOG_DEBUG;
	if (level > PD_LOG_ERROR)
		level = PD_LOG_ERROR;
	pd_log_set_level((enum pd_log_level)level);
	return 0;
}

int pd_app_connect(struct pd_app *a, int check_schema, struct pd_err *e)
{
	/* -d, then $PD_DATABASE_URL, then the file's database_url, then libpq's defaults. */
	const char *env = getenv("PD_DATABASE_URL");
	const char *url = a->database		? a->database
			  : env && *env		? env
			  : a->cfg.database_url ? a->cfg.database_url
						: "";

	if (pd_db_connect(&a->db, url, pd_progname(), e) < 0)
		return -1;
	if (check_schema && pd_migrate_check(&a->db, e) < 0)
		return -1;
	return 0;
}

void pd_app_release(struct pd_app *a)
{
	pd_db_close(&a->db);
	pd_config_release(&a->cfg);
}
