#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dur.h"
#include "render.h"
#include "summary.h"
#include "top.h"

#define SECS(x) "round(extract(epoch FROM (" x "))::numeric, 3)"

/* clang-format off */
static const char workers_sql[] =
    "SELECT id, host, pid,"
    " repeat('#', (10 * least(in_flight, concurrency) / greatest(concurrency, 1)))"
    "  || repeat('.', 10 - (10 * least(in_flight, concurrency) / greatest(concurrency, 1))),"
    " in_flight || '/' || concurrency, " SECS("now() - last_seen_at") ","
    " CASE WHEN gone THEN 'gone' ELSE 'live' END"
    " FROM pendulum.worker_states($1::bigint) ORDER BY host, pid, id";

static const struct pd_col worker_cols[] = {
    {"id", "worker", 's', 'b'},
    {"host", NULL, 's', 'b'},
    {"pid", NULL, 'n', 'b'},
    {"occupancy", NULL, 's', 'b'},
    {"busy", NULL, 's', 'b'},
    {"last_seen", NULL, 'd', 'b'},
    {"status", NULL, 'S', 'b'},
};

static const char dead_sql[] =
    "SELECT id, job_type, queue, replay_count, " SECS("now() - finished_at") ", dead_reason"
    " FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'"
    " ORDER BY finished_at DESC NULLS LAST, id DESC LIMIT $1";

static const struct pd_col dead_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", "type", 's', 'b'},
    {"queue", NULL, 's', 'b'},
    {"replay_count", "replays", 'n', 'b'},
    {"dead_for", NULL, 'd', 'b'},
    {"dead_reason", "reason", 's', 'b'},
};

/* the longest running first, with their handlers' latest progress notes (sql/024) */
static const char running_sql[] =
    "SELECT id, job_type, queue, " SECS("now() - started_at") ", lease_owner, progress,"
    " " SECS("now() - progress_at")
    " FROM pendulum.jobs WHERE state = 'RUNNING'"
    " ORDER BY started_at NULLS LAST, id LIMIT $1";

static const struct pd_col running_cols[] = {
    {"id", NULL, 'n', 'b'},
    {"job_type", "type", 's', 'b'},
    {"queue", NULL, 's', 'b'},
    {"running_for", "running", 'd', 'b'},
    {"lease_owner", "worker", 's', 'b'},
    {"progress", NULL, 's', 'b'},
    {"progress_age", "noted", 'd', 'b'},
};

static const char title_sql[] =
    "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS \"UTC\"'),"
    " (SELECT count(*) FROM pendulum.jobs WHERE state = 'DEAD_LETTERED'),"
    " (SELECT string_agg(key, ', ' ORDER BY key COLLATE \"C\") FROM pendulum.limits"
    "   WHERE paused)";
/* clang-format on */

/*
 * The queue table's columns in the order top shows them: what to act on
 * first (runnable, how long the oldest has waited, workers, types nobody
 * serves), then the states, the finished last: the first to go when the
 * terminal is narrow (fitted), and the first five never. Indexes into
 * pd_summary_queue_cols.
 */
static const int queue_order[] = {0, 8, 9, 10, 12, 1, 4, 3, 2, 6, 11, 5, 7};

/* The widest line of text in columns: ANSI sequences take none, UTF-8 a column a character. */
static int widest(const char *text)
{
	int max = 0, cols = 0;

	for (const char *p = text; *p; p++) {
		if (*p == '\n') {
			cols = 0;
			continue;
		}
		if (*p == '\033' && p[1] == '[') {
			p += 2;
			while (*p && !((unsigned char)*p >= 0x40 && (unsigned char)*p <= 0x7e))
				p++;
			if (*p == '\0')
				break;
			continue;
		}
		if (((unsigned char)*p & 0xC0) != 0x80 && ++cols > max)
			max = cols;
	}
	return max;
}

/*
 * Columns order[0..n) of r (whose columns are cols) as a table within
 * width columns (0: no limit): the last of order dropped first, one at a
 * time, until every line fits; the first keep columns stay (a line still
 * too wide is the terminal's to cut: pd_top_clip). Rows whose first
 * column is NULL are skipped, as pd_render_result does.
 */
