/* notify: the sd_notify datagram, to a socket this test binds (a path and an abstract name). */
#include <sys/socket.h>
#include <sys/un.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "notify.h"
#include "tap.h"

/* A datagram socket bound to name ('@' first: abstract); -1 on failure. */
static int listener(const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memcpy(a.sun_path, name, len);
	if (name[0] == '@')
		a.sun_path[0] = '\0';
	if (fd < 0 || bind(fd, (struct sockaddr *)&a,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		return -1;
	return fd;
}

/* The next datagram on fd, as a string (at most 255 bytes). */
static const char *receive(int fd)
{
	static char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void env(const char *sock, const char *usec, const char *pid)
{
	if (sock)
		setenv("NOTIFY_SOCKET", sock, 1);
	if (usec)
		setenv("WATCHDOG_USEC", usec, 1);
	if (pid)
		setenv("WATCHDOG_PID", pid, 1);
}

int main(void)
{
	char path[64], abstract[64], self[32];
	struct pd_notify n;
	int fd;

	snprintf(path, sizeof(path), "/tmp/pd-notify-test.%d", (int)getpid());
	snprintf(abstract, sizeof(abstract), "@pd-notify-test.%d", (int)getpid());
	snprintf(self, sizeof(self), "%d", (int)getpid());
	unlink(path);

	unsetenv("NOTIFY_SOCKET");
	pd_notify_init(&n);
	ok(!pd_notify_enabled(&n), "no NOTIFY_SOCKET: not enabled");
	is_int(pd_notify_send(&n, "READY=1"), 0, "no NOTIFY_SOCKET: sending does nothing");

	fd = listener(path);
	ok(fd >= 0, "bound a socket at a path");
	env(path, "300000", NULL);
	pd_notify_init(&n);
	ok(pd_notify_enabled(&n), "a path: enabled");
	ok(getenv("NOTIFY_SOCKET") == NULL, "NOTIFY_SOCKET is unset for the children");
	ok(getenv("WATCHDOG_USEC") == NULL, "WATCHDOG_USEC is unset for the children");
	is_int(n.watchdog_ms, 100, "WATCHDOG_USEC 300000: a ping every 100 ms");
	is_int(pd_notify_send(&n, "READY=1"), 1, "sent to the path");
	is_str(receive(fd), "READY=1", "the path's listener got READY=1");
	is_int(pd_notify_send(&n, "RELOADING=1\nMONOTONIC_USEC=5"), 1, "sent two lines");
	is_str(receive(fd), "RELOADING=1\nMONOTONIC_USEC=5", "as one datagram");
	close(fd);
	unlink(path);
	is_int(pd_notify_send(&n, "STOPPING=1"), -1, "nobody listening: -1");

	fd = listener(abstract);
	ok(fd >= 0, "bound an abstract socket");
	env(abstract, NULL, NULL);
	pd_notify_init(&n);
	is_int(n.watchdog_ms, 0, "no WATCHDOG_USEC: no watchdog");
	is_int(pd_notify_send(&n, "STATUS=idle"), 1, "sent to the abstract name");
	is_str(receive(fd), "STATUS=idle", "the abstract listener got it");

	env(abstract, "300000", "1");
	pd_notify_init(&n);
	is_int(n.watchdog_ms, 0, "WATCHDOG_PID another process: no watchdog");
	env(abstract, "300000", self);
	pd_notify_init(&n);
	is_int(n.watchdog_ms, 100, "WATCHDOG_PID this process: the watchdog");
	env(abstract, "12x", NULL);
	pd_notify_init(&n);
	is_int(n.watchdog_ms, 0, "WATCHDOG_USEC that does not parse: no watchdog");
	env("relative", "300000", NULL);
	pd_notify_init(&n);
	ok(!pd_notify_enabled(&n), "a relative NOTIFY_SOCKET is ignored");
	is_int(n.watchdog_ms, 0, "and so is the watchdog without a socket");
	close(fd);
	return done_testing();
}
