#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "flowdb.h"
#include "job.h"
#include "json.h"

/* An instant as ISO 8601 UTC with milliseconds, and an interval as seconds (3 decimals). */
#define ISO(x)	"to_char((" x ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define SECS(x) "round(extract(epoch FROM (" x "))::numeric, 3)"

#define CELL_MAX 72 /* table cells are cut to this many characters */

/* clang-format off */
const char pd_admin_queues_sql[] =
    "WITH u AS (SELECT queue, array_agg(job_type ORDER BY job_type COLLATE \"C\") AS types"
    "  FROM pendulum.unserved GROUP BY queue)"
    " SELECT j.queue,"
    " count(*) FILTER (WHERE state = 'PENDING'), count(*) FILTER (WHERE state = 'BLOCKED'),"
    " count(*) FILTER (WHERE state = 'LEASED'), count(*) FILTER (WHERE state = 'RUNNING'),"
    " count(*) FILTER (WHERE state = 'SUCCEEDED'),"
    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'),"
    " count(*) FILTER (WHERE state = 'CANCELLED'),"
    " count(*) FILTER (WHERE state = 'PENDING' AND run_at <= now()),"
    " " SECS("now() - min(run_at) FILTER (WHERE state = 'PENDING' AND run_at <= now())") ","
    " (SELECT count(*) FROM pendulum.live_workers w WHERE j.queue = ANY (w.queues)),"
    " array_to_string(u.types, ','), to_json(coalesce(u.types, '{}'))::text"
    " FROM pendulum.jobs j LEFT JOIN u ON u.queue = j.queue"
    " GROUP BY j.queue, u.types ORDER BY j.queue COLLATE \"C\"";

const char pd_admin_outbox_sql[] =
    "SELECT topic,"
    " count(*) FILTER (WHERE state = 'PENDING'), count(*) FILTER (WHERE state = 'PUBLISHED'),"
    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'),"
    " " SECS("now() - min(created_at) FILTER (WHERE state = 'PENDING')")
    " FROM pendulum.outbox GROUP BY topic ORDER BY topic COLLATE \"C\"";

const char pd_admin_flow_sql[] =
    "SELECT workflow,"
    " count(*) FILTER (WHERE state = 'RUNNING'), count(*) FILTER (WHERE state = 'SLEEPING'),"
    " count(*) FILTER (WHERE state = 'WAITING'), count(*) FILTER (WHERE state = 'SUCCEEDED'),"
    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'),"
    " count(*) FILTER (WHERE state = 'CANCELLED')"
    " FROM pendulum.workflow_run_states GROUP BY workflow ORDER BY workflow COLLATE \"C\"";
/* clang-format on */

/* --- rendering --- */

/* The ANSI colour of a state or outcome word, or NULL. */
static const char *word_color(const char *v)
{
	static const char *const job_sgr[PD_JOB_NSTATES] = {
	    [PD_JOB_BLOCKED] = "33",   [PD_JOB_LEASED] = "36",	      [PD_JOB_RUNNING] = "1;36",
	    [PD_JOB_SUCCEEDED] = "32", [PD_JOB_DEAD_LETTERED] = "31", [PD_JOB_CANCELLED] = "2",
	};
	enum pd_job_state st = pd_job_state_parse(v);
	/* clang-format off */
	static const struct {
		const char *word, *sgr;
	} map[] = {
	    {"succeeded", "32"},      {"failed", "31"},		{"terminal", "31"},
	    {"timeout", "31"},	      {"could_not_start", "31"}, {"lease_expired", "33"},
	    {"lease_lost", "33"},     {"released", "2"},		{"gone", "31"},
	    {"live", "32"},
	    {"done", "32"},	      {"running", "1;36"},	{"waiting", "33"},
	    {"sleeping", "2"},	      {"dead", "31"},		{"cancelled", "2"},
	    {"claim_lost", "33"},
	};
	/* clang-format on */

	if (st != PD_JOB_NONE)
		return job_sgr[st];
	/* A run's states are the job's words but for these two. */
	if (strcmp(v, pd_run_states[PD_RUN_WAITING]) == 0)
		return "33";
	if (strcmp(v, pd_run_states[PD_RUN_SLEEPING]) == 0)
		return "2";
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(v, map[i].word) == 0)
			return map[i].sgr;
	return NULL;
}

/* Characters on screen: UTF-8 lead bytes. */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* A table cell: control characters become spaces, at most CELL_MAX characters. */
static char *table_text(const char *v)
{
	struct pd_buf b = PD_BUF_INIT;
	size_t chars = 0;

	for (const char *p = v; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if ((c & 0xC0) != 0x80 && ++chars > CELL_MAX) {
			/* cut back to CELL_MAX - 3 characters and mark the cut */
			while (width(b.data) > CELL_MAX - 3) {
				b.len--;
				while (b.len > 0 && ((unsigned char)b.data[b.len] & 0xC0) == 0x80)
					b.len--;
				b.data[b.len] = '\0';
			}
			pd_buf_puts(&b, "...");
			break;
		}
		pd_buf_putc(&b, c < 0x20 || c == 0x7f ? ' ' : (char)c);
	}
	return pd_buf_detach(&b);
}

