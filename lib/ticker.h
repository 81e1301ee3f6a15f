/*
 * ticker: the engine of `pd-cron run`. Turns the due occurrences of the
 * stored schedules into jobs (pd_sched_tick, lib/sched), on the daemon loop
 * (lib/daemon) like the worker and the relay: SIGTERM or SIGINT ends it
 * after the step in progress, SIGHUP reads the config file again
 * (lib/reload: its log level; a file that does not parse is logged and the
 * old one kept) — the schedules themselves are read from the database at
 * every step, so they need no reload — and a lost database is reconnected
 * with backoff.
 *
 * Several tickers may run against one database: only the one holding the
 * ticker role ticks, the others stand by. The role is held like a lease
 * (lib/elect: a row of pendulum.leaders, on the database's clock). A step
 * is one statement that takes a free or expired role, renews the role held
 * (once a third of the lease has passed), and says when the next schedule
 * fires; the holder then ticks if one is due, a ticker that finds it does
 * not hold the role does nothing. A holder that stops stepping (killed,
 * SIGSTOPped, cut off) loses the role when its lease expires, and a
 * standby takes it at its next step: within a lease and a third. A clean
 * stop gives the role up at once, and the standbys (listening on
 * pendulum_leaders) take it. The election saves load and nothing else: the
 * idempotency key of each occurrence keeps two tickers (a frozen one that
 * wakes in the middle of a tick) from making two jobs of it.
 *
 * A ticker steps at the next fire and at least every third of the lease;
 * it listens on pendulum_cron, which a change of a schedule notifies
 * (sql/016), and steps at once then. Steps start at least interval apart
 * on the monotonic clock (or a third of the lease, if shorter). Idle cost: a statement every third
 * of the lease (3.3 s by default), active or on standby, and a few per fire.
 */
#ifndef PD_TICKER_H
#define PD_TICKER_H

#include "db.h"
#include "reload.h"
#include "sched.h"

/* What a ticker does. */
struct pd_ticker_cfg {
	long long interval_ms; /* between the starts of two steps at least (at most lease/3) */
	long long grace_ms;    /* SKIP fires an occurrence at most this late */
	long long lease_ms;    /* the ticker role's lease; > 0 */
	int once;	       /* one tick on the connection given: no election, no loop */
	struct pd_config_source source; /* where SIGHUP reads the file; load NULL: none */
};

/* The ticker role's default lease: a standby takes over at most this long after the last tick. */
#define PD_TICKER_LEASE_MS 10000

/* The defaults: a tick a second, a grace of 60 s, a lease of 10 s, a daemon. */
void pd_ticker_cfg_init(struct pd_ticker_cfg *t);

/*
 * Run on db (connected). With once: one tick, outside the election (safe
 * next to a running daemon), no signal handling, no reconnect; *st says
 * what it did, st->failed counting the schedules left for the next tick
 * (the caller decides whether that is an error); a lost database is an
 * error (69). Otherwise: ticks every interval while holding the ticker
 * role, until SIGTERM or SIGINT (then gives it up), reconnecting when the database goes away;
 * only a database error other than a lost connection (70) ends it early;
 * *st sums the ticks. Returns 0, or -1 with e filled.
 */
int pd_ticker_run(const struct pd_ticker_cfg *t, struct pd_db *db, struct pd_tick_stats *st,
		  struct pd_err *e);

/*
 * The election and one tick, for an engine that ticks inside its own loop
 * (pd-worker --crontab): where this ticker stands in the election.
 */
struct pd_ticker_lead {
	int role;
	char holder[128]; /* this ticker's name in pendulum.leaders: unique */
	long long lease_ms;
};

/* Not standing yet, as holder (unique among the tickers), with this lease. */
void pd_ticker_lead_init(struct pd_ticker_lead *l, const char *holder, long long lease_ms);

/* After a reconnect: the next standing is logged again. */
void pd_ticker_lead_reset(struct pd_ticker_lead *l);

/*
 * Stand for the role (take, renew, or find it held by another) and learn
 * when the next schedule fires, in one statement; tick (pd_sched_tick) when
 * held and a schedule is due. *st says what the tick did (zeros on
 * standby). *next_ms: when to step again: at the next fire (interval_ms
 * after a tick), at most a third of the lease on (to renew the role, or on
 * standby to find it expired). A schedule changed meanwhile by another
 * process is seen at the next step. -1 with e filled on a database error
 * (the caller reconnects and resets l).
 */
int pd_ticker_step(struct pd_ticker_lead *l, struct pd_db *db, long long grace_ms,
		   long long interval_ms, struct pd_tick_stats *st, long long *next_ms,
		   struct pd_err *e);

#endif
