/*
 * err: one error per call chain, the exit codes every binary shares, the
 * program's name and allocation that never fails. The bottom of lib/: it
 * includes no other module (lib/README.md).
 *
 * Library calls return 0 on success and -1 on failure, having filled a
 * struct pd_err. The first writer wins: a caller that adds context after a
 * callee already explained itself does not overwrite the explanation.
 */
#ifndef PD_ERR_H
#define PD_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum pd_exit {
	PD_EX_OK = 0,
	PD_EX_CONFLICT = 1, /* well formed, but the object's state forbids it */
	PD_EX_NOTFOUND = 2,
	PD_EX_USAGE = 64,
	PD_EX_DATAERR = 65,	/* bad input data; nothing written */
	PD_EX_UNAVAILABLE = 69, /* database unavailable */
	PD_EX_SOFTWARE = 70,	/* internal error */
	PD_EX_NOPERM = 77,	/* the role may not: a grant, or its tenants (sql/019) */
	PD_EX_CONFIG = 78,
};

struct pd_err {
	int code;	  /* one of enum pd_exit; 0 while unset */
	char sqlstate[6]; /* SQLSTATE of a failed query, "" otherwise */
	char msg[512];
};

#define PD_ERR_INIT                                                                                \
	{                                                                                          \
		0, "", ""                                                                          \
	}

/* Fill e (unless already filled) and return -1. */
int pd_errf(struct pd_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Forget a previous error (for callers that handled it). */
void pd_err_clear(struct pd_err *e);

/* Set the program name (basename of argv[0]) used in messages. */
void pd_set_progname(const char *argv0);
const char *pd_progname(void);

/* Abort with exit 70 after printing "progname: out of memory". */
__attribute__((noreturn)) void pd_oom(void);

/* malloc family that never returns NULL (pd_oom instead). */
void *pd_xmalloc(size_t n);
void *pd_xcalloc(size_t n, size_t size);
void *pd_xrealloc(void *p, size_t n);
char *pd_xstrdup(const char *s);
char *pd_xstrndup(const char *s, size_t n);

#endif
