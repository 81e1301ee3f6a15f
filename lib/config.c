/*
 * config: find pendulum.yaml, read it with lib/yaml, decode it into struct
 * pd_config.
 *
 * The top level is a table of sections, key -> decoder; a section that is a
 * plain mapping of scalars is a table of fields (key, type, offset, range).
 * Adding a section (cron:, relay:, workflows:) is a decoder and a line in
 * sections[].
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dur.h"
#include "henv.h"
#include "jobspec.h"
#include "log.h"
#include "text.h"

#define CODE PD_EX_CONFIG

/* The longest duration any key takes: a year. */
#define DUR_MAX (365LL * 86400000LL)

static void free_strv(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

void pd_engine_cfg_init(struct pd_engine_cfg *c)
{
	c->concurrency = c->batch = c->batch_max = c->poll_ms = c->drain_ms = c->grace_ms = -1;
	c->until_idle = 0;
	c->until_settled = 0;
}

void pd_engine_cfg_settle(struct pd_engine_cfg *c, const struct pd_engine_cfg *file)
{
	long long *mine[] = {&c->concurrency, &c->poll_ms, &c->drain_ms, &c->grace_ms};
	const long long theirs[] = {file->concurrency, file->poll_ms, file->drain_ms,
				    file->grace_ms};

	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (*mine[i] < 0)
			*mine[i] = theirs[i];
	if (c->batch < 0)
		c->batch = file->batch > 0 ? file->batch : c->concurrency;
	if (c->batch_max < 0)
		c->batch_max = file->batch_max > 0 ? file->batch_max : PD_BATCH_MAX_DEFAULT;
}

#define DAY_MS 86400000LL

/* The defaults of retention:. */
static void pd_retention_init(struct pd_retention *r)
{
	r->succeeded_ms = 7 * DAY_MS;
	r->cancelled_ms = 7 * DAY_MS;
	r->dead_lettered_ms = 30 * DAY_MS;
	r->outbox_published_ms = 7 * DAY_MS;
	r->workers_gone_ms = DAY_MS;
}

void pd_config_init(struct pd_config *c)
{
	memset(c, 0, sizeof(*c));
	c->log_level = -1;
	c->worker.engine.concurrency = 4;
	c->worker.lease_ms = 30000;
	c->worker.heartbeat_ms = -1; /* a third of the lease */
	c->worker.engine.poll_ms = 1000;
	c->worker.engine.drain_ms = 30000;
	c->worker.engine.grace_ms = 5000;
	c->worker.engine.batch = 0;
	c->worker.reap = 1;
	c->worker.result_limit = 1048576;
	c->max_payload = PD_MAX_PAYLOAD_DEFAULT;
	c->retry.base_ms = 1000;
	c->retry.cap_ms = 3600000;
	c->retry.max_snoozes = 100;
	c->reaper.interval_ms = 5000;
	pd_retention_init(&c->retention);
	c->relay.engine.concurrency = 4;
	c->relay.engine.batch = 0;
	c->relay.visibility_ms = 60000;
	c->relay.engine.poll_ms = 1000;
	c->relay.timeout_ms = 30000;
	c->relay.engine.drain_ms = 30000;
	c->relay.engine.grace_ms = 5000;
}

void pd_config_release(struct pd_config *c)
{
	for (int i = 0; i < c->nhandlers; i++) {
		free(c->handlers[i].name);
		free(c->handlers[i].run);
		free(c->handlers[i].concurrency_key);
		free_strv(c->handlers[i].exec_argv);
		free_strv(c->handlers[i].pass_env);
		pd_hooks_release(&c->handlers[i].hooks);
	}
	free(c->handlers);
	pd_hooks_release(&c->hooks);
	for (int i = 0; i < c->relay.ntopics; i++) {
		free(c->relay.topics[i].name);
		free(c->relay.topics[i].run);
		free_strv(c->relay.topics[i].exec_argv);
		free_strv(c->relay.topics[i].pass_env);
	}
	free(c->relay.topics);
	pd_flows_free(c->flows, c->nflows);
	free_strv(c->worker.queues);
	free(c->database_url);
	free(c->listen_url);
	free(c->crontab);
	free_strv(c->secret_env);
	free(c->path);
	pd_ydoc_release(&c->doc);
	pd_config_init(c);
}

const struct pd_flow *pd_config_flow(const struct pd_config *c, const char *name)
{
	return pd_flow_find(c->flows, c->nflows, name);
}

/* A non-empty string. */
static int nonempty(const struct pd_ydoc *d, const struct pd_ynode *n, const char *what,
		    const char **out, struct pd_err *e)
{
	char desc[160];

	if (pd_y_str(d, n, out, CODE, e) < 0)
		return -1;
	if (**out == '\0')
		return pd_y_errf(d, n, CODE, e, "%s: expected %s, got ''",
				 pd_y_describe(n, desc, sizeof(desc)), what);
	return 0;
}

/* value, node n's, is a name (pd_name_check); what says which ("a queue name"). */
static int name_ok(const struct pd_ydoc *d, const struct pd_ynode *n, const char *what,
		   const char *value, struct pd_err *e)
{
	struct pd_err ne = PD_ERR_INIT;

	if (pd_name_check("name", value, &ne) < 0)
		return pd_y_errf(d, n, CODE, e, "%s: %s", what, ne.msg);
	return 0;
}

/*
 * A non-empty sequence of non-empty strings, or one string, into a
 * NULL-terminated vector. what names one item, "a queue name"; with
 * names, each is checked as a name.
 */
static int strv(const struct pd_ydoc *d, const struct pd_ynode *n, const char *what, int names,
		char ***out, int *count, struct pd_err *e)
{
	const struct pd_ynode *const *items = (const struct pd_ynode *const *)&n;
	char desc[160], **v;
	const char *s;
	int k = 1;

	if (n->type != PD_Y_SCALAR) {
		if (pd_y_seq(d, n, CODE, e) < 0)
			return -1;
		if (n->n == 0)
			return pd_y_errf(d, n, CODE, e, "%s: expected %s or a list of them, got []",
					 pd_y_describe(n, desc, sizeof(desc)), what);
		items = (const struct pd_ynode *const *)n->items;
		k = n->n;
	}
	for (int i = 0; i < k; i++)
		if (nonempty(d, items[i], what, &s, e) < 0 ||
		    (names && name_ok(d, items[i], what, s, e) < 0))
			return -1;
	v = pd_xcalloc((size_t)k + 1, sizeof(*v));
	for (int i = 0; i < k; i++)
		v[i] = pd_xstrdup(items[i]->value);
	free_strv(*out);
	*out = v;
	if (count)
		*count = k;
	return 0;
}

/*
 * A list of environment variable names (secret_env:, pass_env:), or one
 * name: at most PD_HENV_MAX_NAMES, each a valid name (pd_henv_name_ok).
 */
static int env_names(const struct pd_ydoc *d, const struct pd_ynode *n, char ***out,
		     struct pd_err *e)
{
	char desc[160];
	int k = 0;

	if (n->type == PD_Y_SEQ && n->n > PD_HENV_MAX_NAMES)
		return pd_y_errf(d, n, CODE, e, "%s: too many names: %d, at most %d",
				 pd_y_describe(n, desc, sizeof(desc)), n->n, PD_HENV_MAX_NAMES);
	if (strv(d, n, "a variable name", 0, out, &k, e) < 0)
		return -1;
	for (int i = 0; i < k; i++)
		if (!pd_henv_name_ok((*out)[i]))
			return pd_y_errf(d, n->type == PD_Y_SCALAR ? n : n->items[i], CODE, e,
					 "%s: '%s' is not a variable name (letters, digits and "
					 "'_', not starting with a digit, at most %d bytes)",
					 pd_y_describe(n->type == PD_Y_SCALAR ? n : n->items[i],
						       desc, sizeof(desc)),
					 (*out)[i], PD_HENV_NAME_MAX);
	return 0;
}

/* Fields: a key, a type, where it goes, and its range. */
enum ftype { F_INT, F_LLONG, F_BOOL, F_DUR, F_RETAIN, F_FN };

struct field {
	const char *key;
	enum ftype type;
	size_t off; /* offsetof(struct pd_config, ...) */
	long long min, max;
	int (*fn)(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e);
};

#define MAX_FIELDS 16

static int dur_range(const struct pd_ydoc *d, const struct pd_ynode *n, long long min,
		     long long max, long long *out, struct pd_err *e)
{
	char desc[160], lo[PD_DUR_MAX], hi[PD_DUR_MAX];
	long long ms;

	if (pd_y_dur(d, n, &ms, CODE, e) < 0)
		return -1;
	if (ms < min || ms > max) {
		pd_dur_format(min, lo, sizeof(lo));
		pd_dur_format(max, hi, sizeof(hi));
		return pd_y_errf(d, n, CODE, e, "%s: expected a duration from %s to %s, got '%s'",
				 pd_y_describe(n, desc, sizeof(desc)), lo, hi, n->value);
	}
	*out = ms;
	return 0;
}

/* A retention: a duration in range, the message naming 'forever' too. */
static int retain_dur(const struct pd_ydoc *d, const struct pd_ynode *n, long long min,
		      long long max, long long *out, struct pd_err *e)
{
	char desc[160], lo[PD_DUR_MAX], hi[PD_DUR_MAX];
	long long ms;
	struct pd_err ignored = PD_ERR_INIT;

	if (n->type == PD_Y_SCALAR && pd_y_dur(d, n, &ms, CODE, &ignored) == 0 && ms >= min &&
	    ms <= max) {
		*out = ms;
		return 0;
	}
	if (n->type != PD_Y_SCALAR)
		return pd_y_dur(d, n, &ms, CODE, e); /* its message: the wrong type */
	pd_dur_format(min, lo, sizeof(lo));
	pd_dur_format(max, hi, sizeof(hi));
	return pd_y_errf(d, n, CODE, e,
			 "%s: expected 'forever' or a duration from %s to %s, got '%s'",
			 pd_y_describe(n, desc, sizeof(desc)), lo, hi, n->value);
}

static int decode_fields(struct pd_config *c, const struct pd_ynode *map, const struct field *f,
			 int nf, struct pd_err *e)
{
	const char *known[MAX_FIELDS + 1];
	const struct pd_ydoc *d = &c->doc;

	for (int i = 0; i < nf; i++)
		known[i] = f[i].key;
	known[nf] = NULL;
	if (pd_y_check_keys(d, map, known, CODE, e) < 0)
		return -1;
	for (int i = 0; i < map->n; i++) {
		const struct pd_ynode *n = map->items[i];
		const struct field *fi = f;
		char *dst;
		long long v;
		int b;

		while (strcmp(fi->key, map->keys[i]->value) != 0)
			fi++;
		dst = (char *)c + fi->off;
		switch (fi->type) {
		case F_INT:
		case F_LLONG:
			if (pd_y_int(d, n, fi->min, fi->max, &v, CODE, e) < 0)
				return -1;
			if (fi->type == F_INT)
				*(int *)(void *)dst = (int)v;
			else
				*(long long *)(void *)dst = v;
			break;
		case F_BOOL:
			if (pd_y_bool(d, n, &b, CODE, e) < 0)
				return -1;
			*(int *)(void *)dst = b;
			break;
		case F_DUR:
			if (dur_range(d, n, fi->min, fi->max, (long long *)(void *)dst, e) < 0)
				return -1;
			break;
		case F_RETAIN:
			if (n->type == PD_Y_SCALAR && strcmp(n->value, "forever") == 0) {
				*(long long *)(void *)dst = PD_RETAIN_FOREVER;
				break;
			}
			if (retain_dur(d, n, fi->min, fi->max, (long long *)(void *)dst, e) < 0)
				return -1;
			break;
		case F_FN:
			if (fi->fn(c, n, e) < 0)
				return -1;
			break;
		}
	}
	return 0;
}

#define NFIELDS(f) ((int)(sizeof(f) / sizeof((f)[0])))
#define OFF(m)	   offsetof(struct pd_config, m)

static int dec_queues(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return strv(&c->doc, n, "a queue name", 1, &c->worker.queues, &c->worker.nqueues, e);
}

static const struct field worker_fields[] = {
    {"queues", F_FN, 0, 0, 0, dec_queues},
    {"concurrency", F_LLONG, OFF(worker.engine.concurrency), 1, 1024, NULL},
    {"lease", F_DUR, OFF(worker.lease_ms), 1, DUR_MAX, NULL},
    {"heartbeat", F_DUR, OFF(worker.heartbeat_ms), 1, DUR_MAX, NULL},
    {"poll", F_DUR, OFF(worker.engine.poll_ms), 1, DUR_MAX, NULL},
    {"drain_timeout", F_DUR, OFF(worker.engine.drain_ms), 0, DUR_MAX, NULL},
    {"batch", F_LLONG, OFF(worker.engine.batch), 1, 1000, NULL},
    {"batch_max", F_LLONG, OFF(worker.engine.batch_max), 1, 1000, NULL},
    {"reap", F_BOOL, OFF(worker.reap), 0, 0, NULL},
    {"result_limit", F_LLONG, OFF(worker.result_limit), 1, 1073741824, NULL},
    {"kill_grace", F_DUR, OFF(worker.engine.grace_ms), 0, DUR_MAX, NULL},
};

static const struct field retry_fields[] = {
    {"base", F_DUR, OFF(retry.base_ms), 0, DUR_MAX, NULL},
    {"cap", F_DUR, OFF(retry.cap_ms), 0, DUR_MAX, NULL},
    {"max_snoozes", F_LLONG, OFF(retry.max_snoozes), 0, 1000000, NULL},
};

static const struct field reaper_fields[] = {
    {"interval", F_DUR, OFF(reaper.interval_ms), 1, DUR_MAX, NULL},
};

/* The longest retention short of forever: ten years. */
#define RETAIN_MAX (10 * 365 * DAY_MS)

static const struct field retention_fields[] = {
    {"succeeded", F_RETAIN, OFF(retention.succeeded_ms), 1000, RETAIN_MAX, NULL},
    {"cancelled", F_RETAIN, OFF(retention.cancelled_ms), 1000, RETAIN_MAX, NULL},
    {"dead_lettered", F_RETAIN, OFF(retention.dead_lettered_ms), 1000, RETAIN_MAX, NULL},
    {"outbox_published", F_RETAIN, OFF(retention.outbox_published_ms), 1000, RETAIN_MAX, NULL},
    {"workers_gone", F_RETAIN, OFF(retention.workers_gone_ms), 1000, RETAIN_MAX, NULL},
};

static int dec_retention(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return decode_fields(c, n, retention_fields, NFIELDS(retention_fields), e);
}

static int dec_worker(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return decode_fields(c, n, worker_fields, NFIELDS(worker_fields), e);
}

static int dec_retry(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return decode_fields(c, n, retry_fields, NFIELDS(retry_fields), e);
}

static int dec_reaper(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return decode_fields(c, n, reaper_fields, NFIELDS(reaper_fields), e);
}

static int dec_database_url(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	const char *s;

	if (pd_y_str(&c->doc, n, &s, CODE, e) < 0)
		return -1;
	free(c->database_url);
	c->database_url = pd_xstrdup(s);
	return 0;
}

static int dec_listen_url(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	const char *s;

	if (pd_y_str(&c->doc, n, &s, CODE, e) < 0)
		return -1;
	free(c->listen_url);
	c->listen_url = pd_xstrdup(s);
	return 0;
}

/* crontab: an absolute path (a unit's working directory is /). */
static int dec_crontab(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	const char *s;

	if (pd_y_str(&c->doc, n, &s, CODE, e) < 0)
		return -1;
	if (s[0] != '/')
		return pd_y_errf(&c->doc, n, CODE, e, "crontab: '%s' is not an absolute path", s);
	free(c->crontab);
	c->crontab = pd_xstrdup(s);
	return 0;
}

static int dec_prepared_statements(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	static const char *const names[] = {"auto", "on", "off"}; /* enum pd_prepare's order */
	const char *s;
	char desc[160];

	if (pd_y_str(&c->doc, n, &s, CODE, e) < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(s, names[i]) == 0) {
			c->prepared_statements = (enum pd_prepare)i;
			return 0;
		}
	return pd_y_errf(&c->doc, n, CODE, e, "%s: expected auto, on or off, got '%s'",
			 pd_y_describe(n, desc, sizeof(desc)), s);
}

static int dec_max_payload(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	struct pd_err se = PD_ERR_INIT;
	const char *s;
	char desc[160];

	if (pd_y_str(&c->doc, n, &s, CODE, e) < 0)
		return -1;
	if (pd_size_parse(s, &c->max_payload, &se) < 0)
		return pd_y_errf(&c->doc, n, CODE, e, "%s: %s",
				 pd_y_describe(n, desc, sizeof(desc)), se.msg);
	return 0;
}

static int dec_secret_env(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return env_names(&c->doc, n, &c->secret_env, e);
}

static int dec_log_level(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	const char *s;
	char desc[160];
	int level;

	if (pd_y_str(&c->doc, n, &s, CODE, e) < 0)
		return -1;
	if ((level = pd_log_level_parse(s)) < 0)
		return pd_y_errf(&c->doc, n, CODE, e,
				 "%s: expected debug, info, warn or error, got '%s'",
				 pd_y_describe(n, desc, sizeof(desc)), s);
	c->log_level = level;
	return 0;
}

/*
 * The index of the one key among keys (NULL-terminated) that map n has, or
 * -1 with an error at at when it has none or more than one, naming the
 * thing as NOUN 'NAME': "handler 'a' has both 'run' and 'exec': set exactly
 * one", "... has neither 'run' nor 'exec': ..." (two keys), "... has none of
 * run, exec, sleep: ..." (more).
 */
static int one_of(const struct pd_ydoc *d, const struct pd_ynode *at, const struct pd_ynode *n,
		  const char *const *keys, const char *noun, const char *name, struct pd_err *e)
{
	char list[160] = "";
	int found = -1, nkeys = 0;

	for (; keys[nkeys] != NULL; nkeys++) {
		size_t len = strlen(list);

		snprintf(list + len, sizeof(list) - len, "%s%s", nkeys ? ", " : "", keys[nkeys]);
		if (pd_y_get(n, keys[nkeys]) == NULL)
			continue;
		if (found >= 0)
			return pd_y_errf(d, at, CODE, e,
					 "%s '%s' has both '%s' and '%s': set exactly one", noun,
					 name, keys[found], keys[nkeys]);
		found = nkeys;
	}
	if (found >= 0)
		return found;
	if (nkeys == 2)
		return pd_y_errf(d, at, CODE, e,
				 "%s '%s' has neither '%s' nor '%s': set exactly one", noun, name,
				 keys[0], keys[1]);
	return pd_y_errf(d, at, CODE, e, "%s '%s' has none of %s: set exactly one", noun, name,
			 list);
}

static const char *const run_exec[] = {"run", "exec", NULL};

/*
 * A command from map n into h: run (a non-empty string) or exec (a program,
 * or a list of the program and its arguments), whichever n has (the caller
 * has checked with one_of), and timeout (1ms to 365d) when n has one; an
 * absent key leaves its field as it was.
 */
static int dec_command(const struct pd_ydoc *d, const struct pd_ynode *n, struct pd_handler *h,
		       struct pd_err *e)
{
	const struct pd_ynode *v;
	const char *s;

	if ((v = pd_y_get(n, "run")) != NULL) {
		if (nonempty(d, v, "a command", &s, e) < 0)
			return -1;
		h->run = pd_xstrdup(s);
	}
	if ((v = pd_y_get(n, "exec")) != NULL &&
	    strv(d, v, "a program", 0, &h->exec_argv, NULL, e) < 0)
		return -1;
	if ((v = pd_y_get(n, "timeout")) != NULL &&
	    dur_range(d, v, 1, DUR_MAX, &h->timeout_ms, e) < 0)
		return -1;
	return 0;
}

/*
 * terminal_exit_codes at v: one code or a list of at most
 * PD_HANDLER_MAX_CODES, each 1 to 255, appended to h's.
 */
static int dec_terminal_codes(const struct pd_ydoc *d, const struct pd_ynode *v,
			      struct pd_handler *h, struct pd_err *e)
{
	const struct pd_ynode *const *items = (const struct pd_ynode *const *)&v;
	char desc[160];
	int k = 1;

	if (v->type != PD_Y_SCALAR) {
		if (pd_y_seq(d, v, CODE, e) < 0)
			return -1;
		items = (const struct pd_ynode *const *)v->items;
		k = v->n;
	}
	if (k > PD_HANDLER_MAX_CODES)
		return pd_y_errf(d, v, CODE, e, "%s: at most %d exit codes, got %d",
				 pd_y_describe(v, desc, sizeof(desc)), PD_HANDLER_MAX_CODES, k);
	for (int i = 0; i < k; i++) {
		long long code;

		if (pd_y_int(d, items[i], 1, 255, &code, CODE, e) < 0)
			return -1;
		h->terminal_codes[h->nterminal++] = (int)code;
	}
	return 0;
}

/*
 * concurrency_key at v, when there (v not NULL): a limit key as a job
 * carries it (pd_concurrency_key_check), into h.
 */
static int dec_key(const struct pd_ydoc *d, const struct pd_ynode *v, struct pd_handler *h,
		   struct pd_err *e)
{
	struct pd_err ke = PD_ERR_INIT;
	const char *s;

	if (v == NULL)
		return 0;
	if (pd_y_str(d, v, &s, CODE, e) < 0)
		return -1;
	if (pd_concurrency_key_check("concurrency_key", s, &ke) < 0)
		return pd_y_errf(d, v, CODE, e, "%s", ke.msg);
	h->concurrency_key = pd_xstrdup(s);
	return 0;
}

/*
 * hooks: at n, into hs: a mapping of on_dead_letter, on_failure and
 * on_success, each a command as a handler's (a mapping with run or exec,
 * and timeout) or a string (run). Each command becomes a handler named
 * "hook EVENT" (in messages).
 */
static int dec_hooks(const struct pd_ydoc *d, const struct pd_ynode *n, struct pd_hooks *hs,
		     struct pd_err *e)
{
	static const char *const keys[PD_HOOK_NEVENTS + 1] = {"on_dead_letter", "on_failure",
							      "on_success", NULL};
	static const char *const known[] = {"run", "exec", "timeout", NULL};

	if (pd_y_map(d, n, CODE, e) < 0 || pd_y_check_keys(d, n, keys, CODE, e) < 0)
		return -1;
	for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++) {
		const struct pd_ynode *v = pd_y_get(n, keys[ev]);
		struct pd_handler *h;
		const char *s;

		if (v == NULL)
			continue;
		h = hs->on[ev] = pd_xcalloc(1, sizeof(*h));
		h->name = pd_xstrdup(keys[ev]);
		h->timeout_ms = -1;
		if (v->type == PD_Y_SCALAR) {
			if (nonempty(d, v, "a command", &s, e) < 0)
				return -1;
			h->run = pd_xstrdup(s);
			continue;
		}
		if (pd_y_map(d, v, CODE, e) < 0 || pd_y_check_keys(d, v, known, CODE, e) < 0 ||
		    one_of(d, v, v, run_exec, "hook", keys[ev], e) < 0 ||
		    dec_command(d, v, h, e) < 0)
			return -1;
	}
	return 0;
}

