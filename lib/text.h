/* text: make bytes safe for a PostgreSQL text value, and for a message. */
#ifndef PD_TEXT_H
#define PD_TEXT_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

/*
 * Append s to out with every NUL byte and every invalid UTF-8 sequence
 * replaced by U+FFFD, so that PostgreSQL accepts it as text.
 */
void pd_utf8_sanitize(struct pd_buf *out, const char *s, size_t n);

/* The longest name in bytes (pd_name_check). */
#define PD_NAME_MAX 200

/*
 * The one rule for names (tenant, queue, type, topic, idempotency and
 * message keys, workflow, schedule): valid UTF-8, no control character
 * (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F), at most PD_NAME_MAX
 * bytes. Returns 0, or -1 with e filled, code 65: "invalid FIELD: WHY"
 * ("invalid queue: control character U+0001 at byte 3"). NULL is no
 * name and passes; emptiness is the caller's to refuse. The SQL twin is
 * pendulum.check_name (sql/017).
 */
int pd_name_check(const char *field, const char *value, struct pd_err *e);

#define PD_TEXT_SHOW_MAX 100 /* pd_text_show's longest text */

/*
 * Copy len bytes of s into out (size n) for quoting in a message: white
 * space becomes ' ', other control bytes '?', and text longer than n - 1
 * or PD_TEXT_SHOW_MAX bytes is cut with "...". Returns out.
 */
const char *pd_text_show(char *out, size_t n, const char *s, size_t len);

/* Free a NULL-terminated vector of malloc'd strings (an environment) and the vector; NULL is fine.
 */
void pd_strv_free(char **v);

#endif
