#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "sig.h"

#define OWN_FDS		3    /* the signalfd, the database socket, the listen session's */
#define STATUS_EVERY_MS 1000 /* at most one STATUS= a second */

/* Tell the service manager state; a failure is logged at debug and otherwise ignored. */
static void notify(const struct pd_daemon *d, const char *state)
{
	if (pd_notify_send(&d->notify, state) < 0)
		pd_log(PD_LOG_DEBUG, "notify failed", "error=\"%s\"", strerror(errno));
}

/* STOPPING=1, once. */
static void notify_stopping(struct pd_daemon *d)
{
	if (!d->stopping_sent)
		notify(d, "STOPPING=1");
	d->stopping_sent = 1;
}

/* WATCHDOG=1 when it is due at now. */
static void watchdog(struct pd_daemon *d, long long now)
{
	if (d->notify.watchdog_ms <= 0 || now < d->next_watchdog)
		return;
	notify(d, "WATCHDOG=1");
	d->next_watchdog = now + d->notify.watchdog_ms;
}

/* The status line: the phase while draining, the database when it is down, else the engine's. */
static void status_text(struct pd_daemon *d, struct pd_buf *b)
{
	if (d->phase != PD_DAEMON_SERVING)
		pd_buf_puts(b, d->phase == PD_DAEMON_DRAINING ? "draining, " : "stopping, ");
	if (d->db && !d->link.up)
		pd_buf_puts(b, "database unavailable, reconnecting");
	else if (d->ops->status)
		d->ops->status(d, b);
	else if (d->pool)
		pd_buf_printf(b, "running %d of %d", pd_pool_busy(d->pool), d->pool->size);
	else
		pd_buf_puts(b, "serving");
}

/*
 * STATUS= when the status line changed and the last one is a second old.
 * Returns when a changed line may go out (the poll's deadline), or -1.
 */
static long long status(struct pd_daemon *d, long long now)
{
	struct pd_buf b = PD_BUF_INIT;
	long long due = -1;

	if (!pd_notify_enabled(&d->notify))
		return -1;
	pd_buf_puts(&b, "STATUS=");
	status_text(d, &b);
	if (strcmp(b.data, d->status) != 0) {
		if (now >= d->next_status) {
			notify(d, b.data);
			snprintf(d->status, sizeof(d->status), "%s", b.data);
			d->next_status = now + STATUS_EVERY_MS;
		} else {
			due = d->next_status;
		}
	}
	pd_buf_release(&b);
	return due;
}

int pd_daemon_timeout(long long deadline, long long now)
{
	if (deadline < 0)
		return -1;
	if (deadline <= now)
		return 0;
	return deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
}

long long pd_idle_poll(long long cur, long long poll_ms, int idle)
{
	long long max = poll_ms * PD_IDLE_POLL_FACTOR;

	if (!idle || cur < poll_ms)
		return poll_ms;
	return cur > max / 2 ? max : 2 * cur;
}

int pd_daemon_up(const struct pd_daemon *d)
{
	return d->db != NULL && d->link.up;
}

int pd_daemon_db_failed(struct pd_daemon *d, const struct pd_err *e)
{
	return pd_link_failed(&d->link, e);
}

/* At the first connect behind a pooler: what that means here, once. */
static void log_pooled(const struct pd_daemon *d)
{
	const char *mode = d->db->named ? "named (prepared_statements: on)" : "unnamed";

	if (!pd_db_pooled(d->db))
		return;
	if (d->ldb != NULL)
		pd_log(PD_LOG_INFO, "connection pooled: LISTEN on listen_url's own session",
		       "statements=%s", mode);
	else if (d->ops->kind.listen != NULL)
		pd_log(PD_LOG_INFO,
		       "connection pooled and no listen_url: poll-only, no LISTEN wake-ups",
		       "statements=%s", mode);
	else
		pd_log(PD_LOG_INFO, "connection pooled", "statements=%s", mode);
}

