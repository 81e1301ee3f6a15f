/*
 * sched: schedules in the database: their fields, the occurrences a tick
 * fires, the statements of pd-cron's subcommands, and apply. The tick itself
 * is lib/schedtick.c, the files apply reads lib/schedfile.c. See sched.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "dur.h"
#include "flow.h"
#include "jobspec.h"
#include "jobs.h"
#include "json.h"
#include "log.h"
#include "sched.h"
#include "text.h"

/* Transaction advisory lock of apply. */
#define APPLY_LOCK "7311948215"

static const char *const misfire_names[] = {"SKIP", "FIRE_ONCE", "FIRE_ALL"};

int pd_misfire_parse(const char *s, enum pd_misfire *m, struct pd_err *e)
{
	char up[16];
	size_t i;

	for (i = 0; s[i] && i + 1 < sizeof(up); i++)
		up[i] = s[i] == '-' ? '_' : (char)toupper((unsigned char)s[i]);
	up[i] = '\0';
	for (int k = 0; k < 3 && !s[i]; k++) {
		if (strcmp(up, misfire_names[k]) == 0) {
			*m = (enum pd_misfire)k;
			return 0;
		}
	}
	return pd_errf(e, PD_EX_DATAERR,
		       "invalid misfire policy '%.64s': expected SKIP, FIRE_ONCE or FIRE_ALL", s);
}

const char *pd_misfire_name(enum pd_misfire m)
{
	return m >= PD_MISFIRE_SKIP && m <= PD_MISFIRE_FIRE_ALL ? misfire_names[m] : "FIRE_ONCE";
}

int pd_overlap_parse(const char *s, enum pd_overlap *o, struct pd_err *e)
{
	if (strcasecmp(s, "allow") == 0)
		*o = PD_OVERLAP_ALLOW;
	else if (strcasecmp(s, "skip") == 0)
		*o = PD_OVERLAP_SKIP;
	else
		return pd_errf(e, PD_EX_DATAERR, "invalid overlap '%.64s': expected allow or skip",
			       s);
	return 0;
}

const char *pd_overlap_name(enum pd_overlap o)
{
	return o == PD_OVERLAP_SKIP ? "skip" : "allow";
}

long long pd_sched_jitter_offset(const char *tenant, const char *name, long long jitter_ms)
{
	unsigned long long h = 14695981039346656037ULL; /* FNV-1a, 64 bits */
	const char *parts[3] = {tenant && *tenant ? tenant : "default", "/", name};

	if (jitter_ms <= 0)
		return 0;
	for (int i = 0; i < 3; i++)
		for (const unsigned char *c = (const unsigned char *)parts[i]; *c; c++)
			h = (h ^ *c) * 1099511628211ULL;
	return (long long)(h % (unsigned long long)jitter_ms);
}

void pd_sched_init(struct pd_sched *s)
{
	memset(s, 0, sizeof(*s));
	s->misfire = PD_MISFIRE_FIRE_ONCE;
	s->catch_up_limit = PD_SCHED_CATCH_UP_DEFAULT;
	s->enabled = 1;
	s->overlap = PD_OVERLAP_ALLOW;
	s->max_attempts = s->timeout_ms = -1;
}

int pd_sched_check_name(const char *name, struct pd_err *e)
{
	size_t n = strlen(name);
	char shown[PD_TEXT_SHOW_MAX + 4];

	if (n == 0)
		return pd_errf(e, PD_EX_DATAERR, "invalid schedule name '': empty");
	if (n > PD_SCHED_NAME_MAX)
		return pd_errf(e, PD_EX_DATAERR,
			       "invalid schedule name '%.40s...': longer than %d characters", name,
			       PD_SCHED_NAME_MAX);
	if (!isalnum((unsigned char)name[0]))
		return pd_errf(e, PD_EX_DATAERR,
			       "invalid schedule name '%s': must start with a letter or a digit",
			       pd_text_show(shown, sizeof shown, name, n));
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return pd_errf(e, PD_EX_DATAERR,
				       "invalid schedule name '%s': only letters, digits, '.', "
				       "'_' and '-' are allowed",
				       pd_text_show(shown, sizeof shown, name, n));
	return 0;
}

int pd_sched_check_timing(const char *cron, const char *zone, struct pd_err *e)
{
	struct pd_cron c;
	long long next;

	if (pd_cron_parse(&c, cron, e) < 0 || pd_tz_check(zone, e) < 0)
		return -1;
	if (pd_cron_next(&c, zone, (long long)time(NULL), &next, e) < 0)
		return -1;
	return 0;
}

const char *pd_sched_workflow(const char *type)
{
	size_t n = strlen(PD_FLOW_JOB_PREFIX);

	return type && strncmp(type, PD_FLOW_JOB_PREFIX, n) == 0 ? type + n : NULL;
}

int pd_sched_check_workflow(const struct pd_sched *s, const char **field, struct pd_err *e)
{
	const char *flow = pd_sched_workflow(s->type);

	if (flow && !pd_flow_name_ok(flow)) {
		if (field)
			*field = "type";
		return pd_errf(e, PD_EX_DATAERR,
			       "invalid type '%.140s': the workflow name must be 1 to %d letters, "
			       "digits, '-', '_' or '.'",
			       s->type, PD_FLOW_NAME_MAX);
	}
	if (flow && s->timeout_ms != -1) {
		if (field)
			*field = "timeout";
		return pd_errf(e, PD_EX_DATAERR,
			       "invalid timeout for workflow '%s': its steps' timeouts are the "
			       "config's (workflows:)",
			       flow);
	}
	return 0;
}

