/*
 * yaml: libyaml's event stream folded into a tree of pd_ynode that keeps
 * line and column, plus typed accessors. See yaml.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "buf.h"
#include "dur.h"
#include "text.h"

#include <yaml.h>

#include "ydoc.h"

/* Deeper nesting than this is refused (the builder recurses). */
#define MAX_DEPTH 64

struct ctx {
	yaml_parser_t p;
	const char *name;
	const char *text;
	size_t len;
	struct pd_err *e;
};

/*
 * Copy s for a message: at most 60 bytes, control characters as '?', so a
 * message stays one short line.
 */
static const char *show(char *out, size_t n, const char *s)
{
	size_t o = 0, max = n - 4;

	for (; *s && o < max; s++)
		out[o++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
	if (*s) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

static void node_free(struct pd_ynode *n)
{
	if (n == NULL)
		return;
	for (int i = 0; i < n->n; i++) {
		if (n->keys)
			node_free(n->keys[i]);
		node_free(n->items[i]);
	}
	free(n->keys);
	free(n->items);
	free(n->value);
	free(n);
}

static struct pd_ynode *node_new(enum pd_ynode_type type, const yaml_event_t *ev,
				 struct pd_ynode *parent)
{
	struct pd_ynode *n = pd_xcalloc(1, sizeof(*n));

	n->type = type;
	n->line = (int)ev->start_mark.line + 1;
	n->col = (int)ev->start_mark.column + 1;
	n->parent = parent;
	return n;
}

static void node_add(struct pd_ynode *n, struct pd_ynode *key, struct pd_ynode *item)
{
	if ((n->n & (n->n - 1)) == 0) { /* 0, 1, 2, 4, ...: double the room */
		size_t cap = n->n ? 2 * (size_t)n->n : 1;

		n->items = pd_xrealloc(n->items, cap * sizeof(*n->items));
		if (n->type == PD_Y_MAP)
			n->keys = pd_xrealloc(n->keys, cap * sizeof(*n->keys));
	}
	if (n->type == PD_Y_MAP)
		n->keys[n->n] = key;
	n->items[n->n++] = item;
}

static int at_errf(struct ctx *x, size_t line, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int at_errf(struct ctx *x, size_t line, size_t col, const char *fmt, ...)
{
	char what[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return pd_errf(x->e, PD_EX_CONFIG, "%s:%zu:%zu: %s", x->name, line, col, what);
}

static int parser_error(struct ctx *x)
{
	yaml_parser_t *p = &x->p;
	const char *problem = p->problem ? p->problem : "syntax error";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		pd_oom();
	case YAML_READER_ERROR: {
		/* Only a byte offset: find its line and column in the text. */
		size_t off = p->problem_offset < x->len ? p->problem_offset : x->len;
		size_t line = 1, bol = 0;

		for (size_t i = 0; i < off; i++)
			if (x->text[i] == '\n') {
				line++;
				bol = i + 1;
			}
		if (p->problem_value != -1)
			return at_errf(x, line, off - bol + 1, "%s (byte 0x%02X)", problem,
				       (unsigned)p->problem_value & 0xff);
		return at_errf(x, line, off - bol + 1, "%s", problem);
	}
	default:
		if (p->context)
			return at_errf(x, p->problem_mark.line + 1, p->problem_mark.column + 1,
				       "%s %s started at line %zu, column %zu", problem, p->context,
				       p->context_mark.line + 1, p->context_mark.column + 1);
		return at_errf(x, p->problem_mark.line + 1, p->problem_mark.column + 1, "%s",
			       problem);
	}
}

static int next_event(struct ctx *x, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&x->p, ev))
		return parser_error(x);
	return 0;
}

static int ev_errf(struct ctx *x, const yaml_event_t *ev, const char *what)
{
	return at_errf(x, ev->start_mark.line + 1, ev->start_mark.column + 1, "%s", what);
}

/*
 * Build the node that starts with ev (consumed) and everything under it.
 * Returns NULL after filling x->e.
 */
static struct pd_ynode *build(struct ctx *x, yaml_event_t *ev, struct pd_ynode *parent, int depth)
{
	struct pd_ynode *n = NULL, *key = NULL, *item = NULL;
	struct pd_strset keys = PD_STRSET_INIT; /* n's keys: the duplicate check */
	yaml_char_t *anchor = NULL;
	int dup;
	yaml_event_t sub;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		break;
	default:
		break;
	}
	if (ev->type == YAML_ALIAS_EVENT || anchor != NULL) {
		ev_errf(x, ev, "anchors and aliases are not supported");
		goto fail;
	}
	if (depth > MAX_DEPTH) {
		ev_errf(x, ev, "nested too deeply");
		goto fail;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT: {
		const char *v = (const char *)ev->data.scalar.value;
		size_t len = ev->data.scalar.length;

		if (memchr(v, '\0', len) != NULL) {
			ev_errf(x, ev, "a NUL character is not allowed");
			goto fail;
		}
		n = node_new(PD_Y_SCALAR, ev, parent);
		n->value = pd_xstrndup(v, len);
		n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		yaml_event_delete(ev);
		return n;
	}
	case YAML_SEQUENCE_START_EVENT:
		n = node_new(PD_Y_SEQ, ev, parent);
		n->value = pd_xstrdup("");
		yaml_event_delete(ev);
		for (;;) {
			if (next_event(x, &sub) < 0)
				goto fail_node;
			if (sub.type == YAML_SEQUENCE_END_EVENT)
				break;
			if ((item = build(x, &sub, n, depth + 1)) == NULL)
				goto fail_node;
			node_add(n, NULL, item);
		}
		yaml_event_delete(&sub);
		return n;
	case YAML_MAPPING_START_EVENT:
		n = node_new(PD_Y_MAP, ev, parent);
		n->value = pd_xstrdup("");
		yaml_event_delete(ev);
		for (;;) {
			if (next_event(x, &sub) < 0)
				goto fail_node;
			if (sub.type == YAML_MAPPING_END_EVENT)
				break;
			if ((key = build(x, &sub, n, depth + 1)) == NULL)
				goto fail_node;
			if (key->type != PD_Y_SCALAR) {
				at_errf(x, (size_t)key->line, (size_t)key->col,
					"a mapping key must be a scalar, not a %s",
					key->type == PD_Y_MAP ? "mapping" : "sequence");
				goto fail_key;
			}
			if ((dup = pd_strset_add(&keys, key->value, n->n)) >= 0) {
				char k[64];

				at_errf(x, (size_t)key->line, (size_t)key->col,
					"duplicate key '%s' (first at line %d, column %d)",
					show(k, sizeof(k), key->value), n->keys[dup]->line,
					n->keys[dup]->col);
				goto fail_key;
			}
			if (next_event(x, &sub) < 0)
				goto fail_key;
			if ((item = build(x, &sub, n, depth + 1)) == NULL)
				goto fail_key;
			node_add(n, key, item);
		}
		yaml_event_delete(&sub);
		pd_strset_release(&keys);
		return n;
	default:
		ev_errf(x, ev, "unexpected YAML event");
		goto fail;
	}
fail_key:
	node_free(key);
fail_node:
	pd_strset_release(&keys);
	node_free(n);
	return NULL;
fail:
	yaml_event_delete(ev);
	return NULL;
}

