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

int main(void)
{
	test_state_and_id();
	test_label();
	test_clip();
	return done_testing();
}
