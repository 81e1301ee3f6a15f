/*
 * text_test: the one rule for names (pd_name_check) at each of its edges,
 * and the messages that name the field and the byte; pd_text_show.
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
	return done_testing();
}