/* Parse the stream: nothing (an empty mapping) or exactly one document. */
static struct pd_ynode *parse_stream(struct ctx *x)
{
	struct pd_ynode *root = NULL;
	yaml_event_t ev;

	if (next_event(x, &ev) < 0)
		return NULL;
	yaml_event_delete(&ev); /* STREAM-START */
	if (next_event(x, &ev) < 0)
		return NULL;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		root = pd_xcalloc(1, sizeof(*root));
		root->type = PD_Y_MAP;
		root->value = pd_xstrdup("");
		root->line = root->col = 1;
		return root;
	}
	yaml_event_delete(&ev); /* DOCUMENT-START */
	if (next_event(x, &ev) < 0 || (root = build(x, &ev, NULL, 0)) == NULL)
		return NULL;
	if (next_event(x, &ev) < 0)
		goto fail;
	yaml_event_delete(&ev); /* DOCUMENT-END */
	if (next_event(x, &ev) < 0)
		goto fail;
	if (ev.type != YAML_STREAM_END_EVENT) {
		ev_errf(x, &ev, "more than one document is not supported");
		yaml_event_delete(&ev);
		goto fail;
	}
	yaml_event_delete(&ev);
	if (pd_y_is_null(root)) { /* "---" alone: an empty mapping */
		root->type = PD_Y_MAP;
		root->value[0] = '\0';
	}
	return root;
fail:
	node_free(root);
	return NULL;
}

int pd_ydoc_load_string(struct pd_ydoc *d, const char *name, const char *text, size_t len,
			struct pd_err *e)
{
	struct ctx x;

	d->path = NULL;
	d->root = NULL;
	memset(&x, 0, sizeof(x));
	x.name = name;
	x.text = text;
	x.len = len;
	x.e = e;
	if (!yaml_parser_initialize(&x.p))
		pd_oom();
	yaml_parser_set_input_string(&x.p, (const unsigned char *)text, len);
	d->root = parse_stream(&x);
	yaml_parser_delete(&x.p);
	if (d->root == NULL)
		return -1;
	d->path = pd_xstrdup(name);
	return 0;
}

