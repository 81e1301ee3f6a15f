/*
 * enqueue: read and check pd-enqueue's input, enqueue it in one transaction
 * through the bulk statement of sql/009_enqueue_many.sql (or, for a large
 * batch without keys and dependencies, COPY into pendulum.jobs of the
 * columns the jobs give, the table's defaults filling the rest), a long
 * NDJSON input batch after batch in that transaction (its ids spooled to a
 * temporary file), wait for a job.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "dur.h"
#include "enqueue.h"
#include "job.h"
#include "json.h"
#include "log.h"
#include "text.h"

/* COPY data is sent in pieces of about this size. */
#define COPY_CHUNK (64 * 1024)

void pd_enqueue_init(struct pd_enqueue *q)
{
	memset(q, 0, sizeof(*q));
}

void pd_enqueue_release(struct pd_enqueue *q)
{
	pd_jobspec_mem_release(&q->mem);
	free(q->jobs);
	free(q->lines);
	free(q->ids);
	free(q->created);
	pd_enqueue_init(q);
}

static void add(struct pd_enqueue *q, const struct pd_jobspec *s, int line)
{
	const struct pd_handler *h;

	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 16;
		q->jobs = pd_xrealloc(q->jobs, (size_t)q->cap * sizeof(*q->jobs));
		q->lines = pd_xrealloc(q->lines, (size_t)q->cap * sizeof(*q->lines));
	}
	q->jobs[q->n] = *s;
	if (s->concurrency_key == NULL && s->type != NULL &&
	    (h = pd_handler_find(q->handlers, q->nhandlers, s->type)) != NULL)
		q->jobs[q->n].concurrency_key = h->concurrency_key;
	q->lines[q->n++] = line;
}

/* "1MiB", "1500000" */
static const char *size_str(long long n, char *out, size_t len)
{
	pd_size_format(n, out, len);
	return out;
}

int pd_enqueue_read(int fd, struct pd_buf *b, long long max_payload, struct pd_err *e)
{
	for (;;) {
		size_t room = 65536;
		char *p;
		ssize_t n;

		if (max_payload > 0 && (size_t)max_payload + 1 - b->len < room)
			room = (size_t)max_payload + 1 - b->len;
		p = pd_buf_grow(b, room);
		n = read(fd, p, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_errf(e, PD_EX_DATAERR, "cannot read stdin: %s", strerror(errno));
		if (n == 0)
			break;
		b->len += (size_t)n;
		if (max_payload > 0 && b->len > (size_t)max_payload) {
			char lim[32];

			return pd_errf(
			    e, PD_EX_DATAERR,
			    "payload on stdin: more than %lld bytes, over max_payload %s",
			    max_payload, size_str(max_payload, lim, sizeof(lim)));
		}
	}
	pd_buf_grow(b, 0);
	b->data[b->len] = '\0';
	return 0;
}

int pd_enqueue_check_size(size_t len, long long max_payload, const char *where, struct pd_err *e)
{
	char lim[32];

	if (max_payload <= 0 || len <= (size_t)max_payload)
		return 0;
	return pd_errf(e, PD_EX_DATAERR, "%s: %zu bytes, over max_payload %s", where, len,
		       size_str(max_payload, lim, sizeof(lim)));
}

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

/*
 * A JSON error for where: "invalid JSON on stdin line 3, column 7: ..."
 * (line_based: the text is that line) or "invalid JSON in PAYLOAD at line
 * 1, column 6: ...".
 */
static int json_error(struct pd_err *e, const struct pd_err *je, const char *where, int line_based)
{
	int l = 0, c = 0, off = 0;

	if (sscanf(je->msg, "invalid JSON at line %d, column %d: %n", &l, &c, &off) == 2 &&
	    off > 0) {
		if (line_based)
			return pd_errf(e, PD_EX_DATAERR, "invalid JSON on %s, column %d: %s", where,
				       c, je->msg + off);
		return pd_errf(e, PD_EX_DATAERR, "invalid JSON in %s at line %d, column %d: %s",
			       where, l, c, je->msg + off);
	}
	return pd_errf(e, PD_EX_DATAERR, "%s: %s", where, je->msg);
}

int pd_enqueue_check_json(const char *text, size_t len, const char *where, struct pd_err *e)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err je = PD_ERR_INIT;

	if (pd_json_parse(&j, text, len, &je) < 0)
		return json_error(e, &je, where, 0);
	pd_json_release(&j);
	return 0;
}

int pd_enqueue_one(struct pd_enqueue *q, const struct pd_jobspec *defaults, const char *text,
		   size_t len, const char *where, int blank_is_empty, struct pd_err *e)
{
	struct pd_jobspec s = *defaults;

	if (text == NULL || (blank_is_empty && blank(text, len))) {
		text = "{}";
		len = 2;
	}
	if (pd_enqueue_check_json(text, len, where, e) < 0)
		return -1;
	s.payload = text;
	s.payload_len = len;
	add(q, &s, 0);
	return 0;
}

/*
 * Line lineno of NDJSON input (n bytes, not blank) into q as
 * pd_enqueue_ndjson reads it; its payload at most max_payload (0: no limit).
 */
