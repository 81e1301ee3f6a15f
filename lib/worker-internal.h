/*
 * worker-internal: what lib/worker.c (settings, reload, stream handlers,
 * the loop's hooks) and lib/worksync.c (the round trips) share: the
 * worker's state. Not for other modules.
 */
#ifndef PD_WORKER_INTERNAL_H
#define PD_WORKER_INTERNAL_H

#include "daemon.h"
#include "hold.h"
#include "pool.h"
#include "reap.h"
#include "reload.h"
#include "stream.h"
#include "trip.h"
#include "worker.h"

/*
 * Stream handlers at once, old ones still answering after a reload
 * included: their slots are allocated at start (the loop sizes its poll
 * array then, and a stream's process points back at its slot).
 */
#define MAX_STREAMS 64

/*
 * Ready jobs: claimed LEASED ahead of a free run, so that a run that comes
 * free starts its next job without waiting for a round trip. How many are
 * held is the prefetch depth, and how many one claim takes the batch, both
 * sized from what was measured (lib/batch, where the bound on the jobs a
 * worker holds is written).
 * Handlers that run long compared with a round trip get none: their jobs
 * stay claimable by idle workers, and claims go straight to RUNNING.
 */
struct worker {
	const struct pd_worker_cfg *cfg; /* the caller's, or own after a reload */
	struct pd_worker_cfg *own;	 /* the settings of the last reload, or NULL */
	struct pd_reload_keep kept;	 /* the settings reloads replaced (work may point in) */
	int reregister;			 /* a reload changed what the workers row says */
	struct pd_daemon d;
	struct pd_pool pool;
	struct pd_holdings hs;	   /* the jobs held: run[i] is pool slot i's (lib/hold) */
	struct pd_stream *streams; /* MAX_STREAMS slots; one per stream handler, started at
				      its first job, and old ones a reload left */
	int nstreams;
	char *stream_old;   /* stream_old[k]: no current handler uses stream k: closed once idle */
	int *stream_of;	    /* stream_of[h]: handler h's stream, or -1 */
	char ***stream_env; /* stream_env[k]: stream k's handler's environment (MAX_STREAMS) */
	const char **types; /* the claim's filter; NULL: any type */
	int ntypes;
	char **flow_types; /* the workflow job types in types (owned), NULL-terminated */
	/* the hook events of the settings (pd_hooks_json), for the reap pass */
	struct pd_buf hooks;
	long long next_claim, next_beat, next_reap, next_due, next_ext;
	long long next_prune;	  /* the reap pass prunes from then on (pd_reap_pass) */
	struct pd_reap_lead lead; /* the worker as a candidate for the reaper role */
	long long poll_ms;	  /* the claim poll's interval now (pd_idle_poll) */
	/*
	 * Moving averages, 0 until measured: a batch's round trip, a handler's
	 * run time (of the means between two batches sent: run_sum / run_n, so
	 * that the last few runs of a large batch do not stand for all of it).
	 */
	long long rtt_us, run_us, run_sum;
	int run_n;
	struct pd_trip trip; /* the batch in flight (reused) */
	int flight;	     /* trip is in flight */
	/* until_settled: the last look (settle_look) found nothing unsettled; valid while idle */
	int settled;
	long long next_settle; /* the next look, while idle */
};

/*
 * The worker's part of a pass: start ready jobs in free runs, collect the
 * batch in flight if its results are in, and send the next one (or nothing
 * while the reap pass or the program's periodic work is due). 0, or -1 with
 * e filled (the database failed).
 */
int pd_worksync_pass(struct worker *w, long long now, struct pd_err *e);

/*
 * The last writes before the worker exits (the phase is past SERVING: no
 * claim): the batch in flight, then the outcomes of the handlers the drain
 * stopped and the release of the ready jobs.
 */
void pd_worksync_final(struct worker *w);

/*
 * The reaper's turn (pd_reap_turn: the pass when this worker holds the
 * role), and the program's periodic work (pd_worker_ext).
 */
int pd_worksync_reap(struct worker *w, long long now, struct pd_err *e);
int pd_worksync_ext(struct worker *w, long long now, struct pd_err *e);

/* The workers row (also again after a reload, on the same session). */
int pd_worksync_register(struct pd_daemon *d, int first, struct pd_err *e);

/*
 * After a reconnect, give back the jobs leased to this worker under a
 * token it does not hold (pd_jobs_release_unheld).
 */
int pd_worksync_release_unheld(struct worker *w, struct pd_err *e);

/*
 * The answer to request q from a handler's channel (lib/pool), on the
 * worker's own connection between round trips: "lease JOBID TOKEN" (each a
 * positive decimal, one space before each, nothing after) gets "held" or
 * "lost" from a fenced read (pd_jobs_lease_held: the job LEASED or RUNNING
 * under that token, its lease not expired; "cancelled" when held and an
 * operator asked to cancel it, sql/022), which is what `pd-admin lease
 * check` asks in a handler that holds no credential; "unavailable" while
 * the database is; "error ..." for anything else. -1 with e when the query
 * failed (answered "unavailable").
 */
int pd_worker_request_reply(struct worker *w, const char *q, const char **reply, struct pd_err *e);

/* How many requests wait on the handlers' channels (lib/pool), answered between round trips. */
int pd_worker_requests(const struct worker *w);

/* A ready job would start now. */
int pd_worksync_startable(const struct worker *w);
/*
 * The worker's writes are paused (lib/batch, the pause) until the ms
 * returned: serving, nothing in flight, no heartbeat due, no lost lease to
 * write, and its ready jobs outlast the rest of the pause and a round trip;
 * -1: not paused.
 */
long long pd_worksync_paused(const struct worker *w, long long now);

/* When the next start record is due (pd_now_us), or -1. */
long long pd_worksync_starts_due(const struct worker *w);

/*
 * The stream slots (MAX_STREAMS of them, allocated here), then the current
 * stream handlers' streams (pd_worker_streams_map). Released, any process
 * left killed and reaped, by pd_worker_streams_release.
 */
int pd_worker_streams_init(struct worker *w, struct pd_err *e);
void pd_worker_streams_release(struct worker *w);

/*
 * Give every stream handler of the current settings (w->cfg) a stream,
 * stream_of[h] for handler h (-1: not a stream handler): the one running
 * its very command already (the same command, result limit and kill grace:
 * its process goes on), else a stream no longer in use (no process, nothing
 * in flight, no ready job for it), else a new one; none runs until its
 * first job. The streams left over are old (stream_old[k]): closed once the
 * jobs in flight in them are answered (streams_pass). -1 with e filled (78),
 * nothing changed, when that takes more than MAX_STREAMS.
 */
int pd_worker_streams_map(struct worker *w, struct pd_err *e);

/*
 * The claim's type filter from the current settings (w->cfg): the
 * workflows' job types ("workflow:NAME", owned: flow_types), the handlers'
 * types, and PD_HOOK_TYPE when a handler or the file has a hook command
 * (w->hooks, pd_hooks_json); or none (types NULL: any type) when a '*'
 * handler takes any type. Replaces the filter before it; freed by
 * pd_worker_claim_types_free (w->hooks by the caller).
 */
void pd_worker_claim_types(struct worker *w);
void pd_worker_claim_types_free(struct worker *w);

#endif
