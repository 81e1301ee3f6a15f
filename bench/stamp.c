/*
 * stamp: the handler scripts/bench runs (--exec TYPE=.../stamp) to learn when
 * a handler starts. The first thing it does is read CLOCK_REALTIME (h, in
 * microseconds since the epoch); then it reads the payload from stdin and, if
 * the payload has a top-level number "t" (microseconds, same clock: the bench
 * and the worker share the host), it also reports h - t. Its stdout is the
 * job's result:
 *
 *   {"h":H,"t":T,"us":H-T}      or {"h":H} when the payload has no "t"
 *
 * The payload parsing is deliberately minimal: the first "t" key followed by
 * a colon and an integer. The bench writes the payloads itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

int main(void)
{
	long long h = realtime_us(), t;
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	char *p, *end;

	while (len < sizeof(buf) - 1 && (n = read(0, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	/* drain the rest, if any, so the worker's write never sees EPIPE */
	while (read(0, (char[512]){0}, 512) > 0)
		;

	p = strstr(buf, "\"t\"");
	if (p) {
		p += 3;
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (*p == ':') {
			t = strtoll(p + 1, &end, 10);
			if (end != p + 1) {
				printf("{\"h\":%lld,\"t\":%lld,\"us\":%lld}\n", h, t, h - t);
				return 0;
			}
		}
	}
	printf("{\"h\":%lld}\n", h);
	return 0;
}
