/*
 * admin: pd-admin's listing queries (jobs, job show, dlq, queues, workers,
 * outbox, flow runs, depth) and the rows they hand to lib/render. It is over
 * 1,000 lines because each listing is one statement written out in full,
 * with its columns beside it, so that a reader sees the SQL a command runs in
 * one place; the statements that change state live in lib/jobs and
 * lib/outbox, the rendering in lib/render, the commands in lib/admincmd.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "dur.h"
#include "flowdb.h"
#include "job.h"
#include "jobs.h"
#include "outbox.h"
#include "json.h"
#include "summary.h"
#include "text.h"

/* An instant as ISO 8601 UTC with milliseconds, and an interval as seconds (3 decimals). */
#define ISO(x)	"to_char((" x ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define SECS(x) "round(extract(epoch FROM (" x "))::numeric, 3)"

/* --- parsing --- */

const char *pd_admin_state_in(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (strcasecmp(s, names[i]) == 0)
			return names[i];
	return NULL;
}

const char *pd_admin_state(const char *s)
{
	return pd_admin_state_in(pd_job_states, s);
}

const char *pd_admin_outbox_state(const char *s)
{
	return pd_admin_state_in(pd_outbox_states, s);
}

int pd_admin_parse_id(const char *s, const char *what, long long *id, struct pd_err *e)
{
	char *end, shown[PD_TEXT_SHOW_MAX + 4];
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end != '\0' || errno == ERANGE || v < 1)
		return pd_errf(e, PD_EX_USAGE, "invalid %s id '%s': expected a positive integer",
			       what, pd_text_show(shown, sizeof shown, s, strlen(s)));
	*id = v;
	return 0;
}

int pd_admin_id(const char *s, long long *id, struct pd_err *e)
{
	return pd_admin_parse_id(s, "job", id, e);
}

/* --- queries --- */

/* "{"PENDING","RUNNING"}", or NULL for no states. */
static char *state_array(const struct pd_admin_filter *f)
{
	struct pd_buf b = PD_BUF_INIT;

	if (f->nstates == 0)
		return NULL;
	pd_db_text_array(&b, (const char *const *)f->states, f->nstates);
	return pd_buf_detach(&b);
}

/* $1 states (text[] or NULL), $2 tenant, $3 type, $4 queue. */
/* clang-format off */
#define FILTER                                                                                     \
	" ($1::text[] IS NULL OR state = ANY ($1::text[])) AND ($2::text IS NULL OR tenant_id = $2)" \
	" AND ($3::text IS NULL OR job_type = $3) AND ($4::text IS NULL OR queue = $4)"
/* clang-format on */

/* Filter, limit, offset as the six parameters of a listing. */
/* Run sql with n params and render its rows as cols into out: 0, or -1 with e filled. */
static int show(struct pd_db *db, const char *sql, int n, const char *const *params,
		const struct pd_col *cols, int ncols, const struct pd_fmt *fmt, struct pd_buf *out,
		struct pd_err *e)
{
	PGresult *r;

	if (pd_db_exec(db, sql, n, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	pd_render_result(r, cols, ncols, fmt, out);
	PQclear(r);
	return 0;
}

static int run_listing(struct pd_db *db, const char *sql, const struct pd_admin_filter *f,
		       const char *states, PGresult **r, struct pd_err *e)
{
	char lim[24], off[24];
	const char *params[6] = {states, f->tenant, f->type, f->queue, lim, off};

	snprintf(lim, sizeof(lim), "%lld", f->limit > 0 ? f->limit : 50);
	snprintf(off, sizeof(off), "%lld", f->offset > 0 ? f->offset : 0);
	return pd_db_exec(db, sql, 6, params, PGRES_TUPLES_OK, r, e);
}

/* "1-50 of 1234 jobs" after a table; the total is the last column. */
static void footer(const PGresult *r, const struct pd_admin_filter *f, const char *what,
		   struct pd_buf *out)
{
	int n = 0, nf = PQnfields(r);
	long long total = 0, off = f->offset > 0 ? f->offset : 0;

	for (int i = 0; i < PQntuples(r); i++)
		if (!PQgetisnull(r, i, 0))
			n++;
	if (PQntuples(r) > 0 && nf > 0 && !PQgetisnull(r, 0, nf - 1))
		total = strtoll(PQgetvalue(r, 0, nf - 1), NULL, 10);
	if (n > 0)
		pd_buf_printf(out, "%lld-%lld of %lld %s\n", off + 1, off + n, total, what);
	else
		pd_buf_printf(out, "0 of %lld %s%s\n", total, what,
			      total > 0 ? " (past the last page)" : "");
}

/* clang-format off */
static const char jobs_sql[] =
    "SELECT j.*, t.total FROM (SELECT count(*) AS total FROM pendulum.jobs WHERE" FILTER ") t"
    " LEFT JOIN LATERAL (SELECT id, job_type, CASE WHEN h.held IS NULL THEN state"
    "  ELSE state || ' (' || h.held || ': ' || parked_on || ')' END, state,"
    " attempt || '/' || max_attempts,"
    " replay_count, queue, tenant_id,"
    " " SECS("now() - created_at") ","
    " " SECS("lease_expires_at - now()") ","
    " CASE WHEN unserved THEN 'no live worker serves type ' || job_type || ' in queue '"
    "  || queue WHEN state IN ('LEASED', 'RUNNING') AND progress IS NOT NULL"
    "  THEN 'progress: ' || progress ELSE coalesce(dead_reason, last_error) END,"
    " attempt, max_attempts, priority,"
    " " ISO("created_at") ", " ISO("run_at") ", " ISO("start_by") ", " ISO("finished_at") ","
    " lease_owner, dead_reason, last_error, unserved, concurrency_key, parked_on, h.held,"
    " progress, " ISO("progress_at")
    " FROM pendulum.jobs CROSS JOIN LATERAL (SELECT state = 'PENDING'"
    "  AND NOT pendulum.served(queue, job_type) AS unserved) s"
    /* a parked job: why its limit holds it (sql/020) */
    " LEFT JOIN LATERAL (SELECT CASE WHEN l.paused IS TRUE THEN 'paused'"
    "  WHEN l.window_used >= l.rate THEN 'rate-limited' ELSE 'waiting' END AS held"
    "  FROM (SELECT) o LEFT JOIN pendulum.limit_status l ON l.key = jobs.parked_on"
    "  WHERE jobs.state = 'PENDING' AND jobs.parked_on IS NOT NULL) h ON true WHERE" FILTER
    " ORDER BY id DESC LIMIT $5 OFFSET $6) j ON true ORDER BY j.id DESC";
/* clang-format on */

static const struct pd_col jobs_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", "type", 's', 'b'},
    {"state_held", "state", 'S', 't'}, /* PENDING (paused: queue:q) */
    {"state", NULL, 'S', 'j'},
    {"attempts", NULL, 's', 't'},
    {"replay_count", "replays", 'n', 'b'},
    {"queue", NULL, 's', 'b'},
    {"tenant_id", "tenant", 's', 'b'},
    {"age_s", "age", 'd', 'b'},
    {"lease_expires_in_s", "lease", 'd', 'b'},
    {"note", NULL, 's', 't'},
    {"attempt", NULL, 'n', 'j'},
    {"max_attempts", NULL, 'n', 'j'},
    {"priority", NULL, 'n', 'j'},
    {"created_at", NULL, 's', 'j'},
    {"run_at", NULL, 's', 'j'},
    {"start_by", NULL, 's', 'j'},
    {"finished_at", NULL, 's', 'j'},
    {"lease_owner", NULL, 's', 'j'},
    {"dead_reason", NULL, 's', 'j'},
    {"last_error", NULL, 's', 'j'},
    {"unserved", NULL, 'b', 'j'},
    {"concurrency_key", NULL, 's', 'j'},
    {"parked_on", NULL, 's', 'j'},
    {"held", NULL, 's', 'j'}, /* paused, rate-limited or waiting; null: not parked */
    {"progress", NULL, 's', 'j'},
    {"progress_at", NULL, 's', 'j'},
    {"total", NULL, 'n', 'j'},
};

#define NCOLS(a) ((int)(sizeof(a) / sizeof((a)[0])))

int pd_admin_jobs(struct pd_db *db, const struct pd_admin_filter *f, const struct pd_fmt *fmt,
		  struct pd_buf *out, struct pd_err *e)
{
	char *states = state_array(f);
	PGresult *r;
	int rc = run_listing(db, jobs_sql, f, states, &r, e);

