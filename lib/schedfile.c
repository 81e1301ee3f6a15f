/*
 * schedfile: the YAML schedules file `pd-cron apply` reads (see sched.h:
 * struct pd_sched_file), each entry checked as pd_sched_check does. Split
 * from sched.c, which applies what this loads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dur.h"
#include "jobspec.h"
#include "json.h"
#include "sched.h"
#include "text.h"

/* ---- schedules files ---- */

/* A YAML node as JSON (see sched.h). */
static void yaml_json(const struct pd_ynode *n, struct pd_buf *b)
{
	static const char *const yes[] = {"true", "True", "TRUE", NULL}, *const no[] = {
									     "false", "False",
									     "FALSE", NULL};

	if (n->type == PD_Y_MAP || n->type == PD_Y_SEQ) {
		pd_buf_putc(b, n->type == PD_Y_MAP ? '{' : '[');
		for (int i = 0; i < n->n; i++) {
			if (i)
				pd_buf_putc(b, ',');
			if (n->type == PD_Y_MAP) {
				pd_json_quote(b, n->keys[i]->value, strlen(n->keys[i]->value));
				pd_buf_putc(b, ':');
			}
			yaml_json(n->items[i], b);
		}
		pd_buf_putc(b, n->type == PD_Y_MAP ? '}' : ']');
		return;
	}
	if (!n->quoted) {
		if (pd_y_is_null(n)) {
			pd_buf_puts(b, "null");
			return;
		}
		for (int i = 0; yes[i]; i++) {
			if (strcmp(n->value, yes[i]) == 0 || strcmp(n->value, no[i]) == 0) {
				pd_buf_puts(b, n->value[0] == 't' || n->value[0] == 'T' ? "true"
											: "false");
				return;
			}
		}
		if (pd_json_is_number(n->value)) {
			pd_buf_puts(b, n->value);
			return;
		}
	}
	pd_json_quote(b, n->value, strlen(n->value));
}

/* The payload node as JSON text (malloc'd) into *out. */
static int file_payload(const struct pd_ydoc *d, const struct pd_ynode *n, char **out,
			struct pd_err *e)
{
	struct pd_buf b = PD_BUF_INIT;
	struct pd_json j = PD_JSON_INIT;
	struct pd_err je = PD_ERR_INIT;

	if (n->type == PD_Y_SCALAR) {
		/* A scalar is JSON text: payload: '{"kind": "daily"}'. */
		if (pd_json_parse(&j, n->value, strlen(n->value), &je) < 0)
			return pd_y_errf(d, n, PD_EX_DATAERR, e, "'payload': %s", je.msg);
		pd_json_release(&j);
		*out = pd_xstrdup(n->value);
		return 0;
	}
	yaml_json(n, &b);
	*out = pd_buf_detach(&b);
	return 0;
}

/* A required or optional string: NULL node leaves *out; an empty string is refused. */
static int file_str(const struct pd_ydoc *d, const struct pd_ynode *n, const char *key,
		    const char **out, struct pd_err *e)
{
	if (n == NULL)
		return 0;
	if (pd_y_str(d, n, out, PD_EX_DATAERR, e) < 0)
		return -1;
	if (**out == '\0')
		return pd_y_errf(d, n, PD_EX_DATAERR, e, "'%s': must not be empty", key);
	if (strcmp(key, "type") == 0 || strcmp(key, "queue") == 0 || strcmp(key, "tenant") == 0) {
		struct pd_err ne = PD_ERR_INIT;

		if (pd_name_check("name", *out, &ne) < 0)
			return pd_y_errf(d, n, PD_EX_DATAERR, e, "'%s': %s", key, ne.msg);
	}
	return 0;
}

/* Re-report an error e2 from a checker at node n of the file. */
static int at(const struct pd_ydoc *d, const struct pd_ynode *n, const struct pd_err *e2,
	      struct pd_err *e)
{
	return pd_y_errf(d, n, PD_EX_DATAERR, e, "%s", e2->msg);
}

