/*
 * db: the one way Pendulum talks to PostgreSQL.
 *
 * Every query goes through pd_db_exec() with text parameters (never string
 * interpolation). A failed query's exit code comes from one table of
 * SQLSTATEs (pd_db_exit_code): connection failures, class 08 and 57P
 * (the server shutting down) are 69, classes 22 (data exception) and 23
 * (integrity violation) 65, the rest 70; e->sqlstate keeps the SQLSTATE for
 * callers that give some states a meaning of their own (pd_db_remap).
 * The libpq helpers every module shares (array literals, nullable columns)
 * are here too.
 */
#ifndef PD_DB_H
#define PD_DB_H

#include <libpq-fe.h>

#include "buf.h"
#include "config.h"
#include "err.h"

#define PD_DB_MAX_PREPARED 32

struct pd_db {
	PGconn *conn;
	char *conninfo; /* as given; may hold a password: never log it */
	char *appname;	/* application_name */
	char
	    where[256]; /* "host=... port=... dbname=... user=..." without password, for messages */
	const char *prepared[PD_DB_MAX_PREPARED]; /* statement names prepared on conn */
	int nprepared;
	struct pd_db_flight *flight; /* the pipeline sent and not yet collected, or NULL */
	enum pd_prepare prepare;     /* the setting (config.h), kept across reconnects */
	char *listen_url; /* a direct session for LISTEN behind a pooler, or NULL; may hold a
			     password: never log it (set before pd_db_connect; freed by close) */
	int pooled;	  /* the connection goes through a pooler (pd_db_connect) */
	int named;	  /* pipelines use named statements on this connection */
};

#define PD_DB_INIT                                                                                 \
	{                                                                                          \
		NULL, NULL, NULL, "", {NULL}, 0, NULL, PD_PREPARE_AUTO, NULL, 0, 0                 \
	}

/*
 * Connect with application_name=appname. On failure fills e with code 69 and
 * one line naming the host or socket tried, without the password; a
 * conninfo libpq cannot parse (pd_db_conninfo_check) is code 78, before
 * any attempt.
 *
 * Then, in one statement, sets the session's time zone to UTC (a pooler in
 * transaction mode keeps it: PgBouncer tracks TimeZone and sets it on
 * whichever server connection serves the client) and finds whether the
 * connection is pooled:
 * the backend PID the server reports for the session (pg_backend_pid())
 * differs from the one libpq got at start-up (PQbackendPID) behind a pooler
 * that hands its clients a key of its own, as PgBouncer does. That and
 * db->prepare decide db->named.
 */
int pd_db_connect(struct pd_db *db, const char *conninfo, const char *appname, struct pd_err *e);

/* 1 when s reads as a conninfo or URI (has '=', or postgres[ql]://), 0 when a database name. */
int pd_db_conninfo_like(const char *s);

/*
 * 0 when libpq can parse conninfo (or it is "" or a database name), else
 * -1 with e (78, a configuration error): "the database URL cannot be
 * parsed by libpq: WHY", the quoted parts of WHY that could hold a
 * password (all but keywords and single characters) said as "...".
 */
int pd_db_conninfo_check(const char *conninfo, struct pd_err *e);

/* 1 if the connection goes through a pooler (see pd_db_connect). */
int pd_db_pooled(const struct pd_db *db);

/*
 * Where LISTEN may run for db, into *out: never through a pooler, whose
 * server connections serve other clients between transactions (a LISTEN
 * there hears for whoever holds that server connection next, or for no
 * one). db itself when it is direct; behind a pooler, ls, connected here
 * (again) to db->listen_url, which must be direct itself (else code 78
 * naming it, without its password); behind a pooler without a listen_url,
 * NULL: poll-only. There, LISTEN on each of channels (identifiers, quoted
 * here; NULL-terminated, or NULL for none). Returns 0, or -1 with e filled
 * (69 when the listen_url server is unreachable). ls starts as PD_DB_INIT
 * and is the caller's to close.
 */
int pd_db_listener(struct pd_db *db, struct pd_db *ls, const char *const *channels,
		   struct pd_db **out, struct pd_err *e);

/* 1 if the connection is usable. */
int pd_db_ok(const struct pd_db *db);

void pd_db_close(struct pd_db *db);

/*
 * Run sql with n text parameters (NULL entries are SQL NULL). Succeeds when
 * the result status is want (PGRES_COMMAND_OK or PGRES_TUPLES_OK); then *res
 * holds the result (caller PQclear()s it) if res is not NULL, else it is
 * cleared here. On failure *res is NULL and e is filled: code 69 when the
 * connection is gone, else pd_db_exit_code of the SQLSTATE, with the
 * server's message; e->sqlstate holds the SQLSTATE.
 */
int pd_db_exec(struct pd_db *db, const char *sql, int n, const char *const *params,
	       ExecStatusType want, PGresult **res, struct pd_err *e);

/* Same, for a script of several statements with no parameters (migrations). */
int pd_db_exec_script(struct pd_db *db, const char *sql, struct pd_err *e);

