/*
 * libFuzzer target for lib/json:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ilib \
 *       lib/err.c lib/log.c lib/buf.c lib/json.c tests/fuzz/json_fuzz.c -o json_fuzz
 *   ./json_fuzz -max_total_time=60 corpus/
 *
 * Besides crashes it checks the module's promises and aborts when one breaks:
 * a failed parse leaves j empty with a positioned exit-65 message; a
 * successful one covers the input with a well-formed token tree, accepts only
 * valid UTF-8, and every string it yields quotes and parses back to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "json.h"
#include "fuzz.h"

/* quote(s) parses as one string that unescapes to s. */
static void check_roundtrip(const char *s)
{
	struct pd_buf b = PD_BUF_INIT;
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	char *back;

	pd_json_quote(&b, s, strlen(s));
	CHECK(pd_json_parse(&j, b.data, b.len, &e) == 0);
	CHECK(j.ntok == 1 && j.tok[0].type == PD_JSON_STRING);
	back = pd_json_str(&j, 0);
	CHECK(strcmp(back, s) == 0);
	free(back);
	pd_json_release(&j);
	pd_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf b = PD_BUF_INIT;

	if (pd_json_parse(&j, s, size, &e) < 0) {
		CHECK(e.code == PD_EX_DATAERR);
		CHECK(strncmp(e.msg, "invalid JSON at line ", 21) == 0);
		CHECK(j.tok == NULL && j.ntok == 0);
	} else {
		CHECK(j.ntok >= 1 && j.src == s && j.len == size);
		CHECK(pd_json_valid_utf8(s, size));
		CHECK(pd_json_skip(&j, 0) == j.ntok);
		for (int i = 0; i < j.ntok; i++) {
			const struct pd_jtok *t = &j.tok[i];
			const char *p;
			size_t n;
			char *str = pd_json_str(&j, i);
			long long v;

			CHECK(str != NULL);
			CHECK(t->start >= 0 && t->start <= t->end && (size_t)t->end <= size);
			CHECK(i == 0 ? t->parent == -1 : (t->parent >= 0 && t->parent < i));
			CHECK(pd_json_skip(&j, i) > i && pd_json_skip(&j, i) <= j.ntok);
			pd_json_span(&j, i, &p, &n);
			CHECK(p >= s && p + n <= s + size);
			if (t->type == PD_JSON_STRING) {
				CHECK(pd_json_valid_utf8(str, strlen(str)));
				check_roundtrip(str);
			} else {
				CHECK(strlen(str) == n && memcmp(str, p, n) == 0);
			}
			if (t->type == PD_JSON_OBJECT || t->type == PD_JSON_ARRAY)
				CHECK(p[0] == (t->type == PD_JSON_OBJECT ? '{' : '['));
			if (pd_json_int(&j, i, &v) == 0)
				CHECK(t->type == PD_JSON_NUMBER);
			/* Keys are found again by name (last duplicate wins). */
			if (t->parent >= 0 && j.tok[t->parent].type == PD_JSON_OBJECT) {
				int got = pd_json_get(&j, t->parent, str);

				CHECK(got > 0 && j.tok[got - 1].type == PD_JSON_STRING);
				CHECK(got >= i + 1);
			}
			free(str);
		}
		pd_json_release(&j);
	}

	/* Any bytes at all quote into a parseable, valid UTF-8 string. */
	pd_json_quote(&b, s, size);
	CHECK(pd_json_valid_utf8(b.data, b.len));
	CHECK(pd_json_parse(&j, b.data, b.len, &e) == 0 && j.ntok == 1);
	pd_json_release(&j);
	pd_buf_release(&b);
	return 0;
}