void pd_admin_age(double seconds, char *out, size_t n)
{
	static const struct {
		char unit;
		long long secs;
	} units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
	const char *sign = seconds < 0 ? "-" : "";
	double a = seconds < 0 ? -seconds : seconds;
	long long s;
	size_t len;
	int parts = 0;

	if (a < 10) {
		long long tenths = (long long)(a * 10 + 0.5); /* no libm */

		if (tenths == 0)
			snprintf(out, n, "0s");
		else if (tenths % 10 == 0)
			snprintf(out, n, "%s%llds", sign, tenths / 10);
		else
			snprintf(out, n, "%s%lld.%llds", sign, tenths / 10, tenths % 10);
		return;
	}
	s = a > 9e15 ? 9000000000000000LL : (long long)a;
	snprintf(out, n, "%s", sign);
	for (size_t i = 0; i < 4 && parts < 2; i++) {
		long long q = s / units[i].secs;

		if (q == 0 && parts == 0)
			continue;
		if (q == 0)
			break; /* "1h" rather than "1h0m" */
		len = strlen(out);
		snprintf(out + len, n - len, "%lld%c", q, units[i].unit);
		s -= q * units[i].secs;
		parts++;
	}
}

/* Append one JSON object, without a newline, of the JSON columns of a row. */
static void json_row(struct pd_buf *out, const struct pd_admin_col *cols, int ncols,
		     const char *const *row)
{
	int first = 1;

	pd_buf_putc(out, '{');
	for (int c = 0; c < ncols; c++) {
		const char *v = row[c];

		if (cols[c].where == 't')
			continue;
		if (!first)
			pd_buf_putc(out, ',');
		first = 0;
		pd_json_quote(out, cols[c].name, strlen(cols[c].name));
		pd_buf_putc(out, ':');
		if (v == NULL)
			pd_buf_puts(out, "null");
		else if ((cols[c].kind == 'n' || cols[c].kind == 'd') && pd_json_is_number(v))
			pd_buf_puts(out, v);
		else if (cols[c].kind == 'b')
			pd_buf_puts(out, (*v == 't' || *v == '1') ? "true" : "false");
		else if (cols[c].kind == 'j')
			pd_buf_puts(out, v);
		else
			pd_json_quote(out, v, strlen(v));
	}
	pd_buf_putc(out, '}');
}

/* The text of a cell in a table (malloc'd). */
static char *cell_text(const struct pd_admin_col *col, const char *v)
{
	char age[32];

	if (v == NULL)
		return pd_xstrdup("-");
	if (col->kind == 'd') {
		char *end;
		double d = strtod(v, &end);

		if (*v && *end == '\0') {
			pd_admin_age(d, age, sizeof(age));
			return pd_xstrdup(age);
		}
	}
	if (col->kind == 'b')
		return pd_xstrdup((*v == 't' || *v == '1') ? "yes" : "no");
	return table_text(v);
}

static void put_header(struct pd_buf *out, const struct pd_admin_col *col)
{
	const char *h = col->head ? col->head : col->name;

	for (; *h; h++)
		pd_buf_putc(out, (char)toupper((unsigned char)*h));
}

void pd_admin_render(const struct pd_admin_col *cols, int ncols, const char *const *cells,
		     int nrows, const struct pd_admin_fmt *fmt, struct pd_buf *out)
{
	size_t *w;
	char **text;
	int last = -1;

	if (fmt->json) {
		for (int r = 0; r < nrows; r++) {
			json_row(out, cols, ncols, cells + (size_t)r * (size_t)ncols);
			pd_buf_putc(out, '\n');
		}
		return;
	}
	w = pd_xcalloc((size_t)ncols, sizeof(*w));
	text = pd_xcalloc((size_t)nrows * (size_t)ncols + 1, sizeof(*text));
	for (int c = 0; c < ncols; c++) {
		if (cols[c].where == 'j')
			continue;
		last = c;
		w[c] = strlen(cols[c].head ? cols[c].head : cols[c].name);
		for (int r = 0; r < nrows; r++) {
			size_t i = (size_t)r * (size_t)ncols + (size_t)c;

			text[i] = cell_text(&cols[c], cells[i]);
			if (width(text[i]) > w[c])
				w[c] = width(text[i]);
		}
	}
	for (int r = -1; r < nrows; r++) {
		for (int c = 0; c <= last; c++) {
			size_t used, i = (size_t)r * (size_t)ncols + (size_t)c;
			const char *sgr = NULL;

			if (cols[c].where == 'j')
				continue;
			if (r < 0) {
				if (fmt->color)
					pd_buf_puts(out, "\033[1m");
				put_header(out, &cols[c]);
				if (fmt->color)
					pd_buf_puts(out, "\033[0m");
				used = strlen(cols[c].head ? cols[c].head : cols[c].name);
			} else {
				if (fmt->color && cols[c].kind == 'S')
					sgr = word_color(text[i]);
				if (sgr)
					pd_buf_printf(out, "\033[%sm", sgr);
				pd_buf_puts(out, text[i]);
				if (sgr)
					pd_buf_puts(out, "\033[0m");
				used = width(text[i]);
			}
			if (c == last) {
				pd_buf_putc(out, '\n');
				break;
			}
			for (; used < w[c] + 2; used++)
				pd_buf_putc(out, ' ');
		}
	}
	for (size_t i = 0; i < (size_t)nrows * (size_t)ncols; i++)
		free(text[i]);
	free(text);
	free(w);
}

