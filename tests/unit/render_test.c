/*
 * render_test: how rows are shown: human durations (ages), aligned tables,
 * JSON lines, colour, and the edges (no rows, long and control characters).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "tap.h"

static void age_is(double s, const char *want)
{
	char out[24], name[80];

	pd_render_age(s, out, sizeof(out));
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

static const struct pd_col cols[] = {
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
	struct pd_fmt table = {0, 0}, json = {1, 0}, color = {0, 1};
	struct pd_buf b = PD_BUF_INIT;

	pd_render(cols, 7, cells, 2, &table, &b);
	is_str(pd_buf_str(&b),
	       "ID  TYPE     STATE      AGE    OK   NOTE\n"
	       "7   noop     SUCCEEDED  3m12s  yes  fine\n"
	       "12  b\"o\\o m  PENDING    -      no   -\n",
	       "a table: headers upper-cased, JSON-only columns left out, tabs made spaces");
	pd_buf_reset(&b);
	pd_render(cols, 7, cells, 2, &json, &b);
	is_str(pd_buf_str(&b),
	       "{\"id\":7,\"job_type\":\"noop\",\"state\":\"SUCCEEDED\",\"age_s\":192.345,"
	       "\"payload\":{\"a\": [1, 2]},\"ok\":true}\n"
	       "{\"id\":12,\"job_type\":\"b\\\"o\\\\o\\tm\",\"state\":\"PENDING\",\"age_s\":null,"
	       "\"payload\":null,\"ok\":false}\n",
	       "JSON lines: typed values, table-only columns left out, strings escaped");
	pd_buf_reset(&b);
	pd_render(cols, 7, cells, 0, &table, &b);
	is_str(pd_buf_str(&b), "ID  TYPE  STATE  AGE  OK  NOTE\n", "no rows: the header alone");
	pd_buf_reset(&b);
	pd_render(cols, 7, cells, 0, &json, &b);
	is_str(pd_buf_str(&b), "", "no rows in JSON: nothing");
	pd_buf_reset(&b);
	pd_render(cols, 7, cells, 1, &color, &b);
	like(pd_buf_str(&b), "\033[32mSUCCEEDED\033[0m  3m12s", "colour: the state, then aligned");
	like(pd_buf_str(&b), "\033[1mID\033[0m  ", "colour: bold headers keep their width");
	pd_buf_release(&b);
}

static void test_render_edges(void)
{
	static const struct pd_col c2[] = {{"n", NULL, 'n', 'b'}, {"s", NULL, 's', 'b'}};
	char long_text[200];
	const char *cells[] = {"12abc", long_text, "1e5", "é\nà"};
	struct pd_fmt table = {0, 0}, json = {1, 0};
	struct pd_buf b = PD_BUF_INIT;
	const char *nl;

	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	pd_render(c2, 2, cells, 2, &json, &b);
	like(pd_buf_str(&b), "{\"n\":\"12abc\",", "a number column that is not a number: a string");
	like(pd_buf_str(&b), "{\"n\":1e5,\"s\":\"é\\nà\"}", "JSON keeps the newline, escaped");
	pd_buf_reset(&b);
	pd_render(c2, 2, cells, 2, &table, &b);
	nl = strchr(pd_buf_str(&b), '\n');
	ok(nl && strstr(nl + 1, "xxx...\n") != NULL, "a long cell is cut and marked");
	ok(nl && strchr(nl + 1, '\n') - (nl + 1) == (long)strlen("12abc  ") + 72,
	   "to 72 characters");
	like(pd_buf_str(&b), "1e5    é à\n", "control characters become spaces; UTF-8 kept");
	pd_buf_release(&b);
}

int main(void)
{
	test_age();
	test_render();
	test_render_edges();
	return done_testing();
}
