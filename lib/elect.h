/*
 * elect: a role one process at a time holds (the cron ticker; the reaper
 * later), held like a lease on the database's clock (pendulum.leaders,
 * pendulum.elect in sql/016_idle.sql). A candidate calls pd_elect_hold
 * before each act of the role: it takes a free or expired role, renews the
 * role it holds once a third of the lease has passed, and says whether it
 * holds the role now. A holder that stops calling (killed, SIGSTOPped, cut
 * off from the database) loses the role when its lease expires; the next
 * call of another candidate takes it. One that comes back finds it lost
 * and must not act.
 *
 * What the election cannot give: a holder that checked and then froze
 * before it acted acts late, possibly after another took the role. What a
 * role does must stay correct with two actors (the ticker's idempotency
 * keys); the election saves work and keeps it on one process.
 */
#ifndef PD_ELECT_H
#define PD_ELECT_H

#include "db.h"

/*
 * One turn of holder (unique among the candidates: a daemon id) for role:
 * *held 1 when it holds the role after the call, 0 when another does. The
 * same statement evaluates also (a constant SQL expression; NULL: none)
 * into *also_out (malloc'd text, NULL for SQL NULL or no also): one round
 * trip for the check and what the caller looks at next. lease_ms > 0. -1
 * with e filled on a database error (the role is then as it was: held
 * until it expires).
 */
int pd_elect_hold(struct pd_db *db, const char *role, const char *holder, long long lease_ms,
		  const char *also, int *held, char **also_out, struct pd_err *e);

/* Give role up at once if holder holds it (a clean stop). -1 with e filled. */
int pd_elect_release(struct pd_db *db, const char *role, const char *holder, struct pd_err *e);

#endif
