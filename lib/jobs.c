#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "log.h"

void pd_pg_array(struct pd_buf *b, const char *const *v, int n)
{
	pd_buf_putc(b, '{');
	for (int i = 0; i < n; i++) {
		if (i)
			pd_buf_putc(b, ',');
		pd_buf_putc(b, '"');
		for (const char *p = v[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				pd_buf_putc(b, '\\');
			pd_buf_putc(b, *p);
		}
		pd_buf_putc(b, '"');
	}
	pd_buf_putc(b, '}');
}

static char *dup_or_null(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : pd_xstrdup(PQgetvalue(r, row, col));
}

/*
 * The claim is pendulum.claim_jobs (sql/005_claim.sql, where its plan is
 * described and the reasons for it): per served queue an index walk of
 * jobs_claim_idx, one probe per priority level, due rows only (run_at <= now()
 * as an index bound), LIMIT n FOR UPDATE SKIP LOCKED; then a Sort of those at
 * most nqueues * n rows, LIMIT n. Never a bitmap scan or a sort of the
 * backlog (tests/claim-plan.bats). The rows come back unordered: sort them
 * here (at most n rows).
 */
static const char claim_sql[] =
    "SELECT id, lease_token, attempt, max_attempts, replay_count,"
    " COALESCE((extract(epoch FROM timeout) * 1000)::bigint, -1),"
    " job_type, queue, tenant_id, payload::text,"
    " to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
    " idempotency_key, traceparent "
    "FROM pendulum.claim_jobs($1::text[], $2::text[], $3::integer, $4::text,"
    " $5::bigint * interval '1 millisecond', $6::boolean) "
    "ORDER BY priority DESC, run_at, id";

int pd_jobs_claim(struct pd_db *db, const char *worker, const char *const *queues, int nqueues,
		  const char *const *types, int ntypes, int limit, long long lease_ms, int start,
		  struct pd_claimed **out, int *n, struct pd_err *e)
{
	struct pd_buf q = PD_BUF_INIT, t = PD_BUF_INIT;
	char lim[16], lease[24];
	const char *params[6];
	PGresult *r;
	int rc;

	*out = NULL;
	*n = 0;
	pd_pg_array(&q, queues, nqueues);
	if (types)
		pd_pg_array(&t, types, ntypes);
	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(lease, sizeof(lease), "%lld", lease_ms);
	params[0] = q.data;
	params[1] = types ? t.data : NULL;
	params[2] = lim;
	params[3] = worker;
	params[4] = lease;
	params[5] = start ? "true" : "false";
	rc = pd_db_exec(db, claim_sql, 6, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&q);
	pd_buf_release(&t);
	if (rc < 0)
		return -1;
	*n = PQntuples(r);
	if (*n > 0)
		*out = pd_xcalloc((size_t)*n, sizeof(**out));
	for (int i = 0; i < *n; i++) {
		struct pd_claimed *c = &(*out)[i];

		c->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		c->token = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		c->attempt = atoi(PQgetvalue(r, i, 2));
		c->max_attempts = atoi(PQgetvalue(r, i, 3));
		c->replay_count = atoi(PQgetvalue(r, i, 4));
		c->timeout_ms = strtoll(PQgetvalue(r, i, 5), NULL, 10);
		c->type = dup_or_null(r, i, 6);
		c->queue = dup_or_null(r, i, 7);
		c->tenant = dup_or_null(r, i, 8);
		c->payload = dup_or_null(r, i, 9);
		c->run_at = dup_or_null(r, i, 10);
		c->idempotency_key = dup_or_null(r, i, 11);
		c->traceparent = dup_or_null(r, i, 12);
	}
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
	}
	free(c);
}

/* "{1,2,3}" */
static void id_array(struct pd_buf *b, const long long *v, int n)
{
	pd_buf_putc(b, '{');
	for (int i = 0; i < n; i++)
		pd_buf_printf(b, "%s%lld", i ? "," : "", v[i]);
	pd_buf_putc(b, '}');
}

