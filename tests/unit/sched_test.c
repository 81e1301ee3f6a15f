/*
 * sched_test: the pure parts of lib/sched: misfire policy names, schedule
 * checks, which occurrences a tick fires under each policy (with exact
 * instants, across a DST change, after outages of years), and the schedules
 * file with its file:line:column errors. The database parts are covered by
 * tests/cron.bats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dur.h"
#include "sched.h"
#include "tap.h"

static char dir[] = "/tmp/sched_test.XXXXXX";

/* Epoch seconds of an ISO instant written in the test. */
static long long at(const char *s)
{
	struct pd_err e = PD_ERR_INIT;
	long long us;

	if (pd_instant_parse(s, &us, &e) < 0) {
		printf("Bail out! %s\n", e.msg);
		exit(255);
	}
	return us / 1000000;
}

static const char *iso(long long t)
{
	static char bufs[8][PD_INSTANT_MAX];
	static int i;
	char *b = bufs[i++ % 8];

	pd_instant_format(t * 1000000LL, b, PD_INSTANT_MAX);
	return b;
}

/* The instants of d as "a,b,c". */
static const char *list(const struct pd_due *d)
{
	static char out[4096];
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < d->n && o < sizeof(out) - 32; i++)
		o +=
		    (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", i ? "," : "", iso(d->at[i]));
	return out;
}

static int due(const char *expr, const char *zone, const char *after, const char *now,
	       enum pd_misfire m, int limit, long long grace, struct pd_due *d, struct pd_err *e)
{
	struct pd_cron c;

	if (pd_cron_parse(&c, expr, e) < 0)
		return -1;
	return pd_sched_due(&c, zone, at(after), at(now), m, limit, grace, d, e);
}

static void test_misfire(void)
{
	struct pd_err e = PD_ERR_INIT;
	enum pd_misfire m = PD_MISFIRE_SKIP;

	ok(pd_misfire_parse("FIRE_ALL", &m, &e) == 0 && m == PD_MISFIRE_FIRE_ALL, "FIRE_ALL");
	ok(pd_misfire_parse("fire-once", &m, &e) == 0 && m == PD_MISFIRE_FIRE_ONCE,
	   "fire-once: any case, '-' for '_'");
	ok(pd_misfire_parse("Skip", &m, &e) == 0 && m == PD_MISFIRE_SKIP, "Skip");
	is_int(pd_misfire_parse("FIRE_ONCEX", &m, &e), -1, "FIRE_ONCEX refused");
	is_int(e.code, PD_EX_DATAERR, "code 65");
	is_str(e.msg, "invalid misfire policy 'FIRE_ONCEX': expected SKIP, FIRE_ONCE or FIRE_ALL",
	       "message names the value and the choices");
	pd_err_clear(&e);
	is_int(pd_misfire_parse("FIRE_ALL_OF_THEM_PLEASE", &m, &e), -1, "a long value refused");
	is_int(pd_misfire_parse("", &m, &e), -1, "empty refused");
	is_str(pd_misfire_name(PD_MISFIRE_FIRE_ONCE), "FIRE_ONCE", "stored name");
}