/*
 * LISTEN on every channel, where pd_db_listener says (the main connection
 * when direct, listen_url's session behind a pooler, else nowhere), then
 * the engine's on_connect.
 */
static int after_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	d->ldb = NULL;
	if (d->ops->kind.listen &&
	    pd_db_listener(d->db, &d->lsn, d->ops->kind.listen, &d->ldb, e) < 0)
		return -1;
	if (first)
		log_pooled(d);
	if (d->ops->on_connect && d->ops->on_connect(d, first, e) < 0)
		return -1;
	pd_link_up(&d->link);
	d->next_period = pd_now_ms(); /* things may have changed while the link was down */
	d->wake = 1;		      /* what was notified while the link was down is not known */
	pd_log(first ? PD_LOG_DEBUG : PD_LOG_INFO, first ? "connected" : "reconnected", "%s=%s",
	       d->ops->kind.name ? d->ops->kind.name : "daemon", d->id);
	return 0;
}

static int reconnect(struct pd_daemon *d, struct pd_err *e)
{
	if (pd_db_connect(d->db, d->db->conninfo, d->db->appname, e) < 0 ||
	    after_connect(d, 0, e) < 0) {
		if (e->code != PD_EX_UNAVAILABLE)
			return -1;
		pd_link_retry(&d->link, e);
		pd_err_clear(e);
		return 0;
	}
	return 0;
}

void pd_daemon_init(struct pd_daemon *d, const struct pd_daemon_ops *ops, struct pd_db *db,
		    void *ctx, struct pd_pool *pool, const struct pd_engine_cfg *ec)
{
	memset(d, 0, sizeof(*d));
	d->lsn = (struct pd_db)PD_DB_INIT;
	d->ops = ops;
	d->db = db;
	d->ctx = ctx;
	d->pool = pool;
	d->sigfd = -1;
	if (ec) {
		d->drain_ms = ec->drain_ms;
		d->until_idle = ec->until_idle;
	}
}

int pd_daemon_open(struct pd_daemon *d, struct pd_err *e)
{
	static const int signals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};

	d->sigfd = -1;
	d->stops = 0;
	d->notified = 0;
	d->passes = 0;
	d->open_ms = pd_now_ms();
	d->next_period = d->open_ms;
	d->phase = PD_DAEMON_SERVING;
	pd_notify_init(&d->notify);
	d->next_watchdog = d->next_status = d->open_ms;
	d->status[0] = '\0';
	d->stopping_sent = 0;
	d->drain_deadline = -1;
	gethostname(d->host, sizeof(d->host) - 1);
	pd_rng_seed(&d->rng, 0);
	snprintf(d->id, sizeof(d->id), "%s:%d:%04x", d->host, (int)getpid(),
		 (unsigned)(pd_rng_next(&d->rng) & 0xffff));
	pd_sig_ignore_pipe();
	if ((d->sigfd = pd_sig_open(signals, 4, e)) < 0)
		return -1;
	pd_link_init(&d->link, d->db);
	if (d->db == NULL)
		return 0;
	if (after_connect(d, 1, e) < 0) {
		pd_daemon_close(d);
		return -1;
	}
	return 0;
}

void pd_daemon_close(struct pd_daemon *d)
{
	if (d->sigfd >= 0)
		close(d->sigfd);
	d->sigfd = -1;
	pd_db_close(&d->lsn);
	d->ldb = NULL;
}

/* The listen session (not the main connection) has input: lost, the link goes down. */
static void listen_read(struct pd_daemon *d)
{
	struct pd_err e = PD_ERR_INIT;

	if (PQconsumeInput(d->lsn.conn))
		return;
	pd_errf(&e, PD_EX_UNAVAILABLE, "listen_url session: %s", PQerrorMessage(d->lsn.conn));
	pd_link_failed(&d->link, &e);
}

