#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dur.h"
#include "handler.h"
#include "jobspec.h"
#include "text.h"

static void pd_jobspec_mem_keep(struct pd_jobspec_mem *m, void *p)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->p = pd_xrealloc(m->p, m->cap * sizeof(*m->p));
	}
	m->p[m->n++] = p;
}

void pd_jobspec_mem_release(struct pd_jobspec_mem *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->p[i]);
	free(m->p);
	m->p = NULL;
	m->n = m->cap = 0;
}

void pd_jobspec_init(struct pd_jobspec *s)
{
	memset(s, 0, sizeof(*s));
	s->delay_ms = -1;
	s->timeout_ms = -1;
	s->start_by_ms = -1;
}

int pd_start_by_parse(const char *v, struct pd_jobspec *s, struct pd_err *e)
{
	struct pd_err ignore = PD_ERR_INIT;
	char shown[PD_TEXT_SHOW_MAX + 1];

	if (pd_dur_parse(v, &s->start_by_ms, &ignore) == 0) {
		s->has_start_by = 0;
		return 0;
	}
	if (pd_instant_parse(v, &s->start_by_us, &ignore) == 0) {
		s->has_start_by = 1;
		s->start_by_ms = -1;
		return 0;
	}
	s->start_by_ms = -1;
	return pd_errf(e, PD_EX_DATAERR,
		       "invalid start deadline '%s': expected a duration (a number with ms, s, m, "
		       "h or d) or an ISO 8601 time with Z or an offset",
		       pd_text_show(shown, sizeof(shown), v, strlen(v)));
}

long long pd_jobspec_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int pd_jobspec_check_start_by(const struct pd_jobspec *s, long long now_us, struct pd_err *e)
{
	long long run_at, start_by;
	char a[PD_INSTANT_MAX], b[PD_INSTANT_MAX];

	if (!s->has_start_by && s->start_by_ms < 0)
		return 0;
	/* Both from now: now_us cancels out. No overflow: years 1-9999, delays <= 100 years. */
	run_at =
	    (s->has_run_at ? s->run_at_us : now_us) + (s->delay_ms > 0 ? s->delay_ms * 1000 : 0);
	start_by = s->has_start_by ? s->start_by_us : now_us + s->start_by_ms * 1000;
	if (start_by > run_at)
		return 0;
	pd_instant_format(start_by - start_by % 1000000, a, sizeof(a));
	pd_instant_format(run_at - run_at % 1000000, b, sizeof(b));
	return pd_errf(e, PD_EX_DATAERR,
		       "start deadline %s is not after the job's run_at %s (it could never start)",
		       a, b);
}

int pd_concurrency_key_check(const char *what, const char *key, struct pd_err *e)
{
	char shown[PD_TEXT_SHOW_MAX + 1];

	if (key == NULL)
		return 0;
	if (*key == '\0')
		return pd_errf(e, PD_EX_DATAERR, "invalid %s: must not be empty", what);
	if (pd_name_check(what, key, e) < 0)
		return -1;
	if (pd_limit_key_prefix(key) > 0)
		return pd_errf(e, PD_EX_DATAERR,
			       "invalid %s '%s': the prefixes queue:, tenant: and type: are "
			       "reserved (they name the limits of a queue, a tenant and a "
			       "job type)",
			       what, pd_text_show(shown, sizeof(shown), key, strlen(key)));
	return 0;
}

int pd_priority_parse(const char *s, long long *out, struct pd_err *e)
{
	char *end;
	long long v;

	if (strcmp(s, "high") == 0)
		return *out = 10, 0;
	if (strcmp(s, "normal") == 0)
		return *out = 0, 0;
	if (strcmp(s, "low") == 0)
		return *out = -10, 0;
	v = strtoll(s, &end, 10);
	/* strtoll skips leading white space: refused, as a trailing one is. */
	if (*s == '\0' || isspace((unsigned char)*s) || *end != '\0' || v < -1000000 ||
	    v > 1000000) {
		char shown[PD_TEXT_SHOW_MAX + 1];

		return pd_errf(e, PD_EX_DATAERR,
			       "invalid priority '%s': expected an integer (higher runs first) or "
			       "high, normal, low",
			       pd_text_show(shown, sizeof(shown), s, strlen(s)));
	}
	*out = v;
	return 0;
}