static int file_entry(struct pd_sched_file *f, const struct pd_ynode *item, struct pd_sched *s,
		      char **payload, const char *tenant, int only, struct pd_err *e)
{
	static const char *const keys[] = {
	    "name",    "cron",	       "timezone",	 "type",
	    "payload", "queue",	       "priority",	 "tenant",
	    "misfire", "enabled",      "catch_up_limit", "overlap",
	    "jitter",  "max_attempts", "timeout",	 "concurrency_key",
	    NULL};
	static const char *const required[] = {"name", "cron", "timezone", "type", NULL};
	const struct pd_ydoc *d = &f->doc;
	const struct pd_ynode *n;
	struct pd_err e2 = PD_ERR_INIT;
	char desc[160];
	const char *v;

	if (pd_y_check_keys(d, item, keys, PD_EX_DATAERR, e) < 0)
		return -1;
	for (int i = 0; required[i]; i++)
		if (pd_y_get(item, required[i]) == NULL)
			return pd_y_errf(d, item, PD_EX_DATAERR, e, "%s: missing key '%s'",
					 pd_y_describe(item, desc, sizeof(desc)), required[i]);
	pd_sched_init(s);
	s->line = item->line;
	s->tenant = tenant ? tenant : "default";
	if (file_str(d, pd_y_get(item, "name"), "name", &s->name, e) < 0 ||
	    file_str(d, pd_y_get(item, "cron"), "cron", &s->cron, e) < 0 ||
	    file_str(d, pd_y_get(item, "timezone"), "timezone", &s->timezone, e) < 0 ||
	    file_str(d, pd_y_get(item, "type"), "type", &s->type, e) < 0 ||
	    file_str(d, pd_y_get(item, "queue"), "queue", &s->queue, e) < 0 ||
	    file_str(d, pd_y_get(item, "tenant"), "tenant", &s->tenant, e) < 0 ||
	    file_str(d, pd_y_get(item, "concurrency_key"), "concurrency_key", &s->concurrency_key,
		     e) < 0)
		return -1;
	if (pd_concurrency_key_check("concurrency_key", s->concurrency_key, &e2) < 0)
		return at(d, pd_y_get(item, "concurrency_key"), &e2, e);
	if (pd_sched_check_name(s->name, &e2) < 0)
		return at(d, pd_y_get(item, "name"), &e2, e);
	{
		struct pd_cron c;

		if (pd_cron_parse(&c, s->cron, &e2) < 0)
			return at(d, pd_y_get(item, "cron"), &e2, e);
	}
	if (pd_tz_check(s->timezone, &e2) < 0)
		return at(d, pd_y_get(item, "timezone"), &e2, e);
	if (pd_sched_check_timing(s->cron, s->timezone, &e2) < 0)
		return at(d, pd_y_get(item, "cron"), &e2, e);
	if (only && tenant && strcmp(s->tenant, tenant) != 0)
		return pd_y_errf(d, pd_y_get(item, "tenant"), PD_EX_DATAERR, e,
				 "'tenant': '%s' is not the tenant being applied ('%s')", s->tenant,
				 tenant);
	if ((n = pd_y_get(item, "payload")) != NULL && !pd_y_is_null(n) &&
	    file_payload(d, n, payload, e) < 0)
		return -1;
	s->payload = *payload;
	if ((n = pd_y_get(item, "priority")) != NULL) {
		if (pd_y_str(d, n, &v, PD_EX_DATAERR, e) < 0)
			return -1;
		if (pd_priority_parse(v, &s->priority, &e2) < 0)
			return at(d, n, &e2, e);
	}
	if ((n = pd_y_get(item, "misfire")) != NULL) {
		if (pd_y_str(d, n, &v, PD_EX_DATAERR, e) < 0)
			return -1;
		if (pd_misfire_parse(v, &s->misfire, &e2) < 0)
			return at(d, n, &e2, e);
	}
	if ((n = pd_y_get(item, "catch_up_limit")) != NULL &&
	    pd_y_int(d, n, 1, PD_SCHED_CATCH_UP_MAX, &s->catch_up_limit, PD_EX_DATAERR, e) < 0)
		return -1;
	if ((n = pd_y_get(item, "enabled")) != NULL &&
	    pd_y_bool(d, n, &s->enabled, PD_EX_DATAERR, e) < 0)
		return -1;
	if ((n = pd_y_get(item, "overlap")) != NULL) {
		if (pd_y_str(d, n, &v, PD_EX_DATAERR, e) < 0)
			return -1;
		if (pd_overlap_parse(v, &s->overlap, &e2) < 0)
			return at(d, n, &e2, e);
	}
	if ((n = pd_y_get(item, "jitter")) != NULL) {
		if (pd_y_dur(d, n, &s->jitter_ms, PD_EX_DATAERR, e) < 0)
			return -1;
		if (s->jitter_ms < 0 || s->jitter_ms > PD_SCHED_JITTER_MAX_MS)
			return pd_y_errf(d, n, PD_EX_DATAERR, e, "'jitter': out of range 0-1d");
	}
	if ((n = pd_y_get(item, "max_attempts")) != NULL &&
	    pd_y_int(d, n, 1, 1000, &s->max_attempts, PD_EX_DATAERR, e) < 0)
		return -1;
	if ((n = pd_y_get(item, "timeout")) != NULL) {
		if (pd_y_dur(d, n, &s->timeout_ms, PD_EX_DATAERR, e) < 0)
			return -1;
		if (s->timeout_ms <= 0)
			return pd_y_errf(d, n, PD_EX_DATAERR, e, "'timeout': must be positive");
	}
	if (pd_sched_check_workflow(s, &v, &e2) < 0)
		return at(d, pd_y_get(item, v), &e2, e);
	return 0;
}

