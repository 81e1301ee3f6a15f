/*
 * Option values and the priority: pd_cli_int (bounds, overflow, signs,
 * empty, junk), pd_cli_dur (units, signs, the 100-year maximum, overflow,
 * empty) and pd_priority_parse (the words, the +-1000000 bounds), each
 * refusal with its exit code and the option it names.
 */
#include <limits.h>
#include <string.h>

#include "cli.h"
#include "dur.h"
#include "err.h"
#include "jobspec.h"
#include "tap.h"

static void int_ok(const char *s, long long min, long long max, long long want, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = 12345;

	is_int(pd_cli_int("-n", s, min, max, &v, &e), 0, name);
	is_int(v, want, name);
}

static void int_bad(const char *s, long long min, long long max, const char *msg, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = 12345;

	is_int(pd_cli_int("-n", s, min, max, &v, &e), -1, name);
	is_int(e.code, 64, name);
	like(e.msg, msg, name);
	is_int(v, 12345, name); /* nothing half-written */
}

static void dur_ok(const char *s, long long want, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = 12345;

	is_int(pd_cli_dur("--lease", s, &v, &e), 0, name);
	is_int(v, want, name);
}

static void dur_bad(const char *s, int code, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = 12345;

	is_int(pd_cli_dur("--lease", s, &v, &e), -1, name);
	is_int(e.code, code, name);
	like(e.msg, "option --lease: invalid duration", name);
}

static void prio_ok(const char *s, long long want, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = 12345;

	is_int(pd_priority_parse(s, &v, &e), 0, name);
	is_int(v, want, name);
}

static void prio_bad(const char *s, const char *shown, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = 12345;
	char want[128];

	snprintf(want, sizeof(want), "invalid priority '%s'", shown);
	is_int(pd_priority_parse(s, &v, &e), -1, name);
	is_int(e.code, 65, name);
	like(e.msg, want, name);
	is_int(v, 12345, name);
}

