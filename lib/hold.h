/*
 * hold: the jobs a worker holds, from its claim to the write of its
 * outcome, as one collection (struct pd_holdings) whose entries carry their
 * stage. An entry moves only through pd_hold_move, by the tables in hold.c
 * indexed by stage and event (as s6-supervise's and git's run-command's
 * children do); a move the tables do not list is refused.
 *
 * A job's stage:
 *
 *   NONE --CLAIMED--> READY --START--> RUNNING --OVER--> FINISHED --SEND--> SENDING
 *   NONE --START--> RUNNING            (claimed straight to RUNNING)
 *   NONE --NO_RUN--> FINISHED          (a workflow job with no step to run now)
 *   READY --SEND--> RELEASING --WRITTEN--> NONE   (given back once not serving)
 *   READY --LOST--> NONE;  RELEASING --FAILED--> READY
 *   RUNNING --LOST--> ABANDONED --OVER--> FINISHED     (a stream job: its answer dropped)
 *   SENDING --WRITTEN--> NONE;  SENDING --FAILED--> FINISHED;  SENDING --DROP--> NONE
 *   SENDING --REFUSED, REFUSED_ALONE--> SENDING   (its fate moves);  FINISHED --DROP--> NONE
 *   RUNNING --CANCEL--> CANCELLING --OVER--> FINISHED   (an operator's cancel: CANCELLED)
 *   CANCELLING --LOST--> ABANDONED;  READY --CANCEL--> FINISHED   (cancelled, never started)
 *
 * WRITTEN and FAILED (the batch in flight is in, or failed) go to every
 * entry; the others to one. A process handler's lost lease is its pool
 * slot's (STOPPING for PD_STOP_LEASE_LOST): its entry stays RUNNING (or
 * CANCELLING). CANCEL comes from the heartbeat (a cancel request on a lease
 * held, sql/022): the handler is stopped (PD_STOP_CANCEL; a stream handler
 * gets a cancel line), its outcome PD_EXIT_CANCELLED; the lease is still
 * heartbeat until the outcome is written.
 *
 * Beside its stage, an entry carries what the database knows of its start
 * (enum pd_hold_start: its job is LEASED until a start record or its
 * outcome makes it RUNNING) and how its outcome is to be written (enum
 * pd_hold_fate: a batch the database refuses for its data goes again one
 * outcome per round trip); the same events move both, by tables of their
 * own.
 */
#ifndef PD_HOLD_H
#define PD_HOLD_H

#include "flow.h"
#include "handler.h"
#include "jobs.h"
#include "pool.h"
#include "stream.h"

enum pd_hold_stage {
	PD_HOLD_NONE,	    /* not held: a free run, or an entry done with */
	PD_HOLD_READY,	    /* claimed LEASED ahead of a free run, not started */
	PD_HOLD_RELEASING,  /* a ready job whose release is in the batch in flight */
	PD_HOLD_RUNNING,    /* its handler runs: a pool slot's process or a stream handler */
	PD_HOLD_ABANDONED,  /* a stream job whose lease is lost: its answer will be dropped */
	PD_HOLD_FINISHED,   /* its handler is over: its outcome (or lease_lost record) to write */
	PD_HOLD_SENDING,    /* its outcome (or lease_lost record) in the batch in flight */
	PD_HOLD_CANCELLING, /* its handler runs, being stopped for an operator's cancel */
	PD_HOLD_NSTAGES
};

enum pd_hold_event {
	PD_HOLD_CLAIMED,       /* a claimed job held LEASED until a run is free */
	PD_HOLD_START,	       /* its handler started */
	PD_HOLD_NO_RUN,	       /* a workflow job whose plan runs no handler: over at once */
	PD_HOLD_OVER,	       /* its handler is over */
	PD_HOLD_LOST,	       /* the heartbeat found its lease lost */
	PD_HOLD_SEND,	       /* put in the batch sent now (start, outcome, release) */
	PD_HOLD_WRITTEN,       /* the batch in flight is written */
	PD_HOLD_FAILED,	       /* the batch in flight failed: nothing of it written */
	PD_HOLD_REFUSED,       /* the database refused its batch of several outcomes */
	PD_HOLD_REFUSED_ALONE, /* the database refused its outcome, alone in its batch */
	PD_HOLD_DROP,	       /* refused even as a failure: not written (the reaper's) */
	PD_HOLD_CANCEL,	       /* the heartbeat found a cancel asked of its job */
	PD_HOLD_NEVENTS
};

/* Whether the database knows that a job's handler started. */
enum pd_hold_start {
	PD_HOLD_START_RECORDED, /* claimed straight to RUNNING, or the start was written */
	PD_HOLD_START_TO_SEND, /* LEASED: the next batch writes RUNNING, or its outcome the start */
	PD_HOLD_START_IN_FLIGHT, /* in the batch in flight */
	PD_HOLD_NSTARTS
};

/* How a finished job's outcome goes to the database. */
enum pd_hold_fate {
	PD_HOLD_FATE_BATCHED, /* with the others */
	PD_HOLD_FATE_ALONE,   /* in a refused batch: alone in its round trip */
	PD_HOLD_FATE_FAILURE, /* refused alone: a failure, exit.error the reason, nothing else */
	PD_HOLD_FATE_DROP,    /* refused even so: not written */
	PD_HOLD_NFATES
};

