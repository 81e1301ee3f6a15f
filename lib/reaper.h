/*
 * reaper: the engine of pd-reaper. Runs the reap pass (lib/reap: kill what
 * dead workers' handlers left on this host, then give expired leases back)
 * every interval, on the daemon loop (lib/daemon) like the worker and the
 * relay: SIGTERM or SIGINT ends it after the pass in progress, SIGHUP
 * reloads the config file (lib/reload: the flags settled over it again, the
 * new interval from the next pass on, at once if the new interval has
 * already passed), and a lost database is reconnected with backoff, a pass
 * running at once after each (re)connect. Whatever a pass reads from the
 * config goes through pd_reaper_settle, so a reload changes it too.
 *
 * Each pass also prunes finished history (lib/prune) by the retention:
 * of the configuration: at most 20 statements of 5000 rows a pass, the rest
 * at the next one.
 *
 * Passes start interval apart on the monotonic clock (an absolute deadline
 * from the start of the previous one), not interval after the previous one
 * ended; a pass longer than the interval is followed by the next at once.
 */
#ifndef PD_REAPER_H
#define PD_REAPER_H

#include "config.h"
#include "db.h"
#include "reload.h"

/*
 * The daemon is a candidate for the fleet's reaper role (reap.h): it runs
 * the pass while it holds the role, else it stands by. Its role lease is
 * this many intervals (it renews at each turn); --once passes without
 * standing, and gives back every expired lease.
 */
#define PD_REAPER_ROLE_LEASES 3

/* What a reaper does. -1 in a field given to pd_reaper_settle: unset. */
struct pd_reaper_cfg {
	long long interval_ms;	       /* between the starts of two passes */
	int once;		       /* one pass on the connection given, no loop */
	struct pd_retention retention; /* the file's (retention:), set by pd_reaper_settle */
	char *hooks; /* the file's hook events (pd_hooks_json; owned), set by pd_reaper_settle */
	/* the flags alone, settled over the file again on SIGHUP; NULL: no reload */
	const struct pd_reaper_cfg *flags;
	struct pd_config_source source; /* where SIGHUP reads the file (lib/reload) */
};

/* What a run did, summed over its passes. */
struct pd_reaper_stats {
	long long passes;   /* passes that completed */
	long long requeued; /* jobs given back as PENDING */
	long long dead;	    /* jobs dead-lettered */
	long long pruned;   /* rows of finished history deleted (lib/prune) */
};

/* Every field unset. */
void pd_reaper_cfg_init(struct pd_reaper_cfg *r);

/* Free what pd_reaper_settle set. */
void pd_reaper_cfg_release(struct pd_reaper_cfg *r);

/* Flags over the file (cfg) over the defaults. */
void pd_reaper_settle(struct pd_reaper_cfg *r, const struct pd_config *cfg);

/*
 * Run on db (connected). With once: one pass, no signal handling, no
 * reconnect; a lost database is an error (69). Otherwise: passes every
 * interval until SIGTERM or SIGINT, reconnecting when the database goes
 * away; only a database error other than a lost connection (70) ends it
 * early. *st gets what was done (also on error). Returns 0, or -1 with e
 * filled.
 */
int pd_reaper_run(const struct pd_reaper_cfg *r, struct pd_db *db, struct pd_reaper_stats *st,
		  struct pd_err *e);

#endif
