/* text: make bytes safe for a PostgreSQL text value. */
#ifndef PD_TEXT_H
#define PD_TEXT_H

#include <stddef.h>

#include "buf.h"

/*
 * Append s to out with every NUL byte and every invalid UTF-8 sequence
 * replaced by U+FFFD, so that PostgreSQL accepts it as text.
 */
void pd_utf8_sanitize(struct pd_buf *out, const char *s, size_t n);

#endif
