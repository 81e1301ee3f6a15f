#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "handler.h"
#include "json.h"
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
	const char *prog = h->run	  ? (h->shell ? h->shell : "/bin/sh")
			   : h->exec_argv ? h->exec_argv[0]
					  : NULL;
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

static const char *const hook_events[PD_HOOK_NEVENTS] = {"dead_letter", "failure", "success"};

const char *pd_hook_event_name(enum pd_hook_event ev)
{
	return hook_events[ev];
}

int pd_hook_event_parse(const char *name)
{
	for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++)
		if (strcmp(hook_events[ev], name) == 0)
			return ev;
	return -1;
}

const struct pd_handler *pd_hook_find(const struct pd_handler *v, int n,
				      const struct pd_hooks *global, const char *type,
				      enum pd_hook_event ev)
{
	const struct pd_handler *h = pd_handler_find(v, n, type);

	if (h != NULL && h->hooks.on[ev] != NULL)
		return h->hooks.on[ev];
	return global ? global->on[ev] : NULL;
}

unsigned pd_hook_mask(const struct pd_handler *v, int n, const struct pd_hooks *global,
		      const char *type)
{
	unsigned m = 0;

	if (strcmp(type, PD_HOOK_TYPE) == 0)
		return 0;
	for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++)
		if (pd_hook_find(v, n, global, type, (enum pd_hook_event)ev) != NULL)
			m |= 1u << ev;
	return m;
}

void pd_hooks_release(struct pd_hooks *hs)
{
	for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++) {
		struct pd_handler *h = hs->on[ev];

		if (h == NULL)
			continue;
		free(h->name);
		free(h->run);
		for (char **p = h->exec_argv; p && *p; p++)
			free(*p);
		free(h->exec_argv);
		free(h);
		hs->on[ev] = NULL;
	}
}

/* The events of hs as a JSON array into b. */
static void events_json(struct pd_buf *b, const struct pd_hooks *hs)
{
	int k = 0;

	pd_buf_putc(b, '[');
	for (int ev = 0; hs && ev < PD_HOOK_NEVENTS; ev++)
		if (hs->on[ev])
			pd_buf_printf(b, "%s\"%s\"", k++ ? "," : "", hook_events[ev]);
	pd_buf_putc(b, ']');
}

void pd_hooks_json(struct pd_buf *b, const struct pd_handler *v, int n,
		   const struct pd_hooks *global)
{
	int any = 0, k = 0;

	pd_buf_reset(b);
	for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++) {
		any |= global && global->on[ev];
		for (int i = 0; i < n; i++)
			any |= v[i].hooks.on[ev] != NULL;
	}
	if (!any)
		return;
	pd_buf_puts(b, "{\"types\":{");
	for (int i = 0; i < n; i++) {
		if (pd_handler_find(v, i, v[i].name) != NULL &&
		    strcmp(pd_handler_find(v, i, v[i].name)->name, v[i].name) == 0)
			continue; /* an earlier one of that name wins */
		if (k++)
			pd_buf_putc(b, ',');
		pd_json_quote(b, v[i].name, strlen(v[i].name));
		pd_buf_putc(b, ':');
		events_json(b, &v[i].hooks);
	}
	pd_buf_puts(b, "},\"global\":");
	events_json(b, global);
	pd_buf_putc(b, '}');
}
