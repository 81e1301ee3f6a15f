#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "reap.h"
#include "reaper.h"

struct reaper {
	const struct pd_reaper_cfg *cfg; /* the caller's, or own after a reload */
	struct pd_reaper_cfg *own;	 /* the settings of the last reload, or NULL */
	struct pd_reload_keep kept;	 /* the settings reloads replaced */
	struct pd_reaper_stats *st;
	struct pd_daemon d;
	long long next_prune;	  /* pd_now_ms: the next pass prunes from then on */
	struct pd_reap_lead lead; /* the reaper as a candidate for the role */
};

void pd_reaper_cfg_init(struct pd_reaper_cfg *r)
{
	memset(r, 0, sizeof(*r));
	r->interval_ms = -1;
}

void pd_reaper_settle(struct pd_reaper_cfg *r, const struct pd_config *cfg)
{
	if (r->interval_ms < 0)
		r->interval_ms = cfg->reaper.interval_ms;
	struct pd_buf b = PD_BUF_INIT;

	r->retention = cfg->retention;
	pd_hooks_json(&b, cfg->handlers, cfg->nhandlers, &cfg->hooks);
	r->hooks = b.len ? pd_buf_detach(&b) : NULL;
	pd_buf_release(&b);
}

void pd_reaper_cfg_release(struct pd_reaper_cfg *r)
{
	free(r->hooks);
	r->hooks = NULL;
}

static void cfg_free(void *p)
{
	pd_reaper_cfg_release(p);
}

/*
 * Pruning per pass: at most this many statements of PRUNE_BATCH rows, by
 * the settled retention (re-settled by a reload: it applies at the next
 * pass); the rest at the next pass. --once prunes everything due.
 */
#define PRUNE_BATCHES 20
#define PRUNE_BATCH   5000

/*
 * One reap pass, counted into st; it prunes when *next_prune (pd_now_ms)
 * has come, and sets it to now while rows are left, else
 * PD_REAP_PRUNE_EVERY_MS on. *next_ms as pd_reap_pass_prune sets it. -1
 * with e filled as pd_reap_pass_prune fills it.
 */
static int pass(struct pd_db *db, const struct pd_reaper_cfg *cfg, struct pd_reaper_stats *st,
		long long grace_ms, long long *next_prune, long long *next_ms, int *requeued,
		int *dead, struct pd_err *e)
{
	struct pd_prune_report p;
	long long now = pd_now_ms();
	int due = !cfg->once && now >= *next_prune;
	int rc =
	    pd_reap_pass_prune(db, &cfg->retention, cfg->hooks, grace_ms, due ? PRUNE_BATCHES : 0,
			       PRUNE_BATCH, next_ms, requeued, dead, &p, e);

	if (rc == 0 && due)
		*next_prune = now + (p.more ? 0 : PD_REAP_PRUNE_EVERY_MS);

	if (rc == 0 && cfg->once) {
		/* --once: every batch due, however many. */
		struct pd_prune_opts o = {.batch = PRUNE_BATCH};

		rc = pd_prune(db, &cfg->retention, &o, &p, e);
	}
	for (int k = 0; k < PD_PRUNE_NKINDS; k++)
		st->pruned += p.rows[k];
	if (rc < 0)
		return -1;
	st->passes++;
	st->requeued += *requeued;
	st->dead += *dead;
	return 0;
}

/*
 * The pass while this reaper holds the role (pd_reap_pass_fn): due again an
 * interval on, or sooner when a lease expires sooner (a little after, so
 * that it has), or rows are left to prune.
 */
static int held_pass(void *ctx, long long grace_ms, long long *due_ms, struct pd_err *e)
{
	struct reaper *r = ctx;
	long long now = pd_now_ms(), next_ms;
	int requeued, dead;

	if (pass(r->d.db, r->cfg, r->st, grace_ms, &r->next_prune, &next_ms, &requeued, &dead, e) <
	    0)
		return -1;
	if (requeued || dead)
		pd_log(PD_LOG_INFO, "expired leases given back", "requeued=%d dead=%d", requeued,
		       dead);
	*due_ms = r->cfg->interval_ms;
	if (next_ms >= 0 && next_ms + 10 < *due_ms)
		*due_ms = next_ms + 10;
	if (r->next_prune <= now + *due_ms)
		*due_ms = r->next_prune > now + 100 ? r->next_prune - now : 100;
	return 0;
}

/*
 * A turn (pd_reap_turn: the pass when this reaper holds the role, else
 * standing by): at once after each (re)connect, then when the turn says
 * (the holder: an interval later at the latest; a standby: when the
 * holder's role or a job lease expires).
 */
