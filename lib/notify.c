#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "notify.h"

/* A decimal number in s, all of it, > 0; else 0. */
static unsigned long long positive(const char *s)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	return errno || *end ? 0 : v;
}

void pd_notify_init(struct pd_notify *n)
{
	const char *path = getenv("NOTIFY_SOCKET");
	const char *pid = getenv("WATCHDOG_PID");
	unsigned long long usec = positive(getenv("WATCHDOG_USEC"));
	size_t len = path ? strlen(path) : 0;

	memset(n, 0, sizeof(*n));
	if ((path && (path[0] == '/' || path[0] == '@')) && len >= 2 &&
	    len < sizeof(n->addr.sun_path)) {
		n->addr.sun_family = AF_UNIX;
		memcpy(n->addr.sun_path, path, len);
		if (path[0] == '@')
			n->addr.sun_path[0] = '\0'; /* abstract: the name is the bytes after it */
		n->addrlen =
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
	}
	if (n->addrlen > 0 && usec > 0 &&
	    (pid == NULL || positive(pid) == (unsigned long long)getpid())) {
		n->watchdog_ms = (long long)(usec / 3000);
		if (n->watchdog_ms < 1)
			n->watchdog_ms = 1;
	}
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

int pd_notify_enabled(const struct pd_notify *n)
{
	return n->addrlen > 0;
}

int pd_notify_send(const struct pd_notify *n, const char *state)
{
	int fd, saved;
	ssize_t r;

	if (n->addrlen == 0)
		return 0;
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	r = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&n->addr,
		   n->addrlen);
	saved = errno;
	close(fd);
	errno = saved;
	return r < 0 ? -1 : 1;
}
