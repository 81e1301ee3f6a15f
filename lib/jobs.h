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

struct pd_claimed {
	long long id, token;
	int attempt, max_attempts, replay_count;
	long long timeout_ms; /* -1: none set on the job */
	char *type, *queue, *tenant, *payload, *run_at, *idempotency_key, *traceparent;
};

/*
 * Claim up to limit runnable jobs of these queues and types (types NULL:
 * any type) for worker, with a lease of lease_ms, in the order priority
 * DESC, run_at, id across the queues. One statement (pendulum.claim_jobs, an
 * index walk whatever the backlog): SKIP LOCKED, new tokens from the
 * sequence, attempt + 1, an attempt row each. start nonzero: the jobs go
 * straight to RUNNING with started_at = now() (the caller starts their
 * handlers at once, no pd_jobs_start); zero: LEASED, started_at NULL.
 * *out (in that order) is malloc'd (free with pd_claimed_free).
 */
int pd_jobs_claim(struct pd_db *db, const char *worker, const char *const *queues, int nqueues,
		  const char *const *types, int ntypes, int limit, long long lease_ms, int start,
		  struct pd_claimed **out, int *n, struct pd_err *e);
void pd_claimed_free(struct pd_claimed *c, int n);

/*
 * LEASED -> RUNNING for n jobs (ids[i] with tokens[i]), fenced, in one
 * statement. Returns how many were applied (the rest were fenced off and
 * counted), or -1.
 */
int pd_jobs_start(struct pd_db *db, const long long *ids, const long long *tokens, int n,
		  struct pd_err *e);

enum pd_finish_kind {
	PD_FINISH_SUCCEEDED, /* exit 0 */
	PD_FINISH_RETRY,     /* retryable failure: PENDING after backoff, or dead when exhausted */
	PD_FINISH_DEAD,	     /* terminal failure */
	PD_FINISH_RELEASE,   /* graceful release: PENDING now, attempt refunded */
};

struct pd_outcome {
	enum pd_finish_kind kind;
	long long backoff_ms; /* RETRY */
	const char *result;   /* SUCCEEDED: JSON text, or NULL */
	int result_is_text;   /* the handler's stdout was not JSON */
	int result_truncated;
	const char *error;	 /* last_error */
	const char *dead_reason; /* DEAD */
	const char *outcome;	 /* job_attempts.outcome */
	int exit_code;		 /* -1: none */
	int signal;		 /* 0: none */
	const char *stderr_tail;
};

/*
 * Record an outcome, fenced. *state (at least 16 bytes) gets the job's new
 * state. Returns 1 applied, 0 fenced off (counted), -1 error.
 */
int pd_jobs_finish(struct pd_db *db, long long id, long long token, const struct pd_outcome *o,
		   char *state, struct pd_err *e);

/*
 * Extend the leases of the jobs this worker holds (ids[i] with tokens[i])
 * and mark the worker seen. held[i] is set to 1 for each lease still held,
 * 0 for each lost.
 */
int pd_jobs_heartbeat(struct pd_db *db, const char *worker, const long long *ids,
		      const long long *tokens, int n, long long lease_ms, int *held,
		      struct pd_err *e);

/*
 * Give expired leases back: PENDING, or DEAD_LETTERED when attempts are
 * exhausted or delivery is at-most-once; the lost attempt is recorded as
 * lease_expired. Also unblocks BLOCKED jobs whose dependencies all
 * succeeded. Counts what it did.
 */
int pd_jobs_reap(struct pd_db *db, int *requeued, int *dead, struct pd_err *e);

/*
 * Whether the lease (id, token) is still held: the job is LEASED or RUNNING
 * under that token and the lease has not expired. 1 held, 0 lost, -1 error.
 */
int pd_jobs_lease_held(struct pd_db *db, long long id, long long token, struct pd_err *e);

/* Register a worker (replacing a row with the same id), and remove it. */
int pd_worker_register(struct pd_db *db, const char *id, const char *host, int pid,
		       const char *const *queues, int nqueues, const char *const *types, int ntypes,
		       int concurrency, struct pd_err *e);
int pd_worker_unregister(struct pd_db *db, const char *id, struct pd_err *e);

/* Append a PostgreSQL array literal of strings ({"a","b"}) to b. */
void pd_pg_array(struct pd_buf *b, const char *const *v, int n);

#endif
