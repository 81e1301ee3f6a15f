/*
 * migrate: the schema, applied in order from migrations embedded at build
 * time (scripts/embed-sql turns sql/NNN_*.sql into pd_migrations[]).
 */
#ifndef PD_MIGRATE_H
#define PD_MIGRATE_H

#include "db.h"

struct pd_migration {
	int version;
	const char *name; /* "001_init" */
	const char *sql;
};

extern const struct pd_migration pd_migrations[];
extern const int pd_nmigrations;

struct pd_migration_status {
	int version;
	const char *name;
	char applied_at[40]; /* "" when pending */
};

/*
 * Apply every pending migration, each in its own transaction, holding a
 * session advisory lock so that concurrent migrators serialise. *applied
 * gets the number applied by this call (0: already up to date). A schema
 * newer than this binary knows is refused (78), nothing applied; so is a
 * pooled connection (78: the lock is the session's, which a pooler in
 * transaction mode does not keep; migrations need a direct URL).
 */
int pd_migrate_apply(struct pd_db *db, int *applied, struct pd_err *e);

/* Fill st[pd_nmigrations] with what is applied and what is pending. */
int pd_migrate_status(struct pd_db *db, struct pd_migration_status *st, struct pd_err *e);

/*
 * 0 if the schema is at the newest version this binary knows; else -1 with
 * code 78: behind, saying to run 'pd-admin migrate'; newer (an older binary
 * against an upgraded database), naming both versions and saying to upgrade
 * the binaries.
 */
int pd_migrate_check(struct pd_db *db, struct pd_err *e);

#endif
