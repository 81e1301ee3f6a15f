/* Backoff: the ceiling doubles from base up to cap; jitter stays within it. */
#include <limits.h>

#include "config.h"
#include "jobspec.h"
#include "retry.h"
#include "tap.h"
#include "text.h"

static void backoff(void)
{
	struct pd_rng r;
	long long lo = -1, hi = -1;

	is_int(pd_backoff_ceiling(1000, 3600000, 1), 1000, "attempt 1: base");
	is_int(pd_backoff_ceiling(1000, 3600000, 2), 2000, "attempt 2: twice the base");
	is_int(pd_backoff_ceiling(1000, 3600000, 5), 16000, "attempt 5: base * 2^4");
	is_int(pd_backoff_ceiling(1000, 3600000, 13), 3600000, "attempt 13: capped");
	is_int(pd_backoff_ceiling(1000, 3600000, 1000000), 3600000,
	       "huge attempt: capped, no overflow");
	is_int(pd_backoff_ceiling(0, 3600000, 3), 0, "zero base: no delay");
	is_int(pd_backoff_ceiling(10, 50, 4), 50, "small cap");

	pd_rng_seed(&r, 42);
	for (int i = 0; i < 100000; i++) {
		long long d = pd_backoff_ms(&r, 1000, 3600000, 3);

		if (lo < 0 || d < lo)
			lo = d;
		if (d > hi)
			hi = d;
	}
	ok(lo >= 0 && lo < 50, "full jitter reaches near zero");
	ok(hi <= 4000 && hi > 3950, "full jitter reaches near the ceiling and never past it");

	{
		struct pd_rng a, b;
		int same = 1;

		pd_rng_seed(&a, 7);
		pd_rng_seed(&b, 7);
		for (int i = 0; i < 100; i++)
			same &= pd_rng_next(&a) == pd_rng_next(&b);
		ok(same, "a fixed seed gives a fixed sequence");
	}
	is_int(pd_rng_upto(&r, 0), 0, "upto 0 is 0");
}

/*
 * Degenerate inputs: an attempt of 0 or below is the first attempt (the
 * base), a base above the cap is the cap, a base or cap of 0 or below is no
 * delay, and doubling near LLONG_MAX never overflows (UBSan in the
 * sanitizer build would stop on a signed overflow).
 */
static void degenerate(void)
{
	struct pd_rng r;
	int bad = 0;

	is_int(pd_backoff_ceiling(1000, 3600000, 0), 1000, "attempt 0: the base");
	is_int(pd_backoff_ceiling(1000, 3600000, -1), 1000, "attempt -1: the base");
	is_int(pd_backoff_ceiling(1000, 3600000, INT_MIN), 1000, "attempt INT_MIN: the base");
	is_int(pd_backoff_ceiling(5000, 2000, 1), 2000, "base above cap, attempt 1: the cap");
	is_int(pd_backoff_ceiling(5000, 2000, 7), 2000, "base above cap, attempt 7: the cap");
	is_int(pd_backoff_ceiling(5000, 2000, 0), 2000, "base above cap, attempt 0: the cap");
	is_int(pd_backoff_ceiling(2000, 2000, 9), 2000, "base equal to cap: the cap");
	is_int(pd_backoff_ceiling(-1000, 3600000, 3), 0, "negative base: no delay");
	is_int(pd_backoff_ceiling(1000, 0, 3), 0, "zero cap: no delay");
	is_int(pd_backoff_ceiling(1000, -5, 3), 0, "negative cap: no delay");
	is_int(pd_backoff_ceiling(1, LLONG_MAX, 62), 1LL << 61, "attempt 62 of base 1: 2^61");
	is_int(pd_backoff_ceiling(1, LLONG_MAX, 63), 1LL << 62, "attempt 63 of base 1: 2^62");
	is_int(pd_backoff_ceiling(1, LLONG_MAX, 64), LLONG_MAX,
	       "attempt 64 of base 1, cap LLONG_MAX: the cap, no overflow");
	is_int(pd_backoff_ceiling(1, LLONG_MAX, INT_MAX), LLONG_MAX,
	       "attempt INT_MAX, cap LLONG_MAX: the cap, no overflow");
	is_int(pd_backoff_ceiling(LLONG_MAX / 2 + 1, LLONG_MAX, 2), LLONG_MAX,
	       "a base above half of LLONG_MAX doubled: the cap, no overflow");
	is_int(pd_backoff_ceiling(LLONG_MAX, LLONG_MAX, 3), LLONG_MAX, "base and cap LLONG_MAX");

	pd_rng_seed(&r, 3);
	for (int i = 0; i < 1000; i++) {
		long long d0 = pd_backoff_ms(&r, 1000, 3600000, 0);
		long long dn = pd_backoff_ms(&r, 1000, 3600000, -7);
		long long dc = pd_backoff_ms(&r, 5000, 2000, 4);
		long long dz = pd_backoff_ms(&r, 0, 0, 4);
		long long dm = pd_backoff_ms(&r, 1, LLONG_MAX, INT_MAX);

		bad += d0 < 0 || d0 > 1000 || dn < 0 || dn > 1000;
		bad += dc < 0 || dc > 2000 || dz != 0 || dm < 0;
	}
	is_int(bad, 0, "degenerate delays stay within [0, their ceiling]");
	is_int(pd_rng_upto(&r, -1), 0, "upto -1 is 0");
	is_int(pd_rng_upto(&r, LLONG_MIN), 0, "upto LLONG_MIN is 0");
}

