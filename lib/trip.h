/*
 * trip: one round trip of a worker's writes as one value. A list of items,
 * each with its kind (a start record, an outcome or a ready job's release,
 * a lease_lost record, a lease to heartbeat), plus the heartbeat flag and the
 * claim's size, built from the holdings (lib/hold) and handed to the job
 * statements (pd_jobs_sync_send, lib/jobs), which fill in what the database
 * said. One batch is in flight at a time; what its items refer to stays put
 * until its results are in (pd_trip_written) or it failed.
 */
#ifndef PD_TRIP_H
#define PD_TRIP_H

#include "buf.h"
#include "db.h"
#include "jobs.h"
#include "retry.h"

struct pd_holdings;
struct pd_hold;

#define PD_TRIP_MAX_BYTES (16 * 1024 * 1024) /* outcome bytes sent in one round trip */

enum pd_trip_kind {
	PD_TRIP_START,	 /* a LEASED job's handler started: RUNNING, fenced */
	PD_TRIP_OUTCOME, /* a finished job's outcome, or a ready job's release */
	PD_TRIP_LOST,	 /* an attempt ended by a lost lease: its lease_lost record */
	PD_TRIP_BEAT,	 /* a lease to extend */
};

/* The columns of the items of one kind that the statements take as arrays. */
enum pd_trip_field { PD_TRIP_ID, PD_TRIP_TOKEN, PD_TRIP_ATTEMPT, PD_TRIP_AGO };

struct pd_trip_item {
	enum pd_trip_kind kind;
	long long id, token;
	int attempt;		   /* LOST: the attempt's number */
	long long ago_ms;	   /* LOST: ms since its handler started */
	int fin;		   /* OUTCOME, LOST: its entry in the holdings' finished list;
				      -1: a ready job's release */
	int held;		   /* BEAT, out: 1 while the lease is still ours, 0 lost */
	struct pd_job_outcome out; /* OUTCOME (out.id, out.token: id, token) */
};

struct pd_trip {
	/*
	 * n of them: the starts, then the outcomes and lease_lost records in
	 * the order their handlers ended, the releases, the beats
	 */
	struct pd_trip_item *items;
	int n, cap;
	int nstart, noutcomes, nlost, nbeat, nrel; /* by kind; nrel: releases among outcomes */
	int beat;				   /* send the heartbeat */
	int claim;				   /* how many to claim; 0: none */
	int claim_start; /* claim straight to RUNNING (handlers start at once), else LEASED */
	/* the worker's: who claims, for how long, from which queues and types */
	const char *worker;
	long long lease_ms;
	const char *const *queues;
	int nqueues;
	const char *const *types; /* NULL: any */
	int ntypes;
	long long sent_us, sent_ms; /* pd_now_us(), pd_now_ms() at send */
	/* out */
	struct pd_claimed *claimed; /* malloc'd: the caller takes the strings */
	int nclaimed;
	int fenced; /* outcomes fenced off */
	/* private to lib/jobs: the pipeline in flight */
	struct pd_db_stmt st[6];
	int nst, fi, bi, ci;
};

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
	void *ctx;
};

void pd_trip_release(struct pd_trip *t);

/*
 * The next round trip from the holdings hs, as a asks: the start records due,
 * the finished jobs' outcomes and lease_lost records (at most
 * PD_TRIP_MAX_BYTES of outcomes; after a refused batch, one at a time and no
 * claim), the ready jobs' release when not serving, the leases held when
 * the heartbeat is due, and the claim. Each entry put in moves (SEND).
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

/* Append "{a,b,c}": field f of the items of kind k. */
void pd_trip_array(struct pd_buf *b, const struct pd_trip *t, enum pd_trip_kind k,
		   enum pd_trip_field f);

#endif
