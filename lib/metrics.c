#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "job.h"
#include "json.h"
#include "metrics.h"
#include "summary.h"

/* Where samples go: the text format, or JSON lines. */
struct out {
	struct pd_buf *b;
	int json;
	const char *type; /* of the current family */
};

/* The outcomes pendulum.job_attempts allows, each exported even at zero. */
static const char *const outcomes[] = {
    "succeeded",  "failed",   "terminal",   "timeout", "could_not_start", "lease_expired",
    "lease_lost", "released", "claim_lost", "snoozed", "cancelled",	  NULL,
};

void pd_metrics_label(struct pd_buf *b, const char *v)
{
	pd_buf_putc(b, '"');
	for (; *v; v++) {
		if (*v == '\\')
			pd_buf_puts(b, "\\\\");
		else if (*v == '"')
			pd_buf_puts(b, "\\\"");
		else if (*v == '\n')
			pd_buf_puts(b, "\\n");
		else
			pd_buf_putc(b, *v);
	}
	pd_buf_putc(b, '"');
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	o->type = type;
	if (!o->json)
		pd_buf_printf(o->b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: name{k1="v1",k2="v2"} value; k2 may be NULL, k1 too. */
static void sample2(struct out *o, const char *name, const char *k1, const char *v1, const char *k2,
		    const char *v2, const char *value)
{
	struct pd_buf *b = o->b;

	if (o->json) {
		pd_buf_printf(b, "{\"name\":\"%s\",\"type\":\"%s\",\"labels\":{", name, o->type);
		if (k1) {
			pd_buf_printf(b, "\"%s\":", k1);
			pd_json_quote(b, v1, strlen(v1));
		}
		if (k2) {
			pd_buf_printf(b, ",\"%s\":", k2);
			pd_json_quote(b, v2, strlen(v2));
		}
		pd_buf_printf(b, "},\"value\":%s}\n", value);
		return;
	}
	pd_buf_puts(b, name);
	if (k1) {
		pd_buf_printf(b, "{%s=", k1);
		pd_metrics_label(b, v1);
		if (k2) {
			pd_buf_printf(b, ",%s=", k2);
			pd_metrics_label(b, v2);
		}
		pd_buf_putc(b, '}');
	}
	pd_buf_printf(b, " %s\n", value);
}

static void sample(struct out *o, const char *name, const char *queue, const char *value)
{
	sample2(o, name, queue ? "queue" : NULL, queue, NULL, NULL, value);
}

static void queue_metrics(const PGresult *q, struct out *o)
{
	int n = PQntuples(q);

	family(o, "pendulum_queue_depth", "gauge", "Jobs in each queue and state.");
	for (int i = 0; i < n; i++)
		for (int s = 0; pd_job_states[s]; s++)
			sample2(o, "pendulum_queue_depth", "queue", PQgetvalue(q, i, 0), "state",
				pd_job_states[s], PQgetvalue(q, i, 1 + s));
	family(o, "pendulum_queue_runnable", "gauge",
	       "PENDING jobs of each queue whose run_at has come.");
	for (int i = 0; i < n; i++)
		sample(o, "pendulum_queue_runnable", PQgetvalue(q, i, 0), PQgetvalue(q, i, 8));
	family(o, "pendulum_oldest_runnable_age_seconds", "gauge",
	       "Seconds since the run_at of the oldest runnable job of each queue; 0 when none.");
	for (int i = 0; i < n; i++)
		sample(o, "pendulum_oldest_runnable_age_seconds", PQgetvalue(q, i, 0),
		       PQgetisnull(q, i, 9) ? "0" : PQgetvalue(q, i, 9));
	family(o, "pendulum_dead_letters", "gauge", "Dead-lettered jobs of each queue.");
	for (int i = 0; i < n; i++)
		sample(o, "pendulum_dead_letters", PQgetvalue(q, i, 0), PQgetvalue(q, i, 6));
	family(o, "pendulum_queue_paused", "gauge",
	       "1 for a paused queue (pd-admin queue pause), else 0; each queue with jobs or a "
	       "limit.");
	for (int i = 0; i < n; i++)
		sample(o, "pendulum_queue_paused", PQgetvalue(q, i, 0),
		       strcmp(PQgetvalue(q, i, PD_SUMMARY_QUEUE_PAUSED), "t") == 0 ? "1" : "0");
}

/* The limits (pendulum.limit_status: key, running, waiting), by key. */
static void limit_metrics(const PGresult *l, struct out *o)
{
	family(o, "pendulum_limit_running", "gauge",
	       "Jobs LEASED or RUNNING under each limit key (pendulum.limits).");
	for (int i = 0; i < PQntuples(l); i++)
		sample2(o, "pendulum_limit_running", "key", PQgetvalue(l, i, 0), NULL, NULL,
			PQgetvalue(l, i, 1));
	family(o, "pendulum_limit_waiting", "gauge",
	       "PENDING jobs parked on each limit key: held back by its cap, rate or pause.");
	for (int i = 0; i < PQntuples(l); i++)
		sample2(o, "pendulum_limit_waiting", "key", PQgetvalue(l, i, 0), NULL, NULL,
			PQgetvalue(l, i, 2));
}

/* The histogram bounds, seconds: pendulum.metric_bounds() (sql/011) in the same order. */
static const char *const bounds[] = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
    "2.5",   "5",    "10",    "30",   "60",  "300",  "900", "3600",
};
#define NBOUNDS ((int)(sizeof(bounds) / sizeof(bounds[0])))
#define NOUT	((int)(sizeof(outcomes) / sizeof(outcomes[0])) - 1)

/* One histogram: per-bucket counts (bucket NBOUNDS is +Inf) and the sum. */
struct histo {
	long long n[NBOUNDS + 1];
	double sum;
};

/* What pendulum.metric_totals holds for one queue. */
struct qtotals {
	const char *queue; /* in the result */
	long long attempts[NOUT];
	struct histo run, wait;
};

/*
 * The totals result t (kind, queue, outcome, bucket, n, seconds; ordered by
 * kind then queue) by queue, in queue order: *nq of them, to free.
 */
static struct qtotals *by_queue(const PGresult *t, int *nq)
{
	struct qtotals *v = NULL;
	int k = 0;

	for (int i = 0; i < PQntuples(t); i++) {
		const char *kind = PQgetvalue(t, i, 0), *queue = PQgetvalue(t, i, 1);
		long long n = strtoll(PQgetvalue(t, i, 4), NULL, 10);
		int b = atoi(PQgetvalue(t, i, 3)), q = 0, wait = strcmp(kind, "wait") == 0;
		struct histo *h;

		while (q < k && strcmp(v[q].queue, queue) != 0)
			q++;
		if (q == k) {
			v = pd_xrealloc(v, (size_t)(k + 1) * sizeof(*v));
			memset(&v[k], 0, sizeof(*v));
			v[k++].queue = queue;
		}
		if (!wait)
			for (int o = 0; o < NOUT; o++)
				if (strcmp(PQgetvalue(t, i, 2), outcomes[o]) == 0)
					v[q].attempts[o] += n;
		h = wait ? &v[q].wait : &v[q].run;
		if (b >= 0 && b <= NBOUNDS) {
			h->n[b] += n;
			h->sum += strtod(PQgetvalue(t, i, 5), NULL);
		}
	}
	*nq = k;
	return v;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct qtotals *)a)->queue, ((const struct qtotals *)b)->queue);
}

