/*
 * prune: delete finished history older than its retention (pendulum.yaml
 * retention:, struct pd_retention), in bounded batches: each batch is one
 * call of pendulum.prune (sql/011), one statement in its own short
 * transaction deleting at most `batch` rows of one kind, oldest first,
 * skipping rows another session holds. Jobs take their attempts and
 * workflow runs with them, and what they counted in the metrics goes into
 * pendulum.retired_metrics in the same transaction, so no _total series
 * goes down. PENDING, BLOCKED, LEASED and RUNNING jobs are never touched,
 * nor a finished job that a BLOCKED job depends on.
 */
#ifndef PD_PRUNE_H
#define PD_PRUNE_H

#include "config.h"
#include "db.h"

/* The kinds, in the order they are pruned and reported. */
enum pd_prune_kind {
	PD_PRUNE_SUCCEEDED,
	PD_PRUNE_CANCELLED,
	PD_PRUNE_DEAD_LETTERED,
	PD_PRUNE_OUTBOX_PUBLISHED,
	PD_PRUNE_WORKERS_GONE,
	PD_PRUNE_NKINDS
};

/* Their names, as in retention: and pendulum.prune: "succeeded", ... */
extern const char *const pd_prune_kinds[PD_PRUNE_NKINDS];

/* Rows per batch when the caller has no better idea. */
#define PD_PRUNE_BATCH 2000

struct pd_prune_report {
	long long rows[PD_PRUNE_NKINDS];    /* deleted (dry run: would be) */
	long long batches[PD_PRUNE_NKINDS]; /* statements that deleted */
	int more; /* the budget ran out with rows left: prune again soon */
};

/* After each batch: the kind, and the report so far. */
typedef void pd_prune_progress_fn(void *arg, enum pd_prune_kind k,
				  const struct pd_prune_report *rep);

struct pd_prune_opts {
	int batch;			/* rows per statement, 1 to 100000 */
	int max_batches;		/* statements per call, all kinds together; 0: no limit */
	int dry_run;			/* count, delete nothing */
	pd_prune_progress_fn *progress; /* or NULL */
	void *arg;
};

/* The retention of kind k in r (PD_RETAIN_FOREVER: never). */
long long pd_prune_window(const struct pd_retention *r, enum pd_prune_kind k);

/*
 * Prune each kind whose retention is not forever, oldest first, until
 * nothing is left to prune or o->max_batches statements have deleted
 * something (then rep->more). db must not be in a transaction. Returns 0,
 * or -1 with e filled; rep holds what was done either way.
 */
int pd_prune(struct pd_db *db, const struct pd_retention *r, const struct pd_prune_opts *o,
	     struct pd_prune_report *rep, struct pd_err *e);

#endif
