/*
 * cron: the expression parser, a TZif reader (RFC 8536, with its POSIX TZ
 * footer), and next-fire search over wall-clock time.
 *
 * Time zones are read from the tz database ourselves rather than through
 * setenv("TZ") + mktime(): that keeps the library free of process-wide
 * state, and mktime's tm_isdst guessing is exactly what the DST rules below
 * must not depend on.
 *
 * Wall-clock ("local") times are handled as "local seconds": the wall time
 * written as if it were UTC, so civil-date arithmetic is plain integer
 * arithmetic. An instant t has local seconds t + off(t).
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cron.h"
#include "err.h"

/* ---- the parser ---- */

enum { F_MINUTE, F_HOUR, F_DOM, F_MONTH, F_DOW, NFIELDS };

struct field_def {
	const char *name;
	int lo, hi;		  /* values accepted in the text */
	int star_hi;		  /* where '*' and 'a/n' stop */
	const char *const *names; /* three-letter names, or NULL */
	int nnames;
	int name_base; /* the value of names[0] */
};

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
					  "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static const struct field_def fields[NFIELDS] = {
    {"minute", 0, 59, 59, NULL, 0, 0},	       {"hour", 0, 23, 23, NULL, 0, 0},
    {"day-of-month", 1, 31, 31, NULL, 0, 0},   {"month", 1, 12, 12, month_names, 12, 1},
    {"day-of-week", 0, 7, 6, dow_names, 7, 0},
};

