/*
 * cron_test: the parser (bit masks and every error message), time zone
 * checks, and next-fire instants across daylight-saving changes in four
 * zones, with expected instants written as UTC ISO strings. A brute-force
 * reference built on glibc's localtime_r checks every fire around each
 * transition independently of the code under test.
 */
#include <sys/stat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cron.h"
#include "tap.h"

static long long iso(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	if (sscanf(s, "%d-%d-%dT%d:%d:%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec) != 6) {
		printf("Bail out! bad ISO time '%s' in the test\n", s);
		exit(255);
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (long long)timegm(&tm);
}

/* t as "2026-03-29T01:30:00Z", in one of a few rotating buffers. */
static const char *utc(long long t)
{
	static char bufs[8][64];
	static int i;
	char *b = bufs[i++ % 8];
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(b, 64, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return b;
}

static uint64_t bits(const char *list)
{
	uint64_t b = 0;
	char *end;

	for (const char *s = list; *s;) {
		b |= (uint64_t)1 << strtol(s, &end, 10);
		s = *end == ',' ? end + 1 : end;
	}
	return b;
}

/* The next fire as an ISO string, or "error: <message>". */
static const char *next_iso(const char *expr, const char *zone, const char *after)
{
	static char bufs[8][600];
	static int i;
	char *b = bufs[i++ % 8];
	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;
	long long t;

	if (pd_cron_parse(&c, expr, &e) < 0 || pd_cron_next(&c, zone, iso(after), &t, &e) < 0)
		snprintf(b, 600, "error: %s", e.msg);
	else
		snprintf(b, 600, "%s", utc(t));
	return b;
}

/* The first n fires after `after`, space separated. */
static const char *seq(const char *expr, const char *zone, const char *after, int n)
{
	static char b[2048];
	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;
	long long t = iso(after);

	b[0] = '\0';
	if (pd_cron_parse(&c, expr, &e) < 0) {
		snprintf(b, sizeof b, "error: %s", e.msg);
		return b;
	}
	for (int i = 0; i < n; i++) {
		long long prev = t;
		if (pd_cron_next(&c, zone, t, &t, &e) < 0) {
			snprintf(b, sizeof b, "error: %s", e.msg);
			return b;
		}
		if (t <= prev)
			return "error: not strictly after";
		if (i > 0)
			strcat(b, " ");
		strcat(b, utc(t));
	}
	return b;
}

/* The number of fires in [from, to). */
static int count(const char *expr, const char *zone, const char *from, const char *to)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;
	long long t = iso(from) - 1, end = iso(to);
	int n = 0;

	if (pd_cron_parse(&c, expr, &e) < 0)
		return -1;
	for (;;) {
		long long prev = t;
		if (pd_cron_next(&c, zone, t, &t, &e) < 0 || t <= prev)
			return -1;
		if (t >= end)
			return n;
		n++;
	}
}

static const char *local(const char *when, const char *zone)
{
	static char bufs[4][80];
	static int i;
	char *b = bufs[i++ % 4];

	if (pd_cron_local(iso(when), zone, b, 80) < 0)
		return "error";
	return b;
}

static void test_parse_masks(void)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;

	ok(pd_cron_parse(&c, "* * * * *", &e) == 0, "'* * * * *' parses");
	ok(c.minute == 0x0FFFFFFFFFFFFFFFULL, "* minute: bits 0..59");
	is_int(c.hour, 0xFFFFFF, "* hour: bits 0..23");
	is_int(c.dom, 0xFFFFFFFEu, "* day-of-month: bits 1..31");
	is_int(c.month, 0x1FFE, "* month: bits 1..12");
	is_int(c.dow, 0x7F, "* day-of-week: bits 0..6");
	ok(c.dom_star && c.dow_star, "* * : both starred");

	ok(pd_cron_parse(&c, "5 4 3 2 1", &e) == 0, "single values parse");
	ok(c.minute == bits("5") && c.hour == bits("4") && c.dom == bits("3") &&
	       c.month == bits("2") && c.dow == bits("1"),
	   "single values: one bit each");
	ok(!c.dom_star && !c.dow_star, "single values: neither starred");

	ok(pd_cron_parse(&c, "1-5 */6 10-20/5 */4 1-5", &e) == 0, "ranges and steps parse");
	ok(c.minute == bits("1,2,3,4,5"), "1-5");
	ok(c.hour == bits("0,6,12,18"), "*/6 hours");
	ok(c.dom == bits("10,15,20"), "10-20/5");
	ok(c.month == bits("1,5,9"), "*/4 months start at 1");
	ok(pd_cron_parse(&c, "5/20 7/8 28/2 11/1 3/2", &e) == 0, "a/n parses");
	ok(c.minute == bits("5,25,45"), "5/20 means 5-59/20");
	ok(c.hour == bits("7,15,23"), "7/8 means 7-23/8");
	ok(c.dom == bits("28,30"), "28/2 means 28-31/2");
	ok(c.month == bits("11,12"), "11/1 means 11-12");
	ok(c.dow == bits("3,5"), "3/2 in day-of-week stops at saturday");
	ok(pd_cron_parse(&c, "1,2-4,*/30 0,12 1,15,31 * *", &e) == 0, "lists parse");
	ok(c.minute == bits("0,1,2,3,4,30"), "1,2-4,*/30");
	ok(c.hour == bits("0,12") && c.dom == bits("1,15,31"), "plain lists");
	ok(pd_cron_parse(&c, "*/60 */24 */31 */12 */7", &e) == 0, "steps as large as the span");
	ok(c.minute == 1 && c.hour == 1 && c.dom == bits("1") && c.month == bits("1") && c.dow == 1,
	   "a step of the whole span keeps only the first value");

	ok(pd_cron_parse(&c, "0 0 * jan-MAR Mon-fri", &e) == 0, "names in ranges, any case");
	ok(c.month == bits("1,2,3") && c.dow == bits("1,2,3,4,5"), "jan-MAR, Mon-fri");
	ok(pd_cron_parse(&c, "0 0 * JUL,aug,Dec SUN,sat", &e) == 0, "names in lists");
	ok(c.month == bits("7,8,12") && c.dow == bits("0,6"), "JUL,aug,Dec SUN,sat");
	ok(pd_cron_parse(&c, "0 0 * jan-dec/3 mon-sat/2", &e) == 0, "names with steps");
	ok(c.month == bits("1,4,7,10") && c.dow == bits("1,3,5"), "jan-dec/3 mon-sat/2");

	ok(pd_cron_parse(&c, "0 0 * * 7", &e) == 0 && c.dow == bits("0"), "7 is sunday");
	ok(pd_cron_parse(&c, "0 0 * * 0,7", &e) == 0 && c.dow == bits("0"), "0,7 is one day");
	ok(pd_cron_parse(&c, "0 0 * * 5-7", &e) == 0 && c.dow == bits("0,5,6"), "5-7 is fri-sun");
	ok(pd_cron_parse(&c, "0 0 * * 0-7", &e) == 0 && c.dow == 0x7F, "0-7 is every day");
	ok(pd_cron_parse(&c, "0 0 * * sat-7", &e) == 0 && c.dow == bits("0,6"), "sat-7");

	ok(pd_cron_parse(&c, " \t 0\t0 \n *  *\v* \r\n", &e) == 0, "any whitespace around fields");
	ok(c.minute == 1 && c.hour == 1 && c.dow == 0x7F, "whitespace: fields right");

	ok(pd_cron_parse(&c, "0 0 */2 * mon", &e) == 0 && c.dom_star && !c.dow_star,
	   "*/2 day-of-month counts as starred (Vixie: begins with '*')");
	ok(pd_cron_parse(&c, "0 0 1-31 * *", &e) == 0 && !c.dom_star && c.dow_star,
	   "1-31 counts as restricted");
	ok(pd_cron_parse(&c, "0 0 * * */1", &e) == 0 && c.dom_star && c.dow_star,
	   "*/1 day-of-week counts as starred");
	ok(pd_cron_parse(&c, "0 0 13 * fri", &e) == 0 && !c.dom_star && !c.dow_star,
	   "13 and fri: both restricted");
	is_int(e.code, 0, "no error recorded by successful parses");
}

static void test_parse_macros(void)
{
	static const struct {
		const char *macro, *same;
	} m[] = {
	    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"},  {"@monthly", "0 0 1 * *"},
	    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},	   {"@midnight", "0 0 * * *"},
	    {"@hourly", "0 * * * *"}, {"  @Daily\t", "0 0 * * *"}, {"@HOURLY", "0 * * * *"},
	};
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		struct pd_err e = PD_ERR_INIT;
		struct pd_cron a, b;
		char name[80];
		int ra = pd_cron_parse(&a, m[i].macro, &e), rb = pd_cron_parse(&b, m[i].same, &e);
		snprintf(name, sizeof name, "'%s' is '%s'", m[i].macro, m[i].same);
		ok(ra == 0 && rb == 0 && memcmp(&a, &b, sizeof a) == 0, name);
	}
	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;
	ok(pd_cron_parse(&c, "@weekly", &e) == 0 && c.dom_star && !c.dow_star && c.dow == 1,
	   "@weekly: sunday, day-of-month starred");
	ok(pd_cron_parse(&c, "@monthly", &e) == 0 && !c.dom_star && c.dow_star && c.dom == 2,
	   "@monthly: the 1st, day-of-week starred");
}