static void test_check(void)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_sched s;

	pd_sched_init(&s);
	is_int(s.misfire, PD_MISFIRE_FIRE_ONCE, "default policy FIRE_ONCE");
	is_int(s.catch_up_limit, 100, "default catch-up limit 100");
	ok(s.enabled, "enabled by default");
	s.name = "nightly-report.v2_a";
	s.cron = "30 2 * * *";
	s.timezone = "Europe/Berlin";
	s.type = "report";
	is_int(pd_sched_check(&s, &e), 0, "a good schedule passes");

	is_int(pd_sched_check_name("-x", &e), -1, "a name starting with '-' is refused");
	is_str(e.msg, "invalid schedule name '-x': must start with a letter or a digit", "why");
	pd_err_clear(&e);
	is_int(pd_sched_check_name("a b", &e), -1, "a space is refused");
	like(e.msg, "only letters, digits", "why");
	pd_err_clear(&e);
	is_int(pd_sched_check_name("a/b", &e), -1, "a slash is refused");
	pd_err_clear(&e);
	{
		char longname[PD_SCHED_NAME_MAX + 2];

		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		is_int(pd_sched_check_name(longname, &e), -1, "101 characters are refused");
		pd_err_clear(&e);
		longname[PD_SCHED_NAME_MAX] = '\0';
		is_int(pd_sched_check_name(longname, &e), 0, "100 characters are fine");
	}

	s.cron = "61 * * * *";
	is_int(pd_sched_check(&s, &e), -1, "bad cron refused");
	is_int(e.code, PD_EX_DATAERR, "code 65");
	like(e.msg, "invalid cron expression '61 * * * *'", "the cron message");
	pd_err_clear(&e);
	s.cron = "30 2 31 2 *";
	is_int(pd_sched_check(&s, &e), -1, "an expression that never fires is refused");
	like(e.msg, "never matches", "why");
	pd_err_clear(&e);
	s.cron = "@daily";
	s.timezone = "+02:00";
	is_int(pd_sched_check(&s, &e), -1, "a fixed offset is refused");
	like(e.msg, "fixed offset", "why");
	pd_err_clear(&e);
	s.timezone = "Mars/Olympus_Mons";
	is_int(pd_sched_check(&s, &e), -1, "an unknown zone is refused");
	like(e.msg, "unknown time zone 'Mars/Olympus_Mons'", "why");
	pd_err_clear(&e);
	s.timezone = "UTC";
	s.payload = "{\"a\" 1}";
	is_int(pd_sched_check(&s, &e), -1, "a bad payload is refused");
	is_str(e.msg, "invalid payload: invalid JSON at line 1, column 6: expected ':'", "why");
	pd_err_clear(&e);
	s.payload = "[1, 2]";
	s.catch_up_limit = 10001;
	is_int(pd_sched_check(&s, &e), -1, "catch-up limit 10001 refused");
	is_str(e.msg, "invalid catch-up limit 10001: out of range 1-10000", "why");
	pd_err_clear(&e);
	s.catch_up_limit = 10000;
	s.type = "";
	is_int(pd_sched_check(&s, &e), -1, "an empty type is refused");
	pd_err_clear(&e);
	s.type = "t";
	s.queue = "";
	is_int(pd_sched_check(&s, &e), -1, "an empty queue is refused");
	pd_err_clear(&e);
	s.queue = NULL;
	s.tenant = "";
	is_int(pd_sched_check(&s, &e), -1, "an empty tenant is refused");
	pd_err_clear(&e);
	s.tenant = NULL;

	/* A workflow schedule: type workflow:NAME. */
	ok(pd_sched_workflow("t") == NULL, "a job type names no workflow");
	ok(pd_sched_workflow(NULL) == NULL, "nor does no type");
	is_str(pd_sched_workflow("workflow:order"), "order", "workflow:order names order");
	s.type = "workflow:order";
	is_int(pd_sched_check(&s, &e), 0, "a workflow schedule passes");
	s.type = "workflow:";
	is_int(pd_sched_check(&s, &e), -1, "an empty workflow name is refused");
	like(e.msg, "invalid type 'workflow:': the workflow name must be 1 to 100", "why");
	pd_err_clear(&e);
	s.type = "workflow:a b";
	is_int(pd_sched_check(&s, &e), -1, "a workflow name with a space is refused");
	pd_err_clear(&e);
	s.type = "workflow:order";
	s.timeout_ms = 60000;
	{
		const char *field = NULL;

		is_int(pd_sched_check_workflow(&s, &field, &e), -1, "a workflow takes no timeout");
		is_str(field, "timeout", "the field at fault");
		is_int(e.code, PD_EX_DATAERR, "code 65");
		pd_err_clear(&e);
	}
	s.type = "t";
	is_int(pd_sched_check(&s, &e), 0, "a job type takes a timeout");
}

