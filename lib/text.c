#include <ctype.h>
#include <stdio.h>
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

size_t pd_limit_key_prefix(const char *key)
{
	static const char *const reserved[] = {"queue:", "tenant:", "type:"};

	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strncmp(key, reserved[i], strlen(reserved[i])) == 0)
			return strlen(reserved[i]);
	return 0;
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

struct pd_strset_slot {
	const char *key; /* NULL: empty */
	int val;
};

static size_t strset_hash(const char *s)
{
	size_t h = (size_t)14695981039346656037ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * (size_t)1099511628211ULL;
	return h;
}

/* The slot of key in s (s->cap > 0): where it is, or the empty one it would take. */
static struct pd_strset_slot *strset_slot(const struct pd_strset *s, const char *key)
{
	size_t i = strset_hash(key) & (s->cap - 1);

	while (s->slot[i].key && strcmp(s->slot[i].key, key) != 0)
		i = (i + 1) & (s->cap - 1);
	return &s->slot[i];
}

int pd_strset_add(struct pd_strset *s, const char *key, int val)
{
	struct pd_strset_slot *at;

	if (2 * (s->n + 1) > s->cap) { /* rehash twice as large */
		struct pd_strset old = *s;

		s->cap = old.cap ? 2 * old.cap : 16;
		s->slot = pd_xcalloc(s->cap, sizeof(*s->slot));
		for (size_t i = 0; i < old.cap; i++)
			if (old.slot[i].key)
				*strset_slot(s, old.slot[i].key) = old.slot[i];
		free(old.slot);
	}
	at = strset_slot(s, key);
	if (at->key)
		return at->val;
	at->key = key;
	at->val = val;
	s->n++;
	return -1;
}

void pd_strset_release(struct pd_strset *s)
{
	free(s->slot);
	s->slot = NULL;
	s->cap = s->n = 0;
}

static const struct {
	const char *unit;
	long long mult;
} size_units[] = {
    {"GiB", 1LL << 30}, {"MiB", 1LL << 20}, {"KiB", 1LL << 10}, {"GB", 1000000000LL},
    {"MB", 1000000LL},	{"kB", 1000LL},	    {"B", 1LL},
};

int pd_size_parse(const char *s, long long *out, struct pd_err *e)
{
	const char *p = s;
	long long v = 0, mult = 1;

	if (!isdigit((unsigned char)*p))
		goto bad;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (1LL << 40))
			goto bad;
		v = v * 10 + (*p - '0');
	}
	if (*p) {
		size_t i;

		for (i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++)
			if (strcmp(p, size_units[i].unit) == 0)
				break;
		if (i == sizeof(size_units) / sizeof(size_units[0]))
			goto bad;
		mult = size_units[i].mult;
	}
	if (v < 1 || v > (1LL << 40) / mult)
		return pd_errf(e, PD_EX_USAGE, "size '%s': expected 1 byte to 1TiB", s);
	*out = v * mult;
	return 0;
bad:
	return pd_errf(e, PD_EX_USAGE, "expected a size such as 512KiB or 1MiB, got '%s'", s);
}

void pd_size_format(long long bytes, char *out, size_t n)
{
	static const char *const unit[] = {"GiB", "MiB", "KiB"};

	for (int i = 0; i < 3; i++) {
		long long m = 1LL << (30 - 10 * i);

		if (bytes >= m && bytes % m == 0) {
			snprintf(out, n, "%lld%s", bytes / m, unit[i]);
			return;
		}
	}
	snprintf(out, n, "%lld", bytes);
}

int pd_text_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int *d, r;

	if (la > 64 || lb > 64) /* options and commands are short: far apart */
		return 64;
	d = pd_xcalloc((la + 1) * (lb + 1), sizeof(*d));
#define D(i, j) d[(i) * (lb + 1) + (j)]
	for (size_t i = 0; i <= la; i++)
		D(i, 0) = (int)i;
	for (size_t j = 0; j <= lb; j++)
		D(0, j) = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int v = D(i - 1, j - 1) + (a[i - 1] != b[j - 1]);

			if (D(i - 1, j) + 1 < v)
				v = D(i - 1, j) + 1;
			if (D(i, j - 1) + 1 < v)
				v = D(i, j - 1) + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    D(i - 2, j - 2) + 1 < v)
				v = D(i - 2, j - 2) + 1;
			D(i, j) = v;
		}
	r = D(la, lb);
#undef D
	free(d);
	return r;
}

void pd_text_near_init(struct pd_text_near *n, const char *word)
{
	int len = (int)strlen(word);

	n->word = word;
	n->best = NULL;
	/* the most steps a typo may take, plus one */
	n->dist = (len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : len / 3) + 1;
}

void pd_text_near_add(struct pd_text_near *n, const char *cand)
{
	int d = pd_text_distance(n->word, cand);

	if (d > 0 && d < n->dist) {
		n->best = cand;
		n->dist = d;
	}
}

void pd_text_wrap(struct pd_buf *out, const char *text, int col, int indent, int width)
{
	const char *p = text;
	int first = 1;

	while (*p) {
		const char *w;
		int depth = 0, len;

		while (*p == ' ' || *p == '\n')
			p++;
		if (*p == '\0')
			break;
		for (w = p; *p && (depth > 0 || (*p != ' ' && *p != '\n')); p++)
			depth += *p == '[' ? 1 : *p == ']' && depth > 0 ? -1 : 0;
		len = (int)(p - w);
		if (!first && col + 1 + len > width) {
			pd_buf_printf(out, "\n%*s", indent, "");
			col = indent;
		} else if (!first) {
			pd_buf_putc(out, ' ');
			col++;
		}
		pd_buf_append(out, w, (size_t)len);
		col += len;
		first = 0;
	}
	pd_buf_putc(out, '\n');
}