static void test_parse_errors(void)
{
	static const struct {
		const char *expr, *msg;
	} bad[] = {
	    {"61 * * * *", "minute field '61': value 61 out of range 0-59"},
	    {"* 24 * * *", "hour field '24': value 24 out of range 0-23"},
	    {"0 0 0 * *", "day-of-month field '0': value 0 out of range 1-31"},
	    {"0 0 32 * *", "day-of-month field '32': value 32 out of range 1-31"},
	    {"0 0 * 0 *", "month field '0': value 0 out of range 1-12"},
	    {"0 0 * 13 *", "month field '13': value 13 out of range 1-12"},
	    {"0 0 * * 8", "day-of-week field '8': value 8 out of range 0-7"},
	    {"0 0 * * 1-8", "day-of-week field '1-8': value 8 out of range 0-7"},
	    {"99999999999 * * * *",
	     "minute field '99999999999': value 99999999999 out of range 0-59"},
	    {"0 */0 * * *", "hour field '*/0': step must be at least 1"},
	    {"*/61 * * * *", "minute field '*/61': step 61 out of range 1-60"},
	    {"0 0 * * */8", "day-of-week field '*/8': step 8 out of range 1-7"},
	    {"30-10 * * * *", "minute field '30-10': range start 30 is after its end 10"},
	    {"0 0 * * fri-mon",
	     "day-of-week field 'fri-mon': range start fri is after its end mon"},
	    {"0 0 * dec-jan *", "month field 'dec-jan': range start dec is after its end jan"},
	    {"* * * *", "expected 5 fields, got 4"},
	    {"* * * * * *", "expected 5 fields, got 6"},
	    {"0 0 * * fry", "day-of-week field 'fry': unknown name 'fry'"},
	    {"0 0 * * monday", "day-of-week field 'monday': unknown name 'monday'"},
	    {"0 0 * janu *", "month field 'janu': unknown name 'janu'"},
	    {"0 0 * mon *", "month field 'mon': unknown name 'mon'"},
	    {"0 0 * * jan", "day-of-week field 'jan': unknown name 'jan'"},
	    {"@fortnightly", "unknown macro '@fortnightly'"},
	    {"@reboot", "unknown macro '@reboot'"},
	    {"@", "unknown macro '@'"},
	    {"@daily 5", "unexpected '5' after '@daily'"},
	    {"a b c d e", "minute field 'a': expected a number at 'a'"},
	    {"jan * * * *", "minute field 'jan': expected a number at 'jan'"},
	    {"0 0 1-jan * *", "day-of-month field '1-jan': expected a number at 'jan'"},
	    {"1,,2 * * * *", "minute field '1,,2': empty list item"},
	    {"1, * * * *", "minute field '1,': empty list item"},
	    {",1 * * * *", "minute field ',1': empty list item"},
	    {"1- * * * *", "minute field '1-': missing range end after '-'"},
	    {"1-,2 * * * *", "minute field '1-,2': missing range end after '-'"},
	    {"0 0 * * mon-", "day-of-week field 'mon-': missing range end after '-'"},
	    {"-1 * * * *", "minute field '-1': expected a number at '-1'"},
	    {"*/ * * * *", "minute field '*/': missing step after '/'"},
	    {"5/ * * * *", "minute field '5/': missing step after '/'"},
	    {"*/x * * * *", "minute field '*/x': expected a number at 'x'"},
	    {"*/-1 * * * *", "minute field '*/-1': expected a number at '-1'"},
	    {"** * * * *", "minute field '**': unexpected '*'"},
	    {"*-5 * * * *", "minute field '*-5': unexpected '-5'"},
	    {"1-5-7 * * * *", "minute field '1-5-7': unexpected '-7'"},
	    {"*/2/3 * * * *", "minute field '*/2/3': unexpected '/3'"},
	    {"1.5 * * * *", "minute field '1.5': unexpected '.5'"},
	    {"5a * * * *", "minute field '5a': unexpected 'a'"},
	    {"", "empty expression"},
	    {" \t ", "empty expression"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pd_err e = PD_ERR_INIT;
		struct pd_cron c;
		char want[512], shown[64], name[128];
		size_t j;
		for (j = 0; bad[i].expr[j] && j < sizeof shown - 1; j++)
			shown[j] = bad[i].expr[j] == '\t' ? ' ' : bad[i].expr[j];
		shown[j] = '\0';
		snprintf(want, sizeof want, "invalid cron expression '%s': %s", shown, bad[i].msg);
		snprintf(name, sizeof name, "rejects '%s'", bad[i].expr);
		ok(pd_cron_parse(&c, bad[i].expr, &e) == -1, name);
		is_str(e.msg, want, name);
		is_int(e.code, PD_EX_DATAERR, name);
	}

	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;
	ok(pd_cron_parse(&c, NULL, &e) == -1, "NULL is rejected");
	is_str(e.msg, "invalid cron expression '': empty expression", "NULL: empty expression");

	char longx[420];
	memset(longx, '1', 400);
	strcpy(longx + 400, " * * * *");
	pd_err_clear(&e);
	ok(pd_cron_parse(&c, longx, &e) == -1, "a 400-digit minute is rejected");
	like(e.msg, "...': minute field '", "long text is cut short in the message");
	ok(strlen(e.msg) < 260, "the message stays short");

	pd_err_clear(&e);
	ok(pd_cron_parse(&c, "1\x01 * * * *", &e) == -1, "control byte rejected");
	is_str(e.msg, "invalid cron expression '1? * * * *': minute field '1?': unexpected '?'",
	       "control bytes are shown as '?'");
}

static void test_tz_check(void)
{
	static const char *good[] = {
	    "UTC",	  "Europe/Berlin",    "Australia/Lord_Howe", "Etc/GMT-3",
	    "Etc/GMT+12", "America/New_York", "Australia/Sydney",    "Asia/Kolkata",
	    "EST5EDT"};
	static const struct {
		const char *zone, *msg;
	} bad[] = {
	    {"+02:00", "time zone '+02:00' is a fixed offset; use an IANA zone such as "
		       "'Europe/Berlin' so daylight-saving changes are followed"},
	    {"UTC+2", "time zone 'UTC+2' is a fixed offset; use an IANA zone such as "
		      "'Europe/Berlin' so daylight-saving changes are followed"},
	    {"GMT-3", "time zone 'GMT-3' is a fixed offset; use an IANA zone such as "
		      "'Europe/Berlin' so daylight-saving changes are followed"},
	    {"-0500", "time zone '-0500' is a fixed offset; use an IANA zone such as "
		      "'Europe/Berlin' so daylight-saving changes are followed"},
	    {"Z", "time zone 'Z' is a fixed offset; use an IANA zone such as "
		  "'Europe/Berlin' so daylight-saving changes are followed"},
	    {"EST5EDT,M3.2.0,M11.1.0",
	     "time zone 'EST5EDT,M3.2.0,M11.1.0' is a POSIX TZ string; use an IANA zone such "
	     "as 'America/New_York' so daylight-saving changes are followed"},
	    {"CET-1CEST", "time zone 'CET-1CEST' is a POSIX TZ string; use an IANA zone such "
			  "as 'America/New_York' so daylight-saving changes are followed"},
	    {"<+0330>-3:30", "time zone '<+0330>-3:30' is a POSIX TZ string; use an IANA zone "
			     "such as 'America/New_York' so daylight-saving changes are "
			     "followed"},
	    {"Mars/Base", "unknown time zone 'Mars/Base': not in the tz database "
			  "(/usr/share/zoneinfo)"},
	    {"europe/berlin", "unknown time zone 'europe/berlin': not in the tz database "
			      "(/usr/share/zoneinfo)"},
	    {"Europe//Berlin", "unknown time zone 'Europe//Berlin': not in the tz database "
			       "(/usr/share/zoneinfo)"},
	    {"Europe/Berlin/", "unknown time zone 'Europe/Berlin/': not in the tz database "
			       "(/usr/share/zoneinfo)"},
	    {"./UTC", "unknown time zone './UTC': not in the tz database (/usr/share/zoneinfo)"},
	    {"Europe", "unknown time zone 'Europe': not a TZif file in the tz database "
		       "(/usr/share/zoneinfo)"},
	    {"../etc/passwd", "invalid time zone '../etc/passwd': '..' is not allowed"},
	    {"Europe/../UTC", "invalid time zone 'Europe/../UTC': '..' is not allowed"},
	    {"/usr/share/zoneinfo/UTC", "invalid time zone '/usr/share/zoneinfo/UTC': absolute "
					"paths are not allowed; use an IANA zone such as "
					"'Europe/Berlin'"},
	    {"localtime", "time zone 'localtime' is the host's zone; use an IANA zone such as "
			  "'Europe/Berlin'"},
	    {"", "invalid time zone '': empty name"},
	    {"Europe/Ber lin", "unknown time zone 'Europe/Ber lin': not in the tz database "
			       "(/usr/share/zoneinfo)"},
	};
	struct pd_err e = PD_ERR_INIT;
	char name[128];

	unsetenv("TZDIR");
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		pd_err_clear(&e);
		snprintf(name, sizeof name, "accepts '%s'", good[i]);
		ok(pd_tz_check(good[i], &e) == 0, name);
		if (e.code)
			diag(e.msg);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		pd_err_clear(&e);
		snprintf(name, sizeof name, "refuses '%s'", bad[i].zone);
		ok(pd_tz_check(bad[i].zone, &e) == -1, name);
		is_str(e.msg, bad[i].msg, name);
		is_int(e.code, PD_EX_DATAERR, name);
	}
	pd_err_clear(&e);
	ok(pd_tz_check(NULL, &e) == -1, "refuses NULL");
	is_str(e.msg, "invalid time zone '': empty name", "NULL: empty name");
	if (access("/usr/share/zoneinfo/zone.tab", F_OK) == 0) {
		pd_err_clear(&e);
		ok(pd_tz_check("zone.tab", &e) == -1, "refuses zone.tab");
		is_str(e.msg,
		       "unknown time zone 'zone.tab': not a TZif file in the tz database "
		       "(/usr/share/zoneinfo)",
		       "zone.tab is not a TZif file");
	}
	if (access("/usr/share/zoneinfo/right/UTC", F_OK) == 0) {
		pd_err_clear(&e);
		ok(pd_tz_check("right/UTC", &e) == -1, "refuses right/UTC");
		is_str(e.msg,
		       "time zone 'right/UTC' counts leap seconds; use the zone without the "
		       "'right/' prefix",
		       "right/ zones count leap seconds");
	}

	/* $TZDIR is honoured: a private database with a copy of UTC, junk and a cut file. */
	char dir[] = "/tmp/cron_test.XXXXXX", path[256];
	FILE *in, *out;
	char data[4096];
	size_t n = 0;
	if (!ok(mkdtemp(dir) != NULL, "private TZDIR created"))
		return;
	in = fopen("/usr/share/zoneinfo/UTC", "rb");
	if (in) {
		n = fread(data, 1, sizeof data, in);
		fclose(in);
	}
	snprintf(path, sizeof path, "%s/My", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof path, "%s/My/UTC", dir);
	if ((out = fopen(path, "wb")) != NULL) {
		fwrite(data, 1, n, out);
		fclose(out);
	}
	snprintf(path, sizeof path, "%s/Junk", dir);
	if ((out = fopen(path, "wb")) != NULL) {
		fputs("this is not a TZif file, just some text long enough to be read\n", out);
		fclose(out);
	}
	snprintf(path, sizeof path, "%s/Cut", dir);
	if ((out = fopen(path, "wb")) != NULL) {
		fwrite(data, 1, n > 60 ? 60 : n, out);
		fclose(out);
	}
	setenv("TZDIR", dir, 1);
	pd_err_clear(&e);
	ok(pd_tz_check("My/UTC", &e) == 0, "TZDIR: a zone in the private database");
	pd_err_clear(&e);
	ok(pd_tz_check("Europe/Berlin", &e) == -1, "TZDIR: the system database is not used");
	snprintf(data, sizeof data,
		 "unknown time zone 'Europe/Berlin': not in the tz database (%s)", dir);
	is_str(e.msg, data, "TZDIR: the message names the database used");
	pd_err_clear(&e);
	ok(pd_tz_check("Junk", &e) == -1, "TZDIR: junk file refused");
	snprintf(data, sizeof data,
		 "unknown time zone 'Junk': not a TZif file in the tz database (%s)", dir);
	is_str(e.msg, data, "TZDIR: junk is not a TZif file");
	pd_err_clear(&e);
	ok(pd_tz_check("Cut", &e) == -1, "TZDIR: truncated TZif refused");
	snprintf(data, sizeof data, "time zone 'Cut': corrupt TZif file '%s/Cut'", dir);
	is_str(e.msg, data, "TZDIR: truncated TZif is corrupt");
	is_int(e.code, PD_EX_DATAERR, "TZDIR: corrupt is a data error");
	setenv("TZDIR", "", 1);
	pd_err_clear(&e);
	ok(pd_tz_check("Europe/Berlin", &e) == 0, "an empty TZDIR means the default");
	unsetenv("TZDIR");

	snprintf(path, sizeof path, "%s/My/UTC", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/My", dir);
	rmdir(path);
	snprintf(path, sizeof path, "%s/Junk", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/Cut", dir);
	unlink(path);
	rmdir(dir);

	struct pd_cron c;
	long long t = 0;
	pd_err_clear(&e);
	pd_cron_parse(&c, "* * * * *", &e);
	ok(pd_cron_next(&c, "+02:00", 0, &t, &e) == -1, "pd_cron_next refuses a fixed offset");
	like(e.msg, "time zone '+02:00' is a fixed offset", "pd_cron_next: the zone's message");
}

static void test_dst_berlin(void)
{
	const char *z = "Europe/Berlin";

	/* Spring forward 2026-03-29: 02:00 CET -> 03:00 CEST at 01:00Z. */
	is_str(next_iso("30 2 * * *", z, "2026-03-28T12:00:00Z"), "2026-03-29T01:30:00Z",
	       "Berlin gap: 02:30 fires at 03:30 CEST");
	is_str(local("2026-03-29T01:30:00Z", z), "2026-03-29 03:30:00 CEST",
	       "Berlin gap: that is 03:30 CEST");
	is_str(next_iso("30 2 * * *", z, "2026-03-29T01:10:00Z"), "2026-03-29T01:30:00Z",
	       "Berlin gap: from 03:10 CEST the shifted 02:30 is still ahead");
	is_str(next_iso("30 2 * * *", z, "2026-03-29T01:30:00Z"), "2026-03-30T00:30:00Z",
	       "Berlin gap: then 02:30 CEST the next day");
	is_str(next_iso("0 2 * * *", z, "2026-03-28T12:00:00Z"), "2026-03-29T01:00:00Z",
	       "Berlin gap: 02:00 fires at 03:00 CEST");
	is_str(seq("*/30 * * * *", z, "2026-03-29T00:00:00Z", 5),
	       "2026-03-29T00:30:00Z 2026-03-29T01:00:00Z 2026-03-29T01:30:00Z "
	       "2026-03-29T02:00:00Z 2026-03-29T02:30:00Z",
	       "Berlin gap: */30 is one fire per half hour, no doubles");
	is_int(count("0 * * * *", z, "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"), 23,
	       "Berlin: hourly fires 23 times on the 23-hour day");

	/* Fall back 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z. */
	is_str(next_iso("30 2 * * *", z, "2026-10-24T12:00:00Z"), "2026-10-25T00:30:00Z",
	       "Berlin overlap: 02:30 fires the first time");
	is_str(local("2026-10-25T00:30:00Z", z), "2026-10-25 02:30:00 CEST",
	       "Berlin overlap: that is 02:30 CEST");
	is_str(next_iso("30 2 * * *", z, "2026-10-25T00:30:00Z"), "2026-10-26T01:30:00Z",
	       "Berlin overlap: not again at 02:30 CET");
	is_str(next_iso("30 2 * * *", z, "2026-10-25T01:15:00Z"), "2026-10-26T01:30:00Z",
	       "Berlin overlap: from inside the second 02:xx hour, tomorrow");
	is_str(local("2026-10-25T01:30:00Z", z), "2026-10-25 02:30:00 CET",
	       "Berlin overlap: the second 02:30 is CET");
	is_str(seq("*/30 * * * *", z, "2026-10-24T23:30:00Z", 4),
	       "2026-10-25T00:00:00Z 2026-10-25T00:30:00Z 2026-10-25T02:00:00Z "
	       "2026-10-25T02:30:00Z",
	       "Berlin overlap: */30 skips the repeated hour");
	is_int(count("0 * * * *", z, "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"), 24,
	       "Berlin: hourly fires 24 times on the 25-hour day");
	is_str(next_iso("@daily", z, "2026-03-28T23:00:00Z"), "2026-03-29T22:00:00Z",
	       "Berlin: @daily after the gap day's midnight is the next midnight, 23 h later");
}

static void test_dst_new_york(void)
{
	const char *z = "America/New_York";

	/* 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00Z. */
	is_str(next_iso("30 2 * * *", z, "2026-03-07T12:00:00Z"), "2026-03-08T07:30:00Z",
	       "New York gap: 02:30 fires at 03:30 EDT");
	is_str(local("2026-03-08T07:30:00Z", z), "2026-03-08 03:30:00 EDT",
	       "New York gap: that is 03:30 EDT");
	is_int(count("0 * * * *", z, "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"), 23,
	       "New York: hourly fires 23 times on the 23-hour day");

	/* 2026-11-01: 02:00 EDT -> 01:00 EST at 06:00Z. */
	is_str(next_iso("30 1 * * *", z, "2026-10-31T12:00:00Z"), "2026-11-01T05:30:00Z",
	       "New York overlap: 01:30 fires the first time (EDT)");
	is_str(next_iso("30 1 * * *", z, "2026-11-01T05:30:00Z"), "2026-11-02T06:30:00Z",
	       "New York overlap: then 01:30 EST the next day");
	is_str(seq("*/30 * * * *", z, "2026-11-01T04:45:00Z", 4),
	       "2026-11-01T05:00:00Z 2026-11-01T05:30:00Z 2026-11-01T07:00:00Z "
	       "2026-11-01T07:30:00Z",
	       "New York overlap: */30 skips the repeated 01:xx");
	is_int(count("0 * * * *", z, "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"), 24,
	       "New York: hourly fires 24 times on the 25-hour day");
}

static void test_dst_sydney(void)
{
	const char *z = "Australia/Sydney";

	/* 2026-10-04: 02:00 AEST -> 03:00 AEDT at 2026-10-03T16:00Z. */
	is_str(next_iso("30 2 * * *", z, "2026-10-03T00:00:00Z"), "2026-10-03T16:30:00Z",
	       "Sydney gap: 02:30 fires at 03:30 AEDT");
	is_str(local("2026-10-03T16:30:00Z", z), "2026-10-04 03:30:00 AEDT",
	       "Sydney gap: that is 03:30 AEDT");
	is_int(count("0 * * * *", z, "2026-10-03T14:00:00Z", "2026-10-04T13:00:00Z"), 23,
	       "Sydney: hourly fires 23 times on the 23-hour day");

	/* 2026-04-05: 03:00 AEDT -> 02:00 AEST at 2026-04-04T16:00Z. */
	is_str(next_iso("30 2 * * *", z, "2026-04-04T00:00:00Z"), "2026-04-04T15:30:00Z",
	       "Sydney overlap: 02:30 fires the first time (AEDT)");
	is_str(local("2026-04-04T15:30:00Z", z), "2026-04-05 02:30:00 AEDT",
	       "Sydney overlap: that is 02:30 AEDT");
	is_str(next_iso("30 2 * * *", z, "2026-04-04T15:30:00Z"), "2026-04-05T16:30:00Z",
	       "Sydney overlap: then 02:30 AEST the next day");
	is_int(count("0 * * * *", z, "2026-04-04T13:00:00Z", "2026-04-05T14:00:00Z"), 24,
	       "Sydney: hourly fires 24 times on the 25-hour day");
}

static void test_dst_lord_howe(void)
{
	const char *z = "Australia/Lord_Howe";

	/* 2026-10-04: 02:00 +1030 -> 02:30 +11 at 2026-10-03T15:30Z. */
	is_str(next_iso("15 2 * * *", z, "2026-10-03T00:00:00Z"), "2026-10-03T15:45:00Z",
	       "Lord Howe gap: 02:15 fires at 02:45 +11");
	is_str(local("2026-10-03T15:45:00Z", z), "2026-10-04 02:45:00 +11",
	       "Lord Howe gap: that is 02:45 +11");
	is_str(next_iso("0 2 * * *", z, "2026-10-03T00:00:00Z"), "2026-10-03T15:30:00Z",
	       "Lord Howe gap: 02:00 fires at 02:30 +11");
	is_str(seq("*/15 * * * *", z, "2026-10-03T15:00:00Z", 4),
	       "2026-10-03T15:15:00Z 2026-10-03T15:30:00Z 2026-10-03T15:45:00Z "
	       "2026-10-03T16:00:00Z",
	       "Lord Howe gap: */15 fires 02:00 and 02:30 once, 02:15 at 02:45");
	is_str(seq("7,35 2 * * *", z, "2026-10-03T15:00:00Z", 3),
	       "2026-10-03T15:35:00Z 2026-10-03T15:37:00Z 2026-10-04T15:07:00Z",
	       "Lord Howe gap: 02:35 (natural) fires before 02:07 (shifted to 02:37)");
	is_int(count("0 * * * *", z, "2026-10-03T13:30:00Z", "2026-10-04T13:00:00Z"), 24,
	       "Lord Howe: hourly fires 24 times on the 23.5-hour day (02:00 moves to 02:30)");
	is_int(count("*/30 * * * *", z, "2026-10-03T13:30:00Z", "2026-10-04T13:00:00Z"), 47,
	       "Lord Howe: */30 fires 47 times on the 23.5-hour day");

	/* 2026-04-05: 02:00 +11 -> 01:30 +1030 at 2026-04-04T15:00Z. */
	is_str(next_iso("45 1 * * *", z, "2026-04-04T00:00:00Z"), "2026-04-04T14:45:00Z",
	       "Lord Howe overlap: 01:45 fires the first time (+11)");
	is_str(local("2026-04-04T14:45:00Z", z), "2026-04-05 01:45:00 +11",
	       "Lord Howe overlap: that is 01:45 +11");
	is_str(local("2026-04-04T15:15:00Z", z), "2026-04-05 01:45:00 +1030",
	       "Lord Howe overlap: the second 01:45 is +1030");
	is_str(next_iso("45 1 * * *", z, "2026-04-04T14:45:00Z"), "2026-04-05T15:15:00Z",
	       "Lord Howe overlap: not at the second 01:45, the next day");
	is_int(count("0 * * * *", z, "2026-04-04T13:00:00Z", "2026-04-05T13:30:00Z"), 24,
	       "Lord Howe: hourly fires 24 times on the 24.5-hour day");
	is_int(count("*/30 * * * *", z, "2026-04-04T13:00:00Z", "2026-04-05T13:30:00Z"), 48,
	       "Lord Howe: */30 fires 48 times on the 24.5-hour day");
}

/* A whole year of half-hourly fires in each zone: strictly increasing, 30 to 90 minutes apart. */
/* What pd_cron_dst says of a fire (`pd-cron check`). */
static int dst(const char *expr, const char *zone, const char *at)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;

	if (pd_cron_parse(&c, expr, &e) < 0)
		return -1;
	return pd_cron_dst(&c, zone, iso(at));
}

static void test_dst_kind(void)
{
	is_int(dst("30 2 * * *", "Europe/Berlin", "2026-03-29T01:30:00Z"), PD_DST_GAP,
	       "dst: Berlin 02:30 shifted to 03:30 CEST is a gap");
	is_int(dst("30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z"), PD_DST_TWICE,
	       "dst: New York 01:30 on the fall-back day happens twice");
	is_int(dst("30 2 * * *", "Europe/Berlin", "2026-03-30T00:30:00Z"), PD_DST_NONE,
	       "dst: Berlin 02:30 the next day is neither");
	/* Found by tests/fuzz/cron_fuzz: only the time of day was compared. */
	is_str(next_iso("0 10 30 12 *", "Pacific/Apia", "2011-12-26T00:00:00Z"),
	       "2011-12-30T20:00:00Z", "Apia skipped 2011-12-30: its 10:00 fires on the 31st");
	is_int(dst("0 10 30 12 *", "Pacific/Apia", "2011-12-30T20:00:00Z"), PD_DST_GAP,
	       "dst: a fire shifted past a skipped day is a gap");
}

static void test_year_increasing(void)
{
	static const struct {
		const char *zone;
		int fires; /* 17520 half hours, less the ones that land on a natural fire */
	} y[] = {
	    {"UTC", 17520},
	    {"Europe/Berlin", 17518},
	    {"America/New_York", 17518},
	    {"Australia/Sydney", 17518},
	    {"Australia/Lord_Howe", 17519},
	};
	for (size_t i = 0; i < sizeof y / sizeof y[0]; i++) {
		struct pd_err e = PD_ERR_INIT;
		struct pd_cron c;
		long long t = iso("2026-01-01T00:00:00Z") - 1, end = iso("2027-01-01T00:00:00Z"),
			  prev;
		long long mind = 1LL << 40, maxd = 0;
		int n = 0, increasing = 1, rc = 0;
		char name[128];

		pd_cron_parse(&c, "*/30 * * * *", &e);
		prev = t;
		while ((rc = pd_cron_next(&c, y[i].zone, t, &t, &e)) == 0 && t < end) {
			if (t <= prev) {
				increasing = 0;
				break;
			}
			if (n > 0 && t - prev < mind)
				mind = t - prev;
			if (n > 0 && t - prev > maxd)
				maxd = t - prev;
			prev = t;
			n++;
		}
		snprintf(name, sizeof name, "%s: a year of */30 is strictly increasing", y[i].zone);
		ok(rc == 0 && increasing, name);
		snprintf(name, sizeof name, "%s: a year of */30 fires %d times", y[i].zone,
			 y[i].fires);
		is_int(n, y[i].fires, name);
		snprintf(name, sizeof name, "%s: fires are 30 to 90 minutes apart", y[i].zone);
		ok(mind == 1800 && maxd <= 5400, name);
	}
}

/* ---- a brute-force reference built on glibc localtime_r ---- */

static long gmtoff(long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	localtime_r(&tt, &tm);
	return tm.tm_gmtoff;
}

static int wall_matches(const struct pd_cron *c, long long wall)
{
	time_t tt = (time_t)wall;
	struct tm tm;
	gmtime_r(&tt, &tm);
	if (!((c->minute >> tm.tm_min) & 1) || !((c->hour >> tm.tm_hour) & 1) ||
	    !((c->month >> (tm.tm_mon + 1)) & 1))
		return 0;
	int a = (c->dom >> tm.tm_mday) & 1, b = (c->dow >> tm.tm_wday) & 1;
	return (c->dom_star || c->dow_star) ? (a && b) : (a || b);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/*
 * Every fire in [from, to) per the spec, found by walking UTC minutes: a
 * matching wall time fires at the first instant showing it; wall minutes
 * skipped by a jump fire at (wall - the offset before the jump).
 */
static size_t reference(const struct pd_cron *c, long long from, long long to, long long *out,
			size_t max)
{
	size_t n = 0, m = 0;

	for (long long u = from; u < to && n + 200 < max; u += 60) {
		long long w = u + gmtoff(u), wp = u - 60 + gmtoff(u - 60);
		for (long long L = wp + 60; L < w; L += 60)
			if (wall_matches(c, L))
				out[n++] = L - (wp - (u - 60));
		if (wall_matches(c, w)) {
			int first = 1;
			for (long long v = u - 60; v > u - 4 * 3600; v -= 60)
				if (v + gmtoff(v) == w) {
					first = 0;
					break;
				}
			if (first)
				out[n++] = u;
		}
	}
	qsort(out, n, sizeof *out, cmp_ll);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || out[m - 1] != out[i])
			out[m++] = out[i];
	return m;
}

static void test_reference(void)
{
	static const struct {
		const char *zone, *when, *before, *after;
	} tr[] = {
	    {"Europe/Berlin", "2026-03-29T01:00:00Z", "CET", "CEST"},
	    {"Europe/Berlin", "2026-10-25T01:00:00Z", "CEST", "CET"},
	    {"America/New_York", "2026-03-08T07:00:00Z", "EST", "EDT"},
	    {"America/New_York", "2026-11-01T06:00:00Z", "EDT", "EST"},
	    {"Australia/Sydney", "2026-04-04T16:00:00Z", "AEDT", "AEST"},
	    {"Australia/Sydney", "2026-10-03T16:00:00Z", "AEST", "AEDT"},
	    {"Australia/Lord_Howe", "2026-04-04T15:00:00Z", "+11", "+1030"},
	    {"Australia/Lord_Howe", "2026-10-03T15:30:00Z", "+1030", "+11"},
	};
	static const char *exprs[] = {"*/30 * * * *", "0 * * * *",  "15,45 * * * *",
				      "* 2 * * *",    "30 2 * * *", "*/7 0-4 * * *"};
	static long long ref[20000];
	char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;

	for (size_t i = 0; i < sizeof tr / sizeof tr[0]; i++) {
		char tzv[64], name[200], want[80], got[80];
		long long T = iso(tr[i].when);

		snprintf(tzv, sizeof tzv, ":%s", tr[i].zone);
		setenv("TZ", tzv, 1);
		tzset();
		snprintf(name, sizeof name, "%s changes %s -> %s at %s", tr[i].zone, tr[i].before,
			 tr[i].after, tr[i].when);
		snprintf(want, sizeof want, "%s %s", tr[i].before, tr[i].after);
		char a[80], b[80];
		pd_cron_local(T - 1, tr[i].zone, a, sizeof a);
		pd_cron_local(T, tr[i].zone, b, sizeof b);
		snprintf(got, sizeof got, "%s %s", strrchr(a, ' ') + 1, strrchr(b, ' ') + 1);
		is_str(got, want, name);
		ok(gmtoff(T - 1) != gmtoff(T), "glibc agrees the offset changes there");

		for (size_t k = 0; k < sizeof exprs / sizeof exprs[0]; k++) {
			struct pd_err e = PD_ERR_INIT;
			struct pd_cron c;
			long long A = T - 40 * 3600, B = T + 40 * 3600, after = A + 5 * 3600, nx;
			size_t m, j = 0;
			int same = 1, fires = 0;

			pd_cron_parse(&c, exprs[k], &e);
			m = reference(&c, A, B, ref, sizeof ref / sizeof ref[0]);
			while (j < m && ref[j] <= after)
				j++;
			for (;;) {
				if (pd_cron_next(&c, tr[i].zone, after, &nx, &e) < 0) {
					same = 0;
					break;
				}
				if (nx > B - 5 * 3600) {
					if (j < m && ref[j] <= B - 5 * 3600)
						same = 0;
					break;
				}
				if (j >= m || ref[j] != nx) {
					printf("# %s '%s': got %s, reference %s\n", tr[i].zone,
					       exprs[k], utc(nx), j < m ? utc(ref[j]) : "none");
					same = 0;
					break;
				}
				fires++;
				j++;
				after = nx;
			}
			snprintf(name, sizeof name,
				 "%s around %s: '%s' matches the reference (%d fires)", tr[i].zone,
				 tr[i].when, exprs[k], fires);
			ok(same && fires > 0, name);
		}
	}
	if (old) {
		setenv("TZ", old, 1);
		free(old);
	} else {
		unsetenv("TZ");
	}
	tzset();
}

static void test_local_vs_glibc(void)
{
	static const char *zones[] = {"Europe/Berlin",	     "America/New_York", "Australia/Sydney",
				      "Australia/Lord_Howe", "Europe/Dublin",	 "Antarctica/Troll",
				      "America/Sao_Paulo",   "Asia/Tehran",	 "UTC"};
	char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;

	for (size_t i = 0; i < sizeof zones / sizeof zones[0]; i++) {
		char tzv[64], name[128], a[80], b[80];
		int bad = 0, n = 0;
		snprintf(tzv, sizeof tzv, ":%s", zones[i]);
		setenv("TZ", tzv, 1);
		tzset();
		for (long long t = iso("1995-01-01T00:00:00Z"); t < iso("2045-01-01T00:00:00Z");
		     t += 3 * 86400 + 3 * 3600 + 7 * 60 + 11) {
			time_t tt = (time_t)t;
			struct tm tm;
			localtime_r(&tt, &tm);
			strftime(a, sizeof a, "%Y-%m-%d %H:%M:%S %Z", &tm);
			if (pd_cron_local(t, zones[i], b, sizeof b) < 0 || strcmp(a, b) != 0) {
				if (bad++ == 0)
					printf("# %s: glibc '%s', ours '%s'\n", zones[i], a, b);
			}
			n++;
		}
		snprintf(name, sizeof name, "%s: pd_cron_local agrees with glibc at %d instants",
			 zones[i], n);
		ok(bad == 0, name);
	}
	if (old) {
		setenv("TZ", old, 1);
		free(old);
	} else {
		unsetenv("TZ");
	}
	tzset();
}

/* ---- crafted TZif files: the footer rules, version 1 files, leap seconds ---- */

static void put32(FILE *f, uint32_t v)
{
	fputc((int)(v >> 24) & 0xff, f);
	fputc((int)(v >> 16) & 0xff, f);
	fputc((int)(v >> 8) & 0xff, f);
	fputc((int)v & 0xff, f);
}

struct tzif {
	int version; /* 0 or '2' */
	int ntrans;
	long long trans[4];
	unsigned char idx[4];
	int ntypes;
	int off[4], isdst[4], abbr[4];
	const char *chars; /* abbreviations, NUL-separated */
	int nchars;
	int leap;
	const char *footer;
};

static void tzif_block(FILE *f, const struct tzif *z, int tsize)
{
	fputs("TZif", f);
	fputc(z->version, f);
	for (int i = 0; i < 15; i++)
		fputc(0, f);
	put32(f, 0);
	put32(f, 0);
	put32(f, (uint32_t)z->leap);
	put32(f, (uint32_t)z->ntrans);
	put32(f, (uint32_t)z->ntypes);
	put32(f, (uint32_t)z->nchars);
	for (int i = 0; i < z->ntrans; i++) {
		if (tsize == 8)
			put32(f, (uint32_t)((unsigned long long)z->trans[i] >> 32));
		put32(f, (uint32_t)z->trans[i]);
	}
	for (int i = 0; i < z->ntrans; i++)
		fputc(z->idx[i], f);
	for (int i = 0; i < z->ntypes; i++) {
		put32(f, (uint32_t)z->off[i]);
		fputc(z->isdst[i], f);
		fputc(z->abbr[i], f);
	}
	fwrite(z->chars, 1, (size_t)z->nchars, f);
	for (int i = 0; i < z->leap; i++) {
		if (tsize == 8)
			put32(f, 0);
		put32(f, 78796800);
		put32(f, 1);
	}
}

static void tzif_write(const char *dir, const char *name, const struct tzif *z)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((f = fopen(path, "wb")) == NULL)
		return;
	tzif_block(f, z, 4);
	if (z->version >= '2') {
		tzif_block(f, z, 8);
		fprintf(f, "\n%s\n", z->footer);
	}
	fclose(f);
}