/* Every queue's histogram h of family name: cumulative buckets, +Inf, _sum, _count. */
static void histogram(struct out *o, const char *name, const char *help, const struct qtotals *v,
		      int nq, size_t off)
{
	char bucket[96], sum[96], count[96], val[48];

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	snprintf(sum, sizeof(sum), "%s_sum", name);
	snprintf(count, sizeof(count), "%s_count", name);
	family(o, name, "histogram", help);
	for (int q = 0; q < nq; q++) {
		const struct histo *h =
		    (const struct histo *)(const void *)((const char *)&v[q] + off);
		long long c = 0;

		for (int b = 0; b <= NBOUNDS; b++) {
			c += h->n[b];
			snprintf(val, sizeof(val), "%lld", c);
			sample2(o, bucket, "queue", v[q].queue, "le",
				b < NBOUNDS ? bounds[b] : "+Inf", val);
		}
		snprintf(val, sizeof(val), "%.6f", h->sum);
		sample(o, sum, v[q].queue, val);
		snprintf(val, sizeof(val), "%lld", c);
		sample(o, count, v[q].queue, val);
	}
}

/*
 * The counters and histograms of pendulum.metric_totals (t): live rows plus
 * what deleted rows counted, so that pruning and purging lower none.
 */
static void attempt_metrics(const PGresult *t, struct out *o)
{
	struct qtotals *v;
	int nq;
	char val[32];

	family(o, "pendulum_attempts_total", "counter", "Finished attempts by outcome.");
	for (int k = 0; outcomes[k]; k++) {
		long long n = 0;

		for (int i = 0; i < PQntuples(t); i++)
			if (strcmp(PQgetvalue(t, i, 0), "attempt") == 0 &&
			    strcmp(PQgetvalue(t, i, 2), outcomes[k]) == 0)
				n += strtoll(PQgetvalue(t, i, 4), NULL, 10);
		snprintf(val, sizeof(val), "%lld", n);
		sample2(o, "pendulum_attempts_total", "outcome", outcomes[k], NULL, NULL, val);
	}
	/* An outcome a later schema adds is exported too (once: it is rare). */
	for (int i = 0; i < PQntuples(t); i++) {
		int known = strcmp(PQgetvalue(t, i, 0), "attempt") != 0;

		for (int k = 0; outcomes[k] && !known; k++)
			known = strcmp(PQgetvalue(t, i, 2), outcomes[k]) == 0;
		for (int j = 0; j < i && !known; j++)
			known = strcmp(PQgetvalue(t, j, 0), "attempt") == 0 &&
				strcmp(PQgetvalue(t, j, 2), PQgetvalue(t, i, 2)) == 0;
		if (!known) {
			long long n = 0;

			for (int j = i; j < PQntuples(t); j++)
				if (strcmp(PQgetvalue(t, j, 0), "attempt") == 0 &&
				    strcmp(PQgetvalue(t, j, 2), PQgetvalue(t, i, 2)) == 0)
					n += strtoll(PQgetvalue(t, j, 4), NULL, 10);
			snprintf(val, sizeof(val), "%lld", n);
			sample2(o, "pendulum_attempts_total", "outcome", PQgetvalue(t, i, 2), NULL,
				NULL, val);
		}
	}
	v = by_queue(t, &nq);
	if (nq > 1)
		qsort(v, (size_t)nq, sizeof(*v), by_name);
	family(o, "pendulum_queue_attempts_total", "counter",
	       "Finished attempts of each queue by outcome.");
	for (int q = 0; q < nq; q++)
		for (int k = 0; k < NOUT; k++) {
			snprintf(val, sizeof(val), "%lld", v[q].attempts[k]);
			sample2(o, "pendulum_queue_attempts_total", "queue", v[q].queue, "outcome",
				outcomes[k], val);
		}
	histogram(o, "pendulum_job_duration_seconds",
		  "Run time of finished attempts (finished_at - started_at), by queue.", v, nq,
		  offsetof(struct qtotals, run));
	histogram(o, "pendulum_queue_wait_seconds",
		  "Time from run_at to the start of a finished job's last attempt, by queue.", v,
		  nq, offsetof(struct qtotals, wait));
	free(v);
}

