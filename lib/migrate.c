#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "migrate.h"

/* Arbitrary constant key of the session advisory lock taken by migrators. */
#define MIGRATE_LOCK "7311948211"

static const char ledger_exists_sql[] =
    "SELECT to_regclass('pendulum.schema_migrations') IS NOT NULL";

/* Highest applied version, 0 when nothing is. */
static int applied_versions(struct pd_db *db, PGresult **res, struct pd_err *e)
{
	char *exists = NULL;
	int has;

	*res = NULL;
	if (pd_db_value(db, ledger_exists_sql, 0, NULL, &exists, e) < 0)
		return -1;
	has = exists && strcmp(exists, "t") == 0;
	free(exists);
	if (!has)
		return 0;
	return pd_db_exec(db,
			  "SELECT version, to_char(applied_at AT TIME ZONE 'UTC', "
			  "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM pendulum.schema_migrations "
			  "ORDER BY version",
			  0, NULL, PGRES_TUPLES_OK, res, e);
}

static int is_applied(PGresult *res, int version)
{
	for (int i = 0; res && i < PQntuples(res); i++)
		if (atoi(PQgetvalue(res, i, 0)) == version)
			return i;
	return -1;
}

/* The newest version this binary knows. */
static int known_version(void)
{
	return pd_nmigrations > 0 ? pd_migrations[pd_nmigrations - 1].version : 0;
}

/*
 * The applied versions in res (ordered) go past what this binary knows: -1
 * with e filled (78) saying so, naming both versions; else 0.
 */
static int newer_schema(PGresult *res, struct pd_err *e)
{
	int n = res ? PQntuples(res) : 0, top = n > 0 ? atoi(PQgetvalue(res, n - 1, 0)) : 0;

	if (top <= known_version())
		return 0;
	return pd_errf(e, PD_EX_CONFIG,
		       "database schema is at version %d, newer than this %s knows (%d): upgrade "
		       "the binaries",
		       top, pd_progname(), known_version());
}

static int apply_one(struct pd_db *db, const struct pd_migration *m, struct pd_err *e)
{
	char version[16];
	const char *params[2] = {version, m->name};

	snprintf(version, sizeof(version), "%d", m->version);
	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		return -1;
	if (pd_db_exec_script(db, m->sql, e) < 0 ||
	    pd_db_exec(db, "INSERT INTO pendulum.schema_migrations (version, name) VALUES ($1, $2)",
		       2, params, PGRES_COMMAND_OK, NULL, e) < 0 ||
	    pd_db_exec_script(db, "COMMIT", e) < 0) {
		struct pd_err ignore = PD_ERR_INIT;

		pd_db_exec_script(db, "ROLLBACK", &ignore);
		snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg),
			 " (in migration %s)", m->name);
		return -1;
	}
	pd_log(PD_LOG_INFO, "migration applied", "version=%d name=%s", m->version, m->name);
	return 0;
}

int pd_migrate_apply(struct pd_db *db, int *applied, struct pd_err *e)
{
	struct pd_err unlock_err = PD_ERR_INIT;
	PGresult *res = NULL;
	int rc = -1;

	*applied = 0;
	/* the lock is the session's: a pooler would hand the unlock another session */
	if (pd_db_pooled(db))
		return pd_errf(e, PD_EX_CONFIG,
			       "migrations need a direct database URL: %s goes through a pooler "
			       "(PgBouncer); give the server's own address with -d",
			       db->where);
	if (pd_db_exec(db, "SELECT pg_advisory_lock(" MIGRATE_LOCK ")", 0, NULL, PGRES_TUPLES_OK,
		       NULL, e) < 0)
		return -1;
	if (applied_versions(db, &res, e) < 0 || newer_schema(res, e) < 0)
		goto out;
	for (int i = 0; i < pd_nmigrations; i++) {
		if (is_applied(res, pd_migrations[i].version) >= 0)
			continue;
		if (apply_one(db, &pd_migrations[i], e) < 0)
			goto out;
		(*applied)++;
	}
	rc = 0;
out:
	if (res)
		PQclear(res);
	pd_db_exec(db, "SELECT pg_advisory_unlock(" MIGRATE_LOCK ")", 0, NULL, PGRES_TUPLES_OK,
		   NULL, &unlock_err);
	return rc;
}

int pd_migrate_status(struct pd_db *db, struct pd_migration_status *st, struct pd_err *e)
{
	PGresult *res = NULL;

	if (applied_versions(db, &res, e) < 0)
		return -1;
	for (int i = 0; i < pd_nmigrations; i++) {
		int row = is_applied(res, pd_migrations[i].version);

		st[i].version = pd_migrations[i].version;
		st[i].name = pd_migrations[i].name;
		snprintf(st[i].applied_at, sizeof(st[i].applied_at), "%s",
			 row >= 0 ? PQgetvalue(res, row, 1) : "");
	}
	if (res)
		PQclear(res);
	return 0;
}

int pd_migrate_check(struct pd_db *db, struct pd_err *e)
{
	PGresult *res = NULL;
	int missing = 0;

	if (applied_versions(db, &res, e) < 0)
		return -1;
	if (newer_schema(res, e) < 0) {
		PQclear(res);
		return -1;
	}
	for (int i = 0; i < pd_nmigrations; i++)
		if (is_applied(res, pd_migrations[i].version) < 0)
			missing++;
	if (res)
		PQclear(res);
	if (missing)
		return pd_errf(e, PD_EX_CONFIG,
			       "the database schema is %d migration%s behind (%s): run 'pd-admin "
			       "migrate'",
			       missing, missing == 1 ? "" : "s", db->where);
	return 0;
}
