/*
 * enqueue: what pd-enqueue does, from its input to the ids.
 *
 * A batch is read and checked in C first (invalid JSON and bad keys are
 * reported with the input line; nothing reaches the database), then
 * enqueued all or nothing, in one transaction, by the bulk statement of
 * sql/009_enqueue_many.sql: a small batch as one JSON array passed to
 * pendulum.enqueue_many_ex, a large one copied (COPY FROM STDIN) into a
 * temporary staging table that pendulum.enqueue_staged reads; or, when no
 * job of a large batch has an idempotency key or a dependency and
 * pendulum.jobs has no row-level security, copied straight into
 * pendulum.jobs, its ids taken first, each job giving only the columns it
 * names: the table's defaults, the values of the bulk statement and of
 * enqueue_ex, fill the rest. Either way the ids come back in input order, a
 * repeated idempotency key (in the batch or already in the table) gives the existing job's id, and
 * each queue that got jobs is notified once.
 *
 * pd-enqueue --ndjson streams its input (pd_ndjson_read, pd_enqueue_stream):
 * memory stays bounded whatever the number of lines, because nothing grows
 * with it. The input is read into one buffer of fixed size, a batch of at
 * most PD_ENQUEUE_BATCH jobs at a time, whose jobs point into it; each
 * batch is enqueued inside the one open transaction (all or nothing, as
 * above: a bad line or a refused row rolls back the batches before it) and
 * then forgotten but for its ids, which go to an unnamed temporary file in
 * input order (10 million ids would not fit in 64 MiB as an array) and are
 * printed from it only after the commit. A payload over max_payload, or a
 * line that runs past max_payload plus PD_ENQUEUE_LINE_SLACK without a
 * newline, is refused with its line before more is read.
 *
 *   struct pd_enqueue q;
 *   pd_enqueue_init(&q);
 *   if (pd_enqueue_ndjson(&q, &defaults, in.data, in.len, &e) < 0 ||
 *       pd_enqueue_run(&q, &db, &e) < 0) ...
 *   for (int i = 0; i < q.n; i++) printf("%lld\n", q.ids[i]);
 *   pd_enqueue_release(&q);
 */
#ifndef PD_ENQUEUE_H
#define PD_ENQUEUE_H

#include "buf.h"
#include "db.h"
#include "err.h"
#include "handler.h"
#include "jobspec.h"

/* Batches of more jobs than this are copied into a staging table. */
#define PD_ENQUEUE_COPY_MIN 200

struct pd_enqueue {
	struct pd_jobspec *jobs; /* in input order */
	int *lines;		 /* jobs[i] is on input line lines[i] (0: not NDJSON) */
	int n, cap;
	struct pd_jobspec_mem mem; /* what the jobs point into, but for the input */
	long long *ids;		   /* after pd_enqueue_run: jobs[i]'s id */
	int *created;		   /* 1: new; 0: the job an idempotency key named */
	int notify_done; /* set before pd_enqueue_run: mark the jobs for pd_enqueue_wait */
	/*
	 * Set before jobs are added (the configuration's handlers): a job that
	 * gives no concurrency_key takes that of the handler of its type
	 * (pd_handler_find), if it has one. NULL: none.
	 */
	const struct pd_handler *handlers;
	int nhandlers;
};

void pd_enqueue_init(struct pd_enqueue *q);
void pd_enqueue_release(struct pd_enqueue *q);

/*
 * Read all of fd into b (NUL-terminated), one payload of at most
 * max_payload bytes (0: no limit): never more than max_payload + 1 bytes
 * are read. Code 65 on a read error, and for more than max_payload bytes:
 * "payload on stdin: more than 1048576 bytes, over max_payload 1MiB".
 */
int pd_enqueue_read(int fd, struct pd_buf *b, long long max_payload, struct pd_err *e);

/*
 * A payload of len bytes is at most max_payload (0: no limit): 0, else -1
 * with code 65 naming where: "PAYLOAD: 2000000 bytes, over max_payload 1MiB".
 */
int pd_enqueue_check_size(size_t len, long long max_payload, const char *where, struct pd_err *e);

/*
 * Check that text (len bytes) is one JSON value. Code 65 naming where, the
 * line and the column: "invalid JSON in PAYLOAD at line 1, column 6: ...".
 */
int pd_enqueue_check_json(const char *text, size_t len, const char *where, struct pd_err *e);

/*
 * One job: defaults with the payload text (len bytes, not NUL-terminated),
 * checked to be JSON; NULL, or with blank_is_empty nothing but white space,
 * is {}. where names the text in errors ("PAYLOAD", "stdin"). The text must
 * outlive q.
 */
