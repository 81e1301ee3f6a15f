/*
 * buf_test: the number formatting of the hot paths (pd_fmt_i64,
 * pd_buf_put_i64) at the int64 bounds, beside snprintf's, and the JSON
 * members built on it (pd_json_member_*): the bytes a job line and an
 * outcome are made of, escaping included.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "tap.h"

/* pd_fmt_i64(v) is what snprintf's %lld writes, its length returned. */
static void fmt_is(long long v, const char *name)
{
	char got[PD_I64_CHARS], want[32];
	size_t n = pd_fmt_i64(got, v);

	snprintf(want, sizeof(want), "%lld", v);
	is_str(got, want, name);
	is_int((long long)n, (long long)strlen(want), name);
}

static void test_fmt(void)
{
	fmt_is(0, "0");
	fmt_is(7, "one digit");
	fmt_is(-7, "a negative digit");
	fmt_is(10, "10");
	fmt_is(-10, "-10");
	fmt_is(1234567890123LL, "13 digits");
	fmt_is(INT_MAX, "INT_MAX");
	fmt_is(INT_MIN, "INT_MIN");
	fmt_is(LLONG_MAX, "INT64 max: 19 digits");
	fmt_is(LLONG_MIN, "INT64 min: '-' and 19 digits, no overflow");
	fmt_is(LLONG_MIN + 1, "INT64 min + 1");
	fmt_is(999999999999999999LL, "18 nines");
	fmt_is(1000000000000000000LL, "10^18");
	for (long long v = 1, k = 0; k < 18; k++, v *= 10) {
		char name[64];

		snprintf(name, sizeof(name), "10^%lld - 1, 10^%lld, and their negatives", k + 1, k);
		fmt_is(v, name);
		fmt_is(v * 10 - 1, name);
		fmt_is(-v, name);
		fmt_is(-(v * 10 - 1), name);
	}
}

static void test_put(void)
{
	struct pd_buf b = PD_BUF_INIT;
	char want[128];

	pd_buf_put_i64(&b, LLONG_MIN);
	pd_buf_putc(&b, ',');
	pd_buf_put_i64(&b, LLONG_MAX);
	snprintf(want, sizeof(want), "%lld,%lld", LLONG_MIN, LLONG_MAX);
	is_str(pd_buf_str(&b), want, "put_i64 appends, NUL-terminated");
	is_int((long long)b.len, (long long)strlen(want), "put_i64: len counts the digits");
	pd_buf_release(&b);
	for (int i = 0; i < 100; i++) /* from an empty buffer past its first growth */
		pd_buf_put_i64(&b, -1234567890123456789LL);
	is_int((long long)b.len, 100 * 20, "put_i64 grows the buffer");
	ok(strncmp(b.data + 1980, "-1234567890123456789", 20) == 0, "the last one whole");
	pd_buf_release(&b);
}

static void test_members(void)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_buf_putc(&b, '{');
	pd_buf_puts(&b, "\"id\":");
	pd_buf_put_i64(&b, 42);
	pd_json_member_i64(&b, "token", LLONG_MAX);
	pd_json_member_i64(&b, "neg", LLONG_MIN);
	pd_json_member_bool(&b, "t", 1);
	pd_json_member_bool(&b, "f", 0);
	pd_json_member_str(&b, "s", "a\"b\\c\nd\te\x01");
	pd_json_member_str(&b, "null_s", NULL);
	pd_json_member_str(&b, "bad_utf8", "x\xff");
	pd_json_member_raw(&b, "raw", "{\"k\":[1,2]}");
	pd_json_member_raw(&b, "null_raw", NULL);
	pd_buf_putc(&b, '}');
	is_str(pd_buf_str(&b),
	       "{\"id\":42,\"token\":9223372036854775807,\"neg\":-9223372036854775808,"
	       "\"t\":true,\"f\":false,\"s\":\"a\\\"b\\\\c\\nd\\te\\u0001\",\"null_s\":null,"
	       "\"bad_utf8\":\"x\xEF\xBF\xBD\",\"raw\":{\"k\":[1,2]},\"null_raw\":null}",
	       "members: numbers at the bounds, booleans, escapes, U+FFFD, raw, nulls");
	pd_buf_release(&b);
	pd_json_member_str(&b, "k", ""); /* onto an empty buffer: the key alone grows it */
	is_str(pd_buf_str(&b), ",\"k\":\"\"", "a member onto an empty buffer");
	pd_buf_release(&b);
}

int main(void)
{
	test_fmt();
	test_put();
	test_members();
	return done_testing();
}
