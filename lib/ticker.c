#include <string.h>

#include "daemon.h"
#include "log.h"
#include "ticker.h"

/* Where a ticker stands in the election. */
enum role {
	ROLE_NONE,    /* not asked in this session yet: the lock is not held */
	ROLE_STANDBY, /* another session holds the ticker lock */
	ROLE_ACTIVE,  /* this session holds it: this ticker ticks */
};

struct ticker {
	const struct pd_ticker_cfg *cfg;
	struct pd_tick_stats *st; /* summed over the ticks */
	struct pd_daemon d;
	struct pd_ticker_lead lead;
};

void pd_ticker_cfg_init(struct pd_ticker_cfg *t)
{
	memset(t, 0, sizeof(*t));
	t->interval_ms = 1000;
	t->grace_ms = 60000;
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
 * Try to take the ticker lock unless this session holds it; log each move
 * into ACTIVE or STANDBY. -1 with e filled on a database error.
 */
static int elect(struct pd_ticker_lead *t, struct pd_db *db, struct pd_err *e)
{
	int got;

	switch ((enum role)t->role) {
	case ROLE_ACTIVE:
		return 0; /* held for as long as the session lasts */
	case ROLE_NONE:
	case ROLE_STANDBY:
		if ((got = pd_sched_try_lead(db, e)) < 0)
			return -1;
		if (got) {
			t->role = ROLE_ACTIVE;
			pd_log(PD_LOG_INFO, "ticker active: holding the ticker lock", NULL);
		} else if (t->role == ROLE_NONE) {
			t->role = ROLE_STANDBY;
			pd_log(PD_LOG_INFO, "ticker on standby: another ticker holds the lock",
			       NULL);
		}
		return 0;
	}
	return 0;
}

void pd_ticker_lead_reset(struct pd_ticker_lead *l)
{
	l->role = ROLE_NONE;
}

int pd_ticker_step(struct pd_ticker_lead *l, struct pd_db *db, long long grace_ms,
		   struct pd_tick_stats *st, struct pd_err *e)
{
	memset(st, 0, sizeof(*st));
	if (elect(l, db, e) < 0)
		return -1;
	if (l->role == ROLE_ACTIVE)
		return pd_sched_tick(db, grace_ms / 1000, st, e);
	return 0;
}

/* A new session holds no lock: stand for election again (the daemon ticks at once). */
static int on_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	struct ticker *t = d->ctx;

	(void)first;
	(void)e;
	pd_ticker_lead_reset(&t->lead);
	return 0;
}

/* A tick: every interval while connected, the first at once. */
static int on_period(struct pd_daemon *d, struct pd_err *e)
{
	struct ticker *t = d->ctx;
	struct pd_tick_stats one;

	if (pd_ticker_step(&t->lead, d->db, t->cfg->grace_ms, &one, e) < 0)
		return pd_daemon_db_failed(d, e); /* lost: reconnect, stand again */
	add_stats(t->st, &one);
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
static const struct pd_daemon_ops ticker_ops = {
    .kind = {"ticker"}, .on_connect = on_connect, .on_period = on_period, .on_reload = on_reload};

int pd_ticker_run(const struct pd_ticker_cfg *cfg, struct pd_db *db, struct pd_tick_stats *st,
		  struct pd_err *e)
{
	struct ticker t = {.cfg = cfg, .st = st, .lead = {ROLE_NONE}};
	int rc;

	memset(st, 0, sizeof(*st));
	if (cfg->once)
		return pd_sched_tick(db, cfg->grace_ms / 1000, st, e);
	pd_daemon_init(&t.d, &ticker_ops, db, &t, NULL, NULL);
	t.d.period_ms = cfg->interval_ms;
	rc = pd_daemon_open(&t.d, e);
	if (rc == 0) {
		pd_log(PD_LOG_INFO, "ticker started", "interval_ms=%lld skip_grace_ms=%lld",
		       cfg->interval_ms, cfg->grace_ms);
		rc = pd_daemon_run(&t.d, e);
		pd_log(PD_LOG_INFO, "ticker stopped", NULL);
	}
	pd_daemon_close(&t.d);
	return rc;
}
