/*
 * jobs: the statements of the job state machine (DESIGN.md, Jobs). Each is
 * one statement; none holds a transaction open across a handler run.
 *
 * Fenced writes carry the lease token and change nothing unless
 * lease_token = $token AND state IN ('LEASED','RUNNING'); a fenced-off write
 * bumps the writes_fenced counter in the same statement.
 */
#ifndef PD_JOBS_H
#define PD_JOBS_H

#include "buf.h"
#include "db.h"
#include "verdict.h"

struct pd_claimed {
	long long id, token;
	int attempt, max_attempts, replay_count;
	long long timeout_ms; /* -1: none set on the job */
	char *type, *queue, *tenant, *payload, *run_at, *idempotency_key, *traceparent;
	char *flow; /* a workflow job's run context (pendulum.workflow_context), else NULL */
};

/*
 * Claim up to limit runnable jobs of these queues and types (types NULL:
 * any type) for worker, with a lease of lease_ms. One statement: SKIP
 * LOCKED, new tokens from the sequence, attempt + 1, an attempt row each.
 * With start, the jobs go straight to RUNNING (their handlers start now);
 * else they are LEASED. *out is malloc'd (free with pd_claimed_free).
 */
int pd_jobs_claim(struct pd_db *db, const char *worker, const char *const *queues, int nqueues,
		  const char *const *types, int ntypes, int limit, long long lease_ms, int start,
		  struct pd_claimed **out, int *n, struct pd_err *e);
void pd_claimed_free(struct pd_claimed *c, int n);

/*
 * What a workflow job's outcome writes to its run (sql/010_workflows.sql), in
 * the same transaction, before the job row: a completed step's output
 * (inserted once: the first insert of a step wins; the run's position moves
 * on with GREATEST), the run parked at a wait_for step, or its wait undone
 * (the step failed past its deadline). Fenced like the job's write, by the
 * same token, with the job row locked between the two: an outcome fenced off
 * writes nothing of the run either (no step, position, mailbox, wait, sleep
 * or steps).
 */
enum pd_flow_write_kind {
	PD_FLOW_WRITE_NONE,
	PD_FLOW_WRITE_STEP,   /* the job: succeeded (last step) or back to PENDING, attempt 0 */
	PD_FLOW_WRITE_PARK,   /* the job: PENDING until the signal or the deadline, attempt refunded
			       */
	PD_FLOW_WRITE_UNPARK, /* the job: dead-lettered (kind DEAD) */
};

struct pd_flow_write {
	enum pd_flow_write_kind kind;
	long long run;
	int step, attempts;
	const char *step_name, *step_kind; /* step_kind: "run", "sleep" or "wait_for" */
	const char *steps;		   /* JSON array: the step names the run now records */
	const char *output;		   /* STEP: JSON text */
	int output_is_text, output_truncated;
	long long ran_ms;     /* STEP: how long it ran (started_at = now - ran_ms) */
	long long sleep_ms;   /* STEP of a sleep: the next step is due this long after */
	int last;	      /* STEP: the run is complete: the job succeeds with output */
	const char *signal;   /* STEP: consumed from the mailbox; PARK: awaited */
	long long wait_ms;    /* PARK: how long to wait at most (from the first park); -1 ever */
	const char *next_key; /* STEP not last: the concurrency_key of the step the run moves
				 to, the job's from now on; NULL: none */
};

struct pd_outcome {
	enum pd_verdict kind;
	long long backoff_ms; /* RETRY; SNOOZE: the retry's, should the cap refuse it */
	long long snooze_ms;  /* SNOOZE: PENDING this long from now */
	long long snooze_cap; /* SNOOZE: a job snoozed this often already: a retry instead */
	const char *result;   /* SUCCEEDED: JSON text (jsonb can store it), or NULL */
	int result_is_text;   /* the handler's stdout was not JSON */
	int result_truncated;
	const char *error;	 /* last_error */
	const char *dead_reason; /* DEAD */
	const char *outcome;	 /* job_attempts.outcome */
	int exit_code;		 /* -1: none */
	int signal;		 /* 0: none */
	const char *stderr_tail;
	/*
	 * -1: the start is recorded (RUNNING). Else the job is still LEASED in
	 * the database and its handler started this many ms before the write:
	 * the outcome records the start too (started_at), in the same update.
	 */
	long long started_ago_ms;
	struct pd_flow_write flow; /* zeroed: not a workflow job's */
	unsigned hooks; /* the events (1 << enum pd_hook_event) the worker has a hook for */
};