/* A duration value: "5m" or a number of seconds. */
static int parse_dur(const struct pd_json *j, int t, long long *ms, struct pd_err *e)
{
	char *s;
	int rc;

	if (j->tok[t].type != PD_JSON_STRING && j->tok[t].type != PD_JSON_NUMBER)
		return pd_errf(e, PD_EX_DATAERR, "expected a duration such as \"30s\"");
	s = pd_json_str(j, t);
	rc = pd_dur_parse(s, ms, e);
	free(s);
	return rc;
}

/* depends_on: an array of job ids (positive integers), kept in mem. */
static int parse_after(const struct pd_json *j, int t, struct pd_jobspec *s,
		       struct pd_jobspec_mem *mem, struct pd_err *e)
{
	long long *ids;
	int n = j->tok[t].size, k = t + 1;

	if (j->tok[t].type != PD_JSON_ARRAY)
		return pd_errf(e, PD_EX_DATAERR, "expected an array of job ids");
	ids = pd_xcalloc(n ? (size_t)n : 1, sizeof(*ids));
	pd_jobspec_mem_keep(mem, ids);
	for (int i = 0; i < n; i++, k = pd_json_skip(j, k))
		if (pd_json_int(j, k, &ids[i]) < 0 || ids[i] < 1)
			return pd_errf(e, PD_EX_DATAERR,
				       "expected an array of job ids (positive integers)");
	s->after = ids;
	s->nafter = n;
	return 0;
}

/*
 * A string key's value: a non-empty string, kept in mem; delivery one of
 * two; the others but traceparent names (pd_name_check).
 */
static int parse_string(const struct pd_json *j, int t, const char *key, const char **out,
			struct pd_jobspec_mem *mem, struct pd_err *e)
{
	char *v;

	if (j->tok[t].type != PD_JSON_STRING)
		return pd_errf(e, PD_EX_DATAERR, "expected a string");
	v = pd_json_str(j, t);
	pd_jobspec_mem_keep(mem, v);
	if (*v == '\0')
		return pd_errf(e, PD_EX_DATAERR, "must not be empty");
	if (strcmp(key, "delivery") != 0 && strcmp(key, "traceparent") != 0 &&
	    pd_name_check("name", v, e) < 0) /* \u0000 the JSON parser refused */
		return -1;
	if (strcmp(key, "concurrency_key") == 0 && pd_concurrency_key_check("name", v, e) < 0)
		return -1;
	if (strcmp(key, "type") == 0 && strcmp(v, PD_HOOK_TYPE) == 0)
		return pd_errf(e, PD_EX_DATAERR, "%s is reserved for hook jobs", PD_HOOK_TYPE);
	if (strcmp(key, "delivery") == 0 && strcmp(v, "at-least-once") != 0 &&
	    strcmp(v, "at-most-once") != 0)
		return pd_errf(e, PD_EX_DATAERR, "expected \"at-least-once\" or \"at-most-once\"");
	*out = v;
	return 0;
}