/* Decodes one entry of a mapping: key, value, and the element to fill. */
typedef int (*entry_fn)(struct pd_config *c, const struct pd_ynode *key, const struct pd_ynode *n,
			void *elem, struct pd_err *e);

/*
 * The entries of mapping n (a null has none), in order, into *arr: a new
 * array of n->n zeroed elements of size bytes, or NULL when there are none.
 * Element i is counted in *count before decode fills it from key i and
 * value i, so that on failure *arr and *count cover everything allocated,
 * for pd_config_release.
 */
static int dec_entries(struct pd_config *c, const struct pd_ynode *n, size_t size, void **arr,
		       int *count, entry_fn decode, struct pd_err *e)
{
	if (pd_y_map(&c->doc, n, CODE, e) < 0)
		return -1;
	if (n->n == 0)
		return 0;
	*arr = pd_xcalloc((size_t)n->n, size);
	for (int i = 0; i < n->n; i++) {
		(*count)++;
		if (decode(c, n->keys[i], n->items[i], (char *)*arr + (size_t)i * size, e) < 0)
			return -1;
	}
	return 0;
}

/*
 * Define fn, the decoder of a section that is a mapping of named entries,
 * into c->array and c->count with dec_entries and decode.
 */
#define ENTRIES_SECTION(fn, array, count, decode)                                                  \
	static int fn(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)             \
	{                                                                                          \
		void *v = NULL;                                                                    \
		int rc = dec_entries(c, n, sizeof(*c->array), &v, &c->count, decode, e);           \
                                                                                                   \
		c->array = v;                                                                      \
		return rc;                                                                         \
	}