/* One job's outcome in a batch. */
struct pd_job_outcome {
	long long id, token;
	struct pd_outcome o;
	/* set by pd_jobs_sync_collect */
	int applied; /* 0: not written now: fenced off, or written_before */
	/*
	 * not applied, not fenced: this outcome was written by an earlier send
	 * whose reply the lost connection took (the token's attempt has ended
	 * with a worker's outcome); not counted in writes_fenced
	 */
	int written_before;
	char state[16];	     /* the job's new state when applied */
	long long due_in_ms; /* PENDING: ms until its run_at; else -1 */
};

/*
 * One loop iteration's writes in one round trip (struct pd_trip, built by lib/trip:
 * pipeline mode, one transaction), in this order: the start records
 * (LEASED jobs whose handlers started: RUNNING, fenced), the progress notes
 * (jobs.progress, each fenced by its own token; before the outcomes, so
 * that a job's last note is stored with its end), the outcomes (each
 * fenced by its own token; the fenced-off ones counted in writes_fenced by
 * the same statement, and BLOCKED jobs unblocked by the successes), the
 * hook jobs of the outcomes written (pendulum.hook_jobs, sql/025: one per
 * event the outcome's hooks name and its new state fits), lease_lost
 * attempt records, the heartbeat (extend the leases, mark the
 * worker seen; each beat item's held set), and a claim of up to claim jobs,
 * straight into RUNNING with claim_start, else LEASED. Each part is skipped
 * when empty (the heartbeat unless beat). Statements are prepared once per
 * connection.
 */
enum pd_trip_kind {
	PD_TRIP_START,	 /* a LEASED job's handler started: RUNNING, fenced */
	PD_TRIP_OUTCOME, /* a finished job's outcome, or a ready job's release */
	PD_TRIP_LOST,	 /* an attempt ended by a lost lease: its lease_lost record */
	PD_TRIP_BEAT,	 /* a lease to extend */
	/* a held job's latest progress note to store, fenced */
	PD_TRIP_PROGRESS,
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
	int cancel;		   /* BEAT, out: held, and an operator asked to cancel its job */
	struct pd_job_outcome out; /* OUTCOME (out.id, out.token: id, token) */
	const char *text;	   /* PROGRESS: the note (valid until the trip is sent) */
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
	/* the progress notes among the items (PD_TRIP_PROGRESS) */
	int nprogress;
	/* the worker's: who claims, for how long, from which queues and types */
	const char *worker;
	long long lease_ms;
	const char *const *queues;
	int nqueues;
	const char *const *types; /* NULL: any */
	int ntypes;
	long long sent_us, sent_ms; /* pd_now_us(), pd_now_ms() at send */
	/*
	 * in and out, owned here and kept from trip to trip: where the last
	 * claim's round-robin across tenants stopped (claim_jobs_fair's
	 * cursor); NULL: from the start
	 */
	char *fair;
	/* out */
	struct pd_claimed *claimed; /* malloc'd: the caller takes the strings */
	int nclaimed;
	int fenced; /* outcomes fenced off */
	/* private to lib/jobs: the pipeline in flight */
	struct pd_db_stmt st[8];
	int nst, fi, bi, ci;
};

/* Append "{a,b,c}": field f of the items of kind k. */
void pd_trip_array(struct pd_buf *b, const struct pd_trip *t, enum pd_trip_kind k,
		   enum pd_trip_field f);

/*
 * The JSON parameters of t's statements (pd_jobs_sync_send), each empty
 * (len 0) when its statement is not sent, else a JSON array:
 *   notes     progress_sql's: {id, token, text} per progress note;
 *   flows     flow_sql's: the run write of each workflow job's outcome
 *             (struct pd_flow_write: act step, park or unpark);
 *   outcomes  finish_sql's: {id, token, kind, ...} per outcome, in the
 *             items' order, a member left out where its value is the
 *             column's default (NULL; false; a backoff of 0). kind is the
 *             verdict's ("succeeded", "retry", "dead", "release", "snooze",
 *             "cancel"), or a workflow step's: "advance" (the run goes on),
 *             "succeeded" (its last step), "wait" (parked);
 *   hooks     hooks_sql's: {id, token, events} of each outcome whose hooks
 *             name an event its kind may fire (dead_letter: retry, dead,
 *             release; failure: retry, dead; success: succeeded);
 *   back      finish_sql's $3: an outcome may give its job back to PENDING
 *             (any kind but succeeded, dead and cancel).
 * Text is quoted as pd_json_quote does (control characters escaped,
 * invalid UTF-8 and NUL as U+FFFD: the batch always parses); result,
 * steps and output are JSON text, put in as they are. Release with
 * pd_trip_json_release.
 */