static int ndjson_line(struct pd_enqueue *q, const struct pd_jobspec *defaults, const char *line,
		       size_t n, int lineno, long long max_payload, struct pd_err *e)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err je = PD_ERR_INIT;
	struct pd_jobspec s = *defaults;
	char where[64];
	int rc = 0;

	snprintf(where, sizeof(where), "stdin line %d", lineno);
	if (pd_json_parse(&j, line, n, &je) < 0)
		return json_error(e, &je, where, 1);
	if (defaults->type) {
		pd_json_span(&j, 0, &s.payload, &s.payload_len);
	} else {
		s.payload = "{}";
		s.payload_len = 2;
		rc = pd_jobspec_parse(&j, &s, &q->mem, &je);
	}
	pd_json_release(&j);
	if (rc < 0)
		return pd_errf(e, PD_EX_DATAERR, "%s: %s", where, je.msg);
	if (pd_jobspec_check_start_by(&s, pd_jobspec_wall_us(), &je) < 0)
		return pd_errf(e, PD_EX_DATAERR, "%s: key 'start_by': %s", where, je.msg);
	if (max_payload > 0 && s.payload_len > (size_t)max_payload) {
		char lim[32];

		return pd_errf(e, PD_EX_DATAERR, "%s: payload of %zu bytes, over max_payload %s",
			       where, s.payload_len, size_str(max_payload, lim, sizeof(lim)));
	}
	add(q, &s, lineno);
	return 0;
}

int pd_enqueue_ndjson(struct pd_enqueue *q, const struct pd_jobspec *defaults, const char *text,
		      size_t len, struct pd_err *e)
{
	const char *line = text, *end = text + len;
	int lineno = 0;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);

		lineno++;
		if (!blank(line, n) && ndjson_line(q, defaults, line, n, lineno, 0, e) < 0)
			return -1;
		line = nl ? nl + 1 : end;
	}
	if (q->n == 0)
		return pd_errf(e, PD_EX_DATAERR, "no jobs on stdin");
	return 0;
}

void pd_ndjson_init(struct pd_ndjson *nd, int fd, const struct pd_jobspec *defaults,
		    long long max_payload)
{
	memset(nd, 0, sizeof(*nd));
	nd->fd = fd;
	nd->defaults = defaults;
	nd->max_payload = max_payload;
	nd->line_max = (size_t)(max_payload > 0 ? max_payload : 64LL << 20) + PD_ENQUEUE_LINE_SLACK;
	/* Room for a whole line of line_max bytes and its '\n' wherever a batch may still take
	 * one (pos <= PD_ENQUEUE_BATCH_BYTES); malloc'd pages are touched only as read into. */
	nd->cap = PD_ENQUEUE_BATCH_BYTES + nd->line_max + 2;
	nd->buf = pd_xmalloc(nd->cap);
}

void pd_ndjson_release(struct pd_ndjson *nd)
{
	free(nd->buf);
	nd->buf = NULL;
}

/* q emptied for the next batch: no jobs, nothing they point into; the arrays are kept. */
static void clear(struct pd_enqueue *q)
{
	pd_jobspec_mem_release(&q->mem);
	q->n = 0;
}

