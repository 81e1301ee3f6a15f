#include <time.h>

#include "clock.h"

/*
 * clock_gettime(CLOCK_MONOTONIC) cannot fail on Linux with a valid pointer,
 * so there is no error path.
 */
static struct timespec now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts;
}

long long pd_now_ms(void)
{
	struct timespec ts = now();

	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long pd_now_us(void)
{
	struct timespec ts = now();

	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