int pd_sched_check(const struct pd_sched *s, struct pd_err *e)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err je = PD_ERR_INIT;

	if (s->tenant && *s->tenant == '\0')
		return pd_errf(e, PD_EX_DATAERR, "invalid tenant '': empty");
	if (pd_sched_check_name(s->name ? s->name : "", e) < 0)
		return -1;
	if (pd_sched_check_timing(s->cron ? s->cron : "", s->timezone ? s->timezone : "", e) < 0)
		return -1;
	if (s->type == NULL || *s->type == '\0')
		return pd_errf(e, PD_EX_DATAERR, "invalid job type '': empty");
	if (s->queue && *s->queue == '\0')
		return pd_errf(e, PD_EX_DATAERR, "invalid queue '': empty");
	if (pd_name_check("tenant", s->tenant, e) < 0 ||
	    pd_name_check("job type", s->type, e) < 0 || pd_name_check("queue", s->queue, e) < 0)
		return -1;
	if (s->payload && pd_json_parse(&j, s->payload, strlen(s->payload), &je) < 0)
		return pd_errf(e, PD_EX_DATAERR, "invalid payload: %s", je.msg);
	pd_json_release(&j);
	if (s->priority < -1000000 || s->priority > 1000000)
		return pd_errf(e, PD_EX_DATAERR, "invalid priority %lld: out of range %d-%d",
			       s->priority, -1000000, 1000000);
	if (s->catch_up_limit < 1 || s->catch_up_limit > PD_SCHED_CATCH_UP_MAX)
		return pd_errf(e, PD_EX_DATAERR, "invalid catch-up limit %lld: out of range 1-%d",
			       s->catch_up_limit, PD_SCHED_CATCH_UP_MAX);
	if (s->jitter_ms < 0 || s->jitter_ms > PD_SCHED_JITTER_MAX_MS) {
		char d[PD_DUR_MAX];

		pd_dur_format(s->jitter_ms, d, sizeof d);
		return pd_errf(e, PD_EX_DATAERR, "invalid jitter %s: out of range 0-1d", d);
	}
	if (s->max_attempts != -1 && (s->max_attempts < 1 || s->max_attempts > 1000))
		return pd_errf(e, PD_EX_DATAERR, "invalid max attempts %lld: out of range 1-1000",
			       s->max_attempts);
	if (s->timeout_ms != -1 && s->timeout_ms <= 0)
		return pd_errf(e, PD_EX_DATAERR, "invalid timeout %lldms: must be positive",
			       s->timeout_ms);
	if (pd_sched_check_workflow(s, NULL, e) < 0)
		return -1;
	return pd_concurrency_key_check("concurrency key", s->concurrency_key, e);
}

/* ---- the occurrences a tick fires ---- */

void pd_due_release(struct pd_due *d)
{
	free(d->at);
	memset(d, 0, sizeof(*d));
}

/*
 * The occurrences in (start, now] (start < now): the last `want` of them in
 * ring (ring[i % want] for the i-th), how many in *count, and the first
 * occurrence after now in *next.
 */
static int scan(const struct pd_cron *c, const char *zone, long long start, long long now,
		long long *ring, int want, long long *count, long long *next, struct pd_err *e)
{
	long long t = start, nx;

	*count = 0;
	for (;;) {
		if (pd_cron_next(c, zone, t, &nx, e) < 0)
			return -1;
		if (nx > now)
			break;
		ring[*count % want] = nx;
		(*count)++;
		t = nx;
	}
	*next = nx;
	return 0;
}

int pd_sched_due(const struct pd_cron *c, const char *zone, long long after, long long now,
		 enum pd_misfire m, int limit, long long grace, struct pd_due *d, struct pd_err *e)
{
	int want = m == PD_MISFIRE_FIRE_ALL ? (limit > 0 ? limit : 1) : 1;
	long long span = 3600, count = 0, start = after, first;
	long long *ring;
	int final = 0;

	memset(d, 0, sizeof(*d));
	if (after >= now)
		return pd_cron_next(c, zone, after, &d->next, e);
	ring = pd_xcalloc((size_t)want, sizeof(*ring));
	/*
	 * Only the latest `want` occurrences matter: scan back from now over a
	 * window that grows fourfold until it holds that many or reaches
	 * `after`. Whatever it holds then are the latest ones.
	 */
	while (!final) {
		if (span >= now - after) {
			start = after;
			final = 1;
		} else {
			start = now - span;
		}
		if (scan(c, zone, start, now, ring, want, &count, &d->next, e) < 0) {
			free(ring);
			return -1;
		}
		if (count >= want)
			break;
		span *= 4;
	}
	d->n = count < want ? (int)count : want;
	d->at = pd_xcalloc((size_t)(d->n ? d->n : 1), sizeof(*d->at));
	for (int i = 0; i < d->n; i++)
		d->at[i] = ring[(count - d->n + i) % want];
	free(ring);
	d->dropped = count > want;
	if (!final && !d->dropped) {
		/* Is there an older occurrence between after and the window? */
		if (pd_cron_next(c, zone, after, &first, e) < 0) {
			pd_due_release(d);
			return -1;
		}
		d->dropped = first <= start;
	}
	if (m == PD_MISFIRE_SKIP && d->n == 1 && now - d->at[0] > grace) {
		d->n = 0;
		d->dropped = 1;
	}
	return 0;
}

/* ---- database helpers ---- */

static void rollback(struct pd_db *db)
{
	struct pd_err ignore = PD_ERR_INIT;

	pd_db_exec_script(db, "ROLLBACK", &ignore);
}

