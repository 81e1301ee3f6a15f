/*
 * linestamp: bench/stamp for a stream handler (pd-worker --stream-exec
 * TYPE=.../linestamp), for scripts/bench-peers' pickup latency with a
 * long-lived handler, the shape of the peers' in-process handlers. For each
 * job line on stdin it answers, on stdout,
 *
 *   {"id":N,"result":{"h":H}}
 *
 * where H is CLOCK_REALTIME in microseconds read as soon as the read(2) that
 * brought the line returned (the first instruction of the handler's work on
 * it; lines that arrive in one read share it). N is the first "id":
 * member's integer, where pd-worker puts it; a line without one gets no
 * answer. bench/pickup reads H from the job's result, as with bench/stamp.
 *
 *   linestamp       (no arguments)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

int main(void)
{
	static char in[1 << 16];
	char out[128];
	size_t len = 0;

	for (;;) {
		ssize_t n = read(0, in + len, sizeof(in) - 1 - len);
		long long h = realtime_us();
		char *line, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		len += (size_t)n;
		in[len] = '\0';
		line = in;
		while ((nl = memchr(line, '\n', len - (size_t)(line - in))) != NULL) {
			char *p, *end;
			long long id;

			*nl = '\0';
			p = strstr(line, "\"id\":");
			if (p) {
				id = strtoll(p + 5, &end, 10);
				if (end != p + 5) {
					int k = snprintf(out, sizeof(out),
							 "{\"id\":%lld,\"result\":{\"h\":%lld}}\n",
							 id, h);

					if (write_all(out, (size_t)k) < 0)
						return 1;
				}
			}
			line = nl + 1;
		}
		len -= (size_t)(line - in);
		memmove(in, line, len);
		if (len == sizeof(in) - 1)
			len = 0; /* a line longer than the buffer: dropped, unanswered */
	}
}