static int dec_handler(struct pd_config *c, const struct pd_ynode *key, const struct pd_ynode *n,
		       void *elem, struct pd_err *e)
{
	static const char *const known[] = {
	    "run",	   "exec",	   "timeout",  "terminal_exit_codes",
	    "mode",	   "result_limit", "pass_env", "concurrency_key",
	    "max_snoozes", "hooks",	   NULL};
	const struct pd_ydoc *d = &c->doc;
	const struct pd_ynode *v;
	struct pd_handler *h = elem;
	const char *s;
	char desc[160];

	h->name = pd_xstrdup(key->value);
	h->timeout_ms = -1;
	if (key->value[0] == '\0')
		return pd_y_errf(d, key, CODE, e, "a handler's job type must not be empty");
	if (name_ok(d, key, "a handler's job type", key->value, e) < 0)
		return -1;
	if (strcmp(key->value, PD_HOOK_TYPE) == 0)
		return pd_y_errf(d, key, CODE, e,
				 "job type '%s' is reserved for hook jobs: set hooks: instead",
				 PD_HOOK_TYPE);
	if (pd_y_check_keys(d, n, known, CODE, e) < 0 ||
	    one_of(d, key, n, run_exec, "handler", key->value, e) < 0 ||
	    dec_command(d, n, h, e) < 0)
		return -1;
	if ((v = pd_y_get(n, "mode")) != NULL) {
		if (pd_y_str(d, v, &s, CODE, e) < 0)
			return -1;
		if (strcmp(s, "stream") == 0)
			h->mode = PD_HANDLER_STREAM;
		else if (strcmp(s, "process") != 0)
			return pd_y_errf(d, v, CODE, e, "%s: expected process or stream, got '%s'",
					 pd_y_describe(v, desc, sizeof(desc)), s);
	}
	if ((v = pd_y_get(n, "result_limit")) != NULL &&
	    pd_y_int(d, v, 1, 1073741824, &h->result_limit, CODE, e) < 0)
		return -1;
	if ((v = pd_y_get(n, "terminal_exit_codes")) != NULL) {
		if (h->mode == PD_HANDLER_STREAM)
			return pd_y_errf(d, v, CODE, e,
					 "%s: a stream handler has no exit status per job (its "
					 "answers say \"terminal\": true)",
					 pd_y_describe(v, desc, sizeof(desc)));
		if (dec_terminal_codes(d, v, h, e) < 0)
			return -1;
	}
	if ((v = pd_y_get(n, "pass_env")) != NULL && env_names(d, v, &h->pass_env, e) < 0)
		return -1;
	if ((v = pd_y_get(n, "max_snoozes")) != NULL &&
	    pd_y_int(d, v, 1, 1000000, &h->max_snoozes, CODE, e) < 0)
		return -1;
	if ((v = pd_y_get(n, "hooks")) != NULL && dec_hooks(d, v, &h->hooks, e) < 0)
		return -1;
	return dec_key(d, pd_y_get(n, "concurrency_key"), h, e);
}

