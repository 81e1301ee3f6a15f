/*
 * elect: roles held like leases. See elect.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "elect.h"

int pd_elect_hold(struct pd_db *db, const char *role, const char *holder, long long lease_ms,
		  const char *also, int *held, char **also_out, struct pd_err *e)
{
	struct pd_buf sql = PD_BUF_INIT;
	char lease[24];
	const char *params[3] = {role, holder, lease};
	PGresult *r;
	int rc;

	*held = 0;
	if (also_out)
		*also_out = NULL;
	snprintf(lease, sizeof(lease), "%lld", lease_ms);
	pd_buf_printf(&sql, "SELECT pendulum.elect($1, $2, $3::bigint) IS NOT NULL, (%s)::text",
		      also ? also : "NULL");
	rc = pd_db_exec(db, sql.data, 3, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&sql);
	if (rc < 0)
		return -1;
	*held = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	if (also_out && !PQgetisnull(r, 0, 1))
		*also_out = pd_xstrdup(PQgetvalue(r, 0, 1));
	PQclear(r);
	return 0;
}

int pd_elect_release(struct pd_db *db, const char *role, const char *holder, struct pd_err *e)
{
	const char *params[2] = {role, holder};

	return pd_db_exec(db, "SELECT pendulum.resign($1, $2)", 2, params, PGRES_TUPLES_OK, NULL,
			  e);
}
