/* Backoff: the ceiling doubles from base up to cap; jitter stays within it. */
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
