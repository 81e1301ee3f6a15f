/*
 * link: a daemon's connection to the database, which may come and go.
 *
 * pd-worker and pd-relay keep running their children while the database is
 * away: a failed query marks the link down (it is not lease loss), the loop
 * reconnects when next_connect comes, with backoff from 100 ms to 5 s.
 */
#ifndef PD_LINK_H
#define PD_LINK_H

#include "db.h"

struct pd_link {
	struct pd_db *db;
	int up;
	long long next_connect; /* monotonic ms: the next attempt while down */
	long long backoff_ms;
};

void pd_link_init(struct pd_link *l, struct pd_db *db);
/* Connected (again): reset the backoff. */
void pd_link_up(struct pd_link *l);
/* A reconnect attempt failed: log it and try again after a longer wait. */
void pd_link_retry(struct pd_link *l, const struct pd_err *e);
/*
 * A query failed with e: code 69, or a transaction the server rolled back
 * (SQLSTATE class 40) or a resource it ran out of (53), marks the link down
 * and returns 0 (the loop goes on, reconnecting after the backoff); anything
 * else is logged and returns -1 (fatal).
 */
int pd_link_failed(struct pd_link *l, const struct pd_err *e);
/* Read what the socket has (after poll said so); marks the link down if it is closed. */
void pd_link_read(struct pd_link *l);

/* The earlier of two monotonic deadlines, -1 meaning none. */
long long pd_deadline_min(long long a, long long b);

#endif
