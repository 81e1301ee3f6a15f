/*
 * admin: the queries behind pd-admin's subcommands and the columns they
 * show, rendered through render (a table, or JSON lines with --json).
 *
 * Every pd_admin_* call appends what the command prints to out and never
 * writes to stdout itself; on -1 out may still hold the rows that were done
 * (a bulk replay that skipped some ids) and e says what was not.
 */
#ifndef PD_ADMIN_H
#define PD_ADMIN_H

#include <stddef.h>

#include "buf.h"
#include "db.h"
#include "render.h"

/*
 * Parse a job state name, case-insensitively, into its canonical upper-case
 * spelling (a static string). NULL when s names no state.
 */
const char *pd_admin_state(const char *s);

/* The same among names (NULL-terminated): the entry s names, or NULL. */
const char *pd_admin_state_in(const char *const *names, const char *s);

/* Parse a job id (a positive integer); code 64 "invalid job id 'x'". */
int pd_admin_id(const char *s, long long *id, struct pd_err *e);

/* The same for what: "invalid message id 'x'" (what "message"). */
int pd_admin_parse_id(const char *s, const char *what, long long *id, struct pd_err *e);

/* Parse an outbox state name (PENDING, PUBLISHED, DEAD_LETTERED) as pd_admin_state does. */
const char *pd_admin_outbox_state(const char *s);

/* Filters and paging of `jobs` and `dlq list`; NULL or 0 fields are unset. */
struct pd_admin_filter {
	const char *states[8]; /* canonical names (pd_admin_state) */
	int nstates;
	const char *tenant, *type, *queue;
	long long limit, offset;
	const char *topic;    /* outbox list */
	const char *workflow; /* flow runs */
};

/*
 * `jobs`: matching jobs, newest (highest id) first, then "1-50 of 1234 jobs"
 * in a table. A PENDING job that no live worker serves (pendulum.served)
 * says so in its note ("no live worker serves type T in queue Q"; JSON:
 * "unserved": true).
 */
int pd_admin_jobs(struct pd_db *db, const struct pd_admin_filter *f, const struct pd_fmt *fmt,
		  struct pd_buf *out, struct pd_err *e);

/* `job show`: every field, the result and the attempt chain. Code 2 when absent. */
int pd_admin_job_show(struct pd_db *db, long long id, const struct pd_fmt *fmt, struct pd_buf *out,
		      struct pd_err *e);

/*
 * `job replay`: SUCCEEDED, DEAD_LETTERED or CANCELLED -> PENDING now (BLOCKED
 * when one of its dependencies has not SUCCEEDED, with a line naming it), in
 * one guarded statement: attempt 0, replay_count + 1, lease, result, errors
 * and finished_at cleared (the attempt chain keeps the history), workers
 * woken with NOTIFY. with_dependents: the jobs its failure was propagated to
 * (failed_dependency, sql/012), transitively, go back to BLOCKED in the same
 * statement. Code 1 naming the current state otherwise, 2 when absent.
 */
