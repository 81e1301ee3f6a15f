#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "db.h"
#include "henv.h"
#include "log.h"

static void flight_free(struct pd_db *db);
static void flight_drop(struct pd_db *db);

/*
 * Describe conninfo for messages: "host=... port=... dbname=..." without
 * secrets; a word that is neither conninfo nor a URI is the database name
 * (libpq's reading), and "" is "libpq defaults".
 */
static void pd_db_describe(const char *conninfo, char *out, size_t n)
{
	static const char *keep[] = {"host", "hostaddr", "port", "dbname", "user", "service", NULL};
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	struct pd_buf b = PD_BUF_INIT;

	if (opts == NULL && *conninfo && !pd_db_conninfo_like(conninfo))
		pd_buf_printf(&b, "dbname=%s", conninfo);
	if (opts) {
		for (PQconninfoOption *o = opts; o->keyword; o++) {
			for (int i = 0; keep[i]; i++)
				if (strcmp(o->keyword, keep[i]) == 0 && o->val && *o->val)
					pd_buf_printf(&b, "%s%s=%s", b.len ? " " : "", o->keyword,
						      o->val);
		}
		PQconninfoFree(opts);
	}
	snprintf(out, n, "%s", b.len ? b.data : "libpq defaults");
	pd_buf_release(&b);
}

int pd_db_conninfo_like(const char *s)
{
	return strchr(s, '=') || strncmp(s, "postgres://", 11) == 0 ||
	       strncmp(s, "postgresql://", 13) == 0;
}

