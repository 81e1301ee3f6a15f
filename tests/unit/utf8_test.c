/*
 * pd_utf8_sanitize, degenerate inputs: overlong forms, surrogates, code
 * points above U+10FFFF, truncated sequences, 0xFF and 0xFE, embedded NUL.
 * Each byte of an invalid sequence becomes one U+FFFD; valid text is kept.
 */
#include <string.h>

#include "buf.h"
#include "retry.h"
#include "tap.h"
#include "text.h"

#define R "\xEF\xBF\xBD" /* U+FFFD */

static void clean(const char *in, size_t n, const char *want, const char *name)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_utf8_sanitize(&b, in, n);
	if (!ok(b.len == strlen(want) && memcmp(pd_buf_str(&b), want, b.len) == 0, name))
		printf("#          got %zu bytes: '%s'\n#     expected: '%s'\n", b.len,
		       pd_buf_str(&b), want);
	pd_buf_release(&b);
}

/* The output of the cleaner: no NUL, and cleaned again it is unchanged. */
static int clean_is_fixed_point(const char *in, size_t n)
{
	struct pd_buf a = PD_BUF_INIT, b = PD_BUF_INIT;
	int good;

	pd_utf8_sanitize(&a, in, n);
	pd_utf8_sanitize(&b, a.data, a.len);
	good = a.len >= n && a.len <= 3 * n && a.len == b.len &&
	       (a.len == 0 ||
		(memchr(a.data, '\0', a.len) == NULL && memcmp(a.data, b.data, a.len) == 0));
	pd_buf_release(&a);
	pd_buf_release(&b);
	return good;
}

int main(void)
{
	struct pd_buf b = PD_BUF_INIT;
	struct pd_rng r;
	int bad = 0;

	/* Overlong forms: each byte refused. */
	clean("\xC0\x80", 2, R R, "overlong NUL C0 80");
	clean("\xC1\xBF", 2, R R, "overlong C1 BF");
	clean("\xC0\xAF", 2, R R, "overlong '/' C0 AF");
	clean("\xE0\x80\x80", 3, R R R, "overlong 3-byte E0 80 80");
	clean("\xE0\x9F\xBF", 3, R R R, "overlong 3-byte E0 9F BF (U+07FF)");
	clean("\xF0\x80\x80\x80", 4, R R R R, "overlong 4-byte F0 80 80 80");
	clean("\xF0\x8F\xBF\xBF", 4, R R R R, "overlong 4-byte F0 8F BF BF (U+FFFF)");
	/* The smallest of each length is valid. */
	clean("\xC2\x80", 2, "\xC2\x80", "U+0080 kept");
	clean("\xE0\xA0\x80", 3, "\xE0\xA0\x80", "U+0800 kept");
	clean("\xF0\x90\x80\x80", 4, "\xF0\x90\x80\x80", "U+10000 kept");

	/* Surrogates, and their neighbours. */
	clean("\xED\xA0\x80", 3, R R R, "U+D800 refused");
	clean("\xED\xBF\xBF", 3, R R R, "U+DFFF refused");
	clean("\xED\xA0\xBD\xED\xB8\x80", 6, R R R R R R, "a CESU-8 surrogate pair refused");
	clean("\xED\x9F\xBF", 3, "\xED\x9F\xBF", "U+D7FF kept");
	clean("\xEE\x80\x80", 3, "\xEE\x80\x80", "U+E000 kept");

	/* Above U+10FFFF. */
	clean("\xF4\x8F\xBF\xBF", 4, "\xF4\x8F\xBF\xBF", "U+10FFFF kept");
	clean("\xF4\x90\x80\x80", 4, R R R R, "U+110000 refused");
	clean("\xF5\x80\x80\x80", 4, R R R R, "F5 lead refused");
	clean("\xF8\x88\x80\x80\x80", 5, R R R R R, "5-byte form refused");

	/* Truncated sequences. */
	clean("\xE2\x82", 2, R R, "3-byte sequence cut at the end");
	clean("\xE2\x82"
	      "A",
	      3, R R "A", "3-byte sequence cut by an ASCII byte: the byte kept");
	clean("\xF0\x9F\x98", 3, R R R, "4-byte sequence cut at the end");
	clean("\xF0\x9F\x98\x80", 3, R R R, "a valid 4-byte sequence cut by n");
	clean("\x80", 1, R, "a lone continuation byte");
	clean("a\x80\xBF"
	      "b",
	      4, "a" R R "b", "two stray continuation bytes");
	clean("\xC3\xC3\xA9", 3, R "\xC3\xA9",
	      "a lead byte then a valid sequence: the sequence kept");

	/* 0xFF and 0xFE never occur in UTF-8. */
	clean("\xFF", 1, R, "0xFF alone");
	clean("\xFF\xFF", 2, R R, "0xFF twice");
	clean("\xFE\xFF", 2, R R, "a UTF-16 byte order mark");
	clean("\xEF\xBB\xBF", 3, "\xEF\xBB\xBF", "a UTF-8 byte order mark kept");

	/* Embedded NUL. */
	clean("\0", 1, R, "NUL alone");
	clean("a\0\0b", 4, "a" R R "b", "two NULs");
	clean("\xE2\0\xAC", 3, R R R, "NUL inside a sequence");
	clean("ab\0", 3, "ab" R, "a trailing NUL");

	/* Lengths. */
	clean("", 0, "", "empty input, empty output");
	clean("abc", 2, "ab", "only n bytes read");
	clean("\xC3\xA9", 0, "", "n = 0 reads nothing");
	pd_buf_puts(&b, "kept:");
	pd_utf8_sanitize(&b, "\xFF", 1);
	is_str(pd_buf_str(&b), "kept:" R, "appends to what the buffer holds");
	pd_buf_release(&b);

	/* Random bytes: the output is the cleaner's own fixed point, without NUL. */
	pd_rng_seed(&r, 28);
	for (int i = 0; i < 20000; i++) {
		char in[16];
		size_t n = (size_t)pd_rng_upto(&r, sizeof(in));

		for (size_t k = 0; k < n; k++) {
			/* Bias towards the interesting bytes: leads, continuations, NUL. */
			static const unsigned char pick[] = {0x00, 0x41, 0x80, 0xBF, 0xC2,
							     0xDF, 0xE0, 0xED, 0xEF, 0xF0,
							     0xF4, 0xF5, 0xFF, 0xA0, 0x9F};
			in[k] = (char)(pd_rng_upto(&r, 1) ? pick[pd_rng_upto(&r, sizeof(pick) - 1)]
							  : (unsigned char)pd_rng_upto(&r, 255));
		}
		bad += !clean_is_fixed_point(in, n);
	}
	is_int(bad, 0, "20000 random inputs: output without NUL, unchanged when cleaned again");
	return done_testing();
}
