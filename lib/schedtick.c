/*
 * schedtick: the tick of lib/sched (see the top of sched.h): every due
 * schedule in its own transaction, its occurrences enqueued, skipped or the
 * schedule disabled. Split from sched.c, which keeps the schedules' fields,
 * the statements of pd-cron's subcommands and apply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dur.h"
#include "log.h"
#include "sched.h"

/* Schedules fetched per round of a tick (and as text for the query). */
#define TICK_BATCH   100
#define TICK_BATCH_S "100"

/* ---- the ticker ---- */

/* Disable schedule id (in its own transaction) with the reason. */
static int disable(struct pd_db *db, const char *id, const char *reason, struct pd_err *e)
{
	const char *params[2] = {id, reason};

	return pd_db_exec(
	    db,
	    "UPDATE pendulum.cron_schedules SET enabled = false, next_fire_at = NULL, "
	    "disabled_reason = $2, updated_at = now() WHERE id = $1 AND enabled",
	    2, params, PGRES_COMMAND_OK, NULL, e);
}

static void log_disabled(const char *tenant, const char *name, const char *reason)
{
	char qn[160], qr[600];

	pd_log(PD_LOG_WARN, "schedule disabled: it can no longer be evaluated",
	       "tenant=%s schedule=%s reason=%s", pd_log_quote((char[160]){0}, 160, tenant),
	       pd_log_quote(qn, sizeof(qn), name), pd_log_quote(qr, sizeof(qr), reason));
}

