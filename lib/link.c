#include <string.h>

#include "clock.h"
#include "link.h"
#include "log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

void pd_link_init(struct pd_link *l, struct pd_db *db)
{
	l->db = db;
	l->up = 0;
	l->next_connect = 0;
	l->backoff_ms = BACKOFF_MIN_MS;
}

void pd_link_up(struct pd_link *l)
{
	l->up = 1;
	l->backoff_ms = BACKOFF_MIN_MS;
}

/* The connection was lost: log it once and schedule a reconnect. */
static void pd_link_down(struct pd_link *l, const struct pd_err *e)
{
	char q[600];

	if (l->up)
		pd_log(PD_LOG_WARN, "database connection lost", "error=%s",
		       pd_log_quote(q, sizeof(q), e->msg));
	l->up = 0;
	l->next_connect = pd_now_ms() + l->backoff_ms;
}

void pd_link_retry(struct pd_link *l, const struct pd_err *e)
{
	char q[600];

	pd_log(PD_LOG_WARN, "database unavailable, will retry", "retry_ms=%lld error=%s",
	       l->backoff_ms, pd_log_quote(q, sizeof(q), e->msg));
	l->up = 0;
	l->next_connect = pd_now_ms() + l->backoff_ms;
	l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
}

int pd_link_failed(struct pd_link *l, const struct pd_err *e)
{
	char q[600];

	if (e->code == PD_EX_UNAVAILABLE) {
		pd_link_down(l, e);
		return 0;
	}
	/*
	 * A transaction the server rolled back (class 40: a deadlock between
	 * two daemons' statements, a serialization failure) changed nothing
	 * and may well pass when sent again; so may a statement that ran out
	 * of a resource (class 53: memory, disk, locks). Neither is the
	 * daemon's fault: the link goes down and comes back after its backoff,
	 * and whatever the statement carried is sent again then.
	 */
	if (pd_db_transient(e->sqlstate)) {
		pd_log(PD_LOG_WARN, "transaction rolled back by the database, will retry",
		       "retry_ms=%lld sqlstate=%s error=%s", l->backoff_ms, e->sqlstate,
		       pd_log_quote(q, sizeof(q), e->msg));
		l->up = 0;
		l->next_connect = pd_now_ms() + l->backoff_ms;
		return 0;
	}
	pd_log(PD_LOG_ERROR, "database error", "error=%s", pd_log_quote(q, sizeof(q), e->msg));
	return -1;
}

void pd_link_read(struct pd_link *l)
{
	if (!PQconsumeInput(l->db->conn)) {
		struct pd_err e = PD_ERR_INIT;

		pd_errf(&e, PD_EX_UNAVAILABLE, "%s", PQerrorMessage(l->db->conn));
		pd_link_down(l, &e);
	}
}

long long pd_deadline_min(long long a, long long b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}