static void test_due(void)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_due d;
	struct timespec t0, t1;

	/* Normal operation: the one occurrence since the last tick. */
	is_int(due("* * * * *", "UTC", "2026-01-01T11:59:00Z", "2026-01-01T12:00:00Z",
		   PD_MISFIRE_FIRE_ONCE, 100, 60, &d, &e),
	       0, "on time: ok");
	is_str(list(&d), "2026-01-01T12:00:00Z", "on time: the occurrence at now (inclusive)");
	is_int(d.dropped, 0, "on time: nothing dropped");
	is_str(iso(d.next), "2026-01-01T12:01:00Z", "on time: next");
	pd_due_release(&d);

	is_int(due("* * * * *", "UTC", "2026-01-01T12:00:00Z", "2026-01-01T12:00:30Z",
		   PD_MISFIRE_FIRE_ALL, 100, 60, &d, &e),
	       0, "after is exclusive: ok");
	is_int(d.n, 0, "after is exclusive: the occurrence at 'after' is not fired again");
	is_str(iso(d.next), "2026-01-01T12:01:00Z", "next");
	pd_due_release(&d);

	/* A three-hour outage, minutely. */
	is_int(due("* * * * *", "UTC", "2026-01-01T09:00:00Z", "2026-01-01T12:00:30Z",
		   PD_MISFIRE_FIRE_ONCE, 100, 60, &d, &e),
	       0, "FIRE_ONCE outage");
	is_str(list(&d), "2026-01-01T12:00:00Z", "FIRE_ONCE: only the latest missed");
	is_int(d.dropped, 1, "FIRE_ONCE: older ones dropped");
	pd_due_release(&d);

	is_int(due("* * * * *", "UTC", "2026-01-01T09:00:00Z", "2026-01-01T12:00:30Z",
		   PD_MISFIRE_FIRE_ALL, 3, 60, &d, &e),
	       0, "FIRE_ALL limit 3");
	is_str(list(&d), "2026-01-01T11:58:00Z,2026-01-01T11:59:00Z,2026-01-01T12:00:00Z",
	       "FIRE_ALL: the latest 3, ascending");
	is_int(d.dropped, 1, "FIRE_ALL: the rest dropped");
	is_str(iso(d.next), "2026-01-01T12:01:00Z", "FIRE_ALL: next");
	pd_due_release(&d);

	is_int(due("* * * * *", "UTC", "2026-01-01T09:00:00Z", "2026-01-01T12:00:30Z",
		   PD_MISFIRE_FIRE_ALL, 1000, 60, &d, &e),
	       0, "FIRE_ALL under the limit");
	is_int(d.n, 180, "FIRE_ALL: all 180 missed");
	is_str(iso(d.at[0]), "2026-01-01T09:01:00Z", "FIRE_ALL: first after 'after'");
	is_str(iso(d.at[179]), "2026-01-01T12:00:00Z", "FIRE_ALL: last at now");
	is_int(d.dropped, 0, "FIRE_ALL: nothing dropped");
	pd_due_release(&d);

	/* Exactly the limit inside the first window, with older ones beyond it. */
	is_int(due("* * * * *", "UTC", "2026-01-01T10:59:30Z", "2026-01-01T12:00:00Z",
		   PD_MISFIRE_FIRE_ALL, 60, 60, &d, &e),
	       0, "FIRE_ALL: limit == window");
	is_int(d.n, 60, "60 fired");
	is_str(iso(d.at[0]), "2026-01-01T11:01:00Z", "the latest 60");
	is_int(d.dropped, 1, "the one at 11:00 was dropped");
	pd_due_release(&d);
	is_int(due("* * * * *", "UTC", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z",
		   PD_MISFIRE_FIRE_ALL, 60, 60, &d, &e),
	       0, "FIRE_ALL: limit == all missed");
	is_int(d.n, 60, "60 fired");
	is_int(d.dropped, 0, "none dropped");
	pd_due_release(&d);

	/* SKIP and its grace. */
	is_int(due("0 * * * *", "UTC", "2026-01-01T09:00:00Z", "2026-01-01T12:00:30Z",
		   PD_MISFIRE_SKIP, 100, 60, &d, &e),
	       0, "SKIP within grace");
	is_str(list(&d), "2026-01-01T12:00:00Z", "SKIP: the latest, 30 s late, fires");
	is_int(d.dropped, 1, "SKIP: 10:00 and 11:00 dropped");
	pd_due_release(&d);
	is_int(due("0 * * * *", "UTC", "2026-01-01T09:00:00Z", "2026-01-01T12:00:30Z",
		   PD_MISFIRE_SKIP, 100, 5, &d, &e),
	       0, "SKIP beyond grace");
	is_int(d.n, 0, "SKIP: 30 s late with a 5 s grace: nothing fires");
	is_int(d.dropped, 1, "SKIP: all dropped");
	is_str(iso(d.next), "2026-01-01T13:00:00Z", "SKIP: next");
	pd_due_release(&d);
	is_int(due("0 * * * *", "UTC", "2026-01-01T11:59:00Z", "2026-01-01T12:00:05Z",
		   PD_MISFIRE_SKIP, 100, 5, &d, &e),
	       0, "SKIP at the edge");
	is_int(d.n, 1, "SKIP: exactly grace seconds late still fires");
	pd_due_release(&d);

	/* Wall-clock times across the spring-forward gap keep their instants. */
	is_int(due("30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z", "2026-03-30T12:00:00Z",
		   PD_MISFIRE_FIRE_ALL, 100, 60, &d, &e),
	       0, "DST");
	is_str(list(&d), "2026-03-28T01:30:00Z,2026-03-29T01:30:00Z,2026-03-30T00:30:00Z",
	       "02:30 CET, 03:30 CEST (shifted past the gap), 02:30 CEST");
	pd_due_release(&d);

	/* Outages of years cost little. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	is_int(due("* * * * *", "UTC", "2021-01-01T00:00:00Z", "2026-01-01T12:00:10Z",
		   PD_MISFIRE_FIRE_ONCE, 100, 60, &d, &e),
	       0, "five years, minutely, FIRE_ONCE");
	is_str(list(&d), "2026-01-01T12:00:00Z", "the latest");
	is_int(d.dropped, 1, "the rest dropped");
	pd_due_release(&d);
	is_int(due("* * * * *", "UTC", "2021-01-01T00:00:00Z", "2026-01-01T12:00:10Z",
		   PD_MISFIRE_FIRE_ALL, 10000, 60, &d, &e),
	       0, "five years, minutely, FIRE_ALL 10000");
	is_int(d.n, 10000, "10000 fired");
	is_str(iso(d.at[9999]), "2026-01-01T12:00:00Z", "ending with the latest");
	is_str(iso(d.at[0]), "2025-12-25T13:21:00Z", "starting 9999 minutes before");
	pd_due_release(&d);
	is_int(due("0 0 1 1 *", "UTC", "2001-06-01T00:00:00Z", "2026-06-01T00:00:00Z",
		   PD_MISFIRE_FIRE_ALL, 3, 60, &d, &e),
	       0, "25 years, yearly");
	is_str(list(&d), "2024-01-01T00:00:00Z,2025-01-01T00:00:00Z,2026-01-01T00:00:00Z",
	       "the latest 3 new years");
	pd_due_release(&d);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ok(t1.tv_sec - t0.tv_sec < 10, "long outages take well under 10 s");

	/* The zone vanished: an error to disable the schedule with. */
	is_int(due("* * * * *", "Nowhere/Gone", "2026-01-01T09:00:00Z", "2026-01-01T12:00:00Z",
		   PD_MISFIRE_FIRE_ONCE, 100, 60, &d, &e),
	       -1, "unknown zone fails");
	is_int(e.code, PD_EX_DATAERR, "code 65");
	like(e.msg, "unknown time zone 'Nowhere/Gone'", "names the zone");
	ok(d.at == NULL && d.n == 0, "nothing to fire");
	pd_err_clear(&e);
}

