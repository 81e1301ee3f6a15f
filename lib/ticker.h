/*
 * ticker: the engine of `pd-cron run`. Turns the due occurrences of the
 * stored schedules into jobs (pd_sched_tick, lib/sched) every interval, on
 * the daemon loop (lib/daemon) like the worker and the relay: SIGTERM or
 * SIGINT ends it after the tick in progress, SIGHUP reads the config file
 * again (lib/reload: its log level; a file that does not parse is logged
 * and the old one kept) — the schedules themselves are read from the
 * database at every tick, so they need no reload — and a lost database is
 * reconnected with backoff.
 *
 * Several tickers may run against one database: each tick, a ticker that
 * is not active tries to take the ticker lock (pd_sched_try_lead, a session
 * advisory lock) and only the one holding it ticks; the others stand by.
 * The lock goes with the session, so after a reconnect the ticker stands
 * by until it takes the lock again. The election saves load and nothing
 * else: the idempotency key of each occurrence keeps two tickers from
 * making two jobs of it.
 *
 * Ticks start interval apart on the monotonic clock (an absolute deadline
 * from the start of the previous one).
 */
#ifndef PD_TICKER_H
#define PD_TICKER_H

#include "db.h"
#include "reload.h"
#include "sched.h"

/* What a ticker does. */
struct pd_ticker_cfg {
	long long interval_ms;		/* between the starts of two ticks; > 0 */
	long long grace_ms;		/* SKIP fires an occurrence at most this late */
	int once;			/* one tick on the connection given: no election, no loop */
	struct pd_config_source source; /* where SIGHUP reads the file; load NULL: none */
};

/* The defaults: a tick a second, a grace of 60 s, a daemon. */
void pd_ticker_cfg_init(struct pd_ticker_cfg *t);

/*
 * Run on db (connected). With once: one tick, outside the election (safe
 * next to a running daemon), no signal handling, no reconnect; *st says
 * what it did, st->failed counting the schedules left for the next tick
 * (the caller decides whether that is an error); a lost database is an
 * error (69). Otherwise: ticks every interval while holding the ticker
 * lock, until SIGTERM or SIGINT, reconnecting when the database goes away;
 * only a database error other than a lost connection (70) ends it early;
 * *st sums the ticks. Returns 0, or -1 with e filled.
 */
int pd_ticker_run(const struct pd_ticker_cfg *t, struct pd_db *db, struct pd_tick_stats *st,
		  struct pd_err *e);

/*
 * The election and one tick, for an engine that ticks inside its own loop
 * (pd-worker --crontab): where this session stands in the election.
 */
struct pd_ticker_lead {
	int role;
};

/* A new session holds no lock: stand for election again. */
void pd_ticker_lead_reset(struct pd_ticker_lead *l);

/*
 * Try to take the ticker lock unless held, and tick (pd_sched_tick) when
 * held; *st says what the tick did (zeros on standby). -1 with e filled on
 * a database error (the caller reconnects and resets l).
 */
int pd_ticker_step(struct pd_ticker_lead *l, struct pd_db *db, long long grace_ms,
		   struct pd_tick_stats *st, struct pd_err *e);

#endif
