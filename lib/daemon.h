/*
 * daemon: the one event loop of every Pendulum daemon (pd-worker, pd-relay,
 * pd-reaper, pd-cron).
 *
 * One thread: a signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP), the database
 * socket (LISTEN wake-ups) and whatever descriptors the engine adds (its
 * children's pipes), under poll(2) with a timeout computed from absolute
 * monotonic deadlines. No work happens in signal handlers.
 *
 * LISTEN never goes through a pooler (pd_db_listener): behind one the
 * daemon LISTENs on a second, direct session to listen_url, polled by the
 * same loop and opened again at each reconnect (its loss takes the link
 * down); without a listen_url it runs poll-only, said once at start.
 *
 * The database link comes and goes: the first connection is made by
 * pd_daemon_open (a failure there is final, exit 69); later a query that
 * finds the server gone marks the link down (pd_link_failed) and the loop
 * reconnects with backoff, re-issuing LISTEN and calling on_connect again.
 * A daemon without a database (db NULL) runs the same loop; the unit tests
 * use that.
 *
 * Each pass: reconnect if due, on_tick (the engine does what is due: write,
 * claim, tick its children), finished?, then poll until the earliest of the
 * engine's deadline, a reconnect, a signal, a notification or engine I/O.
 * Notifications that arrive while the engine runs its own queries are
 * delivered after on_tick, and the next poll does not wait.
 *
 * A daemon that runs children gives the loop its pool: the loop polls the
 * children's pipes, collects them on SIGCHLD, and ticks the pool (timeouts,
 * exits -> DONE) before each on_tick. It also runs the drain: the first
 * stop signal (or pd_daemon_drain) moves the phase to DRAINING, with the
 * children given drain_ms to end; a second signal shortens that to now;
 * at the deadline the children still running are stopped (PD_STOP_DRAIN)
 * and the phase is STOPPING.
 *
 * The loop also tells a service manager (lib/notify: nothing without
 * $NOTIFY_SOCKET) what happens: READY=1 when it starts (connected, LISTEN
 * and on_connect done); STATUS= when the status line changes, at most once
 * a second; STOPPING=1 when the drain starts; RELOADING=1 before on_reload
 * and READY=1 after it; WATCHDOG=1 every watchdog interval, the poll timeout
 * bounded so that it keeps that rhythm when nothing happens.
 */
#ifndef PD_DAEMON_H
#define PD_DAEMON_H

#include <poll.h>

#include "config.h"
#include "db.h"
#include "link.h"
#include "notify.h"
#include "pool.h"
#include "retry.h"

struct pd_daemon;

/* Where a daemon is in its life. */
enum pd_daemon_phase {
	PD_DAEMON_SERVING,  /* taking new work */
	PD_DAEMON_DRAINING, /* no new work: the children may finish */
	PD_DAEMON_STOPPING, /* the drain deadline passed: the children were stopped */
};

/* What a kind of daemon is called, and listens to. */
struct pd_daemon_kind {
	const char *name;	   /* for log lines: "worker", "relay", ... */
	const char *const *listen; /* channels to LISTEN on, NULL-terminated, or NULL */
	const char *work;	   /* for the drain's log lines: "jobs", "messages" */
	const char *children;	   /* "handlers", "publish commands" */
};

/* A kind of daemon, and what its engine does on the loop's events. Every hook may be NULL. */
struct pd_daemon_ops {
	struct pd_daemon_kind kind;
	/*
	 * Connected (first: at open; else after a reconnect), LISTEN done.
	 * Returns 0, or -1 with e filled: fatal when first or when e's code is
	 * not 69 (unavailable: retried with backoff).
	 */
	int (*on_connect)(struct pd_daemon *d, int first, struct pd_err *e);
	/* Do what is due at now (monotonic ms). -1 with e filled: the loop ends with e. */
	int (*on_tick)(struct pd_daemon *d, long long now, struct pd_err *e);
	/*
	 * With period_ms: the periodic work, run while connected (always
	 * without a database), first at once after open and each reconnect,
	 * then every period_ms (after on_tick in the same pass). -1 with e
	 * filled: the loop ends with e.
	 */
	int (*on_period)(struct pd_daemon *d, struct pd_err *e);
	/* The monotonic ms at which on_tick must run again; -1: only on an event. */
	long long (*deadline)(struct pd_daemon *d);
	/* Descriptors to poll besides the daemon's own (at most max); how many. */
	int (*pollfds)(struct pd_daemon *d, struct pollfd *fds, int max);
	/* poll(2) results for those descriptors. */
	void (*on_io)(struct pd_daemon *d, const struct pollfd *fds, int n);
	/* SIGCHLD arrived: collect children. */
	void (*on_child)(struct pd_daemon *d);
	/*
	 * A notification on one of the LISTEN channels: 1 if it may mean work
	 * for this daemon (wake is set), 0 if not. NULL: every one may.
	 */
	int (*on_notify)(struct pd_daemon *d, const char *channel, const char *payload);
	/* SIGTERM or SIGINT (after the drain moved on); count is 1 for the first, ... */
	void (*on_stop)(struct pd_daemon *d, int sig, int count);
	/* SIGHUP: reload (a later issue fills it in). */
	void (*on_reload)(struct pd_daemon *d);
	/*
	 * The engine's status line for the service manager into b (empty),
	 * e.g. "running 3 of 4, 2 ready". Called each pass while a manager
	 * listens, so cheap. NULL: "running N of M" with a pool, else "serving".
	 * The loop prefixes the phase while draining and says when the database
	 * is down.
	 */
	void (*status)(struct pd_daemon *d, struct pd_buf *b);
	/*
	 * 1: the loop ends (after on_tick). NULL: with a pool, once it is drained
	 * (pd_daemon_drained) or, with until_idle, once idle is set and the pool
	 * is empty with the database up; without a pool, at the first stop signal.
	 */
	int (*finished)(struct pd_daemon *d);
};

