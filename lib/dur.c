/*
 * dur: durations and instants. See dur.h for the accepted forms.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dur.h"

static const struct unit {
	const char *name;
	long long ms;
} units[] = {
    {"d", 86400000LL}, {"h", 3600000LL}, {"m", 60000LL}, {"s", 1000LL}, {"ms", 1LL},
};

#define NUNITS ((int)(sizeof(units) / sizeof(units[0])))

/*
 * Copy s for an error message: at most 64 bytes, control characters shown
 * as '?', so that the message stays one readable line.
 */
static const char *show(char *out, size_t n, const char *s)
{
	size_t o = 0, max = n - 4;

	for (; *s && o < max; s++)
		out[o++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
	if (*s) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int dur_err(struct pd_err *e, const char *s, const char *why)
{
	char x[68];

	return pd_errf(e, PD_EX_DATAERR, "invalid duration '%s': %s", show(x, sizeof(x), s), why);
}

static const char dur_expected[] = "expected a number with ms, s, m, h or d";

static int dur_too_large(struct pd_err *e, const char *s)
{
	dur_err(e, s, "more than 100 years (36525d)");
	return -2;
}

int pd_dur_parse(const char *s, long long *ms, struct pd_err *e)
{
	const char *p = s;
	long long total = 0;
	int last = -1, overflow = 0;

	if (*p == '\0')
		return dur_err(e, s, dur_expected);
	while (*p) {
		long long ip = 0, fnum = 0, fden = 1, unit, part;
		const char *u;
		size_t ulen;
		int k;

		if (!is_digit(*p))
			return dur_err(e, s, dur_expected);
		for (; is_digit(*p); p++) {
			if (ip > (LLONG_MAX - (*p - '0')) / 10)
				overflow = 1;
			else
				ip = ip * 10 + (*p - '0');
		}
		if (*p == '.') {
			p++;
			if (!is_digit(*p))
				return dur_err(e, s, dur_expected);
			/* Nine digits are plenty below a millisecond of a day. */
			for (; is_digit(*p); p++) {
				if (fden < 1000000000LL) {
					fnum = fnum * 10 + (*p - '0');
					fden *= 10;
				}
			}
		}
		for (u = p; is_alpha(*p); p++)
			;
		ulen = (size_t)(p - u);
		if (ulen == 0) {
			/* A bare number is seconds, but only as the whole string. */
			if (last != -1 || *p != '\0')
				return dur_err(e, s, dur_expected);
			k = 3;
		} else {
			for (k = 0; k < NUNITS; k++)
				if (strlen(units[k].name) == ulen &&
				    strncmp(units[k].name, u, ulen) == 0)
					break;
			if (k == NUNITS)
				return dur_err(e, s, dur_expected);
			if (k <= last)
				return dur_err(
				    e, s, "units must be written largest first, each at most once");
		}
		last = k;
		unit = units[k].ms;
		/* ip * unit <= PD_DUR_MAX_MS and the fraction < unit: no sum overflows. */
		if (overflow || ip > PD_DUR_MAX_MS / unit)
			return dur_too_large(e, s);
		part = ip * unit + fnum * unit / fden;
		total += part;
		if (total > PD_DUR_MAX_MS)
			return dur_too_large(e, s);
	}
	*ms = total;
	return 0;
}

void pd_dur_format(long long ms, char *out, size_t n)
{
	unsigned long long v;
	size_t o = 0;

	if (n == 0)
		return;
	out[0] = '\0';
	if (ms == 0) {
		snprintf(out, n, "0s");
		return;
	}
	if (ms < 0) {
		v = 0ULL - (unsigned long long)ms;
		o += (size_t)snprintf(out, n, "-");
	} else {
		v = (unsigned long long)ms;
	}
	for (int k = 0; k < NUNITS && o < n; k++) {
		unsigned long long q = v / (unsigned long long)units[k].ms;

		if (q == 0)
			continue;
		v -= q * (unsigned long long)units[k].ms;
		o += (size_t)snprintf(out + o, n - o, "%llu%s", q, units[k].name);
	}
}

static int inst_err(struct pd_err *e, const char *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int inst_err(struct pd_err *e, const char *s, const char *fmt, ...)
{
	char x[68], why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return pd_errf(e, PD_EX_DATAERR, "invalid instant '%s': %s", show(x, sizeof(x), s), why);
}

/* Read exactly n digits at *p into *v; advance *p. */
static int digits(const char **p, int n, int *v)
{
	int r = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
			return -1;
		r = r * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*v = r;
	return 0;
}

static int days_in_month(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return days[m - 1];
}

static const char offset_expected[] = "expected an offset +HH:MM, +HHMM or +HH";

int pd_instant_parse(const char *s, long long *epoch_us, struct pd_err *e)
{
	const char *p = s;
	int y, mo, d, h = 0, mi = 0, sec = 0, oh = 0, om = 0, sign = 0;
	long long us = 0;
	struct tm tm;
	time_t t;

	if (digits(&p, 4, &y) < 0 || *p++ != '-' || digits(&p, 2, &mo) < 0 || *p++ != '-' ||
	    digits(&p, 2, &d) < 0)
		return inst_err(e, s, "expected a date YYYY-MM-DD");
	if (mo < 1 || mo > 12)
		return inst_err(e, s, "month %d is out of range 1-12", mo);
	if (d < 1 || d > days_in_month(y, mo))
		return inst_err(e, s, "day %d does not exist in %04d-%02d", d, y, mo);
	if (*p != '\0') {
		if (*p != 'T' && *p != 't' && *p != ' ')
			return inst_err(e, s, "expected 'T' and a time after the date");
		p++;
		if (digits(&p, 2, &h) < 0 || *p++ != ':' || digits(&p, 2, &mi) < 0)
			return inst_err(e, s, "expected a time HH:MM or HH:MM:SS after the date");
		if (*p == ':') {
			p++;
			if (digits(&p, 2, &sec) < 0)
				return inst_err(e, s, "expected two digits of seconds");
			if (*p == '.' || *p == ',') {
				long long scale = 100000;

				p++;
				if (!is_digit(*p))
					return inst_err(e, s,
							"expected digits after the decimal point");
				/* Keep microseconds; finer digits are dropped. */
				for (; is_digit(*p); p++, scale /= 10)
					us += (*p - '0') * scale;
			}
		}
		if (h > 23)
			return inst_err(e, s, "hour %d is out of range 0-23", h);
		if (mi > 59)
			return inst_err(e, s, "minute %d is out of range 0-59", mi);
		if (sec > 60)
			return inst_err(e, s, "second %d is out of range 0-60", sec);
		if (*p == '\0')
			return inst_err(e, s,
					"no time zone: add Z for UTC or an offset such as +02:00 "
					"(a local time is ambiguous)");
		if (*p == 'Z' || *p == 'z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			sign = *p++ == '-' ? -1 : 1;
			if (digits(&p, 2, &oh) < 0)
				return inst_err(e, s, "%s", offset_expected);
			if (*p == ':') {
				p++;
				if (digits(&p, 2, &om) < 0)
					return inst_err(e, s, "%s", offset_expected);
			} else if (*p != '\0') {
				if (digits(&p, 2, &om) < 0)
					return inst_err(e, s, "%s", offset_expected);
			}
			if (oh > 23 || om > 59)
				return inst_err(e, s, "offset %c%02d:%02d is out of range",
						sign < 0 ? '-' : '+', oh, om);
		} else {
			return inst_err(e, s,
					"expected Z or an offset such as +02:00 after the time");
		}
		if (*p != '\0')
			return inst_err(e, s, "unexpected text after the time zone");
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec; /* timegm carries a leap second 60 into the next minute */
	t = timegm(&tm);
	t -= (time_t)sign * (oh * 3600 + om * 60);
	if (y < 1 || (long long)t * 1000000LL + us < PD_INSTANT_MIN_US)
		return inst_err(e, s, "out of range: years 0001 to 9999 (in UTC from 0001)");
	*epoch_us = (long long)t * 1000000LL + us;
	return 0;
}

void pd_instant_format(long long epoch_us, char *out, size_t n)
{
	long long secs = epoch_us / 1000000LL, frac = epoch_us % 1000000LL;
	struct tm tm;
	time_t t;

	if (n == 0)
		return;
	if (frac < 0) {
		frac += 1000000LL;
		secs--;
	}
	t = (time_t)secs;
	if (gmtime_r(&t, &tm) == NULL) {
		snprintf(out, n, "?");
		return;
	}
	if (frac)
		snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	else
		snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}
