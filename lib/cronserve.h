/*
 * cronserve: `pd-worker --crontab FILE`. The crontab's commands as handlers
 * (type crontab.SCOPE.NAME, the file's assignments in their environment,
 * the timeout annotation as the handler's), its schedules applied to the
 * database as `pd-cron apply FILE --prune` does (deleting only that file's
 * schedules), and the ticker (lib/ticker's election and tick) run inside
 * the worker's loop through struct pd_worker_ext: one loop, one
 * connection, no thread. Any number of workers may serve the same file:
 * one holds the ticker role (lib/elect, a lease of PD_TICKER_LEASE_MS) and
 * ticks, and each occurrence is one job. A worker that stops holding it
 * (stopped, frozen) leaves it to expire: another takes it within the lease.
 *
 * SIGHUP reads the file again (the worker's reload calls ext.reload): a
 * file that does not parse is logged and refused, and the worker goes on
 * with the one it had; otherwise the new commands serve the jobs not yet
 * started, and the schedules are applied at the next period (between
 * batches, when the connection is free).
 */
#ifndef PD_CRONSERVE_H
#define PD_CRONSERVE_H

#include "crontab.h"
#include "ticker.h"
#include "worker.h"

struct pd_cronserve {
	struct pd_worker_ext ext; /* first: the worker hands it back */
	const char *path, *tenant;
	long long grace_ms;
	struct pd_crontab *tabs; /* every version read; the last is current */
	struct pd_handler **hv;	 /* each version's handlers (jobs in flight point in) */
	int n;
	int pending; /* the current version is not applied yet */
	struct pd_ticker_lead lead;
};

/* Read path (65 with FILE:LINE:COL when it does not parse) into c. */
int pd_cronserve_init(struct pd_cronserve *c, const char *path, const char *tenant,
		      struct pd_err *e);

/*
 * Apply the current version if not yet applied: create, update, and delete
 * the file's schedules it no longer has; log the changes. -1 with e filled.
 */
int pd_cronserve_apply(struct pd_cronserve *c, struct pd_db *db, struct pd_err *e);

void pd_cronserve_release(struct pd_cronserve *c);

#endif