static int on_period(struct pd_daemon *d, struct pd_err *e)
{
	struct reaper *r = d->ctx;
	long long next_ms;

	d->wake = 0;
	r->lead.lease_ms = PD_REAPER_ROLE_LEASES * r->cfg->interval_ms;
	if (pd_reap_turn(&r->lead, d->db, held_pass, r, &next_ms, e) < 0)
		return pd_daemon_db_failed(d, e); /* lost: reconnect and pass again */
	d->next_period = pd_now_ms() + next_ms;	  /* a standby's may be past the interval */
	return 0;
}

/* After a reconnect: stand again (the role is in the database, held until it expires). */
static int on_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	struct reaper *r = d->ctx;

	(void)e;
	if (first)
		pd_reap_lead_init(&r->lead, d->id, PD_REAPER_ROLE_LEASES * r->cfg->interval_ms);
	else
		pd_reap_lead_reset(&r->lead);
	return 0;
}

/* A holder resigned (pendulum_leaders, payload the role): the turn is due now. */
static int on_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	(void)e;
	if (d->wake) {
		d->wake = 0;
		d->next_period = pd_deadline_min(d->next_period, now);
	}
	return 0;
}

static int on_notify(struct pd_daemon *d, const char *channel, const char *payload)
{
	(void)d;
	return strcmp(channel, "pendulum_leaders") == 0 && payload &&
	       strcmp(payload, PD_REAP_ROLE) == 0;
}

/* SIGHUP's apply step (lib/reload): the flags over the new file, then move onto them. */
static int reload_apply(void *arg, const struct pd_config *c, struct pd_buf *summary,
			struct pd_err *e)
{
	struct reaper *r = arg;
	struct pd_reaper_cfg *next = pd_xmalloc(sizeof(*next));
	long long soon;

	(void)e;
	*next = *r->cfg->flags;
	next->flags = r->cfg->flags;
	next->source = r->cfg->source;
	pd_reaper_settle(next, c);
	if (r->own)
		pd_reload_keep(&r->kept, r->own);
	r->own = next;
	r->cfg = next;
	/* The next pass an interval after the last one started, at the latest. */
	soon = r->d.next_period - r->d.period_ms + next->interval_ms;
	r->d.period_ms = next->interval_ms;
	if (soon < r->d.next_period)
		r->d.next_period = soon;
	if (soon < r->lead.pass_at)
		r->lead.pass_at = soon; /* the holder's pass too */
	pd_buf_printf(summary, "interval_ms=%lld", next->interval_ms);
	return 0;
}

static void on_reload(struct pd_daemon *d)
{
	struct reaper *r = d->ctx;

	/* an engine started without its flags kept has nothing to settle a file over */
	pd_reload(r->cfg->flags ? &r->cfg->source : NULL, "reaper", reload_apply, r);
}

/* No finished hook: without a pool the loop ends at the first stop signal. */
static const char *const reaper_channels[] = {"pendulum_leaders", NULL};

static const struct pd_daemon_ops reaper_ops = {.kind = {"reaper", reaper_channels},
						.on_connect = on_connect,
						.on_tick = on_tick,
						.on_notify = on_notify,
						.on_period = on_period,
						.on_reload = on_reload};

int pd_reaper_run(const struct pd_reaper_cfg *cfg, struct pd_db *db, struct pd_reaper_stats *st,
		  struct pd_err *e)
{
	struct reaper r = {.cfg = cfg, .st = st};
	int rc, requeued, dead;
	long long next_ms;

	memset(st, 0, sizeof(*st));
	if (cfg->once) /* an operator's pass: no election, every expired lease */
		return pass(db, cfg, st, 0, &r.next_prune, &next_ms, &requeued, &dead, e);
	pd_daemon_init(&r.d, &reaper_ops, db, &r, NULL, NULL);
	r.d.period_ms = cfg->interval_ms;
	rc = pd_daemon_open(&r.d, e);
	if (rc == 0) {
		pd_log(PD_LOG_INFO, "reaper started", "interval_ms=%lld", cfg->interval_ms);
		rc = pd_daemon_run(&r.d, e);
		if (pd_daemon_up(&r.d))
			pd_reap_lead_release(&r.lead, db);
		pd_log(PD_LOG_INFO, "reaper stopped", NULL);
	}
	pd_daemon_close(&r.d);
	if (r.own)
		pd_reaper_cfg_release(r.own);
	free(r.own);
	pd_reload_keep_release(&r.kept, cfg_free);
	return rc;
}
