#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dur.h"
#include "json.h"
#include "jobspec.h"

void pd_jobspec_init(struct pd_jobspec *s)
{
	memset(s, 0, sizeof(*s));
	s->delay_ms = -1;
	s->timeout_ms = -1;
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
	if (*s == '\0' || *end != '\0' || v < -1000000 || v > 1000000)
		return pd_errf(e, PD_EX_DATAERR,
			       "invalid priority '%s': expected an integer (higher runs first) or "
			       "high, normal, low",
			       s);
	*out = v;
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
	if (s->delay_ms >= 0)
		pd_buf_printf(b, ",\"delay_ms\":%lld", s->delay_ms);
	put_str(b, "idempotency_key", s->idempotency_key);
	if (s->max_attempts > 0)
		pd_buf_printf(b, ",\"max_attempts\":%lld", s->max_attempts);
	if (s->timeout_ms >= 0)
		pd_buf_printf(b, ",\"timeout_ms\":%lld", s->timeout_ms);
	put_str(b, "delivery", s->delivery);
	put_str(b, "traceparent", s->traceparent);
	if (s->nafter > 0) {
		pd_buf_puts(b, ",\"after\":[");
		for (int i = 0; i < s->nafter; i++)
			pd_buf_printf(b, "%s%lld", i ? "," : "", s->after[i]);
		pd_buf_putc(b, ']');
	}
	pd_buf_putc(b, '}');
}

static const char batch_sql[] =
    "SELECT r.id, r.created FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS u(j, ord) "
    "CROSS JOIN LATERAL pendulum.enqueue_ex("
    " u.j->>'tenant', u.j->>'type', u.j->'payload', u.j->>'queue',"
    " (u.j->>'priority')::integer, (u.j->>'run_at')::timestamptz,"
    " (u.j->>'delay_ms')::bigint * interval '1 millisecond', u.j->>'idempotency_key',"
    " (u.j->>'max_attempts')::integer, (u.j->>'timeout_ms')::bigint * interval '1 millisecond',"
    " u.j->>'delivery', u.j->>'traceparent',"
    " CASE WHEN u.j ? 'after' THEN ARRAY(SELECT jsonb_array_elements_text(u.j->'after')::bigint)"
    " END) r "
    "ORDER BY u.ord";

int pd_enqueue_batch(struct pd_db *db, const char *array, int n, long long *ids, int *created,
		     struct pd_err *e)
{
	const char *params[1] = {array};
	PGresult *r;

	if (pd_db_exec(db, batch_sql, 1, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	if (PQntuples(r) != n || PQnfields(r) != 2) {
		int got = PQntuples(r);

		PQclear(r);
		return pd_errf(e, PD_EX_SOFTWARE, "enqueue returned %d rows for %d jobs", got, n);
	}
	for (int i = 0; i < n; i++) {
		ids[i] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		created[i] = PQgetvalue(r, i, 1)[0] == 't';
	}
	PQclear(r);
	return 0;
}
