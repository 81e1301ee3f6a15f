#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "job.h"
#include "json.h"
#include "render.h"

#define CELL_MAX 72 /* table cells are cut to this many characters */

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
	    {"snoozed", "2"},
	};
	/* clang-format on */

	if (st != PD_JOB_NONE)
		return job_sgr[st];
	/* A parked job, "PENDING (paused: queue:q)": held back like a BLOCKED one. */
	if (strncmp(v, pd_job_states[PD_JOB_PENDING], strlen(pd_job_states[PD_JOB_PENDING])) == 0 &&
	    strncmp(v + strlen(pd_job_states[PD_JOB_PENDING]), " (", 2) == 0)
		return "33";
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

void pd_render_age(double seconds, char *out, size_t n)
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
static void json_row(struct pd_buf *out, const struct pd_col *cols, int ncols,
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
static char *cell_text(const struct pd_col *col, const char *v)
{
	char age[32];

	if (v == NULL)
		return pd_xstrdup("-");
	if (col->kind == 'd') {
		char *end;
		double d = strtod(v, &end);

		if (*v && *end == '\0') {
			pd_render_age(d, age, sizeof(age));
			return pd_xstrdup(age);
		}
	}
	if (col->kind == 'b')
		return pd_xstrdup((*v == 't' || *v == '1') ? "yes" : "no");
	return table_text(v);
}

static void put_header(struct pd_buf *out, const struct pd_col *col)
{
	const char *h = col->head ? col->head : col->name;

	for (; *h; h++)
		pd_buf_putc(out, (char)toupper((unsigned char)*h));
}

void pd_render(const struct pd_col *cols, int ncols, const char *const *cells, int nrows,
	       const struct pd_fmt *fmt, struct pd_buf *out)
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

void pd_render_result(const PGresult *r, const struct pd_col *cols, int ncols,
		      const struct pd_fmt *fmt, struct pd_buf *out)
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
	pd_render(cols, ncols, cells, n, fmt, out);
	free(cells);
}

/* "key   value" lines (job show), the table columns of one row. */
static void render_kv(const PGresult *r, const struct pd_col *cols, int ncols, struct pd_buf *out)
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
			pd_render_age(strtod(v, NULL), age, sizeof(age));
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
void pd_render_show(const PGresult *r, const struct pd_col *cols, int ncols, const char *key,
		    const PGresult *sub, const struct pd_col *subcols, int nsub,
		    const struct pd_fmt *fmt, struct pd_buf *out)
{
	const char **row;

	if (!fmt->json) {
		render_kv(r, cols, ncols, out);
		if (PQntuples(sub) == 0) {
			pd_buf_printf(out, "\nno %s yet\n", key);
		} else {
			pd_buf_puts(out, "\n");
			pd_render_result(sub, subcols, nsub, fmt, out);
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

void pd_table_init(struct pd_table *t, int ncols, const char **names, const char *kinds)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->names = names;
	t->kinds = kinds;
}

void pd_table_add(struct pd_table *t, const char *const *row)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells =
		    pd_xrealloc(t->cells, sizeof(char *) * (size_t)t->cap * (size_t)t->ncols);
	}
	for (int c = 0; c < t->ncols; c++)
		t->cells[t->nrows * t->ncols + c] = row[c] ? pd_xstrdup(row[c]) : NULL;
	t->nrows++;
}

void pd_table_print(const struct pd_table *t, FILE *f, int json)
{
	struct pd_col *cols = pd_xcalloc((size_t)t->ncols, sizeof(*cols));
	struct pd_fmt fmt = {json, 0};
	struct pd_buf out = PD_BUF_INIT;

	for (int c = 0; c < t->ncols; c++) {
		cols[c].name = t->names[c];
		cols[c].kind = t->kinds ? t->kinds[c] : 's';
		cols[c].where = 'b';
	}
	pd_render(cols, t->ncols, (const char *const *)t->cells, t->nrows, &fmt, &out);
	fwrite(pd_buf_str(&out), 1, out.len, f);
	pd_buf_release(&out);
	free(cols);
}

void pd_table_release(struct pd_table *t)
{
	for (int i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}
