/*
 * tz: a TZif reader (RFC 8536, with its POSIX TZ footer) and civil-time
 * arithmetic, for cron's next-fire search (lib/cron.c).
 *
 * Time zones are read from the tz database ourselves rather than through
 * setenv("TZ") + mktime(): that keeps the library free of process-wide
 * state, and mktime's tm_isdst guessing is exactly what cron's DST rules
 * must not depend on.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "text.h"
#include "tz.h"

/* ---- civil time ---- */

int64_t pd_floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if (a % b != 0 && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
int64_t pd_days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = pd_floordiv(y, 400);
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void pd_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = pd_floordiv(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int pd_is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Day of the week of a day number, 0 = Sunday (1970-01-01 was a Thursday). */
int pd_weekday(int64_t day)
{
	return (int)(day - pd_floordiv(day + 4, 7) * 7 + 4);
}

/* ---- time zones ---- */

#define TZ_MAXFILE (4 << 20)

void pd_tz_free(struct pd_tz *z)
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

static int posix_date(const char **sp, struct pd_tz_date *d)
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
static int parse_footer(struct pd_tz *z, const char *s)
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
static int parse_tzif(struct pd_tz *z, const unsigned char *p, size_t n)
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
		if (utoff < -PD_TZ_MAXOFF || utoff > PD_TZ_MAXOFF || q[4] > 1 || q[5] >= charcnt ||
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
		    (z->std_off < -PD_TZ_MAXOFF || z->std_off > PD_TZ_MAXOFF ||
		     (z->has_dst && (z->dst_off < -PD_TZ_MAXOFF || z->dst_off > PD_TZ_MAXOFF))))
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
	char zs[PD_TEXT_SHOW_MAX + 1];

	pd_text_show(zs, sizeof zs, zone, strlen(zone));
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
	char zs[PD_TEXT_SHOW_MAX + 1];
	const char *s;

	pd_text_show(zs, sizeof zs, zone, strlen(zone));
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

int pd_tz_load(struct pd_tz *z, const char *zone, struct pd_err *e)
{
	const char *dir = tz_dir();
	char path[PATH_MAX], zs[PD_TEXT_SHOW_MAX + 1];
	unsigned char *data = NULL;
	struct stat st;
	size_t got = 0;
	int fd, rc;

	memset(z, 0, sizeof *z);
	if (zone == NULL)
		zone = "";
	if (zone_name_ok(zone, dir, e) < 0)
		return -1;
	pd_text_show(zs, sizeof zs, zone, strlen(zone));
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
		pd_tz_free(z);
	free(data);
	close(fd);
	return rc;
}

/* The day number of a rule date in year y. */
static int64_t rule_day(const struct pd_tz_date *r, int64_t y)
{
	int64_t jan1 = pd_days_from_civil(y, 1, 1);

	if (r->kind == 'J')
		return jan1 + r->n - 1 + (pd_is_leap(y) && r->n >= 60);
	if (r->kind == 'N')
		return jan1 + r->n;
	int64_t first = pd_days_from_civil(y, r->m, 1);
	int64_t next =
	    r->m == 12 ? pd_days_from_civil(y + 1, 1, 1) : pd_days_from_civil(y, r->m + 1, 1);
	int64_t d = first + (r->d - pd_weekday(first) + 7) % 7 + (r->w - 1) * 7;
	while (d >= next)
		d -= 7;
	return d;
}

/* The footer rule at instant t. */
static void rule_lookup(const struct pd_tz *z, int64_t t, struct pd_tz_state *st)
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
	pd_civil_from_days(pd_floordiv(t + z->std_off, PD_DAY), &y, &m, &d);
	for (int64_t yy = y - 1; yy <= y + 1; yy++) {
		tr[n].at = rule_day(&z->start, yy) * PD_DAY + z->start.secs - z->std_off;
		tr[n++].dst = 1;
		tr[n].at = rule_day(&z->end, yy) * PD_DAY + z->end.secs - z->dst_off;
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

void pd_tz_lookup(const struct pd_tz *z, int64_t t, struct pd_tz_state *st)
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
		const struct pd_tz_type *ty = &z->types[z->ntrans ? z->idx[z->ntrans - 1] : 0];
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

int64_t pd_tz_resolve(const struct pd_tz *z, int64_t L)
{
	int64_t t = L - PD_TZ_WINDOW, hi = L + PD_TZ_WINDOW, late = 0;
	int have_late = 0;
	struct pd_tz_state st;

	while (t < hi) {
		pd_tz_lookup(z, t, &st);
		int64_t end = st.until < hi ? st.until : hi, cand = L - st.off;
		if (cand >= t && cand < end)
			return cand;
		if (cand < t && have_late)
			return late; /* L is in the gap between the last interval and this one */
		have_late = cand >= end;
		late = cand;
		t = end;
	}
	pd_tz_lookup(z, L, &st);
	return L - st.off;
}

void pd_tz_offset_range(const struct pd_tz *z, int64_t t, int32_t *min, int32_t *max)
{
	int64_t hi = t + PD_TZ_WINDOW;
	struct pd_tz_state st;

	*min = INT32_MAX;
	*max = INT32_MIN;
	for (t -= PD_TZ_WINDOW; t < hi; t = st.until) {
		pd_tz_lookup(z, t, &st);
		if (st.off < *min)
			*min = st.off;
		if (st.off > *max)
			*max = st.off;
	}
}

int pd_tz_check(const char *zone, struct pd_err *e)
{
	struct pd_tz z;

	if (pd_tz_load(&z, zone, e) < 0)
		return -1;
	pd_tz_free(&z);
	return 0;
}