int main(void)
{
	int_ok("0", 0, 10, 0, "int: 0 at the lower bound");
	int_ok("10", 0, 10, 10, "int: 10 at the upper bound");
	int_ok("-10", -10, 10, -10, "int: a negative number");
	int_ok("-0", 0, 10, 0, "int: -0 is 0");
	int_ok("+7", 0, 10, 7, "int: a plus sign");
	int_ok("007", 0, 10, 7, "int: leading zeros are decimal, not octal");
	int_ok("9223372036854775807", 0, LLONG_MAX, LLONG_MAX, "int: LLONG_MAX");
	int_ok("-9223372036854775808", LLONG_MIN, 0, LLONG_MIN, "int: LLONG_MIN");
	int_bad("11", 0, 10, "option -n: 11 is out of range 0-10", "int: above the maximum");
	int_bad("-1", 0, 10, "option -n: -1 is out of range 0-10", "int: below the minimum");
	int_bad("9223372036854775808", 0, LLONG_MAX, "'9223372036854775808' is not a whole number",
		"int: one past LLONG_MAX overflows");
	int_bad("-9223372036854775809", LLONG_MIN, 0, "is not a whole number",
		"int: one below LLONG_MIN overflows");
	int_bad("99999999999999999999999", 0, 10, "is not a whole number", "int: far too large");
	int_bad("", 0, 10, "option -n: '' is not a whole number", "int: empty");
	int_bad("-", 0, 10, "is not a whole number", "int: a sign alone");
	int_bad("+", 0, 10, "is not a whole number", "int: a plus alone");
	int_bad("--5", 0, 10, "is not a whole number", "int: two signs");
	int_bad("5 ", 0, 10, "is not a whole number", "int: a trailing space");
	int_bad(" 5", 0, 10, "is not a whole number", "int: a leading space");
	int_bad("\t5", 0, 10, "is not a whole number", "int: a leading tab");
	int_bad("1.0", 0, 10, "is not a whole number", "int: a fraction");
	int_bad("1e3", 0, 10000, "is not a whole number", "int: an exponent");
	int_bad("0x10", 0, 100, "is not a whole number", "int: hex");
	int_bad("5s", 0, 10, "is not a whole number", "int: a unit");
	int_bad("abc", 0, 10, "is not a whole number", "int: a word");

	dur_ok("0", 0, "dur: 0");
	dur_ok("5", 5000, "dur: a bare number is seconds");
	dur_ok("1.5", 1500, "dur: a bare fraction of seconds");
	dur_ok("250ms", 250, "dur: ms");
	dur_ok("1.5m", 90000, "dur: a fraction of minutes");
	dur_ok("1h30m", 5400000, "dur: two units, largest first");
	dur_ok("1d2h3m4s5ms", 93784005, "dur: every unit once");
	dur_ok("0.0001s", 0, "dur: below a millisecond is 0");
	dur_ok("36525d", PD_DUR_MAX_MS, "dur: exactly the 100-year maximum");
	dur_ok("36524d23h59m59s999ms", PD_DUR_MAX_MS - 1, "dur: just below the maximum");
	dur_bad("36525d1ms", 65, "dur: one millisecond past the maximum: 65");
	dur_bad("36526d", 65, "dur: a day past the maximum: 65");
	dur_bad("99999999999999999999999s", 65, "dur: digits past 64 bits: 65, no overflow");
	dur_bad("9223372036854775807ms", 65, "dur: LLONG_MAX ms: 65");
	dur_bad("9223372036854775d", 65, "dur: a product past 64 bits: 65");
	dur_bad("", 64, "dur: empty");
	dur_bad("-5s", 64, "dur: a minus sign");
	dur_bad("+5s", 64, "dur: a plus sign");
	dur_bad(" 5s", 64, "dur: a leading space");
	dur_bad("5 s", 64, "dur: a space before the unit");
	dur_bad("5s ", 64, "dur: a trailing space");
	dur_bad("5S", 64, "dur: units are lower case");
	dur_bad("5x", 64, "dur: an unknown unit");
	dur_bad("s", 64, "dur: a unit alone");
	dur_bad(".5s", 64, "dur: no digit before the point");
	dur_bad("5.s", 64, "dur: no digit after the point");
	dur_bad("1e3s", 64, "dur: an exponent");
	dur_bad("1m1h", 64, "dur: units smallest first");
	dur_bad("1h1h", 64, "dur: a unit twice");
	dur_bad("1h5", 64, "dur: a bare number after a unit");

	prio_ok("high", 10, "priority: high is 10");
	prio_ok("normal", 0, "priority: normal is 0");
	prio_ok("low", -10, "priority: low is -10");
	prio_ok("0", 0, "priority: 0");
	prio_ok("-0", 0, "priority: -0 is 0");
	prio_ok("+5", 5, "priority: a plus sign");
	prio_ok("1000000", 1000000, "priority: the maximum");
	prio_ok("-1000000", -1000000, "priority: the minimum");
	prio_bad("1000001", "1000001", "priority: above the maximum");
	prio_bad("-1000001", "-1000001", "priority: below the minimum");
	prio_bad("99999999999999999999", "99999999999999999999", "priority: past 64 bits");
	prio_bad("-99999999999999999999", "-99999999999999999999",
		 "priority: past 64 bits, negative");
	prio_bad("", "", "priority: empty");
	prio_bad("HIGH", "HIGH", "priority: the words are lower case");
	prio_bad("high ", "high ", "priority: a word with a trailing space");
	prio_bad(" 5", " 5", "priority: a leading space");
	prio_bad("5 ", "5 ", "priority: a trailing space");
	prio_bad("1.5", "1.5", "priority: a fraction");
	prio_bad("0x10", "0x10", "priority: hex");
	prio_bad("-", "-", "priority: a sign alone");
	prio_bad("urgent", "urgent", "priority: an unknown word");
	prio_bad("high\nlow", "high low", "priority: a newline shown as a space");
	return done_testing();
}