/* Convenience: run sql and return the first column of the first row, malloc'd, or NULL for SQL NULL
 * or no rows (*found says which). */
int pd_db_value(struct pd_db *db, const char *sql, int n, const char *const *params, char **out,
		struct pd_err *e);

/*
 * COPY ... FROM STDIN in text format, in three steps: begin runs sql (which
 * must start a COPY FROM STDIN), put sends data (any split: rows may
 * straddle calls), end finishes the copy and reads its result. Each returns
 * 0, or -1 with e filled as pd_db_exec fills it; a failed begin or put
 * leaves nothing to end (put fails only when the connection is gone: the
 * server's verdict on the data comes from end). On a refused row, *line (if
 * not NULL) gets the 1-based data line the server named ("COPY t, line N"),
 * else 0.
 */
int pd_db_copy_begin(struct pd_db *db, const char *sql, struct pd_err *e);
int pd_db_copy_put(struct pd_db *db, const char *data, size_t n, struct pd_err *e);
int pd_db_copy_end(struct pd_db *db, int *line, struct pd_err *e);

/*
 * One statement of a pipeline. With a name, on a connection that uses named
 * statements (db->named), it is prepared once per connection (the name must
 * be a string constant: it is kept) and executed as prepared afterwards;
 * without one, or on a connection that does not, it is sent as
 * PQexecParams would (the unnamed statement, parsed each time).
 */
struct pd_db_stmt {
	const char *name;
	const char *sql;
	int n;
	const char *const *params; /* n text parameters, NULL entries are SQL NULL */
	ExecStatusType want;	   /* PGRES_TUPLES_OK or PGRES_COMMAND_OK */
	PGresult *res;		   /* out, on success: the caller PQclear()s it */
};

/*
 * A pipeline: the n statements sent in one round trip (libpq pipeline mode,
 * one Sync), run in order in one implicit transaction, committed together;
 * sent now and collected later, so that a loop can do other work during the
 * round trip.
 *
 * Send: 0, or -1 with e filled (nothing is in flight then); v must stay
 * valid until collected, its parameters only until send returns (copied
 * when a re-send may be needed, see below). Collect reads what has arrived without blocking:
 * 1 when every v[i].res is set (the caller PQclear()s them), 0 while more
 * must arrive (pd_db_await, or poll the socket for POLLIN), -1 with e filled
 * as pd_db_exec fills it: nothing was committed, every v[i].res is NULL (on
 * 69, the connection gone, whether the transaction committed is unknown).
 * With prepare auto, a named statement the server says exists already
 * (42P05) or does not exist (26000) means a pooler that moves the client
 * between server connections and was not detected: the connection turns to
 * unnamed statements for good (said in the log; db->prepare becomes off,
 * for the reconnections too) and the pipeline, which
 * committed nothing, is sent again (collect returns 0 then). With on, the
 * error is the caller's.
 * One pipeline at a time is in flight; no other query may run until it is
 * collected. A new connection drops it.
 */
int pd_db_pipeline_send(struct pd_db *db, struct pd_db_stmt *v, int n, struct pd_err *e);
int pd_db_pipeline_collect(struct pd_db *db, struct pd_err *e);

/* Block until the connection's socket is readable: 0, or -1 with e filled (69). */
int pd_db_await(struct pd_db *db, struct pd_err *e);

/*
 * The SQLSTATE table. pd_db_exit_code: the exit code of a query that failed
 * with sqlstate (five characters, or "" when none): 69 for class 08 and
 * 57P, 65 for 22 and 23, else 70. pd_db_transient: 1 for a transaction the
 * server rolled back (class 40: deadlock, serialization failure) or a
 * resource it ran out of (53): the same statements may pass when sent
 * again. pd_db_data_error: 1 for values the server refused (22, 23) or
 * that exceed one of its limits (54): the same statement fails again.
 */
int pd_db_exit_code(const char *sqlstate);
int pd_db_transient(const char *sqlstate);
int pd_db_data_error(const char *sqlstate);

/* A caller's own meaning of an SQLSTATE or of a class (its first characters). */
struct pd_db_remap {
	const char *state; /* "23503", "22"; NULL ends a list */
	int code;	   /* the exit code it means there */
};

/*
 * The explicit remap, for a caller that gives some SQLSTATEs a meaning of its
 * own (a foreign key naming a job that does not exist: 2): the code of the
 * first entry of map (ended by {NULL, 0}) that sqlstate begins with, or 0
 * when none matches (the error keeps its code from the table).
 */
int pd_db_remap_code(const struct pd_db_remap *map, const char *sqlstate);

/* The value of a column, malloc'd, or NULL for SQL NULL. */
char *pd_db_dup(const PGresult *r, int row, int col);

/* Append an array literal to b: bigint[] of v ("{1,2,3}"), text[] of v ({"a","b"}). */
void pd_db_id_array(struct pd_buf *b, const long long *v, int n);
void pd_db_text_array(struct pd_buf *b, const char *const *v, int n);

#endif