int pd_db_conninfo_check(const char *conninfo, struct pd_err *e)
{
	char *err = NULL;
	PQconninfoOption *opts;
	struct pd_buf b = PD_BUF_INIT;

	if (*conninfo == '\0' || !pd_db_conninfo_like(conninfo))
		return 0; /* libpq's defaults, or a database name */
	if ((opts = PQconninfoParse(conninfo, &err)) != NULL) {
		PQconninfoFree(opts);
		return 0;
	}
	/*
	 * libpq quotes what it could not read, which may be (part of) a
	 * password: a quoted part is kept when a keyword (letters and '_') or
	 * one character ("]", "="), else said as "...".
	 */
	for (const char *p = err ? err : "out of memory"; *p && *p != '\n'; p++) {
		const char *q = *p == '"' ? strchr(p + 1, '"') : NULL;
		size_t len = q ? (size_t)(q - p - 1) : 0;

		if (q == NULL) {
			pd_buf_putc(&b, *p);
			continue;
		}
		if (len <= 1 || strspn(p + 1, "abcdefghijklmnopqrstuvwxyz"
					      "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == len)
			pd_buf_append(&b, p, len + 2);
		else
			pd_buf_puts(&b, "\"...\"");
		p = q;
	}
	PQfreemem(err);
	pd_errf(e, PD_EX_CONFIG, "the database %s cannot be parsed by libpq: %s",
		strchr(conninfo, '=') && !strstr(conninfo, "://") ? "conninfo" : "URL",
		pd_buf_str(&b));
	pd_buf_release(&b);
	return -1;
}

/* The first line of a libpq message, without the trailing newline. */
static void first_line(const char *msg, char *out, size_t n)
{
	size_t len = strcspn(msg, "\n");

	if (len >= n)
		len = n - 1;
	memcpy(out, msg, len);
	out[len] = '\0';
}

/*
 * The session set up in one round trip: its time zone UTC (timestamps we
 * print come from the server), and pooled or direct (see db.h): the
 * server's own backend PID against the one libpq was given at start-up.
 * Sets db->pooled and db->named.
 */
static int session_setup(struct pd_db *db, struct pd_err *e)
{
	char *pid = NULL;

	if (pd_db_value(db, "SELECT pg_backend_pid() FROM set_config('TimeZone', 'UTC', false)", 0,
			NULL, &pid, e) < 0)
		return -1;
	db->pooled = pid == NULL || strtol(pid, NULL, 10) != (long)PQbackendPID(db->conn);
	free(pid);
	db->named = db->prepare == PD_PREPARE_ON || (db->prepare == PD_PREPARE_AUTO && !db->pooled);
	return 0;
}

int pd_db_connect(struct pd_db *db, const char *conninfo, const char *appname, struct pd_err *e)
{
	/*
	 * PGPASSWORD as pd_app_init withheld it, first: a password in conninfo
	 * (expanded from dbname) overrides it, as libpq's own reading would.
	 */
	const char *keys[] = {"password", "dbname", "fallback_application_name", NULL};
	const char *vals[] = {pd_henv_held("PGPASSWORD"), conninfo, appname, NULL};
	char line[400];

	if (db->conninfo != conninfo) {
		free(db->conninfo);
		db->conninfo = pd_xstrdup(conninfo);
	}
	if (db->appname != appname) {
		free(db->appname);
		db->appname = pd_xstrdup(appname);
	}
	if (pd_db_conninfo_check(conninfo, e) < 0)
		return -1;
	pd_db_describe(conninfo, db->where, sizeof(db->where));
	if (db->conn)
		PQfinish(db->conn);
	/*
	 * A pipeline the old connection left in flight (its loss seen outside
	 * pd_db_pipeline_collect) is abandoned: the results it had received
	 * are the caller's statements', which are still there (the caller
	 * reconnects), and its next pipeline would overwrite them.
	 */
	flight_drop(db);
	db->nprepared = 0;
	db->pooled = db->named = 0;
	db->conn = PQconnectdbParams(keys, vals, 1);
	if (db->conn == NULL)
		pd_oom();
	if (PQstatus(db->conn) != CONNECTION_OK) {
		first_line(PQerrorMessage(db->conn), line, sizeof(line));
		PQfinish(db->conn);
		db->conn = NULL;
		return pd_errf(e, PD_EX_UNAVAILABLE, "cannot connect to the database (%s): %s",
			       db->where, line);
	}
	return session_setup(db, e);
}

int pd_db_pooled(const struct pd_db *db)
{
	return db->pooled;
}

/* LISTEN on channel (an identifier, quoted here) on db: 0, or -1 with e filled. */
static int listen_on(struct pd_db *db, const char *channel, struct pd_err *e)
{
	struct pd_buf q = PD_BUF_INIT;
	char *id = PQescapeIdentifier(db->conn, channel, strlen(channel));
	int rc;

	if (id == NULL)
		return pd_errf(e, PD_EX_UNAVAILABLE, "LISTEN %s: %s", channel,
			       PQerrorMessage(db->conn));
	pd_buf_printf(&q, "LISTEN %s", id);
	PQfreemem(id);
	rc = pd_db_exec(db, q.data, 0, NULL, PGRES_COMMAND_OK, NULL, e);
	pd_buf_release(&q);
	return rc;
}

int pd_db_listener(struct pd_db *db, struct pd_db *ls, const char *const *channels,
		   struct pd_db **out, struct pd_err *e)
{
	*out = NULL;
	if (!db->pooled) {
		*out = db;
	} else if (db->listen_url == NULL || *db->listen_url == '\0') {
		return 0; /* poll-only */
	} else {
		ls->prepare = PD_PREPARE_OFF;
		if (pd_db_connect(ls, db->listen_url, db->appname, e) < 0)
			return -1;
		if (ls->pooled)
			return pd_errf(e, PD_EX_CONFIG,
				       "listen_url (%s) goes through a pooler too: LISTEN needs a "
				       "direct session to the server",
				       ls->where);
		*out = ls;
	}
	for (const char *const *ch = channels; ch && *ch; ch++)
		if (listen_on(*out, *ch, e) < 0)
			return -1;
	return 0;
}

int pd_db_ok(const struct pd_db *db)
{
	return db->conn && PQstatus(db->conn) == CONNECTION_OK;
}

void pd_db_close(struct pd_db *db)
{
	if (db->conn)
		PQfinish(db->conn);
	db->conn = NULL;
	flight_free(db);
	db->nprepared = 0;
	free(db->conninfo);
	free(db->appname);
	db->conninfo = db->appname = NULL;
	if (db->listen_url)
		pd_henv_wipe(db->listen_url, strlen(db->listen_url));
	free(db->listen_url);
	db->listen_url = NULL;
}

/* What a class (or a SQLSTATE: the longest match wins) means. */
enum { DB_DATA = 1, DB_TRANSIENT = 2 };
static const struct {
	const char *state;
	int code;
	int kind;
} states[] = {
    {"08", PD_EX_UNAVAILABLE, 0},  /* connection exception */
    {"57P", PD_EX_UNAVAILABLE, 0}, /* operator intervention: shutdown, crash */
    /*
     * Data exceptions (a value out of range, invalid text, a name
     * pendulum.check_name refused) and integrity violations are about the
     * values a statement was given, which Pendulum's statements take from
     * their input: bad data, not an internal error.
     */
    /* insufficient_privilege: no grant, or a row outside the role's tenants. */
    {"42501", PD_EX_NOPERM, 0},
    {"22", PD_EX_DATAERR, DB_DATA},
    {"23", PD_EX_DATAERR, DB_DATA},
    {"54", PD_EX_SOFTWARE, DB_DATA},	  /* program limit exceeded */
    {"40", PD_EX_SOFTWARE, DB_TRANSIENT}, /* transaction rollback */
    {"53", PD_EX_SOFTWARE, DB_TRANSIENT}, /* insufficient resources */
};

static int state_find(const char *sqlstate)
{
	int best = -1;
	size_t blen = 0;

	for (size_t i = 0; sqlstate && i < sizeof(states) / sizeof(states[0]); i++) {
		size_t len = strlen(states[i].state);

		if (len > blen && strncmp(sqlstate, states[i].state, len) == 0) {
			best = (int)i;
			blen = len;
		}
	}
	return best;
}

int pd_db_exit_code(const char *sqlstate)
{
	int i = state_find(sqlstate);

	return i < 0 ? PD_EX_SOFTWARE : states[i].code;
}

int pd_db_transient(const char *sqlstate)
{
	int i = state_find(sqlstate);

	return i >= 0 && (states[i].kind & DB_TRANSIENT);
}

int pd_db_data_error(const char *sqlstate)
{
	int i = state_find(sqlstate);

	return i >= 0 && (states[i].kind & DB_DATA);
}

int pd_db_remap_code(const struct pd_db_remap *map, const char *sqlstate)
{
	for (int i = 0; sqlstate && *sqlstate && map && map[i].state; i++)
		if (strncmp(sqlstate, map[i].state, strlen(map[i].state)) == 0)
			return map[i].code;
	return 0;
}

char *pd_db_dup(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : pd_xstrdup(PQgetvalue(r, row, col));
}

void pd_db_id_array(struct pd_buf *b, const long long *v, int n)
{
	pd_buf_putc(b, '{');
	for (int i = 0; i < n; i++) {
		if (i)
			pd_buf_putc(b, ',');
		pd_buf_put_i64(b, v[i]);
	}
	pd_buf_putc(b, '}');
}

void pd_db_text_array(struct pd_buf *b, const char *const *v, int n)
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

static int fail(struct pd_db *db, PGresult *r, struct pd_err *e)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? PQresultErrorMessage(r) : "";
	char line[400];
	int code = pd_db_exit_code(state);

	/* The server's primary message alone reads best ("relation x does not exist"). */
	if (r && PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY))
		msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	if (msg == NULL || *msg == '\0')
		msg = db->conn ? PQerrorMessage(db->conn) : "no connection";
	first_line(msg, line, sizeof(line));
	if (db->conn == NULL || PQstatus(db->conn) != CONNECTION_OK)
		code = PD_EX_UNAVAILABLE;
	if (e && e->code == 0 && state)
		snprintf(e->sqlstate, sizeof(e->sqlstate), "%s", state);
	if (r)
		PQclear(r);
	if (code == PD_EX_UNAVAILABLE)
		return pd_errf(e, code, "database unavailable (%s): %s", db->where, line);
	return pd_errf(e, code, "database error: %s", line);
}