int pd_jobs_start(struct pd_db *db, const long long *ids, const long long *tokens, int n,
		  struct pd_err *e)
{
	static const char sql[] =
	    "WITH j AS (UPDATE pendulum.jobs j SET state = 'RUNNING', started_at = now()"
	    " FROM unnest($1::bigint[], $2::bigint[]) AS l(id, token)"
	    " WHERE j.id = l.id AND j.lease_token = l.token AND j.state = 'LEASED' RETURNING "
	    "j.id), "
	    "f AS (UPDATE pendulum.counters SET value = value + $3::integer - (SELECT count(*) "
	    "FROM j)"
	    " WHERE name = 'writes_fenced' AND (SELECT count(*) FROM j) < $3::integer) "
	    "SELECT count(*) FROM j";
	struct pd_buf ia = PD_BUF_INIT, ta = PD_BUF_INIT;
	char count[16];
	const char *params[3];
	char *v = NULL;
	int applied, rc;

	if (n == 0)
		return 0;
	id_array(&ia, ids, n);
	id_array(&ta, tokens, n);
	snprintf(count, sizeof(count), "%d", n);
	params[0] = ia.data;
	params[1] = ta.data;
	params[2] = count;
	rc = pd_db_value(db, sql, 3, params, &v, e);
	pd_buf_release(&ia);
	pd_buf_release(&ta);
	if (rc < 0)
		return -1;
	applied = v ? atoi(v) : 0;
	free(v);
	return applied;
}

static const char finish_sql[] =
    "WITH j AS ("
    " UPDATE pendulum.jobs SET"
    "  state = CASE $3 WHEN 'succeeded' THEN 'SUCCEEDED' WHEN 'dead' THEN 'DEAD_LETTERED'"
    "   WHEN 'release' THEN CASE WHEN delivery = 'at-most-once' THEN 'DEAD_LETTERED'"
    "    ELSE 'PENDING' END"
    "   ELSE CASE WHEN attempt >= max_attempts THEN 'DEAD_LETTERED' ELSE 'PENDING' END END,"
    "  attempt = CASE WHEN $3 = 'release' AND delivery <> 'at-most-once'"
    "   THEN greatest(attempt - 1, 0) ELSE attempt END,"
    "  run_at = CASE WHEN $3 = 'retry' AND attempt < max_attempts"
    "   THEN now() + $4::bigint * interval '1 millisecond'"
    "   WHEN $3 = 'release' THEN now() ELSE run_at END,"
    "  result = CASE $3 WHEN 'succeeded' THEN $5::jsonb ELSE result END,"
    "  result_is_text = CASE $3 WHEN 'succeeded' THEN $6::boolean ELSE result_is_text END,"
    "  result_truncated = CASE $3 WHEN 'succeeded' THEN $7::boolean ELSE result_truncated END,"
    "  last_error = CASE $3 WHEN 'succeeded' THEN NULL WHEN 'release' THEN last_error"
    "   ELSE $8 END,"
    "  dead_reason = CASE WHEN $3 = 'dead' THEN $9"
    "   WHEN $3 = 'release' AND delivery = 'at-most-once'"
    "    THEN 'interrupted by worker shutdown (at-most-once delivery: not run again)'"
    "   WHEN $3 = 'retry' AND attempt >= max_attempts THEN 'attempts exhausted' END,"
    "  finished_at = CASE WHEN $3 IN ('succeeded', 'dead')"
    "   OR ($3 = 'release' AND delivery = 'at-most-once')"
    "   OR ($3 = 'retry' AND attempt >= max_attempts) THEN now() END,"
    "  lease_owner = NULL, lease_expires_at = NULL"
    " WHERE id = $1 AND lease_token = $2 AND state IN ('LEASED', 'RUNNING')"
    " RETURNING id, state"
    "), a AS ("
    " UPDATE pendulum.job_attempts SET finished_at = now(), outcome = $10,"
    "  exit_code = $11::integer, signal = $12::integer, stderr_tail = $13"
    " WHERE job_id = $1 AND lease_token = $2 AND EXISTS (SELECT 1 FROM j)"
    "), u AS ("
    " UPDATE pendulum.jobs b SET state = 'PENDING', run_at = greatest(b.run_at, now())"
    " WHERE $3 = 'succeeded' AND b.state = 'BLOCKED' AND b.depends_on @> ARRAY[$1::bigint]"
    "  AND EXISTS (SELECT 1 FROM j)"
    "  AND NOT EXISTS (SELECT 1 FROM pendulum.jobs d WHERE d.id = ANY (b.depends_on)"
    "   AND d.id <> $1 AND d.state <> 'SUCCEEDED')"
    "), f AS ("
    " UPDATE pendulum.counters SET value = value + 1"
    " WHERE name = 'writes_fenced' AND NOT EXISTS (SELECT 1 FROM j)"
    ") "
    "SELECT state FROM j";