/*
 * The jitter is uniform over [0, ceiling]: 200000 draws at a ceiling of
 * 4000 ms fall into 20 equal buckets with a chi-square below 43.82 (19
 * degrees of freedom, p = 0.001), the mean within 1 % of 2000, and both
 * ends of the range are reached. A fixed seed: the check cannot flake.
 * A small ceiling (0..3) checks each value's share exactly.
 */
static void distribution(void)
{
	enum { N = 200000, K = 20 };
	struct pd_rng r;
	long long bucket[K] = {0}, sum = 0, small[4] = {0};
	int outside = 0, hit0 = 0, hitmax = 0;
	double chi = 0, want = (double)N / K;
	char msg[128];

	pd_rng_seed(&r, 20261202);
	for (int i = 0; i < N; i++) {
		long long d = pd_backoff_ms(&r, 1000, 3600000, 3);

		if (d < 0 || d > 4000) {
			outside++;
			continue;
		}
		hit0 |= d == 0;
		hitmax |= d == 4000;
		sum += d;
		bucket[d * K / 4001]++;
	}
	for (int k = 0; k < K; k++)
		chi += (bucket[k] - want) * (bucket[k] - want) / want;
	snprintf(msg, sizeof(msg), "chi-square %.2f over %d buckets", chi, K);
	diag(msg);
	is_int(outside, 0, "no delay outside [0, 4000]");
	ok(chi < 43.82, "the delays are uniform over [0, 4000] (chi-square, p = 0.001)");
	ok(sum > (long long)N * 1980 && sum < (long long)N * 2020, "their mean is 2000 +- 1 %");
	ok(hit0, "a delay of exactly 0 occurs");
	ok(hitmax, "a delay of exactly the ceiling occurs");

	for (int i = 0; i < 40000; i++) {
		long long d = pd_backoff_ms(&r, 3, 3, 1);

		if (d >= 0 && d <= 3)
			small[d]++;
		else
			outside++;
	}
	is_int(outside, 0, "ceiling 3: no delay outside [0, 3]");
	ok(small[0] > 9500 && small[0] < 10500, "ceiling 3: 0 a quarter of the time");
	ok(small[1] > 9500 && small[1] < 10500, "ceiling 3: 1 a quarter of the time");
	ok(small[2] > 9500 && small[2] < 10500, "ceiling 3: 2 a quarter of the time");
	ok(small[3] > 9500 && small[3] < 10500, "ceiling 3: 3 a quarter of the time");
}

/*
 * The default budget outlasts an hour-long outage: 25 attempts, 1 s base,
 * 1 h cap. The 24 waits between them are uniform up to their ceilings, so
 * the expected span is half the ceilings' sum (pd-worker(1), Retries).
 */
static void default_budget(void)
{
	struct pd_config c;
	long long sum = 0, capped = 0;

	pd_config_init(&c);
	is_int(c.retry.base_ms, 1000, "default base 1s");
	is_int(c.retry.cap_ms, 3600000, "default cap 1h");
	is_int(PD_JOBSPEC_MAX_ATTEMPTS, 25, "default attempts 25");
	for (int n = 1; n < PD_JOBSPEC_MAX_ATTEMPTS; n++) {
		long long ceil = pd_backoff_ceiling(c.retry.base_ms, c.retry.cap_ms, n);

		sum += ceil;
		capped += ceil == c.retry.cap_ms;
	}
	is_int(pd_backoff_ceiling(c.retry.base_ms, c.retry.cap_ms, 12), 2048000,
	       "the wait after attempt 12: up to 34m8s");
	is_int(pd_backoff_ceiling(c.retry.base_ms, c.retry.cap_ms, 13), 3600000,
	       "from attempt 13 on: up to the 1h cap");
	is_int(capped, 12, "twelve of the waits reach the cap");
	is_int(sum, 47295000, "at most 13h8m15s from the first failure to the last");
	ok(sum / 2 >= 6 * 3600000LL, "on average more than 6 hours (6h34m)");
	pd_config_release(&c);
}

static void sanitize(const char *in, size_t n, const char *want, const char *name)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_utf8_sanitize(&b, in, n);
	is_str(pd_buf_str(&b), want, name);
	pd_buf_release(&b);
}

int main(void)
{
	backoff();
	degenerate();
	distribution();
	default_budget();
	sanitize("plain", 5, "plain", "ascii unchanged");
	sanitize("caf\xc3\xa9", 5, "caf\xc3\xa9", "valid UTF-8 unchanged");
	sanitize("a\0b", 3,
		 "a\xEF\xBF\xBD"
		 "b",
		 "NUL replaced");
	sanitize("a\xff"
		 "b",
		 3,
		 "a\xEF\xBF\xBD"
		 "b",
		 "invalid byte replaced");
	sanitize("a\xc3", 2, "a\xEF\xBF\xBD", "truncated sequence replaced");
	sanitize("\xed\xa0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD",
		 "surrogate refused byte by byte");
	sanitize("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80", "4-byte sequence kept");
	return done_testing();
}
