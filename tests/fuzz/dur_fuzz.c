/*
 * libFuzzer target for lib/dur (durations, instants) and lib/text (names,
 * UTF-8 sanitizing, quoting for messages): the input read as each of them.
 *
 *   make fuzz FUZZ_SECONDS=60       (or build-fuzz/fuzz/dur_fuzz DIR)
 *
 * Checks: failures are code 65 with one line quoting the input; a duration
 * lies in 0 to 100 years and an instant in the years 0001 to 9999 (the
 * upper bound on its local date), and each formats to text that parses
 * back to the same value (also for the value the input's first 8 bytes
 * make); a name that passes is valid UTF-8 with no control character and
 * at most PD_NAME_MAX bytes; sanitized text is valid UTF-8 without NUL, and
 * valid text sanitizes to itself; text shown in a message is cut to fit and
 * has no control byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "dur.h"
#include "err.h"
#include "json.h"
#include "text.h"
#include "fuzz.h"

/* 9999-12-31T23:59:59.999999Z */
#define INSTANT_MAX_US (253402300799LL * 1000000LL + 999999LL)

static void check_err(const struct pd_err *e, const char *prefix)
{
	CHECK(e->code == PD_EX_DATAERR);
	CHECK(strncmp(e->msg, prefix, strlen(prefix)) == 0);
	CHECK(strchr(e->msg, '\n') == NULL);
}

static void dur_roundtrip(long long ms)
{
	struct pd_err e = PD_ERR_INIT;
	char out[PD_DUR_MAX];
	long long back = -1;

	pd_dur_format(ms, out, sizeof(out));
	CHECK(pd_dur_parse(out, &back, &e) == 0 && back == ms);
}

static void instant_roundtrip(long long us)
{
	struct pd_err e = PD_ERR_INIT;
	char out[PD_INSTANT_MAX];
	long long back = 0;

	pd_instant_format(us, out, sizeof(out));
	CHECK(pd_instant_parse(out, &back, &e) == 0 && back == us);
}

static int is_control(uint32_t c)
{
	return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f);
}

/* s (n bytes, valid UTF-8) has no control character. */
static int no_controls(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t c = s[i];
		int len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

		if (len == 2)
			c = (uint32_t)(s[i] & 0x1f) << 6 | (s[i + 1] & 0x3f);
		if (is_control(c))
			return 0;
		i += (size_t)len;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf b = PD_BUF_INIT;
	char *s = malloc(size + 1), shown[PD_TEXT_SHOW_MAX + 1], small[8];
	long long v = 0;
	int rc;

	memcpy(s, data, size);
	s[size] = '\0';

	rc = pd_dur_parse(s, &v, &e);
	if (rc == 0) {
		CHECK(v >= 0 && v <= PD_DUR_MAX_MS);
		dur_roundtrip(v);
	} else {
		CHECK(rc == -1 || rc == -2);
		check_err(&e, "invalid duration '");
	}

	e = (struct pd_err)PD_ERR_INIT;
	if (pd_instant_parse(s, &v, &e) == 0) {
		/* Year 9999 is checked on the local date: an offset may carry it a day past. */
		CHECK(v >= PD_INSTANT_MIN_US && v <= INSTANT_MAX_US + (86400LL + 1) * 1000000LL);
		if (v <= INSTANT_MAX_US)
			instant_roundtrip(v);
	} else {
		check_err(&e, "invalid instant '");
	}

	if (size >= 8) {
		uint64_t u;

		memcpy(&u, data, 8);
		dur_roundtrip((long long)(u % (uint64_t)(PD_DUR_MAX_MS + 1)));
		instant_roundtrip(
		    PD_INSTANT_MIN_US +
		    (long long)(u % (uint64_t)(INSTANT_MAX_US - PD_INSTANT_MIN_US + 1)));
	}

	e = (struct pd_err)PD_ERR_INIT;
	if (pd_name_check("queue", s, &e) == 0) {
		CHECK(strlen(s) <= PD_NAME_MAX);
		CHECK(pd_json_valid_utf8(s, strlen(s)));
		CHECK(no_controls((const unsigned char *)s, strlen(s)));
	} else {
		check_err(&e, "invalid queue: ");
	}

	pd_utf8_sanitize(&b, (const char *)data, size);
	CHECK(pd_json_valid_utf8(b.data ? b.data : "", b.len));
	CHECK(b.len == 0 || memchr(b.data, '\0', b.len) == NULL);
	if (pd_json_valid_utf8((const char *)data, size) && memchr(data, '\0', size) == NULL)
		CHECK(b.len == size && memcmp(b.data, data, size) == 0);
	pd_buf_release(&b);

	pd_text_show(shown, sizeof(shown), (const char *)data, size);
	CHECK(strlen(shown) < sizeof(shown));
	for (const char *p = shown; *p; p++)
		CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
	pd_text_show(small, sizeof(small), (const char *)data, size);
	CHECK(strlen(small) < sizeof(small));

	free(s);
	return 0;
}
