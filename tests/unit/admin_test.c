/*
 * admin_test: the parts of pd-admin that need no database: human durations,
 * state and id parsing, table and JSON-lines rendering, Prometheus label
 * escaping, and clipping top's frames to a terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "job.h"
#include "metrics.h"
#include "tap.h"
#include "top.h"

static void age_is(double s, const char *want)
{
	char out[24], name[80];

	pd_admin_age(s, out, sizeof(out));
	snprintf(name, sizeof(name), "age %.3f s is '%s'", s, want);
	is_str(out, want, name);
}

static void test_age(void)
{
	age_is(0, "0s");
	age_is(0.04, "0s");
	age_is(0.05, "0.1s");
	age_is(1.84, "1.8s");
	age_is(2.0, "2s");
	age_is(9.94, "9.9s");
	age_is(9.96, "10s");
	age_is(10, "10s");
	age_is(59.9, "59s");
	age_is(60, "1m");
	age_is(192.345, "3m12s");
	age_is(3600, "1h");
	age_is(3661, "1h1m");
	age_is(7322, "2h2m");
	age_is(86400, "1d");
	age_is(86400 * 2 + 3 * 3600 + 59, "2d3h");
	age_is(86400 + 59, "1d"); /* "1d0h" would say nothing more */
	age_is(-1.5, "-1.5s");
	age_is(-125, "-2m5s");
	age_is(1e30, "104166666666d16h"); /* capped, not overflowed */
}

static void test_state_and_id(void)
{
	struct pd_err e = PD_ERR_INIT;
	long long id = -1;

	is_str(pd_admin_state("pending"), "PENDING", "state names are case-insensitive");
	is_str(pd_admin_state("Dead_Lettered"), "DEAD_LETTERED", "mixed case");
	ok(pd_admin_state("DEAD") == NULL, "an unknown state is NULL");
	ok(pd_admin_state("") == NULL, "an empty state is NULL");
	ok(pd_admin_state("PENDING") == pd_job_states[0], "the canonical string is returned");

	ok(pd_admin_id("42", &id, &e) == 0 && id == 42, "id 42");
	ok(pd_admin_id("9223372036854775807", &id, &e) == 0 && id == 9223372036854775807LL,
	   "the largest bigint");
	ok(pd_admin_id("9223372036854775808", &id, &e) < 0, "past bigint is refused");
	pd_err_clear(&e);
	ok(pd_admin_id("0", &id, &e) < 0 && e.code == PD_EX_USAGE, "id 0 is refused with 64");
	is_str(e.msg, "invalid job id '0': expected a positive integer", "the message names it");
	pd_err_clear(&e);
	ok(pd_admin_id("-3", &id, &e) < 0, "a negative id is refused");
	pd_err_clear(&e);
	ok(pd_admin_id("+3", &id, &e) < 0, "a signed id is refused");
	pd_err_clear(&e);
	ok(pd_admin_id("4x", &id, &e) < 0, "trailing garbage is refused");
	pd_err_clear(&e);
	ok(pd_admin_id(" 4", &id, &e) < 0, "leading space is refused");
	pd_err_clear(&e);
	ok(pd_admin_id("", &id, &e) < 0, "an empty id is refused");
}

static const struct pd_admin_col cols[] = {
    {"id", NULL, 'n', 'b'},	{"job_type", "type", 's', 'b'}, {"state", NULL, 'S', 'b'},
    {"age_s", "age", 'd', 'b'}, {"payload", NULL, 'j', 'j'},	{"ok", NULL, 'b', 'b'},
    {"note", NULL, 's', 't'},
};