void pd_admin_render_result(const PGresult *r, const struct pd_admin_col *cols, int ncols,
			    const struct pd_admin_fmt *fmt, struct pd_buf *out)
{
	int nrows = PQntuples(r), n = 0;
	const char **cells = pd_xcalloc((size_t)nrows * (size_t)ncols + 1, sizeof(*cells));

	if (PQnfields(r) >= ncols) {
		for (int row = 0; row < nrows; row++) {
			if (PQgetisnull(r, row, 0))
				continue;
			for (int c = 0; c < ncols; c++)
				cells[(size_t)n * (size_t)ncols + (size_t)c] =
				    PQgetisnull(r, row, c) ? NULL : PQgetvalue(r, row, c);
			n++;
		}
	}
	pd_admin_render(cols, ncols, cells, n, fmt, out);
	free(cells);
}

/* "key   value" lines (job show), the table columns of one row. */
static void render_kv(const PGresult *r, const struct pd_admin_col *cols, int ncols,
		      struct pd_buf *out)
{
	size_t wk = 0;

	for (int c = 0; c < ncols; c++)
		if (cols[c].where != 'j' && strlen(cols[c].name) > wk)
			wk = strlen(cols[c].name);
	for (int c = 0; c < ncols; c++) {
		const char *v = PQgetisnull(r, 0, c) ? NULL : PQgetvalue(r, 0, c);
		char age[32];

		if (cols[c].where == 'j')
			continue;
		pd_buf_printf(out, "%-*s  ", (int)wk, cols[c].name);
		if (v == NULL) {
			pd_buf_puts(out, "-");
		} else if (cols[c].kind == 'd') {
			pd_admin_age(strtod(v, NULL), age, sizeof(age));
			pd_buf_puts(out, age);
		} else if (cols[c].kind == 'b') {
			pd_buf_puts(out, *v == 't' ? "yes" : "no");
		} else {
			for (; *v; v++)
				pd_buf_putc(out, (unsigned char)*v < 0x20 ? ' ' : *v);
		}
		pd_buf_putc(out, '\n');
	}
}

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
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end != '\0' || errno == ERANGE || v < 1)
		return pd_errf(e, PD_EX_USAGE, "invalid %s id '%s': expected a positive integer",
			       what, s);
	*id = v;
	return 0;
}

int pd_admin_id(const char *s, long long *id, struct pd_err *e)
{
	return pd_admin_parse_id(s, "job", id, e);
}

/* --- queries --- */

/* "{1,2,3}" */
static void id_array(struct pd_buf *b, const long long *v, int n)
{
	pd_buf_putc(b, '{');
	for (int i = 0; i < n; i++)
		pd_buf_printf(b, "%s%lld", i ? "," : "", v[i]);
	pd_buf_putc(b, '}');
}

/* A text[] literal of the filter's states, "{"A","B"}", or NULL for no states. */
static char *state_array(const struct pd_admin_filter *f)
{
	struct pd_buf b = PD_BUF_INIT;

	if (f->nstates == 0)
		return NULL;
	pd_buf_putc(&b, '{');
	for (int i = 0; i < f->nstates; i++)
		pd_buf_printf(&b, "%s\"%s\"", i ? "," : "", f->states[i]);
	pd_buf_putc(&b, '}');
	return pd_buf_detach(&b);
}

/* $1 states (text[] or NULL), $2 tenant, $3 type, $4 queue. */
/* clang-format off */
#define FILTER                                                                                     \
	" ($1::text[] IS NULL OR state = ANY ($1::text[])) AND ($2::text IS NULL OR tenant_id = $2)" \
	" AND ($3::text IS NULL OR job_type = $3) AND ($4::text IS NULL OR queue = $4)"
/* clang-format on */

/* Filter, limit, offset as the six parameters of a listing. */
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
    " LEFT JOIN LATERAL (SELECT id, job_type, state, attempt || '/' || max_attempts,"
    " replay_count, queue, tenant_id,"
    " " SECS("now() - created_at") ","
    " " SECS("lease_expires_at - now()") ","
    " CASE WHEN unserved THEN 'no live worker serves type ' || job_type || ' in queue '"
    "  || queue ELSE coalesce(dead_reason, last_error) END,"
    " attempt, max_attempts, priority,"
    " " ISO("created_at") ", " ISO("run_at") ", " ISO("finished_at") ","
    " lease_owner, dead_reason, last_error, unserved"
    " FROM pendulum.jobs CROSS JOIN LATERAL (SELECT state = 'PENDING'"
    "  AND NOT pendulum.served(queue, job_type) AS unserved) s WHERE" FILTER
    " ORDER BY id DESC LIMIT $5 OFFSET $6) j ON true ORDER BY j.id DESC";
/* clang-format on */