int pd_ydoc_load(struct pd_ydoc *d, const char *path, struct pd_err *e)
{
	struct pd_buf b = PD_BUF_INIT;
	FILE *fp;
	size_t got;
	int rc;

	d->path = NULL;
	d->root = NULL;
	if ((fp = fopen(path, "r")) == NULL)
		return pd_errf(e, PD_EX_CONFIG, "cannot open '%s': %s", path, strerror(errno));
	do { /* at most one byte more than the limit */
		size_t room = PD_YDOC_MAX_BYTES + 1 - b.len;

		got = fread(pd_buf_grow(&b, room < 65536 ? room : 65536), 1,
			    room < 65536 ? room : 65536, fp);
		b.len += got;
	} while (got > 0 && b.len <= PD_YDOC_MAX_BYTES);
	if (b.len > PD_YDOC_MAX_BYTES) {
		struct stat st;
		char size[48] = "at least 16777217 bytes";

		if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode))
			snprintf(size, sizeof(size), "%lld bytes", (long long)st.st_size);
		fclose(fp);
		pd_buf_release(&b);
		return pd_errf(e, PD_EX_CONFIG,
			       "'%s': %s, over the 16 MiB (%d bytes) a YAML file may hold", path,
			       size, PD_YDOC_MAX_BYTES);
	}
	if (ferror(fp)) {
		rc = pd_errf(e, PD_EX_CONFIG, "cannot read '%s': %s", path, strerror(errno));
		fclose(fp);
		pd_buf_release(&b);
		return rc;
	}
	fclose(fp);
	rc = pd_ydoc_load_string(d, path, pd_buf_str(&b), b.len, e);
	pd_buf_release(&b);
	return rc;
}

void pd_ydoc_release(struct pd_ydoc *d)
{
	node_free(d->root);
	free(d->path);
	d->root = NULL;
	d->path = NULL;
}

const struct pd_ynode *pd_y_get(const struct pd_ynode *map, const char *key)
{
	if (map == NULL || map->type != PD_Y_MAP)
		return NULL;
	for (int i = 0; i < map->n; i++)
		if (strcmp(map->keys[i]->value, key) == 0)
			return map->items[i];
	return NULL;
}

int pd_y_is_null(const struct pd_ynode *n)
{
	return n->type == PD_Y_SCALAR && !n->quoted &&
	       (n->value[0] == '\0' || strcmp(n->value, "~") == 0 ||
		strcmp(n->value, "null") == 0 || strcmp(n->value, "Null") == 0 ||
		strcmp(n->value, "NULL") == 0);
}

const char *pd_y_describe(const struct pd_ynode *n, char *out, size_t size)
{
	const struct pd_ynode *p = n->parent;
	char k[64], up[160];

	snprintf(out, size, "the top level");
	if (p == NULL)
		return out;
	for (int i = 0; i < p->n; i++) {
		if (p->type == PD_Y_MAP && p->keys[i] == n) {
			snprintf(out, size, "key '%s'", show(k, sizeof(k), n->value));
		} else if (p->items[i] == n && p->type == PD_Y_MAP) {
			snprintf(out, size, "'%s'", show(k, sizeof(k), p->keys[i]->value));
		} else if (p->items[i] == n) {
			if (p->parent == NULL)
				snprintf(out, size, "item %d", i + 1);
			else
				snprintf(out, size, "%s item %d", pd_y_describe(p, up, sizeof(up)),
					 i + 1);
		}
	}
	return out;
}