/* Hand every notification received so far to on_notify; returns how many. */
static int deliver_notifies(struct pd_daemon *d)
{
	PGnotify *nt;
	int n = 0;

	while (pd_daemon_up(d) && d->ldb && (nt = PQnotifies(d->ldb->conn)) != NULL) {
		if (d->ops->on_notify == NULL || d->ops->on_notify(d, nt->relname, nt->extra))
			d->wake = 1;
		PQfreemem(nt);
		n++;
	}
	d->notified += n;
	return n;
}

/* "draining: no new jobs", or on a second signal "second signal: stopping handlers now". */
static void log_stop(const struct pd_daemon *d, int sig)
{
	char msg[128];

	if (d->stops > 1) {
		snprintf(msg, sizeof(msg), "second signal: stopping %s now",
			 d->ops->kind.children ? d->ops->kind.children : "children");
		pd_log(PD_LOG_WARN, msg, "signal=%d", sig);
		return;
	}
	snprintf(msg, sizeof(msg), "draining: no new %s",
		 d->ops->kind.work ? d->ops->kind.work : "work");
	pd_log(PD_LOG_INFO, msg, "signal=%d running=%d drain_timeout_ms=%lld", sig,
	       pd_pool_busy(d->pool), d->drain_ms);
}

/* SIGHUP: on_reload, between RELOADING=1 (with the time, as sd_notify(3) asks) and READY=1. */
static void reload(struct pd_daemon *d)
{
	char state[64];

	snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%lld", pd_now_us());
	notify(d, state);
	if (d->ops->on_reload)
		d->ops->on_reload(d);
	else
		pd_log(PD_LOG_INFO, "SIGHUP: nothing to reload", NULL);
	notify(d, "READY=1");
}

static void on_signals(struct pd_daemon *d)
{
	int sig;

	while ((sig = pd_sig_read(d->sigfd)) > 0) {
		switch (sig) {
		case SIGCHLD:
			if (d->pool)
				pd_pool_reap(d->pool);
			if (d->ops->on_child)
				d->ops->on_child(d);
			break;
		case SIGHUP:
			reload(d);
			break;
		default:
			d->stops++;
			pd_daemon_drain(d);
			d->drain_deadline = d->stops == 1 ? pd_now_ms() + d->drain_ms : pd_now_ms();
			if (d->pool)
				log_stop(d, sig);
			if (d->ops->on_stop)
				d->ops->on_stop(d, sig, d->stops);
			break;
		}
	}
}

void pd_daemon_drain(struct pd_daemon *d)
{
	if (d->phase == PD_DAEMON_SERVING)
		d->phase = PD_DAEMON_DRAINING;
	notify_stopping(d);
}

/* The pool is empty and the phase is past SERVING: the daemon's work is over. */
static int pd_daemon_drained(const struct pd_daemon *d)
{
	return d->phase != PD_DAEMON_SERVING && (d->pool == NULL || pd_pool_busy(d->pool) == 0);
}

/* The loop ends: the engine's finished, else the default described in daemon.h. */
static int finished(struct pd_daemon *d)
{
	if (d->ops->finished)
		return d->ops->finished(d);
	if (d->pool == NULL)
		return d->stops > 0;
	return pd_daemon_drained(d) ||
	       (d->until_idle && d->idle && pd_pool_busy(d->pool) == 0 && pd_daemon_up(d));
}

/* The pool's part of a pass: collect, tick, and stop the children at the drain deadline. */
static void pool_pass(struct pd_daemon *d, long long now)
{
	if (d->pool == NULL)
		return;
	/* Children that exited unnoticed (poll returns EINTR after SIGSTOP/SIGCONT). */
	pd_pool_reap(d->pool);
	pd_pool_tick(d->pool, now);
	if (d->phase == PD_DAEMON_DRAINING && d->drain_deadline >= 0 && now >= d->drain_deadline) {
		d->phase = PD_DAEMON_STOPPING;
		pd_pool_stop_all(d->pool, PD_STOP_DRAIN);
	}
}

/* on_period runs at all now: it has one, a period, and the link (if any) is up. */
static int period_active(const struct pd_daemon *d)
{
	return d->ops->on_period && d->period_ms > 0 && (d->db == NULL || pd_daemon_up(d));
}

