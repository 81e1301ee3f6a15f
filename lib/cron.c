/*
 * cron: the expression parser and the next-fire search over wall-clock time,
 * on the time zones and civil-date arithmetic of lib/tz.c (local seconds:
 * see tz.h).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cron.h"
#include "err.h"
#include "text.h"
#include "tz.h"

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

#define SHOW_MAX PD_TEXT_SHOW_MAX /* the expression in messages */
#define SHOW_TOK 41		  /* a field or part of one, with its NUL */

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
	pd_text_show(ex, sizeof ex, p->expr, strlen(p->expr));
	if (p->f < 0)
		return pd_errf(p->e, PD_EX_DATAERR, "invalid cron expression '%s': %s", ex, detail);
	pd_text_show(tk, sizeof tk, p->tok, p->toklen);
	return pd_errf(p->e, PD_EX_DATAERR, "invalid cron expression '%s': %s field '%s': %s", ex,
		       fields[p->f].name, tk, detail);
}

/* The rest of the field from s, quoted for a message. */
static const char *rest(const struct pctx *p, const char *s, char *out, size_t n)
{
	return pd_text_show(out, n, s, (size_t)(p->tok + p->toklen - s));
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
		return perr(p, "unknown name '%s'",
			    pd_text_show(buf, sizeof buf, s, (size_t)(t - s)));
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
			    pd_text_show(buf, sizeof buf, s, (size_t)(t - s)), fd->lo, fd->hi);
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
					return perr(
					    p, "range start %s is after its end %s",
					    pd_text_show(b1, sizeof b1, as, (size_t)(bs - 1 - as)),
					    pd_text_show(b2, sizeof b2, bs, (size_t)(s - bs)));
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
					    pd_text_show(b1, sizeof b1, ss, (size_t)(s - ss)),
					    span);
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
		return perr(&p, "unknown macro '%s'", pd_text_show(b1, sizeof b1, s, n));
	while (is_space(*t))
		t++;
	if (*t != '\0')
		return perr(&p, "unexpected '%s' after '%s'",
			    pd_text_show(b1, sizeof b1, t, strlen(t)),
			    pd_text_show(b2, sizeof b2, s, n));
	return parse_fields(c, p.expr, macros[i].expr, e);
}

static int day_matches(const struct pd_cron *c, int64_t day, int dom)
{
	int dom_ok = (c->dom >> dom) & 1, dow_ok = (c->dow >> pd_weekday(day)) & 1;

	if (c->dom_star || c->dow_star)
		return dom_ok && dow_ok;
	return dom_ok || dow_ok;
}

/* The days in month mon of year y. */
static int month_days(int64_t y, int mon)
{
	static const int n[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return mon == 2 && pd_is_leap(y) ? 29 : n[mon];
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
	int64_t day = pd_floordiv(L, PD_DAY), y;
	int mon, dom, h0 = (int)((L - day * PD_DAY) / 3600),
		      m0 = (int)((L - day * PD_DAY) % 3600 / 60);
	int both = c->dom_star || c->dow_star;

	pd_civil_from_days(day, &y, &mon, &dom);
	while (day * PD_DAY < limit) {
		uint32_t left = both ? c->dom & dom_bits(dom, month_days(y, mon)) : 1;
		if (!((c->month >> mon) & 1) || left == 0) {
			/* Skip to the first of the next month. */
			day = mon == 12 ? pd_days_from_civil(y + 1, 1, 1)
					: pd_days_from_civil(y, mon + 1, 1);
			pd_civil_from_days(day, &y, &mon, &dom);
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
					int64_t w = day * PD_DAY + h * 3600 + m * 60;
					if (w >= limit)
						return 0;
					*out = w;
					return 1;
				}
			}
		}
		day++;
		h0 = m0 = 0;
		pd_civil_from_days(day, &y, &mon, &dom);
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
static int cron_next(const struct pd_cron *c, const struct pd_tz *z, int64_t after, int64_t *next,
		     struct pd_err *e)
{
	int32_t min, max;
	int64_t L, limit, best = 0;
	int found = 0;

	if (cron_possible(c, e) < 0)
		return -1;
	pd_tz_offset_range(z, after, &min, &max);
	L = pd_floordiv(after + min + 1 + 59, 60) * 60;
	limit = (pd_floordiv(L, PD_DAY) + CYCLE_DAYS + 1) * PD_DAY;
	while (next_wall(c, L, limit, &L)) {
		int64_t t = pd_tz_resolve(z, L);
		if (t > after && (!found || t < best)) {
			best = t;
			found = 1;
			pd_tz_offset_range(z, best, &min, &max);
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
	struct pd_tz z;
	int64_t t = 0;
	int rc;

	if (after < PD_MIN_T || after > PD_MAX_T)
		return pd_errf(e, PD_EX_DATAERR,
			       "instant %lld is out of range (years 0001 to 9999)", after);
	if (pd_tz_load(&z, zone, e) < 0)
		return -1;
	rc = cron_next(c, &z, after, &t, e);
	pd_tz_free(&z);
	if (rc == 0)
		*next = t;
	return rc;
}

int pd_cron_local(long long t, const char *zone, char *out, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_tz_state st;
	struct pd_tz z;
	int64_t L, day, y;
	int mon, dom, sod, r;

	if (n > 0)
		out[0] = '\0';
	if (t < PD_MIN_T || t > PD_MAX_T || pd_tz_load(&z, zone, &e) < 0)
		return -1;
	pd_tz_lookup(&z, t, &st);
	L = t + st.off;
	day = pd_floordiv(L, PD_DAY);
	sod = (int)(L - day * PD_DAY);
	pd_civil_from_days(day, &y, &mon, &dom);
	r = snprintf(out, n, "%04lld-%02d-%02d %02d:%02d:%02d %s", (long long)y, mon, dom,
		     sod / 3600, sod % 3600 / 60, sod % 60, st.abbr);
	pd_tz_free(&z);
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
	struct pd_tz_state st, st2;
	struct pd_tz z;
	int64_t L, sod, u, y, hi = t + PD_TZ_WINDOW;
	int rc = PD_DST_NONE, mon, dom;

	if (t < PD_MIN_T || t > PD_MAX_T || pd_tz_load(&z, zone, &e) < 0)
		return PD_DST_NONE;
	pd_tz_lookup(&z, t, &st);
	L = t + st.off;
	sod = L - pd_floordiv(L, PD_DAY) * PD_DAY;
	pd_civil_from_days(pd_floordiv(L, PD_DAY), &y, &mon, &dom);
	/* A gap of a day or more (Pacific/Apia skipped 2011-12-30) shifts the date too. */
	if (!(c->hour >> (sod / 3600) & 1) || !(c->minute >> (sod % 3600 / 60) & 1) ||
	    !(c->month >> mon & 1) || !day_matches(c, pd_floordiv(L, PD_DAY), dom))
		rc = PD_DST_GAP;
	/* Another instant with the same wall time: some offset near t reads L too. */
	for (u = t - PD_TZ_WINDOW; rc == PD_DST_NONE && u < hi; u = st2.until) {
		pd_tz_lookup(&z, u, &st2);
		if (L - st2.off != t && L - st2.off >= u && L - st2.off < st2.until)
			rc = PD_DST_TWICE;
	}
	pd_tz_free(&z);
	return rc;
}
