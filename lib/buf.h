/*
 * buf: a growable byte buffer, always NUL-terminated, and a fixed-size tail
 * ring that keeps the last N bytes written to it (for stderr tails).
 */
#ifndef PD_BUF_H
#define PD_BUF_H

#include <stddef.h>

struct pd_buf {
	char *data; /* NUL-terminated; NULL until the first append */
	size_t len;
	size_t cap;
};

#define PD_BUF_INIT                                                                                \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

void pd_buf_append(struct pd_buf *b, const void *p, size_t n);
void pd_buf_puts(struct pd_buf *b, const char *s);
void pd_buf_putc(struct pd_buf *b, char c);
void pd_buf_printf(struct pd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The decimal digits of v (a '-' first when negative, LLONG_MIN included)
 * into out, NUL-terminated: at most PD_I64_CHARS bytes with the NUL. Returns
 * the length. The hot paths' number formatting, without printf.
 */
#define PD_I64_CHARS 21
size_t pd_fmt_i64(char out[PD_I64_CHARS], long long v);
/* Append v as pd_fmt_i64 writes it. */
void pd_buf_put_i64(struct pd_buf *b, long long v);
/* Make room for n more bytes; returns a pointer to the free space. */
char *pd_buf_grow(struct pd_buf *b, size_t n);
/* The contents as a string ("" for an empty buffer). */
const char *pd_buf_str(const struct pd_buf *b);
/* Empty the buffer but keep its memory. */
void pd_buf_reset(struct pd_buf *b);
/* Free the memory; the buffer is empty and reusable. */
void pd_buf_release(struct pd_buf *b);
/* Hand the string to the caller (who frees it); the buffer is empty. */
char *pd_buf_detach(struct pd_buf *b);

#define PD_TAIL_SIZE 4096

struct pd_tail {
	char ring[PD_TAIL_SIZE];
	size_t start; /* index of the oldest byte */
	size_t len;   /* bytes held, at most PD_TAIL_SIZE */
};

void pd_tail_init(struct pd_tail *t);
void pd_tail_append(struct pd_tail *t, const char *p, size_t n);
/* Copy the held bytes, oldest first, into out (replacing its contents). */
void pd_tail_copy(const struct pd_tail *t, struct pd_buf *out);

#endif