/* The value v of a known key into s; e without the key's name. */
static int parse_key(const struct pd_json *j, const char *key, int v, struct pd_jobspec *s,
		     struct pd_jobspec_mem *mem, struct pd_err *e)
{
	static const struct {
		const char *key;
		size_t off;
	} strings[] = {
	    {"type", offsetof(struct pd_jobspec, type)},
	    {"tenant", offsetof(struct pd_jobspec, tenant)},
	    {"queue", offsetof(struct pd_jobspec, queue)},
	    {"idempotency_key", offsetof(struct pd_jobspec, idempotency_key)},
	    {"delivery", offsetof(struct pd_jobspec, delivery)},
	    {"traceparent", offsetof(struct pd_jobspec, traceparent)},
	    {"concurrency_key", offsetof(struct pd_jobspec, concurrency_key)},
	};
	char *p;
	int rc;

	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		if (strcmp(key, strings[i].key) == 0)
			return parse_string(j, v, key, (const char **)((char *)s + strings[i].off),
					    mem, e);
	if (strcmp(key, "payload") == 0) {
		pd_json_span(j, v, &s->payload, &s->payload_len);
		return 0;
	}
	if (strcmp(key, "max_attempts") == 0) {
		if (pd_json_int(j, v, &s->max_attempts) < 0 || s->max_attempts < 1 ||
		    s->max_attempts > 1000)
			return pd_errf(e, PD_EX_DATAERR, "expected an integer 1-1000");
		return 0;
	}
	if (strcmp(key, "priority") == 0) {
		p = pd_json_str(j, v);
		rc = pd_priority_parse(p, &s->priority, e);
		free(p);
		s->has_priority = 1;
		return rc;
	}
	if (strcmp(key, "run_at") == 0) {
		if (j->tok[v].type != PD_JSON_STRING)
			return pd_errf(e, PD_EX_DATAERR, "expected a string");
		p = pd_json_str(j, v);
		rc = pd_instant_parse(p, &s->run_at_us, e);
		free(p);
		s->has_run_at = 1;
		return rc;
	}
	if (strcmp(key, "delay") == 0)
		return parse_dur(j, v, &s->delay_ms, e);
	if (strcmp(key, "timeout") == 0) {
		if (parse_dur(j, v, &s->timeout_ms, e) < 0)
			return -1;
		return s->timeout_ms == 0 ? pd_errf(e, PD_EX_DATAERR, "must be positive") : 0;
	}
	if (strcmp(key, "start_by") == 0) {
		if (j->tok[v].type != PD_JSON_STRING && j->tok[v].type != PD_JSON_NUMBER)
			return pd_errf(e, PD_EX_DATAERR,
				       "expected a duration such as \"10m\" or an instant");
		p = pd_json_str(j, v);
		rc = pd_start_by_parse(p, s, e);
		free(p);
		return rc;
	}
	return parse_after(j, v, s, mem, e); /* depends_on */
}

int pd_jobspec_parse(const struct pd_json *j, struct pd_jobspec *s, struct pd_jobspec_mem *mem,
		     struct pd_err *e)
{
	static const char *const keys[] = {
	    "type",	  "payload",	     "tenant",	     "queue",	"priority", "run_at",
	    "delay",	  "idempotency_key", "max_attempts", "timeout", "delivery", "traceparent",
	    "depends_on", "concurrency_key", "start_by",     NULL};
	int t = 1;

	if (j->tok[0].type != PD_JSON_OBJECT)
		return pd_errf(e, PD_EX_DATAERR,
			       "expected an object {\"type\": ..., \"payload\": ...}");
	for (int k = 0; k < j->tok[0].size; k++, t = pd_json_skip(j, t + 1)) {
		struct pd_err inner = PD_ERR_INIT;
		char *key = pd_json_str(j, t);
		int known = 0, rc = 0;

		for (int i = 0; keys[i]; i++)
			known |= strcmp(key, keys[i]) == 0;
		if (!known) {
			char shown[PD_TEXT_SHOW_MAX + 1];

			rc = pd_errf(e, PD_EX_DATAERR, "unknown key '%s'",
				     pd_text_show(shown, sizeof(shown), key, strlen(key)));
		} else if (j->tok[t + 1].type != PD_JSON_NULL &&
			   parse_key(j, key, t + 1, s, mem, &inner) < 0)
			rc = pd_errf(e, inner.code, "key '%s': %.400s", key, inner.msg);
		free(key);
		if (rc < 0)
			return -1;
	}
	if (s->type == NULL)
		return pd_errf(e, PD_EX_DATAERR,
			       "missing key 'type' (or give TYPE on the command line)");
	return 0;
}

static void put_str(struct pd_buf *b, const char *key, const char *v)
{
	if (v == NULL)
		return;
	pd_buf_printf(b, ",\"%s\":", key);
	pd_json_quote(b, v, strlen(v));
}

