/*
 * notify: the service manager's readiness protocol (sd_notify(3)), written
 * here rather than linked from libsystemd: it is one datagram of
 * "KEY=VALUE\n" lines to the Unix socket named by $NOTIFY_SOCKET (a path,
 * or an abstract name written with a leading '@'), and nothing at all when
 * that variable is unset.
 *
 *   struct pd_notify n;
 *   pd_notify_init(&n);              reads (and unsets) the environment
 *   pd_notify_send(&n, "READY=1");
 *
 * The watchdog: when there is a socket and the manager set $WATCHDOG_USEC (and $WATCHDOG_PID is
 * unset or this process), "WATCHDOG=1" is due at least that often;
 * watchdog_ms is the interval at which to send it (a third of it, so a slow
 * pass of the loop still keeps within the limit), 0 when there is none.
 */
#ifndef PD_NOTIFY_H
#define PD_NOTIFY_H

#include <sys/socket.h>
#include <sys/un.h>

struct pd_notify {
	struct sockaddr_un addr; /* where to send */
	socklen_t addrlen;	 /* 0: no $NOTIFY_SOCKET, sending does nothing */
	long long watchdog_ms;	 /* > 0: send WATCHDOG=1 every watchdog_ms */
};

/*
 * Read $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID into n, then unset
 * them, so that the children (handlers, publish commands) do not inherit a
 * socket that is not theirs. A variable that does not parse is ignored.
 */
void pd_notify_init(struct pd_notify *n);

/* 1 when there is a socket to tell. */
int pd_notify_enabled(const struct pd_notify *n);

/*
 * Send state (one or more "KEY=VALUE" lines) as one datagram. Returns 1 when
 * sent, 0 when there is no socket, -1 when sending failed (errno set; the
 * caller may log it, nothing else depends on it).
 */
int pd_notify_send(const struct pd_notify *n, const char *state);

#endif
