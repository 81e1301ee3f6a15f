#include <string.h>

#include "err.h"
#include "handler.h"
#include "proc.h"

const struct pd_handler *pd_handler_find(const struct pd_handler *v, int n, const char *name)
{
	const struct pd_handler *any = NULL;

	for (int i = 0; i < n; i++) {
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
		if (any == NULL && strcmp(v[i].name, "*") == 0)
			any = &v[i];
	}
	return any;
}

int pd_handler_terminal(const struct pd_handler *h, int code)
{
	if (code == 64 || code == 65)
		return 1;
	for (int i = 0; h && i < h->nterminal; i++)
		if (h->terminal_codes[i] == code)
			return 1;
	return 0;
}

/* Both NULL, or equal strings. */
static int same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int pd_handler_same_command(const struct pd_handler *a, const struct pd_handler *b)
{
	char *const *x = a->exec_argv, *const *y = b->exec_argv;

	if (a->mode != b->mode || !same_str(a->run, b->run) || (x == NULL) != (y == NULL))
		return 0;
	for (; x && *x && *y; x++, y++)
		if (strcmp(*x, *y) != 0)
			return 0;
	return x == NULL || (*x == NULL && *y == NULL);
}

int pd_handler_check(const struct pd_handler *h, const char *what, struct pd_err *e)
{
	const char *prog = h->run ? "/bin/sh" : h->exec_argv ? h->exec_argv[0] : NULL;
	int err = 0;

	if (prog == NULL || pd_proc_check(prog, NULL, &err) == 0)
		return 0;
	return pd_errf(e, PD_EX_CONFIG, "%s '%s': cannot run %s: %s", what, h->name, prog,
		       strerror(err));
}

size_t pd_handler_result_limit(const struct pd_handler *h, size_t dflt)
{
	return h->result_limit > 0 ? (size_t)h->result_limit : dflt;
}