/* The outbox: ob is pd_summary_outbox_sql's result, f the counters (outbox's second). */
static void outbox_metrics(const PGresult *ob, const PGresult *f, struct out *o)
{
	int n = PQntuples(ob);

	family(o, "pendulum_outbox_messages", "gauge", "Outbox messages of each topic and state.");
	for (int i = 0; i < n; i++)
		for (int s = 0; pd_outbox_states[s]; s++)
			sample2(o, "pendulum_outbox_messages", "topic", PQgetvalue(ob, i, 0),
				"state", pd_outbox_states[s], PQgetvalue(ob, i, 1 + s));
	family(o, "pendulum_outbox_oldest_pending_age_seconds", "gauge",
	       "Seconds since the oldest PENDING message of each topic was recorded; 0 when none.");
	for (int i = 0; i < n; i++)
		sample2(o, "pendulum_outbox_oldest_pending_age_seconds", "topic",
			PQgetvalue(ob, i, 0), NULL, NULL,
			PQgetisnull(ob, i, 4) ? "0" : PQgetvalue(ob, i, 4));
	family(o, "pendulum_outbox_writes_fenced_total", "counter",
	       "Relay writes refused because their claim token was no longer the message's.");
	sample(o, "pendulum_outbox_writes_fenced_total", NULL, PQgetvalue(f, 0, 1));
}

