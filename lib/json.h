/*
 * json: a strict RFC 8259 parser over jsmn, and an escaping writer.
 *
 * pd_json_parse() accepts exactly one JSON value surrounded by optional
 * whitespace, and only what PostgreSQL jsonb can store: "\u0000",
 * unpaired UTF-16 surrogate escapes, invalid UTF-8 in strings and numbers
 * out of PostgreSQL numeric's range are refused, as is nesting deeper than
 * PD_JSON_MAX_DEPTH. Errors are PD_EX_DATAERR with the message
 *
 *   invalid JSON at line L, column C: <what>
 *
 * (L and C 1-based, C counting bytes). The result is a flat array of
 * tokens in document order; token 0 is the root. An object's children are
 * its keys (STRING tokens of size 1), each followed by its value's subtree.
 *
 *   struct pd_json j = PD_JSON_INIT;
 *   if (pd_json_parse(&j, s, n, &e) < 0) ...
 *   int t = pd_json_get(&j, 0, "queue");
 *   char *q = t < 0 ? NULL : pd_json_str(&j, t);
 *   pd_json_release(&j);
 *
 * Token indexes passed to the accessors must come from the same parse.
 */
#ifndef PD_JSON_H
#define PD_JSON_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

#define PD_JSON_MAX_DEPTH 512

/*
 * The most bytes jsonb holds in one string or container (JENTRY_OFFLENMASK,
 * "string too long to represent as jsonb string"): a longer text is never
 * stored, whatever it holds.
 */
#define PD_JSON_JSONB_MAX 268435455

enum pd_json_type {
	PD_JSON_OBJECT = 1,
	PD_JSON_ARRAY,
	PD_JSON_STRING,
	PD_JSON_NUMBER,
	PD_JSON_TRUE,
	PD_JSON_FALSE,
	PD_JSON_NULL
};

struct pd_jtok {
	enum pd_json_type type;
	int start, end; /* byte span in the source; for strings without the quotes */
	int size;	/* children: object: keys; array: items; key: 1; otherwise 0 */
	int parent;	/* enclosing token: the object of a key, the key of an object's
			   value, the array of an item; -1 for the root */
};

struct pd_json {
	const char *src; /* the parsed text, not owned: the caller keeps it alive */
	size_t len;
	struct pd_jtok *tok;
	int ntok;
};

/* clang-format off */
#define PD_JSON_INIT {NULL, 0, NULL, 0}
/* clang-format on */

/*
 * Parse s (len bytes, NUL not needed) into j, which must be empty
 * (PD_JSON_INIT or released). Returns 0, or -1 with e filled and j empty.
 */
int pd_json_parse(struct pd_json *j, const char *s, size_t len, struct pd_err *e);

/*
 * The same, but what only jsonb refuses (NUL escapes, unpaired surrogates,
 * invalid UTF-8 in strings, numbers out of numeric's range) is accepted:
 * for text that must be read whatever values it carries (a stream
 * handler's answer line). pd_json_str then gives U+FFFD for a NUL escape
 * or an unpaired surrogate, and passes invalid UTF-8 through.
 */
int pd_json_parse_lax(struct pd_json *j, const char *s, size_t len, struct pd_err *e);

/*
 * Whether s (len bytes) is JSON that PostgreSQL jsonb can store, in one pass
 * without allocating: 1 it is; 0 it is JSON (the grammar holds) but jsonb
 * refuses something in it, e filled (PD_EX_DATAERR) with what and where,
 * the first one ("number out of range (PostgreSQL numeric cannot store it)
 * at line 1, column 6"); -1 it is not JSON, e filled as pd_json_parse fills
 * it (nesting deeper than PD_JSON_MAX_DEPTH counts as not JSON).
 */
int pd_json_storable(const char *s, size_t len, struct pd_err *e);

/* Free the tokens; j is empty and reusable. */
void pd_json_release(struct pd_json *j);

/* The index of the token after tok's subtree (j->ntok after the last one). */
int pd_json_skip(const struct pd_json *j, int tok);

/*
 * The value token of key in object obj, or -1 (also when obj is not an
 * object). Keys are compared unescaped; with duplicate keys the last one
 * wins, as in jsonb.
 */
int pd_json_get(const struct pd_json *j, int obj, const char *key);

/*
 * A malloc'd string: for a STRING the unescaped UTF-8 (surrogate pairs
 * combined; it never holds a NUL byte), for anything else the value's raw
 * source text (an object comes back as its JSON text).
 */
char *pd_json_str(const struct pd_json *j, int tok);

/*
 * 0 with *out set if tok is a NUMBER written as an integer (no fraction or
 * exponent) that fits in long long; -1 otherwise, *out untouched.
 */
int pd_json_int(const struct pd_json *j, int tok, long long *out);

/* The raw JSON text of the value; a string's span includes its quotes. */
void pd_json_span(const struct pd_json *j, int tok, const char **p, size_t *n);

/*
 * Append s (n bytes) to b as a JSON string literal, quotes included. '"',
 * '\' and control characters are escaped (\n \t \r \b \f, others \u00XX);
 * each byte that is not part of valid UTF-8, and each NUL byte (which jsonb
 * cannot store as \u0000), becomes U+FFFD. The result always parses.
 */
void pd_json_quote(struct pd_buf *b, const char *s, size_t n);

/* s (NUL-terminated) as pd_json_quote writes it, or null when s is NULL. */
void pd_json_quote_or_null(struct pd_buf *b, const char *s);

/*
 * For objects written a member at a time: ,"key": and then s as
 * pd_json_quote_or_null writes it (str), or the JSON text json as it is, or
 * null when it is NULL (raw), or the integer v in decimal (i64), or true or
 * false (bool). key is written as it is: no escaping. No printf: these are
 * the worker's hot path (a job line, an outcome, once per job).
 */
void pd_json_member_str(struct pd_buf *b, const char *key, const char *s);
void pd_json_member_raw(struct pd_buf *b, const char *key, const char *json);
void pd_json_member_i64(struct pd_buf *b, const char *key, long long v);
void pd_json_member_bool(struct pd_buf *b, const char *key, int v);

/*
 * Remove, in place, the white space between the tokens of the JSON text s
 * (NUL-terminated): {"a": 1, "b": [2, 3]} becomes {"a":1,"b":[2,3]}, as
 * jq -c writes it. What is inside strings is kept; escapes are honoured.
 */
void pd_json_compact(char *s);

/* 1 if s (n bytes) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF), else 0. */
int pd_json_valid_utf8(const char *s, size_t n);

/* 1 if all of s is one JSON number (RFC 8259 grammar) that jsonb can store, else 0. */
int pd_json_is_number(const char *s);

/*
 * The 1-based line and column (in bytes) of offset off in s, for error
 * messages. Lines end at '\n'; off may be the length of s (end of input).
 */
void pd_json_linecol(const char *s, size_t off, int *line, int *col);

#endif