static const struct {
	const char *name, *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},	  {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

#define SHOW_MAX 100 /* the expression in messages */
#define SHOW_TOK 41  /* a field or part of one, with its NUL */

/*
 * Copy len bytes of s into out (size n) for quoting in a message: white
 * space becomes ' ', other control bytes '?', and long text is cut with
 * "...".
 */
static const char *show(char *out, size_t n, const char *s, size_t len)
{
	size_t i, j = 0, max = n - 1 < SHOW_MAX ? n - 1 : SHOW_MAX;

	for (i = 0; i < len && j < max; i++) {
		unsigned char ch = (unsigned char)s[i];
		out[j++] = isspace(ch) ? ' ' : (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	if (i < len && j >= 3)
		memcpy(out + j - 3, "...", 3);
	out[j] = '\0';
	return out;
}

struct pctx {
	const char *expr; /* the whole expression, for messages */
	int f;		  /* the field being parsed */
	const char *tok;  /* its text */
	size_t toklen;
	struct pd_err *e;
};

__attribute__((format(printf, 2, 3))) static int perr(const struct pctx *p, const char *fmt, ...)
{
	char ex[SHOW_MAX + 1], tk[SHOW_TOK], detail[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	show(ex, sizeof ex, p->expr, strlen(p->expr));
	if (p->f < 0)
		return pd_errf(p->e, PD_EX_DATAERR, "invalid cron expression '%s': %s", ex, detail);
	show(tk, sizeof tk, p->tok, p->toklen);
	return pd_errf(p->e, PD_EX_DATAERR, "invalid cron expression '%s': %s field '%s': %s", ex,
		       fields[p->f].name, tk, detail);
}

/* The rest of the field from s, quoted for a message. */
static const char *rest(const struct pctx *p, const char *s, char *out, size_t n)
{
	return show(out, n, s, (size_t)(p->tok + p->toklen - s));
}

/*
 * A number or (where the field has them) a name at *sp, ending before end.
 * what names the value for the "missing ..." message. Numbers of more than
 * six digits come out as at least 1000000, out of every range.
 */
static int parse_value(const struct pctx *p, const char **sp, const char *end, const char *what,
		       int *out)
{
	const struct field_def *fd = &fields[p->f];
	const char *s = *sp, *t = s;
	char buf[SHOW_TOK];

	if (s == end || *s == ',')
		return perr(p, "missing %s", what);
	if (isdigit((unsigned char)*s)) {
		long v = 0;
		while (t < end && isdigit((unsigned char)*t)) {
			if (v < 1000000)
				v = v * 10 + (*t - '0');
			t++;
		}
		*out = v > INT_MAX ? INT_MAX : (int)v;
		*sp = t;
		return 0;
	}
	if (isalpha((unsigned char)*s) && fd->names) {
		while (t < end && isalpha((unsigned char)*t))
			t++;
		if (t - s == 3) {
			for (int i = 0; i < fd->nnames; i++) {
				if (strncasecmp(s, fd->names[i], 3) == 0) {
					*out = fd->name_base + i;
					*sp = t;
					return 0;
				}
			}
		}
		return perr(p, "unknown name '%s'", show(buf, sizeof buf, s, (size_t)(t - s)));
	}
	return perr(p, "expected %s at '%s'", fd->names ? "a number or name" : "a number",
		    rest(p, s, buf, sizeof buf));
}

/* Check that v (whose text runs from s to t) is inside the field's range. */
static int check_range(const struct pctx *p, const char *s, const char *t, int v)
{
	const struct field_def *fd = &fields[p->f];
	char buf[SHOW_TOK];

	if (v < fd->lo || v > fd->hi)
		return perr(p, "value %s out of range %d-%d",
			    show(buf, sizeof buf, s, (size_t)(t - s)), fd->lo, fd->hi);
	return 0;
}

/* Parse one field (p->tok, p->toklen) into the bit mask *bits. */
static int parse_field(const struct pctx *p, uint64_t *bits)
{
	const struct field_def *fd = &fields[p->f];
	const char *s = p->tok, *end = p->tok + p->toklen;
	char b1[SHOW_TOK], b2[SHOW_TOK];

	*bits = 0;
	for (;;) {
		int a, b, step = 1;
		const char *as = s, *bs = NULL;

		if (s == end || *s == ',')
			return perr(p, "empty list item");
		if (*s == '*') {
			s++;
			a = fd->lo;
			b = fd->star_hi;
		} else {
			if (parse_value(p, &s, end, "a value", &a) < 0 ||
			    check_range(p, as, s, a) < 0)
				return -1;
			b = a;
			if (s < end && *s == '-') {
				bs = ++s;
				if (parse_value(p, &s, end, "range end after '-'", &b) < 0 ||
				    check_range(p, bs, s, b) < 0)
					return -1;
				if (a > b)
					return perr(p, "range start %s is after its end %s",
						    show(b1, sizeof b1, as, (size_t)(bs - 1 - as)),
						    show(b2, sizeof b2, bs, (size_t)(s - bs)));
			} else if (s < end && *s == '/') {
				b = fd->star_hi < a ? a : fd->star_hi;
			}
		}
		if (s < end && *s == '/') {
			const char *ss = ++s;
			int span = fd->star_hi - fd->lo + 1;
			if (s == end || *s == ',')
				return perr(p, "missing step after '/'");
			if (!isdigit((unsigned char)*s))
				return perr(p, "expected a number at '%s'",
					    rest(p, s, b1, sizeof b1));
			if (parse_value(p, &s, end, "a step", &step) < 0)
				return -1;
			if (step < 1)
				return perr(p, "step must be at least 1");
			if (step > span)
				return perr(p, "step %s out of range 1-%d",
					    show(b1, sizeof b1, ss, (size_t)(s - ss)), span);
		}
		for (int v = a; v <= b; v += step)
			*bits |= (uint64_t)1 << (p->f == F_DOW && v == 7 ? 0 : v);
		if (s == end)
			return 0;
		if (*s != ',')
			return perr(p, "unexpected '%s'", rest(p, s, b1, sizeof b1));
		s++;
	}
}

static int is_space(char ch)
{
	return isspace((unsigned char)ch) != 0;
}

static int parse_fields(struct pd_cron *c, const char *expr, const char *text, struct pd_err *e)
{
	struct pctx p = {expr, -1, NULL, 0, e};
	const char *tok[NFIELDS];
	size_t len[NFIELDS];
	const char *s = text;
	int n = 0;

	for (;;) {
		while (is_space(*s))
			s++;
		if (*s == '\0')
			break;
		const char *t = s;
		while (*s != '\0' && !is_space(*s))
			s++;
		if (n < NFIELDS) {
			tok[n] = t;
			len[n] = (size_t)(s - t);
		}
		n++;
	}
	if (n == 0)
		return perr(&p, "empty expression");
	if (n != NFIELDS)
		return perr(&p, "expected 5 fields, got %d", n);
	for (int f = 0; f < NFIELDS; f++) {
		uint64_t bits;
		p.f = f;
		p.tok = tok[f];
		p.toklen = len[f];
		if (parse_field(&p, &bits) < 0)
			return -1;
		switch (f) {
		case F_MINUTE:
			c->minute = bits;
			break;
		case F_HOUR:
			c->hour = (uint32_t)bits;
			break;
		case F_DOM:
			c->dom = (uint32_t)bits;
			c->dom_star = tok[f][0] == '*';
			break;
		case F_MONTH:
			c->month = (uint16_t)bits;
			break;
		default:
			c->dow = (uint8_t)bits;
			c->dow_star = tok[f][0] == '*';
			break;
		}
	}
	return 0;
}

int pd_cron_parse(struct pd_cron *c, const char *expr, struct pd_err *e)
{
	struct pctx p = {expr ? expr : "", -1, NULL, 0, e};
	const char *s = p.expr, *t;
	char b1[SHOW_TOK], b2[SHOW_TOK];
	size_t i, n;

	memset(c, 0, sizeof *c);
	while (is_space(*s))
		s++;
	if (*s != '@')
		return parse_fields(c, p.expr, s, e);
	for (t = s; *t != '\0' && !is_space(*t); t++)
		;
	n = (size_t)(t - s);
	for (i = 0; i < sizeof macros / sizeof macros[0]; i++)
		if (strlen(macros[i].name) == n && strncasecmp(s, macros[i].name, n) == 0)
			break;
	if (i == sizeof macros / sizeof macros[0])
		return perr(&p, "unknown macro '%s'", show(b1, sizeof b1, s, n));
	while (is_space(*t))
		t++;
	if (*t != '\0')
		return perr(&p, "unexpected '%s' after '%s'", show(b1, sizeof b1, t, strlen(t)),
			    show(b2, sizeof b2, s, n));
	return parse_fields(c, p.expr, macros[i].expr, e);
}

/* ---- civil time ---- */

#define DAY   86400LL
#define MIN_T (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define MAX_T 253402300799LL   /* 9999-12-31T23:59:59Z */

static int64_t floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if (a % b != 0 && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = floordiv(y, 400);
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = floordiv(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Day of the week of a day number, 0 = Sunday (1970-01-01 was a Thursday). */
static int weekday(int64_t day)
{
	return (int)(day - floordiv(day + 4, 7) * 7 + 4);
}

/* ---- time zones ---- */

struct tz_type {
	int32_t off; /* seconds east of UTC */
	const char *abbr;
};

/* One date of a POSIX TZ rule: Jn, n or Mm.w.d, then the time of day. */
struct tz_date {
	char kind; /* 'J', 'N' or 'M' */
	int n, m, w, d;
	int32_t secs;
};

struct tz {
	int64_t *trans; /* transition instants, ascending */
	uint8_t *idx;	/* the type each transition starts */
	size_t ntrans;
	struct tz_type types[256];
	size_t ntypes;
	char *chars; /* abbreviations */
	/* The footer: the rule for instants after the last transition. */
	int has_rule, has_dst;
	char std_abbr[32], dst_abbr[32];
	int32_t std_off, dst_off;
	struct tz_date start, end;
};

#define TZ_MAXFILE (4 << 20)
#define TZ_MAXOFF  (26 * 3600)

static void tz_free(struct tz *z)
{
	free(z->trans);
	free(z->idx);
	free(z->chars);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* A POSIX TZ name: three or more letters, or <...> of letters, digits, + and -. */
static int posix_name(const char **sp, char *out, size_t n)
{
	const char *s = *sp;
	size_t len = 0;

	if (*s == '<') {
		for (s++; *s != '>'; s++) {
			if (!isalnum((unsigned char)*s) && *s != '+' && *s != '-')
				return -1;
			if (len + 1 >= n)
				return -1;
			out[len++] = *s;
		}
		s++;
	} else {
		for (; isalpha((unsigned char)*s); s++) {
			if (len + 1 >= n)
				return -1;
			out[len++] = *s;
		}
	}
	if (len < 3)
		return -1;
	out[len] = '\0';
	*sp = s;
	return 0;
}

/* [+-]h[h][:mm[:ss]] with at most maxh hours, into seconds. */
static int posix_hms(const char **sp, int maxh, int32_t *out)
{
	const char *s = *sp;
	int sign = 1, h = 0, m = 0, sec = 0, nd = 0;

	if (*s == '+' || *s == '-')
		sign = *s++ == '-' ? -1 : 1;
	while (isdigit((unsigned char)*s) && nd < 3) {
		h = h * 10 + (*s++ - '0');
		nd++;
	}
	if (nd == 0 || h > maxh)
		return -1;
	if (*s == ':') {
		s++;
		if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
			return -1;
		m = (s[0] - '0') * 10 + (s[1] - '0');
		s += 2;
		if (*s == ':') {
			s++;
			if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
				return -1;
			sec = (s[0] - '0') * 10 + (s[1] - '0');
			s += 2;
		}
		if (m > 59 || sec > 59)
			return -1;
	}
	*out = sign * (h * 3600 + m * 60 + sec);
	*sp = s;
	return 0;
}

static int posix_num(const char **sp, int lo, int hi, int *out)
{
	const char *s = *sp;
	int v = 0, nd = 0;

	while (isdigit((unsigned char)*s) && nd < 4) {
		v = v * 10 + (*s++ - '0');
		nd++;
	}
	if (nd == 0 || v < lo || v > hi)
		return -1;
	*out = v;
	*sp = s;
	return 0;
}

static int posix_date(const char **sp, struct tz_date *d)
{
	const char *s = *sp;

	memset(d, 0, sizeof *d);
	if (*s == 'J') {
		s++;
		d->kind = 'J';
		if (posix_num(&s, 1, 365, &d->n) < 0)
			return -1;
	} else if (*s == 'M') {
		s++;
		d->kind = 'M';
		if (posix_num(&s, 1, 12, &d->m) < 0 || *s++ != '.' ||
		    posix_num(&s, 1, 5, &d->w) < 0 || *s++ != '.' || posix_num(&s, 0, 6, &d->d) < 0)
			return -1;
	} else {
		d->kind = 'N';
		if (posix_num(&s, 0, 365, &d->n) < 0)
			return -1;
	}
	d->secs = 7200;
	if (*s == '/') {
		s++;
		/* RFC 8536 3.3.1 allows -167..167 hours here. */
		if (posix_hms(&s, 167, &d->secs) < 0)
			return -1;
	}
	*sp = s;
	return 0;
}

/* Parse the TZif footer, a POSIX TZ string such as "CET-1CEST,M3.5.0,M10.5.0/3". */
static int parse_footer(struct tz *z, const char *s)
{
	int32_t v;

	if (*s == '\0')
		return 0;
	if (posix_name(&s, z->std_abbr, sizeof z->std_abbr) < 0 || posix_hms(&s, 24, &v) < 0)
		return -1;
	z->std_off = -v;
	z->has_rule = 1;
	if (*s == '\0')
		return 0;
	if (posix_name(&s, z->dst_abbr, sizeof z->dst_abbr) < 0)
		return -1;
	z->has_dst = 1;
	z->dst_off = z->std_off + 3600;
	if (*s != ',' && *s != '\0') {
		if (posix_hms(&s, 24, &v) < 0)
			return -1;
		z->dst_off = -v;
	}
	if (*s == '\0') {
		/* No rule given: POSIX leaves it to the implementation; glibc and tzcode use the US
		 * one. */
		s = ",M3.2.0,M11.1.0";
	}
	if (*s++ != ',' || posix_date(&s, &z->start) < 0 || *s++ != ',' ||
	    posix_date(&s, &z->end) < 0 || *s != '\0')
		return -1;
	return 0;
}

/* Parse a TZif file (RFC 8536). Returns 0, -1 if malformed, -2 if it has leap seconds. */
static int parse_tzif(struct tz *z, const unsigned char *p, size_t n)
{
	uint32_t isut, isstd, leap, timecnt, typecnt, charcnt;
	size_t tsize = 4, off = 0, len, i;

	for (int pass = 0;; pass++) {
		if (n - off < 44 || memcmp(p + off, "TZif", 4) != 0)
			return -1;
		int version = p[off + 4];
		isut = be32(p + off + 20);
		isstd = be32(p + off + 24);
		leap = be32(p + off + 28);
		timecnt = be32(p + off + 32);
		typecnt = be32(p + off + 36);
		charcnt = be32(p + off + 40);
		if (typecnt == 0 || typecnt > 256 || charcnt == 0 || charcnt > 65536 ||
		    timecnt > 1000000 || leap > 100000 || (isut != 0 && isut != typecnt) ||
		    (isstd != 0 && isstd != typecnt))
			return -1;
		off += 44;
		len = timecnt * (tsize + 1) + typecnt * 6 + charcnt + leap * (tsize + 4) + isstd +
		      isut;
		if (n - off < len)
			return -1;
		if (pass == 1 || version < '2')
			break;
		off += len;
		tsize = 8;
	}
	if (leap != 0)
		return -2;

	const unsigned char *q = p + off;
	z->ntrans = timecnt;
	z->trans = pd_xmalloc((timecnt ? timecnt : 1) * sizeof *z->trans);
	z->idx = pd_xmalloc(timecnt ? timecnt : 1);
	for (i = 0; i < timecnt; i++, q += tsize) {
		z->trans[i] = tsize == 8 ? be64(q) : (int32_t)be32(q);
		if (i > 0 && z->trans[i] <= z->trans[i - 1])
			return -1;
	}
	for (i = 0; i < timecnt; i++, q++) {
		if (*q >= typecnt)
			return -1;
		z->idx[i] = *q;
	}
	z->chars = pd_xmalloc(charcnt + 1);
	memcpy(z->chars, q + typecnt * 6, charcnt);
	z->chars[charcnt] = '\0';
	z->ntypes = typecnt;
	for (i = 0; i < typecnt; i++, q += 6) {
		int32_t utoff = (int32_t)be32(q);
		if (utoff < -TZ_MAXOFF || utoff > TZ_MAXOFF || q[4] > 1 || q[5] >= charcnt ||
		    memchr(z->chars + q[5], '\0', charcnt - q[5]) == NULL)
			return -1;
		z->types[i].off = utoff;
		z->types[i].abbr = z->chars + q[5];
	}
	q += charcnt + leap * (tsize + 4) + isstd + isut;
	if (tsize == 8) {
		/* The footer: "\n" TZ-string "\n". */
		const unsigned char *nl;
		char footer[256];
		if (q >= p + n || *q != '\n')
			return -1;
		nl = memchr(q + 1, '\n', (size_t)(p + n - q - 1));
		if (nl == NULL || (size_t)(nl - q - 1) >= sizeof footer)
			return -1;
		memcpy(footer, q + 1, (size_t)(nl - q - 1));
		footer[nl - q - 1] = '\0';
		if (parse_footer(z, footer) < 0)
			return -1;
		if (z->has_rule &&
		    (z->std_off < -TZ_MAXOFF || z->std_off > TZ_MAXOFF ||
		     (z->has_dst && (z->dst_off < -TZ_MAXOFF || z->dst_off > TZ_MAXOFF))))
			return -1;
	}
	return 0;
}

static const char *tz_dir(void)
{
	const char *d = getenv("TZDIR");
	return d && *d ? d : "/usr/share/zoneinfo";
}

/* "UTC+2", "GMT-03:00", "+02:00", "-5", "Z". */
static int looks_fixed(const char *s)
{
	if (strcmp(s, "Z") == 0 || strcmp(s, "z") == 0)
		return 1;
	if (strncasecmp(s, "UTC", 3) == 0 || strncasecmp(s, "GMT", 3) == 0)
		s += 3;
	else if (strncasecmp(s, "UT", 2) == 0)
		s += 2;
	return (*s == '+' || *s == '-') && isdigit((unsigned char)s[1]);
}

/* "EST5EDT,M3.2.0,M11.1.0", "CET-1CEST", "<+0330>-3:30". */
static int looks_posix(const char *s)
{
	int n = 0;

	if (*s == '<')
		return 1;
	while (isalpha((unsigned char)*s)) {
		s++;
		n++;
	}
	if (*s == '+' || *s == '-')
		s++;
	return n >= 3 && isdigit((unsigned char)*s);
}

static int zone_refused(const char *zone, const char *dir, struct pd_err *e)
{
	char zs[SHOW_MAX + 1];

	show(zs, sizeof zs, zone, strlen(zone));
	if (looks_fixed(zone))
		return pd_errf(e, PD_EX_DATAERR,
			       "time zone '%s' is a fixed offset; use an IANA zone such as "
			       "'Europe/Berlin' so daylight-saving changes are followed",
			       zs);
	if (looks_posix(zone))
		return pd_errf(e, PD_EX_DATAERR,
			       "time zone '%s' is a POSIX TZ string; use an IANA zone such as "
			       "'America/New_York' so daylight-saving changes are followed",
			       zs);
	return pd_errf(e, PD_EX_DATAERR, "unknown time zone '%s': not in the tz database (%s)", zs,
		       dir);
}

/* Check the name of a zone: relative, no '..', tz database characters only. */
static int zone_name_ok(const char *zone, const char *dir, struct pd_err *e)
{
	char zs[SHOW_MAX + 1];
	const char *s;

	show(zs, sizeof zs, zone, strlen(zone));
	if (*zone == '\0')
		return pd_errf(e, PD_EX_DATAERR, "invalid time zone '': empty name");
	if (*zone == '/')
		return pd_errf(
		    e, PD_EX_DATAERR,
		    "invalid time zone '%s': absolute paths are not allowed; use an IANA "
		    "zone such as 'Europe/Berlin'",
		    zs);
	if (strstr(zone, "..") != NULL)
		return pd_errf(e, PD_EX_DATAERR, "invalid time zone '%s': '..' is not allowed", zs);
	if (strcmp(zone, "localtime") == 0)
		return pd_errf(e, PD_EX_DATAERR,
			       "time zone 'localtime' is the host's zone; use an IANA zone such as "
			       "'Europe/Berlin'");
	for (s = zone; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && !strchr("/_+-.", *s))
			return zone_refused(zone, dir, e);
	/* Each component is non-empty and does not start with '.'. */
	for (s = zone; *s != '\0'; s++)
		if ((s == zone || s[-1] == '/') && (*s == '/' || *s == '.'))
			return pd_errf(e, PD_EX_DATAERR,
				       "unknown time zone '%s': not in the tz database (%s)", zs,
				       dir);
	if (s[-1] == '/' || s - zone > 255)
		return pd_errf(e, PD_EX_DATAERR,
			       "unknown time zone '%s': not in the tz database (%s)", zs, dir);
	return 0;
}

static int tz_load(struct tz *z, const char *zone, struct pd_err *e)
{
	const char *dir = tz_dir();
	char path[PATH_MAX], zs[SHOW_MAX + 1];
	unsigned char *data = NULL;
	struct stat st;
	size_t got = 0;
	int fd, rc;

	memset(z, 0, sizeof *z);
	if (zone == NULL)
		zone = "";
	if (zone_name_ok(zone, dir, e) < 0)
		return -1;
	show(zs, sizeof zs, zone, strlen(zone));
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, zone) >= sizeof path)
		return pd_errf(e, PD_EX_DATAERR,
			       "unknown time zone '%s': not in the tz database (%s)", zs, dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG || errno == ELOOP)
			return zone_refused(zone, dir, e);
		return pd_errf(e, PD_EX_CONFIG, "cannot read time zone file '%s': %s", path,
			       strerror(errno));
	}
	if (fstat(fd, &st) < 0) {
		rc = pd_errf(e, PD_EX_CONFIG, "cannot read time zone file '%s': %s", path,
			     strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 44 || st.st_size > TZ_MAXFILE) {
		rc = pd_errf(e, PD_EX_DATAERR,
			     "unknown time zone '%s': not a TZif file in the tz database (%s)", zs,
			     dir);
		goto out;
	}
	data = pd_xmalloc((size_t)st.st_size);
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, data + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = pd_errf(e, PD_EX_CONFIG, "cannot read time zone file '%s': %s", path,
				     strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got < 4 || memcmp(data, "TZif", 4) != 0) {
		rc = pd_errf(e, PD_EX_DATAERR,
			     "unknown time zone '%s': not a TZif file in the tz database (%s)", zs,
			     dir);
		goto out;
	}
	rc = parse_tzif(z, data, got);
	if (rc == -2)
		rc =
		    pd_errf(e, PD_EX_DATAERR,
			    "time zone '%s' counts leap seconds; use the zone without the 'right/' "
			    "prefix",
			    zs);
	else if (rc < 0)
		rc = pd_errf(e, PD_EX_DATAERR, "time zone '%s': corrupt TZif file '%s'", zs, path);
out:
	if (rc < 0)
		tz_free(z);
	free(data);
	close(fd);
	return rc;
}

/* The day number of a rule date in year y. */
static int64_t rule_day(const struct tz_date *r, int64_t y)
{
	int64_t jan1 = days_from_civil(y, 1, 1);

	if (r->kind == 'J')
		return jan1 + r->n - 1 + (is_leap(y) && r->n >= 60);
	if (r->kind == 'N')
		return jan1 + r->n;
	int64_t first = days_from_civil(y, r->m, 1);
	int64_t next = r->m == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, r->m + 1, 1);
	int64_t d = first + (r->d - weekday(first) + 7) % 7 + (r->w - 1) * 7;
	while (d >= next)
		d -= 7;
	return d;
}

struct tz_state {
	int32_t off;
	const char *abbr;
	int64_t until; /* the next instant the state may change (INT64_MAX: never) */
};

/* The footer rule at instant t. */
static void rule_lookup(const struct tz *z, int64_t t, struct tz_state *st)
{
	struct {
		int64_t at;
		int dst;
	} tr[6], tmp;
	int64_t y;
	int m, d, n = 0, i, j, dst;

	st->until = INT64_MAX;
	if (!z->has_dst) {
		st->off = z->std_off;
		st->abbr = z->std_abbr;
		return;
	}
	civil_from_days(floordiv(t + z->std_off, DAY), &y, &m, &d);
	for (int64_t yy = y - 1; yy <= y + 1; yy++) {
		tr[n].at = rule_day(&z->start, yy) * DAY + z->start.secs - z->std_off;
		tr[n++].dst = 1;
		tr[n].at = rule_day(&z->end, yy) * DAY + z->end.secs - z->dst_off;
		tr[n++].dst = 0;
	}
	/* Stable insertion sort: at equal instants the later year's change wins. */
	for (i = 1; i < n; i++) {
		tmp = tr[i];
		for (j = i; j > 0 && tr[j - 1].at > tmp.at; j--)
			tr[j] = tr[j - 1];
		tr[j] = tmp;
	}
	dst = !tr[0].dst;
	for (i = 0; i < n && tr[i].at <= t; i++)
		dst = tr[i].dst;
	if (i < n)
		st->until = tr[i].at;
	st->off = dst ? z->dst_off : z->std_off;
	st->abbr = dst ? z->dst_abbr : z->std_abbr;
}

static void tz_lookup(const struct tz *z, int64_t t, struct tz_state *st)
{
	size_t lo, hi;

	if (z->ntrans > 0 && t < z->trans[0]) {
		st->off = z->types[0].off;
		st->abbr = z->types[0].abbr;
		st->until = z->trans[0];
		return;
	}
	if (z->ntrans == 0 || t >= z->trans[z->ntrans - 1]) {
		if (z->has_rule) {
			rule_lookup(z, t, st);
			return;
		}
		const struct tz_type *ty = &z->types[z->ntrans ? z->idx[z->ntrans - 1] : 0];
		st->off = ty->off;
		st->abbr = ty->abbr;
		st->until = INT64_MAX;
		return;
	}
	/* trans[lo] <= t < trans[hi] */
	lo = 0;
	hi = z->ntrans - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (z->trans[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	st->off = z->types[z->idx[lo]].off;
	st->abbr = z->types[z->idx[lo]].abbr;
	st->until = z->trans[hi];
}

/* Every instant whose wall time is L lies within this much of L. */
#define WINDOW (TZ_MAXOFF + 3600)

/*
 * The instant at which wall time L (local seconds) fires: the earliest
 * instant t with t + off(t) == L; or, when L falls in a gap, L read with the
 * offset in force before the gap, which is L shifted past the gap by its
 * length.
 */
static int64_t tz_resolve(const struct tz *z, int64_t L)
{
	int64_t t = L - WINDOW, hi = L + WINDOW, late = 0;
	int have_late = 0;
	struct tz_state st;

	while (t < hi) {
		tz_lookup(z, t, &st);
		int64_t end = st.until < hi ? st.until : hi, cand = L - st.off;
		if (cand >= t && cand < end)
			return cand;
		if (cand < t && have_late)
			return late; /* L is in the gap between the last interval and this one */
		have_late = cand >= end;
		late = cand;
		t = end;
	}
	tz_lookup(z, L, &st);
	return L - st.off;
}

/* The smallest and largest offsets in force within WINDOW of t. */
static void tz_offset_range(const struct tz *z, int64_t t, int32_t *min, int32_t *max)
{
	int64_t hi = t + WINDOW;
	struct tz_state st;

	*min = INT32_MAX;
	*max = INT32_MIN;
	for (t -= WINDOW; t < hi; t = st.until) {
		tz_lookup(z, t, &st);
		if (st.off < *min)
			*min = st.off;
		if (st.off > *max)
			*max = st.off;
	}
}

int pd_tz_check(const char *zone, struct pd_err *e)
{
	struct tz z;

	if (tz_load(&z, zone, e) < 0)
		return -1;
	tz_free(&z);
	return 0;
}

static int day_matches(const struct pd_cron *c, int64_t day, int dom)
{
	int dom_ok = (c->dom >> dom) & 1, dow_ok = (c->dow >> weekday(day)) & 1;

	if (c->dom_star || c->dow_star)
		return dom_ok && dow_ok;
	return dom_ok || dow_ok;
}

/* The days in month mon of year y. */
static int month_days(int64_t y, int mon)
{
	static const int n[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return mon == 2 && is_leap(y) ? 29 : n[mon];
}

/* Bits lo..hi of a day-of-month mask (1 <= lo, hi <= 31). */
static uint32_t dom_bits(int lo, int hi)
{
	return lo > hi ? 0 : (uint32_t)(((2ULL << hi) - 1) & ~((1ULL << lo) - 1));
}

static const char *const month_full[] = {"",	    "January",	"February", "March",  "April",
					 "May",	    "June",	"July",	    "August", "September",
					 "October", "November", "December"};

/* Append the set bits lo..hi of mask to out as "1,3-5,30-31". */
static void list_bits(char *out, size_t n, uint32_t mask, int lo, int hi)
{
	size_t len = strlen(out);

	for (int v = lo; v <= hi; v++) {
		int w = v;
		if (!((mask >> v) & 1))
			continue;
		while (w < hi && ((mask >> (w + 1)) & 1))
			w++;
		if (len < n)
			len += (size_t)snprintf(out + len, n - len, w > v ? "%s%d-%d" : "%s%d",
						len > 0 && out[len - 1] != ' ' ? "," : "", v, w);
		v = w;
	}
}

/*
 * Whether c can ever fire, decided from its fields alone. The minute, hour
 * and month fields and the day-of-week field are never empty, and every
 * day of the week falls in every month, so:
 * - when day-of-month and day-of-week are both unstarred (a day matches if
 *   EITHER does), some day of every month matches;
 * - otherwise (BOTH must match) c can fire if and only if some month of
 *   the expression has one of its days of the month (February counting 29
 *   days). Every date, Feb 29 included, falls on every day of the week
 *   within the 400-year Gregorian cycle, which is what makes the day of
 *   the week irrelevant here and bounds the search in cron_next.
 * Returns 0, or -1 with e filled naming the days and months that never meet.
 */
static int cron_possible(const struct pd_cron *c, struct pd_err *e)
{
	char days[128] = "", months[160] = "";
	int nm = 0;

	if (!c->dom_star && !c->dow_star)
		return 0;
	for (int mon = 1; mon <= 12; mon++)
		if (((c->month >> mon) & 1) && (c->dom & dom_bits(1, month_days(2000, mon))) != 0)
			return 0;
	list_bits(days, sizeof days, c->dom, 1, 31);
	for (int mon = 1; mon <= 12; mon++)
		if ((c->month >> mon) & 1)
			nm++;
	for (int mon = 1, k = 0; mon <= 12; mon++) {
		size_t len = strlen(months);
		if (!((c->month >> mon) & 1))
			continue;
		const char *sep = ++k == 1 ? "" : k == nm ? " or " : ", ";
		snprintf(months + len, sizeof months - len, "%s%s", sep, month_full[mon]);
	}
	return pd_errf(e, PD_EX_DATAERR,
		       "cron expression never matches: day-of-month %s never falls in %s", days,
		       months);
}

/*
 * The first wall time at or after L (local seconds, on a minute) that
 * matches c and is before limit, into *out. Whole days and months that
 * cannot match are skipped, so a yearly schedule costs a few steps a year,
 * not a year of minutes: a month outside the month field is skipped at
 * once, and when both day fields must match the scan jumps to the month's
 * next day-of-month, or past the month when none is left in it. Returns 1
 * if found, 0 if not.
 */
static int next_wall(const struct pd_cron *c, int64_t L, int64_t limit, int64_t *out)
{
	int64_t day = floordiv(L, DAY), y;
	int mon, dom, h0 = (int)((L - day * DAY) / 3600), m0 = (int)((L - day * DAY) % 3600 / 60);
	int both = c->dom_star || c->dow_star;

	civil_from_days(day, &y, &mon, &dom);
	while (day * DAY < limit) {
		uint32_t left = both ? c->dom & dom_bits(dom, month_days(y, mon)) : 1;
		if (!((c->month >> mon) & 1) || left == 0) {
			/* Skip to the first of the next month. */
			day = mon == 12 ? days_from_civil(y + 1, 1, 1)
					: days_from_civil(y, mon + 1, 1);
			civil_from_days(day, &y, &mon, &dom);
			h0 = m0 = 0;
			continue;
		}
		if (both && !((left >> dom) & 1)) {
			/* Jump to the next day of the month in the field. */
			int to = __builtin_ctz(left);
			day += to - dom;
			dom = to;
			h0 = m0 = 0;
		}
		if (day_matches(c, day, dom)) {
			for (int h = h0; h < 24; h++) {
				if (!((c->hour >> h) & 1))
					continue;
				for (int m = h == h0 ? m0 : 0; m < 60; m++) {
					if (!((c->minute >> m) & 1))
						continue;
					int64_t w = day * DAY + h * 3600 + m * 60;
					if (w >= limit)
						return 0;
					*out = w;
					return 1;
				}
			}
		}
		day++;
		h0 = m0 = 0;
		civil_from_days(day, &y, &mon, &dom);
	}
	return 0;
}

/* 400 Gregorian years: the calendar, days of the week included, repeats. */
#define CYCLE_DAYS 146097LL

/*
 * The search. Wall times map to instants almost in order: an overlap takes
 * its first instant, which keeps the order, but a time in a spring-forward
 * gap lands up to the gap's length past the gap, after instants of wall
 * times that come later (Lord Howe 02:07 fires at 02:37, after 02:35). So:
 * - every wall time before after + (smallest offset nearby) fires at or
 *   before `after`, and the scan starts there;
 * - the answer is the smallest instant after `after`; once a candidate is
 *   found, only wall times before it + (largest offset nearby) can still
 *   fire earlier, and the scan stops there.
 * An expression that passed cron_possible matches some wall-clock date in
 * any 400 consecutive years, and every wall time fires (a time in a gap is
 * shifted, not dropped), so the scan is bounded by one Gregorian cycle plus
 * a day. In practice it stops much sooner: Feb 29 is at most 8 years away
 * (2096 to 2104), a date on a given day of the week at most 40.
 */
static int cron_next(const struct pd_cron *c, const struct tz *z, int64_t after, int64_t *next,
		     struct pd_err *e)
{
	int32_t min, max;
	int64_t L, limit, best = 0;
	int found = 0;

	if (cron_possible(c, e) < 0)
		return -1;
	tz_offset_range(z, after, &min, &max);
	L = floordiv(after + min + 1 + 59, 60) * 60;
	limit = (floordiv(L, DAY) + CYCLE_DAYS + 1) * DAY;
	while (next_wall(c, L, limit, &L)) {
		int64_t t = tz_resolve(z, L);
		if (t > after && (!found || t < best)) {
			best = t;
			found = 1;
			tz_offset_range(z, best, &min, &max);
			if (best + max < limit)
				limit = best + max;
		}
		L += 60;
	}
	if (!found) /* not reached: see above */
		return pd_errf(e, PD_EX_SOFTWARE,
			       "cron expression never matches within 400 years (a bug)");
	*next = best;
	return 0;
}

int pd_cron_next(const struct pd_cron *c, const char *zone, long long after, long long *next,
		 struct pd_err *e)
{
	struct tz z;
	int64_t t = 0;
	int rc;

	if (after < MIN_T || after > MAX_T)
		return pd_errf(e, PD_EX_DATAERR,
			       "instant %lld is out of range (years 0001 to 9999)", after);
	if (tz_load(&z, zone, e) < 0)
		return -1;
	rc = cron_next(c, &z, after, &t, e);
	tz_free(&z);
	if (rc == 0)
		*next = t;
	return rc;
}

int pd_cron_local(long long t, const char *zone, char *out, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	struct tz_state st;
	struct tz z;
	int64_t L, day, y;
	int mon, dom, sod, r;

	if (n > 0)
		out[0] = '\0';
	if (t < MIN_T || t > MAX_T || tz_load(&z, zone, &e) < 0)
		return -1;
	tz_lookup(&z, t, &st);
	L = t + st.off;
	day = floordiv(L, DAY);
	sod = (int)(L - day * DAY);
	civil_from_days(day, &y, &mon, &dom);
	r = snprintf(out, n, "%04lld-%02d-%02d %02d:%02d:%02d %s", (long long)y, mon, dom,
		     sod / 3600, sod % 3600 / 60, sod % 60, st.abbr);
	tz_free(&z);
	if (r < 0 || (size_t)r >= n) {
		if (n > 0)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

int pd_cron_dst(const struct pd_cron *c, const char *zone, long long t)
{
	struct pd_err e = PD_ERR_INIT;
	struct tz_state st, st2;
	struct tz z;
	int64_t L, sod, u, hi = t + WINDOW;
	int rc = PD_DST_NONE;

	if (t < MIN_T || t > MAX_T || tz_load(&z, zone, &e) < 0)
		return PD_DST_NONE;
	tz_lookup(&z, t, &st);
	L = t + st.off;
	sod = L - floordiv(L, DAY) * DAY;
	if (!(c->hour >> (sod / 3600) & 1) || !(c->minute >> (sod % 3600 / 60) & 1))
		rc = PD_DST_GAP;
	/* Another instant with the same wall time: some offset near t reads L too. */
	for (u = t - WINDOW; rc == PD_DST_NONE && u < hi; u = st2.until) {
		tz_lookup(&z, u, &st2);
		if (L - st2.off != t && L - st2.off >= u && L - st2.off < st2.until)
			rc = PD_DST_TWICE;
	}
	tz_free(&z);
	return rc;
}