ENTRIES_SECTION(dec_handlers, handlers, nhandlers, dec_handler)

static int dec_topic(struct pd_config *c, const struct pd_ynode *key, const struct pd_ynode *n,
		     void *elem, struct pd_err *e)
{
	static const char *const known[] = {"run", "exec", "timeout", "pass_env", NULL};
	const struct pd_ydoc *d = &c->doc;
	struct pd_handler *t = elem;
	const struct pd_ynode *v;

	t->name = pd_xstrdup(key->value);
	t->timeout_ms = -1;
	if (key->value[0] == '\0')
		return pd_y_errf(d, key, CODE, e, "a relay topic must not be empty");
	if (name_ok(d, key, "a relay topic", key->value, e) < 0)
		return -1;
	if (pd_y_check_keys(d, n, known, CODE, e) < 0 ||
	    one_of(d, key, n, run_exec, "relay topic", key->value, e) < 0)
		return -1;
	if ((v = pd_y_get(n, "pass_env")) != NULL && env_names(d, v, &t->pass_env, e) < 0)
		return -1;
	return dec_command(d, n, t, e);
}

ENTRIES_SECTION(dec_relay_topics, relay.topics, relay.ntopics, dec_topic)

static const struct field relay_fields[] = {
    {"concurrency", F_LLONG, OFF(relay.engine.concurrency), 1, 1024, NULL},
    {"batch", F_LLONG, OFF(relay.engine.batch), 1, 1000, NULL},
    {"visibility", F_DUR, OFF(relay.visibility_ms), 1, DUR_MAX, NULL},
    {"poll", F_DUR, OFF(relay.engine.poll_ms), 1, DUR_MAX, NULL},
    {"timeout", F_DUR, OFF(relay.timeout_ms), 1, DUR_MAX, NULL},
    {"drain_timeout", F_DUR, OFF(relay.engine.drain_ms), 0, DUR_MAX, NULL},
    {"kill_grace", F_DUR, OFF(relay.engine.grace_ms), 0, DUR_MAX, NULL},
    {"topics", F_FN, 0, 0, 0, dec_relay_topics},
};