int pd_db_exec(struct pd_db *db, const char *sql, int n, const char *const *params,
	       ExecStatusType want, PGresult **res, struct pd_err *e)
{
	PGresult *r;

	if (res)
		*res = NULL;
	if (db->conn == NULL)
		return fail(db, NULL, e);
	r = PQexecParams(db->conn, sql, n, NULL, params, NULL, NULL, 0);
	if (r == NULL || PQresultStatus(r) != want)
		return fail(db, r, e);
	if (res)
		*res = r;
	else
		PQclear(r);
	return 0;
}

int pd_db_exec_script(struct pd_db *db, const char *sql, struct pd_err *e)
{
	PGresult *r;

	if (db->conn == NULL)
		return fail(db, NULL, e);
	r = PQexec(db->conn, sql);
	if (r == NULL ||
	    (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK))
		return fail(db, r, e);
	PQclear(r);
	return 0;
}

int pd_db_copy_begin(struct pd_db *db, const char *sql, struct pd_err *e)
{
	PGresult *r;

	if (db->conn == NULL)
		return fail(db, NULL, e);
	r = PQexec(db->conn, sql);
	if (r == NULL || PQresultStatus(r) != PGRES_COPY_IN)
		return fail(db, r, e);
	PQclear(r);
	return 0;
}

