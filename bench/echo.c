/*
 * echo: the no-op stream handler for scripts/bench (pd-worker --stream-exec).
 * For each job line on stdin it answers {"id":N} on stdout: success, no
 * result. It reads what the pipe holds, answers every whole line in it, and
 * writes the answers with one write(2) per read, so that it costs the
 * worker as little as a handler can.
 *
 *   echo            (no arguments)
 *
 * The id is the first "id": member's integer, which is where pd-worker
 * puts it. A line without one is answered with nothing; the worker then
 * times the job out, if it has a timeout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define CHUNK 65536

int main(void)
{
	static char in[2 * CHUNK], out[2 * CHUNK];
	size_t have = 0;

	for (;;) {
		ssize_t r = read(0, in + have, sizeof(in) - have);
		size_t off = 0, o = 0;
		char *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? 1 : 0;
		have += (size_t)r;
		while ((nl = memchr(in + off, '\n', have - off)) != NULL) {
			const char *id;

			*nl = '\0';
			id = strstr(in + off, "\"id\":");
			if (id != NULL) {
				long long v = strtoll(id + 5, NULL, 10);

				o += (size_t)snprintf(out + o, sizeof(out) - o, "{\"id\":%lld}\n",
						      v);
			}
			off = (size_t)(nl - in) + 1;
			if (o > sizeof(out) - 64) {
				if (write_all(out, o) < 0)
					return 1;
				o = 0;
			}
		}
		if (o > 0 && write_all(out, o) < 0)
			return 1;
		memmove(in, in + off, have - off);
		have -= off;
		if (have == sizeof(in)) /* a line longer than the buffer: not ours */
			have = 0;
	}
}