int pd_sched_file_load(struct pd_sched_file *f, const char *path, const char *tenant, int only,
		       struct pd_err *e)
{
	static const char *const top[] = {"schedules", NULL};
	const struct pd_ynode *list;
	struct pd_err le = PD_ERR_INIT;
	struct pd_strset seen = PD_STRSET_INIT; /* keys[i], with i: the duplicate check */
	char **keys = NULL;
	int k;

	memset(f, 0, sizeof(*f));
	f->doc = (struct pd_ydoc)PD_YDOC_INIT;
	/* The file is input data, not configuration: its errors are 65 too. */
	if (pd_ydoc_load(&f->doc, path, &le) < 0)
		return pd_errf(e, PD_EX_DATAERR, "%s", le.msg);
	if (pd_y_check_keys(&f->doc, f->doc.root, top, PD_EX_DATAERR, e) < 0)
		goto fail;
	list = pd_y_get(f->doc.root, "schedules");
	if (list == NULL) {
		pd_y_errf(
		    &f->doc, f->doc.root, PD_EX_DATAERR, e,
		    "missing the top-level key 'schedules' (a list; 'schedules: []' for none)");
		goto fail;
	}
	if (pd_y_seq(&f->doc, list, PD_EX_DATAERR, e) < 0)
		goto fail;
	f->v = pd_xcalloc((size_t)list->n + 1, sizeof(*f->v));
	f->owned = pd_xcalloc((size_t)list->n + 1, sizeof(*f->owned));
	/* "tenant\nname" of each schedule (no name holds a newline: pd_name_check) */
	keys = pd_xcalloc((size_t)list->n + 1, sizeof(*keys));
	for (int i = 0; i < list->n; i++, f->n++) {
		const struct pd_ynode *item = list->items[i];

		if (pd_y_map(&f->doc, item, PD_EX_DATAERR, e) < 0 ||
		    file_entry(f, item, &f->v[i], &f->owned[i], tenant, only, e) < 0)
			goto fail;
		keys[i] = pd_xmalloc(strlen(f->v[i].tenant) + strlen(f->v[i].name) + 2);
		sprintf(keys[i], "%s\n%s", f->v[i].tenant, f->v[i].name);
		if ((k = pd_strset_add(&seen, keys[i], i)) >= 0) {
			pd_y_errf(&f->doc, pd_y_get(item, "name"), PD_EX_DATAERR, e,
				  "schedule '%s' is already defined at line %d", f->v[i].name,
				  f->v[k].line);
			goto fail;
		}
	}
	pd_strset_release(&seen);
	pd_strv_free(keys);
	return 0;
fail:
	pd_strset_release(&seen);
	pd_strv_free(keys);
	pd_sched_file_release(f);
	return -1;
}

void pd_sched_file_release(struct pd_sched_file *f)
{
	/* Entry n may have failed after its payload was made. */
	for (int i = 0; f->owned && i <= f->n; i++)
		free(f->owned[i]);
	free(f->owned);
	free(f->v);
	pd_ydoc_release(&f->doc);
	memset(f, 0, sizeof(*f));
}
