/*
 * text_test: the one rule for names (pd_name_check) at each of its edges,
 * and the messages that name the field and the byte; pd_text_show; the
 * nearest name (pd_text_near) and wrapping (pd_text_wrap).
 */
#include <string.h>

#include "tap.h"
#include "text.h"

static void name_ok(const char *v, const char *name)
{
	struct pd_err e = PD_ERR_INIT;

	if (!ok(pd_name_check("queue", v, &e) == 0 && e.code == 0, name))
		printf("#   error '%s'\n", e.msg);
}

static void name_bad(const char *v, const char *want, const char *name)
{
	struct pd_err e = PD_ERR_INIT;

	ok(pd_name_check("queue", v, &e) == -1 && e.code == PD_EX_DATAERR, name);
	is_str(e.msg, want, name);
}

/* pd_text_show: text for quoting in a message. */
static void test_show(void)
{
	char out[8], big[PD_TEXT_SHOW_MAX + 20], src[PD_TEXT_SHOW_MAX + 10];

	is_str(pd_text_show(out, sizeof(out), "a\tb\nc", 5), "a b c", "white space becomes ' '");
	is_str(pd_text_show(out, sizeof(out), "a\x01\x7f", 3), "a??", "control bytes become '?'");
	is_str(pd_text_show(out, sizeof(out), "abcdefghij", 10), "abcd...",
	       "cut to n - 1 with ...");
	is_str(pd_text_show(out, sizeof(out), "abcdefghij", 3), "abc", "len bytes only");
	memset(src, 'x', sizeof(src));
	pd_text_show(big, sizeof(big), src, sizeof(src));
	is_int((long long)strlen(big), PD_TEXT_SHOW_MAX, "at most PD_TEXT_SHOW_MAX bytes");
	is_str(big + PD_TEXT_SHOW_MAX - 3, "...", "a long text ends in ...");
}

static void size_ok(const char *s, long long want)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = -1;

	ok(pd_size_parse(s, &v, &e) == 0, s);
	is_int(v, want, s);
}

static void size_bad(const char *s, const char *want)
{
	struct pd_err e = PD_ERR_INIT;
	long long v = -1;

	ok(pd_size_parse(s, &v, &e) == -1 && e.code == PD_EX_USAGE, s);
	is_str(e.msg, want, s);
	is_int(v, -1, "nothing stored");
}

static void test_size(void)
{
	char out[32];

	size_ok("1MiB", 1048576);
	size_ok("512KiB", 524288);
	size_ok("65536", 65536);
	size_ok("100B", 100);
	size_ok("2GiB", 2147483648LL);
	size_ok("3kB", 3000);
	size_ok("1MB", 1000000);
	size_ok("1024GiB", 1LL << 40);
	size_bad("", "expected a size such as 512KiB or 1MiB, got ''");
	size_bad("1 MiB", "expected a size such as 512KiB or 1MiB, got '1 MiB'");
	size_bad("1mib", "expected a size such as 512KiB or 1MiB, got '1mib'");
	size_bad("-1", "expected a size such as 512KiB or 1MiB, got '-1'");
	size_bad("1.5MiB", "expected a size such as 512KiB or 1MiB, got '1.5MiB'");
	size_bad("0", "size '0': expected 1 byte to 1TiB");
	size_bad("1025GiB", "size '1025GiB': expected 1 byte to 1TiB");
	size_bad("99999999999999999999999", "expected a size such as 512KiB or 1MiB, got "
					    "'99999999999999999999999'");
	pd_size_format(1048576, out, sizeof(out));
	is_str(out, "1MiB", "1 MiB formatted");
	pd_size_format(524288, out, sizeof(out));
	is_str(out, "512KiB", "512 KiB formatted");
	pd_size_format(1500, out, sizeof(out));
	is_str(out, "1500", "no exact unit: bytes");
}

static void test_strset(void)
{
	struct pd_strset s = PD_STRSET_INIT;
	char keys[5000][8];
	int bad = 0;

	for (int i = 0; i < 5000; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		if (pd_strset_add(&s, keys[i], i) != -1)
			bad++;
	}
	is_int(bad, 0, "5000 new keys each added");
	is_int(pd_strset_add(&s, "k4321", 7), 4321, "a repeat gives the first one's value");
	is_int(pd_strset_add(&s, "k0", 7), 0, "the first key is still there after rehashing");
	is_int(pd_strset_add(&s, "", 9), -1, "the empty string is a key");
	is_int(pd_strset_add(&s, "", 10), 9, "and found again");
	is_int((long long)s.n, 5001, "5001 keys");
	pd_strset_release(&s);
	is_int(pd_strset_add(&s, "k1", 1), -1, "empty again after release");
	pd_strset_release(&s);
}

