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

/*
 * The length of the prefix reserved for the limits of a queue, a tenant or
 * a job type ("queue:", "tenant:", "type:") that key begins with, or 0.
 * The limit keys of pd-admin (pd_admin_limit_key_check) are these followed
 * by a name; a job's concurrency key (pd_concurrency_key_check) has none.
 */
size_t pd_limit_key_prefix(const char *key);

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

/*
 * A set of strings, each with an int: the duplicate checks of the files
 * Pendulum reads (YAML mappings, schedule names, step names) in constant
 * time a name, so that a file loads in time linear in its size. The set
 * points at the keys, which must outlive it. Zeroed (PD_STRSET_INIT) is
 * empty.
 */
struct pd_strset {
	struct pd_strset_slot *slot;
	size_t cap, n; /* cap a power of two or 0; at most half full */
};

#define PD_STRSET_INIT                                                                             \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

/*
 * Add key with val: -1 when it was not there yet, else the val it was
 * added with (the set is left as it was).
 */
int pd_strset_add(struct pd_strset *s, const char *key, int val);
void pd_strset_release(struct pd_strset *s);

/*
 * A size in bytes: a plain number of bytes, or one with a unit B, KiB,
 * MiB, GiB (powers of 1024) or kB, MB, GB (powers of 1000), no space, case
 * as written: "1MiB", "512KiB", "65536". From 1 to 2^40. Returns 0, or -1
 * with e filled (code 64): "expected a size such as 512KiB or 1MiB, got 'x'".
 */
int pd_size_parse(const char *s, long long *out, struct pd_err *e);

/*
 * The nearest of a set of names to a mistyped word, for "did you mean":
 * init with the word, add each candidate, then best is the candidate
 * nearest by edit distance (insert, delete, replace, swap two neighbours:
 * one step each), the first added of equals, or NULL when none is near
 * enough to be a typo (more than a third of the word's length, at least 1
 * and at most 3 steps away). An exact match is no typo: best stays NULL.
 */
struct pd_text_near {
	const char *word, *best;
	int dist;
};
void pd_text_near_init(struct pd_text_near *n, const char *word);
void pd_text_near_add(struct pd_text_near *n, const char *cand);

/* Steps from a to b as pd_text_near counts them (optimal string alignment). */
int pd_text_distance(const char *a, const char *b);

/*
 * Append text to out wrapped within width columns: words (runs of bytes
 * other than space and newline; spaces inside [...] do not separate
 * words) laid out greedily, the first line from column col (what is
 * already on it), each later line indented by indent spaces. A word wider
 * than a line stands alone. Ends with a newline. Columns are bytes: help
 * texts are ASCII.
 */
void pd_text_wrap(struct pd_buf *out, const char *text, int col, int indent, int width);

/* bytes as pd_size_parse reads it back, the largest exact unit: "1MiB", "1500", "512KiB". */
void pd_size_format(long long bytes, char *out, size_t n);

#endif