	free(states);
	if (rc < 0)
		return -1;
	pd_render_result(r, jobs_cols, NCOLS(jobs_cols), fmt, out);
	if (!fmt->json)
		footer(r, f, "jobs", out);
	PQclear(r);
	return 0;
}

/* clang-format off */
static const char show_sql[] =
    "SELECT id, job_type, state, queue, tenant_id, priority, concurrency_key, parked_on,"
    " attempt || '/' || max_attempts,"
    " attempt, max_attempts, replay_count, snoozes, delivery, " SECS("timeout") ","
    " " ISO("created_at") ", " ISO("run_at") ", " ISO("start_by") ", " ISO("started_at") ","
    " " ISO("finished_at") ", " SECS("now() - created_at") ", lease_token, lease_owner, " ISO("lease_expires_at") ","
    " " SECS("lease_expires_at - now()") ", idempotency_key, traceparent,"
    " to_json(depends_on)::text, dead_reason, last_error,"
    " progress, " ISO("progress_at") ", " SECS("now() - progress_at") ","
    " payload::text, result::text, result_is_text, result_truncated"
    " FROM pendulum.jobs WHERE id = $1";
/* clang-format on */

static const struct pd_col show_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", NULL, 's', 'b'},
    {"state", NULL, 'S', 'b'},
    {"queue", NULL, 's', 'b'},
    {"tenant_id", NULL, 's', 'b'},
    {"priority", NULL, 'n', 'b'},
    {"concurrency_key", NULL, 's', 'b'},
    {"parked_on", NULL, 's', 'b'},
    {"attempts", NULL, 's', 't'},
    {"attempt", NULL, 'n', 'j'},
    {"max_attempts", NULL, 'n', 'j'},
    {"replay_count", NULL, 'n', 'b'},
    {"snoozes", NULL, 'n', 'b'},
    {"delivery", NULL, 's', 'b'},
    {"timeout_s", NULL, 'd', 'b'},
    {"created_at", NULL, 's', 'b'},
    {"run_at", NULL, 's', 'b'},
    {"start_by", NULL, 's', 'b'},
    {"started_at", NULL, 's', 'b'},
    {"finished_at", NULL, 's', 'b'},
    {"age_s", NULL, 'd', 'b'},
    {"lease_token", NULL, 'n', 'b'},
    {"lease_owner", NULL, 's', 'b'},
    {"lease_expires_at", NULL, 's', 'b'},
    {"lease_expires_in_s", NULL, 'd', 'b'},
    {"idempotency_key", NULL, 's', 'b'},
    {"traceparent", NULL, 's', 'b'},
    {"depends_on", NULL, 'j', 'b'},
    {"dead_reason", NULL, 's', 'b'},
    {"last_error", NULL, 's', 'b'},
    {"progress", NULL, 's', 'b'}, /* the latest note of its handler (sql/024) */
    {"progress_at", NULL, 's', 'b'},
    {"progress_age_s", NULL, 'd', 'b'},
    {"payload", NULL, 'j', 'b'},
    {"result", NULL, 'j', 'b'},
    {"result_is_text", NULL, 'b', 'b'},
    {"result_truncated", NULL, 'b', 'b'},
};

/* clang-format off */
static const char attempts_sql[] =
    "SELECT attempt, lease_token, worker, " ISO("started_at") ","
    " " SECS("coalesce(finished_at, now()) - started_at") ", outcome, exit_code, signal,"
    " substring(rtrim(stderr_tail, E'\\n') FROM '[^\\n]*$'), " ISO("finished_at") ","
    " stderr_tail FROM pendulum.job_attempts WHERE job_id = $1"
    " ORDER BY started_at, lease_token";
/* clang-format on */

static const struct pd_col attempt_cols[] = {
    {"attempt", NULL, 'n', 'b'},
    {"lease_token", "token", 'n', 'b'},
    {"worker", NULL, 's', 'b'},
    {"started_at", "started", 's', 'b'},
    {"duration_s", "duration", 'd', 'b'},
    {"outcome", NULL, 'S', 'b'},
    {"exit_code", "exit", 'n', 'b'},
    {"signal", NULL, 'n', 'b'},
    {"stderr_last_line", "stderr", 's', 't'},
    {"finished_at", NULL, 's', 'j'},
    {"stderr_tail", NULL, 's', 'j'},
};

/* Each attempt's stderr tail, indented, after the attempts table. */
static void stderr_tails(const PGresult *a, struct pd_buf *out)
{
	int col = NCOLS(attempt_cols) - 1;

	for (int i = 0; i < PQntuples(a); i++) {
		const char *t = PQgetvalue(a, i, col);

		if (PQgetisnull(a, i, col) || *t == '\0')
			continue;
		pd_buf_printf(out, "\nstderr of attempt %s (token %s):\n", PQgetvalue(a, i, 0),
			      PQgetvalue(a, i, 1));
		pd_buf_puts(out, "  ");
		for (; *t; t++) {
			unsigned char c = (unsigned char)*t;

			if (c == '\n' && t[1] != '\0')
				pd_buf_puts(out, "\n  ");
			else if (c != '\n')
				pd_buf_putc(out, c < 0x20 && c != '\t' ? ' ' : (char)c);
		}
		pd_buf_putc(out, '\n');
	}
}

/*
 * What a `show` reads: the row of id by sql ($1 the id; ncols wide, else
 * code 2 "<what> ID not found") into *r, then its list by list_sql into *l.
 */
static int fetch_show(struct pd_db *db, long long id, const char *what, const char *sql, int ncols,
		      const char *list_sql, PGresult **r, PGresult **l, struct pd_err *e)
{
	char ids[24];
	const char *params[1] = {ids};

	snprintf(ids, sizeof(ids), "%lld", id);
	if (pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, r, e) < 0)
		return -1;
	if (PQntuples(*r) != 1 || PQnfields(*r) != ncols) {
		PQclear(*r);
		return pd_errf(e, PD_EX_NOTFOUND, "%s %lld not found", what, id);
	}
	if (pd_db_exec(db, list_sql, 1, params, PGRES_TUPLES_OK, l, e) < 0) {
		PQclear(*r);
		return -1;
	}
	return 0;
}

int pd_admin_job_show(struct pd_db *db, long long id, const struct pd_fmt *fmt, struct pd_buf *out,
		      struct pd_err *e)
{
	PGresult *j, *a;

	if (fetch_show(db, id, "job", show_sql, NCOLS(show_cols), attempts_sql, &j, &a, e) < 0)
		return -1;
	pd_render_show(j, show_cols, NCOLS(show_cols), "attempts", a, attempt_cols,
		       NCOLS(attempt_cols), fmt, out);
	if (!fmt->json && PQntuples(a) > 0)
		stderr_tails(a, out);
	PQclear(a);
	PQclear(j);
	return 0;
}

/* Why a guarded statement matched nothing: code 2 if the job is absent, else 1 with its state. */
static int refuse(struct pd_db *db, long long id, const char *what, const char *from,
		  struct pd_err *e)
{
	char ids[24], *state = NULL;
	const char *params[1] = {ids};
	int rc;

	snprintf(ids, sizeof(ids), "%lld", id);
	static const char sql[] = "SELECT state FROM pendulum.jobs WHERE id = $1";

	if (pd_db_value(db, sql, 1, params, &state, e) < 0)
		return -1;
	if (state == NULL)
		return pd_errf(e, PD_EX_NOTFOUND, "job %lld not found", id);
	rc = pd_errf(e, PD_EX_CONFLICT, "job %lld is %s; %s works only from %s", id, state, what,
		     from);
	free(state);
	return rc;
}

/* clang-format off */
static const struct pd_col replay_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", "type", 's', 'b'},
    {"state", NULL, 'S', 'b'},
    {"queue", NULL, 's', 'b'},
    {"replay_count", "replays", 'n', 'b'},
    {"waits_for", NULL, 'n', 'j'},
    {"waits_for_state", NULL, 'S', 'j'},
    {"dependent", NULL, 'b', 'j'},
};
/* clang-format on */

/*
 * For each replayed row of r in [from, to) that is BLOCKED: "job 7 is
 * BLOCKED: it waits for job 6, which is DEAD_LETTERED: replay that one to
 * run it".
 */
static void waits_lines(const PGresult *r, int from, int to, struct pd_buf *out)
{
	for (int i = from; i < to; i++) {
		const char *st = PQgetvalue(r, i, 6);
		enum pd_job_state s = pd_job_state_parse(st);

		if (PQgetisnull(r, i, 5))
			continue;
		pd_buf_printf(out, "job %s is BLOCKED: it waits for job %s, which is %s%s\n",
			      PQgetvalue(r, i, 0), PQgetvalue(r, i, 5), st,
			      s == PD_JOB_DEAD_LETTERED || s == PD_JOB_CANCELLED
				  ? ": replay that one to run it"
				  : "");
	}
}

int pd_admin_job_replay(struct pd_db *db, long long id, int with_dependents,
			const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	PGresult *r;

	if (pd_jobs_replay(db, id, with_dependents, &r, e) < 0)
		return -1;
	if (PQntuples(r) < 1) {
		PQclear(r);
		return refuse(db, id, "replay", "SUCCEEDED, DEAD_LETTERED or CANCELLED", e);
	}
	if (fmt->json) {
		pd_render_result(r, replay_cols, NCOLS(replay_cols), fmt, out);
		PQclear(r);
		return 0;
	}
	pd_buf_printf(out, "job %lld replayed: %s, replay_count %s (%s, queue %s)\n", id,
		      PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 4), PQgetvalue(r, 0, 1),
		      PQgetvalue(r, 0, 3));
	waits_lines(r, 0, 1, out);
	for (int i = 1; i < PQntuples(r); i++)
		pd_buf_printf(out, "job %s back to BLOCKED, behind job %s (%s, queue %s)\n",
			      PQgetvalue(r, i, 0), PQgetvalue(r, i, 5), PQgetvalue(r, i, 1),
			      PQgetvalue(r, i, 3));
	if (with_dependents)
		pd_buf_printf(out, "%d dependent%s back to BLOCKED\n", PQntuples(r) - 1,
			      PQntuples(r) == 2 ? "" : "s");
	PQclear(r);
	return 0;
}

/*
 * Cancel job id (PENDING or BLOCKED) with reason (NULL: "cancelled by
 * operator"), and the jobs BLOCKED on it, or ask its worker to (LEASED or
 * RUNNING: pd_jobs_cancel); *r: its row (id, job_type, state, queue,
 * reason, the number of its dependents cancelled, the worker asked or
 * NULL). Code 1 naming the current state otherwise, 2 when absent.
 */
static int cancel_job(struct pd_db *db, long long id, const char *reason, PGresult **r,
		      struct pd_err *e)
{
	if (pd_jobs_cancel(db, id, reason ? reason : "cancelled by operator", r, e) < 0)
		return -1;
	if (PQntuples(*r) != 1) {
		PQclear(*r);
		*r = NULL;
		return refuse(db, id, "cancel", "PENDING, BLOCKED, LEASED or RUNNING", e);
	}
	return 0;
}

/* Cancel row r (cancel_job's): asked of a worker, not cancelled yet. */
static int cancel_asked(const PGresult *r)
{
	const char *st = PQgetvalue(r, 0, 2);

	return strcmp(st, "LEASED") == 0 || strcmp(st, "RUNNING") == 0;
}