/* The database clock, whole seconds (floor). */
static int db_now(struct pd_db *db, long long *now, struct pd_err *e)
{
	char *v = NULL;

	if (pd_db_value(db, "SELECT floor(extract(epoch FROM now()))::bigint", 0, NULL, &v, e) < 0)
		return -1;
	*now = v ? strtoll(v, NULL, 10) : 0;
	free(v);
	return 0;
}

/* The first occurrence after `after`. */
static int first_after(const char *cron, const char *zone, long long after, long long *next,
		       struct pd_err *e)
{
	struct pd_cron c;

	if (pd_cron_parse(&c, cron, e) < 0)
		return -1;
	return pd_cron_next(&c, zone, after, next, e);
}

static void instant(long long t, char *out)
{
	pd_instant_format(t * 1000000LL, out, PD_INSTANT_MAX);
}

static const char *or_default(const char *s)
{
	return s && *s ? s : "default";
}

/* The definition's parameters, as text, in the column order of INSERT_SQL. */
struct def_params {
	char priority[24], limit[24], jitter[24], attempts[24], timeout[48];
	const char *p[18]; /* 16 source, 17 command: after the rest */
};

static void def_params(const struct pd_sched *s, struct def_params *d)
{
	snprintf(d->priority, sizeof(d->priority), "%lld", s->priority);
	snprintf(d->limit, sizeof(d->limit), "%lld", s->catch_up_limit);
	d->p[0] = or_default(s->tenant);
	d->p[1] = s->name;
	d->p[2] = s->cron;
	d->p[3] = s->timezone;
	d->p[4] = s->type;
	d->p[5] = s->payload ? s->payload : "{}";
	d->p[6] = or_default(s->queue);
	d->p[7] = d->priority;
	d->p[8] = pd_misfire_name(s->misfire);
	d->p[9] = d->limit;
	d->p[10] = s->enabled ? "true" : "false";
	d->p[11] = pd_overlap_name(s->overlap);
	snprintf(d->jitter, sizeof(d->jitter), "%lld", s->jitter_ms);
	d->p[12] = d->jitter;
	snprintf(d->attempts, sizeof(d->attempts), "%lld", s->max_attempts);
	d->p[13] = s->max_attempts > 0 ? d->attempts : NULL;
	snprintf(d->timeout, sizeof(d->timeout), "%lld milliseconds", s->timeout_ms);
	d->p[14] = s->timeout_ms > 0 ? d->timeout : NULL;
	d->p[15] = s->concurrency_key;
	d->p[16] = s->source;
	d->p[17] = s->command;
}

static const char insert_sql[] =
    "INSERT INTO pendulum.cron_schedules (tenant_id, name, cron, timezone, job_type, payload, "
    "queue, priority, misfire_policy, catch_up_limit, enabled, overlap, jitter_ms, "
    "max_attempts, timeout, concurrency_key, last_fired_at, next_fire_at, source, command) "
    "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::integer, $9, $10::integer, $11::boolean, "
    "$12, $13::bigint, $14::integer, $15::interval, $16, now(), $17::timestamptz, $18, $19) "
    "ON CONFLICT (tenant_id, name) DO NOTHING RETURNING id";

/* Insert s inside the caller's transaction; 0 created, 1 the name exists. */
static int insert(struct pd_db *db, const struct pd_sched *s, long long now, long long *next,
		  struct pd_err *e)
{
	struct def_params d;
	const char *params[19];
	char at[PD_INSTANT_MAX];
	PGresult *r;
	int exists;

