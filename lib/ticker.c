#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon.h"
#include "elect.h"
#include "log.h"
#include "ticker.h"

/* The role's name in pendulum.leaders. */
#define ROLE "ticker"

/*
 * The ms until the earliest fire (<= 0: due; NULL: no schedule enabled),
 * asked in the election's statement: one round trip a step. The first
 * entry of cron_schedules_due_idx.
 */
#define NEXT_SQL                                                                                   \
	"ceil(extract(epoch FROM (SELECT min(next_fire_at) FROM pendulum.cron_schedules"           \
	" WHERE enabled) - now()) * 1000)::bigint"

/* Where a ticker stands in the election. */
enum role {
	ROLE_NONE,    /* not asked yet (since start or a reconnect) */
	ROLE_STANDBY, /* another ticker holds the role */
	ROLE_ACTIVE,  /* this ticker holds it: it ticks */
};

struct ticker {
	const struct pd_ticker_cfg *cfg;
	struct pd_tick_stats *st; /* summed over the ticks */
	struct pd_daemon d;
	struct pd_ticker_lead lead;
	long long last_step; /* pd_now_ms of the last step's start */
};

void pd_ticker_cfg_init(struct pd_ticker_cfg *t)
{
	memset(t, 0, sizeof(*t));
	t->interval_ms = 1000;
	t->grace_ms = 60000;
	t->lease_ms = PD_TICKER_LEASE_MS;
}

static void add_stats(struct pd_tick_stats *sum, const struct pd_tick_stats *one)
{
	sum->schedules += one->schedules;
	sum->enqueued += one->enqueued;
	sum->existing += one->existing;
	sum->dropped += one->dropped;
	sum->disabled += one->disabled;
	sum->failed += one->failed;
}

/*
 * Stand for the role (pd_elect_hold: take, renew, or find another holding
 * it) and learn in the same statement when the next schedule fires
 * (*fire_ms, -1: none); log each move into ACTIVE or STANDBY. -1 with e
 * filled on a database error.
 */
static int elect(struct pd_ticker_lead *t, struct pd_db *db, long long *fire_ms, struct pd_err *e)
{
	char *next = NULL;
	int held;

	if (pd_elect_hold(db, ROLE, t->holder, t->lease_ms, NEXT_SQL, &held, &next, e) < 0)
		return -1;
	*fire_ms = next ? strtoll(next, NULL, 10) : -1;
	if (*fire_ms < -1)
		*fire_ms = 0;
	free(next);
	if (held && t->role != ROLE_ACTIVE)
		pd_log(PD_LOG_INFO, "ticker active: holding the ticker role", "lease_ms=%lld",
		       t->lease_ms);
	else if (!held && t->role == ROLE_ACTIVE)
		pd_log(PD_LOG_WARN, "ticker role lost: another ticker holds it, on standby", NULL);
	else if (!held && t->role == ROLE_NONE)
		pd_log(PD_LOG_INFO, "ticker on standby: another ticker holds the role", NULL);
	t->role = held ? ROLE_ACTIVE : ROLE_STANDBY;
	return 0;
}

void pd_ticker_lead_init(struct pd_ticker_lead *l, const char *holder, long long lease_ms)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->holder, sizeof(l->holder), "%s", holder);
	l->lease_ms = lease_ms;
	l->role = ROLE_NONE;
}

void pd_ticker_lead_reset(struct pd_ticker_lead *l)
{
	if (l->role == ROLE_STANDBY)
		l->role =
		    ROLE_NONE; /* the next standby is logged again; an ACTIVE one's loss too */
}

/* Give the role up if held (a clean stop); errors are ignored (it then expires). */
static void pd_ticker_lead_release(struct pd_ticker_lead *l, struct pd_db *db)
{
	struct pd_err e = PD_ERR_INIT;

	if (l->role == ROLE_ACTIVE && pd_elect_release(db, ROLE, l->holder, &e) == 0)
		pd_log(PD_LOG_INFO, "ticker role released", NULL);
	l->role = ROLE_NONE;
	pd_err_clear(&e);
}

int pd_ticker_step(struct pd_ticker_lead *l, struct pd_db *db, long long grace_ms,
		   long long interval_ms, struct pd_tick_stats *st, long long *next_ms,
		   struct pd_err *e)
{
	long long fire_ms;