/* "cancel asked of worker W", or without a lease owner "cancel asked". */
static void asked_text(const PGresult *r, struct pd_buf *out)
{
	pd_buf_puts(out, "cancel asked");
	if (!PQgetisnull(r, 0, 6))
		pd_buf_printf(out, " of worker %s", PQgetvalue(r, 0, 6));
}

int pd_admin_job_cancel(struct pd_db *db, long long id, const char *reason,
			const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/* clang-format off */
	static const struct pd_col cols[] = {
	    {"id", NULL, 'n', 'b'},	  {"job_type", "type", 's', 'b'},
	    {"state", NULL, 'S', 'b'},	  {"queue", NULL, 's', 'b'},
	    {"dead_reason", "reason", 's', 'b'},
	    {"dependents_cancelled", NULL, 'n', 'j'},
	    {"cancel_asked_of", NULL, 's', 'j'},
	};
	/* clang-format on */
	PGresult *r;
	int deps;

	if (cancel_job(db, id, reason, &r, e) < 0)
		return -1;
	deps = atoi(PQgetvalue(r, 0, 5));
	if (fmt->json) {
		pd_render_result(r, cols, NCOLS(cols), fmt, out);
	} else if (cancel_asked(r)) {
		pd_buf_printf(out, "job %lld: ", id);
		asked_text(r, out);
		pd_buf_printf(out, " (%s, %s, queue %s)\n", PQgetvalue(r, 0, 1),
			      PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
	} else {
		pd_buf_printf(out, "job %lld cancelled (%s, queue %s)\n", id, PQgetvalue(r, 0, 1),
			      PQgetvalue(r, 0, 3));
	}
	if (!fmt->json && deps > 0)
		pd_buf_printf(out, "%d job%s blocked on it cancelled too\n", deps,
			      deps == 1 ? "" : "s");
	PQclear(r);
	return 0;
}

/* clang-format off */
static const char dlq_sql[] =
    "SELECT j.*, t.total FROM (SELECT count(*) AS total FROM pendulum.jobs WHERE" FILTER ") t "
    "LEFT JOIN LATERAL (SELECT id, job_type, queue, tenant_id, attempt || '/' || max_attempts,"
    " replay_count, " SECS("now() - finished_at") " AS dead_for, dead_reason, last_error,"
    " (SELECT substring(ltrim(a.stderr_tail, E'\\n') FROM '^[^\\n]*') FROM pendulum.attempt_rows a"
    "  WHERE a.job_id = jobs.id AND a.lease_token = jobs.lease_token),"
    " attempt,"
    " max_attempts, " ISO("created_at") ", " ISO("finished_at")
    " FROM pendulum.jobs WHERE" FILTER " ORDER BY finished_at DESC NULLS LAST, id DESC"
    " LIMIT $5 OFFSET $6) j ON true ORDER BY j.dead_for NULLS LAST, j.id DESC";
/* clang-format on */

static const struct pd_col dlq_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", "type", 's', 'b'},
    {"queue", NULL, 's', 'b'},
    {"tenant_id", "tenant", 's', 'b'},
    {"attempts", NULL, 's', 't'},
    {"replay_count", "replays", 'n', 'b'},
    {"dead_for_s", "dead_for", 'd', 'b'},
    {"dead_reason", "reason", 's', 'b'},
    {"last_error", "error", 's', 'b'},
    {"stderr", NULL, 's', 'b'}, /* the first line of the last attempt's stderr tail */
    {"attempt", NULL, 'n', 'j'},
    {"max_attempts", NULL, 'n', 'j'},
    {"created_at", NULL, 's', 'j'},
    {"finished_at", NULL, 's', 'j'},
    {"total", NULL, 'n', 'j'},
};

int pd_admin_dlq_list(struct pd_db *db, const struct pd_admin_filter *f, const struct pd_fmt *fmt,
		      struct pd_buf *out, struct pd_err *e)
{
	PGresult *r;

	if (run_listing(db, dlq_sql, f, "{DEAD_LETTERED}", &r, e) < 0)
		return -1;
	pd_render_result(r, dlq_cols, NCOLS(dlq_cols), fmt, out);
	if (!fmt->json)
		footer(r, f, "dead letters", out);
	PQclear(r);
	return 0;
}

/*
 * After a statement on explicit ids: fill e for the ids that are not in done
 * (column 0 of r), naming each one's state. Returns 0 when all were done.
 */
static int missed_in(struct pd_db *db, const char *table, const char *what, const long long *ids,
		     int nids, const PGresult *done, const char *verb, struct pd_err *e)
{
	struct pd_buf b = PD_BUF_INIT, miss = PD_BUF_INIT;
	long long *missed = pd_xcalloc(nids > 0 ? (size_t)nids : 1, sizeof(*missed));
	const char *params[1];
	PGresult *r;
	int code = PD_EX_CONFLICT, nmiss = 0, rc;

	for (int i = 0; i < nids; i++) {
		int found = 0;

		for (int k = 0; k < PQntuples(done) && !found; k++)
			found = strtoll(PQgetvalue(done, k, 0), NULL, 10) == ids[i];
		for (int k = 0; k < i && !found; k++)
			found = ids[k] == ids[i]; /* a repeated id is reported once */
		if (!found)
			missed[nmiss++] = ids[i];
	}
	pd_db_id_array(&miss, missed, nmiss);
	free(missed);
	if (nmiss == 0) {
		pd_buf_release(&miss);
		return 0;
	}
	params[0] = miss.data;
	pd_buf_printf(&b,
		      "SELECT x.id, j.state FROM unnest($1::bigint[]) WITH ORDINALITY AS x(id, i)"
		      " LEFT JOIN %s j ON j.id = x.id ORDER BY x.i",
		      table);
	rc = pd_db_exec(db, b.data, 1, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_reset(&b);
	if (rc < 0) {
		pd_buf_release(&b);
		pd_buf_release(&miss);
		return -1;
	}
	for (int k = 0; k < PQntuples(r); k++) {
		pd_buf_puts(&b, k ? "; " : "");
		if (PQgetisnull(r, k, 1)) {
			pd_buf_printf(&b, "%s %s not found", what, PQgetvalue(r, k, 0));
			code = PD_EX_NOTFOUND;
		} else {
			pd_buf_printf(&b, "%s %s is %s, not DEAD_LETTERED", what,
				      PQgetvalue(r, k, 0), PQgetvalue(r, k, 1));
		}
	}
	PQclear(r);
	pd_errf(e, code, "%d of %d not %s: %s", nmiss, nids, verb, b.data ? b.data : "");
	pd_buf_release(&b);
	pd_buf_release(&miss);
	return -1;
}

/* missed_in for jobs. */
static int missed(struct pd_db *db, const long long *ids, int nids, const PGresult *done,
		  const char *verb, struct pd_err *e)
{
	return missed_in(db, "pendulum.jobs", "job", ids, nids, done, verb, e);
}

int pd_admin_dlq_replay(struct pd_db *db, const long long *ids, int nids,
			const struct pd_admin_filter *f, const struct pd_fmt *fmt,
			struct pd_buf *out, struct pd_err *e)
{
	PGresult *r;
	int rc;

	if (nids > 0)
		rc = pd_jobs_dlq_replay(db, ids, nids, NULL, NULL, NULL, nids, &r, e);
	else
		rc = pd_jobs_dlq_replay(db, NULL, 0, f->tenant, f->type, f->queue,
					f->limit > 0 ? f->limit : 100, &r, e);
	if (rc < 0)
		return -1;
	if (PQntuples(r) > 0 || fmt->json)
		pd_render_result(r, replay_cols, NCOLS(replay_cols), fmt, out);
	if (!fmt->json) {
		pd_buf_printf(out, "replayed %d dead letter%s\n", PQntuples(r),
			      PQntuples(r) == 1 ? "" : "s");
		waits_lines(r, 0, PQntuples(r), out);
	}
	rc = nids > 0 ? missed(db, ids, nids, r, "replayed", e) : 0;
	PQclear(r);
	return rc;
}

int pd_admin_dlq_delete(struct pd_db *db, const long long *ids, int nids, const struct pd_fmt *fmt,
			struct pd_buf *out, struct pd_err *e)
{
	static const char sql[] =
	    "SELECT id, job_type, queue FROM pendulum.delete_jobs($1::bigint[], 'DEAD_LETTERED')"
	    " ORDER BY id";
	/* clang-format off */
	static const struct pd_col cols[] = {
	    {"id", NULL, 'n', 'b'},
	    {"job_type", "type", 's', 'b'},
	    {"queue", NULL, 's', 'b'},
	};
	/* clang-format on */
	struct pd_buf ia = PD_BUF_INIT;
	const char *params[1];
	PGresult *r;
	int rc;

	pd_db_id_array(&ia, ids, nids);
	params[0] = ia.data;
	rc = pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&ia);
	if (rc < 0)
		return -1;
	if (PQntuples(r) > 0 || fmt->json)
		pd_render_result(r, cols, NCOLS(cols), fmt, out);
	if (!fmt->json)
		pd_buf_printf(out, "deleted %d dead letter%s\n", PQntuples(r),
			      PQntuples(r) == 1 ? "" : "s");
	rc = missed(db, ids, nids, r, "deleted", e);
	PQclear(r);
	return rc;
}

/*
 * A purge of dead letters older than older_ms (or, dry_run, their count):
 * sql takes $1 the age in ms and $2 the filter (by, NULL: none) and returns
 * the count; the report names what was purged (noun, "s" added when not
 * one) and the filter.
 */
static int purge(struct pd_db *db, const char *sql, long long older_ms, const char *by,
		 const char *filter, const char *noun, int dry_run, const struct pd_fmt *fmt,
		 struct pd_buf *out, struct pd_err *e)
{
	char ms[24], secs[32], age[32], *n = NULL;
	const char *params[2] = {ms, filter};
	long long k;

