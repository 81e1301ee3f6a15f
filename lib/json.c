/*
 * json: jsmn does the tokenizing; it is lax (it takes "tru", "01", bad
 * escapes, raw control characters, several top-level values), so a strict
 * scanner runs first. The scanner is the grammar: it accepts exactly RFC
 * 8259 JSON that jsonb can store, reports the first offending byte, and
 * counts the tokens jsmn must then produce, which cross-checks the two.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "buf.h"
#include "err.h"
#include "json.h"

/* The strict scanner's state. */
struct scan {
	const unsigned char *s;
	size_t len;
	size_t pos;
	int ntok; /* tokens jsmn will produce: values and keys */
	struct pd_err *e;
	int lax;		/* what only jsonb refuses is noted (unstorable), not an error */
	const char *unstorable; /* lax: the first such thing, at unstorable_off; NULL: none */
	size_t unstorable_off;
};

enum scan_state { WANT_VALUE, AFTER_VALUE, WANT_KEY };

static int scan_fail(const struct scan *sc, size_t off, const char *what)
{
	int line, col;

	pd_json_linecol((const char *)sc->s, off, &line, &col);
	return pd_errf(sc->e, PD_EX_DATAERR, "invalid JSON at line %d, column %d: %s", line, col,
		       what);
}

/*
 * Something valid JSON that PostgreSQL jsonb cannot store, at off: an error,
 * or in lax mode noted (the first one) and passed over.
 */