	memset(st, 0, sizeof(*st));
	*next_ms = l->lease_ms / 3; /* renew, or look for an expired holder */
	if (elect(l, db, &fire_ms, e) < 0)
		return -1;
	if (l->role != ROLE_ACTIVE)
		return 0;
	if (fire_ms == 0) {
		if (interval_ms < *next_ms)
			*next_ms = interval_ms; /* what fires next is known at the next step */
		return pd_sched_tick(db, grace_ms / 1000, st, e);
	}
	if (fire_ms > 0 && fire_ms < *next_ms)
		*next_ms = fire_ms;
	return 0;
}

/* After a reconnect: the role is in the database, held until it expires; log the next standing. */
static int on_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	struct ticker *t = d->ctx;

	(void)e;
	if (first)
		pd_ticker_lead_init(&t->lead, d->id, t->cfg->lease_ms);
	else
		pd_ticker_lead_reset(&t->lead);
	return 0;
}

/* A step: the first at once after each connect, then when pd_ticker_step says. */
static int on_period(struct pd_daemon *d, struct pd_err *e)
{
	struct ticker *t = d->ctx;
	struct pd_tick_stats one;
	long long next_ms;

	d->wake = 0;
	t->last_step = pd_now_ms();
	if (pd_ticker_step(&t->lead, d->db, t->cfg->grace_ms, t->cfg->interval_ms, &one, &next_ms,
			   e) < 0)
		return pd_daemon_db_failed(d, e); /* lost: reconnect, stand again */
	add_stats(t->st, &one);
	d->next_period = pd_now_ms() + next_ms;
	return 0;
}

/*
 * A schedule changed (pendulum_cron), a holder resigned (pendulum_leaders;
 * both sql/016), or the link came back: step now, an interval after the
 * last step at the soonest.
 */
static int on_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct ticker *t = d->ctx;
	long long gap =
	    t->cfg->interval_ms < t->cfg->lease_ms / 3 ? t->cfg->interval_ms : t->cfg->lease_ms / 3;
	long long soon = t->last_step + gap;

	(void)e;
	if (d->wake) {
		d->wake = 0;
		d->next_period = pd_deadline_min(d->next_period, soon > now ? soon : now);
	}
	return 0;
}

/* SIGHUP's apply step: the ticker takes nothing from the file (the program its log level). */
static int reload_apply(void *arg, const struct pd_config *c, struct pd_buf *summary,
			struct pd_err *e)
{
	(void)arg;
	(void)c;
	(void)e;
	pd_buf_printf(summary, "schedules=database");
	return 0;
}

static void on_reload(struct pd_daemon *d)
{
	struct ticker *t = d->ctx;

	pd_reload(&t->cfg->source, "ticker", reload_apply, t);
}

/* No finished hook: without a pool the loop ends at the first stop signal. */
static const char *const ticker_channels[] = {"pendulum_cron", "pendulum_leaders", NULL};

static const struct pd_daemon_ops ticker_ops = {.kind = {"ticker", ticker_channels},
						.on_connect = on_connect,
						.on_tick = on_tick,
						.on_period = on_period,
						.on_reload = on_reload};

int pd_ticker_run(const struct pd_ticker_cfg *cfg, struct pd_db *db, struct pd_tick_stats *st,
		  struct pd_err *e)
{
	struct ticker t = {.cfg = cfg, .st = st};
	int rc;

	memset(st, 0, sizeof(*st));
	if (cfg->once)
		return pd_sched_tick(db, cfg->grace_ms / 1000, st, e);
	pd_daemon_init(&t.d, &ticker_ops, db, &t, NULL, NULL);
	t.d.period_ms = cfg->interval_ms;
	rc = pd_daemon_open(&t.d, e);
	if (rc == 0) {
		pd_log(PD_LOG_INFO, "ticker started",
		       "interval_ms=%lld skip_grace_ms=%lld lease_ms=%lld", cfg->interval_ms,
		       cfg->grace_ms, cfg->lease_ms);
		rc = pd_daemon_run(&t.d, e);
		if (pd_daemon_up(&t.d))
			pd_ticker_lead_release(&t.lead, db);
		pd_log(PD_LOG_INFO, "ticker stopped", NULL);
	}
	pd_daemon_close(&t.d);
	return rc;
}