	snprintf(ms, sizeof(ms), "%lld", older_ms);
	if (pd_db_value(db, sql, 2, params, &n, e) < 0)
		return -1;
	k = n ? strtoll(n, NULL, 10) : 0;
	if (fmt->json) {
		const struct pd_col cols[] = {
		    {"purged", NULL, 'n', 'b'},
		    {"older_than_s", NULL, 'n', 'b'},
		    {by, NULL, 's', 'b'},
		    {"dry_run", NULL, 'b', 'b'},
		};
		const char *row[4] = {n ? n : "0", secs, filter, dry_run ? "t" : "f"};

		snprintf(secs, sizeof(secs), "%.3f", (double)older_ms / 1000);
		pd_render(cols, 4, row, 1, fmt, out);
	} else {
		pd_render_age((double)older_ms / 1000, age, sizeof(age));
		pd_buf_printf(out, "%s %lld %s%s%s%s%s%s that died more than %s ago\n",
			      dry_run ? "would purge" : "purged", k, noun, k == 1 ? "" : "s",
			      filter ? " of " : "", filter ? by : "", filter ? " " : "",
			      filter ? filter : "", age);
	}
	free(n);
	return 0;
}

int pd_admin_dlq_purge(struct pd_db *db, long long older_ms, const char *queue, int dry_run,
		       const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
/* clang-format off */
#define OLD                                                                                        \
	" FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'"                                         \
	" AND coalesce(finished_at, created_at) < now() - $1::bigint * interval '1 millisecond'"   \
	" AND ($2::text IS NULL OR queue = $2)"
	static const char count_sql[] = "SELECT count(*)" OLD;
	/* Through delete_jobs: what they counted stays in the metrics (sql/011). */
	static const char purge_sql[] = "SELECT count(*) FROM pendulum.delete_jobs(ARRAY(SELECT id"
					OLD "), 'DEAD_LETTERED')";
/* clang-format on */
#undef OLD
	return purge(db, dry_run ? count_sql : purge_sql, older_ms, "queue", queue, "dead letter",
		     dry_run, fmt, out, e);
}

int pd_admin_queues(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		    struct pd_err *e)
{

	return show(db, pd_summary_queues_sql, 0, NULL, pd_summary_queue_cols,
		    PD_SUMMARY_QUEUE_NCOLS, fmt, out, e);
}

int pd_admin_depth(struct pd_db *db, const char *queue, const char *state, int runnable,
		   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	static const char sql[] = "SELECT count(*) FROM pendulum.jobs WHERE queue = $1"
				  " AND state = $2 AND (NOT $3::boolean OR run_at <= now())";
	const char *pending = pd_job_state_name(PD_JOB_PENDING);
	const char *params[3] = {queue, state ? state : pending, runnable ? "true" : "false"};
	char *n = NULL;

	if (runnable)
		params[1] = pending;
	if (pd_db_value(db, sql, 3, params, &n, e) < 0)
		return -1;
	if (fmt->json) {
		static const struct pd_col cols[] = {
		    {"queue", NULL, 's', 'b'},
		    {"state", NULL, 's', 'b'},
		    {"runnable", NULL, 'b', 'b'},
		    {"depth", NULL, 'n', 'b'},
		};
		const char *row[4] = {queue, params[1], params[2], n ? n : "0"};

		pd_render(cols, 4, row, 1, fmt, out);
	} else {
		pd_buf_printf(out, "%s\n", n ? n : "0");
	}
	free(n);
	return 0;
}

int pd_admin_workers(struct pd_db *db, long long stale_ms, const struct pd_fmt *fmt,
		     struct pd_buf *out, struct pd_err *e)
{
	/* clang-format off */
	static const char sql[] =
	    "SELECT id, host, pid, array_to_string(queues, ','),"
	    " CASE WHEN gone THEN '-/' ELSE in_flight || '/' END || concurrency,"
	    " " SECS("now() - last_seen_at") ", CASE WHEN gone THEN 'gone' ELSE 'live' END,"
	    " to_json(queues)::text, to_json(job_types)::text, in_flight, concurrency, lease_ms,"
	    " " ISO("started_at") ", " ISO("last_seen_at") ", " ISO("gone_at") ", gone, gone"
	    " FROM pendulum.worker_states($1::bigint) ORDER BY host, pid, id";
	static const struct pd_col cols[] = {
	    {"id", "worker", 's', 'b'},
	    {"host", NULL, 's', 'b'},
	    {"pid", NULL, 'n', 'b'},
	    {"queue_list", "queues", 's', 't'},
	    {"busy", NULL, 's', 't'},
	    {"last_seen_s", "last_seen", 'd', 'b'},
	    {"status", NULL, 'S', 't'},
	    {"queues", NULL, 'j', 'j'},
	    {"job_types", NULL, 'j', 'j'},
	    {"in_flight", NULL, 'n', 'j'},
	    {"concurrency", NULL, 'n', 'j'},
	    {"lease_ms", NULL, 'n', 'j'},
	    {"started_at", NULL, 's', 'j'},
	    {"last_seen_at", NULL, 's', 'j'},
	    {"gone_at", NULL, 's', 'j'},
	    {"gone", NULL, 'b', 'j'},
	    {"stale", NULL, 'b', 'j'},
	};
	/* clang-format on */
	char ms[24];
	const char *params[1] = {stale_ms >= 0 ? ms : NULL};

	snprintf(ms, sizeof(ms), "%lld", stale_ms);
	return show(db, sql, 1, params, cols, NCOLS(cols), fmt, out, e);
}

int pd_admin_leaders(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		     struct pd_err *e)
{
	/* clang-format off */
	static const char sql[] =
	    "SELECT role, holder, token, " SECS("expires_at - now()") ","
	    " CASE WHEN expires_at > now() THEN 'held' ELSE 'expired' END, " ISO("expires_at")
	    " FROM pendulum.leaders ORDER BY role";
	static const struct pd_col cols[] = {
	    {"role", NULL, 's', 'b'},
	    {"holder", NULL, 's', 'b'},
	    {"token", NULL, 'n', 'b'},
	    {"expires_in_s", "expires_in", 'd', 'b'},
	    {"status", NULL, 'S', 'b'},
	    {"expires_at", NULL, 's', 'j'},
	};
	/* clang-format on */
	return show(db, sql, 0, NULL, cols, NCOLS(cols), fmt, out, e);
}

/* --- the outbox --- */

/* clang-format off */
static const struct pd_col outbox_stats_cols[PD_SUMMARY_OUTBOX_NCOLS] = {
    {"topic", NULL, 's', 'b'},
    {"pending", NULL, 'n', 'b'},
    {"published", NULL, 'n', 'b'},
    {"dead_lettered", NULL, 'n', 'b'},
    {"oldest_pending_age_s", "oldest_pending", 'd', 'b'},
};
/* clang-format on */

int pd_admin_outbox_stats(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
			  struct pd_err *e)
{

	return show(db, pd_summary_outbox_sql, 0, NULL, outbox_stats_cols, PD_SUMMARY_OUTBOX_NCOLS,
		    fmt, out, e);
}

/* $1 states (text[] or NULL), $2 tenant, $3 topic. */
/* clang-format off */
#define OUTBOX_FILTER                                                                              \
	" ($1::text[] IS NULL OR state = ANY ($1::text[])) AND ($2::text IS NULL OR tenant_id = $2)" \
	" AND ($3::text IS NULL OR topic = $3)"

static const char outbox_list_sql[] =
    "SELECT m.*, t.total FROM (SELECT count(*) AS total FROM pendulum.outbox WHERE"
    OUTBOX_FILTER ") t"
    " LEFT JOIN LATERAL (SELECT id, topic, state, message_key, attempts || '/' || max_attempts,"
    " replay_count, tenant_id,"
    " " SECS("now() - created_at") ","
    " CASE WHEN state = 'PENDING' THEN " SECS("next_attempt_at - now()") " END,"
    " coalesce('waits behind ' || b.head || ' (dead-lettered)', dead_reason, last_error),"
    " attempts, max_attempts, payload::text, headers::text,"
    " claimed_by, " ISO("created_at") ", " ISO("next_attempt_at") ", " ISO("published_at") ","
    " " ISO("dead_lettered_at") ", dead_reason, last_error, b.head"
    " FROM pendulum.outbox"
    /* a PENDING message behind its key's head (sql/006) when that head is a dead letter */
    " LEFT JOIN LATERAL (SELECT hd.head_id AS head FROM pendulum.outbox_heads hd"
    " JOIN pendulum.outbox ho ON ho.id = hd.head_id"
    " WHERE outbox.state = 'PENDING' AND hd.tenant_id = outbox.tenant_id"
    " AND hd.topic = outbox.topic AND hd.message_key = outbox.message_key"
    " AND hd.head_id <> outbox.id AND ho.state = 'DEAD_LETTERED') b ON true"
    " WHERE" OUTBOX_FILTER
    " ORDER BY id DESC LIMIT $4 OFFSET $5) m ON true ORDER BY m.id DESC";
#undef OUTBOX_FILTER
/* clang-format on */

static const struct pd_col outbox_list_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"topic", NULL, 's', 'b'},
    {"state", NULL, 'S', 'b'},
    {"message_key", "key", 's', 'b'},
    {"attempts_of", "attempts", 's', 't'},
    {"replay_count", "replays", 'n', 'b'},
    {"tenant_id", "tenant", 's', 'b'},
    {"age_s", "age", 'd', 'b'},
    {"next_attempt_in_s", "next", 'd', 'b'},
    {"note", NULL, 's', 't'},
    {"attempts", NULL, 'n', 'j'},
    {"max_attempts", NULL, 'n', 'j'},
    {"payload", NULL, 'j', 'j'},
    {"headers", NULL, 'j', 'j'},
    {"claimed_by", NULL, 's', 'j'},
    {"created_at", NULL, 's', 'j'},
    {"next_attempt_at", NULL, 's', 'j'},
    {"published_at", NULL, 's', 'j'},
    {"dead_lettered_at", NULL, 's', 'j'},
    {"dead_reason", NULL, 's', 'j'},
    {"last_error", NULL, 's', 'j'},
    {"waits_behind", NULL, 'n', 'j'},
    {"total", NULL, 'n', 'j'},
};

