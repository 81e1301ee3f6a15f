/*
 * flowdb: start and signal workflow runs, find a run's job
 * (sql/010_workflows.sql).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dur.h"
#include "enqueue.h"
#include "flowdb.h"

void pd_flow_started_release(struct pd_flow_started *s)
{
	free(s->row);
	memset(s, 0, sizeof(*s));
}

/* The server's own words of a failed query, without pd_db_exec's "database error: ". */
static const char *server_text(const struct pd_err *in)
{
	static const char prefix[] = "database error: ";

	if (strncmp(in->msg, prefix, sizeof(prefix) - 1) == 0)
		return in->msg + sizeof(prefix) - 1;
	return in->msg;
}

/*
 * e (unless filled already: the first writer wins) from the failed query's
 * in. A SQLSTATE map gives a code of its own (pd_db_remap_code), and a
 * refused value (exit 65 by the SQLSTATE table) is the caller's: both read
 * in the server's words. Anything else is in as it is. Returns -1.
 */
static int flow_fail(struct pd_err *e, const struct pd_err *in, const struct pd_db_remap *map)
{
	int code = pd_db_remap_code(map, in->sqlstate);

	if (e->code != 0)
		return -1;
	if (code == 0 && in->code == PD_EX_DATAERR && pd_db_exit_code(in->sqlstate) == in->code)
		code = in->code;
	if (code == 0) {
		*e = *in;
		return -1;
	}
	pd_errf(e, code, "%s", server_text(in));
	snprintf(e->sqlstate, sizeof(e->sqlstate), "%s", in->sqlstate);
	return -1;
}

/* The statements of a start, in the open transaction. */
static int start_in_tx(struct pd_db *db, const char *const *params, int notify_done,
		       struct pd_flow_started *out, struct pd_err *e)
{
	/* clang-format off */
	static const char start_sql[] =
	    "SELECT pendulum.start_workflow($1, $2, $3::jsonb, $4, $5::integer, $6, $7::integer,"
	    " CASE WHEN $8::jsonb IS NULL THEN NULL ELSE ARRAY(SELECT s.v FROM"
	    " jsonb_array_elements_text($8::jsonb) WITH ORDINALITY AS s(v, i) ORDER BY s.i) END,"
	    " $9::timestamptz, $10::bigint * interval '1 millisecond', $11,"
	    " coalesce($12::timestamptz, now() + $13::bigint * interval '1 millisecond'))";
	/*
	 * A second statement, so that it sees the row the function wrote: a
	 * run whose row this transaction inserted is new; one that an
	 * idempotency key named was there before.
	 */
	static const char row_sql[] =
	    "SELECT r.job_id, r.xmin = pg_current_xact_id()::xid, row_to_json(r)::text"
	    " FROM pendulum.workflow_runs r WHERE r.id = $1";
	/* clang-format on */
	char *id = NULL;
	const char *rparams[1];
	PGresult *r;

	if (pd_db_value(db, start_sql, 13, params, &id, e) < 0)
		return -1;
	if (id == NULL)
		return pd_errf(e, PD_EX_SOFTWARE, "start_workflow returned no run");
	rparams[0] = id;
	out->run = strtoll(id, NULL, 10);
	if (pd_db_exec(db, row_sql, 1, rparams, PGRES_TUPLES_OK, &r, e) < 0) {
		free(id);
		return -1;
	}
	free(id);
	if (PQntuples(r) != 1 || PQnfields(r) != 3) {
		PQclear(r);
		return pd_errf(e, PD_EX_SOFTWARE, "workflow run %lld vanished after its start",
			       out->run);
	}
	out->job = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	out->created = PQgetvalue(r, 0, 1)[0] == 't';
	out->row = pd_xstrdup(PQgetvalue(r, 0, 2));
	PQclear(r);
	if (notify_done) {
		char job[24];

		snprintf(job, sizeof(job), "%lld", out->job);
		rparams[0] = job;
		return pd_db_exec(db, "SELECT pendulum.wait_job($1::bigint)", 1, rparams,
				  PGRES_TUPLES_OK, NULL, e);
	}
	return 0;
}

/* A key of a job that is no run: unique_violation, raised by start_workflow. */
static const struct pd_db_remap start_remap[] = {{"23505", PD_EX_CONFLICT}, {NULL, 0}};
/* object_not_in_prerequisite_state: the run is over. */
static const struct pd_db_remap signal_remap[] = {{"55000", PD_EX_CONFLICT}, {NULL, 0}};

