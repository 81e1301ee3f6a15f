/*
 * dur_test: every accepted and refused duration and instant form, and the
 * exact formatted output.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "dur.h"
#include "tap.h"

static void dur_ok(const char *s, long long want)
{
	struct pd_err e = PD_ERR_INIT;
	long long ms = -42;
	char name[128];

	snprintf(name, sizeof(name), "duration '%s' is %lld ms", s, want);
	if (!ok(pd_dur_parse(s, &ms, &e) == 0 && ms == want, name))
		printf("#   got %lld, error '%s'\n", ms, e.msg);
}

static void dur_bad(const char *s, const char *why)
{
	struct pd_err e = PD_ERR_INIT;
	long long ms = -42;
	char name[128], want[256];

	snprintf(name, sizeof(name), "duration '%s' is refused", s);
	ok(pd_dur_parse(s, &ms, &e) == -1 && ms == -42 && e.code == PD_EX_DATAERR, name);
	snprintf(want, sizeof(want), "invalid duration '%s': %s", s, why);
	is_str(e.msg, want, "  with the message");
}

/* Well-formed but longer than 100 years: -2, code 65. */
static void dur_big(const char *s)
{
	struct pd_err e = PD_ERR_INIT;
	long long ms = -42;
	char name[128], want[256];

	snprintf(name, sizeof(name), "duration '%s' is refused as too long", s);
	ok(pd_dur_parse(s, &ms, &e) == -2 && ms == -42 && e.code == PD_EX_DATAERR, name);
	snprintf(want, sizeof(want), "invalid duration '%s': more than 100 years (36525d)", s);
	is_str(e.msg, want, "  with the message");
}

static void dur_fmt(long long ms, const char *want)
{
	char out[PD_DUR_MAX], name[128];
	struct pd_err e = PD_ERR_INIT;
	long long back = 0;

	pd_dur_format(ms, out, sizeof(out));
	snprintf(name, sizeof(name), "%lld ms formats as '%s'", ms, want);
	is_str(out, want, name);
	if (ms >= 0 && ms <= PD_DUR_MAX_MS)
		ok(pd_dur_parse(out, &back, &e) == 0 && back == ms, "  and parses back");
}

static void inst_ok(const char *s, long long want_us)
{
	struct pd_err e = PD_ERR_INIT;
	long long us = -42;
	char name[160];

	snprintf(name, sizeof(name), "instant '%s' is %lld us", s, want_us);
	if (!ok(pd_instant_parse(s, &us, &e) == 0 && us == want_us, name))
		printf("#   got %lld, error '%s'\n", us, e.msg);
}

static void inst_bad(const char *s, const char *why)
{
	struct pd_err e = PD_ERR_INIT;
	long long us = -42;
	char name[160], want[300];

	snprintf(name, sizeof(name), "instant '%s' is refused", s);
	ok(pd_instant_parse(s, &us, &e) == -1 && us == -42 && e.code == PD_EX_DATAERR, name);
	snprintf(want, sizeof(want), "invalid instant '%s': %s", s, why);
	is_str(e.msg, want, "  with the message");
}

static void inst_fmt(long long us, const char *want)
{
	char out[PD_INSTANT_MAX], name[128];

	pd_instant_format(us, out, sizeof(out));
	snprintf(name, sizeof(name), "%lld us formats as '%s'", us, want);
	is_str(out, want, name);
}

static const char expected[] = "expected a number with ms, s, m, h or d";

/* 2026-03-29T01:30:00Z */
#define T0 1774747800LL