int pd_db_copy_put(struct pd_db *db, const char *data, size_t n, struct pd_err *e)
{
	while (n > 0) {
		int part = n > (1 << 30) ? 1 << 30 : (int)n;

		if (PQputCopyData(db->conn, data, part) != 1)
			return fail(db, NULL, e);
		data += part;
		n -= (size_t)part;
	}
	return 0;
}

int pd_db_copy_end(struct pd_db *db, int *line, struct pd_err *e)
{
	PGresult *r, *more;
	const char *ctx, *at;

	if (line)
		*line = 0;
	if (PQputCopyEnd(db->conn, NULL) != 1)
		return fail(db, NULL, e);
	r = PQgetResult(db->conn);
	while ((more = PQgetResult(db->conn)) != NULL)
		PQclear(more);
	if (r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK) {
		PQclear(r);
		return 0;
	}
	ctx = r ? PQresultErrorField(r, PG_DIAG_CONTEXT) : NULL;
	if (line && ctx && strncmp(ctx, "COPY ", 5) == 0 && (at = strstr(ctx, ", line ")) != NULL) {
		long v = strtol(at + 7, NULL, 10); /* a row number of the COPY: saturates */

		*line = v > 0 && v <= INT_MAX ? (int)v : 0;
	}
	return fail(db, r, e);
}

int pd_db_value(struct pd_db *db, const char *sql, int n, const char *const *params, char **out,
		struct pd_err *e)
{
	PGresult *r;