/* Workflow runs: fl is pd_summary_flow_sql's result, every state of each workflow exported. */
static void flow_metrics(const PGresult *fl, struct out *o)
{
	family(o, "pendulum_workflow_runs", "gauge", "Workflow runs of each workflow and state.");
	for (int i = 0; i < PQntuples(fl); i++)
		for (int s = 0; pd_run_states[s]; s++)
			sample2(o, "pendulum_workflow_runs", "workflow", PQgetvalue(fl, i, 0),
				"state", pd_run_states[s], PQgetvalue(fl, i, 1 + s));
}

int pd_metrics_collect(struct pd_db *db, long long stale_ms, int json, struct pd_buf *out,
		       struct pd_err *e)
{
	static const char workers_sql[] =
	    "SELECT count(*) FILTER (WHERE NOT gone), count(*) FILTER (WHERE gone),"
	    " coalesce(sum(in_flight) FILTER (WHERE NOT gone), 0),"
	    " coalesce(sum(concurrency) FILTER (WHERE NOT gone), 0)"
	    " FROM pendulum.worker_states($1::bigint)";
	static const char unserved_sql[] = "SELECT queue, job_type, jobs FROM pendulum.unserved"
					   " ORDER BY queue COLLATE \"C\", job_type COLLATE \"C\"";
	static const char fenced_sql[] = "SELECT coalesce((SELECT value FROM pendulum.counters "
					 "WHERE name = 'writes_fenced'), 0),"
					 " coalesce((SELECT value FROM pendulum.counters WHERE "
					 "name = 'outbox_writes_fenced'), 0)";
	static const char attempts_sql[] =
	    "SELECT kind, queue, outcome, bucket, n, seconds FROM pendulum.metric_totals"
	    " ORDER BY kind, queue COLLATE \"C\", outcome COLLATE \"C\", bucket";
	static const char limits_sql[] = "SELECT key, running, waiting FROM pendulum.limit_status"
					 " ORDER BY key COLLATE \"C\"";
	char ms[24];
	const char *params[1] = {stale_ms >= 0 ? ms : NULL};
	PGresult *q = NULL, *w = NULL, *f = NULL, *a = NULL, *ob = NULL, *fl = NULL, *u = NULL,
		 *l = NULL;
	struct out o = {out, json, ""};
	int rc = -1;