/* pd_text_near and pd_text_distance: "did you mean". */
static void test_near(void)
{
	static const char *const opts[] = {"queue", "quiet", "concurrency", "limit", "json"};
	struct pd_text_near n;

	is_int(pd_text_distance("limit", "limt"), 1, "a deletion is one step");
	is_int(pd_text_distance("dlq", "dql"), 1, "two neighbours swapped are one step");
	is_int(pd_text_distance("", "abc"), 3, "from nothing: an insertion a byte");
	is_int(pd_text_distance("kitten", "sitting"), 3, "kitten to sitting");
	pd_text_near_init(&n, "queu");
	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++)
		pd_text_near_add(&n, opts[i]);
	is_str(n.best ? n.best : "(none)", "queue", "queu: queue, the nearest");
	pd_text_near_init(&n, "concurency");
	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++)
		pd_text_near_add(&n, opts[i]);
	is_str(n.best ? n.best : "(none)", "concurrency", "concurency: concurrency");
	pd_text_near_init(&n, "xyz");
	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++)
		pd_text_near_add(&n, opts[i]);
	ok(n.best == NULL, "xyz: nothing near enough");
	pd_text_near_init(&n, "json");
	pd_text_near_add(&n, "json");
	ok(n.best == NULL, "an exact match is no typo");
}

/* pd_text_wrap: greedy, indented, brackets kept whole. */
static void test_wrap(void)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_text_wrap(&b, "aaa bbb ccc", 0, 2, 7);
	is_str(pd_buf_str(&b), "aaa bbb\n  ccc\n", "wrapped at 7, indented by 2");
	pd_buf_reset(&b);
	pd_text_wrap(&b, "x [--a B] [--c D]", 4, 4, 14);
	is_str(pd_buf_str(&b), "x [--a B]\n    [--c D]\n", "a bracket is one word");
	pd_buf_reset(&b);
	pd_text_wrap(&b, "one\n      two", 0, 0, 80);
	is_str(pd_buf_str(&b), "one two\n", "newlines and runs of spaces are one space");
	pd_buf_reset(&b);
	pd_text_wrap(&b, "averyveryverylongword x", 0, 1, 5);
	is_str(pd_buf_str(&b), "averyveryverylongword\n x\n", "a word wider than a line alone");
	pd_buf_release(&b);
}

int main(void)
{
	char long_name[PD_NAME_MAX + 2];

	name_ok(NULL, "NULL is no name");
	name_ok("", "the empty name is the caller's to refuse");
	name_ok("emails.send-v2:x/y z", "ASCII punctuation and a space");
	name_ok("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "2-, 3- and 4-byte UTF-8");
	name_ok("\xc2\xa0", "U+00A0, the first code point after C1");
	memset(long_name, 'a', PD_NAME_MAX);
	long_name[PD_NAME_MAX] = '\0';
	name_ok(long_name, "200 bytes");
	long_name[PD_NAME_MAX] = 'a';
	long_name[PD_NAME_MAX + 1] = '\0';
	name_bad(long_name, "invalid queue: 201 bytes, at most 200", "201 bytes");
	name_bad("a\x01z", "invalid queue: control character U+0001 at byte 2", "C0 control");
	name_bad("\x1f", "invalid queue: control character U+001F at byte 1", "U+001F");
	name_bad("a\tb", "invalid queue: control character U+0009 at byte 2", "tab");
	name_bad("a\nb", "invalid queue: control character U+000A at byte 2", "newline");
	name_bad("ab\x7f", "invalid queue: control character U+007F at byte 3", "DEL");
	name_bad("\xc2\x80", "invalid queue: control character U+0080 at byte 1", "C1 U+0080");
	name_bad("x\xc2\x9b", "invalid queue: control character U+009B at byte 2", "C1 CSI");
	name_bad("\xff", "invalid queue: invalid UTF-8 at byte 1", "byte 0xff");
	name_bad("ab\xc3", "invalid queue: invalid UTF-8 at byte 3", "truncated sequence");
	name_bad("\xc0\xaf", "invalid queue: invalid UTF-8 at byte 1", "overlong form");
	name_bad("\xed\xa0\x80", "invalid queue: invalid UTF-8 at byte 1", "a surrogate");
	name_bad("\xf4\x90\x80\x80", "invalid queue: invalid UTF-8 at byte 1", "above U+10FFFF");
	test_show();
	test_size();
	test_strset();
	test_near();
	test_wrap();
	return done_testing();
}