int pd_enqueue_one(struct pd_enqueue *q, const struct pd_jobspec *defaults, const char *text,
		   size_t len, const char *where, int blank_is_empty, struct pd_err *e);

/*
 * Jobs from NDJSON text (len bytes, which must outlive q): one job a line,
 * blank lines skipped. With defaults->type set each line is a payload,
 * otherwise an object of job keys (pd_jobspec_parse) over the defaults.
 * Errors name the line, code 65: "invalid JSON on stdin line 3, column 7:
 * ...", "stdin line 2: unknown key 'x'", "no jobs on stdin".
 */
int pd_enqueue_ndjson(struct pd_enqueue *q, const struct pd_jobspec *defaults, const char *text,
		      size_t len, struct pd_err *e);

/*
 * Streamed NDJSON (pd-enqueue --ndjson): the input is read from fd into
 * one buffer of fixed size, PD_ENQUEUE_BATCH_BYTES plus the longest line
 * allowed (max_payload plus PD_ENQUEUE_LINE_SLACK for a job's other keys),
 * a batch of at most PD_ENQUEUE_BATCH jobs at a time; the jobs of a batch
 * point into it, so the memory used does not grow with the input.
 *
 *   pd_ndjson_init(&nd, 0, &defaults, max_payload);
 *   if (pd_ndjson_read(&nd, &q, PD_ENQUEUE_BATCH, &e) < 0) ...   (checked, no database yet)
 *   if (nd.done) pd_enqueue_run(&q, &db, &e);                      (it all fit in one batch)
 *   else pd_enqueue_stream(&nd, &q, &db, each, ctx, &e);
 *   pd_ndjson_release(&nd);
 */
#define PD_ENQUEUE_BATCH       (20 * 1000)
#define PD_ENQUEUE_BATCH_BYTES (4 * 1024 * 1024)
#define PD_ENQUEUE_LINE_SLACK  (64 * 1024)

struct pd_ndjson {
	int fd;
	const struct pd_jobspec *defaults; /* as for pd_enqueue_ndjson */
	long long max_payload;		   /* 0: no limit */
	char *buf;			   /* cap bytes, never moved */
	size_t cap, len, pos;		   /* bytes held; bytes of them consumed */
	size_t line_max;		   /* longer lines are refused */
	int line;			   /* lines consumed */
	long long jobs;			   /* jobs read so far */
	int eof;			   /* fd is at its end */
	int done;			   /* every line consumed */
};

void pd_ndjson_init(struct pd_ndjson *nd, int fd, const struct pd_jobspec *defaults,
		    long long max_payload);
void pd_ndjson_release(struct pd_ndjson *nd);

/*
 * Replace q's jobs with the next ones of nd's input, at most limit of
 * them: 0, with nd->done set once the input has no more. The jobs point
 * into nd's buffer until the next call. Code 65 as pd_enqueue_ndjson's
 * (and "no jobs on stdin" when the whole input holds none), or for a line
 * over the limit: "stdin line 4: more than 1114112 bytes, over max_payload
 * 1MiB" (the line is not read to its end), "stdin line 4: payload of
 * 1500000 bytes, over max_payload 1MiB".
 */
int pd_ndjson_read(struct pd_ndjson *nd, struct pd_enqueue *q, int limit, struct pd_err *e);

/*
 * Enqueue q's jobs and the rest of nd's input (q holds its first batch,
 * nd->done is not set) all or nothing, in one transaction: each batch
 * goes in as pd_enqueue_run's large batches do (straight into
 * pendulum.jobs, else through the staging table, truncated between
 * batches), and its ids are written to a temporary file, not kept in
 * memory. After the commit, each is called with every job in input order
 * (created 0: the job an idempotency key named, of tenant tenant); a
 * negative return stops the calls and is returned, e filled. Errors as
 * pd_enqueue_run's, naming the input line; nothing is enqueued then.
 */
int pd_enqueue_stream(struct pd_ndjson *nd, struct pd_enqueue *q, struct pd_db *db,
		      int (*each)(void *ctx, long long id, int created, const char *tenant,
				  struct pd_err *e),
		      void *ctx, struct pd_err *e);

/*
 * Enqueue q's jobs in one transaction of their own, all or nothing; fills
 * q->ids and q->created. With q->notify_done (at most PD_ENQUEUE_COPY_MIN
 * jobs) the same transaction marks them for pd_enqueue_wait. Codes: 2 when a dependency does not
 * exist, 65 when the database refuses a value (naming the input line when it can), 69, 70.
 */