/* Write text to dir/name; returns the path (static, one at a time). */
static const char *file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		printf("Bail out! cannot write %s\n", path);
		exit(255);
	}
	return path;
}

/* Load text as a file; returns the error message, or "" on success (f released). */
static const char *load_err(const char *text, const char *tenant, int only)
{
	static char msg[600];
	struct pd_err e = PD_ERR_INIT;
	struct pd_sched_file f;

	if (pd_sched_file_load(&f, file("s.yaml", text), tenant, only, &e) == 0) {
		pd_sched_file_release(&f);
		return "";
	}
	snprintf(msg, sizeof(msg), "%d %s", e.code, e.msg + strlen(dir) + 1);
	return msg;
}

static void test_file(void)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_sched_file f;
	const char *p;

	p = file("good.yaml", "# nightly jobs\n"
			      "schedules:\n"
			      "  - name: nightly\n"
			      "    cron: \"30 2 * * *\"\n"
			      "    timezone: Europe/Berlin\n"
			      "    type: report\n"
			      "    payload: {kind: daily, n: 3, x: 1.5e3, ok: true, none: ~, s: "
			      "\"7\", tag: yes, list: [a, 2]}\n"
			      "    queue: reports\n"
			      "    priority: high\n"
			      "    misfire: fire_all\n"
			      "    catch_up_limit: 7\n"
			      "    enabled: false\n"
			      "  - name: hourly\n"
			      "    cron: '@hourly'\n"
			      "    timezone: UTC\n"
			      "    type: ping\n"
			      "    tenant: acme\n"
			      "    payload: '{\"a\": [1, 2]}'\n"
			      "  - name: nightly\n"
			      "    cron: '@daily'\n"
			      "    timezone: UTC\n"
			      "    type: ping\n"
			      "    tenant: acme\n");
	is_int(pd_sched_file_load(&f, p, NULL, 0, &e), 0, "a good file loads");
	is_str(e.msg, "", "no error");
	is_int(f.n, 3, "three schedules");
	is_str(f.v[0].name, "nightly", "name");
	is_str(f.v[0].cron, "30 2 * * *", "cron");
	is_str(f.v[0].timezone, "Europe/Berlin", "timezone");
	is_str(f.v[0].type, "report", "type");
	is_str(f.v[0].tenant, "default", "tenant defaults to 'default'");
	is_str(f.v[0].queue, "reports", "queue");
	is_str(f.v[0].payload,
	       "{\"kind\":\"daily\",\"n\":3,\"x\":1.5e3,\"ok\":true,\"none\":null,\"s\":\"7\","
	       "\"tag\":\"yes\",\"list\":[\"a\",2]}",
	       "a YAML payload becomes JSON (quoted and yes stay strings)");
	is_int(f.v[0].priority, 10, "priority high is 10");
	is_int(f.v[0].misfire, PD_MISFIRE_FIRE_ALL, "misfire");
	is_int(f.v[0].catch_up_limit, 7, "catch_up_limit");
	is_int(f.v[0].enabled, 0, "enabled: false");
	is_int(f.v[0].line, 3, "line of the entry");
	is_str(f.v[1].tenant, "acme", "tenant");
	is_str(f.v[1].payload, "{\"a\": [1, 2]}", "a payload given as a JSON string is kept");
	ok(f.v[1].queue == NULL, "queue unset is NULL (default)");
	is_int(f.v[1].misfire, PD_MISFIRE_FIRE_ONCE, "misfire default");
	is_int(f.v[1].enabled, 1, "enabled default");
	ok(f.v[1].payload != NULL && f.v[2].payload == NULL, "no payload: NULL ({})");
	pd_sched_file_release(&f);

	is_int(pd_sched_file_load(&f,
				  file("t.yaml", "schedules:\n  - {name: a, cron: '@daily', "
						 "timezone: UTC, type: t}\n"),
				  "acme", 1, &e),
	       0, "the given tenant is the default");
	is_str(f.v[0].tenant, "acme", "tenant from the caller");
	pd_sched_file_release(&f);

	is_str(load_err("schedules: []\n", NULL, 0), "", "an empty list is fine");
	is_str(load_err("", NULL, 0),
	       "65 s.yaml:1:1: missing the top-level key 'schedules' (a list; 'schedules: []' for "
	       "none)",
	       "an empty file is refused (no accidental prune of everything)");
	is_str(load_err("schedule:\n  - name: a\n", NULL, 0),
	       "65 s.yaml:1:1: unknown key 'schedule'; did you mean 'schedules'?",
	       "unknown top-level key");
	is_str(load_err("schedules: {a: 1}\n", NULL, 0),
	       "65 s.yaml:1:12: 'schedules': expected a sequence, got a mapping",
	       "schedules must be a list");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: UTC\n"
			"    type: t\n    retries: 3\n",
			NULL, 0),
	       "65 s.yaml:6:5: unknown key 'retries' in 'schedules' item 1",
	       "unknown key: file:line:column");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timzone: UTC\n"
			"    type: t\n",
			NULL, 0),
	       "65 s.yaml:4:5: unknown key 'timzone' in 'schedules' item 1; did you mean "
	       "'timezone'?",
	       "a typo gets a hint");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    type: t\n", NULL, 0),
	       "65 s.yaml:2:5: 'schedules' item 1: missing key 'timezone'", "missing key");
	is_str(load_err("schedules:\n  - name: a\n    cron: '61 * * * *'\n    timezone: UTC\n"
			"    type: t\n",
			NULL, 0),
	       "65 s.yaml:3:11: invalid cron expression '61 * * * *': minute field '61': value 61 "
	       "out of range 0-59",
	       "bad cron at its value");
	like(load_err("schedules:\n  - name: a\n    cron: '30 2 31 2 *'\n    timezone: UTC\n"
		      "    type: t\n",
		      NULL, 0),
	     "65 s.yaml:3:11: cron expression never matches", "a cron that never fires");
	like(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: Nowhere/Gone\n"
		      "    type: t\n",
		      NULL, 0),
	     "65 s.yaml:4:15: unknown time zone 'Nowhere/Gone'", "bad zone at its value");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: UTC\n"
			"    type: t\n    payload: '{\"a\" 1}'\n",
			NULL, 0),
	       "65 s.yaml:6:14: 'payload': invalid JSON at line 1, column 6: expected ':'",
	       "bad JSON payload at its value");
	is_str(load_err("schedules:\n  - name: a b\n    cron: '@daily'\n    timezone: UTC\n"
			"    type: t\n",
			NULL, 0),
	       "65 s.yaml:2:11: invalid schedule name 'a b': only letters, digits, '.', '_' and "
	       "'-' are allowed",
	       "bad name");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: UTC\n"
			"    type: ''\n",
			NULL, 0),
	       "65 s.yaml:5:11: 'type': must not be empty", "empty type");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: UTC\n"
			"    type: t\n    misfire: sometimes\n",
			NULL, 0),
	       "65 s.yaml:6:14: invalid misfire policy 'sometimes': expected SKIP, FIRE_ONCE or "
	       "FIRE_ALL",
	       "bad misfire");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: UTC\n"
			"    type: t\n    catch_up_limit: 0\n",
			NULL, 0),
	       "65 s.yaml:6:21: 'catch_up_limit': expected an integer from 1 to 10000, got '0'",
	       "catch_up_limit out of range");
	is_str(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: UTC\n"
			"    type: t\n    enabled: maybe\n",
			NULL, 0),
	       "65 s.yaml:6:14: 'enabled': expected true or false, got 'maybe'", "bad enabled");
	like(load_err("schedules:\n  - name: a\n    cron: '@daily'\n    timezone: UTC\n"
		      "    type: t\n    priority: urgent\n",
		      NULL, 0),
	     "65 s.yaml:6:15: invalid priority 'urgent'", "bad priority");
	is_str(load_err("schedules:\n  - {name: a, cron: '@daily', timezone: UTC, type: t}\n"
			"  - {name: b, cron: '@daily', timezone: UTC, type: t}\n"
			"  - {name: a, cron: '@hourly', timezone: UTC, type: t}\n",
			NULL, 0),
	       "65 s.yaml:4:12: schedule 'a' is already defined at line 2", "a name twice");
	is_str(load_err("schedules:\n  - {name: a, cron: '@daily', timezone: UTC, type: t}\n"
			"  - {name: a, tenant: b, cron: '@daily', timezone: UTC, type: t}\n",
			NULL, 0),
	       "", "the same name in two tenants is fine");
	is_str(load_err("schedules:\n  - {name: a, tenant: b, cron: '@daily', timezone: UTC, type: "
			"t}\n",
			"acme", 1),
	       "65 s.yaml:2:23: 'tenant': 'b' is not the tenant being applied ('acme')",
	       "another tenant than the one applied");
	is_str(load_err("schedules:\n  - just a string\n", NULL, 0),
	       "65 s.yaml:2:5: 'schedules' item 1: expected a mapping, got 'just a string'",
	       "an item that is not a mapping");
	like(load_err("schedules:\n  - name: [\n", NULL, 0), "65 s.yaml:", "YAML syntax: code 65");
	pd_err_clear(&e);
	is_int(pd_sched_file_load(&f, "/nonexistent/x.yaml", NULL, 0, &e), -1, "missing file");
	is_int(e.code, PD_EX_DATAERR, "code 65");
	like(e.msg, "/nonexistent/x.yaml", "names the file");
}

