#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prune.h"

const char *const pd_prune_kinds[PD_PRUNE_NKINDS] = {
    "succeeded", "cancelled", "dead_lettered", "outbox_published", "workers_gone",
};

long long pd_prune_window(const struct pd_retention *r, enum pd_prune_kind k)
{
	switch (k) {
	case PD_PRUNE_SUCCEEDED:
		return r->succeeded_ms;
	case PD_PRUNE_CANCELLED:
		return r->cancelled_ms;
	case PD_PRUNE_DEAD_LETTERED:
		return r->dead_lettered_ms;
	case PD_PRUNE_OUTBOX_PUBLISHED:
		return r->outbox_published_ms;
	case PD_PRUNE_WORKERS_GONE:
	case PD_PRUNE_NKINDS:
		break;
	}
	return r->workers_gone_ms;
}

/* One statement: how many rows it deleted (dry run: would delete) into *n. */
static int one(struct pd_db *db, enum pd_prune_kind k, long long window, int batch, int dry_run,
	       long long *n, struct pd_err *e)
{
	char ms[24], lim[24], *v = NULL;
	const char *params[3] = {pd_prune_kinds[k], ms, lim};

	snprintf(ms, sizeof(ms), "%lld", window);
	snprintf(lim, sizeof(lim), "%d", batch);
	if (pd_db_value(db,
			dry_run ? "SELECT pendulum.prune_count($1, $2::bigint)"
				: "SELECT pendulum.prune($1, $2::bigint, $3::integer)",
			dry_run ? 2 : 3, params, &v, e) < 0)
		return -1;
	*n = v ? strtoll(v, NULL, 10) : 0;
	free(v);
	return 0;
}

int pd_prune(struct pd_db *db, const struct pd_retention *r, const struct pd_prune_opts *o,
	     struct pd_prune_report *rep, struct pd_err *e)
{
	long long spent = 0;

	memset(rep, 0, sizeof(*rep));
	for (int k = 0; k < PD_PRUNE_NKINDS; k++) {
		long long window = pd_prune_window(r, (enum pd_prune_kind)k), n;

		if (window == PD_RETAIN_FOREVER)
			continue;
		if (o->dry_run) {
			if (one(db, (enum pd_prune_kind)k, window, o->batch, 1, &n, e) < 0)
				return -1;
			rep->rows[k] = n;
			continue;
		}
		/* Batches until one comes back short: the kind has nothing older left. */
		do {
			if (o->max_batches > 0 && spent >= o->max_batches) {
				rep->more = 1;
				return 0;
			}
			if (one(db, (enum pd_prune_kind)k, window, o->batch, 0, &n, e) < 0)
				return -1;
			if (n > 0) {
				spent++;
				rep->rows[k] += n;
				rep->batches[k]++;
				if (o->progress)
					o->progress(o->arg, (enum pd_prune_kind)k, rep);
			}
		} while (n >= o->batch);
	}
	return 0;
}