int main(void)
{
	struct pd_err e = PD_ERR_INIT;
	char small[8];
	long long v;

	/* Durations: every unit, plain seconds, fractions, sums. */
	dur_ok("250ms", 250);
	dur_ok("30s", 30000);
	dur_ok("5m", 300000);
	dur_ok("2h", 7200000);
	dur_ok("1d", 86400000);
	dur_ok("0", 0);
	dur_ok("0s", 0);
	dur_ok("0ms", 0);
	dur_ok("12", 12000);
	dur_ok("1.5", 1500);
	dur_ok("0.25", 250);
	dur_ok("1.5m", 90000);
	dur_ok("0.5d", 43200000);
	dur_ok("1.5ms", 1);
	dur_ok("0.0001s", 0);
	dur_ok("1.123456789123s", 1123);
	dur_ok("007s", 7000);
	dur_ok("1h30m", 5400000);
	dur_ok("1d2h3m4s5ms", 93784005);
	dur_ok("1m30s500ms", 90500);
	dur_ok("3155760000000ms", PD_DUR_MAX_MS);
	dur_ok("36525d", PD_DUR_MAX_MS);
	dur_ok("36524d23h59m59s999ms", PD_DUR_MAX_MS - 1);
	dur_ok("876600h", PD_DUR_MAX_MS);

	dur_bad("", expected);
	dur_bad("s", expected);
	dur_bad("ms", expected);
	dur_bad("5x", expected);
	dur_bad("5M", expected);
	dur_bad("5sec", expected);
	dur_bad("-1s", expected);
	dur_bad("-1", expected);
	dur_bad("+1", expected);
	dur_bad("1 h", expected);
	dur_bad(" 1h", expected);
	dur_bad("1h ", expected);
	dur_bad(".5s", expected);
	dur_bad("1.s", expected);
	dur_bad("1.", expected);
	dur_bad("1e3", expected);
	dur_bad("0x10", expected);
	dur_bad("1h30", expected);
	dur_bad("30 1h", expected);
	dur_bad("1,5s", expected);
	dur_bad("30m1h", "units must be written largest first, each at most once");
	dur_bad("1s1s", "units must be written largest first, each at most once");
	dur_big("3155760000001ms");
	dur_big("36525d1ms");
	dur_big("36525.5d");
	dur_big("36526d");
	dur_big("9223372036854775807ms");
	dur_big("9223372036854775808ms");
	dur_big("106751991168d");
	dur_big("99999999999999999999s");
	dur_big("99999999999999999999999s");
	dur_big("106751991167d24h");
	dur_big("106751991167d7h12m55s808ms");
	dur_big("2562047788015215h");
	/* The whole days fit 64 bits, the fraction took the sum past them (it overflowed). */
	dur_big("106751991167.99d");
	dur_big("153722867280912.9m");

	/* Long and control-character input is shown shortened and on one line. */
	ok(pd_dur_parse("1\nx", &v, &e) == -1, "a newline is refused");
	is_str(e.msg, "invalid duration '1?x': expected a number with ms, s, m, h or d",
	       "  and shown as '?'");
	pd_err_clear(&e);
	{
		char longs[200];

		memset(longs, '7', sizeof(longs) - 2);
		longs[sizeof(longs) - 2] = 'x';
		longs[sizeof(longs) - 1] = '\0';
		ok(pd_dur_parse(longs, &v, &e) == -1, "a long junk duration is refused");
		like(e.msg, "7777...': expected", "  and shortened with '...'");
		ok(strlen(e.msg) < 140, "  to a short line");
	}
	pd_err_clear(&e);
	e.code = PD_EX_CONFIG;
	snprintf(e.msg, sizeof(e.msg), "earlier");
	pd_dur_parse("x", &v, &e);
	is_str(e.msg, "earlier", "an earlier error is kept (first writer wins)");

	dur_fmt(0, "0s");
	dur_fmt(1, "1ms");
	dur_fmt(250, "250ms");
	dur_fmt(1000, "1s");
	dur_fmt(1500, "1s500ms");
	dur_fmt(30000, "30s");
	dur_fmt(90000, "1m30s");
	dur_fmt(300000, "5m");
	dur_fmt(3600000, "1h");
	dur_fmt(5400000, "1h30m");
	dur_fmt(172800000, "2d");
	dur_fmt(93784005, "1d2h3m4s5ms");
	dur_fmt(LLONG_MAX, "106751991167d7h12m55s807ms");
	dur_fmt(-1500, "-1s500ms");
	dur_fmt(LLONG_MIN, "-106751991167d7h12m55s808ms");
	pd_dur_format(5400000, small, sizeof(small));
	is_str(small, "1h30m", "format fits exactly in a small buffer");
	pd_dur_format(93784005, small, sizeof(small));
	is_str(small, "1d2h3m4", "format truncates to the buffer");
	pd_dur_format(93784005, small, 1);
	is_str(small, "", "format into one byte is empty");

	/* Instants. */
	inst_ok("2026-03-29T01:30:00Z", T0 * 1000000);
	inst_ok("0001-01-01T00:00:00Z", PD_INSTANT_MIN_US);
	inst_ok("0001-01-01", PD_INSTANT_MIN_US);
	inst_ok("0001-01-01T00:30:00-01:00", PD_INSTANT_MIN_US + 5400000000LL);
	inst_ok("9999-12-31T23:59:59.999999Z", 253402300799999999LL);
	inst_ok("9999-12-31T23:00:00-02:00", 253402304400000000LL);
	inst_bad("0000-12-31", "out of range: years 0001 to 9999 (in UTC from 0001)");
	inst_bad("0000-01-01T00:00:00Z", "out of range: years 0001 to 9999 (in UTC from 0001)");
	inst_bad("0001-01-01T00:30:00+01:00",
		 "out of range: years 0001 to 9999 (in UTC from 0001)");
	inst_ok("2026-03-29t01:30:00z", T0 * 1000000);
	inst_ok("2026-03-29 01:30:00Z", T0 * 1000000);
	inst_ok("2026-03-29T01:30Z", T0 * 1000000);
	inst_ok("2026-03-29T01:30:00+00:00", T0 * 1000000);
	inst_ok("2026-03-29T01:30:00-00:00", T0 * 1000000);
	inst_ok("2026-03-29T03:30:00+02:00", T0 * 1000000);
	inst_ok("2026-03-29T03:30:00+0200", T0 * 1000000);
	inst_ok("2026-03-29T03:30:00+02", T0 * 1000000);
	inst_ok("2026-03-28T20:00:00-05:30", T0 * 1000000);
	inst_ok("2026-03-29T01:30:00.123456+02:00", (T0 - 7200) * 1000000 + 123456);
	inst_ok("2026-03-29T01:30:00.5Z", T0 * 1000000 + 500000);
	inst_ok("2026-03-29T01:30:00,5Z", T0 * 1000000 + 500000);
	inst_ok("2026-03-29T01:30:00.123456789Z", T0 * 1000000 + 123456);
	inst_ok("2026-03-29", (T0 - 5400) * 1000000);
	inst_ok("1970-01-01", 0);
	inst_ok("1969-12-31T23:59:59Z", -1000000);
	inst_ok("1969-12-31T23:59:59.5Z", -500000);
	inst_ok("2024-02-29T00:00:00Z", 1709164800LL * 1000000);
	inst_ok("2000-02-29", 951782400LL * 1000000);
	inst_ok("2016-12-31T23:59:60Z", 1483228800LL * 1000000);
	inst_ok("2026-12-31T23:59:59+23:59", (1798761599LL - 86340) * 1000000);

	inst_bad("", "expected a date YYYY-MM-DD");
	inst_bad("2026", "expected a date YYYY-MM-DD");
	inst_bad("2026-3-29", "expected a date YYYY-MM-DD");
	inst_bad("26-03-29", "expected a date YYYY-MM-DD");
	inst_bad("2026/03/29", "expected a date YYYY-MM-DD");
	inst_bad("now", "expected a date YYYY-MM-DD");
	inst_bad("-2026-03-29", "expected a date YYYY-MM-DD");
	inst_bad("2026-00-10", "month 0 is out of range 1-12");
	inst_bad("2026-13-10", "month 13 is out of range 1-12");
	inst_bad("2026-02-29", "day 29 does not exist in 2026-02");
	inst_bad("1900-02-29", "day 29 does not exist in 1900-02");
	inst_bad("2026-04-31", "day 31 does not exist in 2026-04");
	inst_bad("2026-01-00", "day 0 does not exist in 2026-01");
	inst_bad("2026-03-29X01:30Z", "expected 'T' and a time after the date");
	inst_bad("2026-03-29T", "expected a time HH:MM or HH:MM:SS after the date");
	inst_bad("2026-03-29T1:30Z", "expected a time HH:MM or HH:MM:SS after the date");
	inst_bad("2026-03-29T01Z", "expected a time HH:MM or HH:MM:SS after the date");
	inst_bad("2026-03-29T01:3Z", "expected a time HH:MM or HH:MM:SS after the date");
	inst_bad("2026-03-29T01:30:0Z", "expected two digits of seconds");
	inst_bad("2026-03-29T01:30:00.Z", "expected digits after the decimal point");
	inst_bad("2026-03-29T24:00:00Z", "hour 24 is out of range 0-23");
	inst_bad("2026-03-29T01:60:00Z", "minute 60 is out of range 0-59");
	inst_bad("2026-03-29T01:30:61Z", "second 61 is out of range 0-60");
	inst_bad("2026-03-29T01:30:00", "no time zone: add Z for UTC or an offset such as +02:00 "
					"(a local time is ambiguous)");
	inst_bad("2026-03-29T01:30", "no time zone: add Z for UTC or an offset such as +02:00 "
				     "(a local time is ambiguous)");
	inst_bad("2026-03-29T01:30:00 UTC",
		 "expected Z or an offset such as +02:00 after the time");
	inst_bad("2026-03-29T01:30:00.5", "no time zone: add Z for UTC or an offset such as "
					  "+02:00 (a local time is ambiguous)");
	inst_bad("2026-03-29T01:30:00+2", "expected an offset +HH:MM, +HHMM or +HH");
	inst_bad("2026-03-29T01:30:00+02:", "expected an offset +HH:MM, +HHMM or +HH");
	inst_bad("2026-03-29T01:30:00+02:3", "expected an offset +HH:MM, +HHMM or +HH");
	inst_bad("2026-03-29T01:30:00+020", "expected an offset +HH:MM, +HHMM or +HH");
	inst_bad("2026-03-29T01:30:00+24:00", "offset +24:00 is out of range");
	inst_bad("2026-03-29T01:30:00-01:60", "offset -01:60 is out of range");
	inst_bad("2026-03-29T01:30:00ZZ", "unexpected text after the time zone");
	inst_bad("2026-03-29T01:30:00+02:00:00", "unexpected text after the time zone");
	inst_bad("2026-03-29T01:30:00+02:0012", "unexpected text after the time zone");
	inst_bad("2026-03-29T01:30:00Z ", "unexpected text after the time zone");

	inst_fmt(T0 * 1000000, "2026-03-29T01:30:00Z");
	inst_fmt(T0 * 1000000 + 123456, "2026-03-29T01:30:00.123456Z");
	inst_fmt(T0 * 1000000 + 1, "2026-03-29T01:30:00.000001Z");
	inst_fmt(0, "1970-01-01T00:00:00Z");
	inst_fmt(-1, "1969-12-31T23:59:59.999999Z");
	inst_fmt(-1000000, "1969-12-31T23:59:59Z");
	inst_fmt(253402300799999999LL, "9999-12-31T23:59:59.999999Z");
	{
		char out[PD_INSTANT_MAX];
		long long back = 0;

		pd_instant_format(T0 * 1000000 + 42, out, sizeof(out));
		pd_err_clear(&e);
		ok(pd_instant_parse(out, &back, &e) == 0 && back == T0 * 1000000 + 42,
		   "a formatted instant parses back");
		pd_instant_format(T0 * 1000000, small, sizeof(small));
		is_str(small, "2026-03", "instant format truncates to the buffer");
	}
	return done_testing();
}
