/*
 * admin_test: the parts of pd-admin that need no database: state and id
 * parsing, Prometheus label escaping, and clipping top's frames to a
 * terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "job.h"
#include "metrics.h"
#include "tap.h"
#include "top.h"

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

/* --rate N/PERIOD and limit keys, as pd-admin limit set takes them. */
static void test_rate_and_key(void)
{
	struct pd_err e = PD_ERR_INIT;
	long long n = 0, ms = 0;
	static const struct {
		const char *s;
		int code;
	} bad[] = {
	    {"5", PD_EX_USAGE},
	    {"/1m", PD_EX_USAGE},
	    {"0/1m", PD_EX_USAGE},
	    {"10001/1m", PD_EX_USAGE},
	    {"-1/1m", PD_EX_USAGE},
	    {"5x/1m", PD_EX_USAGE},
	    {"5/0s", PD_EX_USAGE},
	    {"5/soon", PD_EX_USAGE},
	    {"5/", PD_EX_USAGE},
	    {"5/2d", PD_EX_DATAERR},
	    {"5/86400001ms", PD_EX_DATAERR},
	    {"99999999999999999999/1s", PD_EX_USAGE},
	};

	ok(pd_admin_parse_rate("--rate", "100/1m", &n, &ms, &e) == 0 && n == 100 && ms == 60000,
	   "100/1m");
	ok(pd_admin_parse_rate("--rate", "20/2s", &n, &ms, &e) == 0 && n == 20 && ms == 2000,
	   "20/2s");
	ok(pd_admin_parse_rate("--rate", "10000/1d", &n, &ms, &e) == 0 && n == 10000 &&
	       ms == 86400000,
	   "the largest count and period");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[96];

		snprintf(name, sizeof(name), "rate '%s' refused with %d, naming the option",
			 bad[i].s, bad[i].code);
		pd_err_clear(&e);
		ok(pd_admin_parse_rate("--rate", bad[i].s, &n, &ms, &e) < 0 &&
		       e.code == bad[i].code && strstr(e.msg, "--rate") != NULL,
		   name);
	}
	pd_err_clear(&e);
	ok(pd_admin_limit_key_check("vendor-x", &e) == 0, "a name is a key");
	ok(pd_admin_limit_key_check("queue:email", &e) == 0, "queue:NAME is a key");
	ok(pd_admin_limit_key_check("queue:", &e) < 0 && e.code == PD_EX_DATAERR,
	   "a reserved prefix alone is refused with 65");
	pd_err_clear(&e);
	ok(pd_admin_limit_key_check("", &e) < 0 && e.code == PD_EX_USAGE,
	   "an empty key is refused with 64");
	pd_err_clear(&e);
	ok(pd_admin_limit_key_check("k\x01", &e) < 0 && e.code == PD_EX_DATAERR,
	   "a control character is refused with 65");
	pd_err_clear(&e);
}

int main(void)
{
	test_state_and_id();
	test_rate_and_key();
	test_label();
	test_clip();
	return done_testing();
}