static void test_render(void)
{
	const char *cells[] = {
	    "7",  "noop", "SUCCEEDED", "192.345",    "{\"a\": [1, 2]}",
	    "t",  "fine", "12",	       "b\"o\\o\tm", "PENDING",
	    NULL, "null", "f",	       NULL,
	};
	struct pd_admin_fmt table = {0, 0}, json = {1, 0}, color = {0, 1};
	struct pd_buf b = PD_BUF_INIT;

	pd_admin_render(cols, 7, cells, 2, &table, &b);
	is_str(pd_buf_str(&b),
	       "ID  TYPE     STATE      AGE    OK   NOTE\n"
	       "7   noop     SUCCEEDED  3m12s  yes  fine\n"
	       "12  b\"o\\o m  PENDING    -      no   -\n",
	       "a table: headers upper-cased, JSON-only columns left out, tabs made spaces");
	pd_buf_reset(&b);
	pd_admin_render(cols, 7, cells, 2, &json, &b);
	is_str(pd_buf_str(&b),
	       "{\"id\":7,\"job_type\":\"noop\",\"state\":\"SUCCEEDED\",\"age_s\":192.345,"
	       "\"payload\":{\"a\": [1, 2]},\"ok\":true}\n"
	       "{\"id\":12,\"job_type\":\"b\\\"o\\\\o\\tm\",\"state\":\"PENDING\",\"age_s\":null,"
	       "\"payload\":null,\"ok\":false}\n",
	       "JSON lines: typed values, table-only columns left out, strings escaped");
	pd_buf_reset(&b);
	pd_admin_render(cols, 7, cells, 0, &table, &b);
	is_str(pd_buf_str(&b), "ID  TYPE  STATE  AGE  OK  NOTE\n", "no rows: the header alone");
	pd_buf_reset(&b);
	pd_admin_render(cols, 7, cells, 0, &json, &b);
	is_str(pd_buf_str(&b), "", "no rows in JSON: nothing");
	pd_buf_reset(&b);
	pd_admin_render(cols, 7, cells, 1, &color, &b);
	like(pd_buf_str(&b), "\033[32mSUCCEEDED\033[0m  3m12s", "colour: the state, then aligned");
	like(pd_buf_str(&b), "\033[1mID\033[0m  ", "colour: bold headers keep their width");
	pd_buf_release(&b);
}

static void test_render_edges(void)
{
	static const struct pd_admin_col c2[] = {{"n", NULL, 'n', 'b'}, {"s", NULL, 's', 'b'}};
	char long_text[200];
	const char *cells[] = {"12abc", long_text, "1e5", "é\nà"};
	struct pd_admin_fmt table = {0, 0}, json = {1, 0};
	struct pd_buf b = PD_BUF_INIT;
	const char *nl;

	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	pd_admin_render(c2, 2, cells, 2, &json, &b);
	like(pd_buf_str(&b), "{\"n\":\"12abc\",", "a number column that is not a number: a string");
	like(pd_buf_str(&b), "{\"n\":1e5,\"s\":\"é\\nà\"}", "JSON keeps the newline, escaped");
	pd_buf_reset(&b);
	pd_admin_render(c2, 2, cells, 2, &table, &b);
	nl = strchr(pd_buf_str(&b), '\n');
	ok(nl && strstr(nl + 1, "xxx...\n") != NULL, "a long cell is cut and marked");
	ok(nl && strchr(nl + 1, '\n') - (nl + 1) == (long)strlen("12abc  ") + 72,
	   "to 72 characters");
	like(pd_buf_str(&b), "1e5    é à\n", "control characters become spaces; UTF-8 kept");
	pd_buf_release(&b);
}

static void test_label(void)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_metrics_label(&b, "plain");
	is_str(pd_buf_str(&b), "\"plain\"", "a plain label value is quoted");
	pd_buf_reset(&b);
	pd_metrics_label(&b, "a\"b\\c\nd");
	is_str(pd_buf_str(&b), "\"a\\\"b\\\\c\\nd\"", "quote, backslash and newline are escaped");
	pd_buf_reset(&b);
	pd_metrics_label(&b, "");
	is_str(pd_buf_str(&b), "\"\"", "an empty value");
	pd_buf_release(&b);
}

static void test_clip(void)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_top_clip("abcdef\nxy\n\nlast\n", 4, 0, 0, &b);
	is_str(pd_buf_str(&b), "abcd\nxy\n\nlast\n", "lines are cut to the width");
	pd_buf_reset(&b);
	pd_top_clip("one\ntwo\nthree\n", 0, 2, 1, &b);
	is_str(pd_buf_str(&b), "one\033[K\ntwo\033[K\n", "at most height lines, erased to the end");
	pd_buf_reset(&b);
	pd_top_clip("\033[31mREDRED\033[0m ok\n", 3, 0, 0, &b);
	is_str(pd_buf_str(&b), "\033[31mRED\033[0m\n", "escapes take no room; a cut resets colour");
	pd_buf_reset(&b);
	pd_top_clip("\033[1mab\033[0m\n", 2, 0, 0, &b);
	is_str(pd_buf_str(&b), "\033[1mab\033[0m\n", "an exact fit is not cut");
	pd_buf_reset(&b);
	pd_top_clip("éèà\n", 2, 0, 0, &b);
	is_str(pd_buf_str(&b), "éè\n", "UTF-8 counts characters, not bytes");
	pd_buf_reset(&b);
	pd_top_clip("no newline", 0, 0, 0, &b);
	is_str(pd_buf_str(&b), "no newline\n", "a last line without a newline gets one");
	pd_buf_release(&b);
}

int main(void)
{
	test_age();
	test_state_and_id();
	test_render();
	test_render_edges();
	test_label();
	test_clip();
	return done_testing();
}