static void test_crafted_tzif(void)
{
	static const char *names[] = {"AllDST", "Neg",	     "Julian", "V1",
				      "Leap",	"BadFooter", "NoRule"};
	char dir[] = "/tmp/cron_tzif.XXXXXX", path[256], b[80], want[300];
	struct pd_err e = PD_ERR_INIT;

	if (!ok(mkdtemp(dir) != NULL, "crafted TZDIR created"))
		return;
	/* DST all year (RFC 8536 3.3.1): start Jan 1 00:00, end Dec 31 25:00. */
	struct tzif all = {'2', 0,   {0},   {0}, 1, {-18000},
			   {0}, {0}, "EST", 4,	 0, "EST5EDT4,0/0,J365/25"};
	/* Greenland style: negative rule times. */
	struct tzif neg = {'2', 0,   {0},   {0}, 1, {-7200},
			   {0}, {0}, "-02", 4,	 0, "<-02>2<-01>,M3.5.0/-1,M10.5.0/0"};
	/* Jn (never counts Feb 29) and zero-based n (does). */
	struct tzif jul = {'2', 0,   {0},   {0}, 1, {3600},
			   {0}, {0}, "AAA", 4,	 0, "AAA-1BBB,J60/2,300/2"};
	/* Version 1: 32-bit data, no footer. */
	struct tzif v1 = {0, 1, {0}, {1}, 2, {0, 3600}, {0, 1}, {0, 4}, "AAA\0BBB", 8, 0, ""};
	struct tzif leap = {'2', 0, {0}, {0}, 1, {0}, {0}, {0}, "UTC", 4, 1, "UTC0"};
	struct tzif badf = {'2', 0, {0}, {0}, 1, {0}, {0}, {0}, "UTC", 4, 0, "XX0"};
	/* No DST rule in the footer: the last transition's type holds forever. */
	struct tzif norule = {'2',    1,      {1000000000}, {1}, 2, {0, 19800},
			      {0, 0}, {0, 4}, "AAA\0BBB",   8,	 0, "BBB-5:30"};

	tzif_write(dir, "AllDST", &all);
	tzif_write(dir, "Neg", &neg);
	tzif_write(dir, "Julian", &jul);
	tzif_write(dir, "V1", &v1);
	tzif_write(dir, "Leap", &leap);
	tzif_write(dir, "BadFooter", &badf);
	tzif_write(dir, "NoRule", &norule);
	setenv("TZDIR", dir, 1);

	ok(pd_cron_local(iso("2027-01-01T05:00:00Z"), "AllDST", b, sizeof b) == 0 &&
	       strcmp(b, "2027-01-01 01:00:00 EDT") == 0,
	   "all-year DST: EDT at the year boundary");
	ok(pd_cron_local(iso("2026-07-01T12:00:00Z"), "AllDST", b, sizeof b) == 0 &&
	       strcmp(b, "2026-07-01 08:00:00 EDT") == 0,
	   "all-year DST: EDT in summer");
	ok(pd_cron_local(iso("2026-01-01T04:59:59Z"), "AllDST", b, sizeof b) == 0 &&
	       strcmp(b, "2026-01-01 00:59:59 EDT") == 0,
	   "all-year DST: EDT just before the year boundary");

	is_str(local("2026-03-29T00:59:59Z", "Neg"), "2026-03-28 22:59:59 -02",
	       "negative rule time: before the change");
	is_str(local("2026-03-29T01:00:00Z", "Neg"), "2026-03-29 00:00:00 -01",
	       "negative rule time: starts at -1:00 local");
	is_str(local("2026-10-25T00:59:59Z", "Neg"), "2026-10-24 23:59:59 -01",
	       "negative rule time: before the end");
	is_str(local("2026-10-25T01:00:00Z", "Neg"), "2026-10-24 23:00:00 -02",
	       "negative rule time: ends at 00:00 local");
	is_str(next_iso("30 23 24 10 *", "Neg", "2026-10-24T00:00:00Z"), "2026-10-25T00:30:00Z",
	       "negative rule time: the repeated 23:30 fires the first time");

	is_str(local("2028-03-01T00:59:59Z", "Julian"), "2028-03-01 01:59:59 AAA",
	       "J60 in a leap year is Mar 1: before");
	is_str(local("2028-03-01T01:00:00Z", "Julian"), "2028-03-01 03:00:00 BBB",
	       "J60 in a leap year is Mar 1: after");
	is_str(local("2026-03-01T01:00:00Z", "Julian"), "2026-03-01 03:00:00 BBB",
	       "J60 in a common year is Mar 1");
	is_str(local("2028-10-26T23:59:59Z", "Julian"), "2028-10-27 01:59:59 BBB",
	       "n=300 in a leap year is Oct 27: before");
	is_str(local("2028-10-27T00:00:00Z", "Julian"), "2028-10-27 01:00:00 AAA",
	       "n=300 in a leap year is Oct 27: after");
	is_str(local("2026-10-28T00:00:00Z", "Julian"), "2026-10-28 01:00:00 AAA",
	       "n=300 in a common year is Oct 28");
	is_str(next_iso("30 2 1 3 *", "Julian", "2028-01-01T00:00:00Z"), "2028-03-01T01:30:00Z",
	       "J60 gap: 02:30 fires at 03:30 BBB");

	is_str(local("1969-12-31T23:59:59Z", "V1"), "1969-12-31 23:59:59 AAA", "version 1: before");
	is_str(local("1970-01-01T00:00:00Z", "V1"), "1970-01-01 01:00:00 BBB", "version 1: after");
	is_str(local("2100-01-01T00:00:00Z", "V1"), "2100-01-01 01:00:00 BBB",
	       "version 1: the last type holds");
	is_str(local("2026-01-01T00:00:00Z", "NoRule"), "2026-01-01 05:30:00 BBB",
	       "a footer without DST");
	is_str(local("2000-01-01T00:00:00Z", "NoRule"), "2000-01-01 00:00:00 AAA",
	       "before the only transition");

	ok(pd_tz_check("Leap", &e) == -1, "leap seconds refused");
	is_str(e.msg,
	       "time zone 'Leap' counts leap seconds; use the zone without the 'right/' prefix",
	       "leap seconds message");
	pd_err_clear(&e);
	ok(pd_tz_check("BadFooter", &e) == -1, "bad footer refused");
	snprintf(want, sizeof want, "time zone 'BadFooter': corrupt TZif file '%s/BadFooter'", dir);
	is_str(e.msg, want, "bad footer is corrupt");

	unsetenv("TZDIR");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void test_calendar(void)
{
	is_str(seq("0 0 13 * fri", "UTC", "2026-01-01T00:00:00Z", 12),
	       "2026-01-02T00:00:00Z 2026-01-09T00:00:00Z 2026-01-13T00:00:00Z "
	       "2026-01-16T00:00:00Z 2026-01-23T00:00:00Z 2026-01-30T00:00:00Z "
	       "2026-02-06T00:00:00Z 2026-02-13T00:00:00Z 2026-02-20T00:00:00Z "
	       "2026-02-27T00:00:00Z 2026-03-06T00:00:00Z 2026-03-13T00:00:00Z",
	       "'0 0 13 * fri': every Friday and every 13th (Vixie OR)");
	is_int(count("0 0 13 * fri", "UTC", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"), 61,
	       "'0 0 13 * fri': 52 Fridays + 12 13ths - 3 Friday-13ths in 2026");
	is_str(seq("0 0 */2 * mon", "UTC", "2026-01-01T00:00:00Z", 4),
	       "2026-01-05T00:00:00Z 2026-01-19T00:00:00Z 2026-02-09T00:00:00Z "
	       "2026-02-23T00:00:00Z",
	       "'0 0 */2 * mon': starred day-of-month means AND (odd days that are Mondays)");
	is_str(seq("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 2),
	       "2028-02-29T00:00:00Z 2032-02-29T00:00:00Z", "Feb 29: 2028 then 2032");
	is_str(next_iso("0 0 29 2 *", "Europe/Berlin", "2026-01-01T00:00:00Z"),
	       "2028-02-28T23:00:00Z", "Feb 29 in Berlin is 23:00Z the day before");
	is_str(seq("0 0 31 * *", "UTC", "2026-01-31T00:00:00Z", 7),
	       "2026-03-31T00:00:00Z 2026-05-31T00:00:00Z 2026-07-31T00:00:00Z "
	       "2026-08-31T00:00:00Z 2026-10-31T00:00:00Z 2026-12-31T00:00:00Z "
	       "2027-01-31T00:00:00Z",
	       "'0 0 31 * *' skips short months");
	is_str(seq("0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", 2),
	       "2104-02-29T00:00:00Z 2108-02-29T00:00:00Z",
	       "Feb 29 from 2096: 2100 is no leap year, so 2104 then 2108");
	is_str(next_iso("0 0 29 2 *", "Europe/Berlin", "2096-03-01T00:00:00Z"),
	       "2104-02-28T23:00:00Z", "Feb 29 across 2100 in Berlin");
	is_str(seq("0 0 29 2 *", "UTC", "2396-03-01T00:00:00Z", 2),
	       "2400-02-29T00:00:00Z 2404-02-29T00:00:00Z", "2400 is a leap year");
	is_str(next_iso("0 0 29 2 *", "UTC", "2095-03-01T00:00:00Z"), "2096-02-29T00:00:00Z",
	       "Feb 29 from 2095: 2096");
	is_str(next_iso("0 0 * 2 mon", "UTC", "2026-03-01T00:00:00Z"), "2027-02-01T00:00:00Z",
	       "month skipping: Mondays in February");

	/* Macros. 2026-05-05 is a Tuesday. */
	const char *at = "2026-05-05T10:20:30Z";
	is_str(next_iso("@hourly", "UTC", at), "2026-05-05T11:00:00Z", "@hourly");
	is_str(next_iso("@daily", "UTC", at), "2026-05-06T00:00:00Z", "@daily");
	is_str(next_iso("@midnight", "UTC", at), "2026-05-06T00:00:00Z", "@midnight");
	is_str(next_iso("@weekly", "UTC", at), "2026-05-10T00:00:00Z", "@weekly: Sunday");
	is_str(next_iso("@monthly", "UTC", at), "2026-06-01T00:00:00Z", "@monthly");
	is_str(next_iso("@yearly", "UTC", at), "2027-01-01T00:00:00Z", "@yearly");
	is_str(next_iso("@annually", "UTC", at), "2027-01-01T00:00:00Z", "@annually");
	is_str(next_iso("@hourly", "Asia/Kolkata", at), "2026-05-05T10:30:00Z",
	       "@hourly in a half-hour zone fires at :30 UTC");

	/* 0 and 7 are both Sunday. */
	is_str(seq("0 12 * * 0", "UTC", at, 3), seq("0 12 * * 7", "UTC", at, 3),
	       "0 and 7 give the same fires");
	is_str(seq("0 12 * * 7", "UTC", at, 2), "2026-05-10T12:00:00Z 2026-05-17T12:00:00Z",
	       "7 fires on Sundays");
	is_str(seq("0 12 * * 5-7", "UTC", at, 4),
	       "2026-05-08T12:00:00Z 2026-05-09T12:00:00Z 2026-05-10T12:00:00Z "
	       "2026-05-15T12:00:00Z",
	       "5-7 is Friday to Sunday");

	/* UTC, strictly after, seconds. */
	is_str(next_iso("*/5 * * * *", "UTC", "2026-05-05T12:00:00Z"), "2026-05-05T12:05:00Z",
	       "strictly after: not the instant itself");
	is_str(next_iso("*/5 * * * *", "UTC", "2026-05-05T12:04:59Z"), "2026-05-05T12:05:00Z",
	       "after a second before: the minute");
	is_str(next_iso("*/5 * * * *", "UTC", "2026-05-05T11:59:59Z"), "2026-05-05T12:00:00Z",
	       "across the hour");
	is_str(next_iso("59 23 31 12 *", "UTC", "2026-12-31T23:59:00Z"), "2027-12-31T23:59:00Z",
	       "the last minute of the year, a year later");
	is_str(next_iso("0 0 1 1 *", "UTC", "1969-06-01T00:00:00Z"), "1970-01-01T00:00:00Z",
	       "before the epoch");
	is_str(next_iso("30 12 1 * *", "UTC", "1960-02-15T00:00:00Z"), "1960-03-01T12:30:00Z",
	       "negative instants");
	is_str(next_iso("0 0 1 1 *", "UTC", "9999-06-01T00:00:00Z"), "10000-01-01T00:00:00Z",
	       "from the last year allowed");

	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;
	long long t = 42;
	pd_cron_parse(&c, "* * * * *", &e);
	ok(pd_cron_next(&c, "UTC", 253402300800LL, &t, &e) == -1, "after year 9999 is refused");
	is_str(e.msg, "instant 253402300800 is out of range (years 0001 to 9999)",
	       "out of range message");
	is_int(t, 42, "next untouched on error");
}

/*
 * An expression is refused only when no date can ever match, and the search
 * for one that can crosses as many years as it takes.
 */
static void test_impossible(void)
{
	static const struct {
		const char *expr, *zone, *why;
	} never[] = {
	    {"30 2 31 2 *", "UTC", "day-of-month 31 never falls in February"},
	    {"0 0 30 2 *", "Europe/Berlin", "day-of-month 30 never falls in February"},
	    {"0 0 31 4,6,9,11 *", "UTC",
	     "day-of-month 31 never falls in April, June, September or November"},
	    /* A range of days is named as one. */
	    {"0 0 30-31 feb *", "UTC", "day-of-month 30-31 never falls in February"},
	    /* A starred day-of-week: both must match, so it cannot rescue Feb 30. */
	    {"0 0 30,31 2 */7", "UTC", "day-of-month 30-31 never falls in February"},
	};
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
		char want[200], name[100];
		snprintf(want, sizeof want, "error: cron expression never matches: %s",
			 never[i].why);
		snprintf(name, sizeof name, "'%s' is refused, saying why", never[i].expr);
		is_str(next_iso(never[i].expr, never[i].zone, "2026-01-01T00:00:00Z"), want, name);
	}
	is_str(next_iso("0 0 31 4,5 *", "UTC", "2026-01-01T00:00:00Z"), "2026-05-31T00:00:00Z",
	       "'0 0 31 4,5 *' fires on May 31");
	is_str(seq("0 0 30 2 mon", "UTC", "2026-01-01T00:00:00Z", 2),
	       "2026-02-02T00:00:00Z 2026-02-09T00:00:00Z",
	       "'0 0 30 2 mon' fires on Mondays in February (either day field matches)");
	is_str(seq("0 0 29 2 */7", "UTC", "2096-03-01T00:00:00Z", 3),
	       "2128-02-29T00:00:00Z 2156-02-29T00:00:00Z 2184-02-29T00:00:00Z",
	       "Feb 29 that is also a Sunday: 32 and 28 years apart");
	is_str(seq("0 0 29 2 */7", "UTC", "2088-03-01T00:00:00Z", 1), "2128-02-29T00:00:00Z",
	       "Feb 29 on a Sunday across 2100: 40 years");
	is_str(next_iso("59 23 31 12 *", "UTC", "9999-12-31T23:59:00Z"), "10000-12-31T23:59:00Z",
	       "the search may end past year 9999");

	/*
	 * Every day-of-month and month, with day-of-week '*' (every day),
	 * '*' '/7' (Sundays) and '*' '/3' (Sunday, Wednesday, Saturday): both
	 * must match. Checked against a year-by-year scan with timegm.
	 */
	static const struct {
		const char *text;
		unsigned mask;
	} dows[] = {{"*", 0x7f}, {"*/7", 0x01}, {"*/3", 0x49}};
	int bad = 0, refused = 0;
	char first[256] = "";
	for (size_t k = 0; k < sizeof dows / sizeof dows[0]; k++) {
		for (int mon = 1; mon <= 12; mon++) {
			for (int d = 1; d <= 31; d++) {
				char expr[64], want[64] = "";
				snprintf(expr, sizeof expr, "0 0 %d %d %s", d, mon, dows[k].text);
				for (int y = 2097; y < 2097 + 400 && want[0] == '\0'; y++) {
					struct tm tm = {
					    .tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d};
					time_t t = timegm(&tm);
					struct tm back;
					gmtime_r(&t, &back);
					if (back.tm_mday == d &&
					    ((dows[k].mask >> back.tm_wday) & 1))
						snprintf(want, sizeof want, "%s", utc(t));
				}
				const char *got = next_iso(expr, "UTC", "2096-12-31T23:59:59Z");
				const char *refusal = "error: cron expression never matches";
				int same = want[0] ? strcmp(got, want) == 0
						   : strncmp(got, refusal, strlen(refusal)) == 0;
				refused += want[0] == '\0';
				if (!same && bad++ == 0)
					snprintf(first, sizeof first, "'%s': got %s, want %s", expr,
						 got, want[0] ? want : "a refusal");
			}
		}
	}
	if (bad > 0)
		diag(first);
	is_int(bad, 0, "1116 day/month/weekday combinations agree with a year-by-year scan");
	is_int(refused, 3 * 6, "exactly Feb 30-31 and the 31st of Apr, Jun, Sep, Nov are refused");
}

static void test_local(void)
{
	char b[64];

	is_str(local("2026-03-29T00:59:59Z", "Europe/Berlin"), "2026-03-29 01:59:59 CET",
	       "local: last second of CET");
	is_str(local("2026-03-29T01:00:00Z", "Europe/Berlin"), "2026-03-29 03:00:00 CEST",
	       "local: first second of CEST");
	is_str(local("2026-11-01T05:30:00Z", "America/New_York"), "2026-11-01 01:30:00 EDT",
	       "local: first 01:30 in New York");
	is_str(local("2026-11-01T06:30:00Z", "America/New_York"), "2026-11-01 01:30:00 EST",
	       "local: second 01:30 in New York");
	is_str(local("1970-01-01T00:00:00Z", "UTC"), "1970-01-01 00:00:00 UTC", "local: the epoch");
	ok(pd_cron_local(-1, "UTC", b, sizeof b) == 0 && strcmp(b, "1969-12-31 23:59:59 UTC") == 0,
	   "local: one second before the epoch");
	ok(pd_cron_local(iso("2050-07-01T12:00:00Z"), "Europe/Berlin", b, sizeof b) == 0 &&
	       strcmp(b, "2050-07-01 14:00:00 CEST") == 0,
	   "local: 2050 from the zone's rule");
	ok(pd_cron_local(0, "UTC", b, 10) == -1 && b[0] == '\0', "local: too small a buffer");
	ok(pd_cron_local(0, "UTC", b, 23) == -1, "local: one byte short");
	ok(pd_cron_local(0, "UTC", b, 24) == 0, "local: exactly enough");
	ok(pd_cron_local(0, "Mars/Base", b, sizeof b) == -1 && b[0] == '\0', "local: unknown zone");
	ok(pd_cron_local(0, "+02:00", b, sizeof b) == -1, "local: fixed offset");
	ok(pd_cron_local(253402300800LL, "UTC", b, sizeof b) == -1, "local: beyond year 9999");
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void test_speed(void)
{
	static const struct {
		const char *expr;
		int chain; /* each call starts from the previous fire */
		const char *from;
	} runs[] = {
	    {"*/5 * * * *", 1, "2026-01-01T00:00:00Z"},
	    {"0 0 1 1 *", 1, "2026-01-01T00:00:00Z"},
	    {"0 0 13 * fri", 1, "2026-01-01T00:00:00Z"},
	    {"0 0 29 2 *", 0, "2026-01-01T00:00:00Z"},
	    {"0 0 29 2 *", 0, "2096-03-01T00:00:00Z"},
	    {"0 0 29 2 */7", 0, "2088-03-01T00:00:00Z"},
	};
	for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
		struct pd_err e = PD_ERR_INIT;
		struct pd_cron c;
		struct timespec t0;
		long long t = iso(runs[i].from), nx;
		int rc = 0;
		char name[128];

		pd_cron_parse(&c, runs[i].expr, &e);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int k = 0; k < 1000 && rc == 0; k++) {
			rc = pd_cron_next(&c, "Europe/Berlin", t, &nx, &e);
			if (runs[i].chain)
				t = nx;
		}
		double ms = ms_since(&t0);
		/*
		 * The time is reported, never checked (make bench reads this line:
		 * the slowest of these is its "cron next" figure); the test checks
		 * that every call found a fire.
		 */
		snprintf(name, sizeof name, "timing: 1000 calls of '%s' from %.4s%s in %.1f ms",
			 runs[i].expr, runs[i].from, runs[i].chain ? " (chained)" : "", ms);
		diag(name);
		snprintf(name, sizeof name, "1000 calls of '%s' from %.4s%s: each finds a fire",
			 runs[i].expr, runs[i].from, runs[i].chain ? " (chained)" : "");
		ok(rc == 0, name);
	}
}

int main(void)
{
	test_parse_masks();
	test_parse_macros();
	test_parse_errors();
	test_tz_check();
	test_dst_berlin();
	test_dst_new_york();
	test_dst_sydney();
	test_dst_lord_howe();
	test_dst_kind();
	test_year_increasing();
	test_reference();
	test_local_vs_glibc();
	test_crafted_tzif();
	test_calendar();
	test_impossible();
	test_local();
	test_speed();
	return done_testing();
}