int pd_jobs_finish(struct pd_db *db, long long id, long long token, const struct pd_outcome *o,
		   char *state, struct pd_err *e)
{
	static const char *kinds[] = {"succeeded", "retry", "dead", "release"};
	char a[24], b[24], backoff[24], code[16], sig[16];
	const char *params[13];
	char *v = NULL;

	snprintf(a, sizeof(a), "%lld", id);
	snprintf(b, sizeof(b), "%lld", token);
	snprintf(backoff, sizeof(backoff), "%lld", o->backoff_ms);
	snprintf(code, sizeof(code), "%d", o->exit_code);
	snprintf(sig, sizeof(sig), "%d", o->signal);
	params[0] = a;
	params[1] = b;
	params[2] = kinds[o->kind];
	params[3] = backoff;
	params[4] = o->result;
	params[5] = o->result_is_text ? "true" : "false";
	params[6] = o->result_truncated ? "true" : "false";
	params[7] = o->error;
	params[8] = o->dead_reason;
	params[9] = o->outcome;
	params[10] = o->exit_code >= 0 ? code : NULL;
	params[11] = o->signal > 0 ? sig : NULL;
	params[12] = o->stderr_tail;
	if (pd_db_value(db, finish_sql, 13, params, &v, e) < 0)
		return -1;
	snprintf(state, 16, "%s", v ? v : "");
	free(v);
	return *state != '\0';
}

int pd_jobs_heartbeat(struct pd_db *db, const char *worker, const long long *ids,
		      const long long *tokens, int n, long long lease_ms, int *held,
		      struct pd_err *e)
{
	static const char sql[] =
	    "WITH h AS ("
	    " UPDATE pendulum.jobs j SET lease_expires_at = now() + $3::bigint * interval '1 "
	    "millisecond'"
	    " FROM unnest($1::bigint[], $2::bigint[]) AS l(id, token)"
	    " WHERE j.id = l.id AND j.lease_token = l.token AND j.state IN ('LEASED', 'RUNNING')"
	    " RETURNING j.lease_token"
	    "), w AS ("
	    " UPDATE pendulum.workers SET last_seen_at = now(), in_flight = $5 WHERE id = $4"
	    ") SELECT lease_token FROM h";
	struct pd_buf ia = PD_BUF_INIT, ta = PD_BUF_INIT;
	char lease[24], inflight[16];
	const char *params[5];
	PGresult *r;
	int rc;

	id_array(&ia, ids, n);
	id_array(&ta, tokens, n);
	for (int i = 0; i < n; i++)
		held[i] = 0;
	snprintf(lease, sizeof(lease), "%lld", lease_ms);
	snprintf(inflight, sizeof(inflight), "%d", n);
	params[0] = ia.data;
	params[1] = ta.data;
	params[2] = lease;
	params[3] = worker;
	params[4] = inflight;
	rc = pd_db_exec(db, sql, 5, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&ia);
	pd_buf_release(&ta);
	if (rc < 0)
		return -1;
	for (int row = 0; row < PQntuples(r); row++) {
		long long t = strtoll(PQgetvalue(r, row, 0), NULL, 10);

		for (int i = 0; i < n; i++)
			if (tokens[i] == t)
				held[i] = 1;
	}
	PQclear(r);
	return 0;
}