struct pd_trip_json {
	struct pd_buf notes, flows, outcomes, hooks;
	int back;
};

void pd_trip_json(const struct pd_trip *t, struct pd_trip_json *j);
void pd_trip_json_release(struct pd_trip_json *j);

/*
 * One round trip in two halves (pd_db_pipeline_send/collect): send returns 0
 * or -1; collect 1 when the outs are filled, 0 while the results are on
 * their way, -1 on failure: then nothing was written (or, on 69, maybe all
 * was). s, and what its pointers point to, must stay valid between.
 */
int pd_jobs_sync_send(struct pd_db *db, struct pd_trip *s, struct pd_err *e);
int pd_jobs_sync_collect(struct pd_db *db, struct pd_trip *s, struct pd_err *e);
/* Collect, waiting for the results: 0, or -1 as collect fails. */
int pd_jobs_sync_wait(struct pd_db *db, struct pd_trip *s, struct pd_err *e);

/* A lease that expired: its job, its token and the worker that held it. */
struct pd_lease {
	long long id, token;
	char *owner;	   /* the worker id, "HOST:PID:TAG" (NULL if none was set) */
	char *host;	   /* the worker's row in pendulum.workers: NULL without one */
	int pid;	   /* the same row's pid; 0 without one */
	int dead;	   /* given back as DEAD_LETTERED rather than PENDING */
	long long over_ms; /* pd_jobs_expired: how long ago it expired (ms) */
};

void pd_leases_free(struct pd_lease *l, int n);

/*
 * Give expired leases back: PENDING, or DEAD_LETTERED when attempts are
 * exhausted or delivery is at-most-once; the lost attempt is recorded as
 * lease_expired. A job with a cancel request (sql/022) is CANCELLED
 * instead, its reason the request's, the attempt 'cancelled', the jobs
 * BLOCKED on it cancelled too (logged, counted neither requeued nor dead).
 * Counts what it did, and *out gets the leases it gave back (n of them,
 * malloc'd: pd_leases_free); out may be NULL. This is the statement alone:
 * pd_reap_pass() (reap.h) also deals with what the dead workers' handlers
 * left running.
 *
 * Which: the leases now[0..nnow) (still under that token) as soon as they
 * have expired; every other one once it has been expired for grace_ms
 * (0: every expired lease). The grace leaves the candidates of another
 * host the time to kill what a dead worker left there (reap.h). Each
 * lease is taken under its row lock and checked again: a pass that runs
 * late, or twice, gives nothing back twice.
 */
int pd_jobs_reap_leases(struct pd_db *db, const struct pd_lease *now, int nnow, long long grace_ms,
			int *requeued, int *dead, struct pd_lease **out, int *n, struct pd_err *e);

/*
 * The hook jobs (sql/025, pendulum.hook_jobs) of the leases l[0..n) that
 * pd_jobs_reap_leases gave back in this transaction (the caller's BEGIN):
 * for each, the events that hooks (pd_hooks_json's JSON) has for its job's
 * type; a dead letter fires dead_letter and failure, a job given back
 * PENDING failure. *made (may be NULL): how many hook jobs were made.
 */
int pd_jobs_reap_hooks(struct pd_db *db, const struct pd_lease *l, int n, const char *hooks,
		       int *made, struct pd_err *e);

/*
 * The leases that have expired and are not given back yet, at most the 1000
 * that pd_jobs_reap_leases would take first, each with its over_ms;
 * nothing is locked or changed.
 */
int pd_jobs_expired(struct pd_db *db, struct pd_lease **out, int *n, struct pd_err *e);

/*
 * Whether the lease (id, token) is still held: the job is LEASED or RUNNING
 * under that token and the lease has not expired. 1 held, 2 held with a
 * cancel request (sql/022), 0 lost, -1 error.
 */
int pd_jobs_lease_held(struct pd_db *db, long long id, long long token, struct pd_err *e);

