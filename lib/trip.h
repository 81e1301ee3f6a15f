/*
 * trip: one round trip of a worker's writes as one value. A list of items,
 * each with its kind (a start record, an outcome or a ready job's release,
 * a lease_lost record, a lease to heartbeat), plus the heartbeat flag and the
 * claim's size, built from the holdings (lib/hold) and handed to the job
 * statements (pd_jobs_sync_send, lib/jobs), which fill in what the database
 * said. The value itself (struct pd_trip, its items) is declared in jobs.h,
 * beside the statements that take it. One batch is in flight at a time; what its items refer to
 * stays put until its results are in (pd_trip_written) or it failed.
 */
#ifndef PD_TRIP_H
#define PD_TRIP_H

#include "buf.h"
#include "db.h"
#include "jobs.h"
#include "retry.h"

struct pd_holdings;
struct pd_hold;
struct pd_progress;

#define PD_TRIP_MAX_BYTES (16 * 1024 * 1024) /* outcome bytes sent in one round trip */

/* What the worker wants of the next round trip. */
struct pd_trip_ask {
	long long now_us;
	int serving;	  /* else the ready jobs are released (the attempt refunded) */
	int beat;	  /* the heartbeat is due */
	int claim;	  /* how many to claim; 0: none */
	int claim_start;  /* claim straight to RUNNING */
	long long rtt_us; /* a stream job's start is written once in flight this long */
	struct pd_rng *rng;
	const struct pd_retry_cfg *retry;
	/* run i's handler process has exited, or was stopped for a lost lease; NULL: none has */
	int (*gone)(void *ctx, int i);
	/* run i's progress (its pool slot's or its stream job's), or NULL; NULL: none has */
	struct pd_progress *(*progress)(void *ctx, int i);
	void *ctx;
};

void pd_trip_release(struct pd_trip *t);

/*
 * The next round trip from the holdings hs, as a asks: the start records due,
 * the finished jobs' outcomes and lease_lost records (at most
 * PD_TRIP_MAX_BYTES of outcomes; after a refused batch, one at a time and no
 * claim), the ready jobs' release when not serving, the leases held when
 * the heartbeat is due, and the claim. Each entry put in moves (SEND).
 * Progress notes not stored yet (dirty, cleared here) go with the heartbeat
 * (the running jobs') and with their outcome (a finished job's last note).
 * The worker marks them dirty again when the trip fails. The items' text
 * points into the progress notes: send the trip before they change.
 * Returns 1 when there is something to send, 0 when not (nothing moved).
 */
int pd_trip_build(struct pd_trip *t, struct pd_holdings *hs, const struct pd_trip_ask *a);

/*
 * The trip is written: log its outcomes and lease_lost records, lower
 * *next_due (pd_now_ms, -1: none) to the earliest retry it made due, and
 * move every entry (WRITTEN).
 */
void pd_trip_written(struct pd_trip *t, struct pd_holdings *hs, long long *next_due);

/*
 * The trip failed with e. When the database refused its data (SQLSTATE
 * class 22 data exception, 23 integrity, 54 program limit: an outcome it
 * cannot store) and it carried outcomes: each outcome goes again in a round
 * trip of its own; one refused alone is written as a retryable failure
 * whose reason is the database's message, without result, stderr or
 * workflow write; one refused even so is not written (its lease expires and
 * the reaper gives it back). Returns 1 when so (the entries moved, FAILED),
 * 0 when e stands (nothing moved).
 */
int pd_trip_refused(struct pd_trip *t, struct pd_holdings *hs, const struct pd_err *e);

/* When entry x's start is to be written (pd_now_us), or -1: not to be. */
long long pd_trip_start_due(const struct pd_hold *x, long long rtt_us);

#endif
