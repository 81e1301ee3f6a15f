#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

static const char replacement[] = "\xEF\xBF\xBD";

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned int cp;

	if (c < 0x80)
		return c ? 1 : 0;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
		return 0;
	return len;
}

void pd_utf8_sanitize(struct pd_buf *out, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;

	pd_buf_grow(out, n);
	while (i < n) {
		size_t len = seq_len(p + i, n - i);

		if (len) {
			i += len;
			run += len;
			continue;
		}
		pd_buf_append(out, s + i - run, run);
		pd_buf_append(out, replacement, 3);
		run = 0;
		i++;
	}
	pd_buf_append(out, s + i - run, run);
}

int pd_name_check(const char *field, const char *value, struct pd_err *e)
{
	const unsigned char *p = (const unsigned char *)value;
	size_t n, i = 0;

	if (value == NULL)
		return 0;
	n = strlen(value);
	if (n > PD_NAME_MAX)
		return pd_errf(e, PD_EX_DATAERR, "invalid %s: %zu bytes, at most %d", field, n,
			       PD_NAME_MAX);
	while (i < n) {
		size_t len = seq_len(p + i, n - i);
		unsigned int cp;

		if (len == 0)
			return pd_errf(e, PD_EX_DATAERR, "invalid %s: invalid UTF-8 at byte %zu",
				       field, i + 1);
		cp = len == 1	? p[i]
		     : len == 2 ? ((p[i] & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu)
				: 0xFFFF;
		if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
			return pd_errf(e, PD_EX_DATAERR,
				       "invalid %s: control character U+%04X at byte %zu", field,
				       cp, i + 1);
		i += len;
	}
	return 0;
}

const char *pd_text_show(char *out, size_t n, const char *s, size_t len)
{
	size_t i, j = 0, max = n - 1 < PD_TEXT_SHOW_MAX ? n - 1 : PD_TEXT_SHOW_MAX;

	for (i = 0; i < len && j < max; i++) {
		unsigned char ch = (unsigned char)s[i];
		out[j++] = isspace(ch) ? ' ' : (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	if (i < len && j >= 3)
		memcpy(out + j - 3, "...", 3);
	out[j] = '\0';
	return out;
}

void pd_strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}
