#include <time.h>
#include <unistd.h>

#include "retry.h"

/* splitmix64: small, fast, and good enough for jitter. */
uint64_t pd_rng_next(struct pd_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void pd_rng_seed(struct pd_rng *r, uint64_t seed)
{
	if (seed == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed =
		    (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
	}
	r->s = seed;
	pd_rng_next(r);
}

long long pd_rng_upto(struct pd_rng *r, long long n)
{
	if (n <= 0)
		return 0;
	return (long long)(pd_rng_next(r) % ((uint64_t)n + 1));
}

long long pd_backoff_ceiling(long long base_ms, long long cap_ms, int attempt)
{
	long long d = base_ms;

	if (base_ms <= 0 || cap_ms <= 0)
		return 0;
	/* Past half the cap, one more doubling reaches it: d * 2 never overflows. */
	for (int i = 1; i < attempt && d < cap_ms; i++)
		d = d > cap_ms / 2 ? cap_ms : d * 2;
	return d < cap_ms ? d : cap_ms;
}

long long pd_backoff_ms(struct pd_rng *r, long long base_ms, long long cap_ms, int attempt)
{
	return pd_rng_upto(r, pd_backoff_ceiling(base_ms, cap_ms, attempt));
}