static void test_ops(void)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_sched_file f;
	enum pd_overlap o = PD_OVERLAP_ALLOW;
	long long a, b, seen[20];
	int distinct = 1;
	const char *p;

	is_int(pd_overlap_parse("Skip", &o, &e), 0, "overlap skip, any case");
	is_int(o, PD_OVERLAP_SKIP, "skip");
	is_int(pd_overlap_parse("sometimes", &o, &e), -1, "another overlap refused");
	is_str(e.msg, "invalid overlap 'sometimes': expected allow or skip", "why");
	pd_err_clear(&e);
	is_str(pd_overlap_name(PD_OVERLAP_ALLOW), "allow", "stored name");

	is_int((int)pd_sched_jitter_offset("default", "x", 0), 0, "no jitter, no offset");
	a = pd_sched_jitter_offset(NULL, "hourly-01", 30000);
	b = pd_sched_jitter_offset("default", "hourly-01", 30000);
	ok(a == b, "NULL is the default tenant; the same schedule, the same offset");
	ok(pd_sched_jitter_offset("acme", "hourly-01", 30000) != a,
	   "another tenant, another offset");
	for (int i = 0; i < 20; i++) {
		char name[32];

		snprintf(name, sizeof(name), "hourly-%02d", i + 1);
		seen[i] = pd_sched_jitter_offset("default", name, 30000);
		ok(seen[i] >= 0 && seen[i] < 30000, "each offset in [0, 30s)");
		for (int k = 0; k < i; k++)
			distinct &= seen[k] != seen[i];
	}
	ok(distinct, "20 schedules, 20 offsets");

	p = file("ops.yaml", "schedules:\n"
			     "  - name: backup\n"
			     "    cron: '@daily'\n"
			     "    timezone: UTC\n"
			     "    type: backup\n"
			     "    overlap: skip\n"
			     "    jitter: 5m\n"
			     "    max_attempts: 3\n"
			     "    timeout: 1h\n"
			     "  - name: plain\n"
			     "    cron: '@daily'\n"
			     "    timezone: UTC\n"
			     "    type: t\n");
	is_int(pd_sched_file_load(&f, p, NULL, 0, &e), 0, "the new keys load");
	if (f.v) {
		is_int(f.v[0].overlap, PD_OVERLAP_SKIP, "overlap");
		is_int((int)f.v[0].jitter_ms, 300000, "jitter");
		is_int((int)f.v[0].max_attempts, 3, "max_attempts");
		is_int((int)f.v[0].timeout_ms, 3600000, "timeout");
		is_int(f.v[1].overlap, PD_OVERLAP_ALLOW, "YAML's default overlap is allow");
		is_int((int)f.v[1].jitter_ms, 0, "no jitter by default");
		is_int((int)f.v[1].max_attempts, -1, "the jobs' default attempts");
		is_int((int)f.v[1].timeout_ms, -1, "no timeout by default");
		pd_sched_file_release(&f);
	}
	p = file("ops.yaml", "schedules:\n"
			     "  - name: backup\n"
			     "    cron: '@daily'\n"
			     "    timezone: UTC\n"
			     "    type: backup\n"
			     "    max_attempts: 0\n");
	is_int(pd_sched_file_load(&f, p, NULL, 0, &e), -1, "max_attempts 0 refused");
	like(e.msg, "ops.yaml:6:", "at its line");
	pd_err_clear(&e);
	unlink(p);
}

int main(void)
{
	if (mkdtemp(dir) == NULL) {
		printf("Bail out! mkdtemp\n");
		return 255;
	}
	test_misfire();
	test_check();
	test_due();
	test_file();
	test_ops();
	unlink(file("s.yaml", ""));
	unlink(file("good.yaml", ""));
	unlink(file("t.yaml", ""));
	rmdir(dir);
	return done_testing();
}
