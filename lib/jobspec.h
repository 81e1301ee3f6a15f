/*
 * jobspec: a job as the user describes it (pd-enqueue's flags or one NDJSON
 * line), checked in C before anything reaches the database, and turned into
 * one canonical JSON object that the batch enqueue statement reads.
 */
#ifndef PD_JOBSPEC_H
#define PD_JOBSPEC_H

#include "buf.h"
#include "db.h"
#include "err.h"

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
	const long long *after; /* dependencies */
	int nafter;
};

void pd_jobspec_init(struct pd_jobspec *s);

/* "high" 10, "normal" 0, "low" -10, or an integer. Code 65 otherwise. */
int pd_priority_parse(const char *s, long long *out, struct pd_err *e);

/* Append s as a JSON object to b (the canonical form enqueue_batch reads). */
void pd_jobspec_json(const struct pd_jobspec *s, struct pd_buf *b);

/*
 * Enqueue the jobs in `array` (a JSON array of canonical objects, n of them)
 * with one statement; ids[i] and created[i] receive each job's id and
 * whether it was new. Runs in the caller's transaction, if any.
 */
int pd_enqueue_batch(struct pd_db *db, const char *array, int n, long long *ids, int *created,
		     struct pd_err *e);

#endif