/* A job held: its stage, its job (owned) and what its stage needs. */
struct pd_hold {
	enum pd_hold_stage stage;
	enum pd_hold_start start;
	enum pd_hold_fate fate;
	struct pd_claimed job;
	struct pd_flow_plan *plan;  /* a workflow job's (owned), else NULL */
	const struct pd_handler *h; /* READY: its handler (a workflow step's), NULL: none */
	int stream;		    /* run by (READY: for) stream handler k; -1: a process */
	long long since_us;	    /* RUNNING: pd_now_us() at its start */
	struct pd_pool_exit exit;   /* FINISHED: how its handler ended, its result judged */
	int out_is_text;	    /* exit.out is the handler's text as a JSON string */
	unsigned hooks; /* the hook events (1 << enum pd_hook_event) its outcome may fire */
};

/*
 * The next stage, start record or fate of an entry in stage s (record r,
 * fate f) on event ev; -1 for the stage when the move is not one of the
 * table's.
 */
int pd_hold_next(enum pd_hold_stage s, enum pd_hold_event ev);
enum pd_hold_start pd_hold_next_start(enum pd_hold_start r, enum pd_hold_event ev);
enum pd_hold_fate pd_hold_next_fate(enum pd_hold_fate f, enum pd_hold_event ev);

/*
 * Move x by ev (its stage, start record and fate together): 0, or -1 when
 * the stage table has no such move (x unchanged).
 */
int pd_hold_move(struct pd_hold *x, enum pd_hold_event ev);

const char *pd_hold_stage_name(enum pd_hold_stage s);
const char *pd_hold_event_name(enum pd_hold_event ev);

/*
 * A worker's holdings. Where an entry sits follows its stage: run[i] is the
 * job in run i (pool slot i for a process; NONE: the run is free), ready[]
 * the READY and RELEASING ones, oldest first, fin[] the FINISHED and
 * SENDING ones, in the order their handlers ended.
 */
struct pd_holdings {
	struct pd_hold *run;
	int size;
	struct pd_hold *ready;
	int nready, capready;
	struct pd_hold *fin;
	int nfin, capfin;
	/* what starting and stopping a handler takes; pool NULL: the stages move alone */
	struct pd_pool *pool;	   /* run i's process is slot i's */
	struct pd_stream *streams; /* the worker's stream handlers */
	const char *worker;	   /* its id (PD_WORKER_ID) */
	struct pd_buf line;	   /* a job's line for a stream handler, reused */
};

void pd_holdings_init(struct pd_holdings *hs, int size);
/* Free every entry's job, plan and exit, and the lists. */
void pd_holdings_release(struct pd_holdings *hs);

/* The index of a free run, or -1; how many are free. */
int pd_holdings_free_run(const struct pd_holdings *hs);
int pd_holdings_nfree(const struct pd_holdings *hs);
/* Some finished entry's outcome is not in the batch in flight. */
int pd_holdings_unsent(const struct pd_holdings *hs);

/*
 * Claimed job c (its strings taken) as an entry NONE, with the handler and
 * stream a worker looked up for it: handlers[0..nhandlers) by type, or a
 * workflow job's plan from flows (its step's handler when the plan runs
 * one); stream_of[h] is handler h's stream, or -1.
 */
void pd_hold_claimed(struct pd_hold *x, const struct pd_claimed *c,
		     const struct pd_handler *handlers, int nhandlers, const int *stream_of,
		     const struct pd_flow *flows, int nflows);

/*
 * The hooks of entry x (pd_hold_claimed's): the events its outcome fires
 * (pd_hook_mask over handlers[0..nhandlers) and global); for a hook job
 * (PD_HOOK_TYPE), its handler: the command for its payload's event and
 * job type (pd_hook_find), or NULL when this worker has none (a process
 * that fails, retryable, saying so).
 */
void pd_hold_hooks(struct pd_hold *x, const struct pd_handler *handlers, int nhandlers,
		   const struct pd_hooks *global);

/* x (a new entry) CLAIMED: appended to the ready ones. */
struct pd_hold *pd_holdings_ready_add(struct pd_holdings *hs, struct pd_hold *x);
/* Ready entry k leaves the list (LOST, or its release WRITTEN): freed. */
void pd_holdings_ready_drop(struct pd_holdings *hs, int k);

/*
 * x (a new entry, or a ready one: the caller takes it out of the list) STARTs
 * in free run i (taken: x is zeroed): its process in pool slot i, or its
 * line to its stream handler.
 */
struct pd_hold *pd_holdings_start(struct pd_holdings *hs, struct pd_hold *x, int i);

/*
 * The lease of token t (job id) is LOST: stop the handler holding it, or
 * abandon the stream job (its answer will be dropped), or drop the ready
 * job.
 */
void pd_holdings_lost(struct pd_holdings *hs, long long id, long long t);

/*
 * The job of lease token t (job id) is to be cancelled (CANCEL): stop the
 * handler running it (PD_STOP_CANCEL; a stream job's cancel line), or
 * finish the ready job at once, never started (PD_EXIT_CANCELLED). A job
 * already being cancelled, or not held in a run or ready, is left as it is.
 */
void pd_holdings_cancel(struct pd_holdings *hs, long long id, long long t);

/*
 * Run i's handler is OVER with exit ex (taken; its result judged as the
 * handler contract says): its entry to the finished list, the run free.
 */
struct pd_hold *pd_holdings_over(struct pd_holdings *hs, int i, const struct pd_pool_exit *ex);

/* x (a new entry, a workflow job whose plan runs nothing) is over at once: NO_RUN. */
struct pd_hold *pd_holdings_no_run(struct pd_holdings *hs, struct pd_hold *x, long long now_us);

/* ev (WRITTEN or FAILED) to every entry; the entries it takes to NONE are freed. */
void pd_holdings_apply(struct pd_holdings *hs, enum pd_hold_event ev);

/* Finished entry k DROPped: freed. */
void pd_holdings_fin_drop(struct pd_holdings *hs, int k);

#endif