int pd_enqueue_run(struct pd_enqueue *q, struct pd_db *db, struct pd_err *e);

/* The exit status of pd-enqueue --wait-timeout when the job has not ended: timeout(1)'s. */
#define PD_ENQUEUE_TIMED_OUT 124

/* How a job ended (pd_enqueue_wait). */
struct pd_enqueue_end {
	char state[16]; /* its state when the wait returned */
	int succeeded;	/* else DEAD_LETTERED or CANCELLED */
	int cancelled;	/* CANCELLED */
	char *result;	/* SUCCEEDED: the result as text (compact JSON, or the handler's
			   output when it was not JSON), or NULL when it wrote nothing */
	int result_is_text;
	char *reason;	  /* dead_reason, "" if none */
	char *last_error; /* "" if none */
	char *tail;	  /* the first line of the last attempt's stderr tail, "" if none */
	int status;	  /* the exit status to report: 0, the last attempt's exit status,
			     128 + its signal, or 1 */
};

/*
 * A failed attempt of the job waited for that is followed by another try
 * (pd_enqueue_wait's failed): not the attempt that ended the job, which
 * the end describes.
 */
struct pd_enqueue_failure {
	int attempt;	   /* its number, 1-based (a workflow step's attempts count anew) */
	int max_attempts;  /* the job's */
	const char *cause; /* "exit 7", "killed by signal 9 (Killed)", "timeout after 2s",
			      "lease expired ...": the job's last_error for its latest
			      attempt, else made from the attempt row */
	const char *step;  /* a workflow run's job: the step it ran, or NULL */
	const char *tail;  /* the first line of its stderr tail, or NULL */
	long long next_ms; /* until the next try from now when that is ahead, else how
			      long after the failure it came; -1: not known */
	int snoozed;	   /* the handler snoozed it (no attempt used): cause is moot */
};

/* How pd_enqueue_wait waits. */
struct pd_enqueue_waiting {
	long long timeout_ms; /* give up after this long; -1: never */
	long long warn_ms;    /* from this long on, ask whether a live worker serves the job */
	long long poll_ms;    /* read the job at least this often, notified or not */
	int marked;	      /* the job is marked already (pendulum.wait_job, sql/013) */
	/* Called at most once, when the job is PENDING and no live worker serves it. */
	void (*unserved)(void *ctx, long long id, const char *queue, const char *type);
	/* Called once per failed attempt, in order (NULL: not read at all). */
	void (*failed)(void *ctx, long long id, const struct pd_enqueue_failure *f);
	void *ctx;
	/* Called with each progress note read that differs from the last (NULL: not read). */
	void (*progress)(void *ctx, long long id, const char *note);
};

#define PD_ENQUEUE_WAITING_INIT                                                                    \
	{                                                                                          \
		-1, 3000, 1000, 0, NULL, NULL, NULL                                                \
	}

/*
 * Wait until job id ends (SUCCEEDED, DEAD_LETTERED, CANCELLED) and fill end:
 * 0. Listens on pendulum_done, marks the job unless w->marked (better
 * marked when it is enqueued: struct pd_enqueue's notify_done, pd_flow_start's notify_done),
 * and between reads sleeps until notified or w->poll_ms has passed, whatever
 * the job's state: one statement a read, which also reports the failed
 * attempts since the last read (w->failed). Returns 1 when w->timeout_ms
 * passed first (end->state says where the job is), -1 with e filled: code 2
 * if the job does not exist, 69, 70.
 */
int pd_enqueue_wait(struct pd_db *db, long long id, const struct pd_enqueue_waiting *w,
		    struct pd_enqueue_end *end, struct pd_err *e);

/*
 * On a session that LISTENs on pendulum_done (pd_db_listener's; NULL,
 * poll-only behind a pooler without listen_url: only waits for the
 * deadline): until deadline (pd_now_ms), wait for
 * pg_notify('pendulum_done', id) of one of the n ids (a job marked by
 * pendulum.wait_job has ended): 1 when one came, 0 at the deadline, -1
 * with e filled (69) when the connection is lost.
 */
int pd_enqueue_await(struct pd_db *db, const long long *ids, int n, long long deadline,
		     struct pd_err *e);
void pd_enqueue_end_release(struct pd_enqueue_end *end);

/* The rows of pendulum.jobs of ids[0..n) as JSON text, one row each in that order. */
int pd_enqueue_rows(struct pd_db *db, const long long *ids, int n, PGresult **res,
		    struct pd_err *e);

#endif