int pd_admin_outbox_list(struct pd_db *db, const struct pd_admin_filter *f,
			 const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	char *states = state_array(f), lim[24], off[24];
	const char *params[5] = {states, f->tenant, f->topic, lim, off};
	PGresult *r;
	int rc;

	snprintf(lim, sizeof(lim), "%lld", f->limit > 0 ? f->limit : 50);
	snprintf(off, sizeof(off), "%lld", f->offset > 0 ? f->offset : 0);
	rc = pd_db_exec(db, outbox_list_sql, 5, params, PGRES_TUPLES_OK, &r, e);
	free(states);
	if (rc < 0)
		return -1;
	pd_render_result(r, outbox_list_cols, NCOLS(outbox_list_cols), fmt, out);
	if (!fmt->json)
		footer(r, f, "messages", out);
	PQclear(r);
	return 0;
}

int pd_admin_outbox_replay(struct pd_db *db, const long long *ids, int nids,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/* clang-format off */
	static const struct pd_col cols[] = {
	    {"id", NULL, 'n', 'b'},
	    {"topic", NULL, 's', 'b'},
	    {"state", NULL, 'S', 'b'},
	    {"message_key", "key", 's', 'b'},
	    {"replay_count", "replays", 'n', 'b'},
	};
	/* clang-format on */
	PGresult *r;
	int rc;

	if (pd_outbox_replay(db, ids, nids, &r, e) < 0)
		return -1;
	if (PQntuples(r) > 0 || fmt->json)
		pd_render_result(r, cols, NCOLS(cols), fmt, out);
	if (!fmt->json)
		pd_buf_printf(out, "replayed %d outbox message%s\n", PQntuples(r),
			      PQntuples(r) == 1 ? "" : "s");
	rc = missed_in(db, "pendulum.outbox", "message", ids, nids, r, "replayed", e);
	PQclear(r);
	return rc;
}

/* The relays of the topics whose dead letters d deleted: the next message of each key is due. */
#define OUTBOX_WAKE                                                                                \
	" n AS (SELECT pg_notify('pendulum_outbox', t.topic) FROM (SELECT DISTINCT topic FROM d) " \
	"t)"

int pd_admin_outbox_delete(struct pd_db *db, const long long *ids, int nids,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	static const char sql[] =
	    "WITH d AS (DELETE FROM pendulum.outbox o WHERE o.id = ANY ($1::bigint[])"
	    " AND o.state = 'DEAD_LETTERED' RETURNING o.id, o.topic, o.message_key)," OUTBOX_WAKE
	    " SELECT id, topic, message_key, (SELECT count(*) FROM n) FROM d ORDER BY id";
	/* clang-format off */
	static const struct pd_col cols[] = {
	    {"id", NULL, 'n', 'b'},
	    {"topic", NULL, 's', 'b'},
	    {"message_key", "key", 's', 'b'},
	};
	/* clang-format on */
	struct pd_buf ia = PD_BUF_INIT;
	struct pd_err ignored = PD_ERR_INIT;
	const char *params[1];
	PGresult *r = NULL;
	int rc;

	pd_db_id_array(&ia, ids, nids);
	params[0] = ia.data;
	/* All or nothing: the ids not deleted are found before the commit. */
	rc = pd_db_exec(db, "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL, e);
	if (rc == 0)
		rc = pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, &r, e);
	if (rc == 0)
		rc = missed_in(db, "pendulum.outbox", "message", ids, nids, r,
			       "deletable (nothing deleted)", e);
	if (rc == 0)
		rc = pd_db_exec(db, "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL, e);
	else
		pd_db_exec(db, "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL, &ignored);
	pd_buf_release(&ia);
	if (rc == 0) {
		if (PQntuples(r) > 0 || fmt->json)
			pd_render_result(r, cols, NCOLS(cols), fmt, out);
		if (!fmt->json)
			pd_buf_printf(out, "deleted %d dead-lettered outbox message%s\n",
				      PQntuples(r), PQntuples(r) == 1 ? "" : "s");
	}
	PQclear(r);
	return rc;
}

int pd_admin_outbox_purge(struct pd_db *db, long long older_ms, const char *topic, int dry_run,
			  const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
/* clang-format off */
#define OLD                                                                                        \
	" FROM pendulum.outbox o WHERE o.state = 'DEAD_LETTERED'"                                  \
	" AND coalesce(o.dead_lettered_at, o.created_at) < now() - $1::bigint * interval '1 millisecond'" \
	" AND ($2::text IS NULL OR o.topic = $2)"
	static const char count_sql[] = "SELECT count(*)" OLD;
	static const char purge_sql[] =
	    "WITH d AS (DELETE" OLD " RETURNING o.topic)," OUTBOX_WAKE
	    " SELECT count(*) + 0 * (SELECT count(*) FROM n) FROM d";
/* clang-format on */
#undef OLD
	return purge(db, dry_run ? count_sql : purge_sql, older_ms, "topic", topic,
		     "dead-lettered outbox message", dry_run, fmt, out, e);
}
#undef OUTBOX_WAKE

/* --- workflow runs --- */

/* The runs with their state and job; $1 states, $2 tenant, $3 workflow, $4 the job's queue. */
/* clang-format off */
#define FLOW_FROM                                                                                  \
	" FROM pendulum.workflow_runs r JOIN pendulum.workflow_run_states v ON v.run_id = r.id"    \
	" JOIN pendulum.jobs j ON j.id = r.job_id CROSS JOIN LATERAL (SELECT j.state = 'PENDING'"   \
	" AND NOT pendulum.served(j.queue, j.job_type) AS unserved) u WHERE"                       \
	" ($1::text[] IS NULL OR v.state = ANY ($1::text[])) AND ($2::text IS NULL OR r.tenant_id = $2)" \
	" AND ($3::text IS NULL OR r.workflow = $3) AND ($4::text IS NULL OR j.queue = $4)"

static const char flow_runs_sql[] =
    "SELECT x.*, t.total FROM (SELECT count(*) AS total" FLOW_FROM ") t"
    " LEFT JOIN LATERAL (SELECT r.id, r.workflow, v.state,"
    " concat_ws(' ', r.position || coalesce('/' || array_length(r.steps, 1), ''),"
    " r.steps[r.position + 1]), r.tenant_id, " SECS("now() - r.created_at") ", r.job_id,"
    /* what it waits for; else a job no live worker would claim, said as jobs says it */
    " CASE v.state WHEN 'WAITING' THEN 'signal ' || r.waiting_for"
    " WHEN 'SLEEPING' THEN 'until ' || " ISO("r.sleep_until")
    " ELSE CASE WHEN u.unserved THEN 'no live worker serves type ' || j.job_type"
    "  || ' in queue ' || j.queue ELSE j.dead_reason END END,"
    " r.position, r.steps[r.position + 1], to_json(r.steps)::text, j.state, j.attempt, j.queue,"
    " r.waiting_for, " ISO("r.sleep_until") ", " ISO("r.created_at") ", " ISO("r.updated_at") ","
    " " ISO("j.finished_at") ", j.dead_reason, u.unserved"
    FLOW_FROM " ORDER BY r.id DESC LIMIT $5 OFFSET $6) x ON true ORDER BY x.id DESC";
#undef FLOW_FROM
/* clang-format on */

static const struct pd_col flow_runs_cols[] = {
    {"id", "run", 'n', 'b'},	       {"workflow", NULL, 's', 'b'},
    {"state", NULL, 'S', 'b'},	       {"step_at", "step", 's', 't'},
    {"tenant_id", "tenant", 's', 'b'}, {"age_s", "age", 'd', 'b'},
    {"job_id", "job", 'n', 'b'},       {"note", NULL, 's', 't'},
    {"position", NULL, 'n', 'j'},      {"step", NULL, 's', 'j'},
    {"steps", NULL, 'j', 'j'},	       {"job_state", NULL, 's', 'j'},
    {"attempt", NULL, 'n', 'j'},       {"queue", NULL, 's', 'j'},
    {"waiting_for", NULL, 's', 'j'},   {"sleep_until", NULL, 's', 'j'},
    {"created_at", NULL, 's', 'j'},    {"updated_at", NULL, 's', 'j'},
    {"finished_at", NULL, 's', 'j'},   {"dead_reason", NULL, 's', 'j'},
    {"unserved", NULL, 'b', 'j'},      {"total", NULL, 'n', 'j'},
};

int pd_admin_flow_runs(struct pd_db *db, const struct pd_admin_filter *f, const struct pd_fmt *fmt,
		       struct pd_buf *out, struct pd_err *e)
{
	struct pd_admin_filter g = *f;
	char *states = state_array(f);
	PGresult *r;
	int rc;

	g.type = f->workflow; /* the listing's third parameter */
	rc = run_listing(db, flow_runs_sql, &g, states, &r, e);
	free(states);
	if (rc < 0)
		return -1;
	pd_render_result(r, flow_runs_cols, NCOLS(flow_runs_cols), fmt, out);
	if (!fmt->json)
		footer(r, f, "runs", out);
	PQclear(r);
	return 0;
}

/* clang-format off */
static const char flow_show_sql[] =
    "SELECT r.id, r.workflow, r.tenant_id, v.state, r.position, r.job_id, j.state,"
    " j.attempt || '/' || j.max_attempts, j.attempt, j.max_attempts, j.queue, r.input::text,"
    " to_json(r.steps)::text, r.signals::text, r.waiting_for, " ISO("r.wait_deadline") ","
    " " ISO("r.sleep_until") ", " ISO("r.created_at") ", " ISO("r.updated_at") ","
    " " ISO("j.finished_at") ", " SECS("now() - r.created_at") ", j.dead_reason, j.last_error,"
    " j.result::text, j.result_is_text"
    " FROM pendulum.workflow_runs r JOIN pendulum.workflow_run_states v ON v.run_id = r.id"
    " JOIN pendulum.jobs j ON j.id = r.job_id WHERE r.id = $1";
/* clang-format on */

static const struct pd_col flow_show_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"workflow", NULL, 's', 'b'},
    {"tenant_id", NULL, 's', 'b'},
    {"state", NULL, 'S', 'b'},
    {"position", NULL, 'n', 'b'},
    {"job_id", NULL, 'n', 'b'},
    {"job_state", NULL, 's', 'b'},
    {"attempts", NULL, 's', 't'},
    {"attempt", NULL, 'n', 'j'},
    {"max_attempts", NULL, 'n', 'j'},
    {"queue", NULL, 's', 'b'},
    {"input", NULL, 'j', 'b'},
    {"step_names", NULL, 'j', 'b'}, /* "steps" is the list of steps */
    {"signals", NULL, 'j', 'b'},
    {"waiting_for", NULL, 's', 'b'},
    {"wait_deadline", NULL, 's', 'b'},
    {"sleep_until", NULL, 's', 'b'},
    {"created_at", NULL, 's', 'b'},
    {"updated_at", NULL, 's', 'b'},
    {"finished_at", NULL, 's', 'b'},
    {"age_s", NULL, 'd', 'b'},
    {"dead_reason", NULL, 's', 'b'},
    {"last_error", NULL, 's', 'b'},
    {"result", NULL, 'j', 'b'},
    {"result_is_text", NULL, 'b', 'b'},
};

