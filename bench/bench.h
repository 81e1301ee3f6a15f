/*
 * bench.h: the few lines make bench's helper programs (the .c files of bench/, each a
 * program of one file) share.
 */
#ifndef PD_BENCH_H
#define PD_BENCH_H

#include <errno.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_REALTIME in microseconds. */
static inline long long realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Write all of b (n bytes) to fd 1; 0, or -1 on an error. */
static inline int write_all(const char *b, size_t n)
{
	while (n > 0) {
		ssize_t w = write(1, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

#endif