static int dec_relay(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return decode_fields(c, n, relay_fields, NFIELDS(relay_fields), e);
}

/* The key node of key in map, or NULL. */
static const struct pd_ynode *key_node(const struct pd_ynode *map, const char *key)
{
	for (int i = 0; i < map->n; i++)
		if (strcmp(map->keys[i]->value, key) == 0)
			return map->keys[i];
	return NULL;
}

/* The keys that set a step's kind (one_of's index) and the kind each sets. */
static const char *const step_keys[] = {"run", "exec", "sleep", "wait_for", NULL};
static const enum pd_flow_step_kind step_kind[] = {PD_FLOW_STEP_RUN, PD_FLOW_STEP_RUN,
						   PD_FLOW_STEP_SLEEP, PD_FLOW_STEP_WAIT};

/*
 * Step i of steps (a sequence) into s, whose h.timeout_ms and wait_ms are
 * -1 already; f holds steps 0..i-1, whose names are in names (each with
 * its index), which s's must differ from.
 */
static int dec_step(const struct pd_ydoc *d, const struct pd_flow *f, const struct pd_ynode *steps,
		    int i, struct pd_flow_step *s, struct pd_strset *names, struct pd_err *e)
{
	static const char *const known[] = {
	    "name",  "run",	 "exec",       "timeout",	  "terminal_exit_codes",
	    "sleep", "wait_for", "on_timeout", "concurrency_key", NULL};
	/* The options and the kinds (1 << enum pd_flow_step_kind) each goes with. */
	static const struct {
		const char *key;
		unsigned kinds;
		const char *which;
	} opts[] = {
	    {"timeout", 1u << PD_FLOW_STEP_RUN | 1u << PD_FLOW_STEP_WAIT, "run, exec and wait_for"},
	    {"terminal_exit_codes", 1u << PD_FLOW_STEP_RUN, "run and exec"},
	    {"on_timeout", 1u << PD_FLOW_STEP_WAIT, "wait_for"},
	    {"concurrency_key", 1u << PD_FLOW_STEP_RUN, "run and exec"},
	};
	const struct pd_ynode *n = steps->items[i], *v;
	const char *str;
	char desc[160];
	int kind, seen;

	if (pd_y_map(d, n, CODE, e) < 0 || pd_y_check_keys(d, n, known, CODE, e) < 0)
		return -1;
	if ((v = pd_y_get(n, "name")) == NULL)
		return pd_y_errf(d, n, CODE, e, "step %d of workflow '%s' has no 'name'", i + 1,
				 f->name);
	if (nonempty(d, v, "a step name", &str, e) < 0)
		return -1;
	s->name = s->h.name = pd_xstrdup(str);
	if ((seen = pd_strset_add(names, s->name, i)) >= 0) {
		const struct pd_ynode *first = pd_y_get(steps->items[seen], "name");

		return pd_y_errf(d, v, CODE, e,
				 "duplicate step name '%s' (first at line %d, column %d)", str,
				 first->line, first->col);
	}
	if ((kind = one_of(d, n, n, step_keys, "step", s->name, e)) < 0)
		return -1;
	s->kind = step_kind[kind];
	for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
		const struct pd_ynode *key = key_node(n, opts[k].key);

		if (key != NULL && !(opts[k].kinds & 1u << s->kind))
			return pd_y_errf(d, key, CODE, e, "step '%s': '%s' is only for %s steps",
					 s->name, opts[k].key, opts[k].which);
	}
	switch (s->kind) {
	case PD_FLOW_STEP_RUN:
		s->h.mode = PD_HANDLER_PROCESS;
		if (dec_command(d, n, &s->h, e) < 0)
			return -1;
		if ((v = pd_y_get(n, "terminal_exit_codes")) != NULL &&
		    dec_terminal_codes(d, v, &s->h, e) < 0)
			return -1;
		if (dec_key(d, pd_y_get(n, "concurrency_key"), &s->h, e) < 0)
			return -1;
		break;
	case PD_FLOW_STEP_SLEEP:
		if (dur_range(d, pd_y_get(n, "sleep"), 1, DUR_MAX, &s->sleep_ms, e) < 0)
			return -1;
		break;
	case PD_FLOW_STEP_WAIT:
		if (nonempty(d, pd_y_get(n, "wait_for"), "a signal name", &str, e) < 0)
			return -1;
		s->signal = pd_xstrdup(str);
		if ((v = pd_y_get(n, "timeout")) != NULL &&
		    dur_range(d, v, 1, DUR_MAX, &s->wait_ms, e) < 0)
			return -1;
		if ((v = pd_y_get(n, "on_timeout")) != NULL) {
			if (pd_y_str(d, v, &str, CODE, e) < 0)
				return -1;
			if (strcmp(str, "continue") == 0)
				s->on_timeout_continue = 1;
			else if (strcmp(str, "fail") != 0)
				return pd_y_errf(d, v, CODE, e,
						 "%s: expected fail or continue, got '%s'",
						 pd_y_describe(v, desc, sizeof(desc)), str);
		}
		break;
	}
	return 0;
}