void pd_jobspec_json(const struct pd_jobspec *s, struct pd_buf *b)
{
	pd_buf_puts(b, "{\"type\":");
	pd_json_quote(b, s->type, strlen(s->type));
	pd_buf_puts(b, ",\"payload\":");
	pd_buf_append(b, s->payload, s->payload_len);
	put_str(b, "tenant", s->tenant);
	put_str(b, "queue", s->queue);
	if (s->has_priority)
		pd_buf_printf(b, ",\"priority\":%lld", s->priority);
	if (s->has_run_at) {
		char at[PD_INSTANT_MAX];

		pd_instant_format(s->run_at_us, at, sizeof(at));
		put_str(b, "run_at", at);
	}
	/* Durations as seconds with a millisecond fraction: 1500 ms is 1.500. */
	if (s->delay_ms >= 0)
		pd_buf_printf(b, ",\"delay\":%lld.%03lld", s->delay_ms / 1000, s->delay_ms % 1000);
	put_str(b, "idempotency_key", s->idempotency_key);
	if (s->max_attempts > 0)
		pd_buf_printf(b, ",\"max_attempts\":%lld", s->max_attempts);
	if (s->timeout_ms >= 0)
		pd_buf_printf(b, ",\"timeout\":%lld.%03lld", s->timeout_ms / 1000,
			      s->timeout_ms % 1000);
	put_str(b, "delivery", s->delivery);
	put_str(b, "traceparent", s->traceparent);
	if (s->nafter > 0) {
		pd_buf_puts(b, ",\"depends_on\":[");
		for (int i = 0; i < s->nafter; i++)
			pd_buf_printf(b, "%s%lld", i ? "," : "", s->after[i]);
		pd_buf_putc(b, ']');
	}
	put_str(b, "concurrency_key", s->concurrency_key);
	if (s->has_start_by) {
		char at[PD_INSTANT_MAX];

		pd_instant_format(s->start_by_us, at, sizeof(at));
		put_str(b, "start_by", at);
	} else if (s->start_by_ms >= 0) {
		pd_buf_printf(b, ",\"start_by\":%lld.%03lld", s->start_by_ms / 1000,
			      s->start_by_ms % 1000);
	}
	pd_buf_putc(b, '}');
}

/* A COPY text field: s (n bytes) with backslash, tab, newline and CR escaped. */
static void copy_text(struct pd_buf *b, const char *s, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		const char *esc;

		switch (s[i]) {
		case '\\':
			esc = "\\\\";
			break;
		case '\t':
			esc = "\\t";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		default:
			continue;
		}
		pd_buf_append(b, s + run, i - run);
		pd_buf_append(b, esc, 2);
		run = i + 1;
	}
	pd_buf_append(b, s + run, n - run);
}

/* A tab, then the string field v or \N. */
static void copy_str(struct pd_buf *b, const char *v)
{
	pd_buf_putc(b, '\t');
	if (v)
		copy_text(b, v, strlen(v));
	else
		pd_buf_append(b, "\\N", 2);
}

/* A tab, then ms as an interval in seconds ("1.500") or \N when negative. */
static void copy_dur(struct pd_buf *b, long long ms)
{
	if (ms < 0)
		pd_buf_append(b, "\t\\N", 3);
	else
		pd_buf_printf(b, "\t%lld.%03lld", ms / 1000, ms % 1000);
}

void pd_jobspec_copy(const struct pd_jobspec *s, int ord, struct pd_buf *b)
{
	pd_buf_printf(b, "%d", ord);
	copy_str(b, s->tenant);
	copy_str(b, s->queue);
	copy_str(b, s->type);
	pd_buf_putc(b, '\t');
	copy_text(b, s->payload, s->payload_len);
	if (s->has_priority)
		pd_buf_printf(b, "\t%lld", s->priority);
	else
		pd_buf_append(b, "\t\\N", 3);
	if (s->has_run_at) {
		char at[PD_INSTANT_MAX];

		pd_instant_format(s->run_at_us, at, sizeof(at));
		copy_str(b, at);
	} else {
		copy_str(b, NULL);
	}
	copy_dur(b, s->delay_ms);
	copy_str(b, s->idempotency_key);
	if (s->max_attempts > 0)
		pd_buf_printf(b, "\t%lld", s->max_attempts);
	else
		pd_buf_append(b, "\t\\N", 3);
	copy_dur(b, s->timeout_ms);
	copy_str(b, s->delivery);
	copy_str(b, s->traceparent);
	if (s->nafter > 0) {
		pd_buf_append(b, "\t{", 2);
		for (int i = 0; i < s->nafter; i++)
			pd_buf_printf(b, "%s%lld", i ? "," : "", s->after[i]);
		pd_buf_putc(b, '}');
	} else {
		pd_buf_append(b, "\t\\N", 3);
	}
	copy_str(b, s->concurrency_key);
	if (s->has_start_by) {
		char at[PD_INSTANT_MAX];

		pd_instant_format(s->start_by_us, at, sizeof(at));
		copy_str(b, at);
	} else {
		copy_str(b, NULL);
	}
	copy_dur(b, s->start_by_ms); /* start_within */
	pd_buf_putc(b, '\n');
}

