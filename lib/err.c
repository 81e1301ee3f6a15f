#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"

static const char *progname = "pendulum";

void pd_set_progname(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;

	if (argv0 && *argv0)
		progname = slash ? slash + 1 : argv0;
}

const char *pd_progname(void)
{
	return progname;
}

static int pd_verrf(struct pd_err *e, int code, const char *fmt, va_list ap)
{
	if (e == NULL || e->code != 0)
		return -1;
	e->code = code ? code : PD_EX_SOFTWARE;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	return -1;
}

int pd_errf(struct pd_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pd_verrf(e, code, fmt, ap);
	va_end(ap);
	return -1;
}

void pd_err_clear(struct pd_err *e)
{
	e->code = 0;
	e->sqlstate[0] = '\0';
	e->msg[0] = '\0';
}

void pd_oom(void)
{
	static const char tail[] = ": out of memory\n";
	const char *p = pd_progname();

	/* write(2) only: we may be here because malloc failed. */
	if (write(2, p, strlen(p)) < 0 || write(2, tail, sizeof(tail) - 1) < 0)
		_exit(PD_EX_SOFTWARE);
	_exit(PD_EX_SOFTWARE);
}

void *pd_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		pd_oom();
	return p;
}

void *pd_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		pd_oom();
	return p;
}

void *pd_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		pd_oom();
	return p;
}

char *pd_xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		pd_oom();
	return p;
}

char *pd_xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (p == NULL)
		pd_oom();
	return p;
}
