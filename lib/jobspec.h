/*
 * jobspec: a job as the user describes it (pd-enqueue's flags or one NDJSON
 * line), checked in C before anything reaches the database, and written in
 * the two forms the bulk statement of sql/009_enqueue_many.sql reads: an
 * element of the JSON array pendulum.enqueue_many_ex takes, or a COPY row of
 * the staging table pendulum.enqueue_staged reads (pendulum.job_input).
 */
#ifndef PD_JOBSPEC_H
#define PD_JOBSPEC_H

#include <stddef.h>

#include "buf.h"
#include "err.h"
#include "json.h"

/* A job's attempts when it names none: the default of sql/014 (pd-worker(1), Retries). */
#define PD_JOBSPEC_MAX_ATTEMPTS 25

struct pd_jobspec {
	const char *type;
	const char *payload; /* raw JSON text, already validated */
	size_t payload_len;
	const char *tenant; /* NULL = default */
	const char *queue;  /* NULL = default */
	int has_priority;
	long long priority;
	long long run_at_us; /* epoch microseconds; 0 = now */
	int has_run_at;
	long long delay_ms; /* -1 = none */
	const char *idempotency_key;
	long long max_attempts; /* 0 = default */
	long long timeout_ms;	/* -1 = none */
	const char *delivery;	/* NULL = at-least-once */
	const char *traceparent;
	const long long *after; /* depends_on: job ids */
	int nafter;
	const char *concurrency_key; /* the limit key it counts against (sql/020); NULL: none */
	/* never started after: an instant (has_start_by), or a duration from now (>= 0) */
	int has_start_by;
	long long start_by_us;
	long long start_by_ms; /* -1 = none */
};

/*
 * The memory a batch of jobspecs points into (strings, dependency lists):
 * each block kept is freed by release.
 */
struct pd_jobspec_mem {
	void **p;
	size_t n, cap;
};

#define PD_JOBSPEC_MEM_INIT                                                                        \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

void pd_jobspec_mem_release(struct pd_jobspec_mem *m);

void pd_jobspec_init(struct pd_jobspec *s);

/*
 * A concurrency key (what names it in the message, e.g. "--key"): a name
 * (pd_name_check), not empty, not beginning with one of the prefixes
 * reserved for the limits of a queue, a tenant and a type ("queue:",
 * "tenant:", "type:"). NULL passes. Code 65 otherwise: "invalid --key
 * 'queue:x': the prefixes queue:, tenant: and type: are reserved (...)".
 * The SQL twin is pendulum.check_concurrency_key (sql/021).
 */
int pd_concurrency_key_check(const char *what, const char *key, struct pd_err *e);

/*
 * A start deadline as --start-by and the NDJSON key start_by give it: a
 * duration from now ("10m", pd_dur_parse) or an instant (pd_instant_parse),
 * into s. Code 65 otherwise: "invalid start deadline 'x': expected a
 * duration (...) or an ISO 8601 time with Z or an offset".
 */
int pd_start_by_parse(const char *v, struct pd_jobspec *s, struct pd_err *e);

/*
 * s's start deadline, if it has one, is after its run_at (run_at or now,
 * plus delay), now_us being now in microseconds since the epoch: 0. Code
 * 65 otherwise: "start deadline 2026-…Z is not after the job's run_at
 * 2026-…Z (it could never start)". Two instants, or two durations from now,
 * compare exactly; a mix is compared at now_us (the database checks it
 * again at its own now, sql/026).
 */
int pd_jobspec_check_start_by(const struct pd_jobspec *s, long long now_us, struct pd_err *e);

/* Now on the wall clock, in microseconds since the epoch. */
long long pd_jobspec_wall_us(void);

/* "high" 10, "normal" 0, "low" -10, or an integer. Code 65 otherwise. */
int pd_priority_parse(const char *s, long long *out, struct pd_err *e);

/*
 * Read the JSON object of j's root token (one NDJSON line) into s, which
 * holds the defaults: the keys of pendulum.enqueue_many (type, payload,
 * tenant, queue, priority, run_at, delay, idempotency_key, max_attempts,
 * timeout, delivery, traceparent, depends_on, concurrency_key, start_by) override
 * them, a null value
 * counts as absent, any other key is an error. The strings and lists s
 * then points to are kept in mem; the payload points into j's source.
 * Code 65 with "unknown key 'x'", "key 'x': why", "missing key 'type' ...".
 */
int pd_jobspec_parse(const struct pd_json *j, struct pd_jobspec *s, struct pd_jobspec_mem *mem,
		     struct pd_err *e);

/* Append s as one object of the JSON array pendulum.enqueue_many takes. */
void pd_jobspec_json(const struct pd_jobspec *s, struct pd_buf *b);

/*
 * Append s as one line of COPY text format for the staging table (the
 * columns of pendulum.job_input, ord first), NULLs as \N.
 */
void pd_jobspec_copy(const struct pd_jobspec *s, int ord, struct pd_buf *b);

/* The columns of pendulum.jobs a job may leave to the table's defaults (pd_jobspec_copy_job). */
enum pd_jobspec_col {
	PD_JOBSPEC_COL_TENANT = 1 << 0,
	PD_JOBSPEC_COL_QUEUE = 1 << 1,
	PD_JOBSPEC_COL_PRIORITY = 1 << 2,
	PD_JOBSPEC_COL_RUN_AT = 1 << 3, /* run_at or a delay */
	PD_JOBSPEC_COL_MAX_ATTEMPTS = 1 << 4,
	PD_JOBSPEC_COL_DELIVERY = 1 << 5,
	PD_JOBSPEC_COL_NCOLS = 6,
};

/* The columns of enum pd_jobspec_col that s gives, as bits. */
unsigned pd_jobspec_given(const struct pd_jobspec *s);

/*
 * The column list of a COPY into pendulum.jobs of jobs that give the columns
 * cols: "(id, job_type, payload, timeout, traceparent, concurrency_key,
 * start_by" and those of cols,
 * in the order pd_jobspec_copy_job writes them.
 */
void pd_jobspec_copy_cols(unsigned cols, struct pd_buf *b);

/*
 * Append s as one line of COPY text format straight into pendulum.jobs, for
 * a job with no idempotency key and no dependency whose id was taken: id,
 * its type, payload, timeout, traceparent, concurrency_key and start_by,
 * and the columns of cols
 * (pd_jobspec_given(s)); the table's defaults fill the rest as they fill a
 * job of pendulum.enqueue_ex (state PENDING, sql/002 and sql/014). run_at
 * is the instant already resolved (run_at or now, plus delay), as text;
 * start_by's is resolved against now_us.
 */
void pd_jobspec_copy_job(const struct pd_jobspec *s, long long id, unsigned cols,
			 const char *run_at, long long now_us, struct pd_buf *b);

#endif