static const struct pd_admin_col jobs_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", "type", 's', 'b'},
    {"state", NULL, 'S', 'b'},
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
    {"finished_at", NULL, 's', 'j'},
    {"lease_owner", NULL, 's', 'j'},
    {"dead_reason", NULL, 's', 'j'},
    {"last_error", NULL, 's', 'j'},
    {"unserved", NULL, 'b', 'j'},
    {"total", NULL, 'n', 'j'},
};

#define NCOLS(a) ((int)(sizeof(a) / sizeof((a)[0])))

int pd_admin_jobs(struct pd_db *db, const struct pd_admin_filter *f, const struct pd_admin_fmt *fmt,
		  struct pd_buf *out, struct pd_err *e)
{
	char *states = state_array(f);
	PGresult *r;
	int rc = run_listing(db, jobs_sql, f, states, &r, e);

	free(states);
	if (rc < 0)
		return -1;
	pd_admin_render_result(r, jobs_cols, NCOLS(jobs_cols), fmt, out);
	if (!fmt->json)
		footer(r, f, "jobs", out);
	PQclear(r);
	return 0;
}

/* clang-format off */
static const char show_sql[] =
    "SELECT id, job_type, state, queue, tenant_id, priority, attempt || '/' || max_attempts,"
    " attempt, max_attempts, replay_count, delivery, " SECS("timeout") ","
    " " ISO("created_at") ", " ISO("run_at") ", " ISO("started_at") ", " ISO("finished_at") ","
    " " SECS("now() - created_at") ", lease_token, lease_owner, " ISO("lease_expires_at") ","
    " " SECS("lease_expires_at - now()") ", idempotency_key, traceparent,"
    " to_json(depends_on)::text, dead_reason, last_error, payload::text, result::text,"
    " result_is_text, result_truncated"
    " FROM pendulum.jobs WHERE id = $1";
/* clang-format on */

static const struct pd_admin_col show_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", NULL, 's', 'b'},
    {"state", NULL, 'S', 'b'},
    {"queue", NULL, 's', 'b'},
    {"tenant_id", NULL, 's', 'b'},
    {"priority", NULL, 'n', 'b'},
    {"attempts", NULL, 's', 't'},
    {"attempt", NULL, 'n', 'j'},
    {"max_attempts", NULL, 'n', 'j'},
    {"replay_count", NULL, 'n', 'b'},
    {"delivery", NULL, 's', 'b'},
    {"timeout_s", NULL, 'd', 'b'},
    {"created_at", NULL, 's', 'b'},
    {"run_at", NULL, 's', 'b'},
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