int pd_flow_start(struct pd_db *db, const char *name, const struct pd_jobspec *spec,
		  const struct pd_flow *def, int notify_done, struct pd_flow_started *out,
		  struct pd_err *e)
{
	struct pd_err inner = PD_ERR_INIT, ignore = PD_ERR_INIT;
	struct pd_buf steps = PD_BUF_INIT;
	char prio[24], max[24], at[PD_INSTANT_MAX], delay[24], by_at[PD_INSTANT_MAX], by_ms[24];
	char *input = spec->payload ? pd_xstrndup(spec->payload, spec->payload_len) : NULL;
	const char *params[13];
	int rc = -1;

	if (name == NULL || *name == '\0') {
		free(input);
		return pd_errf(e, PD_EX_USAGE, "the workflow name must not be empty");
	}
	snprintf(prio, sizeof(prio), "%lld", spec->priority);
	snprintf(max, sizeof(max), "%lld", spec->max_attempts);
	snprintf(delay, sizeof(delay), "%lld", spec->delay_ms);
	if (spec->has_run_at)
		pd_instant_format(spec->run_at_us, at, sizeof(at));
	if (def)
		pd_flow_steps_json(&steps, def);
	params[0] = spec->tenant;
	params[1] = name;
	params[2] = input;
	params[3] = spec->queue;
	params[4] = spec->has_priority ? prio : NULL;
	params[5] = spec->idempotency_key;
	params[6] = spec->max_attempts > 0 ? max : NULL;
	params[7] = def ? steps.data : NULL;
	params[8] = spec->has_run_at ? at : NULL;
	params[9] = spec->delay_ms >= 0 ? delay : NULL;
	/* the run's job starts at the first step: under its key */
	params[10] = def ? def->steps[0].h.concurrency_key : NULL;
	/* the start deadline: an instant, or a duration from now */
	if (spec->has_start_by)
		pd_instant_format(spec->start_by_us, by_at, sizeof(by_at));
	snprintf(by_ms, sizeof(by_ms), "%lld", spec->start_by_ms);
	params[11] = spec->has_start_by ? by_at : NULL;
	params[12] = spec->start_by_ms >= 0 ? by_ms : NULL;
	memset(out, 0, sizeof(*out));
	if (pd_db_exec_script(db, "BEGIN", &inner) == 0 &&
	    start_in_tx(db, params, notify_done, out, &inner) == 0)
		rc = pd_db_exec_script(db, "COMMIT", &inner);
	if (rc < 0 && pd_db_ok(db))
		pd_db_exec_script(db, "ROLLBACK", &ignore);
	pd_buf_release(&steps);
	free(input);
	if (rc == 0)
		return 0;
	pd_flow_started_release(out);
	return flow_fail(e, &inner, start_remap);
}

int pd_flow_signal(struct pd_db *db, long long run, const char *name, const char *payload,
		   const char *where, int *woke, struct pd_err *e)
{
	static const char sql[] = "SELECT pendulum.signal_workflow($1::bigint, $2, $3::jsonb)";
	struct pd_err inner = PD_ERR_INIT;
	char ids[24], *v = NULL;
	const char *params[3] = {ids, name, payload ? payload : "null"};

	*woke = 0;
	if (name == NULL || *name == '\0')
		return pd_errf(e, PD_EX_USAGE, "the signal name must not be empty");
	if (payload && pd_enqueue_check_json(payload, strlen(payload), where, e) < 0)
		return -1;
	snprintf(ids, sizeof(ids), "%lld", run);
	if (pd_db_value(db, sql, 3, params, &v, &inner) == 0) {
		*woke = v && v[0] == 't';
		free(v);
		return 0;
	}
	if (strcmp(inner.sqlstate, "P0002") == 0) /* no_data_found */
		return pd_errf(e, PD_EX_NOTFOUND, "workflow run %lld not found", run);
	return flow_fail(e, &inner, signal_remap);
}

int pd_flow_job(struct pd_db *db, long long run, long long *job, struct pd_err *e)
{
	static const char sql[] = "SELECT job_id FROM pendulum.workflow_runs WHERE id = $1";
	char ids[24], *v = NULL;
	const char *params[1] = {ids};

	snprintf(ids, sizeof(ids), "%lld", run);
	if (pd_db_value(db, sql, 1, params, &v, e) < 0)
		return -1;
	if (v == NULL)
		return pd_errf(e, PD_EX_NOTFOUND, "workflow run %lld not found", run);
	*job = strtoll(v, NULL, 10);
	free(v);
	return 0;
}
