#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"

char *pd_buf_grow(struct pd_buf *b, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;

		while (cap < b->len + n + 1)
			cap *= 2;
		b->data = pd_xrealloc(b->data, cap);
		b->cap = cap;
	}
	return b->data + b->len;
}

void pd_buf_append(struct pd_buf *b, const void *p, size_t n)
{
	char *dst = pd_buf_grow(b, n);

	if (n)
		memcpy(dst, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void pd_buf_puts(struct pd_buf *b, const char *s)
{
	pd_buf_append(b, s, strlen(s));
}

void pd_buf_putc(struct pd_buf *b, char c)
{
	pd_buf_append(b, &c, 1);
}

size_t pd_fmt_i64(char out[PD_I64_CHARS], long long v)
{
	/* The magnitude as unsigned, so that -LLONG_MIN does not overflow. */
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	char rev[PD_I64_CHARS];
	size_t n = 0, k = 0;

	do {
		rev[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		out[k++] = '-';
	while (n)
		out[k++] = rev[--n];
	out[k] = '\0';
	return k;
}

void pd_buf_put_i64(struct pd_buf *b, long long v)
{
	char num[PD_I64_CHARS];

	pd_buf_append(b, num, pd_fmt_i64(num, v));
}

void pd_buf_printf(struct pd_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	pd_buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *pd_buf_str(const struct pd_buf *b)
{
	return b->data ? b->data : "";
}

void pd_buf_reset(struct pd_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void pd_buf_release(struct pd_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *pd_buf_detach(struct pd_buf *b)
{
	char *s = b->data ? b->data : pd_xstrdup("");

	b->data = NULL;
	b->len = b->cap = 0;
	return s;
}

void pd_tail_init(struct pd_tail *t)
{
	t->start = t->len = 0;
}

void pd_tail_append(struct pd_tail *t, const char *p, size_t n)
{
	if (n >= PD_TAIL_SIZE) {
		memcpy(t->ring, p + n - PD_TAIL_SIZE, PD_TAIL_SIZE);
		t->start = 0;
		t->len = PD_TAIL_SIZE;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t at = (t->start + t->len) % PD_TAIL_SIZE;

		t->ring[at] = p[i];
		if (t->len < PD_TAIL_SIZE)
			t->len++;
		else
			t->start = (t->start + 1) % PD_TAIL_SIZE;
	}
}

void pd_tail_copy(const struct pd_tail *t, struct pd_buf *out)
{
	size_t first = t->len;

	pd_buf_reset(out);
	if (t->start + first > PD_TAIL_SIZE)
		first = PD_TAIL_SIZE - t->start;
	pd_buf_append(out, t->ring + t->start, first);
	pd_buf_append(out, t->ring, t->len - first);
}