static int verrf_at(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e,
		    const char *fmt, va_list ap)
{
	char what[400];

	vsnprintf(what, sizeof(what), fmt, ap);
	/* One line whatever a quoted value holds (a folded scalar's newlines): as pd_text_show. */
	for (char *p = what; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : '?';
	return pd_errf(e, code, "%s:%d:%d: %s", d->path, n->line, n->col, what);
}

int pd_y_errf(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e,
	      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verrf_at(d, n, code, e, fmt, ap);
	va_end(ap);
	return -1;
}

/* "PATH:L:C: 'key': expected <want>, got <what n is>". */
static int expected(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e,
		    const char *want)
{
	char desc[160], v[64], got[96];

	if (n->type == PD_Y_MAP)
		snprintf(got, sizeof(got), "a mapping");
	else if (n->type == PD_Y_SEQ)
		snprintf(got, sizeof(got), "a sequence");
	else if (pd_y_is_null(n))
		snprintf(got, sizeof(got), "null");
	else
		snprintf(got, sizeof(got), "%s'%s'", n->quoted ? "the quoted string " : "",
			 show(v, sizeof(v), n->value));
	return pd_y_errf(d, n, code, e, "%s: expected %s, got %s",
			 pd_y_describe(n, desc, sizeof(desc)), want, got);
}

int pd_y_str(const struct pd_ydoc *d, const struct pd_ynode *n, const char **out, int code,
	     struct pd_err *e)
{
	if (n->type != PD_Y_SCALAR || pd_y_is_null(n))
		return expected(d, n, code, e, "a string");
	*out = n->value;
	return 0;
}

int pd_y_int(const struct pd_ydoc *d, const struct pd_ynode *n, long long min, long long max,
	     long long *out, int code, struct pd_err *e)
{
	char want[96];
	const char *s = n->value;
	long long v;
	char *end;

	snprintf(want, sizeof(want), "an integer from %lld to %lld", min, max);
	if (n->type != PD_Y_SCALAR || n->quoted)
		return expected(d, n, code, e, want);
	if (*s == '+' || *s == '-')
		s++;
	if (*s < '0' || *s > '9')
		return expected(d, n, code, e, want);
	errno = 0;
	v = strtoll(n->value, &end, 10);
	if (*end != '\0' || errno == ERANGE || v < min || v > max)
		return expected(d, n, code, e, want);
	*out = v;
	return 0;
}

int pd_y_bool(const struct pd_ydoc *d, const struct pd_ynode *n, int *out, int code,
	      struct pd_err *e)
{
	static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no",
									       "off"};

	if (n->type == PD_Y_SCALAR && !n->quoted) {
		for (int i = 0; i < 3; i++) {
			if (strcasecmp(n->value, yes[i]) == 0) {
				*out = 1;
				return 0;
			}
			if (strcasecmp(n->value, no[i]) == 0) {
				*out = 0;
				return 0;
			}
		}
	}
	return expected(d, n, code, e, "true or false");
}

int pd_y_dur(const struct pd_ydoc *d, const struct pd_ynode *n, long long *ms, int code,
	     struct pd_err *e)
{
	struct pd_err de = PD_ERR_INIT;
	char desc[160];

	if (n->type != PD_Y_SCALAR || pd_y_is_null(n))
		return expected(d, n, code, e, "a duration");
	if (pd_dur_parse(n->value, ms, &de) < 0)
		return pd_y_errf(d, n, code, e, "%s: %s", pd_y_describe(n, desc, sizeof(desc)),
				 de.msg);
	return 0;
}

int pd_y_map(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e)
{
	if (n->type == PD_Y_MAP || pd_y_is_null(n))
		return 0;
	return expected(d, n, code, e, "a mapping");
}

int pd_y_seq(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e)
{
	if (n->type == PD_Y_SEQ || pd_y_is_null(n))
		return 0;
	return expected(d, n, code, e, "a sequence");
}

/* Optimal string alignment distance, capped: returns 3 for "far". */
static int edits(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int d[33][33];

	if (la > 32 || lb > 32 || (la > lb ? la - lb : lb - la) > 2)
		return 3;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1], best = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb] > 3 ? 3 : d[la][lb];
}

/*
 * pd_y_unknown_key with a hint when k is one or two edits from one of known
 * (a NULL-terminated list): "...; did you mean 'retry'?".
 */
static int pd_y_unknown_key_hint(const struct pd_ydoc *d, const struct pd_ynode *key_node,
				 const char *const *known, int code, struct pd_err *e)
{
	const struct pd_ynode *map = key_node->parent;
	const char *best = NULL;
	char k[64], in[176], hint[96], desc[160];
	int best_d = 3;

	for (int i = 0; known && known[i]; i++) {
		/* Short keys get one edit: "run" is not a typo of "ran" twice over. */
		int limit = strlen(known[i]) <= 3 ? 1 : 2, dist = edits(key_node->value, known[i]);

		if (dist <= limit && dist < best_d) {
			best = known[i];
			best_d = dist;
		}
	}
	in[0] = hint[0] = '\0';
	if (map != NULL && map->parent != NULL)
		snprintf(in, sizeof(in), " in %s", pd_y_describe(map, desc, sizeof(desc)));
	if (best)
		snprintf(hint, sizeof(hint), "; did you mean '%s'?", best);
	return pd_y_errf(d, key_node, code, e, "unknown key '%s'%s%s",
			 show(k, sizeof(k), key_node->value), in, hint);
}

int pd_y_unknown_key(const struct pd_ydoc *d, const struct pd_ynode *key_node, int code,
		     struct pd_err *e)
{
	return pd_y_unknown_key_hint(d, key_node, NULL, code, e);
}

int pd_y_check_keys(const struct pd_ydoc *d, const struct pd_ynode *map, const char *const *known,
		    int code, struct pd_err *e)
{
	if (pd_y_map(d, map, code, e) < 0)
		return -1;
	for (int i = 0; i < map->n; i++) {
		int found = 0;

		for (int j = 0; known[j] && !found; j++)
			found = strcmp(map->keys[i]->value, known[j]) == 0;
		if (!found)
			return pd_y_unknown_key_hint(d, map->keys[i], known, code, e);
	}
	return 0;
}