/* Read more of nd->fd after nd->len: 0 (nd->eof at its end), -1 with e filled. */
static int fill(struct pd_ndjson *nd, struct pd_err *e)
{
	for (;;) {
		ssize_t n = read(nd->fd, nd->buf + nd->len, nd->cap - nd->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_errf(e, PD_EX_DATAERR, "cannot read stdin: %s", strerror(errno));
		if (n == 0)
			nd->eof = 1;
		nd->len += (size_t)n;
		return 0;
	}
}

int pd_ndjson_read(struct pd_ndjson *nd, struct pd_enqueue *q, int limit, struct pd_err *e)
{
	char lim[32];

	clear(q);
	if (nd->pos > 0) { /* nothing points into the buffer now: keep only what is unread */
		memmove(nd->buf, nd->buf + nd->pos, nd->len - nd->pos);
		nd->len -= nd->pos;
		nd->pos = 0;
	}
	while (!nd->done && q->n < limit && nd->pos <= PD_ENQUEUE_BATCH_BYTES) {
		char *at = nd->buf + nd->pos;
		char *nl = memchr(at, '\n', nd->len - nd->pos);
		size_t n = nl ? (size_t)(nl - at) : nd->len - nd->pos;

		if (n > nd->line_max)
			return pd_errf(e, PD_EX_DATAERR,
				       "stdin line %d: more than %zu bytes, over max_payload %s",
				       nd->line + 1, nd->line_max,
				       size_str(nd->max_payload, lim, sizeof(lim)));
		if (nl == NULL && !nd->eof) {
			if (fill(nd, e) < 0)
				return -1;
			continue;
		}
		if (nl == NULL && n == 0) {
			nd->done = 1;
			break;
		}
		nd->line++;
		nd->pos += n + (nl != NULL);
		if (!blank(at, n) &&
		    ndjson_line(q, nd->defaults, at, n, nd->line, nd->max_payload, e) < 0)
			return -1;
	}
	nd->jobs += q->n;
	if (nd->done && nd->jobs == 0)
		return pd_errf(e, PD_EX_DATAERR, "no jobs on stdin");
	return 0;
}

/* The (ord, id, created) rows of the bulk statement into q->ids, q->created. */
static int take_ids(struct pd_enqueue *q, PGresult *r, struct pd_err *e)
{
	int rows = PQntuples(r);

	if (rows != q->n || PQnfields(r) != 3)
		return pd_errf(e, PD_EX_SOFTWARE, "enqueue returned %d rows for %d jobs", rows,
			       q->n);
	for (int i = 0; i < rows; i++) {
		long ord = strtol(PQgetvalue(r, i, 0), NULL, 10);

		if (ord < 1 || ord > q->n || PQgetisnull(r, i, 1))
			return pd_errf(e, PD_EX_SOFTWARE, "enqueue returned a bad row %d", i + 1);
		q->ids[ord - 1] = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		q->created[ord - 1] = PQgetvalue(r, i, 2)[0] == 't';
	}
	return 0;
}

/* A small batch: one JSON array, one statement (its own transaction). */
static int run_json(struct pd_enqueue *q, struct pd_db *db, struct pd_err *e)
{
	struct pd_buf arr = PD_BUF_INIT;
	const char *params[1];
	PGresult *r;
	int rc;

	pd_buf_putc(&arr, '[');
	for (int i = 0; i < q->n; i++) {
		if (i)
			pd_buf_putc(&arr, ',');
		pd_jobspec_json(&q->jobs[i], &arr);
	}
	pd_buf_putc(&arr, ']');
	params[0] = arr.data;
	rc = pd_db_exec(db, "SELECT ord, id, created FROM pendulum.enqueue_many_ex($1::jsonb)", 1,
			params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&arr);
	if (rc < 0)
		return -1;
	rc = take_ids(q, r, e);
	PQclear(r);
	return rc;
}

/* run_json and pendulum.wait_job for each job, in one transaction. */
static int run_json_marked(struct pd_enqueue *q, struct pd_db *db, struct pd_err *e)
{
	struct pd_err ignore = PD_ERR_INIT;
	struct pd_buf ids = PD_BUF_INIT;
	const char *params[1];
	int rc = -1;

	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		return -1;
	if (run_json(q, db, e) == 0) {
		pd_db_id_array(&ids, q->ids, q->n);
		params[0] = ids.data;
		if (pd_db_exec(db, "SELECT pendulum.wait_job(id) FROM unnest($1::bigint[]) id", 1,
			       params, PGRES_TUPLES_OK, NULL, e) == 0)
			rc = pd_db_exec_script(db, "COMMIT", e);
	}
	if (rc < 0 && pd_db_ok(db))
		pd_db_exec_script(db, "ROLLBACK", &ignore);
	pd_buf_release(&ids);
	return rc;
}

/* Copy every job into the staging table, in pieces of COPY_CHUNK; *line as pd_db_copy_end. */
static int copy_jobs(struct pd_enqueue *q, struct pd_db *db, int *line, struct pd_err *e)
{
	/* The columns of pendulum.job_input, as pd_jobspec_copy writes them; id is the default. */
	static const char copy_sql[] =
	    "COPY pendulum_stage (ord, tenant_id, queue, job_type, payload, priority, run_at, "
	    "delay, "
	    "idempotency_key, max_attempts, timeout, delivery, traceparent, depends_on, "
	    "concurrency_key, start_by, start_within) FROM STDIN";
	struct pd_buf chunk = PD_BUF_INIT;
	int rc = 0;

	*line = 0;
	if (pd_db_copy_begin(db, copy_sql, e) < 0)
		return -1;
	for (int i = 0; i < q->n && rc == 0; i++) {
		pd_jobspec_copy(&q->jobs[i], i + 1, &chunk);
		if (chunk.len >= COPY_CHUNK || i == q->n - 1) {
			rc = pd_db_copy_put(db, chunk.data, chunk.len, e);
			pd_buf_reset(&chunk);
		}
	}
	pd_buf_release(&chunk);
	if (rc < 0)
		return -1;
	return pd_db_copy_end(db, line, e);
}

/*
 * The staging path, in the open transaction: COPY into pendulum_stage (made
 * by enqueue_stage, or emptied when *made), then enqueue_staged.
 */
static int run_staged(struct pd_enqueue *q, struct pd_db *db, int *made, int *line, long long *t1,
		      struct pd_err *e)
{
	PGresult *r = NULL;
	int rc;

	/* *made: the stage exists already in this transaction (an earlier batch's) */
	if (pd_db_exec_script(
		db, *made ? "TRUNCATE pg_temp.pendulum_stage" : "SELECT pendulum.enqueue_stage()",
		e) < 0)
		return -1;
	*made = 1;
	if (copy_jobs(q, db, line, e) < 0)
		return -1;
	*t1 = pd_now_us();
	if (pd_db_exec(db, "SELECT ord, id, created FROM pendulum.enqueue_staged()", 0, NULL,
		       PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	rc = take_ids(q, r, e);
	PQclear(r);
	return rc;
}

/*
 * 1 when q's jobs may be copied straight into pendulum.jobs: none has an
 * idempotency key (resolved only by the bulk statement) or a dependency
 * (its state is the database's to decide).
 */
static int direct_eligible(const struct pd_enqueue *q)
{
	for (int i = 0; i < q->n; i++)
		if (q->jobs[i].idempotency_key != NULL || q->jobs[i].nafter > 0)
			return 0;
	return 1;
}

/*
 * q->n new ids from the identity sequence, into q->ids in input order (a
 * session's nextval only grows). Most often they are one block, told by its
 * ends; when other sessions took ids in between, those are wasted (a gap,
 * as a rollback leaves) and the ids are taken again, one row each. Taken
 * before the COPY rather than by the column's default: a COPY of 100,000
 * rows that leaves id to the identity took 100-200 ms longer here, more
 * than this query costs (50-70 ms).
 */
static int take_new_ids(struct pd_enqueue *q, struct pd_db *db, struct pd_err *e)
{
	static const char block_sql[] =
	    "SELECT min(v), max(v) FROM (SELECT nextval('pendulum.jobs_id_seq'::regclass) AS v "
	    "FROM generate_series(1, $1::integer)) s";
	static const char rows_sql[] = "SELECT nextval('pendulum.jobs_id_seq'::regclass) FROM "
				       "generate_series(1, $1::integer) g ORDER BY g";
	char n[16];
	const char *params[1] = {n};
	long long lo, hi;
	PGresult *r;
	int rows;

	snprintf(n, sizeof(n), "%d", q->n);
	if (pd_db_exec(db, block_sql, 1, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	lo = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	hi = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	PQclear(r);
	if (hi - lo + 1 == q->n) {
		for (int i = 0; i < q->n; i++)
			q->ids[i] = lo + i;
		return 0;
	}
	pd_log(PD_LOG_DEBUG, "ids not in one block: taken again", "jobs=%d first=%lld last=%lld",
	       q->n, lo, hi);
	if (pd_db_exec(db, rows_sql, 1, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	rows = PQntuples(r);
	for (int i = 0; i < rows && i < q->n; i++)
		q->ids[i] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
	PQclear(r);
	if (rows != q->n)
		return pd_errf(e, PD_EX_SOFTWARE, "nextval returned %d rows for %d jobs", rows,
			       q->n);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each queue that got jobs, once: pendulum.notify_jobs, as the bulk statement calls it. */
static int notify_queues(const struct pd_enqueue *q, struct pd_db *db, struct pd_err *e)
{
	const char **v = pd_xcalloc((size_t)q->n, sizeof(*v));
	struct pd_buf arr = PD_BUF_INIT;
	const char *params[1];
	int m = 0, k, rc;

	for (int i = 0; i < q->n; i++) {
		const char *name = q->jobs[i].queue ? q->jobs[i].queue : "default";

		if (m == 0 || strcmp(v[m - 1], name) != 0)
			v[m++] = name;
	}
	qsort(v, (size_t)m, sizeof(*v), cmp_str);
	k = m > 0;
	for (int i = 1; i < m; i++) /* each name once */
		if (strcmp(v[i], v[k - 1]) != 0)
			v[k++] = v[i];
	pd_db_text_array(&arr, v, k);
	params[0] = arr.data;
	rc = pd_db_exec(db, "SELECT pendulum.notify_jobs($1::text[])", 1, params, PGRES_TUPLES_OK,
			NULL, e);
	pd_buf_release(&arr);
	free(v);
	return rc;
}

/*
 * One COPY straight into pendulum.jobs of the jobs from first on that give
 * the columns cols; *line as pd_db_copy_end, made the job's number.
 */
static int copy_direct(struct pd_enqueue *q, struct pd_db *db, unsigned cols, int first,
		       long long now_us, int *line, struct pd_err *e)
{
	struct pd_buf sql = PD_BUF_INIT, chunk = PD_BUF_INIT;
	int *job = pd_xcalloc((size_t)q->n, sizeof(*job));
	char at[PD_INSTANT_MAX] = "";
	long long at_us = 0;
	int rc, n = 0, last = first;

	for (int i = first; i < q->n; i++)
		if (pd_jobspec_given(&q->jobs[i]) == cols)
			last = i;
	pd_buf_puts(&sql, "COPY pendulum.jobs ");
	pd_jobspec_copy_cols(cols, &sql);
	pd_buf_puts(&sql, " FROM STDIN");
	rc = pd_db_copy_begin(db, sql.data, e);
	for (int i = first; i <= last && rc == 0; i++) {
		const struct pd_jobspec *s = &q->jobs[i];
		/* No overflow: run_at is before year 10000, a delay at most 100 years (dur.h). */
		long long run_at = (s->has_run_at ? s->run_at_us : now_us) +
				   (s->delay_ms > 0 ? s->delay_ms * 1000 : 0);

		if (pd_jobspec_given(s) != cols)
			continue;
		if ((cols & PD_JOBSPEC_COL_RUN_AT) && (at[0] == '\0' || run_at != at_us)) {
			pd_instant_format(run_at, at, sizeof(at));
			at_us = run_at;
		}
		job[n++] = i;
		pd_jobspec_copy_job(s, q->ids[i], cols, at, now_us, &chunk);
		if (chunk.len >= COPY_CHUNK || i == last) {
			rc = pd_db_copy_put(db, chunk.data, chunk.len, e);
			pd_buf_reset(&chunk);
		}
	}
	if (rc == 0 && pd_db_copy_end(db, line, e) < 0) {
		*line = *line >= 1 && *line <= n ? job[*line - 1] + 1 : 0;
		rc = -1;
	}
	pd_buf_release(&sql);
	pd_buf_release(&chunk);
	free(job);
	return rc;
}

/*
 * The direct path, in the open transaction: the ids first, in input order,
 * then a COPY straight into pendulum.jobs for each set of columns the jobs
 * give (most often one): what a job leaves out, the table's defaults fill,
 * as they fill it for enqueue_ex and the bulk statement; run_at is resolved
 * against now_us, the transaction's now(). Then the notification.
 */
static int run_direct(struct pd_enqueue *q, struct pd_db *db, long long now_us, int *line,
		      long long *t1, struct pd_err *e)
{
	unsigned char done[1u << PD_JOBSPEC_COL_NCOLS] = {0};

	*line = 0;
	if (take_new_ids(q, db, e) < 0)
		return -1;
	for (int i = 0; i < q->n; i++) {
		unsigned cols = pd_jobspec_given(&q->jobs[i]);

		if (done[cols])
			continue;
		done[cols] = 1;
		if (copy_direct(q, db, cols, i, now_us, line, e) < 0)
			return -1;
	}
	*t1 = pd_now_us();
	for (int i = 0; i < q->n; i++)
		q->created[i] = 1;
	return notify_queues(q, db, e);
}

/*
 * A large batch, in a transaction. Jobs with no key and no dependency are
 * copied straight into pendulum.jobs (run_direct) unless row-level security
 * applies to this role there (sql/019: every role but the table's owner,
 * superusers and BYPASSRLS roles), which COPY FROM refuses; otherwise they
 * are copied into the temporary staging table of pendulum.enqueue_stage
 * (dropped at commit) that enqueue_staged inserts from, under the policies.
 */
static int run_copy(struct pd_enqueue *q, struct pd_db *db, int *line, struct pd_err *e)
{
	static const char check_sql[] = "SELECT row_security_active('pendulum.jobs'::regclass), "
					"(extract(epoch FROM now()) * 1000000)::bigint";
	struct pd_err ignore = PD_ERR_INIT;
	const char *path = "staged";
	long long t0 = pd_now_us(), t1 = 0, t2 = 0;
	int rc = -1, made = 0;

	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		return -1;
	if (direct_eligible(q)) {
		PGresult *r;
		long long now_us;
		int rls;

		if (pd_db_exec(db, check_sql, 0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
			goto out;
		if (PQntuples(r) != 1) {
			PQclear(r);
			pd_errf(e, PD_EX_SOFTWARE, "row_security_active returned no row");
			goto out;
		}
		rls = PQgetvalue(r, 0, 0)[0] == 't';
		now_us = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		PQclear(r);
		if (!rls)
			path = "direct";
		if (!rls && run_direct(q, db, now_us, line, &t1, e) < 0)
			goto out;
	}
	if (strcmp(path, "staged") == 0 && run_staged(q, db, &made, line, &t1, e) < 0)
		goto out;
	t2 = pd_now_us();
	rc = pd_db_exec_script(db, "COMMIT", e);
out:
	if (rc < 0 && pd_db_ok(db))
		pd_db_exec_script(db, "ROLLBACK", &ignore);
	if (rc == 0)
		pd_log(PD_LOG_DEBUG, "jobs copied and enqueued",
		       "path=%s jobs=%d copy_ms=%lld insert_ms=%lld commit_ms=%lld", path, q->n,
		       (t1 - t0) / 1000, (t2 - t1) / 1000, (pd_now_us() - t2) / 1000);
	return rc;
}

/* q->ids and q->created made room for q->n jobs, zeroed. */
static void room_for_ids(struct pd_enqueue *q)
{
	free(q->ids);
	free(q->created);
	q->ids = pd_xcalloc(q->n ? (size_t)q->n : 1, sizeof(*q->ids));
	q->created = pd_xcalloc(q->n ? (size_t)q->n : 1, sizeof(*q->created));
}

/*
 * inner, the error of enqueueing q's jobs, into e, naming the input line of
 * job number line (pd_db_copy_end's) when there is one: -1.
 */
static int run_error(const struct pd_enqueue *q, int line, const struct pd_err *inner,
		     struct pd_err *e)
{
	/* depends_on naming a job that does not exist (foreign_key_violation): not found. */
	static const struct pd_db_remap remap[] = {{"23503", PD_EX_NOTFOUND}, {NULL, 0}};
	int code;

	if ((code = pd_db_remap_code(remap, inner->sqlstate)) == 0)
		code = inner->code;
	if (e->code != 0)
		return -1; /* the first writer wins */
	/* A row the COPY refused is job number line, from input line q->lines[line - 1]. */
	if (line >= 1 && line <= q->n && q->lines[line - 1] > 0)
		pd_errf(e, code, "stdin line %d: %s", q->lines[line - 1], inner->msg);
	else if (line >= 1 && line <= q->n)
		pd_errf(e, code, "job %d: %s", line, inner->msg);
	else
		pd_errf(e, code, "%s", inner->msg);
	snprintf(e->sqlstate, sizeof(e->sqlstate), "%s", inner->sqlstate);
	return -1;
}

int pd_enqueue_run(struct pd_enqueue *q, struct pd_db *db, struct pd_err *e)
{
	struct pd_err inner = PD_ERR_INIT;
	int line = 0, rc;

	room_for_ids(q);
	if (q->n <= PD_ENQUEUE_COPY_MIN && q->notify_done)
		rc = run_json_marked(q, db, &inner);
	else if (q->n <= PD_ENQUEUE_COPY_MIN)
		rc = run_json(q, db, &inner);
	else
		rc = run_copy(q, db, &line, &inner);
	return rc == 0 ? 0 : run_error(q, line, &inner, e);
}

/* q's ids into spool, a line each: "ID", or "ID TENANT" for an existing job. */
static int spool_ids(const struct pd_enqueue *q, FILE *spool, struct pd_err *e)
{
	for (int i = 0; i < q->n; i++) {
		if (q->created[i])
			fprintf(spool, "%lld\n", q->ids[i]);
		else
			fprintf(spool, "%lld %s\n", q->ids[i],
				q->jobs[i].tenant ? q->jobs[i].tenant : "default");
	}
	if (ferror(spool))
		return pd_errf(e, PD_EX_SOFTWARE, "cannot write the ids to a temporary file: %s",
			       strerror(errno));
	return 0;
}

/* The spooled ids, in order, to each. */
static int replay_ids(FILE *spool,
		      int (*each)(void *ctx, long long id, int created, const char *tenant,
				  struct pd_err *e),
		      void *ctx, struct pd_err *e)
{
	char rec[64 + PD_NAME_MAX];

	if (fflush(spool) != 0 || fseek(spool, 0, SEEK_SET) != 0)
		return pd_errf(e, PD_EX_SOFTWARE, "cannot read the ids back: %s", strerror(errno));
	while (fgets(rec, sizeof(rec), spool)) {
		char *end;
		long long id = strtoll(rec, &end, 10);

		rec[strcspn(rec, "\n")] = '\0';
		if (each(ctx, id, *end != ' ', *end == ' ' ? end + 1 : NULL, e) < 0)
			return -1;
	}
	return 0;
}

int pd_enqueue_stream(struct pd_ndjson *nd, struct pd_enqueue *q, struct pd_db *db,
		      int (*each)(void *ctx, long long id, int created, const char *tenant,
				  struct pd_err *e),
		      void *ctx, struct pd_err *e)
{
	static const char check_sql[] =
	    "SELECT c.relrowsecurity, (extract(epoch FROM now()) * 1000000)::bigint "
	    "FROM pg_class c WHERE c.oid = 'pendulum.jobs'::regclass";
	struct pd_err inner = PD_ERR_INIT, ignore = PD_ERR_INIT;
	FILE *spool = tmpfile();
	long long now_us = 0, t0 = pd_now_us(), t1 = 0, batches = 0;
	int rls = 1, made = 0, line = 0, rc = -1;
	PGresult *r;

	if (spool == NULL)
		return pd_errf(e, PD_EX_SOFTWARE, "cannot make a temporary file for the ids: %s",
			       strerror(errno));
	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		goto out;
	if (pd_db_exec(db, check_sql, 0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
		goto out;
	if (PQntuples(r) == 1) {
		rls = PQgetvalue(r, 0, 0)[0] == 't';
		now_us = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	}
	PQclear(r);
	while (q->n > 0) {
		int brc;

		room_for_ids(q);
		line = 0;
		if (!rls && direct_eligible(q))
			brc = run_direct(q, db, now_us, &line, &t1, &inner);
		else
			brc = run_staged(q, db, &made, &line, &t1, &inner);
		if (brc < 0) {
			run_error(q, line, &inner, e);
			goto out;
		}
		batches++;
		if (spool_ids(q, spool, e) < 0 || pd_ndjson_read(nd, q, PD_ENQUEUE_BATCH, e) < 0)
			goto out;
	}
	if (pd_db_exec_script(db, "COMMIT", e) < 0)
		goto out;
	rc = 0;
	pd_log(PD_LOG_DEBUG, "jobs streamed and enqueued", "jobs=%lld batches=%lld ms=%lld",
	       nd->jobs, batches, (pd_now_us() - t0) / 1000);
	rc = replay_ids(spool, each, ctx, e);
out:
	if (rc < 0 && e->code != 0 && pd_db_ok(db) && PQtransactionStatus(db->conn) != PQTRANS_IDLE)
		pd_db_exec_script(db, "ROLLBACK", &ignore);
	fclose(spool);
	return rc;
}

void pd_enqueue_end_release(struct pd_enqueue_end *end)
{
	free(end->result);
	free(end->reason);
	free(end->last_error);
	free(end->tail);
	memset(end, 0, sizeof(*end));
}

/* What pd_enqueue_wait keeps between reads of job id. */
struct waiting {
	long long id;
	const struct pd_enqueue_waiting *w;
	long long seen; /* the lease token of the last failed attempt reported; -1: none read */
	long long warn; /* from this pd_now_ms() on, ask whether a worker serves it; -1: never */
	char *note;	/* the last progress note reported (w->progress), or NULL */
};

/*
 * The job and, when $3 >= 0, its failed attempts with a lease token above
 * $3 (f: a JSON array in token order) but the one that ended it. An
 * attempt's next try came at the next attempt's start, else (the job row
 * holds that attempt, or the job waits for it) at the job's run_at, which
 * a claim leaves as the failure set it; next_ms counts to it from now when
 * it is ahead, else from the failure. A workflow step's attempt belongs to
 * the first step completed by a later attempt, else to the run's position.
 * The last attempt of a job that ended unsuccessfully is the last of its
 * attempt_rows (pendulum.job_attempts adds the job row's only while it is
 * in flight or SUCCEEDED).
 */
static const char read_sql[] =
    "SELECT j.state, j.result::text, j.result_is_text, j.result #>> '{}', "
    "COALESCE(j.dead_reason, ''), COALESCE(j.last_error, ''), l.exit_code, l.signal, "
    "$2::boolean AND j.state = 'PENDING' AND NOT pendulum.served(j.queue, j.job_type), "
    "j.queue, j.job_type, j.max_attempts, f.list, j.progress, COALESCE(l.stderr, '') "
    "FROM pendulum.jobs j LEFT JOIN pendulum.workflow_runs r ON r.job_id = j.id "
    "LEFT JOIN LATERAL (SELECT exit_code, signal,"
    " substring(ltrim(stderr_tail, E'\\n') FROM '^[^\\n]*') AS stderr FROM pendulum.attempt_rows "
    " WHERE job_id = j.id AND j.state IN ('DEAD_LETTERED', 'CANCELLED') "
    " ORDER BY started_at DESC, lease_token DESC LIMIT 1) l ON true "
    "LEFT JOIN LATERAL (SELECT json_agg(json_build_object('attempt', a.attempt, "
    "  'outcome', a.outcome, 'exit_code', a.exit_code, 'signal', a.signal, "
    "  'token', a.lease_token, 'next_ms', n.ms,"
    "  'stderr', substring(ltrim(a.stderr_tail, E'\\n') FROM '^[^\\n]*'), "
    "  'error', CASE WHEN a.lease_token = j.lease_token THEN j.last_error END, "
    "  'step', r.steps[1 + coalesce((SELECT min(s.step_index) FROM pendulum.workflow_steps s "
    "   WHERE s.run_id = r.id AND s.lease_token > a.lease_token), r.position)]) "
    "  ORDER BY a.lease_token) AS list "
    " FROM pendulum.attempt_rows a "
    " CROSS JOIN LATERAL (SELECT coalesce((SELECT min(x.started_at) FROM pendulum.attempt_rows x "
    "  WHERE x.job_id = a.job_id AND x.lease_token > a.lease_token), "
    "  CASE WHEN j.run_at < 'infinity' THEN j.run_at END) AS at) t "
    " CROSS JOIN LATERAL (SELECT ceil(1000 * extract(epoch FROM CASE WHEN t.at > now() "
    "  THEN t.at - now() ELSE greatest(t.at - a.finished_at, interval '0') END))::bigint "
    "  AS ms) n "
    " WHERE $3::bigint >= 0 AND a.job_id = j.id AND a.lease_token > $3::bigint "
    "  AND a.outcome IN ('failed', 'timeout', 'could_not_start', 'lease_expired', 'lease_lost',"
    "   'snoozed') "
    "  AND NOT (a.lease_token = coalesce(j.lease_token, 0) "
    "   AND j.state IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELLED'))) f ON true "
    "WHERE j.id = $1";

/*
 * Run the named statement sql (prepared once per connection: read_job runs
 * every second, and its plan costs more than its run) with n parameters.
 */
static int exec_named(struct pd_db *db, const char *name, const char *sql, int n,
		      const char *const *params, PGresult **res, struct pd_err *e)
{
	struct pd_db_stmt st = {name, sql, n, params, PGRES_TUPLES_OK, NULL};
	int rc;

	if (pd_db_pipeline_send(db, &st, 1, e) < 0)
		return -1;
	while ((rc = pd_db_pipeline_collect(db, e)) == 0)
		if (pd_db_await(db, e) < 0)
			return -1;
	*res = st.res;
	return rc < 0 ? -1 : 0;
}

/* What failed an attempt, into out: error when given, else from its row. */
static void failure_cause(const char *outcome, long long exit_code, long long sig,
			  const char *error, char *out, size_t n)
{
	if (error && *error)
		snprintf(out, n, "%s", error);
	else if (strcmp(outcome, "timeout") == 0)
		snprintf(out, n, "timeout");
	else if (exit_code >= 0)
		snprintf(out, n, "exit %lld", exit_code);
	else if (sig > 0)
		snprintf(out, n, "killed by signal %lld (%s)", sig, strsignal((int)sig));
	else
		for (size_t i = 0; i < n; i++)
			if ((out[i] = outcome[i] == '_' ? ' ' : outcome[i]) == '\0')
				break;
	out[n - 1] = '\0';
}

/* An integer member of object obj, or dflt when it is missing or null. */
static long long member_int(const struct pd_json *j, int obj, const char *key, long long dflt)
{
	int t = pd_json_get(j, obj, key);
	long long v = dflt;

	if (t >= 0)
		pd_json_int(j, t, &v);
	return v;
}

/* Report each attempt of read_sql's list (JSON text) to st->w->failed; st->seen moves on. */
static int report_failures(struct waiting *st, const char *list, int max_attempts, struct pd_err *e)
{
	struct pd_json j = PD_JSON_INIT;

	if (pd_json_parse(&j, list, strlen(list), e) < 0 || j.tok[0].type != PD_JSON_ARRAY) {
		pd_json_release(&j);
		return pd_errf(e, PD_EX_SOFTWARE, "job %lld: unreadable attempts: %s", st->id,
			       list);
	}
	for (int t = 1; t < j.ntok; t = pd_json_skip(&j, t)) {
		struct pd_enqueue_failure f = {0};
		int o = pd_json_get(&j, t, "outcome"), er = pd_json_get(&j, t, "error");
		int sp = pd_json_get(&j, t, "step"), se = pd_json_get(&j, t, "stderr");
		char *outcome = o >= 0 ? pd_json_str(&j, o) : pd_xstrdup("failed");
		char *error =
		    er >= 0 && j.tok[er].type == PD_JSON_STRING ? pd_json_str(&j, er) : NULL;
		char *step =
		    sp >= 0 && j.tok[sp].type == PD_JSON_STRING ? pd_json_str(&j, sp) : NULL;
		char *line =
		    se >= 0 && j.tok[se].type == PD_JSON_STRING ? pd_json_str(&j, se) : NULL;
		char cause[512];

		failure_cause(outcome, member_int(&j, t, "exit_code", -1),
			      member_int(&j, t, "signal", 0), error, cause, sizeof(cause));
		f.attempt = (int)member_int(&j, t, "attempt", 0);
		f.max_attempts = max_attempts;
		f.cause = cause;
		f.step = step;
		f.tail = line;
		f.next_ms = member_int(&j, t, "next_ms", -1);
		f.snoozed = strcmp(outcome, "snoozed") == 0;
		st->w->failed(st->w->ctx, st->id, &f);
		st->seen = member_int(&j, t, "token", st->seen);
		free(outcome);
		free(error);
		free(step);
		free(line);
	}
	pd_json_release(&j);
	return 0;
}

/*
 * Read the job into end, and report what is new (failed attempts; the
 * first time it is PENDING with no live worker to serve it once st->warn
 * has passed): 1 when it has ended, 0 while not, -1 with e filled.
 */
static int read_job(struct pd_db *db, struct waiting *st, struct pd_enqueue_end *end,
		    struct pd_err *e)
{
	char idstr[24], seen[24];
	int ask = st->warn >= 0 && pd_now_ms() >= st->warn;
	const char *params[3] = {idstr, ask ? "true" : "false", seen};
	const char *state;
	enum pd_job_state js;
	PGresult *r;
	int ended = 1;

	snprintf(idstr, sizeof(idstr), "%lld", st->id);
	snprintf(seen, sizeof(seen), "%lld", st->w->failed ? st->seen : -1);
	if (exec_named(db, "pd_enqueue_read_job", read_sql, 3, params, &r, e) < 0)
		return -1;
	if (PQntuples(r) != 1 || PQnfields(r) != 15) {
		PQclear(r);
		return pd_errf(e, PD_EX_NOTFOUND, "job %lld not found", st->id);
	}
	if (!PQgetisnull(r, 0, 12) &&
	    report_failures(st, PQgetvalue(r, 0, 12), atoi(PQgetvalue(r, 0, 11)), e) < 0) {
		PQclear(r);
		return -1;
	}
	if (st->w->progress && !PQgetisnull(r, 0, 13) &&
	    (st->note == NULL || strcmp(st->note, PQgetvalue(r, 0, 13)) != 0)) {
		free(st->note);
		st->note = pd_xstrdup(PQgetvalue(r, 0, 13));
		st->w->progress(st->w->ctx, st->id, st->note);
	}
	if (PQgetvalue(r, 0, 8)[0] == 't') {
		st->w->unserved(st->w->ctx, st->id, PQgetvalue(r, 0, 9), PQgetvalue(r, 0, 10));
		st->warn = -1;
	}
	state = PQgetvalue(r, 0, 0);
	snprintf(end->state, sizeof(end->state), "%s", state);
	js = pd_job_state_parse(state);
	if (js == PD_JOB_SUCCEEDED) {
		end->succeeded = 1;
		end->result_is_text = PQgetvalue(r, 0, 2)[0] == 't';
		if (!PQgetisnull(r, 0, 1))
			end->result = pd_xstrdup(PQgetvalue(r, 0, end->result_is_text ? 3 : 1));
		if (end->result && !end->result_is_text)
			pd_json_compact(end->result);
	} else if (js == PD_JOB_DEAD_LETTERED || js == PD_JOB_CANCELLED) {
		end->cancelled = js == PD_JOB_CANCELLED;
		end->reason = pd_xstrdup(PQgetvalue(r, 0, 4));
		end->last_error = pd_xstrdup(PQgetvalue(r, 0, 5));
		end->tail = pd_xstrdup(PQgetvalue(r, 0, 14));
		end->status = 1;
		if (!PQgetisnull(r, 0, 6) && atoi(PQgetvalue(r, 0, 6)) > 0)
			end->status = atoi(PQgetvalue(r, 0, 6));
		else if (!PQgetisnull(r, 0, 7) && atoi(PQgetvalue(r, 0, 7)) > 0)
			end->status = 128 + atoi(PQgetvalue(r, 0, 7));
	} else {
		ended = 0;
	}
	PQclear(r);
	return ended;
}

/* pendulum.wait_job: mark job id for a notification at its end; code 2 if it does not exist. */
static int mark(struct pd_db *db, long long id, struct pd_err *e)
{
	char idstr[24], *state = NULL;
	const char *params[1] = {idstr};

	snprintf(idstr, sizeof(idstr), "%lld", id);
	if (pd_db_value(db, "SELECT pendulum.wait_job($1::bigint)", 1, params, &state, e) < 0)
		return -1;
	if (state == NULL)
		return pd_errf(e, PD_EX_NOTFOUND, "job %lld not found", id);
	free(state);
	return 0;
}

int pd_enqueue_await(struct pd_db *db, const long long *ids, int n, long long deadline,
		     struct pd_err *e)
{
	for (;;) {
		PGnotify *nt;
		int done = 0;
		long long left;
		struct pollfd p = {db ? PQsocket(db->conn) : -1, POLLIN, 0};

		while (db && (nt = PQnotifies(db->conn)) != NULL) {
			long long id = strtoll(nt->extra, NULL, 10);

			for (int i = 0; i < n && strcmp(nt->relname, "pendulum_done") == 0; i++)
				done |= ids[i] == id;
			PQfreemem(nt);
		}
		if (done)
			return 1;
		left = deadline - pd_now_ms();
		if (left <= 0)
			return 0;
		/* without a session (poll-only), fd -1: poll(2) only waits */
		if (poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) < 0 && errno != EINTR)
			return pd_errf(e, PD_EX_SOFTWARE, "poll: %s", strerror(errno));
		if (db && p.revents && !PQconsumeInput(db->conn))
			return pd_errf(e, PD_EX_UNAVAILABLE, "database connection lost: %s",
				       PQerrorMessage(db->conn));
	}
}

static long long earliest(long long a, long long b)
{
	return b >= 0 && b < a ? b : a;
}

int pd_enqueue_wait(struct pd_db *db, long long id, const struct pd_enqueue_waiting *w,
		    struct pd_enqueue_end *end, struct pd_err *e)
{
	long long start = pd_now_ms();
	long long stop = w->timeout_ms >= 0 ? start + w->timeout_ms : -1;
	struct waiting st = {id, w, 0, w->warn_ms >= 0 && w->unserved ? start + w->warn_ms : -1,
			     NULL};
	static const char *const done[] = {"pendulum_done", NULL};
	struct pd_db ls = PD_DB_INIT, *ldb = NULL; /* where LISTEN runs: pd_db_listener */
	int rc;

	memset(end, 0, sizeof(*end));
	if (pd_db_listener(db, &ls, done, &ldb, e) < 0 || (!w->marked && mark(db, id, e) < 0)) {
		pd_db_close(&ls);
		return -1;
	}
	for (;;) {
		long long now, next;

		if ((rc = read_job(db, &st, end, e)) != 0)
			break;
		now = pd_now_ms();
		if (stop >= 0 && now >= stop) {
			rc = 2;
			break;
		}
		/* The next read: notified, or a poll later, or when a check falls due. */
		next = earliest(earliest(now + w->poll_ms, st.warn > now ? st.warn : -1), stop);
		if ((rc = pd_enqueue_await(ldb, &id, 1, next, e)) < 0)
			break;
	}
	free(st.note);
	if (rc > 0 && ldb == db)
		pd_db_exec(db, "UNLISTEN pendulum_done", 0, NULL, PGRES_COMMAND_OK, NULL,
			   &(struct pd_err)PD_ERR_INIT);
	pd_db_close(&ls);
	if (rc < 0)
		return -1;
	return rc - 1;
}

int pd_enqueue_rows(struct pd_db *db, const long long *ids, int n, PGresult **res, struct pd_err *e)
{
	struct pd_buf arr = PD_BUF_INIT;
	const char *params[1];
	int rc;

	pd_db_id_array(&arr, ids, n);
	params[0] = arr.data;
	rc =
	    pd_db_exec(db,
		       "SELECT row_to_json(j) FROM unnest($1::bigint[]) WITH ORDINALITY u(id, ord) "
		       "JOIN pendulum.jobs j ON j.id = u.id ORDER BY u.ord",
		       1, params, PGRES_TUPLES_OK, res, e);
	pd_buf_release(&arr);
	return rc;
}