static int dec_workflow(struct pd_config *c, const struct pd_ynode *key, const struct pd_ynode *n,
			void *elem, struct pd_err *e)
{
	static const char *const known[] = {"steps", NULL};
	const struct pd_ydoc *d = &c->doc;
	const struct pd_ynode *steps;
	struct pd_flow *f = elem;
	struct pd_strset names = PD_STRSET_INIT; /* the step names, with their indexes */
	char desc[160];
	int rc = 0;

	f->name = pd_xstrdup(key->value);
	if (!pd_flow_name_ok(key->value))
		return pd_y_errf(d, key, CODE, e,
				 "workflow name '%s': expected 1 to %d letters, digits, '-', '_' "
				 "or '.'",
				 key->value, PD_FLOW_NAME_MAX);
	if (pd_y_map(d, n, CODE, e) < 0 || pd_y_check_keys(d, n, known, CODE, e) < 0)
		return -1;
	if ((steps = pd_y_get(n, "steps")) == NULL)
		return pd_y_errf(d, key, CODE, e, "workflow '%s' has no 'steps'", f->name);
	if (pd_y_seq(d, steps, CODE, e) < 0)
		return -1;
	if (steps->n == 0)
		return pd_y_errf(d, steps, CODE, e, "%s: expected a list of steps, got %s",
				 pd_y_describe(steps, desc, sizeof(desc)),
				 pd_y_is_null(steps) ? "null" : "[]");
	f->steps = pd_xcalloc((size_t)steps->n, sizeof(*f->steps));
	for (int i = 0; i < steps->n && rc == 0; i++) {
		struct pd_flow_step *s = &f->steps[f->nsteps++];

		s->h.timeout_ms = s->wait_ms = -1;
		rc = dec_step(d, f, steps, i, s, &names, e);
	}
	pd_strset_release(&names);
	return rc;
}