/* on_period is due now: its next run is set a period on. */
static int period_due(struct pd_daemon *d)
{
	long long now = pd_now_ms();

	if (!period_active(d) || now < d->next_period)
		return 0;
	d->next_period = now + d->period_ms;
	return 1;
}

int pd_daemon_run(struct pd_daemon *d, struct pd_err *e)
{
	int pool_fds = d->pool ? PD_POOL_SLOT_FDS * d->pool->size : 0;
	int cap = OWN_FDS + pool_fds + (d->maxfds > 0 ? d->maxfds : 0);
	struct pollfd *fds = pd_xcalloc((size_t)cap, sizeof(*fds));
	int rc = 0;

	notify(d, "READY=1");
	for (;;) {
		long long now = pd_now_ms(), deadline;
		int nfds = 0, own, n, sockfd = -1, lsnfd = -1, again;

		watchdog(d, now);

		if (d->db && !d->link.up && now >= d->link.next_connect && reconnect(d, e) < 0) {
			rc = -1;
			break;
		}
		d->passes++;
		pool_pass(d, pd_now_ms());
		if (d->ops->on_tick && d->ops->on_tick(d, pd_now_ms(), e) < 0) {
			rc = -1;
			break;
		}
		if (period_due(d) && d->ops->on_period(d, e) < 0) {
			rc = -1;
			break;
		}
		d->notified = 0;
		again = deliver_notifies(d) > 0; /* arrived during the engine's queries */
		if (finished(d))
			break;

		fds[nfds++] = (struct pollfd){.fd = d->sigfd, .events = POLLIN};
		if (pd_daemon_up(d)) {
			sockfd = nfds;
			fds[nfds++] =
			    (struct pollfd){.fd = PQsocket(d->db->conn), .events = POLLIN};
		}
		if (pd_daemon_up(d) && d->ldb == &d->lsn) {
			lsnfd = nfds;
			fds[nfds++] =
			    (struct pollfd){.fd = PQsocket(d->lsn.conn), .events = POLLIN};
		}
		own = nfds;
		if (d->pool)
			nfds += pd_pool_pollfds(d->pool, fds + nfds, pool_fds);
		if (d->ops->pollfds)
			nfds += d->ops->pollfds(d, fds + nfds, cap - nfds);
		deadline = d->ops->deadline ? d->ops->deadline(d) : -1;
		if (period_active(d))
			deadline = pd_deadline_min(deadline, d->next_period);
		if (d->pool) {
			deadline = pd_deadline_min(deadline, pd_pool_deadline(d->pool));
			if (d->phase == PD_DAEMON_DRAINING)
				deadline = pd_deadline_min(deadline, d->drain_deadline);
		}
		if (d->db && !d->link.up)
			deadline = pd_deadline_min(deadline, d->link.next_connect);
		now = pd_now_ms();
		deadline = pd_deadline_min(deadline, status(d, now));
		if (d->notify.watchdog_ms > 0)
			deadline = pd_deadline_min(deadline, d->next_watchdog);
		n = poll(fds, (nfds_t)nfds, again ? 0 : pd_daemon_timeout(deadline, now));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = pd_errf(e, PD_EX_SOFTWARE, "poll: %s", strerror(errno));
			break;
		}
		if (n == 0)
			continue;
		if (fds[0].revents & POLLIN)
			on_signals(d);
		if (sockfd >= 0 && fds[sockfd].revents && pd_daemon_up(d)) {
			pd_link_read(&d->link);
			deliver_notifies(d);
		}
		if (lsnfd >= 0 && fds[lsnfd].revents && pd_daemon_up(d)) {
			listen_read(d);
			deliver_notifies(d);
		}
		if (d->pool)
			pd_pool_io(d->pool, fds + own, nfds - own);
		if (d->ops->on_io && nfds > own)
			d->ops->on_io(d, fds + own, nfds - own);
	}
	free(fds);
	notify_stopping(d);
	return rc;
}