/*
 * A run's steps: one row for each name the run recorded (or, while it has
 * none, for each stored step, and the step at the position while the run is
 * not over), in order. state: done (stored), the run's state for the step
 * at the position, else pending; attempts: stored, or the job's attempt for
 * the step at the position.
 */
/* clang-format off */
static const char flow_steps_sql[] =
    "SELECT i, coalesce(s.step_name, n.names[i + 1]), s.kind,"
    " CASE WHEN s.run_id IS NOT NULL THEN 'done' WHEN i <> r.position THEN 'pending'"
    " ELSE CASE v.state WHEN 'RUNNING' THEN 'running' WHEN 'WAITING' THEN 'waiting'"
    " WHEN 'SLEEPING' THEN 'sleeping' WHEN 'DEAD_LETTERED' THEN 'dead'"
    " WHEN 'CANCELLED' THEN 'cancelled' ELSE 'pending' END END,"
    " coalesce(s.attempts, CASE WHEN i = r.position AND v.state <> 'SUCCEEDED'"
    " THEN j.attempt END),"
    " " ISO("s.started_at") ", " ISO("s.finished_at") ","
    " " SECS("s.finished_at - s.started_at") ","
    " CASE WHEN s.output_is_text THEN s.output #>> '{}' ELSE s.output::text END,"
    " s.output::text, s.output_is_text, s.output_truncated"
    " FROM pendulum.workflow_runs r JOIN pendulum.workflow_run_states v ON v.run_id = r.id"
    " JOIN pendulum.jobs j ON j.id = r.job_id"
    " CROSS JOIN LATERAL (SELECT coalesce(r.steps, ARRAY(SELECT w.step_name"
    "  FROM pendulum.workflow_steps w WHERE w.run_id = r.id ORDER BY w.step_index)) AS names) n"
    " CROSS JOIN LATERAL generate_series(0, greatest(coalesce(array_length(n.names, 1), 0),"
    "  (SELECT coalesce(max(w.step_index) + 1, 0) FROM pendulum.workflow_steps w"
    "   WHERE w.run_id = r.id),"
    "  CASE WHEN r.steps IS NULL AND v.state NOT IN ('SUCCEEDED', 'CANCELLED')"
    "  THEN r.position + 1 ELSE 0 END) - 1) i"
    " LEFT JOIN pendulum.workflow_steps s ON s.run_id = r.id AND s.step_index = i"
    " WHERE r.id = $1 ORDER BY i";
/* clang-format on */

static const struct pd_col flow_step_cols[] = {
    {"index", NULL, 'n', 'b'},
    {"name", NULL, 's', 'b'},
    {"kind", NULL, 's', 'b'},
    {"state", NULL, 'S', 'b'},
    {"attempts", NULL, 'n', 'b'},
    {"started_at", "started", 's', 'b'},
    {"finished_at", "finished", 's', 'b'},
    {"duration_s", "duration", 'd', 'b'},
    {"output_text", "output", 's', 't'},
    {"output", NULL, 'j', 'j'},
    {"output_is_text", NULL, 'b', 'j'},
    {"output_truncated", NULL, 'b', 'j'},
};

int pd_admin_flow_show(struct pd_db *db, long long run, const struct pd_fmt *fmt,
		       struct pd_buf *out, struct pd_err *e)
{
	PGresult *r, *s;

	if (fetch_show(db, run, "workflow run", flow_show_sql, NCOLS(flow_show_cols),
		       flow_steps_sql, &r, &s, e) < 0)
		return -1;
	pd_render_show(r, flow_show_cols, NCOLS(flow_show_cols), "steps", s, flow_step_cols,
		       NCOLS(flow_step_cols), fmt, out);
	PQclear(s);
	PQclear(r);
	return 0;
}

int pd_admin_flow_signal(struct pd_db *db, long long run, const char *name, const char *payload,
			 const char *where, const struct pd_fmt *fmt, struct pd_buf *out,
			 struct pd_err *e)
{
	static const struct pd_col cols[] = {
	    {"run", NULL, 'n', 'b'},
	    {"signal", NULL, 's', 'b'},
	    {"woke", NULL, 'b', 'b'},
	};
	char ids[24];
	int woke;

	if (pd_flow_signal(db, run, name, payload, where, &woke, e) < 0)
		return -1;
	snprintf(ids, sizeof(ids), "%lld", run);
	if (fmt->json) {
		const char *row[3] = {ids, name, woke ? "t" : "f"};

		pd_render(cols, 3, row, 1, fmt, out);
	} else {
		pd_buf_printf(out, "workflow run %lld: signal '%s' sent; %s\n", run, name,
			      woke ? "it woke the run"
				   : "kept until a wait_for step of that name takes it");
	}
	return 0;
}

int pd_admin_flow_cancel(struct pd_db *db, long long run, const char *reason,
			 const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/* clang-format off */
	static const struct pd_col cols[] = {
	    {"run", NULL, 'n', 'b'},	  {"job_id", "job", 'n', 'b'},
	    {"job_type", "type", 's', 'b'}, {"state", NULL, 'S', 'b'},
	    {"queue", NULL, 's', 'b'},	  {"dead_reason", "reason", 's', 'b'},
	    {"cancel_asked_of", NULL, 's', 'j'},
	};
	/* clang-format on */
	struct pd_err inner = PD_ERR_INIT;
	char ids[24];
	long long job;
	PGresult *r;

	if (pd_flow_job(db, run, &job, e) < 0)
		return -1;
	if (cancel_job(db, job, reason, &r, &inner) < 0) {
		pd_errf(e, inner.code, "workflow run %lld: %s", run, inner.msg);
		return -1;
	}
	snprintf(ids, sizeof(ids), "%lld", run);
	if (fmt->json) {
		const char *row[7] = {ids,
				      PQgetvalue(r, 0, 0),
				      PQgetvalue(r, 0, 1),
				      PQgetvalue(r, 0, 2),
				      PQgetvalue(r, 0, 3),
				      PQgetvalue(r, 0, 4),
				      PQgetisnull(r, 0, 6) ? NULL : PQgetvalue(r, 0, 6)};

		pd_render(cols, 7, row, 1, fmt, out);
	} else if (cancel_asked(r)) {
		pd_buf_printf(out, "workflow run %lld: ", run);
		asked_text(r, out);
		pd_buf_printf(out, " (job %lld, %s, queue %s)\n", job, PQgetvalue(r, 0, 2),
			      PQgetvalue(r, 0, 3));
	} else {
		pd_buf_printf(out, "workflow run %lld cancelled (job %lld, queue %s)\n", run, job,
			      PQgetvalue(r, 0, 3));
	}
	PQclear(r);
	return 0;
}

/* The role named role, exactly (no case folding): its OID in oid, or code 2. */
static int role_oid(struct pd_db *db, const char *role, char *oid, size_t n, struct pd_err *e)
{
	const char *params[1] = {role};
	char *v = NULL;

	if (pd_db_value(db, "SELECT oid FROM pg_roles WHERE rolname = $1", 1, params, &v, e) < 0)
		return -1;
	if (v == NULL)
		return pd_errf(e, PD_EX_NOTFOUND, "role '%s' does not exist", role);
	snprintf(oid, n, "%s", v);
	free(v);
	return 0;
}