struct pd_daemon {
	struct pd_db *db; /* NULL: no database */
	const struct pd_daemon_ops *ops;
	void *ctx;	      /* the engine's */
	int maxfds;	      /* most descriptors the engine's pollfds returns */
	struct pd_pool *pool; /* the engine's children, or NULL */
	long long drain_ms;   /* how long children may finish after the first stop signal */
	int until_idle;	      /* end once idle and nothing runs */
	long long period_ms;  /* > 0: on_period's interval */
	int idle;	      /* set by the engine: its last look found no work */
	int wake;	      /* set by the loop at each connect and on a notification that
				 may mean work; the engine clears it when it looks */
	/* state, for reading */
	char host[64];	   /* gethostname */
	char id[128];	   /* "host:pid:xxxx", unique among the daemons of a database */
	struct pd_rng rng; /* seeded at open; the engine's backoff draws from it */
	enum pd_daemon_phase phase;
	long long drain_deadline; /* DRAINING: when the children are stopped; -1: never */
	struct pd_link link;
	struct pd_db lsn;  /* behind a pooler: listen_url's session (pd_db_listener) */
	struct pd_db *ldb; /* where LISTEN runs: db, &lsn, or NULL (poll-only) */
	int sigfd;
	int stops;	       /* stop signals received */
	int notified;	       /* notifications delivered since the last on_tick */
	long long passes;      /* loop passes, for tests */
	long long open_ms;     /* pd_now_ms() at open */
	long long next_period; /* monotonic ms: on_period's next run */

	/* the service manager (lib/notify) */
	struct pd_notify notify;
	long long next_watchdog; /* monotonic ms: WATCHDOG=1 is due */
	long long next_status;	 /* monotonic ms: a changed STATUS= may be sent */
	char status[256];	 /* the STATUS= line last sent */
	int stopping_sent;	 /* STOPPING=1 was sent */
};

/*
 * Set d up for pd_daemon_open: a daemon of the kind ops on db (NULL: none)
 * with the engine's ctx; a daemon with children gives its pool and ec
 * (drain_ms, until_idle), others NULL for both.
 */
void pd_daemon_init(struct pd_daemon *d, const struct pd_daemon_ops *ops, struct pd_db *db,
		    void *ctx, struct pd_pool *pool, const struct pd_engine_cfg *ec);

/*
 * Read the service manager's environment (pd_notify_init), block the
 * daemon's signals behind a signalfd, ignore SIGPIPE, and connect
 * (LISTEN, on_connect first; "connected" logged at debug, a reconnect at info). Returns 0, or -1
 * with e filled (69 when the database is unreachable at start).
 */
int pd_daemon_open(struct pd_daemon *d, struct pd_err *e);

/* Run the loop until finished (READY=1 first). Returns 0, or -1 with e filled. */
int pd_daemon_run(struct pd_daemon *d, struct pd_err *e);

/*
 * Stop taking work (SERVING -> DRAINING) without a signal; the children
 * still running are stopped only if a stop signal comes later.
 */
void pd_daemon_drain(struct pd_daemon *d);

/* Close the signalfd (the connection is the caller's). */
void pd_daemon_close(struct pd_daemon *d);

/*
 * A query failed with e: code 69 marks the link down and returns 0 (the loop
 * reconnects), anything else returns -1 (fatal). For on_tick hooks.
 */
int pd_daemon_db_failed(struct pd_daemon *d, const struct pd_err *e);

/* 1 while the database link is up (always 0 without a database). */
int pd_daemon_up(const struct pd_daemon *d);

/*
 * The poll(2) timeout for a deadline: -1 (none) stays -1, a past deadline
 * is 0, otherwise the ms left, capped at INT_MAX.
 */
int pd_daemon_timeout(long long deadline, long long now);

/* An idle engine polls at most this many times less often than its poll interval. */
#define PD_IDLE_POLL_FACTOR 4

/*
 * The interval until an engine's next poll, after one that found work
 * (idle 0: poll_ms) or none (idle 1: twice cur, at most
 * PD_IDLE_POLL_FACTOR x poll_ms). cur is the last interval (0 at first).
 * Notifications wake the engine at once whatever the interval: the
 * backoff delays only work that comes unannounced (a job whose run_at
 * arrives, claimable again after a pause).
 */
long long pd_idle_poll(long long cur, long long poll_ms, int idle);

#endif
