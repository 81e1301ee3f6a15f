#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "json.h"
#include "metrics.h"

/* Where samples go: the text format, or JSON lines. */
struct out {
	struct pd_buf *b;
	int json;
	const char *type; /* of the current family */
};

/* The outcomes pendulum.job_attempts allows, each exported even at zero. */
static const char *const outcomes[] = {
    "succeeded",     "failed",	   "terminal", "timeout", "could_not_start",
    "lease_expired", "lease_lost", "released", NULL,
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
		for (int s = 0; pd_admin_states[s]; s++)
			sample2(o, "pendulum_queue_depth", "queue", PQgetvalue(q, i, 0), "state",
				pd_admin_states[s], PQgetvalue(q, i, 1 + s));
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
}

static void attempt_metrics(const PGresult *a, struct out *o)
{
	family(o, "pendulum_attempts_total", "counter", "Finished attempts by outcome.");
	for (int k = 0; outcomes[k]; k++) {
		const char *v = "0";

		for (int i = 0; i < PQntuples(a); i++)
			if (strcmp(PQgetvalue(a, i, 0), outcomes[k]) == 0)
				v = PQgetvalue(a, i, 1);
		sample2(o, "pendulum_attempts_total", "outcome", outcomes[k], NULL, NULL, v);
	}
	/* An outcome a later schema adds is exported too. */
	for (int i = 0; i < PQntuples(a); i++) {
		int known = 0;

		for (int k = 0; outcomes[k] && !known; k++)
			known = strcmp(PQgetvalue(a, i, 0), outcomes[k]) == 0;
		if (!known)
			sample2(o, "pendulum_attempts_total", "outcome", PQgetvalue(a, i, 0), NULL,
				NULL, PQgetvalue(a, i, 1));
	}
}

/* The outbox: ob is pd_admin_outbox_sql's result, f the counters (outbox's second). */
static void outbox_metrics(const PGresult *ob, const PGresult *f, struct out *o)
{
	int n = PQntuples(ob);

	family(o, "pendulum_outbox_messages", "gauge", "Outbox messages of each topic and state.");
	for (int i = 0; i < n; i++)
		for (int s = 0; pd_admin_outbox_states[s]; s++)
			sample2(o, "pendulum_outbox_messages", "topic", PQgetvalue(ob, i, 0),
				"state", pd_admin_outbox_states[s], PQgetvalue(ob, i, 1 + s));
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

/* Workflow runs: fl is pd_admin_flow_sql's result, every state of each workflow exported. */
static void flow_metrics(const PGresult *fl, struct out *o)
{
	family(o, "pendulum_workflow_runs", "gauge", "Workflow runs of each workflow and state.");
	for (int i = 0; i < PQntuples(fl); i++)
		for (int s = 0; pd_admin_flow_states[s]; s++)
			sample2(o, "pendulum_workflow_runs", "workflow", PQgetvalue(fl, i, 0),
				"state", pd_admin_flow_states[s], PQgetvalue(fl, i, 1 + s));
}

int pd_metrics_collect(struct pd_db *db, long long stale_ms, int json, struct pd_buf *out,
		       struct pd_err *e)
{
	static const char workers_sql[] =
	    "SELECT count(*) FILTER (WHERE NOT stale), count(*) FILTER (WHERE stale),"
	    " coalesce(sum(in_flight) FILTER (WHERE NOT stale), 0),"
	    " coalesce(sum(concurrency) FILTER (WHERE NOT stale), 0)"
	    " FROM (SELECT in_flight, concurrency,"
	    "  last_seen_at < now() - $1::bigint * interval '1 millisecond' AS stale"
	    "  FROM pendulum.workers) w";
	static const char fenced_sql[] = "SELECT coalesce((SELECT value FROM pendulum.counters "
					 "WHERE name = 'writes_fenced'), 0),"
					 " coalesce((SELECT value FROM pendulum.counters WHERE "
					 "name = 'outbox_writes_fenced'), 0)";
	static const char attempts_sql[] =
	    "SELECT outcome, count(*) FROM pendulum.job_attempts WHERE outcome IS NOT NULL"
	    " GROUP BY outcome ORDER BY outcome COLLATE \"C\"";
	char ms[24];
	const char *params[1] = {ms};
	PGresult *q = NULL, *w = NULL, *f = NULL, *a = NULL, *ob = NULL, *fl = NULL;
	struct out o = {out, json, ""};
	int rc = -1;

	snprintf(ms, sizeof(ms), "%lld", stale_ms);
	/* One snapshot, so that the families agree with each other. */
	if (pd_db_exec(db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL,
		       PGRES_COMMAND_OK, NULL, e) < 0)
		return -1;
	if (pd_db_exec(db, pd_admin_queues_sql, 0, NULL, PGRES_TUPLES_OK, &q, e) < 0 ||
	    pd_db_exec(db, workers_sql, 1, params, PGRES_TUPLES_OK, &w, e) < 0 ||
	    pd_db_exec(db, fenced_sql, 0, NULL, PGRES_TUPLES_OK, &f, e) < 0 ||
	    pd_db_exec(db, attempts_sql, 0, NULL, PGRES_TUPLES_OK, &a, e) < 0 ||
	    pd_db_exec(db, pd_admin_outbox_sql, 0, NULL, PGRES_TUPLES_OK, &ob, e) < 0 ||
	    pd_db_exec(db, pd_admin_flow_sql, 0, NULL, PGRES_TUPLES_OK, &fl, e) < 0)
		goto done;
	if (PQnfields(q) != 10 || PQntuples(w) != 1 || PQnfields(w) != 4 || PQntuples(f) != 1 ||
	    PQnfields(f) != 2 || PQnfields(ob) != PD_ADMIN_OUTBOX_NCOLS ||
	    PQnfields(fl) != PD_ADMIN_FLOW_NCOLS) {
		pd_errf(e, PD_EX_SOFTWARE, "metrics: unexpected result shape");
		goto done;
	}
	queue_metrics(q, &o);
	family(&o, "pendulum_writes_fenced_total", "counter",
	       "Writes refused because their lease token was no longer the job's.");
	sample(&o, "pendulum_writes_fenced_total", NULL, PQgetvalue(f, 0, 0));
	family(&o, "pendulum_workers", "gauge", "Workers seen within the stale interval.");
	sample(&o, "pendulum_workers", NULL, PQgetvalue(w, 0, 0));
	family(&o, "pendulum_workers_stale", "gauge",
	       "Registered workers not seen within the stale interval.");
	sample(&o, "pendulum_workers_stale", NULL, PQgetvalue(w, 0, 1));
	family(&o, "pendulum_worker_in_flight", "gauge", "Jobs the live workers hold.");
	sample(&o, "pendulum_worker_in_flight", NULL, PQgetvalue(w, 0, 2));
	family(&o, "pendulum_worker_concurrency", "gauge", "Job slots of the live workers.");
	sample(&o, "pendulum_worker_concurrency", NULL, PQgetvalue(w, 0, 3));
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
	if (rc == 0)
		rc = pd_db_exec(db, "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL, e);
	else if (pd_db_ok(db))
		pd_db_exec(db, "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL,
			   &(struct pd_err)PD_ERR_INIT);
	return rc;
}