	*out = NULL;
	if (pd_db_exec(db, sql, n, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	if (PQntuples(r) > 0 && PQnfields(r) > 0 && !PQgetisnull(r, 0, 0))
		*out = pd_xstrdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return 0;
}

static int is_prepared(const struct pd_db *db, const char *name)
{
	for (int i = 0; i < db->nprepared; i++)
		if (strcmp(db->prepared[i], name) == 0)
			return 1;
	return 0;
}

/* What was sent, in order, so the results can be matched to it. */
struct sent {
	int stmt;    /* index in v */
	int prepare; /* 1: the PQsendPrepare of v[stmt] */
};

/* Where the reading of a pipeline's results stands. */
enum flight_step {
	FLIGHT_RESULT, /* the next result is sent[k]'s */
	FLIGHT_END,    /* sent[k]'s results end with a NULL */
	FLIGHT_SYNC,   /* every query read: the Sync's result ends the pipeline */
};

struct pd_db_flight {
	struct pd_db_stmt *v; /* the caller's, until the pipeline is collected */
	int n;
	/*
	 * The parameters sent, per statement: the caller's (valid only during
	 * pd_db_pipeline_send), or copies in copy when a re-send may be needed
	 * (named statements under prepare auto: named_lost).
	 */
	const char *const **params;
	char *copy;
	struct sent *sent;
	int nsent, k;
	enum flight_step step;
	int ok;
	PGresult *bad; /* the first error */
};

static void pipeline_abandon(struct pd_db_stmt *v, int n)
{
	for (int i = 0; i < n; i++) {
		if (v[i].res)
			PQclear(v[i].res);
		v[i].res = NULL;
	}
}

static void flight_free(struct pd_db *db)
{
	if (db->flight == NULL)
		return;
	if (db->flight->bad)
		PQclear(db->flight->bad);
	free(db->flight->sent);
	free(db->flight->params);
	free(db->flight->copy);
	free(db->flight);
	db->flight = NULL;
}

/* The pipeline in flight abandoned: the results it had received cleared, then freed. */
static void flight_drop(struct pd_db *db)
{
	if (db->flight)
		pipeline_abandon(db->flight->v, db->flight->n);
	flight_free(db);
}

/* Copy every statement's parameters into f->copy, f->params pointing there. */
static void flight_copy_params(struct pd_db_flight *f)
{
	size_t len = 0, nptr = 0;
	const char **ptr;
	char *at;

	for (int i = 0; i < f->n; i++) {
		nptr += (size_t)f->v[i].n;
		for (int j = 0; j < f->v[i].n; j++)
			if (f->v[i].params[j])
				len += strlen(f->v[i].params[j]) + 1;
	}
	f->copy = pd_xmalloc(nptr * sizeof(char *) + len + 1);
	ptr = (const char **)(void *)f->copy;
	at = f->copy + nptr * sizeof(char *);
	for (int i = 0; i < f->n; i++) {
		f->params[i] = ptr;
		for (int j = 0; j < f->v[i].n; j++) {
			const char *p = f->v[i].params[j];

			*ptr++ = p ? at : NULL;
			if (p) {
				size_t l = strlen(p) + 1;

				memcpy(at, p, l);
				at += l;
			}
		}
	}
}

/* Send db->flight's statements, in pipeline mode, and the Sync: 0, or -1 with e (flight freed). */
static int flight_send(struct pd_db *db, struct pd_err *e)
{
	struct pd_db_flight *f = db->flight;
	int ok = PQenterPipelineMode(db->conn) == 1;

	f->nsent = f->k = 0;
	f->step = FLIGHT_RESULT;
	f->ok = 1;
	for (int i = 0; i < f->n && ok; i++) {
		const struct pd_db_stmt *v = &f->v[i];
		const char *name = db->named ? v->name : NULL;

		if (name && !is_prepared(db, name)) {
			ok = PQsendPrepare(db->conn, name, v->sql, v->n, NULL) == 1;
			f->sent[f->nsent++] = (struct sent){i, 1};
		}
		if (ok && name)
			ok = PQsendQueryPrepared(db->conn, name, v->n, f->params[i], NULL, NULL,
						 0) == 1;
		else if (ok)
			ok = PQsendQueryParams(db->conn, v->sql, v->n, NULL, f->params[i], NULL,
					       NULL, 0) == 1;
		if (ok)
			f->sent[f->nsent++] = (struct sent){i, 0};
	}
	if (!ok || PQpipelineSync(db->conn) != 1) {
		flight_free(db);
		PQexitPipelineMode(db->conn);
		return fail(db, NULL, e);
	}
	return 0;
}

int pd_db_pipeline_send(struct pd_db *db, struct pd_db_stmt *v, int n, struct pd_err *e)
{
	struct pd_db_flight *f;
	int rc;

	for (int i = 0; i < n; i++)
		v[i].res = NULL;
	if (db->flight)
		return pd_errf(e, PD_EX_SOFTWARE, "a pipeline is already in flight");
	if (db->conn == NULL)
		return fail(db, NULL, e);
	f = pd_xcalloc(1, sizeof(*f));
	f->v = v;
	f->n = n;
	f->sent = pd_xcalloc((size_t)(2 * n + 1), sizeof(*f->sent));
	f->params = pd_xcalloc((size_t)n + 1, sizeof(*f->params));
	if (db->named && db->prepare == PD_PREPARE_AUTO)
		flight_copy_params(f);
	else
		for (int i = 0; i < n; i++)
			f->params[i] = v[i].params;
	db->flight = f;
	rc = flight_send(db, e);
	if (rc == 0 && f->copy == NULL)
		for (int i = 0; i < n; i++)
			f->params[i] = NULL; /* the caller's may go now */
	return rc;
}

/* Take result r (NULL: the end of a query's results) of the pipeline in flight. */
static int flight_take(struct pd_db *db, struct pd_db_flight *f, PGresult *r)
{
	switch (f->step) {
	case FLIGHT_RESULT: {
		struct pd_db_stmt *s;
		ExecStatusType want;

		if (r == NULL) { /* cannot happen: a query has a result */
			f->ok = 0;
			f->step = FLIGHT_SYNC;
			return 0;
		}
		s = &f->v[f->sent[f->k].stmt];
		want = f->sent[f->k].prepare ? PGRES_COMMAND_OK : s->want;
		f->step = FLIGHT_END;
		if (PQresultStatus(r) != want) {
			if (f->bad == NULL && PQresultStatus(r) != PGRES_PIPELINE_ABORTED)
				f->bad = r;
			else
				PQclear(r);
			f->ok = 0;
		} else if (f->sent[f->k].prepare) {
			if (db->nprepared < PD_DB_MAX_PREPARED)
				db->prepared[db->nprepared++] = s->name;
			PQclear(r);
		} else {
			s->res = r;
		}
		return 0;
	}
	case FLIGHT_END:
		if (r != NULL) {
			PQclear(r); /* a query that returned more than one result */
			return 0;
		}
		f->step = ++f->k < f->nsent ? FLIGHT_RESULT : FLIGHT_SYNC;
		return 0;
	case FLIGHT_SYNC:
		if (r == NULL)
			return 0;
		if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			return 1;
		}
		PQclear(r);
		return 0;
	}
	return 0;
}

/*
 * The failed pipeline's error bad says a pooler moved the connection
 * between server connections under named statements (db.h): with prepare
 * auto, the connection turns to unnamed ones (logged), and so do the
 * reconnections after it (prepare becomes off), and 1 is returned.
 */
static int named_lost(struct pd_db *db, const PGresult *bad)
{
	const char *state = bad ? PQresultErrorField(bad, PG_DIAG_SQLSTATE) : NULL;

	if (!db->named || db->prepare != PD_PREPARE_AUTO || state == NULL ||
	    (strcmp(state, "26000") != 0 && strcmp(state, "42P05") != 0))
		return 0;
	db->named = 0;
	db->nprepared = 0;
	db->prepare = PD_PREPARE_OFF; /* and on the connections after this one */
	pd_log(PD_LOG_WARN,
	       "named statements lost between transactions: a pooler; using unnamed ones",
	       "sqlstate=%s", state);
	return 1;
}

int pd_db_pipeline_collect(struct pd_db *db, struct pd_err *e)
{
	struct pd_db_flight *f = db->flight;
	int done = 0;

	if (f == NULL)
		return pd_errf(e, PD_EX_SOFTWARE, "no pipeline in flight");
	if (db->conn == NULL || !PQconsumeInput(db->conn)) {
		pipeline_abandon(f->v, f->n);
		flight_free(db);
		return fail(db, NULL, e);
	}
	while (!done && !PQisBusy(db->conn)) {
		int waiting_sync = f->step == FLIGHT_SYNC;
		PGresult *r = PQgetResult(db->conn);

		done = flight_take(db, f, r);
		if (r == NULL && waiting_sync)
			break; /* nothing more has arrived */
	}
	if (PQstatus(db->conn) != CONNECTION_OK) {
		pipeline_abandon(f->v, f->n);
		flight_free(db);
		return fail(db, NULL, e);
	}
	if (!done)
		return 0;
	PQexitPipelineMode(db->conn);
	if (!f->ok && f->copy && named_lost(db, f->bad)) {
		/* the same statements and parameters (f's copies), unnamed now */
		pipeline_abandon(f->v, f->n);
		PQclear(f->bad);
		f->bad = NULL;
		return flight_send(db, e) < 0 ? -1 : 0;
	}
	if (!f->ok) {
		PGresult *bad = f->bad;

		f->bad = NULL;
		pipeline_abandon(f->v, f->n);
		flight_free(db);
		return fail(db, bad, e);
	}
	flight_free(db);
	return 1;
}

int pd_db_await(struct pd_db *db, struct pd_err *e)
{
	struct pollfd pfd = {.fd = db->conn ? PQsocket(db->conn) : -1, .events = POLLIN};

	if (pfd.fd < 0)
		return pd_errf(e, PD_EX_UNAVAILABLE, "database unavailable (%s): no connection",
			       db->where);
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return pd_errf(e, PD_EX_UNAVAILABLE, "database unavailable (%s): poll: %s",
				       db->where, strerror(errno));
	return 0;
}
