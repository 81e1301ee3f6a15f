/*
 * render: how rows are shown to people and programs, for every command
 * that prints a listing (pd-admin, pd-cron, top, the CLI helpers): an
 * aligned table, one JSON object a line (--json), "key  value" lines, and
 * ages for people. It renders what it is handed and knows no query.
 *
 * Every pd_render* call appends to out and never writes to stdout itself.
 * Ages arrive as seconds (computed in SQL from the database clock): a table
 * shows them as "3m12s", JSON as a number (keys ending in _s).
 */
#ifndef PD_RENDER_H
#define PD_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "buf.h"

/* How rows are shown. */
struct pd_fmt {
	int json;  /* one JSON object a line */
	int color; /* ANSI colours in tables (a terminal, NO_COLOR unset) */
};

/*
 * A column of a listing. kind: 's' text, 'n' number, 'b' boolean ("t"/"f"),
 * 'j' JSON text (stored as is in JSON output), 'd' seconds (a human duration
 * in a table, a number in JSON), 'S' a state word (coloured in a table).
 * where: 'b' both, 't' table only, 'j' JSON only.
 */
struct pd_col {
	const char *name; /* the JSON key, and the table header when head is NULL */
	const char *head; /* the table header (upper-cased), or NULL */
	char kind;
	char where;
};

/*
 * Append nrows rows of cells (nrows * ncols, row-major, NULL for SQL NULL)
 * to out: a table with a header line (printed even without rows), or JSON
 * lines. Table cells have control characters replaced by spaces and are cut
 * to 72 characters.
 */
void pd_render(const struct pd_col *cols, int ncols, const char *const *cells, int nrows,
	       const struct pd_fmt *fmt, struct pd_buf *out);

/*
 * Render the first ncols columns of a PGresult, which match cols, through
 * pd_render. Rows whose first column is NULL are skipped (an empty LEFT
 * JOIN LATERAL).
 */
void pd_render_result(const PGresult *r, const struct pd_col *cols, int ncols,
		      const struct pd_fmt *fmt, struct pd_buf *out);

/*
 * What a `show` prints of one object (row 0 of r, cols) and its list (the
 * rows of sub, subcols): in JSON one line, the object with the list under
 * key; in a table "key  value" lines (the table columns of the object), a
 * blank line, then the list as a table or "no KEY yet".
 */
void pd_render_show(const PGresult *r, const struct pd_col *cols, int ncols, const char *key,
		    const PGresult *sub, const struct pd_col *subcols, int nsub,
		    const struct pd_fmt *fmt, struct pd_buf *out);

/*
 * A duration in seconds for people: "0s", "1.8s" below 10 s, then whole
 * units, at most the two largest: "42s", "3m12s", "1h", "2d3h". Negative
 * values get a '-'. out must hold 24 bytes.
 */
void pd_render_age(double seconds, char *out, size_t n);

/*
 * A table built row by row (pd-cron's listings): names are the column
 * headers and JSON keys; kinds per column as struct pd_col's ('n' a JSON
 * number when it parses, 'b' a boolean, 'j' JSON text, 's' text), NULL for
 * all text.
 */
struct pd_table {
	int ncols;
	const char **names;
	const char *kinds;
	char **cells; /* nrows * ncols, NULL = null */
	int nrows, cap;
};

void pd_table_init(struct pd_table *t, int ncols, const char **names, const char *kinds);
void pd_table_add(struct pd_table *t, const char *const *row);
/* Print to f through pd_render: a table (header even without rows), or JSON lines. */
void pd_table_print(const struct pd_table *t, FILE *f, int json);
void pd_table_release(struct pd_table *t);

#endif