	*next = 0;
	if (s->enabled) {
		if (first_after(s->cron, s->timezone, now, next, e) < 0)
			return -1;
		instant(*next, at);
	}
	def_params(s, &d);
	memcpy(params, d.p, 16 * sizeof(*params));
	params[16] = s->enabled ? at : NULL;
	params[17] = d.p[16];
	params[18] = d.p[17];
	if (pd_db_exec(db, insert_sql, 19, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	exists = PQntuples(r) == 0;
	PQclear(r);
	return exists;
}

int pd_sched_add(struct pd_db *db, const struct pd_sched *s, long long *next, struct pd_err *e)
{
	long long now;
	int rc;

	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		return -1;
	if (db_now(db, &now, e) < 0 || (rc = insert(db, s, now, next, e)) < 0) {
		rollback(db);
		return -1;
	}
	if (rc == 1) {
		rollback(db);
		return pd_errf(e, PD_EX_CONFLICT, "schedule '%s' already exists in tenant '%s'",
			       s->name, or_default(s->tenant));
	}
	return pd_db_exec_script(db, "COMMIT", e);
}

static int not_found(const char *tenant, const char *name, struct pd_err *e)
{
	return pd_errf(e, PD_EX_NOTFOUND, "no schedule '%s' in tenant '%s'", name,
		       or_default(tenant));
}

/* Run a statement on one schedule that returns a row when the schedule exists. */
static int by_name(struct pd_db *db, const char *sql, const char *tenant, const char *name,
		   struct pd_err *e)
{
	const char *params[2] = {or_default(tenant), name};
	PGresult *r;
	int n;

	if (pd_db_exec(db, sql, 2, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	n = PQntuples(r);
	PQclear(r);
	return n ? 0 : not_found(tenant, name, e);
}

int pd_sched_remove(struct pd_db *db, const char *tenant, const char *name, struct pd_err *e)
{
	return by_name(db,
		       "DELETE FROM pendulum.cron_schedules WHERE tenant_id = $1 AND name = $2 "
		       "RETURNING id",
		       tenant, name, e);
}

int pd_sched_pause(struct pd_db *db, const char *tenant, const char *name, int *changed,
		   struct pd_err *e)
{
	/* Pausing a paused (or disabled) schedule keeps it as it is. */
	static const char sql[] =
	    "WITH o AS (SELECT id, enabled FROM pendulum.cron_schedules "
	    "WHERE tenant_id = $1 AND name = $2 FOR UPDATE) "
	    "UPDATE pendulum.cron_schedules s SET enabled = false, next_fire_at = NULL, "
	    "updated_at = CASE WHEN o.enabled THEN now() ELSE s.updated_at END "
	    "FROM o WHERE s.id = o.id RETURNING o.enabled";
	const char *params[2] = {or_default(tenant), name};
	PGresult *r;

	*changed = 0;
	if (pd_db_exec(db, sql, 2, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return not_found(tenant, name, e);
	}
	*changed = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return 0;
}

int pd_sched_resume(struct pd_db *db, const char *tenant, const char *name, long long *next,
		    int *changed, struct pd_err *e)
{
	const char *params[3] = {or_default(tenant), name, NULL};
	char id[24], at[PD_INSTANT_MAX];
	struct pd_err ce = PD_ERR_INIT;
	PGresult *r;
	long long now;

	*next = 0;
	*changed = 0;
	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		return -1;
	if (db_now(db, &now, e) < 0 ||
	    pd_db_exec(db,
		       "SELECT id, cron, timezone, enabled, "
		       "floor(extract(epoch FROM next_fire_at))::bigint "
		       "FROM pendulum.cron_schedules WHERE tenant_id = $1 AND name = $2 FOR UPDATE",
		       2, params, PGRES_TUPLES_OK, &r, e) < 0)
		goto fail;
	if (PQntuples(r) != 1) {
		PQclear(r);
		rollback(db);
		return not_found(tenant, name, e);
	}
	if (PQgetvalue(r, 0, 3)[0] == 't') {
		*next = PQgetisnull(r, 0, 4) ? 0 : strtoll(PQgetvalue(r, 0, 4), NULL, 10);
		PQclear(r);
		return pd_db_exec_script(db, "COMMIT", e);
	}
	snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
	if (pd_tz_check(PQgetvalue(r, 0, 2), &ce) < 0 ||
	    first_after(PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), now, next, &ce) < 0) {
		PQclear(r);
		rollback(db);
		return pd_errf(e, PD_EX_DATAERR, "cannot resume schedule '%s': %s", name, ce.msg);
	}
	PQclear(r);
	instant(*next, at);
	params[0] = id;
	params[1] = at;
	if (pd_db_exec(db,
		       "UPDATE pendulum.cron_schedules SET enabled = true, disabled_reason = NULL, "
		       "next_fire_at = $2::timestamptz, updated_at = now() WHERE id = $1",
		       2, params, PGRES_COMMAND_OK, NULL, e) < 0)
		goto fail;
	*changed = 1;
	return pd_db_exec_script(db, "COMMIT", e);
fail:
	rollback(db);
	return -1;
}

static long long num(const PGresult *r, int row, int col, long long null)
{
	return PQgetisnull(r, row, col) ? null : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* A timestamptz as epoch microseconds, an interval as milliseconds. */
#define EPOCH_US(x) "floor(extract(epoch FROM " x ") * 1000000)::bigint"
#define MS(x)	    "round(extract(epoch FROM " x ") * 1000)::bigint"

int pd_sched_list(struct pd_db *db, const char *tenant, struct pd_sched_row **rows, int *n,
		  struct pd_err *e)
{
	const char *params[1] = {tenant};
	PGresult *r;

	*rows = NULL;
	*n = 0;
	if (pd_db_exec(
		db,
		"SELECT id, tenant_id, name, cron, timezone, job_type, payload::text, queue, "
		"priority, misfire_policy, catch_up_limit, enabled, disabled_reason, "
		"floor(extract(epoch FROM last_fired_at))::bigint, "
		"floor(extract(epoch FROM next_fire_at))::bigint, overlap, jitter_ms, "
		"max_attempts, round(extract(epoch FROM timeout) * 1000)::bigint, "
		"f.kind, " EPOCH_US("f.fire_at") ", h.job_id, h.state, " MS(
		    "h.duration") ", s.concurrency_key, s.source, s.command "
				  "FROM pendulum.cron_schedules s "
				  "LEFT JOIN LATERAL (SELECT kind, fire_at FROM "
				  "pendulum.cron_fires "
				  "WHERE schedule_id = s.id ORDER BY fire_at DESC, id DESC LIMIT "
				  "1) f ON true "
				  "LEFT JOIN LATERAL (SELECT job_id, state, duration FROM "
				  "pendulum.cron_history "
				  "WHERE schedule_id = s.id AND job_id IS NOT NULL ORDER BY "
				  "fire_at DESC, id DESC "
				  "LIMIT 1) h ON true "
				  "WHERE $1::text IS NULL OR tenant_id = $1 "
				  "ORDER BY tenant_id, name",
		1, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	*n = PQntuples(r);
	*rows = pd_xcalloc((size_t)(*n ? *n : 1), sizeof(**rows));
	for (int i = 0; i < *n; i++) {
		struct pd_sched_row *w = &(*rows)[i];

		w->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		w->tenant = pd_db_dup(r, i, 1);
		w->name = pd_db_dup(r, i, 2);
		w->cron = pd_db_dup(r, i, 3);
		w->timezone = pd_db_dup(r, i, 4);
		w->type = pd_db_dup(r, i, 5);
		w->payload = pd_db_dup(r, i, 6);
		w->queue = pd_db_dup(r, i, 7);
		w->priority = strtoll(PQgetvalue(r, i, 8), NULL, 10);
		w->misfire = pd_db_dup(r, i, 9);
		w->catch_up_limit = strtoll(PQgetvalue(r, i, 10), NULL, 10);
		w->enabled = PQgetvalue(r, i, 11)[0] == 't';
		w->disabled_reason = pd_db_dup(r, i, 12);
		w->last_fired_at = strtoll(PQgetvalue(r, i, 13), NULL, 10);
		w->has_next = !PQgetisnull(r, i, 14);
		w->next_fire_at = w->has_next ? strtoll(PQgetvalue(r, i, 14), NULL, 10) : 0;
		w->overlap = pd_db_dup(r, i, 15);
		w->jitter_ms = num(r, i, 16, 0);
		w->max_attempts = num(r, i, 17, -1);
		w->timeout_ms = num(r, i, 18, -1);
		w->has_fire = !PQgetisnull(r, i, 19);
		w->fire_kind = pd_db_dup(r, i, 19);
		w->fire_at_us = num(r, i, 20, 0);
		w->job_id = num(r, i, 21, 0);
		w->job_state = pd_db_dup(r, i, 22);
		w->duration_ms = num(r, i, 23, -1);
		w->concurrency_key = pd_db_dup(r, i, 24);
		w->source = pd_db_dup(r, i, 25);
		w->command = pd_db_dup(r, i, 26);
	}
	PQclear(r);
	return 0;
}

void pd_sched_rows_free(struct pd_sched_row *rows, int n)
{
	for (int i = 0; rows && i < n; i++) {
		struct pd_sched_row *w = &rows[i];

		free(w->tenant);
		free(w->source);
		free(w->command);
		free(w->name);
		free(w->cron);
		free(w->timezone);
		free(w->type);
		free(w->payload);
		free(w->queue);
		free(w->misfire);
		free(w->disabled_reason);
		free(w->overlap);
		free(w->fire_kind);
		free(w->job_state);
		free(w->concurrency_key);
	}
	free(rows);
}

int pd_sched_trigger(struct pd_db *db, const char *tenant, const char *name, long long *job_id,
		     struct pd_err *e)
{
	const char *params[2] = {or_default(tenant), name};
	PGresult *r;

	/*
	 * One statement, so one transaction: the schedule's row is held, as by
	 * a tick, for the job and its record.
	 */
	*job_id = 0;
	if (pd_db_exec(
		db,
		"WITH s AS (SELECT * FROM pendulum.cron_schedules WHERE tenant_id = $1 "
		"AND name = $2 FOR UPDATE), "
		"j AS (SELECT e.id FROM s CROSS JOIN LATERAL pendulum.cron_enqueue(s.id, now(), "
		"'cron:' || s.id || ':trigger:' || " EPOCH_US(
		    "now()") ") AS e), "
			     "f AS (INSERT INTO pendulum.cron_fires (schedule_id, tenant_id, "
			     "fire_at, kind, job_id) "
			     "SELECT s.id, s.tenant_id, now(), 'triggered', j.id FROM s, j) "
			     "SELECT id FROM j",
		2, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return not_found(tenant, name, e);
	}
	*job_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return 0;
}

int pd_sched_history(struct pd_db *db, const char *tenant, const char *name, int limit,
		     struct pd_fire_row **rows, int *n, struct pd_err *e)
{
	char lim[24];
	const char *params[3] = {or_default(tenant), name, lim};
	PGresult *r;

	*rows = NULL;
	*n = 0;
	snprintf(lim, sizeof(lim), "%d", limit);
	if (by_name(db, "SELECT id FROM pendulum.cron_schedules WHERE tenant_id = $1 AND name = $2",
		    tenant, name, e) < 0 ||
	    pd_db_exec(
		db,
		"SELECT kind, state, " EPOCH_US(
		    "fire_at") ", job_id, busy_job_id, "
			       "attempts, exit_code, signal, " EPOCH_US("run_at") ", " MS(
				   "duration") " FROM pendulum.cron_history WHERE tenant_id = $1 "
					       "AND name = $2 "
					       "ORDER BY fire_at DESC, id DESC LIMIT $3::integer",
		3, params, PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	*n = PQntuples(r);
	*rows = pd_xcalloc((size_t)(*n ? *n : 1), sizeof(**rows));
	for (int i = 0; i < *n; i++) {
		struct pd_fire_row *w = &(*rows)[i];

		w->kind = pd_db_dup(r, i, 0);
		w->state = pd_db_dup(r, i, 1);
		w->fire_at_us = num(r, i, 2, 0);
		w->job_id = num(r, i, 3, 0);
		w->busy_job_id = num(r, i, 4, 0);
		w->attempts = num(r, i, 5, -1);
		w->exit_code = num(r, i, 6, -1);
		w->signal = num(r, i, 7, -1);
		w->run_at_us = num(r, i, 8, -1);
		w->duration_ms = num(r, i, 9, -1);
	}
	PQclear(r);
	return 0;
}

void pd_fire_rows_free(struct pd_fire_row *rows, int n)
{
	for (int i = 0; rows && i < n; i++) {
		free(rows[i].kind);
		free(rows[i].state);
	}
	free(rows);
}

/* ---- apply ---- */

/*
 * overlap, jitter_ms, max_attempts and timeout (in ms) as text, NULL as
 * "none"; concurrency_key, NULL as "" (no key is empty).
 */
#define APPLY_COLS                                                                                 \
	"overlap, jitter_ms::text, COALESCE(max_attempts::text, 'none'), "                         \
	"COALESCE(round(extract(epoch FROM timeout) * 1000)::bigint::text, 'none'), "              \
	"COALESCE(concurrency_key, ''), COALESCE(source, ''), COALESCE(command, '')"

enum {
	C_ID,
	C_TENANT,
	C_NAME,
	C_CRON,
	C_ZONE,
	C_TYPE,
	C_PAYLOAD,
	C_QUEUE,
	C_PRIO,
	C_MISFIRE,
	C_LIMIT,
	C_ENABLED,
	C_OVERLAP,
	C_JITTER,
	C_ATTEMPTS,
	C_TIMEOUT,
	C_KEY,
	C_SOURCE,
	C_COMMAND,
	C_NCOLS
};

static void label(struct pd_buf *b, const char *tenant, const char *name)
{
	if (strcmp(tenant, "default") != 0)
		pd_buf_printf(b, "%s/", tenant);
	pd_buf_puts(b, name);
}

/* Append "key: 'old' -> 'new'" (quoted) or "key: old -> new" to the change list. */
static void change(struct pd_buf *b, int *nchg, const char *key, const char *old, const char *new,
		   int quote)
{
	pd_buf_puts(b, (*nchg)++ ? ", " : " (");
	if (quote)
		pd_buf_printf(b, "%s: '%s' -> '%s'", key, old, new);
	else
		pd_buf_printf(b, "%s: %s -> %s", key, old, new);
}

/* The payloads of v in jsonb's canonical text, by asking the database. */
static int canonical_payloads(struct pd_db *db, const struct pd_sched *v, int n, char ***out,
			      struct pd_err *e)
{
	struct pd_buf arr = PD_BUF_INIT;
	const char *params[1];
	PGresult *r;

	*out = pd_xcalloc((size_t)(n ? n : 1), sizeof(**out));
	pd_buf_putc(&arr, '[');
	for (int i = 0; i < n; i++)
		pd_buf_printf(&arr, "%s%s", i ? "," : "", v[i].payload ? v[i].payload : "{}");
	pd_buf_putc(&arr, ']');
	params[0] = arr.data;
	if (pd_db_exec(db,
		       "SELECT a.value::text FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY "
		       "AS a(value, i) ORDER BY a.i",
		       1, params, PGRES_TUPLES_OK, &r, e) < 0) {
		pd_buf_release(&arr);
		return -1;
	}
	pd_buf_release(&arr);
	for (int i = 0; i < n && i < PQntuples(r); i++)
		(*out)[i] = pd_xstrdup(PQgetvalue(r, i, 0));
	PQclear(r);
	return 0;
}

/*
 * Compare entry s (payload in canonical text) with stored row `row` of r:
 * append the differences to b, return how many. *retime is set when the
 * next fire must be computed again (cron, timezone, or enabled again).
 */
static int diff(const struct pd_sched *s, const char *payload, PGresult *r, int row,
		struct pd_buf *b, int *retime)
{
	char prio[24], limit[24], jitter[24], attempts[24], timeout[24];
	int n = 0, was_enabled = PQgetvalue(r, row, C_ENABLED)[0] == 't';
	const char *old;

	snprintf(prio, sizeof(prio), "%lld", s->priority);
	snprintf(limit, sizeof(limit), "%lld", s->catch_up_limit);
	snprintf(jitter, sizeof(jitter), "%lld", s->jitter_ms);
	/* The stored NULLs read as "none" (see APPLY_COLS). */
	snprintf(attempts, sizeof(attempts), s->max_attempts > 0 ? "%lld" : "none",
		 s->max_attempts);
	snprintf(timeout, sizeof(timeout), s->timeout_ms > 0 ? "%lld" : "none", s->timeout_ms);
#define FIELD(col, key, val, quote)                                                                \
	do {                                                                                       \
		old = PQgetvalue(r, row, col);                                                     \
		if (strcmp(old, val) != 0)                                                         \
			change(b, &n, key, old, val, quote);                                       \
	} while (0)
	FIELD(C_CRON, "cron", s->cron, 1);
	FIELD(C_ZONE, "timezone", s->timezone, 1);
	*retime = n > 0;
	FIELD(C_TYPE, "type", s->type, 1);
	FIELD(C_PAYLOAD, "payload", payload, 1);
	FIELD(C_QUEUE, "queue", or_default(s->queue), 1);
	FIELD(C_PRIO, "priority", prio, 0);
	FIELD(C_MISFIRE, "misfire", pd_misfire_name(s->misfire), 0);
	FIELD(C_LIMIT, "catch_up_limit", limit, 0);
	FIELD(C_OVERLAP, "overlap", pd_overlap_name(s->overlap), 0);
	FIELD(C_JITTER, "jitter_ms", jitter, 0);
	FIELD(C_ATTEMPTS, "max_attempts", attempts, 0);
	FIELD(C_TIMEOUT, "timeout_ms", timeout, 0);
	FIELD(C_KEY, "concurrency_key", s->concurrency_key ? s->concurrency_key : "", 1);
	FIELD(C_SOURCE, "source", s->source ? s->source : "", 1);
	FIELD(C_COMMAND, "command", s->command ? s->command : "", 1);
#undef FIELD
	if (was_enabled != s->enabled) {
		change(b, &n, "enabled", was_enabled ? "true" : "false",
		       s->enabled ? "true" : "false", 0);
		*retime |= s->enabled;
	}
	if (n)
		pd_buf_putc(b, ')');
	return n;
}

static int update(struct pd_db *db, const char *id, const struct pd_sched *s, int retime,
		  long long now, struct pd_err *e)
{
	static const char sql[] =
	    "UPDATE pendulum.cron_schedules SET cron = $2, timezone = $3, job_type = $4, "
	    "payload = $5::jsonb, queue = $6, priority = $7::integer, misfire_policy = $8, "
	    "catch_up_limit = $9::integer, enabled = $10::boolean, overlap = $11, "
	    "jitter_ms = $12::bigint, max_attempts = $13::integer, timeout = $14::interval, "
	    "concurrency_key = $16, source = $17, command = $18, "
	    "next_fire_at = CASE WHEN NOT $10::boolean THEN NULL "
	    "WHEN $15::timestamptz IS NOT NULL THEN $15::timestamptz ELSE next_fire_at END, "
	    "disabled_reason = CASE WHEN $10::boolean THEN NULL ELSE disabled_reason END, "
	    "updated_at = now() WHERE id = $1";
	struct def_params d;
	const char *params[18];
	char at[PD_INSTANT_MAX];
	long long next;

	def_params(s, &d);
	params[0] = id;
	memcpy(params + 1, d.p + 2, 13 * sizeof(*params));
	params[14] = NULL;
	params[15] = d.p[15];
	params[16] = d.p[16];
	params[17] = d.p[17];
	if (retime && s->enabled) {
		if (first_after(s->cron, s->timezone, now, &next, e) < 0)
			return -1;
		instant(next, at);
		params[14] = at;
	}
	return pd_db_exec(db, sql, 18, params, PGRES_COMMAND_OK, NULL, e);
}

/*
 * Stored row `row` of r is one of `types` ("crontab.SCOPE."): its type
 * begins with it, or it is a workflow schedule whose payload is
 * {"crontab": "SCOPE"} (a crontab's workflow= line, lib/crontab).
 */
static int of_types(PGresult *r, int row, const char *types)
{
	const char *type = PQgetvalue(r, row, C_TYPE), *dot = strchr(types, '.');
	struct pd_buf mark = PD_BUF_INIT;
	int yes;

	if (strncmp(type, types, strlen(types)) == 0)
		return 1;
	if (pd_sched_workflow(type) == NULL || dot == NULL)
		return 0;
	pd_buf_printf(&mark, "{\"crontab\": \"%.*s\"}", (int)(strlen(dot + 1) - 1), dot + 1);
	yes = strcmp(PQgetvalue(r, row, C_PAYLOAD), mark.data) == 0;
	pd_buf_release(&mark);
	return yes;
}

/*
 * Stored row `row` of r may be written by an entry of source (NULL: not a
 * crontab) whose file's types are `types`: it has no source and, when
 * source is given, is one of types (a crontab schedule stored before
 * sources were, adopted), or it has that very source. Else -1 with e
 * filled (code 1), naming the owner.
 */
static int owned(PGresult *r, int row, const struct pd_sched *s, const char *types,
		 struct pd_err *e)
{
	const char *had = PQgetvalue(r, row, C_SOURCE);
	char at[PD_SCHED_SOURCE_MAX + 32] = "";

	if (*had == '\0' && (s->source == NULL || (types && of_types(r, row, types))))
		return 0;
	if (s->source && strcmp(had, s->source) == 0)
		return 0;
	if (s->source)
		snprintf(at, sizeof(at), "%s:%d: ", s->source, s->line);
	if (*had)
		return pd_errf(e, PD_EX_CONFLICT,
			       "%sschedule '%s' belongs to %s: remove it there, or name this one "
			       "otherwise",
			       at, s->name, had);
	return pd_errf(e, PD_EX_CONFLICT,
		       "%sschedule '%s' (type '%s') belongs to no crontab (pd-cron add, or a "
		       "schedules file): remove it, or name this one otherwise",
		       at, s->name, PQgetvalue(r, row, C_TYPE));
}

/*
 * Cancel the waiting jobs (PENDING, BLOCKED) of deleted row `row` of r, a
 * crontab line's, with the jobs blocked on them (pd_jobs_cancel); their ids
 * appended to b as " (cancelled waiting jobs 7, 9)" (dry_run: " (would
 * cancel waiting jobs 7, 9)"). A held job runs on.
 */
static int cancel_waiting(struct pd_db *db, PGresult *r, int row, int dry_run, struct pd_buf *b,
			  struct pd_err *e)
{
	const char *params[2] = {PQgetvalue(r, row, C_TENANT), PQgetvalue(r, row, C_TYPE)};
	struct pd_buf why = PD_BUF_INIT;
	PGresult *ids, *c;
	int n, rc = 0;

	if (pd_db_exec(db,
		       "SELECT id FROM pendulum.jobs WHERE tenant_id = $1 AND job_type = $2 "
		       "AND state IN ('PENDING', 'BLOCKED') ORDER BY id FOR UPDATE",
		       2, params, PGRES_TUPLES_OK, &ids, e) < 0)
		return -1;
	n = PQntuples(ids);
	pd_buf_printf(&why, "schedule '%s' deleted from %s", PQgetvalue(r, row, C_NAME),
		      *PQgetvalue(r, row, C_SOURCE) ? PQgetvalue(r, row, C_SOURCE) : "its crontab");
	for (int i = 0; i < n && rc == 0; i++) {
		rc = pd_jobs_cancel(db, strtoll(PQgetvalue(ids, i, 0), NULL, 10), why.data, &c, e);
		if (rc == 0)
			PQclear(c);
		pd_buf_printf(b, "%s%s",
			      i		? ", "
			      : dry_run ? " (would cancel waiting jobs "
					: " (cancelled waiting jobs ",
			      PQgetvalue(ids, i, 0));
	}
	if (n)
		pd_buf_putc(b, ')');
	PQclear(ids);
	pd_buf_release(&why);
	return rc;
}

int pd_sched_apply(struct pd_db *db, const struct pd_sched *v, int n, const char *scope, int prune,
		   int dry_run, struct pd_buf *out, struct pd_apply_stats *st, struct pd_err *e)
{
	return pd_sched_apply_types(db, v, n, scope, NULL, NULL, prune, dry_run, out, st, e);
}

int pd_sched_apply_types(struct pd_db *db, const struct pd_sched *v, int n, const char *scope,
			 const char *types, const char *src, int prune, int dry_run,
			 struct pd_buf *out, struct pd_apply_stats *st, struct pd_err *e)
{
	const char *params[1] = {scope};
	struct pd_buf lines = PD_BUF_INIT, chg = PD_BUF_INIT;
	char **payloads = NULL;
	PGresult *r = NULL;
	char *seen = NULL;
	long long now, next;
	int rc = -1, rows;

	memset(st, 0, sizeof(*st));
	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		return -1;
	if (pd_db_exec(db, "SELECT pg_advisory_xact_lock(" APPLY_LOCK ")", 0, NULL, PGRES_TUPLES_OK,
		       NULL, e) < 0 ||
	    db_now(db, &now, e) < 0 || canonical_payloads(db, v, n, &payloads, e) < 0 ||
	    pd_db_exec(
		db,
		"SELECT id, tenant_id, name, cron, timezone, job_type, payload::text, queue, "
		"priority, misfire_policy, catch_up_limit, enabled, " APPLY_COLS
		" FROM pendulum.cron_schedules WHERE $1::text IS NULL OR tenant_id = $1 "
		"ORDER BY tenant_id, name FOR UPDATE",
		1, params, PGRES_TUPLES_OK, &r, e) < 0)
		goto out;
	rows = PQntuples(r);
	seen = pd_xcalloc((size_t)(rows ? rows : 1), 1);
	for (int i = 0; i < n; i++) {
		const struct pd_sched *s = &v[i];
		const char *tenant = or_default(s->tenant);
		int row = -1, retime = 0, ins;

		for (int k = 0; k < rows && row < 0; k++)
			if (strcmp(PQgetvalue(r, k, C_TENANT), tenant) == 0 &&
			    strcmp(PQgetvalue(r, k, C_NAME), s->name) == 0)
				row = k;
		if (row < 0) {
			if ((ins = insert(db, s, now, &next, e)) < 0)
				goto out;
			if (ins == 1) {
				pd_errf(e, PD_EX_CONFLICT,
					"schedule '%s' in tenant '%s' was created meanwhile",
					s->name, tenant);
				goto out;
			}
			pd_buf_puts(&lines, dry_run ? "would create " : "create ");
			label(&lines, tenant, s->name);
			pd_buf_putc(&lines, '\n');
			st->created++;
			continue;
		}
		seen[row] = 1;
		if (owned(r, row, s, types, e) < 0)
			goto out;
		pd_buf_reset(&chg);
		if (diff(s, payloads[i], r, row, &chg, &retime) == 0) {
			st->unchanged++;
			continue;
		}
		if (update(db, PQgetvalue(r, row, C_ID), s, retime, now, e) < 0)
			goto out;
		pd_buf_puts(&lines, dry_run ? "would update " : "update ");
		label(&lines, tenant, s->name);
		pd_buf_printf(&lines, "%s\n", chg.data);
		st->updated++;
	}
	for (int k = 0; prune && k < rows; k++) {
		const char *id[1] = {PQgetvalue(r, k, C_ID)}, *had = PQgetvalue(r, k, C_SOURCE);
		/* A crontab's (source) are its file's alone; its lines' jobs go with them. */
		int mine = *had ? src && strcmp(had, src) == 0 : !types || of_types(r, k, types);

		if (seen[k] || !mine)
			continue;
		if (pd_db_exec(db, "DELETE FROM pendulum.cron_schedules WHERE id = $1", 1, id,
			       PGRES_COMMAND_OK, NULL, e) < 0)
			goto out;
		pd_buf_puts(&lines, dry_run ? "would delete " : "delete ");
		label(&lines, PQgetvalue(r, k, C_TENANT), PQgetvalue(r, k, C_NAME));
		if (types && !pd_sched_workflow(PQgetvalue(r, k, C_TYPE)) &&
		    cancel_waiting(db, r, k, dry_run, &lines, e) < 0)
			goto out;
		pd_buf_putc(&lines, '\n');
		st->deleted++;
	}
	if (dry_run) {
		rollback(db);
		rc = 0;
	} else {
		rc = pd_db_exec_script(db, "COMMIT", e);
	}
	if (rc == 0 && lines.len)
		pd_buf_append(out, lines.data, lines.len);
out:
	/* Data the database refuses (a payload number jsonb cannot hold...) is 65
	 * (pd_db_exit_code). */
	if (rc < 0)
		rollback(db);
	if (r)
		PQclear(r);
	for (int i = 0; payloads && i < n; i++)
		free(payloads[i]);
	free(payloads);
	free(seen);
	pd_buf_release(&lines);
	pd_buf_release(&chg);
	return rc;
}