static const struct pd_admin_col attempt_cols[] = {
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

/* The row of r (or NULL) of a PGresult's ncols first columns, into row. */
static void result_row(const PGresult *r, int i, int ncols, const char **row)
{
	for (int c = 0; c < ncols; c++)
		row[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
}

/*
 * What a `show` prints of one object (row 0 of r, cols) and its list (the
 * rows of sub, subcols): in JSON one line, the object with the list under
 * key; in a table "key  value" lines, a blank line, then the list as a table
 * or "no KEY yet".
 */
static void render_show(const PGresult *r, const struct pd_admin_col *cols, int ncols,
			const char *key, const PGresult *sub, const struct pd_admin_col *subcols,
			int nsub, const struct pd_admin_fmt *fmt, struct pd_buf *out)
{
	const char **row;

	if (!fmt->json) {
		render_kv(r, cols, ncols, out);
		if (PQntuples(sub) == 0) {
			pd_buf_printf(out, "\nno %s yet\n", key);
		} else {
			pd_buf_puts(out, "\n");
			pd_admin_render_result(sub, subcols, nsub, fmt, out);
		}
		return;
	}
	row = pd_xcalloc((size_t)(ncols > nsub ? ncols : nsub), sizeof(*row));
	result_row(r, 0, ncols, row);
	json_row(out, cols, ncols, row);
	out->data[--out->len] = '\0'; /* reopen the object */
	pd_buf_printf(out, ",\"%s\":[", key);
	for (int i = 0; i < PQntuples(sub); i++) {
		result_row(sub, i, nsub, row);
		if (i)
			pd_buf_putc(out, ',');
		json_row(out, subcols, nsub, row);
	}
	pd_buf_puts(out, "]}\n");
	free(row);
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

int pd_admin_job_show(struct pd_db *db, long long id, const struct pd_admin_fmt *fmt,
		      struct pd_buf *out, struct pd_err *e)
{
	PGresult *j, *a;

	if (fetch_show(db, id, "job", show_sql, NCOLS(show_cols), attempts_sql, &j, &a, e) < 0)
		return -1;
	render_show(j, show_cols, NCOLS(show_cols), "attempts", a, attempt_cols,
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
	" result_truncated = false, failed_dependency = NULL"

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

/* clang-format off */
static const struct pd_admin_col replay_cols[] = {
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
			const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/* clang-format off */
	/*
	 * A clean success's record is its job row (sql/008): the view's row for it
	 * is stored before the job row is reset.
	 */
	static const char sql[] =
	    "WITH k AS (INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, worker,"
	    " started_at, finished_at, outcome, exit_code)"
	    " SELECT v.job_id, v.attempt, v.lease_token, v.worker,"
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
	PGresult *r;

	snprintf(ids, sizeof(ids), "%lld", id);
	if (pd_db_exec(db, sql, 2, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	if (PQntuples(r) < 1) {
		PQclear(r);
		return refuse(db, id, "replay", "SUCCEEDED, DEAD_LETTERED or CANCELLED", e);
	}
	if (fmt->json) {
		pd_admin_render_result(r, replay_cols, NCOLS(replay_cols), fmt, out);
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
 * operator"), and the jobs BLOCKED on it; *r: its row (id, job_type, state,
 * queue, dead_reason, the number of its dependents cancelled). Code 1
 * naming the current state otherwise, 2 when absent.
 */
static int cancel_job(struct pd_db *db, long long id, const char *reason, PGresult **r,
		      struct pd_err *e)
{
	/* the jobs BLOCKED on it, transitively, are cancelled with it (sql/012) */
	static const char sql[] =
	    "WITH c AS (UPDATE pendulum.jobs SET state = 'CANCELLED', finished_at = now(),"
	    " dead_reason = $2, last_error = $2"
	    " WHERE id = $1 AND state IN ('PENDING', 'BLOCKED')"
	    " RETURNING id, job_type, state, queue, dead_reason)"
	    " SELECT id, job_type, state, queue, dead_reason,"
	    " pendulum.fail_dependents(ARRAY[id], 'CANCELLED') FROM c";
	char ids[24];
	const char *params[2] = {ids, reason ? reason : "cancelled by operator"};

	snprintf(ids, sizeof(ids), "%lld", id);
	if (pd_db_exec(db, sql, 2, params, PGRES_TUPLES_OK, r, e) < 0)
		return -1;
	if (PQntuples(*r) != 1) {
		PQclear(*r);
		*r = NULL;
		return refuse(db, id, "cancel", "PENDING or BLOCKED", e);
	}
	return 0;
}

int pd_admin_job_cancel(struct pd_db *db, long long id, const char *reason,
			const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/* clang-format off */
	static const struct pd_admin_col cols[] = {
	    {"id", NULL, 'n', 'b'},	  {"job_type", "type", 's', 'b'},
	    {"state", NULL, 'S', 'b'},	  {"queue", NULL, 's', 'b'},
	    {"dead_reason", "reason", 's', 'b'},
	    {"dependents_cancelled", NULL, 'n', 'j'},
	};
	/* clang-format on */
	PGresult *r;
	int deps;

	if (cancel_job(db, id, reason, &r, e) < 0)
		return -1;
	deps = atoi(PQgetvalue(r, 0, 5));
	if (fmt->json)
		pd_admin_render_result(r, cols, NCOLS(cols), fmt, out);
	else
		pd_buf_printf(out, "job %lld cancelled (%s, queue %s)\n", id, PQgetvalue(r, 0, 1),
			      PQgetvalue(r, 0, 3));
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
    " attempt,"
    " max_attempts, " ISO("created_at") ", " ISO("finished_at")
    " FROM pendulum.jobs WHERE" FILTER " ORDER BY finished_at DESC NULLS LAST, id DESC"
    " LIMIT $5 OFFSET $6) j ON true ORDER BY j.dead_for NULLS LAST, j.id DESC";
/* clang-format on */

static const struct pd_admin_col dlq_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", "type", 's', 'b'},
    {"queue", NULL, 's', 'b'},
    {"tenant_id", "tenant", 's', 'b'},
    {"attempts", NULL, 's', 't'},
    {"replay_count", "replays", 'n', 'b'},
    {"dead_for_s", "dead_for", 'd', 'b'},
    {"dead_reason", "reason", 's', 'b'},
    {"last_error", "error", 's', 'b'},
    {"attempt", NULL, 'n', 'j'},
    {"max_attempts", NULL, 'n', 'j'},
    {"created_at", NULL, 's', 'j'},
    {"finished_at", NULL, 's', 'j'},
    {"total", NULL, 'n', 'j'},
};

int pd_admin_dlq_list(struct pd_db *db, const struct pd_admin_filter *f,
		      const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	PGresult *r;

	if (run_listing(db, dlq_sql, f, "{DEAD_LETTERED}", &r, e) < 0)
		return -1;
	pd_admin_render_result(r, dlq_cols, NCOLS(dlq_cols), fmt, out);
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
	const char *params[1];
	PGresult *r;
	int code = PD_EX_CONFLICT, nmiss = 0, rc;

	for (int i = 0; i < nids; i++) {
		int found = 0;

		for (int k = 0; k < PQntuples(done) && !found; k++)
			found = strtoll(PQgetvalue(done, k, 0), NULL, 10) == ids[i];
		for (int k = 0; k < i && !found; k++)
			found = ids[k] == ids[i]; /* a repeated id is reported once */
		if (!found) {
			pd_buf_printf(&miss, "%s%lld", nmiss ? "," : "{", ids[i]);
			nmiss++;
		}
	}
	if (nmiss == 0)
		return 0;
	pd_buf_putc(&miss, '}');
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
			const struct pd_admin_filter *f, const struct pd_admin_fmt *fmt,
			struct pd_buf *out, struct pd_err *e)
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
	struct pd_buf ia = PD_BUF_INIT;
	char lim[24];
	const char *params[5];
	PGresult *r;
	int rc;

	if (nids > 0)
		id_array(&ia, ids, nids);
	if (nids > 0)
		snprintf(lim, sizeof(lim), "%d", nids);
	else
		snprintf(lim, sizeof(lim), "%lld", f->limit > 0 ? f->limit : 100);
	params[0] = nids > 0 ? ia.data : NULL;
	params[1] = nids > 0 ? NULL : f->tenant;
	params[2] = nids > 0 ? NULL : f->type;
	params[3] = nids > 0 ? NULL : f->queue;
	params[4] = lim;
	rc = pd_db_exec(db, nids > 0 ? ids_sql : bulk_sql, 5, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&ia);
	if (rc < 0)
		return -1;
	if (PQntuples(r) > 0 || fmt->json)
		pd_admin_render_result(r, replay_cols, NCOLS(replay_cols), fmt, out);
	if (!fmt->json) {
		pd_buf_printf(out, "replayed %d dead letter%s\n", PQntuples(r),
			      PQntuples(r) == 1 ? "" : "s");
		waits_lines(r, 0, PQntuples(r), out);
	}
	rc = nids > 0 ? missed(db, ids, nids, r, "replayed", e) : 0;
	PQclear(r);
	return rc;
#undef DLQ_PICK
#undef DLQ_REPLAY
}

int pd_admin_dlq_delete(struct pd_db *db, const long long *ids, int nids,
			const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	static const char sql[] =
	    "SELECT id, job_type, queue FROM pendulum.delete_jobs($1::bigint[], 'DEAD_LETTERED')"
	    " ORDER BY id";
	/* clang-format off */
	static const struct pd_admin_col cols[] = {
	    {"id", NULL, 'n', 'b'},
	    {"job_type", "type", 's', 'b'},
	    {"queue", NULL, 's', 'b'},
	};
	/* clang-format on */
	struct pd_buf ia = PD_BUF_INIT;
	const char *params[1];
	PGresult *r;
	int rc;

	id_array(&ia, ids, nids);
	params[0] = ia.data;
	rc = pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&ia);
	if (rc < 0)
		return -1;
	if (PQntuples(r) > 0 || fmt->json)
		pd_admin_render_result(r, cols, NCOLS(cols), fmt, out);
	if (!fmt->json)
		pd_buf_printf(out, "deleted %d dead letter%s\n", PQntuples(r),
			      PQntuples(r) == 1 ? "" : "s");
	rc = missed(db, ids, nids, r, "deleted", e);
	PQclear(r);
	return rc;
}

int pd_admin_dlq_purge(struct pd_db *db, long long older_ms, const char *queue, int dry_run,
		       const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
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
	char ms[24], secs[32], age[32], *n = NULL;
	const char *params[2] = {ms, queue};

	snprintf(ms, sizeof(ms), "%lld", older_ms);
	if (pd_db_value(db, dry_run ? count_sql : purge_sql, 2, params, &n, e) < 0)
		return -1;
	if (fmt->json) {
		static const struct pd_admin_col cols[] = {
		    {"purged", NULL, 'n', 'b'},
		    {"older_than_s", NULL, 'n', 'b'},
		    {"queue", NULL, 's', 'b'},
		    {"dry_run", NULL, 'b', 'b'},
		};
		const char *row[4] = {n ? n : "0", secs, queue, dry_run ? "t" : "f"};

		snprintf(secs, sizeof(secs), "%.3f", (double)older_ms / 1000);
		pd_admin_render(cols, 4, row, 1, fmt, out);
	} else {
		long long k = n ? strtoll(n, NULL, 10) : 0;

		pd_admin_age((double)older_ms / 1000, age, sizeof(age));
		pd_buf_printf(out, "%s %lld dead letter%s%s%s that died more than %s ago\n",
			      dry_run ? "would purge" : "purged", k, k == 1 ? "" : "s",
			      queue ? " of queue " : "", queue ? queue : "", age);
	}
	free(n);
	return 0;
}

/* clang-format off */
const struct pd_admin_col pd_admin_queue_cols[PD_ADMIN_QUEUE_NCOLS] = {
    {"queue", NULL, 's', 'b'},
    {"pending", NULL, 'n', 'b'},
    {"blocked", NULL, 'n', 'b'},
    {"leased", NULL, 'n', 'b'},
    {"running", NULL, 'n', 'b'},
    {"succeeded", NULL, 'n', 'b'},
    {"dead_lettered", NULL, 'n', 'b'},
    {"cancelled", NULL, 'n', 'b'},
    {"runnable", NULL, 'n', 'b'},
    {"oldest_runnable_age_s", "oldest_runnable", 'd', 'b'},
    {"workers", NULL, 'n', 'b'},
    {"unserved_list", "unserved", 's', 't'},
    {"unserved", NULL, 'j', 'j'},
};
/* clang-format on */

int pd_admin_queues(struct pd_db *db, const struct pd_admin_fmt *fmt, struct pd_buf *out,
		    struct pd_err *e)
{
	PGresult *r;

	if (pd_db_exec(db, pd_admin_queues_sql, 0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	pd_admin_render_result(r, pd_admin_queue_cols, PD_ADMIN_QUEUE_NCOLS, fmt, out);
	PQclear(r);
	return 0;
}

int pd_admin_depth(struct pd_db *db, const char *queue, const char *state, int runnable,
		   const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
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
		static const struct pd_admin_col cols[] = {
		    {"queue", NULL, 's', 'b'},
		    {"state", NULL, 's', 'b'},
		    {"runnable", NULL, 'b', 'b'},
		    {"depth", NULL, 'n', 'b'},
		};
		const char *row[4] = {queue, params[1], params[2], n ? n : "0"};

		pd_admin_render(cols, 4, row, 1, fmt, out);
	} else {
		pd_buf_printf(out, "%s\n", n ? n : "0");
	}
	free(n);
	return 0;
}

int pd_admin_workers(struct pd_db *db, long long stale_ms, const struct pd_admin_fmt *fmt,
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
	static const struct pd_admin_col cols[] = {
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
	PGresult *r;

	snprintf(ms, sizeof(ms), "%lld", stale_ms);
	if (pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	pd_admin_render_result(r, cols, NCOLS(cols), fmt, out);
	PQclear(r);
	return 0;
}

/* --- the outbox --- */

/* clang-format off */
static const struct pd_admin_col outbox_stats_cols[PD_ADMIN_OUTBOX_NCOLS] = {
    {"topic", NULL, 's', 'b'},
    {"pending", NULL, 'n', 'b'},
    {"published", NULL, 'n', 'b'},
    {"dead_lettered", NULL, 'n', 'b'},
    {"oldest_pending_age_s", "oldest_pending", 'd', 'b'},
};
/* clang-format on */

int pd_admin_outbox_stats(struct pd_db *db, const struct pd_admin_fmt *fmt, struct pd_buf *out,
			  struct pd_err *e)
{
	PGresult *r;

	if (pd_db_exec(db, pd_admin_outbox_sql, 0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	pd_admin_render_result(r, outbox_stats_cols, PD_ADMIN_OUTBOX_NCOLS, fmt, out);
	PQclear(r);
	return 0;
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
    " coalesce(dead_reason, last_error), attempts, max_attempts, payload::text, headers::text,"
    " claimed_by, " ISO("created_at") ", " ISO("next_attempt_at") ", " ISO("published_at") ","
    " " ISO("dead_lettered_at") ", dead_reason, last_error"
    " FROM pendulum.outbox WHERE" OUTBOX_FILTER
    " ORDER BY id DESC LIMIT $4 OFFSET $5) m ON true ORDER BY m.id DESC";
#undef OUTBOX_FILTER
/* clang-format on */

static const struct pd_admin_col outbox_list_cols[] = {
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
    {"total", NULL, 'n', 'j'},
};

int pd_admin_outbox_list(struct pd_db *db, const struct pd_admin_filter *f,
			 const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
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
	pd_admin_render_result(r, outbox_list_cols, NCOLS(outbox_list_cols), fmt, out);
	if (!fmt->json)
		footer(r, f, "messages", out);
	PQclear(r);
	return 0;
}

int pd_admin_outbox_replay(struct pd_db *db, const long long *ids, int nids,
			   const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/*
	 * The claim is cleared too: a relay still holding the message's last
	 * token (its claim was abandoned and dead-lettered) is fenced off.
	 * is_head is left alone: a dead letter blocking its key is that key's
	 * head (sql/006_outbox_claim.sql), so once PENDING it is claimable at
	 * once, before the messages queued behind it. (Deleting a dead letter,
	 * with SQL, hands its key to the next message: a trigger does it.)
	 */
	/* clang-format off */
	static const char sql[] =
	    "WITH r AS (UPDATE pendulum.outbox o SET state = 'PENDING', attempts = 0,"
	    " replay_count = o.replay_count + 1, next_attempt_at = now(), claim_token = NULL,"
	    " claimed_by = NULL, last_error = NULL, dead_reason = NULL, dead_lettered_at = NULL"
	    " WHERE o.id = ANY ($1::bigint[]) AND o.state = 'DEAD_LETTERED'"
	    " RETURNING o.id, o.topic, o.state, o.message_key, o.replay_count),"
	    " n AS (SELECT pg_notify('pendulum_outbox', t.topic)"
	    " FROM (SELECT DISTINCT topic FROM r) t)"
	    " SELECT id, topic, state, message_key, replay_count, (SELECT count(*) FROM n) FROM r"
	    " ORDER BY id";
	static const struct pd_admin_col cols[] = {
	    {"id", NULL, 'n', 'b'},
	    {"topic", NULL, 's', 'b'},
	    {"state", NULL, 'S', 'b'},
	    {"message_key", "key", 's', 'b'},
	    {"replay_count", "replays", 'n', 'b'},
	};
	/* clang-format on */
	struct pd_buf ia = PD_BUF_INIT;
	const char *params[1];
	PGresult *r;
	int rc;

	id_array(&ia, ids, nids);
	params[0] = ia.data;
	rc = pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&ia);
	if (rc < 0)
		return -1;
	if (PQntuples(r) > 0 || fmt->json)
		pd_admin_render_result(r, cols, NCOLS(cols), fmt, out);
	if (!fmt->json)
		pd_buf_printf(out, "replayed %d outbox message%s\n", PQntuples(r),
			      PQntuples(r) == 1 ? "" : "s");
	rc = missed_in(db, "pendulum.outbox", "message", ids, nids, r, "replayed", e);
	PQclear(r);
	return rc;
}

/* --- workflow runs --- */

/* The runs with their state and job; $1 states, $2 tenant, $3 workflow, $4 the job's queue. */
/* clang-format off */
#define FLOW_FROM                                                                                  \
	" FROM pendulum.workflow_runs r JOIN pendulum.workflow_run_states v ON v.run_id = r.id"    \
	" JOIN pendulum.jobs j ON j.id = r.job_id WHERE"                                           \
	" ($1::text[] IS NULL OR v.state = ANY ($1::text[])) AND ($2::text IS NULL OR r.tenant_id = $2)" \
	" AND ($3::text IS NULL OR r.workflow = $3) AND ($4::text IS NULL OR j.queue = $4)"

static const char flow_runs_sql[] =
    "SELECT x.*, t.total FROM (SELECT count(*) AS total" FLOW_FROM ") t"
    " LEFT JOIN LATERAL (SELECT r.id, r.workflow, v.state,"
    " concat_ws(' ', r.position || coalesce('/' || array_length(r.steps, 1), ''),"
    " r.steps[r.position + 1]), r.tenant_id, " SECS("now() - r.created_at") ", r.job_id,"
    " CASE v.state WHEN 'WAITING' THEN 'signal ' || r.waiting_for"
    " WHEN 'SLEEPING' THEN 'until ' || " ISO("r.sleep_until") " ELSE j.dead_reason END,"
    " r.position, r.steps[r.position + 1], to_json(r.steps)::text, j.state, j.attempt, j.queue,"
    " r.waiting_for, " ISO("r.sleep_until") ", " ISO("r.created_at") ", " ISO("r.updated_at") ","
    " " ISO("j.finished_at") ", j.dead_reason"
    FLOW_FROM " ORDER BY r.id DESC LIMIT $5 OFFSET $6) x ON true ORDER BY x.id DESC";
#undef FLOW_FROM
/* clang-format on */

static const struct pd_admin_col flow_runs_cols[] = {
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
    {"total", NULL, 'n', 'j'},
};

int pd_admin_flow_runs(struct pd_db *db, const struct pd_admin_filter *f,
		       const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
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
	pd_admin_render_result(r, flow_runs_cols, NCOLS(flow_runs_cols), fmt, out);
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

static const struct pd_admin_col flow_show_cols[] = {
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

static const struct pd_admin_col flow_step_cols[] = {
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

int pd_admin_flow_show(struct pd_db *db, long long run, const struct pd_admin_fmt *fmt,
		       struct pd_buf *out, struct pd_err *e)
{
	PGresult *r, *s;

	if (fetch_show(db, run, "workflow run", flow_show_sql, NCOLS(flow_show_cols),
		       flow_steps_sql, &r, &s, e) < 0)
		return -1;
	render_show(r, flow_show_cols, NCOLS(flow_show_cols), "steps", s, flow_step_cols,
		    NCOLS(flow_step_cols), fmt, out);
	PQclear(s);
	PQclear(r);
	return 0;
}

int pd_admin_flow_signal(struct pd_db *db, long long run, const char *name, const char *payload,
			 const char *where, const struct pd_admin_fmt *fmt, struct pd_buf *out,
			 struct pd_err *e)
{
	static const struct pd_admin_col cols[] = {
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

		pd_admin_render(cols, 3, row, 1, fmt, out);
	} else {
		pd_buf_printf(out, "workflow run %lld: signal '%s' sent; %s\n", run, name,
			      woke ? "it woke the run"
				   : "kept until a wait_for step of that name takes it");
	}
	return 0;
}

int pd_admin_flow_cancel(struct pd_db *db, long long run, const char *reason,
			 const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	/* clang-format off */
	static const struct pd_admin_col cols[] = {
	    {"run", NULL, 'n', 'b'},	  {"job_id", "job", 'n', 'b'},
	    {"job_type", "type", 's', 'b'}, {"state", NULL, 'S', 'b'},
	    {"queue", NULL, 's', 'b'},	  {"dead_reason", "reason", 's', 'b'},
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
		const char *row[6] = {ids,
				      PQgetvalue(r, 0, 0),
				      PQgetvalue(r, 0, 1),
				      PQgetvalue(r, 0, 2),
				      PQgetvalue(r, 0, 3),
				      PQgetvalue(r, 0, 4)};

		pd_admin_render(cols, 6, row, 1, fmt, out);
	} else {
		pd_buf_printf(out, "workflow run %lld cancelled (job %lld, queue %s)\n", run, job,
			      PQgetvalue(r, 0, 3));
	}
	PQclear(r);
	return 0;
}
