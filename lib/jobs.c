#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handler.h"
#include "job.h"
#include "jobs.h"
#include "json.h"
#include "log.h"

/*
 * The claim is pendulum.claim_jobs_fair (sql/020_fair.sql, where its walk
 * and plan are described and the reasons for them): per served queue and
 * priority level, round-robin across the tenants with work from the
 * caller's cursor, one index probe per tenant on jobs_fair_idx, due rows
 * only, FOR UPDATE SKIP LOCKED; limits checked under a lock. The rows come
 * back unordered: sorted here (at most n rows). Every row carries the next
 * cursor; a row with a NULL id carries only that.
 */
static const char claim_sql[] =
    "SELECT (c.job).id, (c.job).lease_token, (c.job).attempt, (c.job).max_attempts,"
    " (c.job).replay_count,"
    " COALESCE((extract(epoch FROM (c.job).timeout) * 1000)::bigint, -1),"
    " (c.job).job_type, (c.job).queue, (c.job).tenant_id, (c.job).payload::text,"
    " to_char((c.job).run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
    " (c.job).idempotency_key, (c.job).traceparent,"
    " CASE WHEN (c.job).job_type LIKE 'workflow:%' THEN pendulum.workflow_context((c.job).id)::text"
    " END, c.fair_next::text "
    "FROM pendulum.claim_jobs_fair($1::text[], $2::text[], $3::integer, $4::text,"
    " $5::bigint * interval '1 millisecond', $6::boolean, $7::jsonb) c "
    "ORDER BY (c.job).priority DESC, (c.job).run_at, (c.job).id";

/* The claim's parameters, as text, kept alive until the statement ran. */
struct claim_args {
	struct pd_buf queues, types;
	char limit[PD_I64_CHARS], lease[PD_I64_CHARS];
	const char *params[7];
};

static void claim_args_build(struct claim_args *a, const char *worker, const char *const *queues,
			     int nqueues, const char *const *types, int ntypes, int limit,
			     long long lease_ms, int start, const char *fair)
{
	memset(a, 0, sizeof(*a));
	pd_db_text_array(&a->queues, queues, nqueues);
	if (types)
		pd_db_text_array(&a->types, types, ntypes);
	pd_fmt_i64(a->limit, limit);
	pd_fmt_i64(a->lease, lease_ms);
	a->params[0] = a->queues.data;
	a->params[1] = types ? a->types.data : NULL;
	a->params[2] = a->limit;
	a->params[3] = worker;
	a->params[4] = a->lease;
	a->params[5] = start ? "true" : "false";
	a->params[6] = fair;
}

static void claim_args_release(struct claim_args *a)
{
	pd_buf_release(&a->queues);
	pd_buf_release(&a->types);
}

/*
 * The claim's rows into a malloc'd array (NULL when none); *fair: the next
 * cursor, replaced (freed first) when the claim returned one.
 */
static void claim_parse(const PGresult *r, struct pd_claimed **out, int *n, char **fair)
{
	int rows = PQntuples(r);

	*n = 0;
	*out = rows > 0 ? pd_xcalloc((size_t)rows, sizeof(**out)) : NULL;
	for (int i = 0; i < rows; i++) {
		struct pd_claimed *c;

		if (i == 0 && fair && !PQgetisnull(r, i, 14)) {
			free(*fair);
			*fair = pd_db_dup(r, i, 14);
		}
		if (PQgetisnull(r, i, 0))
			continue;
		c = &(*out)[(*n)++];
		c->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		c->token = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		c->attempt = atoi(PQgetvalue(r, i, 2));
		c->max_attempts = atoi(PQgetvalue(r, i, 3));
		c->replay_count = atoi(PQgetvalue(r, i, 4));
		c->timeout_ms = strtoll(PQgetvalue(r, i, 5), NULL, 10);
		c->type = pd_db_dup(r, i, 6);
		c->queue = pd_db_dup(r, i, 7);
		c->tenant = pd_db_dup(r, i, 8);
		c->payload = pd_db_dup(r, i, 9);
		c->run_at = pd_db_dup(r, i, 10);
		c->idempotency_key = pd_db_dup(r, i, 11);
		c->traceparent = pd_db_dup(r, i, 12);
		c->flow = pd_db_dup(r, i, 13);
	}
	if (*n == 0) {
		free(*out);
		*out = NULL;
	}
}

int pd_jobs_claim(struct pd_db *db, const char *worker, const char *const *queues, int nqueues,
		  const char *const *types, int ntypes, int limit, long long lease_ms, int start,
		  struct pd_claimed **out, int *n, struct pd_err *e)
{
	struct claim_args a;
	PGresult *r;
	int rc;

	*out = NULL;
	*n = 0;
	claim_args_build(&a, worker, queues, nqueues, types, ntypes, limit, lease_ms, start, NULL);
	rc = pd_db_exec(db, claim_sql, 7, a.params, PGRES_TUPLES_OK, &r, e);
	claim_args_release(&a);
	if (rc < 0)
		return -1;
	claim_parse(r, out, n, NULL);
	PQclear(r);
	return 0;
}

void pd_claimed_free(struct pd_claimed *c, int n)
{
	for (int i = 0; c && i < n; i++) {
		free(c[i].type);
		free(c[i].queue);
		free(c[i].tenant);
		free(c[i].payload);
		free(c[i].run_at);
		free(c[i].idempotency_key);
		free(c[i].traceparent);
		free(c[i].flow);
	}
	free(c);
}

void pd_leases_free(struct pd_lease *l, int n)
{
	for (int i = 0; l && i < n; i++) {
		free(l[i].owner);
		free(l[i].host);
	}
	free(l);
}

/*
 * Rows of (id, lease_token, owner, host, pid[, state][, over_ms]) into a
 * malloc'd array; a NULL column is a NULL string, or pid 0.
 */
static struct pd_lease *leases_from(const PGresult *r, int *n)
{
	int state = PQfnumber(r, "state"), over = PQfnumber(r, "over_ms");
	struct pd_lease *l;

	*n = PQntuples(r);
	l = pd_xcalloc((size_t)(*n > 0 ? *n : 1), sizeof(*l));
	for (int i = 0; i < *n; i++) {
		l[i].id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		l[i].token = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		l[i].owner = pd_db_dup(r, i, 2);
		l[i].host = pd_db_dup(r, i, 3);
		l[i].pid = PQgetisnull(r, i, 4) ? 0 : atoi(PQgetvalue(r, i, 4));
		if (state >= 0)
			l[i].dead =
			    pd_job_state_parse(PQgetvalue(r, i, state)) == PD_JOB_DEAD_LETTERED;
		if (over >= 0)
			l[i].over_ms = strtoll(PQgetvalue(r, i, over), NULL, 10);
	}
	return l;
}