	snprintf(ms, sizeof(ms), "%lld", stale_ms);
	/* One snapshot, so that the families agree with each other. */
	if (pd_db_exec(db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL,
		       PGRES_COMMAND_OK, NULL, e) < 0)
		return -1;
	if (pd_db_exec(db, pd_summary_queues_sql, 0, NULL, PGRES_TUPLES_OK, &q, e) < 0 ||
	    pd_db_exec(db, workers_sql, 1, params, PGRES_TUPLES_OK, &w, e) < 0 ||
	    pd_db_exec(db, fenced_sql, 0, NULL, PGRES_TUPLES_OK, &f, e) < 0 ||
	    pd_db_exec(db, attempts_sql, 0, NULL, PGRES_TUPLES_OK, &a, e) < 0 ||
	    pd_db_exec(db, pd_summary_outbox_sql, 0, NULL, PGRES_TUPLES_OK, &ob, e) < 0 ||
	    pd_db_exec(db, pd_summary_flow_sql, 0, NULL, PGRES_TUPLES_OK, &fl, e) < 0 ||
	    pd_db_exec(db, unserved_sql, 0, NULL, PGRES_TUPLES_OK, &u, e) < 0 ||
	    pd_db_exec(db, limits_sql, 0, NULL, PGRES_TUPLES_OK, &l, e) < 0)
		goto done;
	if (PQnfields(q) != PD_SUMMARY_QUEUE_NCOLS || PQnfields(u) != 3 || PQntuples(w) != 1 ||
	    PQnfields(w) != 4 || PQntuples(f) != 1 || PQnfields(f) != 2 || PQnfields(a) != 6 ||
	    PQnfields(ob) != PD_SUMMARY_OUTBOX_NCOLS || PQnfields(fl) != PD_SUMMARY_FLOW_NCOLS ||
	    PQnfields(l) != 3) {
		pd_errf(e, PD_EX_SOFTWARE, "metrics: unexpected result shape");
		goto done;
	}
	queue_metrics(q, &o);
	family(&o, "pendulum_jobs_unserved", "gauge",
	       "PENDING jobs of each queue and type that no live worker serves.");
	for (int i = 0; i < PQntuples(u); i++)
		sample2(&o, "pendulum_jobs_unserved", "queue", PQgetvalue(u, i, 0), "job_type",
			PQgetvalue(u, i, 1), PQgetvalue(u, i, 2));
	family(&o, "pendulum_writes_fenced_total", "counter",
	       "Writes refused because their lease token was no longer the job's.");
	sample(&o, "pendulum_writes_fenced_total", NULL, PQgetvalue(f, 0, 0));
	family(&o, "pendulum_workers", "gauge", "Live workers: seen within their lease.");
	sample(&o, "pendulum_workers", NULL, PQgetvalue(w, 0, 0));
	family(&o, "pendulum_workers_stale", "gauge",
	       "Gone workers: registered, not seen within their lease, not yet removed.");
	sample(&o, "pendulum_workers_stale", NULL, PQgetvalue(w, 0, 1));
	family(&o, "pendulum_worker_in_flight", "gauge", "Jobs the live workers hold.");
	sample(&o, "pendulum_worker_in_flight", NULL, PQgetvalue(w, 0, 2));
	family(&o, "pendulum_worker_concurrency", "gauge", "Job slots of the live workers.");
	sample(&o, "pendulum_worker_concurrency", NULL, PQgetvalue(w, 0, 3));
	limit_metrics(l, &o);
	attempt_metrics(a, &o);
	outbox_metrics(ob, f, &o);
	flow_metrics(fl, &o);
	rc = 0;
done:
	PQclear(q);
	PQclear(w);
	PQclear(f);
	PQclear(a);
	PQclear(ob);
	PQclear(fl);
	PQclear(u);
	PQclear(l);
	if (rc == 0)
		rc = pd_db_exec(db, "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL, e);
	else if (pd_db_ok(db))
		pd_db_exec(db, "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL,
			   &(struct pd_err)PD_ERR_INIT);
	return rc;
}
