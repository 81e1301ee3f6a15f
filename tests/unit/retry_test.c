/* Backoff: the ceiling doubles from base up to cap; jitter stays within it. */
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