static void fitted(const PGresult *r, const struct pd_col *cols, const int *order, int n, int keep,
		   int width, const struct pd_fmt *fmt, struct pd_buf *out)
{
	struct pd_col *c = pd_xcalloc((size_t)n, sizeof(*c));
	const char **cells = pd_xcalloc((size_t)PQntuples(r) * (size_t)n + 1, sizeof(*cells));
	struct pd_buf t = PD_BUF_INIT;
	int rows = 0;

	for (int i = 0; i < PQntuples(r); i++) {
		if (PQgetisnull(r, i, 0))
			continue;
		for (int j = 0; j < n; j++)
			cells[(size_t)rows * (size_t)n + (size_t)j] =
			    PQgetisnull(r, i, order[j]) ? NULL : PQgetvalue(r, i, order[j]);
		rows++;
	}
	for (int j = 0; j < n; j++)
		c[j] = cols[order[j]];
	/* cells stay n wide a row: a narrower table shows a prefix of each row's columns */
	for (int m = n; m >= keep; m--) {
		const char **pick = pd_xcalloc((size_t)rows * (size_t)m + 1, sizeof(*pick));

		for (int i = 0; i < rows; i++)
			for (int j = 0; j < m; j++)
				pick[(size_t)i * (size_t)m + (size_t)j] =
				    cells[(size_t)i * (size_t)n + (size_t)j];
		pd_buf_reset(&t);
		pd_render(c, m, pick, rows, fmt, &t);
		free(pick);
		if (width <= 0 || m == keep || widest(pd_buf_str(&t)) <= width)
			break;
	}
	pd_buf_puts(out, pd_buf_str(&t));
	pd_buf_release(&t);
	free(cells);
	free(c);
}

/* fitted, every column of cols (n) in its own order. */
static void fitted_all(const PGresult *r, const struct pd_col *cols, int n, int width,
		       const struct pd_fmt *fmt, struct pd_buf *out)
{
	int order[16];

	for (int j = 0; j < n && j < 16; j++)
		order[j] = j;
	fitted(r, cols, order, n < 16 ? n : 16, 1, width, fmt, out);
}

static void section(struct pd_buf *out, const struct pd_top_opts *o, const char *title)
{
	pd_buf_printf(out, "\n%s%s%s\n", o->color ? "\033[1;4m" : "", title,
		      o->color ? "\033[0m" : "");
}

int pd_top_frame(struct pd_db *db, const struct pd_top_opts *o, struct pd_buf *out,
		 struct pd_err *e)
{
	struct pd_fmt fmt = {0, o->color};
	char ms[24], n[16], every[PD_DUR_MAX];
	const char *p1[1] = {o->stale_ms >= 0 ? ms : NULL}, *p2[1] = {n};
	PGresult *t = NULL, *q = NULL, *w = NULL, *d = NULL, *run = NULL;
	int live = 0, gone = 0, busy = 0, slots = 0;

	snprintf(ms, sizeof(ms), "%lld", o->stale_ms);
	snprintf(n, sizeof(n), "%d", o->ndead);
	if (pd_db_exec(db, title_sql, 0, NULL, PGRES_TUPLES_OK, &t, e) < 0 ||
	    pd_db_exec(db, pd_summary_queues_sql, 0, NULL, PGRES_TUPLES_OK, &q, e) < 0 ||
	    pd_db_exec(db, workers_sql, 1, p1, PGRES_TUPLES_OK, &w, e) < 0 ||
	    pd_db_exec(db, dead_sql, 1, p2, PGRES_TUPLES_OK, &d, e) < 0 ||
	    pd_db_exec(db, running_sql, 1, p2, PGRES_TUPLES_OK, &run, e) < 0) {
		PQclear(t);
		PQclear(q);
		PQclear(w);
		PQclear(d);
		return -1;
	}
	pd_buf_printf(out, "%spendulum top%s  %s", o->color ? "\033[1m" : "",
		      o->color ? "\033[0m" : "", PQntuples(t) ? PQgetvalue(t, 0, 0) : "");
	if (o->interval_ms > 0) {
		pd_dur_format(o->interval_ms, every, sizeof(every));
		pd_buf_printf(out, "  every %s  q quits", every);
	}
	pd_buf_putc(out, '\n');