ENTRIES_SECTION(dec_workflows, flows, nflows, dec_workflow)

static int dec_global_hooks(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e)
{
	return dec_hooks(&c->doc, n, &c->hooks, e);
}

static const struct section {
	const char *key;
	int (*decode)(struct pd_config *c, const struct pd_ynode *n, struct pd_err *e);
} sections[] = {
    {"database_url", dec_database_url},
    {"listen_url", dec_listen_url},
    {"prepared_statements", dec_prepared_statements},
    {"max_payload", dec_max_payload},
    {"log_level", dec_log_level},
    {"secret_env", dec_secret_env},
    {"worker", dec_worker},
    {"retry", dec_retry},
    {"reaper", dec_reaper},
    {"retention", dec_retention},
    {"handlers", dec_handlers},
    {"relay", dec_relay},
    {"workflows", dec_workflows},
    {"hooks", dec_global_hooks},
    {"crontab", dec_crontab},
    /* Later: {"cron", dec_cron}. */
};

#define NSECTIONS ((int)(sizeof(sections) / sizeof(sections[0])))

static int decode(struct pd_config *c, struct pd_err *e)
{
	const struct pd_ynode *root = c->doc.root;
	const char *known[NSECTIONS + 1];

	for (int i = 0; i < NSECTIONS; i++)
		known[i] = sections[i].key;
	known[NSECTIONS] = NULL;
	if (pd_y_check_keys(&c->doc, root, known, CODE, e) < 0)
		return -1;
	for (int i = 0; i < root->n; i++) {
		int s = 0;

		while (strcmp(sections[s].key, root->keys[i]->value) != 0)
			s++;
		if (sections[s].decode(c, root->items[i], e) < 0)
			return -1;
	}
	return 0;
}

int pd_config_load(struct pd_config *c, const char *explicit_path, struct pd_err *e)
{
	const char *path = explicit_path;
	int fd;

	if (path == NULL && (path = getenv("PD_CONFIG")) != NULL && *path == '\0')
		path = NULL;
	if (path == NULL) {
		if (access(PD_CONFIG_DEFAULT_PATH, F_OK) < 0)
			return 0; /* no file: the defaults */
		path = PD_CONFIG_DEFAULT_PATH;
	}
	/* Checked here for the message; pd_ydoc_load opens it again. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return pd_errf(e, CODE, "config file '%s': %s", path, strerror(errno));
	close(fd);
	c->path = pd_xstrdup(path);
	if (pd_ydoc_load(&c->doc, path, e) < 0 || decode(c, e) < 0)
		return -1;
	return 0;
}

int pd_config_load_string(struct pd_config *c, const char *name, const char *text, size_t len,
			  struct pd_err *e)
{
	c->path = pd_xstrdup(name);
	if (pd_ydoc_load_string(&c->doc, name, text, len, e) < 0 || decode(c, e) < 0)
		return -1;
	return 0;
}
