/*
 * worker: the engine of pd-worker. Claims jobs, runs each one's handler in
 * a pool slot or hands it to a stream handler (lib/stream: one long-lived
 * process per stream handler, started at its first job, a JSON line per job
 * each way), keeps the leases alive, records outcomes fenced by the lease
 * token, and drains on SIGTERM; all on the daemon loop (lib/daemon), the
 * stream handlers' pipes registered through its pollfds and on_io hooks.
 * The concurrency counts jobs in flight of both kinds together.
 *
 * What is ready to be written — start records, finished jobs' outcomes,
 * lease_lost records, the heartbeat when due, and a claim — goes in one
 * round trip (pd_jobs_sync_send), one batch in flight at a time while the
 * loop goes on reaping and starting handlers. Jobs claimed ahead of a free
 * slot wait LEASED (ready jobs, while handlers are short); otherwise a claim
 * goes straight to RUNNING. The loop sleeps until a notification, a child
 * event, the batch's results, the heartbeat or reap deadline, the poll
 * interval, or the earliest run_at it knows of (a retry's backoff).
 *
 * SIGHUP reloads (lib/reload): the flags are settled over the file read
 * again, and the new handlers, workflows, queues and limits apply to the
 * jobs not started yet (the claim's type filter is rebuilt, and the jobs
 * claimed ahead take the new handler for their type when there is one).
 * Running handlers are not touched. A stream handler whose command is the
 * same keeps its process; one whose command changed (or that is gone) keeps
 * its process until the jobs in flight in it are answered, then its stdin is
 * closed, and the new command starts at its first job. The pool is sized at
 * start: a concurrency changed in the file is logged and needs a restart.
 */
#ifndef PD_WORKER_H
#define PD_WORKER_H

#include "config.h"
#include "db.h"
#include "flow.h"
#include "handler.h"
#include "reload.h"

#define PD_WORKER_MAX_QUEUES 64

/*
 * Work of the program's own that the worker runs on its loop and its
 * connection (pd-worker --crontab: the crontab's handlers, its schedules
 * and the ticker). The worker calls:
 *   reload   on SIGHUP, before the settings are rebuilt: read the source
 *            again; on success handlers/nhandlers are the new ones (the old
 *            stay valid until the worker returns); -1 with e filled: the
 *            reload is refused, nothing changed;
 *   period   while serving, between batches (no query in flight on db),
 *            next_ms after the last (it may set next_ms; 0 or less:
 *            period_ms), and at once after a reload; -1 with e filled when
 *            the database failed;
 *   connect  on each new session.
 */
struct pd_worker_ext {
	const struct pd_handler *handlers; /* served after the flags', before the file's */
	int nhandlers;
	int (*reload)(struct pd_worker_ext *x, struct pd_err *e);
	int (*period)(struct pd_worker_ext *x, struct pd_db *db, struct pd_err *e);
	void (*connect)(struct pd_worker_ext *x);
	long long period_ms;
	long long next_ms; /* set by period (or reload: 0, at once): until the next */
};

/* What a worker does. -1 (or NULL) in a field given to pd_worker_settle: unset. */
struct pd_worker_cfg {
	const char *queues[PD_WORKER_MAX_QUEUES];
	int nqueues;
	const struct pd_handler *handlers; /* the first match for a type wins */
	int nhandlers;
	/*
	 * the file's global hooks (pd_worker_settle): a copy, as a reload moves
	 * the config struct; the commands it points to are the config's
	 */
	struct pd_hooks hooks;
	const struct pd_flow *flows; /* workflows: their runs' jobs are claimed too */
	int nflows;
	struct pd_engine_cfg
	    engine;		   /* until_idle: exit once nothing is runnable and nothing runs */
	struct pd_retry_cfg retry; /* the file's (retry:) */
	long long lease_ms, heartbeat_ms;
	long long result_limit;	       /* bytes of stdout kept as the result */
	int reap;		       /* give back expired leases too */
	struct pd_retention retention; /* the file's (retention:): what the reap pass prunes by */
	/* the flags alone, settled over the file again on SIGHUP; NULL: no reload */
	const struct pd_worker_cfg *flags;
	struct pd_config_source source; /* where SIGHUP reads the file (lib/reload) */
	struct pd_handler *merged;	/* owned (pd_worker_settle): handlers points here */
	struct pd_worker_ext *ext;	/* NULL: none */
};

/* Every field unset. */
void pd_worker_cfg_init(struct pd_worker_cfg *w);

/*
 * Fill the unset fields from the file's values (cfg) and the defaults, and
 * check the whole: flags over the file over the defaults. The handlers
 * given (the flags') come first, then the file's for the other types (a
 * flag's handler for a type wins), in an array w owns; the workflows are the
 * file's. The heartbeat
 * defaults to a third of the lease; a lease of 0, or a heartbeat not shorter
 * than the lease, is refused (64); the file's queues, when the flags give
 * none, are refused (78) past PD_WORKER_MAX_QUEUES, never cut short.
 */
int pd_worker_settle(struct pd_worker_cfg *w, const struct pd_config *cfg, struct pd_err *e);

/* Free what pd_worker_settle allocated. */
void pd_worker_cfg_release(struct pd_worker_cfg *w);

/*
 * Run the worker on db (connected) until it is drained by a signal, or idle
 * with until_idle. Registers the worker, unregisters it at the end. Returns
 * 0, or -1 with e filled.
 */
int pd_worker_run(const struct pd_worker_cfg *w, struct pd_db *db, struct pd_err *e);

#endif