/*
 * After a reconnect: give back the jobs leased to worker whose tokens are
 * none of tokens[0..n) (the leases the worker holds: runs in flight, ready
 * jobs, outcomes not written yet). Such a lease comes from a claim that
 * committed while its reply was lost with the connection: the worker never
 * saw the job, which would otherwise stay LEASED until the lease expired.
 * Each goes back as a graceful release does, in one statement: PENDING, due
 * now, the attempt refunded; an at-most-once job DEAD_LETTERED (as its
 * release, and its lease's expiry, would), what was BLOCKED on it with it.
 * The attempt is recorded as claim_lost. *released: how many; the ids are
 * logged.
 */
int pd_jobs_release_unheld(struct pd_db *db, const char *worker, const long long *tokens, int n,
			   int *released, struct pd_err *e);

/*
 * Register a worker (replacing a row with the same id), and remove it.
 * lease_ms is its lease: the row counts as gone once the worker has not been
 * seen for that long (pendulum.worker_states, sql/013).
 */
int pd_worker_register(struct pd_db *db, const char *id, const char *host, int pid,
		       const char *const *queues, int nqueues, const char *const *types, int ntypes,
		       int concurrency, long long lease_ms, struct pd_err *e);
int pd_worker_unregister(struct pd_db *db, const char *id, struct pd_err *e);

/*
 * The reap pass's sweep, one statement: move to PENDING the BLOCKED jobs
 * whose dependencies have all succeeded (normally done by the success
 * itself, pendulum.unblock_dependents; this catches the rest), waking their
 * queues, and *next_ms: the ms until the earliest lease held by anyone
 * expires (0: one already has), -1 when no job is leased. *unblocked (may
 * be NULL) counts the jobs unblocked. Reads no finished history (an index
 * of the BLOCKED rows and one of the leased ones).
 */
int pd_jobs_sweep(struct pd_db *db, long long *next_ms, int *unblocked, struct pd_err *e);

/*
 * The operator's statements. Each returns the rows it changed in *r (the
 * caller PQclear()s it; no row: nothing was in a state it works from).
 *
 * Replay job id (SUCCEEDED, DEAD_LETTERED or CANCELLED): back to PENDING,
 * or BLOCKED behind a dependency that has not SUCCEEDED, attempt 0,
 * replay_count + 1; with with_dependents, the dependents that failed or
 * were cancelled with it back to BLOCKED. Rows: id, job_type, state,
 * queue, replay_count, waits_for, waits_for_state, dependent (t for a
 * re-blocked dependent), the replayed job first.
 *
 * DLQ replay: the same for DEAD_LETTERED jobs, without dependents: the
 * nids ids (waiting for rows another session holds), or else the first
 * limit that match tenant, type and queue (NULL: any; rows another session
 * holds are skipped), oldest first.
 *
 * Cancel job id (PENDING or BLOCKED) with reason (dead_reason and
 * last_error), and the jobs BLOCKED on it, transitively; or, LEASED or
 * RUNNING, ask its worker to (sql/022: cancel_requested_at, cancel_reason,
 * a notification on pendulum_cancel naming the worker), which writes the
 * outcome. Row: id, job_type, state (CANCELLED, or still LEASED or
 * RUNNING: asked), queue, reason, the number of dependents cancelled, the
 * lease owner when asked (else NULL).
 */
int pd_jobs_replay(struct pd_db *db, long long id, int with_dependents, PGresult **r,
		   struct pd_err *e);
int pd_jobs_dlq_replay(struct pd_db *db, const long long *ids, int nids, const char *tenant,
		       const char *type, const char *queue, long long limit, PGresult **r,
		       struct pd_err *e);
int pd_jobs_cancel(struct pd_db *db, long long id, const char *reason, PGresult **r,
		   struct pd_err *e);

/*
 * pd-worker --until-settled: the first job of these queues and types
 * (types NULL: any) that keeps a worker serving them from being settled,
 * into *id, with its state and why into why (at least 64 bytes); *id 0
 * when there is none. Unsettled: LEASED or RUNNING (by anyone); PENDING
 * and due within horizon_ms (now, in a retry's backoff, or scheduled that
 * soon), unless one of its limit keys is paused; BLOCKED while none of its
 * dependencies is DEAD_LETTERED, CANCELLED or PENDING beyond the horizon.
 * Reads no finished history.
 */
int pd_jobs_unsettled(struct pd_db *db, const char *const *queues, int nqueues,
		      const char *const *types, int ntypes, long long horizon_ms, long long *id,
		      char *why, size_t whylen, struct pd_err *e);

#endif