unsigned pd_jobspec_given(const struct pd_jobspec *s)
{
	return (s->tenant ? PD_JOBSPEC_COL_TENANT : 0) | (s->queue ? PD_JOBSPEC_COL_QUEUE : 0) |
	       (s->has_priority ? PD_JOBSPEC_COL_PRIORITY : 0) |
	       (s->has_run_at || s->delay_ms > 0 ? PD_JOBSPEC_COL_RUN_AT : 0) |
	       (s->max_attempts > 0 ? PD_JOBSPEC_COL_MAX_ATTEMPTS : 0) |
	       (s->delivery ? PD_JOBSPEC_COL_DELIVERY : 0);
}

void pd_jobspec_copy_cols(unsigned cols, struct pd_buf *b)
{
	pd_buf_puts(b, "(id");
	if (cols & PD_JOBSPEC_COL_TENANT)
		pd_buf_puts(b, ", tenant_id");
	if (cols & PD_JOBSPEC_COL_QUEUE)
		pd_buf_puts(b, ", queue");
	pd_buf_puts(b, ", job_type, payload");
	if (cols & PD_JOBSPEC_COL_PRIORITY)
		pd_buf_puts(b, ", priority");
	if (cols & PD_JOBSPEC_COL_RUN_AT)
		pd_buf_puts(b, ", run_at");
	if (cols & PD_JOBSPEC_COL_MAX_ATTEMPTS)
		pd_buf_puts(b, ", max_attempts");
	pd_buf_puts(b, ", timeout");
	if (cols & PD_JOBSPEC_COL_DELIVERY)
		pd_buf_puts(b, ", delivery");
	pd_buf_puts(b, ", traceparent, concurrency_key, start_by)");
}

void pd_jobspec_copy_job(const struct pd_jobspec *s, long long id, unsigned cols,
			 const char *run_at, long long now_us, struct pd_buf *b)
{
	pd_buf_printf(b, "%lld", id);
	if (cols & PD_JOBSPEC_COL_TENANT)
		copy_str(b, s->tenant);
	if (cols & PD_JOBSPEC_COL_QUEUE)
		copy_str(b, s->queue);
	copy_str(b, s->type);
	pd_buf_putc(b, '\t');
	copy_text(b, s->payload, s->payload_len);
	if (cols & PD_JOBSPEC_COL_PRIORITY)
		pd_buf_printf(b, "\t%lld", s->priority);
	if (cols & PD_JOBSPEC_COL_RUN_AT)
		copy_str(b, run_at);
	if (cols & PD_JOBSPEC_COL_MAX_ATTEMPTS)
		pd_buf_printf(b, "\t%lld", s->max_attempts);
	copy_dur(b, s->timeout_ms);
	if (cols & PD_JOBSPEC_COL_DELIVERY)
		copy_str(b, s->delivery);
	copy_str(b, s->traceparent);
	copy_str(b, s->concurrency_key);
	if (s->has_start_by || s->start_by_ms >= 0) {
		char at[PD_INSTANT_MAX];

		pd_instant_format(s->has_start_by ? s->start_by_us : now_us + s->start_by_ms * 1000,
				  at, sizeof(at));
		copy_str(b, at);
	} else {
		copy_str(b, NULL);
	}
	pd_buf_putc(b, '\n');
}