/* tenant grant and revoke: the row written (or deleted), reported. */
static int tenant_change(struct pd_db *db, int grant, const char *role, const char *tenant,
			 const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	static const char grant_sql[] =
	    "WITH i AS (INSERT INTO pendulum.tenant_members (role, tenant_id)"
	    " VALUES ($1::oid::regrole, $2) ON CONFLICT DO NOTHING RETURNING 1)"
	    " SELECT (SELECT count(*) FROM i) > 0";
	static const char revoke_sql[] =
	    "WITH d AS (DELETE FROM pendulum.tenant_members"
	    " WHERE role = $1::oid::regrole AND tenant_id = $2 RETURNING 1)"
	    " SELECT (SELECT count(*) FROM d) > 0";
	char oid[24];
	const char *params[2] = {oid, tenant};
	char *changed = NULL;
	int did;

	if (pd_name_check("tenant", tenant, e) < 0)
		return -1;
	if (tenant[0] == '\0')
		return pd_errf(e, PD_EX_DATAERR, "invalid tenant: empty");
	if (role_oid(db, role, oid, sizeof(oid), e) < 0 ||
	    pd_db_value(db, grant ? grant_sql : revoke_sql, 2, params, &changed, e) < 0)
		return -1;
	did = changed && strcmp(changed, "t") == 0;
	free(changed);
	if (!grant && !did)
		return pd_errf(e, PD_EX_NOTFOUND, "role '%s' has no grant of tenant '%s'", role,
			       tenant);
	if (fmt->json) {
		pd_buf_puts(out, "{\"role\":");
		pd_json_quote_or_null(out, role);
		pd_buf_puts(out, ",\"tenant\":");
		pd_json_quote_or_null(out, tenant);
		pd_buf_printf(out, ",\"%s\":%s}\n", grant ? "granted" : "revoked",
			      did ? "true" : "false");
	} else if (grant)
		pd_buf_printf(out, "role %s %s tenant %s\n", role, did ? "granted" : "already had",
			      tenant);
	else
		pd_buf_printf(out, "role %s revoked tenant %s\n", role, tenant);
	return 0;
}

int pd_admin_tenant_grant(struct pd_db *db, const char *role, const char *tenant,
			  const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	return tenant_change(db, 1, role, tenant, fmt, out, e);
}

int pd_admin_tenant_revoke(struct pd_db *db, const char *role, const char *tenant,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	return tenant_change(db, 0, role, tenant, fmt, out, e);
}

int pd_admin_tenant_list(struct pd_db *db, const char *role, const struct pd_fmt *fmt,
			 struct pd_buf *out, struct pd_err *e)
{
	static const char sql[] = "SELECT m.role::text, m.tenant_id, " ISO(
	    "m.granted_at") " FROM pendulum.tenant_members m"
			    " WHERE $1::oid IS NULL OR m.role = $1::oid::regrole"
			    " ORDER BY m.role::text, m.tenant_id";
	static const struct pd_col cols[] = {
	    {"role", NULL, 's', 'b'},
	    {"tenant", NULL, 's', 'b'},
	    {"granted_at", NULL, 's', 'b'},
	};
	char oid[24];
	const char *params[1] = {role ? oid : NULL};

	if (role && role_oid(db, role, oid, sizeof(oid), e) < 0)
		return -1;
	return show(db, sql, 1, params, cols, NCOLS(cols), fmt, out, e);
}

/* --- fair shares and limits (sql/020) --- */

int pd_admin_parse_rate(const char *opt, const char *s, long long *n, long long *period_ms,
			struct pd_err *e)
{
	const char *slash = strchr(s, '/');
	char shown[PD_TEXT_SHOW_MAX + 4], *end;
	struct pd_err de = PD_ERR_INIT;
	int rc;

	pd_text_show(shown, sizeof shown, s, strlen(s));
	if (slash == NULL || !isdigit((unsigned char)*s))
		return pd_errf(e, PD_EX_USAGE, "option %s: '%s' is not N/PERIOD (e.g. 100/1m)", opt,
			       shown);
	errno = 0;
	*n = strtoll(s, &end, 10);
	if (end != slash)
		return pd_errf(e, PD_EX_USAGE, "option %s: '%s' is not N/PERIOD (e.g. 100/1m)", opt,
			       shown);
	if (errno == ERANGE || *n < 1 || *n > 10000)
		return pd_errf(e, PD_EX_USAGE, "option %s: the count of '%s' is not 1 to 10000",
			       opt, shown);
	rc = pd_dur_parse(slash + 1, period_ms, &de);
	if (rc < 0)
		return pd_errf(e, rc == -2 ? PD_EX_DATAERR : PD_EX_USAGE, "option %s: %s", opt,
			       de.msg);
	if (*period_ms <= 0)
		return pd_errf(e, PD_EX_USAGE, "option %s: the period of '%s' must be above 0", opt,
			       shown);
	if (*period_ms > 86400000LL)
		return pd_errf(e, PD_EX_DATAERR, "option %s: the period of '%s' is more than 1d",
			       opt, shown);
	return 0;
}

int pd_admin_limit_key_check(const char *key, struct pd_err *e)
{
	size_t prefix;

	if (key[0] == '\0')
		return pd_errf(e, PD_EX_USAGE, "KEY must not be empty");
	if (pd_name_check("limit key", key, e) < 0)
		return -1;
	prefix = pd_limit_key_prefix(key);
	if (prefix > 0 && key[prefix] == '\0')
		return pd_errf(e, PD_EX_DATAERR, "invalid limit key '%s': no name after the prefix",
			       key);
	return 0;
}

/* clang-format off */
static const char limits_sql[] =
    "SELECT key, concurrency, running, rate, (extract(epoch FROM period) * 1000)::bigint,"
    " window_used, waiting, paused, " ISO("updated_at")
    " FROM pendulum.limit_status WHERE $1::text IS NULL OR key = $1 ORDER BY key COLLATE \"C\"";
/* clang-format on */

#define LIMIT_NCOLS 11
static const struct pd_col limit_cols[LIMIT_NCOLS] = {
    {"key", NULL, 's', 'b'},	     {"concurrency", NULL, 'n', 'b'}, {"running", NULL, 'n', 'b'},
    {"rate_per", "rate", 's', 't'},  {"window", NULL, 's', 't'},      {"waiting", NULL, 'n', 'b'},
    {"paused", NULL, 'b', 'b'},	     {"rate", NULL, 'n', 'j'},	      {"period_s", NULL, 'n', 'j'},
    {"window_used", NULL, 'n', 'j'}, {"updated_at", NULL, 's', 'j'},
};

/* The rows of limits_sql (r) as limit_cols: RATE "100/1m", WINDOW "3/100". */
static void render_limits(const PGresult *r, const struct pd_fmt *fmt, struct pd_buf *out)
{
	int n = PQntuples(r);
	const char **cells = pd_xcalloc((size_t)n * LIMIT_NCOLS + 1, sizeof(*cells));
	char(*text)[3][PD_DUR_MAX + 32] = pd_xcalloc((size_t)n + 1, sizeof(*text));

	for (int i = 0; i < n; i++) {
		const char **c = cells + (size_t)i * LIMIT_NCOLS;
		const char *v[9];
		long long ms;

		for (int k = 0; k < 9; k++)
			v[k] = PQgetisnull(r, i, k) ? NULL : PQgetvalue(r, i, k);
		if (v[3] && v[4]) {
			char per[PD_DUR_MAX];

			ms = strtoll(v[4], NULL, 10);
			pd_dur_format(ms, per, sizeof(per));
			snprintf(text[i][0], sizeof(text[i][0]), "%s/%s", v[3], per);
			snprintf(text[i][1], sizeof(text[i][1]), "%s/%s", v[5] ? v[5] : "0", v[3]);
			snprintf(text[i][2], sizeof(text[i][2]), "%lld.%03lld", ms / 1000,
				 ms % 1000);
		}
		c[0] = v[0];
		c[1] = v[1];
		c[2] = v[2];
		c[3] = v[3] ? text[i][0] : NULL;
		c[4] = v[3] ? text[i][1] : NULL;
		c[5] = v[6];
		c[6] = v[7];
		c[7] = v[3];
		c[8] = v[3] ? text[i][2] : NULL;
		c[9] = v[5];
		c[10] = v[8];
	}
	pd_render(limit_cols, LIMIT_NCOLS, cells, n, fmt, out);
	free(text);
	free(cells);
}