int pd_jobs_expired(struct pd_db *db, struct pd_lease **out, int *n, struct pd_err *e)
{
	static const char sql[] =
	    "SELECT j.id, j.lease_token, j.lease_owner, w.host, w.pid,"
	    " floor(extract(epoch FROM now() - j.lease_expires_at) * 1000)::bigint AS over_ms"
	    " FROM pendulum.jobs j LEFT JOIN pendulum.workers w ON w.id = j.lease_owner"
	    " WHERE j.state IN ('LEASED', 'RUNNING') AND j.lease_expires_at < now()"
	    " ORDER BY j.lease_expires_at LIMIT 1000";
	PGresult *r;

	*out = NULL;
	*n = 0;
	if (pd_db_exec(db, sql, 0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	*out = leases_from(r, n);
	PQclear(r);
	return 0;
}

int pd_jobs_reap_leases(struct pd_db *db, const struct pd_lease *now, int nnow, long long grace_ms,
			int *requeued, int *dead, struct pd_lease **out, int *n, struct pd_err *e)
{
	static const char sql[] =
	    "WITH x AS ("
	    " SELECT id, tenant_id, lease_token, lease_owner, attempt, started_at FROM "
	    "pendulum.jobs"
	    " WHERE state IN ('LEASED', 'RUNNING') AND lease_expires_at < now()"
	    "  AND (lease_expires_at < now() - $3::bigint * interval '1 millisecond'"
	    "   OR (id, lease_token) IN (SELECT * FROM unnest($1::bigint[], $2::bigint[])))"
	    " ORDER BY lease_expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED"
	    "), j AS ("
	    " UPDATE pendulum.jobs j SET"
	    "  state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'CANCELLED'"
	    "   WHEN j.delivery = 'at-most-once' OR j.attempt >= j.max_attempts"
	    "   THEN 'DEAD_LETTERED' ELSE 'PENDING' END,"
	    "  dead_reason = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.cancel_reason"
	    "   WHEN j.delivery = 'at-most-once'"
	    "   THEN 'lease expired (at-most-once delivery: not run again)'"
	    "   WHEN j.attempt >= j.max_attempts THEN 'attempts exhausted (last lease expired)' "
	    "END,"
	    "  finished_at = CASE WHEN j.delivery = 'at-most-once' OR j.attempt >= j.max_attempts"
	    "   OR j.cancel_requested_at IS NOT NULL THEN now() END,"
	    "  last_error = 'lease expired (worker ' || coalesce(j.lease_owner, '?') || ')',"
	    "  run_at = now(), lease_owner = NULL, lease_expires_at = NULL"
	    " FROM x WHERE j.id = x.id"
	    " RETURNING j.id, j.state, x.lease_token, x.lease_owner"
	    "), a AS ("
	    " INSERT INTO pendulum.attempt_rows (job_id, tenant_id, attempt, lease_token, worker,"
	    "  started_at, finished_at, outcome)"
	    " SELECT x.id, x.tenant_id, x.attempt, x.lease_token, x.lease_owner,"
	    "  coalesce(x.started_at, now()),"
	    "  now(), CASE j.state WHEN 'CANCELLED' THEN 'cancelled' ELSE 'lease_expired' END"
	    " FROM x JOIN j ON j.id = x.id"
	    " ON CONFLICT (job_id, lease_token) DO NOTHING"
	    "), n AS ("
	    " SELECT pg_notify('pendulum_jobs', q.queue) FROM (SELECT DISTINCT jj.queue"
	    "  FROM pendulum.jobs jj JOIN j ON jj.id = j.id WHERE j.state = 'PENDING') q"
	    "), p AS ("
	    " SELECT pendulum.fail_dependents(ARRAY(SELECT id FROM j WHERE state = "
	    "'DEAD_LETTERED'),"
	    "  'DEAD_LETTERED') AS n WHERE EXISTS (SELECT 1 FROM j WHERE state = 'DEAD_LETTERED')"
	    "), c AS ("
	    " SELECT pendulum.fail_dependents(ARRAY(SELECT id FROM j WHERE state = 'CANCELLED'),"
	    "  'CANCELLED') AS n WHERE EXISTS (SELECT 1 FROM j WHERE state = 'CANCELLED')"
	    ") "
	    "SELECT j.id, j.lease_token, j.lease_owner, w.host, w.pid, j.state AS state"
	    " FROM j LEFT JOIN pendulum.workers w ON w.id = j.lease_owner"
	    " CROSS JOIN (SELECT count(*) FROM n) notified"
	    " CROSS JOIN (SELECT count(*) FROM p) failed"
	    " CROSS JOIN (SELECT count(*) FROM c) cancelled ORDER BY j.id";
	struct pd_buf ids = PD_BUF_INIT, tokens = PD_BUF_INIT;
	long long *v = pd_xcalloc((size_t)(nnow > 0 ? 2 * nnow : 1), sizeof(*v));
	char grace[24];
	const char *params[3];
	struct pd_lease *l;
	PGresult *r;
	int nl, rc;

	*requeued = *dead = 0;
	if (out) {
		*out = NULL;
		*n = 0;
	}
	for (int i = 0; i < nnow; i++) {
		v[i] = now[i].id;
		v[nnow + i] = now[i].token;
	}
	pd_db_id_array(&ids, v, nnow);
	pd_db_id_array(&tokens, v + nnow, nnow);
	snprintf(grace, sizeof(grace), "%lld", grace_ms > 0 ? grace_ms : 0);
	params[0] = ids.data;
	params[1] = tokens.data;
	params[2] = grace;
	rc = pd_db_exec(db, sql, 3, params, PGRES_TUPLES_OK, &r, e);
	free(v);
	pd_buf_release(&ids);
	pd_buf_release(&tokens);
	if (rc < 0)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		if (strcmp(PQgetvalue(r, i, 5), "CANCELLED") == 0)
			pd_log(PD_LOG_INFO, "expired lease of a job asked to cancel: cancelled",
			       "job=%s", PQgetvalue(r, i, 0));
	l = leases_from(r, &nl);
	for (int i = 0; i < nl; i++) {
		*dead += l[i].dead;
		*requeued += !l[i].dead && strcmp(PQgetvalue(r, i, 5), "CANCELLED") != 0;
	}
	PQclear(r);
	if (out) {
		*out = l;
		*n = nl;
	} else {
		pd_leases_free(l, nl);
	}
	return 0;
}

int pd_jobs_reap_hooks(struct pd_db *db, const struct pd_lease *l, int n, const char *hooks,
		       int *made, struct pd_err *e)
{
	static const char sql[] =
	    "SELECT pendulum.hook_jobs(coalesce(jsonb_agg(jsonb_build_object('id', j.id,"
	    " 'token', x.token, 'events', coalesce($3::jsonb -> 'types' -> j.job_type,"
	    "  $3::jsonb -> 'types' -> '*', '[]'::jsonb) || ($3::jsonb -> 'global'))), '[]'))"
	    " FROM unnest($1::bigint[], $2::bigint[]) AS x(id, token)"
	    " JOIN pendulum.jobs j ON j.id = x.id";
	struct pd_buf ids = PD_BUF_INIT, tokens = PD_BUF_INIT;
	long long *v = pd_xcalloc((size_t)(n > 0 ? 2 * n : 1), sizeof(*v));
	const char *params[3];
	char *count = NULL;
	int rc;

	for (int i = 0; i < n; i++) {
		v[i] = l[i].id;
		v[n + i] = l[i].token;
	}
	pd_db_id_array(&ids, v, n);
	pd_db_id_array(&tokens, v + n, n);
	params[0] = ids.data;
	params[1] = tokens.data;
	params[2] = hooks;
	rc = pd_db_value(db, sql, 3, params, &count, e);
	if (rc == 0 && made)
		*made = count ? atoi(count) : 0;
	free(count);
	free(v);
	pd_buf_release(&ids);
	pd_buf_release(&tokens);
	return rc;
}

int pd_worker_register(struct pd_db *db, const char *id, const char *host, int pid,
		       const char *const *queues, int nqueues, const char *const *types, int ntypes,
		       int concurrency, long long lease_ms, struct pd_err *e)
{
	static const char sql[] =
	    "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency, lease_ms)"
	    " VALUES ($1, $2, $3, $4, $5, $6, $7)"
	    " ON CONFLICT (id) DO UPDATE SET last_seen_at = now(), in_flight = 0,"
	    " queues = EXCLUDED.queues, job_types = EXCLUDED.job_types,"
	    " concurrency = EXCLUDED.concurrency, lease_ms = EXCLUDED.lease_ms";
	struct pd_buf q = PD_BUF_INIT, t = PD_BUF_INIT;
	char p[16], c[16], l[24];
	const char *params[7];
	int rc;

	pd_db_text_array(&q, queues, nqueues);
	pd_db_text_array(&t, types, ntypes);
	snprintf(p, sizeof(p), "%d", pid);
	snprintf(c, sizeof(c), "%d", concurrency);
	snprintf(l, sizeof(l), "%lld", lease_ms);
	params[0] = id;
	params[1] = host;
	params[2] = p;
	params[3] = q.data;
	params[4] = t.data;
	params[5] = c;
	params[6] = l;
	rc = pd_db_exec(db, sql, 7, params, PGRES_COMMAND_OK, NULL, e);
	pd_buf_release(&q);
	pd_buf_release(&t);
	return rc;
}

int pd_worker_unregister(struct pd_db *db, const char *id, struct pd_err *e)
{
	const char *params[1] = {id};

	return pd_db_exec(db, "DELETE FROM pendulum.workers WHERE id = $1", 1, params,
			  PGRES_COMMAND_OK, NULL, e);
}

int pd_jobs_lease_held(struct pd_db *db, long long id, long long token, struct pd_err *e)
{
	static const char sql[] =
	    "SELECT CASE WHEN cancel_requested_at IS NULL THEN 1 ELSE 2 END FROM pendulum.jobs"
	    " WHERE id = $1 AND lease_token = $2"
	    " AND state IN ('LEASED', 'RUNNING') AND lease_expires_at > now()";
	char a[24], b[24];
	const char *params[2] = {a, b};
	char *v = NULL;
	int held;

	snprintf(a, sizeof(a), "%lld", id);
	snprintf(b, sizeof(b), "%lld", token);
	if (pd_db_value(db, sql, 2, params, &v, e) < 0)
		return -1;
	held = v ? atoi(v) : 0;
	free(v);
	return held;
}

/*
 * The release of the jobs leased to worker $1 under a token not in $2 (see
 * jobs.h): j gives them back as finish_sql's release does (the attempt
 * refunded; an at-most-once job dead-lettered, never run again), a records each attempt
 * as claim_lost, p dead-letters what was BLOCKED on a job dead-lettered here
 * (as finish_sql's p), n wakes the queues that got a job back. Each row
 * comes back as id and new state; the last two columns force p and n.
 */
static const char release_unheld_sql[] =
    "WITH j AS ("
    " UPDATE pendulum.jobs j SET"
    "  state = CASE WHEN j.delivery = 'at-most-once' THEN 'DEAD_LETTERED' ELSE 'PENDING' END,"
    "  attempt = CASE WHEN j.delivery = 'at-most-once' THEN j.attempt"
    "   ELSE greatest(j.attempt - 1, 0) END,"
    "  run_at = now(),"
    "  dead_reason = CASE WHEN j.delivery = 'at-most-once' THEN 'claimed by a worker that lost"
    " the claim''s reply to a reconnect (at-most-once delivery: not run again)' END,"
    "  finished_at = CASE WHEN j.delivery = 'at-most-once' THEN now() END,"
    "  exit_code = NULL, lease_owner = NULL, lease_expires_at = NULL"
    " WHERE j.lease_owner = $1 AND j.state IN ('LEASED', 'RUNNING')"
    "  AND NOT (j.lease_token = ANY ($2::bigint[]))"
    " RETURNING j.id, j.lease_token, j.state, j.queue, j.started_at, j.tenant_id,"
    "  CASE WHEN j.delivery = 'at-most-once' THEN j.attempt ELSE j.attempt + 1 END AS attempt"
    "), a AS ("
    " INSERT INTO pendulum.attempt_rows (job_id, tenant_id, attempt, lease_token, worker,"
    "  started_at, finished_at, outcome)"
    " SELECT j.id, j.tenant_id, j.attempt, j.lease_token, $1, coalesce(j.started_at, now()),"
    "  now(),"
    "  'claim_lost' FROM j"
    " ON CONFLICT (job_id, lease_token) DO NOTHING"
    "), p AS ("
    " SELECT pendulum.fail_dependents(ARRAY(SELECT id FROM j WHERE state = 'DEAD_LETTERED'),"
    "  'DEAD_LETTERED') AS n WHERE EXISTS (SELECT 1 FROM j WHERE state = 'DEAD_LETTERED')"
    "), n AS ("
    " SELECT pg_notify('pendulum_jobs', q.queue)"
    " FROM (SELECT DISTINCT queue FROM j WHERE state = 'PENDING') q"
    ") "
    "SELECT j.id, j.state, (SELECT count(*) FROM n), (SELECT count(*) FROM p) FROM j ORDER BY j.id";

int pd_jobs_release_unheld(struct pd_db *db, const char *worker, const long long *tokens, int n,
			   int *released, struct pd_err *e)
{
	struct pd_buf t = PD_BUF_INIT, ids = PD_BUF_INIT;
	const char *params[2];
	PGresult *r;
	int dead = 0, rc;

	*released = 0;
	pd_db_id_array(&t, tokens, n);
	params[0] = worker;
	params[1] = t.data;
	rc = pd_db_exec(db, release_unheld_sql, 2, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&t);
	if (rc < 0)
		return -1;
	*released = PQntuples(r);
	for (int i = 0; i < *released; i++) {
		if (i < 100)
			pd_buf_printf(&ids, "%s%s", i ? "," : "", PQgetvalue(r, i, 0));
		dead += pd_job_state_parse(PQgetvalue(r, i, 1)) == PD_JOB_DEAD_LETTERED;
	}
	if (*released > 100)
		pd_buf_puts(&ids, ",...");
	if (*released > 0)
		pd_log(PD_LOG_WARN, "jobs leased to this worker but not held: given back",
		       "jobs=%d dead=%d ids=%s", *released, dead, ids.data);
	pd_buf_release(&ids);
	PQclear(r);
	return 0;
}

/*
 * The outcomes of one batch ($1; $2 the worker), fenced row by row: o is the
 * batch (a snooze of a job at its cap made a retry: pendulum.snooze_cap,
 * sql/023), j the jobs it changed (only those whose token still holds the
 * lease), a their attempt rows (sql/008: none for a clean success, whose
 * record is the job row), u the queues of the BLOCKED jobs whose last
 * dependency succeeded in this batch (pendulum.unblock_dependents, sql/012:
 * it locks them first, so that of two transactions whose successes are a
 * job's last two dependencies the second sees the first's and unblocks it),
 * p the jobs BLOCKED on one dead-lettered here, transitively, dead-lettered
 * with it (pendulum.fail_dependents, sql/012; called only when the batch has
 * a dead letter: an all-success batch pays one scan of j), c the same for
 * the jobs CANCELLED here (kind cancel, or an outcome that would give a job
 * with a cancel request back to PENDING: pendulum.finish_cancel_asked,
 * sql/022), m the outcomes not written now, w those of m not written
 * because this very outcome was written before (its token's attempt
 * already ended with a worker's outcome: the same batch sent again after a
 * connection lost before its reply, whose commit went through; only the
 * holder of a token writes an outcome for it), f the other fenced-off rows
 * counted, n one wake-up per queue that got runnable work now. Each row of
 * the batch comes back with its new state (NULL: not written now) and, when
 * PENDING, the ms until its run_at; then three counts; whether it was
 * written before (w); and its token (a batch may hold one job twice, under
 * two tokens: pd_jobs_sync_collect matches a row by both). $3: whether the batch has an outcome
 * that would give its job back to PENDING (retry, release, advance, wait,
 * snooze); without one, finish_cancel_asked and snooze_cap would return the
 * batch as it is, and are not called (issue 26: they read every outcome,
 * about 1.3 us a job).
 *
 * Planned on the primary key whatever ANALYZE saw (issue 26): j's and w's
 * state tests are CASE expressions, from which the planner proves no
 * partial index's predicate (jobs_running_idx, jobs_lease_idx,
 * jobs_finished_idx: ANALYZE after a bulk enqueue sees none of their rows
 * and they look free to scan whole), and w probes each row of m by a
 * LATERAL ... LIMIT 1, never a hash of every SUCCEEDED job or attempt row.
 */
static const char finish_sql[] =
    "WITH o AS ("
    " SELECT * FROM jsonb_to_recordset(CASE WHEN $3::boolean THEN"
    "  pendulum.snooze_cap(pendulum.finish_cancel_asked($1::jsonb)) ELSE $1::jsonb END)"
    "  AS o(id bigint, token bigint, kind text,"
    "  backoff_ms bigint, result jsonb, result_is_text boolean, result_truncated boolean,"
    "  error text, dead_reason text, outcome text, exit_code integer, signal integer,"
    "  stderr_tail text, started_ago_ms bigint, attempt integer, next_key text, snooze_ms bigint)"
    "), j AS ("
    " UPDATE pendulum.jobs j SET"
    "  state = CASE o.kind WHEN 'succeeded' THEN 'SUCCEEDED' WHEN 'dead' THEN 'DEAD_LETTERED'"
    "   WHEN 'cancel' THEN 'CANCELLED'"
    "   WHEN 'advance' THEN 'PENDING' WHEN 'wait' THEN 'PENDING' WHEN 'snooze' THEN 'PENDING'"
    "   WHEN 'release' THEN CASE WHEN j.delivery = 'at-most-once' THEN 'DEAD_LETTERED'"
    "    ELSE 'PENDING' END"
    "   ELSE CASE WHEN j.attempt >= j.max_attempts THEN 'DEAD_LETTERED' ELSE 'PENDING' END END,"
    "  attempt = CASE WHEN o.kind = 'advance' THEN 0"
    "   WHEN o.kind IN ('wait', 'snooze') OR (o.kind = 'release' AND j.delivery <> 'at-most-once')"
    "   THEN greatest(j.attempt - 1, 0) ELSE j.attempt END,"
    "  snoozes = j.snoozes + CASE o.kind WHEN 'snooze' THEN 1 ELSE 0 END,"
    "  run_at = CASE WHEN (o.kind = 'retry' AND j.attempt < j.max_attempts) OR o.kind = 'advance'"
    "   THEN now() + coalesce(o.backoff_ms, 0) * interval '1 millisecond'"
    "   WHEN o.kind = 'release' THEN now()"
    "   WHEN o.kind = 'snooze' THEN now() + o.snooze_ms * interval '1 millisecond'"
    "   WHEN o.kind = 'wait' THEN coalesce((SELECT CASE WHEN r.signals ? r.waiting_for THEN now()"
    "    ELSE coalesce(r.wait_deadline, 'infinity') END FROM pendulum.workflow_runs r"
    "    WHERE r.job_id = j.id), now()) ELSE j.run_at END,"
    "  result = CASE o.kind WHEN 'succeeded' THEN o.result ELSE j.result END,"
    "  result_is_text = CASE o.kind WHEN 'succeeded' THEN coalesce(o.result_is_text, false)"
    "   ELSE j.result_is_text END,"
    "  result_truncated = CASE o.kind WHEN 'succeeded' THEN coalesce(o.result_truncated, false)"
    "   ELSE j.result_truncated END,"
    "  last_error = CASE o.kind WHEN 'succeeded' THEN NULL WHEN 'advance' THEN NULL"
    "   WHEN 'release' THEN j.last_error WHEN 'wait' THEN j.last_error"
    "   WHEN 'snooze' THEN j.last_error"
    "   WHEN 'cancel' THEN coalesce(j.cancel_reason, 'cancelled by operator')"
    "   ELSE o.error END,"
    "  dead_reason = CASE WHEN o.kind = 'dead' THEN o.dead_reason"
    "   WHEN o.kind = 'cancel' THEN coalesce(j.cancel_reason, 'cancelled by operator')"
    "   WHEN o.kind = 'release' AND j.delivery = 'at-most-once'"
    "    THEN 'interrupted by worker shutdown (at-most-once delivery: not run again)'"
    "   WHEN o.kind = 'retry' AND j.attempt >= j.max_attempts THEN 'attempts exhausted' END,"
    "  finished_at = CASE WHEN o.kind IN ('succeeded', 'dead', 'cancel')"
    "   OR (o.kind = 'release' AND j.delivery = 'at-most-once')"
    "   OR (o.kind = 'retry' AND j.attempt >= j.max_attempts) THEN now() END,"
    "  started_at = CASE WHEN o.started_ago_ms IS NULL THEN j.started_at"
    "   ELSE now() - o.started_ago_ms * interval '1 millisecond' END,"
    "  exit_code = o.exit_code,"
    "  concurrency_key = CASE o.kind WHEN 'advance' THEN o.next_key ELSE j.concurrency_key END,"
    "  lease_owner = CASE o.kind WHEN 'succeeded' THEN j.lease_owner END, lease_expires_at = NULL"
    " FROM o WHERE j.id = o.id AND j.lease_token = o.token"
    " AND CASE j.state WHEN 'LEASED' THEN true WHEN 'RUNNING' THEN true ELSE false END"
    " RETURNING j.id, j.lease_token, j.state, j.run_at, j.queue, o.kind, j.started_at,"
    "  j.tenant_id,"
    "  CASE WHEN o.kind = 'advance' THEN o.attempt WHEN o.kind IN ('wait', 'snooze')"
    "   OR (o.kind = 'release' AND j.delivery <> 'at-most-once') THEN j.attempt + 1"
    "   ELSE j.attempt END AS attempt"
    "), a AS ("
    " INSERT INTO pendulum.attempt_rows (job_id, tenant_id, attempt, lease_token, worker,"
    "  started_at, finished_at, outcome, exit_code, signal, stderr_tail)"
    " SELECT j.id, j.tenant_id, j.attempt, j.lease_token, $2, coalesce(j.started_at, now()),"
    "  now(), o.outcome,"
    "  o.exit_code, o.signal, o.stderr_tail"
    " FROM o JOIN j ON j.id = o.id AND j.lease_token = o.token"
    " WHERE NOT (o.kind = 'succeeded' AND o.signal IS NULL AND o.stderr_tail IS NULL)"
    "), s AS ("
    " SELECT array_agg(id) AS ids FROM j WHERE state = 'SUCCEEDED'"
    "), u AS ("
    " SELECT q.queue FROM s CROSS JOIN LATERAL pendulum.unblock_dependents(s.ids) AS q(queue)"
    " WHERE s.ids IS NOT NULL"
    "), p AS ("
    " SELECT pendulum.fail_dependents(ARRAY(SELECT id FROM j WHERE state = 'DEAD_LETTERED'),"
    "  'DEAD_LETTERED') AS n WHERE EXISTS (SELECT 1 FROM j WHERE state = 'DEAD_LETTERED')"
    "), c AS ("
    " SELECT pendulum.fail_dependents(ARRAY(SELECT id FROM j WHERE state = 'CANCELLED'),"
    "  'CANCELLED') AS n WHERE EXISTS (SELECT 1 FROM j WHERE state = 'CANCELLED')"
    "), m AS MATERIALIZED ("
    " SELECT o.id, o.token FROM o WHERE NOT EXISTS (SELECT 1 FROM j WHERE j.id = o.id"
    "  AND j.lease_token = o.token)"
    "), w AS ("
    " SELECT m.id FROM m LEFT JOIN LATERAL (SELECT 1 AS done FROM pendulum.attempt_rows r"
    "  WHERE r.job_id = m.id AND r.lease_token = m.token"
    "  AND r.outcome NOT IN ('lease_expired', 'lease_lost', 'claim_lost') LIMIT 1) r ON true"
    " LEFT JOIN LATERAL (SELECT 1 AS done FROM pendulum.jobs x WHERE x.id = m.id"
    "  AND x.lease_token = m.token"
    "  AND CASE x.state WHEN 'SUCCEEDED' THEN true ELSE false END LIMIT 1) x ON true"
    " WHERE r.done IS NOT NULL OR x.done IS NOT NULL"
    "), f AS ("
    " UPDATE pendulum.counters SET value = value + ((SELECT count(*) FROM o)"
    "  - (SELECT count(*) FROM j) - (SELECT count(*) FROM w))"
    " WHERE name = 'writes_fenced'"
    "  AND (SELECT count(*) FROM o) > (SELECT count(*) FROM j) + (SELECT count(*) FROM w)"
    "), n AS ("
    " SELECT pg_notify('pendulum_jobs', q.queue) FROM (SELECT queue FROM u UNION"
    "  SELECT queue FROM j WHERE kind = 'release' AND state = 'PENDING' UNION"
    "  SELECT queue FROM j WHERE kind IN ('advance', 'wait', 'snooze') AND run_at <= now()) q"
    ") "
    "SELECT o.id, j.state, CASE WHEN j.state = 'PENDING' AND j.run_at < 'infinity'"
    "  THEN greatest(ceil(extract(epoch FROM j.run_at - now()) * 1000), 0)::bigint END,"
    " (SELECT count(*) FROM n), (SELECT sum(n) FROM p), (SELECT sum(n) FROM c),"
    " o.id IN (SELECT id FROM w), o.token "
    "FROM o LEFT JOIN j ON j.id = o.id AND j.lease_token = o.token";

/*
 * The workflow runs' writes of a batch's outcomes (struct pd_flow_write),
 * sent before finish_sql in the same transaction: a completed step's output
 * inserted once (the first insert wins), the run's position moved on with
 * GREATEST, its mailbox and wait fields set; what is written about the step
 * at the run's position only. Fenced like finish_sql: h keeps the writes
 * whose token still holds the lease of the run's job (lease_token = token,
 * LEASED or RUNNING) and locks that job row until the transaction ends, so
 * that no reaper or claim can move the lease between this statement and
 * finish_sql's: both see the same fence, and a fenced-off outcome writes
 * nothing of the run. Updating the run row orders a park against
 * pendulum.signal_workflow, which updates it too: whichever comes second sees
 * the other, and finish_sql then reads the mailbox to set the job's run_at.
 * (signal_workflow locks the run row, then the job row only while it is
 * PENDING: never one that h locked, so the two orders cannot deadlock.)
 */
static const char flow_sql[] =
    "WITH f AS ("
    " SELECT * FROM jsonb_to_recordset($1::jsonb) AS f(run bigint, step integer, act text,"
    "  name text, kind text, steps text[], output jsonb, output_is_text boolean,"
    "  output_truncated boolean, attempts integer, token bigint, ran_ms bigint,"
    "  sleep_ms bigint, signal text, wait_ms bigint)"
    "), h AS ("
    " SELECT f.*, r.tenant_id FROM f JOIN pendulum.workflow_runs r ON r.id = f.run"
    " JOIN pendulum.jobs j ON j.id = r.job_id AND j.lease_token = f.token"
    "  AND j.state IN ('LEASED', 'RUNNING')"
    " FOR NO KEY UPDATE OF j"
    "), s AS ("
    " INSERT INTO pendulum.workflow_steps (run_id, tenant_id, step_index, step_name, kind,"
    "  output, output_is_text, output_truncated, attempts, lease_token, started_at, finished_at)"
    " SELECT f.run, f.tenant_id, f.step, f.name, f.kind, f.output, f.output_is_text,"
    "  f.output_truncated,"
    "  f.attempts, f.token, now() - f.ran_ms * interval '1 millisecond',"
    "  now() + f.sleep_ms * interval '1 millisecond'"
    " FROM h AS f WHERE f.act = 'step'"
    " ON CONFLICT (run_id, step_index) DO NOTHING"
    ") "
    "UPDATE pendulum.workflow_runs r SET"
    " position = CASE WHEN f.act = 'step' THEN greatest(r.position, f.step + 1)"
    "  ELSE r.position END,"
    " steps = coalesce(f.steps, r.steps),"
    " signals = CASE WHEN f.act = 'step' AND f.signal IS NOT NULL THEN r.signals - f.signal"
    "  ELSE r.signals END,"
    " wait_step = CASE WHEN f.act = 'park' THEN f.step END,"
    " waiting_for = CASE WHEN f.act = 'park' THEN f.signal END,"
    " wait_deadline = CASE WHEN f.act <> 'park' THEN NULL"
    "  WHEN r.wait_step = f.step THEN r.wait_deadline"
    "  ELSE now() + f.wait_ms * interval '1 millisecond' END,"
    " sleep_until = CASE WHEN f.act = 'step' AND f.sleep_ms > 0"
    "  THEN now() + f.sleep_ms * interval '1 millisecond' END,"
    " updated_at = now()"
    " FROM h AS f WHERE r.id = f.run AND f.step = r.position";

/*
 * Attempts whose worker lost the lease and stopped the handler: lease_lost,
 * ended now (also over the reaper's lease_expired: the worker was alive).
 */
static const char lost_sql[] =
    "INSERT INTO pendulum.attempt_rows AS a (job_id, tenant_id, attempt, lease_token, worker,"
    " started_at, finished_at, outcome)"
    " SELECT l.id, j.tenant_id, l.attempt::integer, l.token, $5,"
    "  now() - l.ago * interval '1 millisecond', now(), 'lease_lost'"
    " FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[]) AS l(id, token,"
    "  attempt, ago) JOIN pendulum.jobs j ON j.id = l.id"
    " ON CONFLICT (job_id, lease_token) DO UPDATE SET finished_at = now(), outcome = 'lease_lost'"
    " WHERE a.outcome IS NULL OR a.outcome = 'lease_expired'";

/* Handlers started for LEASED jobs: RUNNING now, fenced (a lost lease shows at the heartbeat). */
static const char start_sql[] =
    "UPDATE pendulum.jobs j SET state = 'RUNNING', started_at = now()"
    " FROM unnest($1::bigint[], $2::bigint[]) AS l(id, token)"
    " WHERE j.id = l.id AND j.lease_token = l.token AND j.state = 'LEASED'";

/*
 * Progress notes of held jobs (sql/024_progress.sql), fenced: a token that
 * no longer holds the lease writes nothing. $1: [{id, token, text}].
 */
static const char progress_sql[] =
    "UPDATE pendulum.jobs j SET progress = l.text, progress_at = now()"
    " FROM jsonb_to_recordset($1::jsonb) AS l(id bigint, token bigint, text text)"
    " WHERE j.id = l.id AND j.lease_token = l.token AND j.state IN ('LEASED', 'RUNNING')";

/*
 * The leases held extended, the worker seen: a row per lease still held,
 * its token and whether an operator asked to cancel its job (sql/022).
 */
static const char heartbeat_sql[] =
    "WITH h AS ("
    " UPDATE pendulum.jobs j SET lease_expires_at = now() + $3::bigint * interval '1 millisecond'"
    " FROM unnest($1::bigint[], $2::bigint[]) AS l(id, token)"
    " WHERE j.id = l.id AND j.lease_token = l.token AND j.state IN ('LEASED', 'RUNNING')"
    " RETURNING j.lease_token, j.cancel_requested_at IS NOT NULL AS cancel"
    "), w AS ("
    " UPDATE pendulum.workers SET last_seen_at = now(), in_flight = $5 WHERE id = $4"
    ") SELECT lease_token, cancel FROM h";

static const char *const finish_kinds[] = {"succeeded", "retry",  "dead",
					   "release",	"snooze", "cancel"};

/*
 * finish_sql's kind of o: its verdict's, but for a workflow step that leaves
 * the run going (advance: PENDING, attempt 0, due after backoff_ms) and a
 * run parked (wait: PENDING until its signal or deadline, attempt refunded).
 */
static const char *finish_kind(const struct pd_outcome *o)
{
	switch (o->flow.kind) {
	case PD_FLOW_WRITE_STEP:
		return o->flow.last ? "succeeded" : "advance";
	case PD_FLOW_WRITE_PARK:
		return "wait";
	case PD_FLOW_WRITE_NONE:
	case PD_FLOW_WRITE_UNPARK:
		break;
	}
	return finish_kinds[o->kind];
}

/*
 * One outcome as a JSON object of the batch (the columns of finish_sql's o).
 * A member whose value is the column's default (NULL; false for the flags,
 * 0 for backoff_ms, which finish_sql reads through coalesce) is left out:
 * jsonb_to_recordset and the batch's checks cost per member (issue 26:
 * about 3.5 us a plain success less of PostgreSQL's CPU).
 */
static void outcome_json(struct pd_buf *b, const struct pd_job_outcome *x)
{
	const struct pd_outcome *o = &x->o;

	pd_buf_puts(b, "{\"id\":");
	pd_buf_put_i64(b, x->id);
	pd_json_member_i64(b, "token", x->token);
	pd_json_member_str(b, "kind", finish_kind(o));
	if (o->backoff_ms != 0)
		pd_json_member_i64(b, "backoff_ms", o->backoff_ms);
	if (o->flow.kind != PD_FLOW_WRITE_NONE)
		pd_json_member_i64(b, "attempt", o->flow.attempts);
	if (o->flow.kind == PD_FLOW_WRITE_STEP)
		pd_json_member_str(b, "next_key", o->flow.next_key);
	if (o->kind == PD_VERDICT_SNOOZE) {
		pd_json_member_i64(b, "snooze_ms", o->snooze_ms);
		pd_json_member_i64(b, "max_snoozes", o->snooze_cap);
	}
	if (o->result)
		pd_json_member_raw(b, "result", o->result);
	if (o->result_is_text)
		pd_json_member_bool(b, "result_is_text", 1);
	if (o->result_truncated)
		pd_json_member_bool(b, "result_truncated", 1);
	if (o->error)
		pd_json_member_str(b, "error", o->error);
	if (o->dead_reason)
		pd_json_member_str(b, "dead_reason", o->dead_reason);
	pd_json_member_str(b, "outcome", o->outcome);
	if (o->exit_code >= 0)
		pd_json_member_i64(b, "exit_code", o->exit_code);
	if (o->signal > 0)
		pd_json_member_i64(b, "signal", o->signal);
	if (o->started_ago_ms >= 0)
		pd_json_member_i64(b, "started_ago_ms", o->started_ago_ms);
	if (o->stderr_tail)
		pd_json_member_str(b, "stderr_tail", o->stderr_tail);
	pd_buf_putc(b, '}');
}

/*
 * The hook jobs of the outcomes just written (sql/025): $1 a JSON array of
 * {id, token, events}, sent after finish_sql in the same transaction.
 */
static const char hooks_sql[] = "SELECT pendulum.hook_jobs($1::jsonb)";

/*
 * x's hook events as a JSON object of hooks_sql's batch, when it has any
 * that its outcome may make: dead_letter for a failure or a release (an
 * at-most-once job's is a dead letter), failure for a failure, success for a
 * success; the database keeps those its new state fits.
 */
static void hooks_json(struct pd_buf *b, const struct pd_job_outcome *x)
{
	const char *kind = finish_kind(&x->o);
	int failed = strcmp(kind, "retry") == 0 || strcmp(kind, "dead") == 0;
	const int fits[PD_HOOK_NEVENTS] = {
	    [PD_HOOK_DEAD_LETTER] = failed || strcmp(kind, "release") == 0,
	    [PD_HOOK_FAILURE] = failed,
	    [PD_HOOK_SUCCESS] = strcmp(kind, "succeeded") == 0,
	};
	int n = 0;

	for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++) {
		if (!(x->o.hooks & 1u << ev) || !fits[ev])
			continue;
		if (n++ == 0) {
			pd_buf_puts(b, b->len ? ",{\"id\":" : "[{\"id\":");
			pd_buf_put_i64(b, x->id);
			pd_json_member_i64(b, "token", x->token);
			pd_buf_puts(b, ",\"events\":[");
		} else {
			pd_buf_putc(b, ',');
		}
		pd_json_quote_or_null(b, pd_hook_event_name((enum pd_hook_event)ev));
	}
	if (n > 0)
		pd_buf_puts(b, "]}");
}

static const char *const flow_acts[] = {NULL, "step", "park", "unpark"};

/* x's run write as a JSON object of flow_sql's batch (the columns of its f). */
static void flow_json(struct pd_buf *b, const struct pd_job_outcome *x)
{
	const struct pd_flow_write *f = &x->o.flow;

	pd_buf_puts(b, "{\"run\":");
	pd_buf_put_i64(b, f->run);
	pd_json_member_i64(b, "step", f->step);
	pd_json_member_str(b, "act", flow_acts[f->kind]);
	pd_json_member_i64(b, "attempts", f->attempts);
	pd_json_member_i64(b, "token", x->token);
	pd_json_member_i64(b, "ran_ms", f->ran_ms);
	pd_json_member_i64(b, "sleep_ms", f->sleep_ms);
	if (f->wait_ms >= 0)
		pd_json_member_i64(b, "wait_ms", f->wait_ms);
	pd_json_member_str(b, "name", f->step_name);
	pd_json_member_str(b, "kind", f->step_kind);
	pd_json_member_str(b, "signal", f->signal);
	pd_json_member_raw(b, "steps", f->steps);
	pd_json_member_raw(b, "output", f->output);
	pd_json_member_bool(b, "output_is_text", f->output_is_text);
	pd_json_member_bool(b, "output_truncated", f->output_truncated);
	pd_buf_putc(b, '}');
}

void pd_trip_array(struct pd_buf *b, const struct pd_trip *t, enum pd_trip_kind k,
		   enum pd_trip_field f)
{
	int n = 0;

	pd_buf_putc(b, '{');
	for (int i = 0; i < t->n; i++) {
		const struct pd_trip_item *it = &t->items[i];
		long long v;

		if (it->kind != k)
			continue;
		v = f == PD_TRIP_ID	   ? it->id
		    : f == PD_TRIP_TOKEN   ? it->token
		    : f == PD_TRIP_ATTEMPT ? it->attempt
					   : it->ago_ms;
		if (n++)
			pd_buf_putc(b, ',');
		pd_buf_put_i64(b, v);
	}
	pd_buf_putc(b, '}');
}

void pd_trip_json(const struct pd_trip *t, struct pd_trip_json *j)
{
	memset(j, 0, sizeof(*j));
	for (int i = 0; i < t->n; i++) {
		if (t->items[i].kind != PD_TRIP_PROGRESS)
			continue;
		pd_buf_puts(&j->notes, j->notes.len ? ",{\"id\":" : "[{\"id\":");
		pd_buf_put_i64(&j->notes, t->items[i].id);
		pd_json_member_i64(&j->notes, "token", t->items[i].token);
		pd_json_member_str(&j->notes, "text", t->items[i].text);
		pd_buf_putc(&j->notes, '}');
	}
	if (j->notes.len > 0)
		pd_buf_putc(&j->notes, ']');
	for (int i = 0; i < t->n; i++) {
		if (t->items[i].kind != PD_TRIP_OUTCOME ||
		    t->items[i].out.o.flow.kind == PD_FLOW_WRITE_NONE)
			continue;
		pd_buf_putc(&j->flows, j->flows.len ? ',' : '[');
		flow_json(&j->flows, &t->items[i].out);
	}
	if (j->flows.len > 0)
		pd_buf_putc(&j->flows, ']');
	if (t->noutcomes <= 0)
		return;
	for (int i = 0; i < t->n; i++) {
		const char *kind;

		if (t->items[i].kind != PD_TRIP_OUTCOME)
			continue;
		kind = finish_kind(&t->items[i].out.o);
		/* any kind but these three may go back (a new kind too: checked) */
		j->back |= strcmp(kind, "succeeded") != 0 && strcmp(kind, "dead") != 0 &&
			   strcmp(kind, "cancel") != 0;
		pd_buf_putc(&j->outcomes, j->outcomes.len ? ',' : '[');
		outcome_json(&j->outcomes, &t->items[i].out);
		hooks_json(&j->hooks, &t->items[i].out);
	}
	if (j->outcomes.len > 0)
		pd_buf_putc(&j->outcomes, ']');
	if (j->hooks.len > 0)
		pd_buf_putc(&j->hooks, ']');
}

void pd_trip_json_release(struct pd_trip_json *j)
{
	pd_buf_release(&j->notes);
	pd_buf_release(&j->flows);
	pd_buf_release(&j->outcomes);
	pd_buf_release(&j->hooks);
}

int pd_jobs_sync_send(struct pd_db *db, struct pd_trip *s, struct pd_err *e)
{
	struct pd_db_stmt *st = s->st;
	struct pd_buf lost_ids = PD_BUF_INIT, lost_tokens = PD_BUF_INIT;
	struct pd_buf lost_attempts = PD_BUF_INIT, lost_ago = PD_BUF_INIT;
	struct pd_buf start_ids = PD_BUF_INIT, start_tokens = PD_BUF_INIT;
	struct pd_buf beat_ids = PD_BUF_INIT, beat_tokens = PD_BUF_INIT;
	struct pd_trip_json j;
	struct claim_args ca;
	char lease[PD_I64_CHARS], inflight[PD_I64_CHARS];
	const char *fp[3], *lp[5], *bp[5], *sp[2], *wp[1], *np[1], *hp[1];
	int n = 0, rc;

	s->fenced = 0;
	s->claimed = NULL;
	s->nclaimed = 0;
	s->fi = s->bi = s->ci = -1;
	memset(&ca, 0, sizeof(ca));
	pd_trip_json(s, &j);
	if (s->nstart > 0) {
		pd_trip_array(&start_ids, s, PD_TRIP_START, PD_TRIP_ID);
		pd_trip_array(&start_tokens, s, PD_TRIP_START, PD_TRIP_TOKEN);
		sp[0] = start_ids.data;
		sp[1] = start_tokens.data;
		st[n++] = (struct pd_db_stmt){"pd_start", start_sql, 2, sp, PGRES_COMMAND_OK, NULL};
	}
	if (j.notes.len > 0) {
		np[0] = j.notes.data;
		st[n++] =
		    (struct pd_db_stmt){"pd_progress", progress_sql, 1, np, PGRES_COMMAND_OK, NULL};
	}
	if (j.flows.len > 0) {
		wp[0] = j.flows.data;
		st[n++] = (struct pd_db_stmt){"pd_flow", flow_sql, 1, wp, PGRES_COMMAND_OK, NULL};
	}
	if (j.outcomes.len > 0) {
		fp[0] = j.outcomes.data;
		fp[1] = s->worker;
		fp[2] = j.back ? "true" : "false";
		s->fi = n;
		st[n++] =
		    (struct pd_db_stmt){"pd_finish", finish_sql, 3, fp, PGRES_TUPLES_OK, NULL};
	}
	if (j.hooks.len > 0) {
		hp[0] = j.hooks.data;
		st[n++] = (struct pd_db_stmt){"pd_hooks", hooks_sql, 1, hp, PGRES_TUPLES_OK, NULL};
	}
	if (s->nlost > 0) {
		pd_trip_array(&lost_ids, s, PD_TRIP_LOST, PD_TRIP_ID);
		pd_trip_array(&lost_tokens, s, PD_TRIP_LOST, PD_TRIP_TOKEN);
		pd_trip_array(&lost_attempts, s, PD_TRIP_LOST, PD_TRIP_ATTEMPT);
		pd_trip_array(&lost_ago, s, PD_TRIP_LOST, PD_TRIP_AGO);
		lp[0] = lost_ids.data;
		lp[1] = lost_tokens.data;
		lp[2] = lost_attempts.data;
		lp[3] = lost_ago.data;
		lp[4] = s->worker;
		st[n++] =
		    (struct pd_db_stmt){"pd_lease_lost", lost_sql, 5, lp, PGRES_COMMAND_OK, NULL};
	}
	if (s->beat) {
		pd_trip_array(&beat_ids, s, PD_TRIP_BEAT, PD_TRIP_ID);
		pd_trip_array(&beat_tokens, s, PD_TRIP_BEAT, PD_TRIP_TOKEN);
		pd_fmt_i64(lease, s->lease_ms);
		pd_fmt_i64(inflight, s->nbeat);
		bp[0] = beat_ids.data;
		bp[1] = beat_tokens.data;
		bp[2] = lease;
		bp[3] = s->worker;
		bp[4] = inflight;
		s->bi = n;
		st[n++] = (struct pd_db_stmt){"pd_heartbeat",  heartbeat_sql, 5, bp,
					      PGRES_TUPLES_OK, NULL};
	}
	if (s->claim > 0) {
		claim_args_build(&ca, s->worker, s->queues, s->nqueues, s->types, s->ntypes,
				 s->claim, s->lease_ms, s->claim_start, s->fair);
		s->ci = n;
		st[n++] =
		    (struct pd_db_stmt){"pd_claim", claim_sql, 7, ca.params, PGRES_TUPLES_OK, NULL};
	}
	s->nst = n;
	rc = n > 0 ? pd_db_pipeline_send(db, st, n, e) : 0;
	pd_trip_json_release(&j);
	pd_buf_release(&start_ids);
	pd_buf_release(&start_tokens);
	pd_buf_release(&lost_ids);
	pd_buf_release(&lost_tokens);
	pd_buf_release(&lost_attempts);
	pd_buf_release(&lost_ago);
	pd_buf_release(&beat_ids);
	pd_buf_release(&beat_tokens);
	claim_args_release(&ca);
	return rc;
}

/*
 * An outcome's place in a trip's items, sorted by job id and token: the
 * finish's rows find theirs by binary search (a trip of 1,000 outcomes
 * scanned the items once a row: 19 % of the worker's CPU in the no-op
 * drain, issue 26). By the token too: one job may be in a batch twice, its
 * lease lost and the job claimed again by the same worker.
 */
struct outcome_at {
	long long id, token;
	int i;
};

static int outcome_at_cmp(const void *a, const void *b)
{
	const struct outcome_at *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->token != y->token)
		return x->token < y->token ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int pd_jobs_sync_collect(struct pd_db *db, struct pd_trip *s, struct pd_err *e)
{
	int rc = s->nst > 0 ? pd_db_pipeline_collect(db, e) : 1;

	if (rc <= 0)
		return rc;
	if (s->fi >= 0) {
		PGresult *r = s->st[s->fi].res;
		struct outcome_at *by = pd_xcalloc((size_t)s->n + 1, sizeof(*by));
		int nby = 0;

		for (int i = 0; i < s->n; i++)
			if (s->items[i].kind == PD_TRIP_OUTCOME)
				by[nby++] = (struct outcome_at){s->items[i].out.id,
								s->items[i].out.token, i};
		qsort(by, (size_t)nby, sizeof(*by), outcome_at_cmp);
		for (int row = 0; row < PQntuples(r); row++) {
			long long id = strtoll(PQgetvalue(r, row, 0), NULL, 10);
			long long token = strtoll(PQgetvalue(r, row, 7), NULL, 10);
			int lo = 0, hi = nby;

			while (lo < hi) { /* the first entry of by with this id and token */
				int mid = lo + (hi - lo) / 2;

				if (by[mid].id < id || (by[mid].id == id && by[mid].token < token))
					lo = mid + 1;
				else
					hi = mid;
			}
			for (int k = lo; k < nby && by[k].id == id && by[k].token == token; k++) {
				struct pd_job_outcome *x = &s->items[by[k].i].out;

				x->applied = !PQgetisnull(r, row, 1);
				x->written_before = *PQgetvalue(r, row, 6) == 't';
				snprintf(x->state, sizeof(x->state), "%s",
					 x->applied ? PQgetvalue(r, row, 1) : "");
				x->due_in_ms = PQgetisnull(r, row, 2)
						   ? -1
						   : strtoll(PQgetvalue(r, row, 2), NULL, 10);
				s->fenced += !x->applied && !x->written_before;
			}
		}
		free(by);
	}
	if (s->bi >= 0) {
		PGresult *r = s->st[s->bi].res;

		for (int i = 0; i < s->n; i++)
			s->items[i].held = s->items[i].cancel = 0;
		for (int row = 0; row < PQntuples(r); row++) {
			long long t = strtoll(PQgetvalue(r, row, 0), NULL, 10);

			for (int i = 0; i < s->n; i++) {
				if (s->items[i].kind != PD_TRIP_BEAT || s->items[i].token != t)
					continue;
				s->items[i].held = 1;
				s->items[i].cancel = *PQgetvalue(r, row, 1) == 't';
			}
		}
	}
	if (s->ci >= 0)
		claim_parse(s->st[s->ci].res, &s->claimed, &s->nclaimed, &s->fair);
	for (int i = 0; i < s->nst; i++)
		PQclear(s->st[i].res);
	s->nst = 0;
	return 1;
}

int pd_jobs_sync_wait(struct pd_db *db, struct pd_trip *s, struct pd_err *e)
{
	int rc;

	while ((rc = pd_jobs_sync_collect(db, s, e)) == 0)
		if (pd_db_await(db, e) < 0)
			return -1;
	return rc < 0 ? -1 : 0;
}

int pd_jobs_sweep(struct pd_db *db, long long *next_ms, int *unblocked, struct pd_err *e)
{
	/*
	 * u walks jobs_blocked_id_idx (sql/016: BLOCKED rows only), the minimum
	 * is the first entry of jobs_lease_idx: neither reads the finished
	 * history. A NULL minimum (nothing leased) stays NULL.
	 */
	static const char sql[] =
	    "WITH u AS ("
	    " UPDATE pendulum.jobs b SET state = 'PENDING', run_at = greatest(b.run_at, now())"
	    " WHERE b.state = 'BLOCKED' AND NOT EXISTS (SELECT 1 FROM pendulum.jobs d"
	    "  WHERE d.id = ANY (b.depends_on) AND d.state <> 'SUCCEEDED')"
	    " RETURNING b.queue"
	    "), n AS ("
	    " SELECT pg_notify('pendulum_jobs', q.queue) FROM (SELECT DISTINCT queue FROM u) q"
	    ") "
	    "SELECT ceil(extract(epoch FROM (SELECT min(lease_expires_at) FROM pendulum.jobs"
	    "  WHERE state IN ('LEASED', 'RUNNING')) - now()) * 1000)::bigint,"
	    " (SELECT count(*) FROM u), (SELECT count(*) FROM n)";
	PGresult *r;

	if (pd_db_exec(db, sql, 0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	*next_ms = -1;
	if (!PQgetisnull(r, 0, 0)) {
		*next_ms = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		if (*next_ms < 0)
			*next_ms = 0;
	}
	if (unblocked)
		*unblocked = atoi(PQgetvalue(r, 0, 1));
	PQclear(r);
	return 0;
}

/* clang-format off */
/*
 * What a replay resets; the CTE names the updated table j. A job with a
 * dependency that has not SUCCEEDED (a propagated dependent, sql/012) goes
 * back to BLOCKED behind it, not to PENDING: it must not run before it.
 */
#define REPLAY_SET                                                                                 \
	" state = CASE WHEN EXISTS (SELECT 1 FROM pendulum.jobs d WHERE d.id = ANY (j.depends_on)" \
	" AND d.state <> 'SUCCEEDED') THEN 'BLOCKED' ELSE 'PENDING' END,"                          \
	" attempt = 0, replay_count = j.replay_count + 1, run_at = now(),"                        \
	" lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, finished_at = NULL,"    \
	" dead_reason = NULL, last_error = NULL, result = NULL, result_is_text = false,"          \
	" result_truncated = false, failed_dependency = NULL,"                                   \
	" cancel_requested_at = NULL, cancel_reason = NULL"

/*
 * A replayed job's queue wait leaves pendulum.metric_samples (it is no longer
 * finished): add it to retired_metrics first, in the same statement, so that
 * pendulum_queue_wait_seconds never goes down (sql/011). IDS: an SQL
 * expression of the jobs about to be replayed.
 */
#define RETIRE_WAITS(IDS)                                                                          \
	" w AS (INSERT INTO pendulum.retired_metrics AS m (kind, queue, outcome, bucket, n, seconds)" \
	" SELECT s.kind, s.queue, s.outcome, s.bucket, count(*), coalesce(sum(s.d), 0)"           \
	" FROM pendulum.metric_samples s WHERE s.kind = 'wait' AND s.job_id IN (" IDS ")"          \
	" GROUP BY s.kind, s.queue, s.outcome, s.bucket"                                           \
	" ON CONFLICT (kind, queue, outcome, bucket)"                                              \
	" DO UPDATE SET n = m.n + EXCLUDED.n, seconds = m.seconds + EXCLUDED.seconds),"

/*
 * After the UPDATE CTE j: the replayed jobs r, with the propagated
 * dependents of DEPS (an SQL expression of job ids, or NULL) put back to
 * BLOCKED (pendulum.reblock_dependents, sql/012); x all of them, each
 * BLOCKED one with the first dependency it waits for and that one's state
 * (its new state when this statement replays it too); idle workers of the
 * queues that got PENDING jobs woken. Columns: id, job_type, state, queue,
 * replay_count, waits_for, waits_for_state, dependent (re-blocked by DEPS).
 */
#define REPLAY_TAIL(DEPS)                                                                          \
	" RETURNING j.id, j.job_type, j.state, j.queue, j.replay_count, j.depends_on),"           \
	" x AS (SELECT id, job_type, state, queue, replay_count, depends_on, false AS dep FROM r"  \
	" UNION ALL SELECT b.id, b.job_type, b.state, b.queue, b.replay_count,"                   \
	" ARRAY[b.failed_dependency], true FROM pendulum.reblock_dependents(" DEPS ") b),"         \
	" n AS (SELECT pg_notify('pendulum_jobs', q.queue)"                                        \
	" FROM (SELECT DISTINCT queue FROM r WHERE state = 'PENDING') q)"                          \
	" SELECT x.id, x.job_type, x.state, x.queue, x.replay_count, w.id, w.state, x.dep,"       \
	" (SELECT count(*) FROM n) FROM x LEFT JOIN LATERAL (SELECT d.id,"                         \
	" coalesce((SELECT y.state FROM x y WHERE y.id = d.id), d.state) AS state"               \
	" FROM pendulum.jobs d WHERE x.state = 'BLOCKED' AND d.id = ANY (x.depends_on)"          \
	" AND coalesce((SELECT y.state FROM x y WHERE y.id = d.id), d.state) <> 'SUCCEEDED'"     \
	" ORDER BY d.id LIMIT 1) w ON true ORDER BY x.dep, x.id"
/* clang-format on */

int pd_jobs_replay(struct pd_db *db, long long id, int with_dependents, PGresult **r,
		   struct pd_err *e)
{
	/* clang-format off */
	/*
	 * A clean success's record is its job row (sql/008): the view's row for it
	 * is stored before the job row is reset.
	 */
	static const char sql[] =
	    "WITH k AS (INSERT INTO pendulum.attempt_rows (job_id, tenant_id, attempt, lease_token,"
	    " worker, started_at, finished_at, outcome, exit_code)"
	    " SELECT v.job_id, j.tenant_id, v.attempt, v.lease_token, v.worker,"
	    " coalesce(v.started_at, v.finished_at), v.finished_at, v.outcome, v.exit_code"
	    " FROM pendulum.job_attempts v"
	    " JOIN pendulum.jobs j ON j.id = v.job_id AND j.lease_token = v.lease_token"
	    " WHERE v.job_id = $1 AND j.state = 'SUCCEEDED'"
	    " ON CONFLICT (job_id, lease_token) DO NOTHING)," RETIRE_WAITS("$1")
	    " r AS (UPDATE pendulum.jobs j SET" REPLAY_SET
	    " WHERE j.id = $1 AND j.state IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELLED')"
	    REPLAY_TAIL("CASE WHEN $2::boolean THEN ARRAY(SELECT id FROM r) END");
	/* clang-format on */
	char ids[24];
	const char *params[2] = {ids, with_dependents ? "true" : "false"};

	snprintf(ids, sizeof(ids), "%lld", id);
	return pd_db_exec(db, sql, 2, params, PGRES_TUPLES_OK, r, e);
}

int pd_jobs_cancel(struct pd_db *db, long long id, const char *reason, PGresult **r,
		   struct pd_err *e)
{
	/*
	 * c: the jobs BLOCKED on it, transitively, are cancelled with it
	 * (sql/012); r: a held one is asked (sql/022), and its worker woken.
	 */
	static const char sql[] =
	    "WITH c AS (UPDATE pendulum.jobs SET state = 'CANCELLED', finished_at = now(),"
	    " dead_reason = $2, last_error = $2"
	    " WHERE id = $1 AND state IN ('PENDING', 'BLOCKED')"
	    " RETURNING id, job_type, state, queue, dead_reason),"
	    " r AS (UPDATE pendulum.jobs SET cancel_reason = $2,"
	    " cancel_requested_at = coalesce(cancel_requested_at, now())"
	    " WHERE id = $1 AND state IN ('LEASED', 'RUNNING')"
	    " RETURNING id, job_type, state, queue, cancel_reason, lease_owner),"
	    " n AS (SELECT pg_notify('pendulum_cancel', lease_owner) FROM r"
	    " WHERE lease_owner IS NOT NULL)"
	    " SELECT id, job_type, state, queue, dead_reason,"
	    " pendulum.fail_dependents(ARRAY[id], 'CANCELLED'), NULL FROM c"
	    " UNION ALL SELECT id, job_type, state, queue, cancel_reason, 0, lease_owner"
	    " FROM r WHERE (SELECT count(*) FROM n) >= 0";
	char ids[24];
	const char *params[2] = {ids, reason};

	snprintf(ids, sizeof(ids), "%lld", id);
	return pd_db_exec(db, sql, 2, params, PGRES_TUPLES_OK, r, e);
}

int pd_jobs_dlq_replay(struct pd_db *db, const long long *ids, int nids, const char *tenant,
		       const char *type, const char *queue, long long limit, PGresult **r,
		       struct pd_err *e)
{
	/* $1 ids or NULL, $2 tenant, $3 type, $4 queue, $5 limit. */
/* clang-format off */
#define DLQ_PICK                                                                                   \
	"WITH c AS (SELECT id FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'"                     \
	" AND ($1::bigint[] IS NULL OR id = ANY ($1::bigint[]))"                                    \
	" AND ($2::text IS NULL OR tenant_id = $2) AND ($3::text IS NULL OR job_type = $3)"       \
	" AND ($4::text IS NULL OR queue = $4)"                                                     \
	" ORDER BY finished_at NULLS FIRST, id LIMIT $5"
#define DLQ_REPLAY                                                                                 \
	")," RETIRE_WAITS("SELECT id FROM c") " r AS (UPDATE pendulum.jobs j SET" REPLAY_SET " FROM c" \
	" WHERE j.id = c.id AND j.state = 'DEAD_LETTERED'" REPLAY_TAIL("NULL::bigint[]")
	/* clang-format on */
	/* Bulk: skip rows another session holds; by id: wait for them, then recheck. */
	static const char bulk_sql[] = DLQ_PICK " FOR UPDATE SKIP LOCKED" DLQ_REPLAY;
	static const char ids_sql[] = DLQ_PICK " FOR UPDATE" DLQ_REPLAY;
#undef DLQ_PICK
#undef DLQ_REPLAY
	struct pd_buf ia = PD_BUF_INIT;
	char lim[24];
	const char *params[5];
	int rc;

	if (nids > 0)
		pd_db_id_array(&ia, ids, nids);
	snprintf(lim, sizeof(lim), "%lld", limit);
	params[0] = nids > 0 ? ia.data : NULL;
	params[1] = tenant;
	params[2] = type;
	params[3] = queue;
	params[4] = lim;
	rc = pd_db_exec(db, nids > 0 ? ids_sql : bulk_sql, 5, params, PGRES_TUPLES_OK, r, e);
	pd_buf_release(&ia);
	return rc;
}

int pd_jobs_unsettled(struct pd_db *db, const char *const *queues, int nqueues,
		      const char *const *types, int ntypes, long long horizon_ms, long long *id,
		      char *why, size_t whylen, struct pd_err *e)
{
	/* clang-format off */
	/* One probe of each kind, LIMIT 1: the running set, the due rows, the BLOCKED rows. */
#define SERVED " j.queue = ANY (s.q) AND (s.t IS NULL OR j.job_type = ANY (s.t))"
	static const char sql[] =
	    "WITH s AS (SELECT $1::text[] AS q, $2::text[] AS t,"
	    " now() + $3::bigint * interval '1 millisecond' AS h)"
	    " SELECT u.id, u.state, u.why FROM s CROSS JOIN LATERAL ("
	    "(SELECT j.id, j.state, 'running'::text AS why FROM pendulum.jobs j"
	    " WHERE j.state IN ('LEASED', 'RUNNING') AND" SERVED " LIMIT 1)"
	    " UNION ALL"
	    " (SELECT j.id, j.state, CASE WHEN j.run_at <= now() THEN 'due'"
	    " WHEN j.attempt > 0 THEN 'in retry backoff' ELSE 'due soon' END"
	    " FROM pendulum.jobs j WHERE j.state = 'PENDING' AND" SERVED
	    " AND (j.run_at <= s.h OR j.attempt > 0)"
	    " AND NOT EXISTS (SELECT 1 FROM pendulum.limits l WHERE l.paused AND l.key IN"
	    " ('queue:' || j.queue, 'tenant:' || j.tenant_id, 'type:' || j.job_type,"
	    " j.concurrency_key)) LIMIT 1)"
	    " UNION ALL"
	    " (SELECT j.id, j.state, 'waiting on a dependency' FROM pendulum.jobs j"
	    " WHERE j.state = 'BLOCKED' AND" SERVED
	    " AND NOT EXISTS (SELECT 1 FROM pendulum.jobs d WHERE d.id = ANY (j.depends_on)"
	    " AND (d.state IN ('DEAD_LETTERED', 'CANCELLED')"
	    " OR (d.state = 'PENDING' AND d.run_at > s.h))) LIMIT 1)) u LIMIT 1";
#undef SERVED
	/* clang-format on */
	struct pd_buf q = PD_BUF_INIT, t = PD_BUF_INIT;
	char h[24];
	const char *params[3];
	PGresult *r;
	int rc;

	pd_db_text_array(&q, queues, nqueues);
	if (types)
		pd_db_text_array(&t, types, ntypes);
	snprintf(h, sizeof(h), "%lld", horizon_ms);
	params[0] = q.data;
	params[1] = types ? t.data : NULL;
	params[2] = h;
	rc = pd_db_exec(db, sql, 3, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&q);
	pd_buf_release(&t);
	if (rc < 0)
		return -1;
	*id = 0;
	if (whylen > 0)
		why[0] = '\0';
	if (PQntuples(r) == 1 && PQnfields(r) == 3) {
		*id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		snprintf(why, whylen, "%s, %s", PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2));
	}
	PQclear(r);
	return 0;
}