/* The occurrence's key: cron:<id>:<instant, UTC, whole seconds>. */
#define OCCURRENCE_KEY                                                                             \
	"'cron:' || s.id || ':' || to_char(to_timestamp(u.t) AT TIME ZONE 'UTC', "                 \
	"'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/*
 * Enqueue the occurrences d->at of schedule id (named tenant/name, with its
 * overlap and jitter) through pendulum.cron_enqueue (a job, or a workflow
 * run's job) and record each in pendulum.cron_fires; add the
 * counts to st. In the caller's transaction, which holds the schedule's
 * row. With overlap skip, none fires while an earlier job of the schedule
 * is active, and at most the first fires otherwise: it is the active job
 * of the ones after it. The others are recorded as skipped.
 */
static int enqueue_due(struct pd_db *db, const char *id, const char *tenant, const char *name,
		       enum pd_overlap ov, long long jitter_ms, const struct pd_due *d,
		       struct pd_tick_stats *st, struct pd_err *e)
{
	struct pd_buf fire = PD_BUF_INIT, skip = PD_BUF_INIT;
	const char *params[5] = {id, NULL, NULL, NULL, NULL};
	char offset[24], *busy = NULL;
	int nfire = d->n, rc = -1, skipped;
	PGresult *r;

	if (ov == PD_OVERLAP_SKIP) {
		if (pd_db_value(db, "SELECT pendulum.cron_busy_job($1::bigint)", 1, params, &busy,
				e) < 0)
			return -1;
		nfire = busy ? 0 : 1;
	}
	pd_db_id_array(&fire, d->at, nfire);
	pd_db_id_array(&skip, d->at + nfire, d->n - nfire);
	snprintf(offset, sizeof(offset), "%lld", pd_sched_jitter_offset(tenant, name, jitter_ms));
	params[1] = fire.data;
	params[2] = offset;
	params[3] = busy;
	params[4] = skip.data;
	if (pd_db_exec(
		db,
		"WITH j AS (SELECT u.t, e.id, e.created, s.tenant_id FROM pendulum.cron_schedules "
		"s "
		"CROSS JOIN LATERAL unnest($2::bigint[]) AS u(t) "
		"CROSS JOIN LATERAL pendulum.cron_enqueue(s.id, "
		"to_timestamp(u.t) + $3::bigint * interval '1 millisecond', " OCCURRENCE_KEY
		") AS e WHERE s.id = $1), "
		"f AS (INSERT INTO pendulum.cron_fires (schedule_id, tenant_id, fire_at, kind, "
		"job_id) "
		"SELECT $1, j.tenant_id, to_timestamp(j.t), 'fired', j.id FROM j "
		"ON CONFLICT (schedule_id, fire_at) WHERE kind <> 'triggered' DO NOTHING), "
		"k AS (INSERT INTO pendulum.cron_fires (schedule_id, tenant_id, fire_at, kind, "
		"busy_job_id) "
		"SELECT $1, (SELECT s.tenant_id FROM pendulum.cron_schedules s WHERE s.id = $1), "
		"to_timestamp(x.t), 'skipped', "
		"COALESCE($4::bigint, (SELECT min(j.id) FROM j)) FROM unnest($5::bigint[]) AS x(t) "
		"ON CONFLICT (schedule_id, fire_at) WHERE kind <> 'triggered' DO NOTHING "
		"RETURNING 1) "
		"SELECT count(*) FILTER (WHERE j.created), count(*) FILTER (WHERE NOT j.created), "
		"(SELECT count(*) FROM k) FROM j",
		5, params, PGRES_TUPLES_OK, &r, e) < 0)
		goto out;
	st->enqueued += atoi(PQgetvalue(r, 0, 0));
	st->existing += atoi(PQgetvalue(r, 0, 1));
	skipped = atoi(PQgetvalue(r, 0, 2));
	st->skipped += skipped;
	PQclear(r);
	/* Bound the skipped rows: the latest 100 of the schedule stay. */
	rc =
	    skipped > 0
		? pd_db_exec(
		      db,
		      "DELETE FROM pendulum.cron_fires WHERE schedule_id = $1 "
		      "AND kind = 'skipped' AND fire_at < (SELECT fire_at FROM pendulum.cron_fires "
		      "WHERE schedule_id = $1 AND kind = 'skipped' "
		      "ORDER BY fire_at DESC, id DESC OFFSET 99 LIMIT 1)",
		      1, params, PGRES_COMMAND_OK, NULL, e)
		: 0;
out:
	pd_buf_release(&fire);
	pd_buf_release(&skip);
	free(busy);
	return rc;
}

/*
 * One due schedule, in its own transaction. Returns 0 (done, or taken by
 * another ticker, or disabled), -1 on a database error (rolled back).
 */
static int tick_one(struct pd_db *db, const char *id, long long grace, struct pd_tick_stats *st,
		    struct pd_err *e)
{
	struct pd_err ignore = PD_ERR_INIT;
	const char *params[3] = {id, NULL, NULL};
	char tenant[256], name[256], cron[512], zone[256], last[PD_INSTANT_MAX],
	    next[PD_INSTANT_MAX];
	struct pd_err ce = PD_ERR_INIT;
	struct pd_due d = {0};
	enum pd_misfire m = PD_MISFIRE_FIRE_ONCE;
	enum pd_overlap ov = PD_OVERLAP_ALLOW;
	struct pd_cron c;
	long long after, now, jitter;
	int limit, before = st->enqueued, skipped = st->skipped;
	PGresult *r;

	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		return -1;
	if (pd_db_exec(db,
		       "SELECT tenant_id, name, cron, timezone, misfire_policy, catch_up_limit, "
		       "GREATEST(floor(extract(epoch FROM last_fired_at)), "
		       "ceil(extract(epoch FROM next_fire_at)) - 1)::bigint, "
		       "floor(extract(epoch FROM now()))::bigint, overlap, jitter_ms "
		       "FROM pendulum.cron_schedules WHERE id = $1 AND enabled "
		       "AND next_fire_at <= now() FOR UPDATE SKIP LOCKED",
		       1, params, PGRES_TUPLES_OK, &r, e) < 0)
		goto fail;
	if (PQntuples(r) != 1) { /* another ticker has it, or it is no longer due */
		PQclear(r);
		return pd_db_exec_script(db, "COMMIT", e);
	}
	snprintf(tenant, sizeof(tenant), "%s", PQgetvalue(r, 0, 0));
	snprintf(name, sizeof(name), "%s", PQgetvalue(r, 0, 1));
	snprintf(cron, sizeof(cron), "%s", PQgetvalue(r, 0, 2));
	snprintf(zone, sizeof(zone), "%s", PQgetvalue(r, 0, 3));
	pd_misfire_parse(PQgetvalue(r, 0, 4), &m, &ce);
	limit = atoi(PQgetvalue(r, 0, 5));
	after = strtoll(PQgetvalue(r, 0, 6), NULL, 10);
	now = strtoll(PQgetvalue(r, 0, 7), NULL, 10);
	pd_overlap_parse(PQgetvalue(r, 0, 8), &ov, &ce);
	jitter = strtoll(PQgetvalue(r, 0, 9), NULL, 10);
	PQclear(r);
	pd_err_clear(&ce);
	if (pd_cron_parse(&c, cron, &ce) < 0 || pd_tz_check(zone, &ce) < 0 ||
	    pd_sched_due(&c, zone, after, now, m, limit, grace, &d, &ce) < 0) {
		if (ce.code != PD_EX_DATAERR) { /* an unreadable zone file: try again later */
			pd_db_exec_script(db, "ROLLBACK", &ignore);
			return pd_errf(e, ce.code, "schedule '%s': %s", name, ce.msg);
		}
		if (disable(db, id, ce.msg, e) < 0 || pd_db_exec_script(db, "COMMIT", e) < 0)
			goto fail;
		log_disabled(tenant, name, ce.msg);
		st->disabled++;
		return 0;
	}
	if (d.n > 0 && enqueue_due(db, id, tenant, name, ov, jitter, &d, st, e) < 0) {
		pd_db_exec_script(db, "ROLLBACK", &ignore);
		/* Data the database refuses for a job (class 22, 23) will not get better. */
		if (pd_db_exit_code(e->sqlstate) == PD_EX_DATAERR) {
			char reason[sizeof(e->msg) + 32];

			snprintf(reason, sizeof(reason), "cannot enqueue its jobs: %s", e->msg);
			pd_err_clear(e);
			if (disable(db, id, reason, e) < 0)
				goto out;
			log_disabled(tenant, name, reason);
			st->disabled++;
			pd_due_release(&d);
			return 0;
		}
		goto out;
	}
	/* Progress after the jobs: a ticker dying in between re-fires into the unique key. */
	if (d.n > 0)
		pd_instant_format(d.at[d.n - 1] * 1000000LL, last, PD_INSTANT_MAX);
	pd_instant_format(d.next * 1000000LL, next, PD_INSTANT_MAX);
	params[1] = d.n > 0 ? last : NULL;
	params[2] = next;
	if (pd_db_exec(db,
		       "UPDATE pendulum.cron_schedules SET last_fired_at = "
		       "COALESCE($2::timestamptz, last_fired_at), next_fire_at = $3::timestamptz "
		       "WHERE id = $1",
		       3, params, PGRES_COMMAND_OK, NULL, e) < 0 ||
	    pd_db_exec_script(db, "COMMIT", e) < 0)
		goto fail;
	st->schedules++;
	if (d.dropped)
		st->dropped++;
	if (d.n > 0)
		pd_log(PD_LOG_INFO, "schedule fired",
		       "tenant=%s schedule=%s occurrences=%d new=%d skipped=%d latest=%s "
		       "dropped_older=%s",
		       pd_log_quote((char[300]){0}, 300, tenant),
		       pd_log_quote((char[300]){0}, 300, name), d.n, st->enqueued - before,
		       st->skipped - skipped, last, d.dropped ? "yes" : "no");
	else if (d.dropped)
		pd_log(PD_LOG_INFO, "missed occurrences skipped", "tenant=%s schedule=%s policy=%s",
		       pd_log_quote((char[300]){0}, 300, tenant),
		       pd_log_quote((char[300]){0}, 300, name), pd_misfire_name(m));
	pd_due_release(&d);
	return 0;
fail:
	pd_db_exec_script(db, "ROLLBACK", &ignore);
out:
	pd_due_release(&d);
	return -1;
}

int pd_sched_tick(struct pd_db *db, long long grace, struct pd_tick_stats *st, struct pd_err *e)
{
	memset(st, 0, sizeof(*st));
	for (;;) {
		PGresult *r;
		int n, progress = 0;
		char **ids;

		if (pd_db_exec(
			db,
			"SELECT id FROM pendulum.cron_schedules WHERE enabled AND "
			"next_fire_at <= now() ORDER BY next_fire_at, id LIMIT " TICK_BATCH_S,
			0, NULL, PGRES_TUPLES_OK, &r, e) < 0)
			return -1;
		n = PQntuples(r);
		ids = pd_xcalloc((size_t)(n ? n : 1), sizeof(*ids));
		for (int i = 0; i < n; i++)
			ids[i] = pd_xstrdup(PQgetvalue(r, i, 0));
		PQclear(r);
		for (int i = 0; i < n; i++) {
			struct pd_err one = PD_ERR_INIT;
			int handled = st->schedules + st->disabled;

			if (tick_one(db, ids[i], grace, st, &one) < 0) {
				if (one.code == PD_EX_UNAVAILABLE) {
					for (int k = 0; k < n; k++)
						free(ids[k]);
					free(ids);
					return pd_errf(e, one.code, "%s", one.msg);
				}
				st->failed++;
				pd_log(PD_LOG_ERROR, "schedule left for the next tick",
				       "id=%s error=%s", ids[i],
				       pd_log_quote((char[600]){0}, 600, one.msg));
			}
			progress |= st->schedules + st->disabled > handled;
		}
		for (int k = 0; k < n; k++)
			free(ids[k]);
		free(ids);
		/* A full batch may hide more; stop when nothing moved (others hold them). */
		if (n < TICK_BATCH || !progress)
			return 0;
	}
}