int pd_admin_limits(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		    struct pd_err *e)
{
	const char *params[1] = {NULL};
	PGresult *r;

	if (pd_db_exec(db, limits_sql, 1, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	if (PQnfields(r) != 9) {
		PQclear(r);
		return pd_errf(e, PD_EX_SOFTWARE, "limits: unexpected result shape");
	}
	render_limits(r, fmt, out);
	PQclear(r);
	return 0;
}

/* "limit KEY set: concurrency 5, rate 100/1m": what `limit set` changed. */
static void limit_changed(const char *key, const struct pd_admin_limit *l, struct pd_buf *out)
{
	char d[PD_DUR_MAX];

	pd_buf_printf(out, "limit %s set:", key);
	if (l->concurrency_set && l->concurrency >= 0)
		pd_buf_printf(out, " concurrency %lld", l->concurrency);
	else if (l->concurrency_set)
		pd_buf_puts(out, " concurrency none");
	if (l->rate_set && l->concurrency_set)
		pd_buf_putc(out, ',');
	if (l->rate_set && l->rate > 0) {
		pd_dur_format(l->period_ms, d, sizeof(d));
		pd_buf_printf(out, " rate %lld/%s", l->rate, d);
	} else if (l->rate_set) {
		pd_buf_puts(out, " rate none");
	}
	pd_buf_putc(out, '\n');
}

int pd_admin_limit_set(struct pd_db *db, const char *key, const struct pd_admin_limit *l,
		       const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	static const char conc_sql[] = "SELECT pendulum.limit_concurrency($1, $2::integer)";
	static const char rate_sql[] =
	    "SELECT pendulum.limit_rate($1, $2::integer, $3::bigint * interval '1 millisecond')";
	char conc[24], rate[24], period[24];
	const char *cp[2] = {key, l->concurrency >= 0 ? conc : NULL};
	const char *rp[3] = {key, l->rate > 0 ? rate : NULL, l->rate > 0 ? period : NULL};
	const char *kp[1] = {key};
	PGresult *r = NULL;
	int rc = -1;

	snprintf(conc, sizeof(conc), "%lld", l->concurrency);
	snprintf(rate, sizeof(rate), "%lld", l->rate);
	snprintf(period, sizeof(period), "%lld", l->period_ms);
	/* Both changes or neither, and the row read back as they left it. */
	if (pd_db_exec(db, "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL, e) < 0)
		return -1;
	if ((l->concurrency_set && pd_db_exec(db, conc_sql, 2, cp, PGRES_TUPLES_OK, NULL, e) < 0) ||
	    (l->rate_set && pd_db_exec(db, rate_sql, 3, rp, PGRES_TUPLES_OK, NULL, e) < 0) ||
	    pd_db_exec(db, limits_sql, 1, kp, PGRES_TUPLES_OK, &r, e) < 0 ||
	    pd_db_exec(db, "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL, e) < 0)
		goto done;
	if (PQntuples(r) == 1 && PQnfields(r) == 9) {
		render_limits(r, fmt, out);
		if (!fmt->json) /* what changed, under the row it left */
			limit_changed(key, l, out);
	} else if (fmt->json) {
		pd_buf_puts(out, "{\"key\":");
		pd_json_quote_or_null(out, key);
		pd_buf_puts(out, ",\"removed\":true}\n");
	} else {
		pd_buf_printf(out, "limit %s caps nothing now: removed\n", key);
	}
	rc = 0;
done:
	PQclear(r);
	if (rc < 0 && pd_db_ok(db))
		pd_db_exec(db, "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL,
			   &(struct pd_err)PD_ERR_INIT);
	return rc;
}

int pd_admin_limit_unset(struct pd_db *db, const char *key, const struct pd_fmt *fmt,
			 struct pd_buf *out, struct pd_err *e)
{
	const char *params[1] = {key};
	char *was = NULL;

	if (pd_db_value(db, "SELECT pendulum.limit_unset($1)", 1, params, &was, e) < 0)
		return -1;
	if (was == NULL || strcmp(was, "t") != 0) {
		free(was);
		return pd_errf(e, PD_EX_NOTFOUND, "no limit on key '%s'", key);
	}
	free(was);
	if (fmt->json) {
		pd_buf_puts(out, "{\"key\":");
		pd_json_quote_or_null(out, key);
		pd_buf_puts(out, ",\"unset\":true}\n");
	} else {
		pd_buf_printf(out, "limit %s removed; its waiting jobs may run\n", key);
	}
	return 0;
}

int pd_admin_pause(struct pd_db *db, const char *kind, const char *name, int pause,
		   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/* was: read in the statement's snapshot, before limit_pause changed it */
	static const char sql[] =
	    "WITH b AS MATERIALIZED (SELECT coalesce((SELECT l.paused FROM pendulum.limits l"
	    " WHERE l.key = $1), false) AS was)"
	    " SELECT b.was, pendulum.limit_pause($1, $2::boolean) FROM b";
	struct pd_buf key = PD_BUF_INIT;
	const char *params[2] = {NULL, pause ? "true" : "false"};
	const char *what = strcmp(kind, "type") == 0 ? "job type" : "queue";
	char *was = NULL;
	int changed;

	pd_buf_printf(&key, "%s:%s", kind, name);
	params[0] = key.data;
	if (pd_db_value(db, sql, 2, params, &was, e) < 0) {
		pd_buf_release(&key);
		return -1;
	}
	changed = (was && strcmp(was, "t") == 0) != pause;
	free(was);
	if (fmt->json) {
		pd_buf_puts(out, "{\"key\":");
		pd_json_quote_or_null(out, key.data);
		pd_buf_printf(out, ",\"%s\":", kind);
		pd_json_quote_or_null(out, name);
		pd_buf_printf(out, ",\"paused\":%s,\"changed\":%s}\n", pause ? "true" : "false",
			      changed ? "true" : "false");
	} else if (!changed) {
		pd_buf_printf(out, "%s %s was %s\n", what, name,
			      pause ? "paused already" : "not paused");
	} else if (pause) {
		pd_buf_printf(out,
			      "%s %s paused: no job of it starts until resumed; running ones "
			      "finish, enqueue still works\n",
			      what, name);
	} else {
		pd_buf_printf(out, "%s %s resumed\n", what, name);
	}
	pd_buf_release(&key);
	return 0;
}

int pd_admin_tenant_weight(struct pd_db *db, const char *tenant, int weight,
			   const struct pd_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	char w[16];
	const char *params[2] = {tenant, weight > 0 ? w : NULL};

	snprintf(w, sizeof(w), "%d", weight > 0 ? weight : 1);
	if (pd_db_exec(db, "SELECT pendulum.set_tenant_weight($1, $2::integer)", 2, params,
		       PGRES_TUPLES_OK, NULL, e) < 0)
		return -1;
	if (fmt->json) {
		pd_buf_puts(out, "{\"tenant\":");
		pd_json_quote_or_null(out, tenant);
		pd_buf_printf(out, ",\"weight\":%s,\"default\":%s}\n", w,
			      weight > 0 ? "false" : "true");
	} else {
		pd_buf_printf(out, "tenant %s weight %s%s\n", tenant, w,
			      weight > 0 ? "" : " (the default)");
	}
	return 0;
}

int pd_admin_tenants(struct pd_db *db, const struct pd_fmt *fmt, struct pd_buf *out,
		     struct pd_err *e)
{
	static const char sql[] = "SELECT tenant_id, weight, " ISO(
	    "updated_at") " FROM pendulum.tenants ORDER BY tenant_id COLLATE \"C\"";
	static const struct pd_col cols[] = {
	    {"tenant", NULL, 's', 'b'},
	    {"weight", NULL, 'n', 'b'},
	    {"updated_at", NULL, 's', 'b'},
	};

	return show(db, sql, 0, NULL, cols, NCOLS(cols), fmt, out, e);
}

/* --- wait --- */

int pd_admin_wait_mark(struct pd_db *db, const long long *ids, int nids, struct pd_err *e)
{
	static const char missing_sql[] =
	    "SELECT x.id FROM unnest($1::bigint[]) WITH ORDINALITY AS x(id, i)"
	    " WHERE NOT EXISTS (SELECT 1 FROM pendulum.jobs j WHERE j.id = x.id) ORDER BY x.i "
	    "LIMIT 1";
	static const char mark_sql[] =
	    "UPDATE pendulum.jobs SET notify_done = true WHERE id = ANY ($1::bigint[])"
	    " AND NOT notify_done AND state NOT IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELLED')";
	struct pd_buf ia = PD_BUF_INIT;
	const char *params[1];
	char *miss = NULL;
	int rc;

	if (nids == 0)
		return 0;
	pd_db_id_array(&ia, ids, nids);
	params[0] = ia.data;
	rc = pd_db_value(db, missing_sql, 1, params, &miss, e);
	if (rc == 0 && miss)
		rc = pd_errf(e, PD_EX_NOTFOUND, "job %s not found", miss);
	if (rc == 0)
		rc = pd_db_exec(db, mark_sql, 1, params, PGRES_COMMAND_OK, NULL, e);
	free(miss);
	pd_buf_release(&ia);
	return rc;
}

int pd_admin_wait_count(struct pd_db *db, const long long *ids, int nids,
			const struct pd_admin_filter *f, int full, struct pd_admin_waited *w,
			struct pd_err *e)
{
/* clang-format off */
#define WAITED                                                                                     \
	" FROM pendulum.jobs WHERE ($1::bigint[] IS NULL OR id = ANY ($1::bigint[]))"              \
	" AND ($2::text IS NULL OR tenant_id = $2) AND ($3::text IS NULL OR job_type = $3)"        \
	" AND ($4::text IS NULL OR queue = $4)"
#define ENDED "('SUCCEEDED', 'DEAD_LETTERED', 'CANCELLED')"
	static const char full_sql[] =
	    "SELECT count(*), count(*) FILTER (WHERE state NOT IN " ENDED "),"
	    " count(*) FILTER (WHERE state = 'SUCCEEDED'),"
	    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'),"
	    " count(*) FILTER (WHERE state = 'CANCELLED'),"
	    " coalesce(array_to_string((array_agg(id ORDER BY id)"
	    " FILTER (WHERE state IN ('DEAD_LETTERED', 'CANCELLED')))[1:10], ', '), ''),"
	    " now()::text" WAITED;
	static const char light_sql[] =
	    "SELECT count(*) FILTER (WHERE state NOT IN " ENDED "),"
	    " count(*) FILTER (WHERE state IN " ENDED ")" WAITED
	    " AND (state IN ('PENDING', 'BLOCKED', 'LEASED', 'RUNNING')"
	    " OR (state IN " ENDED " AND finished_at >= $5::timestamptz))";
#undef WAITED
#undef ENDED
	/* clang-format on */
	struct pd_buf ia = PD_BUF_INIT;
	const char *params[5];
	PGresult *r;
	int rc;

	if (nids > 0)
		pd_db_id_array(&ia, ids, nids);
	params[0] = nids > 0 ? ia.data : NULL;
	params[1] = f->tenant;
	params[2] = f->type;
	params[3] = f->queue;
	params[4] = w->since[0] ? w->since : NULL;
	rc = pd_db_exec(db, full ? full_sql : light_sql, full ? 4 : 5, params, PGRES_TUPLES_OK, &r,
			e);
	pd_buf_release(&ia);
	if (rc < 0)
		return -1;
	if (PQntuples(r) != 1 || PQnfields(r) != (full ? 7 : 2)) {
		PQclear(r);
		return pd_errf(e, PD_EX_SOFTWARE, "wait: unexpected result shape");
	}
	if (full) {
		long long *v[] = {&w->jobs, &w->unfinished, &w->succeeded, &w->dead_lettered,
				  &w->cancelled};

		for (int i = 0; i < 5; i++)
			*v[i] = strtoll(PQgetvalue(r, 0, i), NULL, 10);
		snprintf(w->failed, sizeof(w->failed), "%s", PQgetvalue(r, 0, 5));
		snprintf(w->since, sizeof(w->since), "%s", PQgetvalue(r, 0, 6));
		w->finished_since = 0;
	} else {
		w->unfinished = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		w->finished_since = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	}
	PQclear(r);
	return 0;
}