int pd_jobs_reap(struct pd_db *db, int *requeued, int *dead, struct pd_err *e)
{
	static const char sql[] =
	    "WITH x AS ("
	    " SELECT id, lease_token FROM pendulum.jobs"
	    " WHERE state IN ('LEASED', 'RUNNING') AND lease_expires_at < now()"
	    " ORDER BY lease_expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED"
	    "), j AS ("
	    " UPDATE pendulum.jobs j SET"
	    "  state = CASE WHEN j.delivery = 'at-most-once' OR j.attempt >= j.max_attempts"
	    "   THEN 'DEAD_LETTERED' ELSE 'PENDING' END,"
	    "  dead_reason = CASE WHEN j.delivery = 'at-most-once'"
	    "   THEN 'lease expired (at-most-once delivery: not run again)'"
	    "   WHEN j.attempt >= j.max_attempts THEN 'attempts exhausted (last lease expired)' "
	    "END,"
	    "  finished_at = CASE WHEN j.delivery = 'at-most-once' OR j.attempt >= j.max_attempts"
	    "   THEN now() END,"
	    "  last_error = 'lease expired (worker ' || coalesce(j.lease_owner, '?') || ')',"
	    "  run_at = now(), lease_owner = NULL, lease_expires_at = NULL"
	    " FROM x WHERE j.id = x.id"
	    " RETURNING j.id, j.state, x.lease_token"
	    "), a AS ("
	    " UPDATE pendulum.job_attempts a SET finished_at = now(), outcome = 'lease_expired'"
	    " FROM j WHERE a.job_id = j.id AND a.lease_token = j.lease_token"
	    "), n AS ("
	    " SELECT pg_notify('pendulum_jobs', q.queue) FROM (SELECT DISTINCT jj.queue"
	    "  FROM pendulum.jobs jj JOIN j ON jj.id = j.id WHERE j.state = 'PENDING') q"
	    ") "
	    "SELECT count(*) FILTER (WHERE state = 'PENDING'),"
	    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'), (SELECT count(*) FROM n) FROM j";
	static const char unblock_sql[] =
	    "UPDATE pendulum.jobs b SET state = 'PENDING', run_at = greatest(b.run_at, now())"
	    " WHERE b.state = 'BLOCKED' AND NOT EXISTS (SELECT 1 FROM pendulum.jobs d"
	    "  WHERE d.id = ANY (b.depends_on) AND d.state <> 'SUCCEEDED')";
	PGresult *r;

	*requeued = *dead = 0;
	if (pd_db_exec(db, sql, 0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	if (PQntuples(r) == 1) {
		*requeued = atoi(PQgetvalue(r, 0, 0));
		*dead = atoi(PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return pd_db_exec(db, unblock_sql, 0, NULL, PGRES_COMMAND_OK, NULL, e);
}

int pd_worker_register(struct pd_db *db, const char *id, const char *host, int pid,
		       const char *const *queues, int nqueues, const char *const *types, int ntypes,
		       int concurrency, struct pd_err *e)
{
	static const char sql[] =
	    "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency)"
	    " VALUES ($1, $2, $3, $4, $5, $6)"
	    " ON CONFLICT (id) DO UPDATE SET last_seen_at = now(), in_flight = 0";
	struct pd_buf q = PD_BUF_INIT, t = PD_BUF_INIT;
	char p[16], c[16];
	const char *params[6];
	int rc;

	pd_pg_array(&q, queues, nqueues);
	pd_pg_array(&t, types, ntypes);
	snprintf(p, sizeof(p), "%d", pid);
	snprintf(c, sizeof(c), "%d", concurrency);
	params[0] = id;
	params[1] = host;
	params[2] = p;
	params[3] = q.data;
	params[4] = t.data;
	params[5] = c;
	rc = pd_db_exec(db, sql, 6, params, PGRES_COMMAND_OK, NULL, e);
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
	    "SELECT count(*) FROM pendulum.jobs WHERE id = $1 AND lease_token = $2"
	    " AND state IN ('LEASED', 'RUNNING') AND lease_expires_at > now()";
	char a[24], b[24];
	const char *params[2] = {a, b};
	char *v = NULL;
	int held;

	snprintf(a, sizeof(a), "%lld", id);
	snprintf(b, sizeof(b), "%lld", token);
	if (pd_db_value(db, sql, 2, params, &v, e) < 0)
		return -1;
	held = v && strcmp(v, "1") == 0;
	free(v);
	return held;
}