int pd_admin_job_replay(struct pd_db *db, long long id, int with_dependents,
			const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/*
 * `job cancel`: PENDING or BLOCKED -> CANCELLED, finished now, dead_reason
 * and last_error set to reason (NULL: "cancelled by operator"); the jobs
 * BLOCKED on it, transitively, CANCELLED too ("dependency N cancelled").
 * Code 1 naming the current state otherwise, 2 when absent.
 */
int pd_admin_job_cancel(struct pd_db *db, long long id, const char *reason,
			const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/* `dlq list`: dead letters, most recently dead first, with the reason (states ignored). */
int pd_admin_dlq_list(struct pd_db *db, const struct pd_admin_filter *f, const struct pd_fmt *fmt,
		      struct pd_buf *out, struct pd_err *e);

/*
 * `dlq replay`: replay the dead letters ids[0..nids) or, with nids == 0, up
 * to f->limit of those matching f, the longest dead first. Each as in
 * pd_admin_job_replay, all in one statement. Ids that were not replayed make
 * it return -1 (code 2 if one is absent, else 1) after the others were.
 */
int pd_admin_dlq_replay(struct pd_db *db, const long long *ids, int nids,
			const struct pd_admin_filter *f, const struct pd_fmt *fmt,
			struct pd_buf *out, struct pd_err *e);

/* `dlq delete`: delete these dead letters (and their attempts); the rest as dlq replay. */
int pd_admin_dlq_delete(struct pd_db *db, const long long *ids, int nids, const struct pd_fmt *fmt,
			struct pd_buf *out, struct pd_err *e);

/*
 * `dlq purge`: delete the dead letters of queue (NULL: every queue) that
 * died more than older_ms ago; with dry_run count them only.
 */
int pd_admin_dlq_purge(struct pd_db *db, long long older_ms, const char *queue, int dry_run,
		       const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/* `queues`: per queue, jobs by state, runnable ones, and the oldest runnable job's age. */
int pd_admin_queues(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		    struct pd_err *e);

/*
 * `depth`: the number of jobs of queue in state (NULL: PENDING); with
 * runnable, only PENDING jobs whose run_at has come. A bare number.
 */
int pd_admin_depth(struct pd_db *db, const char *queue, const char *state, int runnable,
		   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/*
 * `workers`: registered workers, each live or gone (pendulum.worker_states:
 * not seen within its lease); a gone worker's slots are not busy. stale_ms
 * >= 0 replaces every worker's lease as the window (--stale).
 */
int pd_admin_workers(struct pd_db *db, long long stale_ms, const struct pd_fmt *fmt,
		     struct pd_buf *out, struct pd_err *e);

/*
 * `leaders`: the elected roles (pendulum.leaders: the ticker, the reaper),
 * each with its holder (a daemon id, "host:pid:random"), its token (up by
 * one each time the role changed hands), the seconds until it expires and
 * held or expired (an expired role goes to the next candidate that asks).
 */
int pd_admin_leaders(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		     struct pd_err *e);

/*
 * `outbox stats`: per topic, messages in each state and the age of the
 * oldest PENDING message (since it was recorded), from pd_summary_outbox_sql.
 */
int pd_admin_outbox_stats(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
			  struct pd_err *e);

/*
 * `outbox list`: outbox messages matching f (states are outbox states;
 * tenant and topic; type and queue ignored), newest (highest id) first,
 * then "1-50 of 1234 messages" in a table; JSON rows carry the total.
 */
int pd_admin_outbox_list(struct pd_db *db, const struct pd_admin_filter *f,
			 const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/*
 * `outbox replay`: the DEAD_LETTERED messages ids[0..nids) -> PENDING, in
 * one guarded statement: attempts 0, replay_count + 1, next_attempt_at
 * now(), claim, errors and dead_lettered_at cleared, pd-relay woken with
 * pg_notify('pendulum_outbox', topic). Ids that were not replayed make it
 * return -1 after the others were: code 2 if one is absent, else 1, naming
 * each one's state.
 */
int pd_admin_outbox_replay(struct pd_db *db, const long long *ids, int nids,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/*
 * `outbox delete`: delete the DEAD_LETTERED messages ids[0..nids) in one
 * transaction, all or nothing: when one of them is absent (code 2) or not
 * DEAD_LETTERED (code 1, naming its state) nothing is deleted. Deleting a
 * key's dead head hands the key to its next message (sql/006). The outbox's
 * metrics are gauges and the fenced-writes counter (pendulum.counters), so
 * no _total series goes down.
 */
int pd_admin_outbox_delete(struct pd_db *db, const long long *ids, int nids,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/* `outbox purge`: delete the dead letters dead more than older_ms ago (of topic, NULL: any). */
int pd_admin_outbox_purge(struct pd_db *db, long long older_ms, const char *topic, int dry_run,
			  const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/*
 * `flow runs`: the workflow runs matching f (states are run states, as
 * pendulum.workflow_run_states names them; tenant, workflow, and queue of
 * the run's job; type ignored), newest (highest id) first, with the step
 * each is at, then "1-50 of 1234 runs" in a table; JSON rows carry the total.
 */
int pd_admin_flow_runs(struct pd_db *db, const struct pd_admin_filter *f, const struct pd_fmt *fmt,
		       struct pd_buf *out, struct pd_err *e);

/*
 * `flow show`: the run (state, position, job, input, ...), then one row per
 * step: index, name, kind, state (done, pending, or for the step at the
 * position the run's state in lower case: running, waiting, sleeping, dead,
 * cancelled), attempts, start, finish, output. Code 2 when absent.
 */
int pd_admin_flow_show(struct pd_db *db, long long run, const struct pd_fmt *fmt,
		       struct pd_buf *out, struct pd_err *e);

/*
 * `flow signal`: pd_flow_signal (same codes), then whether it woke the run.
 */
int pd_admin_flow_signal(struct pd_db *db, long long run, const char *name, const char *payload,
			 const char *where, const struct pd_fmt *fmt, struct pd_buf *out,
			 struct pd_err *e);

/*
 * `flow cancel`: cancel the run's job as pd_admin_job_cancel does (PENDING
 * or BLOCKED only): code 2 when the run is absent, 1 naming the job's state.
 */
int pd_admin_flow_cancel(struct pd_db *db, long long run, const char *reason,
			 const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/*
 * `tenant grant ROLE TENANT`: role ROLE (and its members) sees and writes
 * TENANT's rows (pendulum.tenant_members, sql/019); granting it again
 * changes nothing. Code 2 when no role is named ROLE, 65 for a bad tenant
 * name.
 */
int pd_admin_tenant_grant(struct pd_db *db, const char *role, const char *tenant,
			  const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/* `tenant revoke ROLE TENANT`: the grant undone; code 2 when there was none. */
int pd_admin_tenant_revoke(struct pd_db *db, const char *role, const char *tenant,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/*
 * `tenant list [ROLE]`: the grants (of ROLE; code 2 when no role has that
 * name) by role, then tenant, with when each was made.
 */
int pd_admin_tenant_list(struct pd_db *db, const char *role, const struct pd_fmt *fmt,
			 struct pd_buf *out, struct pd_err *e);

/* --- fair shares and limits (sql/020) --- */

/*
 * A rate "N/PERIOD" (100/1m, 20/2s): N 1 to 10000, PERIOD a duration (dur)
 * above 0 and at most 1d. Errors name opt: code 64 for the shape, N out of
 * range or a zero PERIOD, 65 for a PERIOD beyond 1d (a value's range).
 */
int pd_admin_parse_rate(const char *opt, const char *s, long long *n, long long *period_ms,
			struct pd_err *e);

/*
 * A limit key as pendulum.check_limit_key takes it: a name (pd_name_check,
 * 65), not empty (64), and not a reserved prefix alone, 'queue:', 'tenant:'
 * or 'type:' (65).
 */
int pd_admin_limit_key_check(const char *key, struct pd_err *e);

/* What `limit set` changes: the fields whose _set is 1. */
struct pd_admin_limit {
	int concurrency_set, rate_set;
	long long concurrency; /* -1: no cap (none) */
	long long rate;	       /* 0: no rate (none) */
	long long period_ms;
};

/*
 * `limit set KEY`: pendulum.limit_concurrency and/or limit_rate in one
 * transaction, then the key's row as `limits` shows it, or a line saying
 * it caps nothing (its row is gone). Code 65 for what the server refuses.
 */
int pd_admin_limit_set(struct pd_db *db, const char *key, const struct pd_admin_limit *l,
		       const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/* `limit unset KEY`: pendulum.limit_unset; code 2 when there was no limit on KEY. */
int pd_admin_limit_unset(struct pd_db *db, const char *key, const struct pd_fmt *fmt,
			 struct pd_buf *out, struct pd_err *e);

/*
 * `limits`: one row a key (pendulum.limit_status), by key byte-wise: KEY,
 * CONCURRENCY, RUNNING, RATE (N/PERIOD), WINDOW (starts in the period /
 * rate), WAITING (jobs parked on it), PAUSED; JSON adds rate, period_s,
 * window_used and updated_at as numbers and an instant.
 */
int pd_admin_limits(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		    struct pd_err *e);

/*
 * `queue pause|resume`: pendulum.limit_pause(kind:name, pause), kind
 * "queue" or "type", and whether that changed anything.
 */
int pd_admin_pause(struct pd_db *db, const char *kind, const char *name, int pause,
		   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/* `tenant set TENANT --weight N`: pendulum.set_tenant_weight (weight 0: back to 1). */
int pd_admin_tenant_weight(struct pd_db *db, const char *tenant, int weight,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e);

/* `tenants`: the tenants whose weight was set (the others have 1), by tenant byte-wise. */
int pd_admin_tenants(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		     struct pd_err *e);

/* `wait`: how the jobs waited for stand (pd_admin_wait_count). */
struct pd_admin_waited {
	long long jobs;	      /* those that match */
	long long unfinished; /* PENDING, BLOCKED, LEASED or RUNNING */
	long long succeeded, dead_lettered, cancelled;
	long long finished_since; /* not full: those finished at or after since */
	char failed[200];	  /* the first dead-lettered or cancelled ids, "7, 9" */
	char since[40];		  /* the database's now() at the count */
};

/*
 * `wait`, before waiting: code 2 naming the first of ids[0..nids) that does
 * not exist; the unfinished ones marked (pendulum.wait_job's notify_done)
 * so that pd_enqueue_await hears of their end.
 */
int pd_admin_wait_mark(struct pd_db *db, const long long *ids, int nids, struct pd_err *e);

/*
 * `wait`: the jobs among ids[0..nids) (nids 0: any) that match f's tenant,
 * type and queue. full: every one counted (reads their finished history);
 * else only the unfinished ones and those that finished at or after
 * w->since (an index of the finished rows by state and time).
 */
int pd_admin_wait_count(struct pd_db *db, const long long *ids, int nids,
			const struct pd_admin_filter *f, int full, struct pd_admin_waited *w,
			struct pd_err *e);

#endif
