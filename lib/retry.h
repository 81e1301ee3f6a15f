/*
 * retry: full-jitter exponential backoff with an explicit random source, so
 * tests can pin it.
 *
 *   delay = uniform(0, min(cap, base * 2^(attempt - 1)))
 */
#ifndef PD_RETRY_H
#define PD_RETRY_H

#include <stdint.h>

struct pd_rng {
	uint64_t s;
};

/* Seed from the clock and pid (seed = 0), or with a fixed seed for tests. */
void pd_rng_seed(struct pd_rng *r, uint64_t seed);
uint64_t pd_rng_next(struct pd_rng *r);
/* Uniform in [0, n] (inclusive); 0 when n <= 0. */
long long pd_rng_upto(struct pd_rng *r, long long n);

/* The ceiling for attempt (1-based): min(cap, base * 2^(attempt-1)), overflow-safe. */
long long pd_backoff_ceiling(long long base_ms, long long cap_ms, int attempt);
/* A full-jitter delay for attempt. */
long long pd_backoff_ms(struct pd_rng *r, long long base_ms, long long cap_ms, int attempt);

#endif