static int scan_unstorable(struct scan *sc, size_t off, const char *what)
{
	if (!sc->lax)
		return scan_fail(sc, off, what);
	if (sc->unstorable == NULL) {
		sc->unstorable = what;
		sc->unstorable_off = off;
	}
	return 0;
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int hex_val(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The value of the 4 hex digits at p, or -1. The caller checked p[0..3] exist. */
static long hex4(const unsigned char *p)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		int h = hex_val(p[i]);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Like hex4() at s[i], but -2 if the input ends first. */
static long scan_hex4(const struct scan *sc, size_t i)
{
	long v = 0;

	for (size_t k = i; k < i + 4; k++) {
		int h;

		if (k >= sc->len)
			return -2;
		h = hex_val(sc->s[k]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/*
 * The length (1-4) of the valid UTF-8 sequence at s[i], or 0 if the bytes
 * there are not one: stray continuation bytes, overlong forms, surrogates,
 * code points above U+10FFFF and sequences cut short are all invalid.
 */
static size_t utf8_len(const unsigned char *s, size_t n, size_t i)
{
	unsigned c = s[i];
	unsigned lo = 0x80, hi = 0xBF;
	size_t need;

	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return 0;
	if (c < 0xE0) {
		need = 1;
	} else if (c < 0xF0) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0; /* overlong */
		else if (c == 0xED)
			hi = 0x9F; /* U+D800..U+DFFF */
	} else if (c < 0xF5) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* above U+10FFFF */
	} else {
		return 0;
	}
	if (n - i - 1 < need)
		return 0;
	if (s[i + 1] < lo || s[i + 1] > hi)
		return 0;
	for (size_t k = 2; k <= need; k++)
		if (s[i + k] < 0x80 || s[i + k] > 0xBF)
			return 0;
	return need + 1;
}

static void skip_ws(struct scan *sc)
{
	while (sc->pos < sc->len) {
		unsigned char c = sc->s[sc->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		sc->pos++;
	}
}

/*
 * A \u escape at s[i] (the backslash; 'u' seen). Sets *adv to its length:
 * 6, or 12 for a surrogate pair. Errors point at the escape's backslash.
 */
static int scan_uescape(struct scan *sc, size_t i, size_t *adv)
{
	static const char unpaired[] = "unpaired surrogate in \\u escape";
	const unsigned char *s = sc->s;
	long u, lo;

	*adv = 6; /* lax: a bad escape is passed over alone */
	u = scan_hex4(sc, i + 2);
	if (u == -2)
		return scan_fail(sc, sc->len, "unexpected end of input");
	if (u < 0)
		return scan_fail(sc, i, "invalid escape");
	if (u == 0)
		return scan_unstorable(
		    sc, i, "\\u0000 (NUL) is not allowed (PostgreSQL jsonb cannot store it)");
	if (u >= 0xDC00 && u <= 0xDFFF)
		return scan_unstorable(sc, i, unpaired);
	if (u < 0xD800 || u > 0xDBFF)
		return 0;
	/* A high surrogate: a low one must follow at once. */
	if (i + 6 >= sc->len)
		return scan_fail(sc, sc->len, "unexpected end of input");
	if (s[i + 6] != '\\')
		return scan_unstorable(sc, i, unpaired);
	if (i + 7 >= sc->len)
		return scan_fail(sc, sc->len, "unexpected end of input");
	if (s[i + 7] != 'u')
		return scan_unstorable(sc, i, unpaired);
	lo = scan_hex4(sc, i + 8);
	if (lo == -2)
		return scan_fail(sc, sc->len, "unexpected end of input");
	if (lo < 0)
		return scan_fail(sc, i + 6, "invalid escape");
	if (lo < 0xDC00 || lo > 0xDFFF)
		return scan_unstorable(sc, i, unpaired);
	*adv = 12;
	return 0;
}

/* A string starting at the quote at sc->pos; leaves pos after the closing quote. */
static int scan_string(struct scan *sc)
{
	const unsigned char *s = sc->s;
	size_t i = sc->pos + 1, adv = 0;

	for (;;) {
		unsigned char c;

		if (i >= sc->len)
			return scan_fail(sc, sc->len, "unexpected end of input");
		c = s[i];
		if (c == '"')
			break;
		if (c < 0x20)
			return scan_fail(sc, i, "control character in string");
		if (c == '\\') {
			if (i + 1 >= sc->len)
				return scan_fail(sc, sc->len, "unexpected end of input");
			switch (s[i + 1]) {
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				i += 2;
				break;
			case 'u':
				if (scan_uescape(sc, i, &adv) < 0)
					return -1;
				i += adv;
				break;
			default:
				return scan_fail(sc, i, "invalid escape");
			}
		} else if (c >= 0x80) {
			adv = utf8_len(s, sc->len, i);
			if (adv == 0) {
				if (scan_unstorable(sc, i, "invalid UTF-8") < 0)
					return -1;
				adv = 1;
			}
			i += adv;
		} else {
			i++;
		}
	}
	sc->pos = i + 1;
	sc->ntok++;
	return 0;
}

/*
 * PostgreSQL numeric's limits on a number as numeric_in reads it (jsonb
 * stores numbers as numeric): the exponent under INT_MAX / 2 either way, at
 * most 16383 digits after the point once the exponent is applied (even for
 * zero), and the first significant digit at most at 10^131071.
 */
#define NUMERIC_EXP_MAX	   1073741823LL /* INT_MAX / 2 */
#define NUMERIC_DSCALE_MAX 16383
#define NUMERIC_POW10_MAX  131071

/*
 * Whether a number (its grammar checked) is within numeric's range: s[i..end)
 * are its exponent's sign and digits (i == end: none), nfrac its digits after
 * the point, first the power of ten of its first significant digit before
 * the exponent (LLONG_MIN: the number is zero).
 */
static int numeric_fits(const unsigned char *s, size_t i, size_t end, long long nfrac,
			long long first)
{
	long long exp = 0;
	int neg = 0;

	if (i < end && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	for (; i < end; i++) {
		exp = exp * 10 + (s[i] - '0');
		if (exp >= NUMERIC_EXP_MAX)
			return 0;
	}
	if (neg)
		exp = -exp;
	if (nfrac - exp > NUMERIC_DSCALE_MAX)
		return 0;
	return first == LLONG_MIN || first + exp <= NUMERIC_POW10_MAX;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at sc->pos, within numeric's range. */
static int scan_number(struct scan *sc)
{
	const unsigned char *s = sc->s;
	size_t i = sc->pos, n = sc->len, int_at, frac_at = 0, exp_at;
	long long nfrac = 0, first = LLONG_MIN;

	if (s[i] == '-')
		i++;
	if (i >= n || !is_digit(s[i]))
		return scan_fail(sc, i, "invalid number");
	int_at = i;
	if (s[i] == '0')
		i++;
	else
		while (i < n && is_digit(s[i]))
			i++;
	if (s[int_at] != '0')
		first =
		    (long long)(i - int_at) - 1; /* no leading zeros: the first is significant */
	if (i < n && s[i] == '.') {
		i++;
		if (i >= n || !is_digit(s[i]))
			return scan_fail(sc, i, "invalid number");
		frac_at = i;
		while (i < n && is_digit(s[i])) {
			if (first == LLONG_MIN && s[i] != '0')
				first = -(long long)(i - frac_at + 1);
			i++;
		}
		nfrac = (long long)(i - frac_at);
	}
	exp_at = i;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		exp_at = ++i;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !is_digit(s[i]))
			return scan_fail(sc, i, "invalid number");
		while (i < n && is_digit(s[i]))
			i++;
	}
	/* "01", "1.2.3", "1x", "0x1F": the number runs on into garbage. */
	if (i < n && (is_digit(s[i]) || is_alpha(s[i]) || s[i] == '.' || s[i] == '+' ||
		      s[i] == '-' || s[i] == '_'))
		return scan_fail(sc, i, "invalid number");
	if (!numeric_fits(s, exp_at, i, nfrac, first) &&
	    scan_unstorable(sc, sc->pos,
			    "number out of range (PostgreSQL numeric cannot store it)") < 0)
		return -1;
	sc->pos = i;
	sc->ntok++;
	return 0;
}

int pd_json_is_number(const char *s)
{
	struct scan sc = {(const unsigned char *)s, strlen(s), 0, 0, NULL, 0, NULL, 0};

	return *s != '\0' && scan_number(&sc) == 0 && sc.pos == sc.len;
}

/* true, false or null at sc->pos, which holds a letter. */
static int scan_literal(struct scan *sc)
{
	const unsigned char *s = sc->s;
	size_t i = sc->pos, k;
	const char *w;

	switch (s[i]) {
	case 't':
		w = "true";
		break;
	case 'f':
		w = "false";
		break;
	case 'n':
		w = "null";
		break;
	default:
		return scan_fail(sc, i, "invalid literal");
	}
	for (k = 0; w[k] != '\0'; k++)
		if (i + k >= sc->len || s[i + k] != (unsigned char)w[k])
			return scan_fail(sc, i + k, "invalid literal");
	i += k;
	if (i < sc->len && (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '_'))
		return scan_fail(sc, i, "invalid literal");
	sc->pos = i;
	sc->ntok++;
	return 0;
}

/*
 * The whole grammar, iteratively: stack holds the open containers' opening
 * brackets. On success *root_end is the offset just after the root value.
 */
static int scan_document(struct scan *sc, size_t *root_end)
{
	unsigned char stack[PD_JSON_MAX_DEPTH];
	int depth = 0;
	enum scan_state st = WANT_VALUE;
	const unsigned char *s = sc->s;

	skip_ws(sc);
	if (sc->pos >= sc->len)
		return scan_fail(sc, sc->len, "empty input");
	for (;;) {
		unsigned char c, top;

		switch (st) {
		case WANT_VALUE:
			if (sc->pos >= sc->len)
				return scan_fail(sc, sc->len, "unexpected end of input");
			c = s[sc->pos];
			if (c == '{' || c == '[') {
				if (depth == PD_JSON_MAX_DEPTH)
					return scan_fail(sc, sc->pos,
							 "nesting deeper than 512 levels");
				stack[depth++] = c;
				sc->ntok++;
				sc->pos++;
				skip_ws(sc);
				if (sc->pos >= sc->len)
					return scan_fail(sc, sc->len, "unexpected end of input");
				if (s[sc->pos] == (c == '{' ? '}' : ']')) {
					sc->pos++;
					depth--;
					st = AFTER_VALUE;
				} else if (c == '{') {
					if (s[sc->pos] != '"')
						return scan_fail(sc, sc->pos,
								 "expected a string key or '}'");
					st = WANT_KEY;
				}
				continue;
			}
			if (c == '"') {
				if (scan_string(sc) < 0)
					return -1;
			} else if (c == '-' || is_digit(c)) {
				if (scan_number(sc) < 0)
					return -1;
			} else if (is_alpha(c)) {
				if (scan_literal(sc) < 0)
					return -1;
			} else {
				return scan_fail(sc, sc->pos, "expected a value");
			}
			st = AFTER_VALUE;
			break;
		case WANT_KEY:
			/* The caller saw the opening quote. */
			if (scan_string(sc) < 0)
				return -1;
			skip_ws(sc);
			if (sc->pos >= sc->len)
				return scan_fail(sc, sc->len, "unexpected end of input");
			if (s[sc->pos] != ':')
				return scan_fail(sc, sc->pos, "expected ':'");
			sc->pos++;
			skip_ws(sc);
			st = WANT_VALUE;
			continue;
		case AFTER_VALUE:
			break;
		}

		/* A value just ended. */
		if (depth == 0) {
			*root_end = sc->pos;
			skip_ws(sc);
			if (sc->pos < sc->len)
				return scan_fail(sc, sc->pos, "trailing data after the value");
			return 0;
		}
		skip_ws(sc);
		if (sc->pos >= sc->len)
			return scan_fail(sc, sc->len, "unexpected end of input");
		c = s[sc->pos];
		top = stack[depth - 1];
		if (c == ',') {
			sc->pos++;
			skip_ws(sc);
			if (top == '[') {
				st = WANT_VALUE;
				continue;
			}
			if (sc->pos >= sc->len)
				return scan_fail(sc, sc->len, "unexpected end of input");
			if (s[sc->pos] != '"')
				return scan_fail(sc, sc->pos, "expected a string key");
			st = WANT_KEY;
		} else if (c == (top == '{' ? '}' : ']')) {
			sc->pos++;
			depth--;
			st = AFTER_VALUE;
		} else {
			return scan_fail(sc, sc->pos,
					 top == '{' ? "expected ',' or '}'"
						    : "expected ',' or ']'");
		}
	}
}

static enum pd_json_type primitive_type(char c)
{
	switch (c) {
	case 't':
		return PD_JSON_TRUE;
	case 'f':
		return PD_JSON_FALSE;
	case 'n':
		return PD_JSON_NULL;
	default:
		return PD_JSON_NUMBER;
	}
}

/*
 * Tokenize the validated s[0..end) with jsmn, growing the token array on
 * JSMN_ERROR_NOMEM. want is the scanner's token count.
 */
static int tokenize(struct pd_json *j, const char *s, size_t end, int want, struct pd_err *e)
{
	unsigned cap = want < 64 ? (unsigned)want : 64;
	jsmntok_t *jt = NULL;
	jsmn_parser p;
	int r;

	for (;;) {
		jt = pd_xrealloc(jt, cap * sizeof(*jt));
		jsmn_init(&p);
		r = jsmn_parse(&p, s, end, jt, cap);
		if (r != JSMN_ERROR_NOMEM || cap >= (unsigned)want)
			break;
		cap = cap > (unsigned)want / 2 ? (unsigned)want : cap * 2;
	}
	if (r != want) {
		free(jt);
		return pd_errf(e, PD_EX_SOFTWARE,
			       "json: tokenizer found %d tokens where the scanner found %d", r,
			       want);
	}
	j->tok = pd_xmalloc((size_t)want * sizeof(*j->tok));
	for (int i = 0; i < want; i++) {
		struct pd_jtok *t = &j->tok[i];

		switch (jt[i].type) {
		case JSMN_OBJECT:
			t->type = PD_JSON_OBJECT;
			break;
		case JSMN_ARRAY:
			t->type = PD_JSON_ARRAY;
			break;
		case JSMN_STRING:
			t->type = PD_JSON_STRING;
			break;
		default:
			t->type = primitive_type(s[jt[i].start]);
			break;
		}
		t->start = jt[i].start;
		t->end = jt[i].end;
		t->size = jt[i].size;
		t->parent = jt[i].parent;
	}
	free(jt);
	j->ntok = want;
	return 0;
}

static int parse(struct pd_json *j, const char *s, size_t len, int lax, struct pd_err *e)
{
	struct scan sc = {(const unsigned char *)s, len, 0, 0, e, lax, NULL, 0};
	size_t root_end = 0, root;

	j->src = NULL;
	j->len = 0;
	j->tok = NULL;
	j->ntok = 0;
	/* jsmn keeps offsets in int. */
	if (len >= INT_MAX)
		return pd_errf(e, PD_EX_DATAERR, "invalid JSON: input too large (%zu bytes)", len);
	if (scan_document(&sc, &root_end) < 0)
		return -1;
	sc.pos = 0;
	skip_ws(&sc);
	root = sc.pos;
	if (s[root] == '{' || s[root] == '[' || s[root] == '"') {
		if (tokenize(j, s, root_end, sc.ntok, e) < 0)
			return -1;
	} else {
		/* jsmn's strict mode wants a delimiter after a top-level primitive. */
		j->tok = pd_xmalloc(sizeof(*j->tok));
		j->tok[0] =
		    (struct pd_jtok){primitive_type(s[root]), (int)root, (int)root_end, 0, -1};
		j->ntok = 1;
	}
	j->src = s;
	j->len = len;
	return 0;
}

int pd_json_parse(struct pd_json *j, const char *s, size_t len, struct pd_err *e)
{
	return parse(j, s, len, 0, e);
}

int pd_json_parse_lax(struct pd_json *j, const char *s, size_t len, struct pd_err *e)
{
	return parse(j, s, len, 1, e);
}

int pd_json_storable(const char *s, size_t len, struct pd_err *e)
{
	struct scan sc = {(const unsigned char *)s, len, 0, 0, e, 1, NULL, 0};
	size_t root_end;
	int line, col;

	if (scan_document(&sc, &root_end) < 0)
		return -1;
	if (sc.unstorable == NULL)
		return 1;
	pd_json_linecol(s, sc.unstorable_off, &line, &col);
	pd_errf(e, PD_EX_DATAERR, "%s at line %d, column %d", sc.unstorable, line, col);
	return 0;
}

void pd_json_release(struct pd_json *j)
{
	free(j->tok);
	j->src = NULL;
	j->len = 0;
	j->tok = NULL;
	j->ntok = 0;
}

static int valid_tok(const struct pd_json *j, int tok)
{
	return tok >= 0 && tok < j->ntok;
}

int pd_json_skip(const struct pd_json *j, int tok)
{
	int i, pending;

	if (!valid_tok(j, tok))
		return j->ntok;
	i = tok + 1;
	pending = j->tok[tok].size;
	while (pending > 0 && i < j->ntok) {
		pending += j->tok[i].size - 1;
		i++;
	}
	return i;
}

/* Put code point u as UTF-8 at o; returns the end. */
static char *put_utf8(char *o, long u)
{
	if (u < 0x80) {
		*o++ = (char)u;
	} else if (u < 0x800) {
		*o++ = (char)(0xC0 | (u >> 6));
		*o++ = (char)(0x80 | (u & 0x3F));
	} else if (u < 0x10000) {
		*o++ = (char)(0xE0 | (u >> 12));
		*o++ = (char)(0x80 | ((u >> 6) & 0x3F));
		*o++ = (char)(0x80 | (u & 0x3F));
	} else {
		*o++ = (char)(0xF0 | (u >> 18));
		*o++ = (char)(0x80 | ((u >> 12) & 0x3F));
		*o++ = (char)(0x80 | ((u >> 6) & 0x3F));
		*o++ = (char)(0x80 | (u & 0x3F));
	}
	return o;
}

/*
 * Unescape the scanned string body p[0..n); the result is never longer. What
 * a lax parse let through is not trusted: a \u0000 or an unpaired surrogate
 * becomes U+FFFD (6 bytes to 3).
 */
static char *unescape(const char *p, size_t n)
{
	const unsigned char *q = (const unsigned char *)p, *end = q + n;
	char *out = pd_xmalloc(n + 1), *o = out;

	while (q < end) {
		long u, lo;

		if (*q != '\\') {
			*o++ = (char)*q++;
			continue;
		}
		q++;
		switch (*q++) {
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u':
			u = hex4(q);
			q += 4;
			if (u >= 0xD800 && u <= 0xDBFF && end - q >= 6 && q[0] == '\\' &&
			    q[1] == 'u' && (lo = hex4(q + 2)) >= 0xDC00 && lo <= 0xDFFF) {
				u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
				q += 6;
			} else if (u == 0 || (u >= 0xD800 && u <= 0xDFFF)) {
				u = 0xFFFD; /* a lax parse's NUL or unpaired surrogate */
			}
			o = put_utf8(o, u);
			break;
		default: /* '"', '\\', '/' */
			*o++ = (char)q[-1];
			break;
		}
	}
	*o = '\0';
	return out;
}

char *pd_json_str(const struct pd_json *j, int tok)
{
	const struct pd_jtok *t;

	if (!valid_tok(j, tok))
		return NULL;
	t = &j->tok[tok];
	if (t->type == PD_JSON_STRING)
		return unescape(j->src + t->start, (size_t)(t->end - t->start));
	return pd_xstrndup(j->src + t->start, (size_t)(t->end - t->start));
}

int pd_json_int(const struct pd_json *j, int tok, long long *out)
{
	const struct pd_jtok *t;
	char tmp[32], *endp;
	size_t n;
	long long v;

	if (!valid_tok(j, tok) || j->tok[tok].type != PD_JSON_NUMBER)
		return -1;
	t = &j->tok[tok];
	n = (size_t)(t->end - t->start);
	if (n >= sizeof(tmp))
		return -1; /* no leading zeros: more than 31 characters overflows */
	memcpy(tmp, j->src + t->start, n);
	tmp[n] = '\0';
	errno = 0;
	v = strtoll(tmp, &endp, 10); /* stops at a fraction or exponent */
	if (errno != 0 || *endp != '\0')
		return -1;
	*out = v;
	return 0;
}

void pd_json_span(const struct pd_json *j, int tok, const char **p, size_t *n)
{
	const struct pd_jtok *t;
	int q;

	if (!valid_tok(j, tok)) {
		*p = NULL;
		*n = 0;
		return;
	}
	t = &j->tok[tok];
	q = t->type == PD_JSON_STRING;
	*p = j->src + t->start - q;
	*n = (size_t)(t->end - t->start + 2 * q);
}

/* Whether the key token k (a STRING) equals key once unescaped. */
static int key_eq(const struct pd_json *j, int k, const char *key)
{
	const struct pd_jtok *t = &j->tok[k];
	const char *p = j->src + t->start;
	size_t n = (size_t)(t->end - t->start);
	char *u;
	int eq;

	if (memchr(p, '\\', n) == NULL)
		return strlen(key) == n && memcmp(p, key, n) == 0;
	u = unescape(p, n);
	eq = strcmp(u, key) == 0;
	free(u);
	return eq;
}

int pd_json_get(const struct pd_json *j, int obj, const char *key)
{
	int found = -1, k;

	if (!valid_tok(j, obj) || j->tok[obj].type != PD_JSON_OBJECT)
		return -1;
	k = obj + 1;
	for (int i = 0; i < j->tok[obj].size && k + 1 < j->ntok; i++) {
		if (key_eq(j, k, key))
			found = k + 1;
		k = pd_json_skip(j, k + 1);
	}
	return found;
}

void pd_json_quote(struct pd_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	static const char fffd[] = "\xEF\xBF\xBD";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, l;

	pd_buf_putc(b, '"');
	if (n == 0) {
		pd_buf_putc(b, '"');
		return;
	}
	while (i < n) {
		unsigned char c = u[i];
		char esc[7];
		const char *rep = NULL;
		size_t replen = 2;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0x80 && (l = utf8_len(u, n, i)) != 0) {
			i += l;
			continue;
		}
		/* Flush the plain run s[run..i), then write c's replacement. */
		pd_buf_append(b, s + run, i - run);
		esc[0] = '\\';
		switch (c) {
		case '"':
		case '\\':
			esc[1] = (char)c;
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			if (c == 0 || c >= 0x80) {
				rep = fffd;
				replen = 3;
			} else {
				memcpy(esc + 1, "u00", 3);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 0xF];
				replen = 6;
			}
			break;
		}
		pd_buf_append(b, rep ? rep : esc, replen);
		i++;
		run = i;
	}
	pd_buf_append(b, s + run, i - run);
	pd_buf_putc(b, '"');
}

int pd_json_valid_utf8(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, l;

	while (i < n) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		l = utf8_len(u, n, i);
		if (l == 0)
			return 0;
		i += l;
	}
	return 1;
}

void pd_json_linecol(const char *s, size_t off, int *line, int *col)
{
	size_t bol = 0;
	int ln = 1;

	for (size_t i = 0; i < off; i++) {
		if (s[i] == '\n') {
			ln++;
			bol = i + 1;
		}
	}
	*line = ln;
	*col = (int)(off - bol) + 1;
}

void pd_json_quote_or_null(struct pd_buf *b, const char *s)
{
	if (s)
		pd_json_quote(b, s, strlen(s));
	else
		pd_buf_puts(b, "null");
}

/* ,"key": */
static void member_key(struct pd_buf *b, const char *key)
{
	size_t n = strlen(key);
	char *p = pd_buf_grow(b, n + 4);

	p[0] = ',';
	p[1] = '"';
	memcpy(p + 2, key, n);
	p[n + 2] = '"';
	p[n + 3] = ':';
	p[n + 4] = '\0';
	b->len += n + 4;
}

void pd_json_member_str(struct pd_buf *b, const char *key, const char *s)
{
	member_key(b, key);
	pd_json_quote_or_null(b, s);
}

void pd_json_member_raw(struct pd_buf *b, const char *key, const char *json)
{
	member_key(b, key);
	pd_buf_puts(b, json ? json : "null");
}

void pd_json_member_i64(struct pd_buf *b, const char *key, long long v)
{
	member_key(b, key);
	pd_buf_put_i64(b, v);
}

void pd_json_member_bool(struct pd_buf *b, const char *key, int v)
{
	member_key(b, key);
	pd_buf_puts(b, v ? "true" : "false");
}

void pd_json_compact(char *s)
{
	char *w = s;
	int in_str = 0;

	for (const char *r = s; *r; r++) {
		if (in_str) {
			*w++ = *r;
			if (*r == '\\' && r[1])
				*w++ = *++r;
			else if (*r == '"')
				in_str = 0;
		} else if (*r != ' ' && *r != '\t' && *r != '\n' && *r != '\r') {
			*w++ = *r;
			in_str = *r == '"';
		}
	}
	*w = '\0';
}