	section(out, o, "Queues");
	if (PQntuples(q) == 0)
		pd_buf_puts(out, "no jobs yet\n");
	else
		fitted(q, pd_summary_queue_cols, queue_order,
		       (int)(sizeof(queue_order) / sizeof(*queue_order)), 5, o->width, &fmt, out);
	if (PQntuples(t) && !PQgetisnull(t, 0, 2)) /* queues, types, any key paused */
		pd_buf_printf(out, "paused: %s\n", PQgetvalue(t, 0, 2));

	for (int i = 0; i < PQntuples(w); i++) {
		if (strcmp(PQgetvalue(w, i, 6), "gone") == 0) {
			gone++;
			continue;
		}
		live++;
		busy += atoi(PQgetvalue(w, i, 4));
		slots += atoi(strchr(PQgetvalue(w, i, 4), '/') + 1);
	}
	section(out, o, "Workers");
	pd_buf_printf(out, "%d live, %d gone; %d of %d slots busy\n", live, gone, busy, slots);
	if (PQntuples(w) > 0)
		fitted_all(w, worker_cols, (int)(sizeof(worker_cols) / sizeof(*worker_cols)),
			   o->width, &fmt, out);

	section(out, o, "Running jobs");
	if (PQntuples(run) == 0)
		pd_buf_puts(out, "none\n");
	else
		fitted_all(run, running_cols, (int)(sizeof(running_cols) / sizeof(*running_cols)),
			   o->width, &fmt, out);

	section(out, o, "Newest dead letters");
	pd_buf_printf(out, "%s in all\n", PQntuples(t) ? PQgetvalue(t, 0, 1) : "0");
	if (PQntuples(d) > 0)
		fitted_all(d, dead_cols, (int)(sizeof(dead_cols) / sizeof(*dead_cols)), o->width,
			   &fmt, out);
	PQclear(t);
	PQclear(q);
	PQclear(w);
	PQclear(d);
	PQclear(run);
	return 0;
}

void pd_top_clip(const char *frame, int width, int height, int erase, struct pd_buf *out)
{
	int lines = 0;

	for (const char *p = frame; *p && (height <= 0 || lines < height); lines++) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		int cols = 0, cut = 0, colored = 0;

		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)p[i];

			if (c == '\033' && i + 1 < len && p[i + 1] == '[') {
				size_t j = i + 2;

				while (j < len && !((unsigned char)p[j] >= 0x40 &&
						    (unsigned char)p[j] <= 0x7e))
					j++;
				if (j < len) {
					pd_buf_append(out, p + i, j - i + 1);
					colored = 1;
					i = j;
					continue;
				}
			}
			if ((c & 0xC0) != 0x80) {
				if (width > 0 && cols == width) {
					cut = 1;
					break;
				}
				cols++;
			}
			pd_buf_putc(out, (char)c);
		}
		if (cut && colored)
			pd_buf_puts(out, "\033[0m");
		if (erase)
			pd_buf_puts(out, "\033[K");
		pd_buf_putc(out, '\n');
		p = eol ? eol + 1 : p + len;
	}
}

int pd_tty_raw(struct pd_tty *t, int fd)
{
	struct termios raw;

	t->fd = fd;
	t->raw = 0;
	if (!isatty(fd) || tcgetattr(fd, &t->saved) < 0)
		return -1;
	raw = t->saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSAFLUSH, &raw) < 0)
		return -1;
	t->raw = 1;
	return 0;
}

void pd_tty_restore(struct pd_tty *t)
{
	if (t->raw)
		tcsetattr(t->fd, TCSAFLUSH, &t->saved);
	t->raw = 0;
}
