/*
 * tz: IANA time zones read from the tz database (TZif files, RFC 8536, with
 * the POSIX TZ footer for instants after the last transition), and the
 * civil-date arithmetic cron's next-fire search runs on (lib/cron.c). Pure
 * code: no I/O but reading TZif files, no process-wide state (TZ is never
 * touched).
 *
 * Wall-clock ("local") times are handled as "local seconds": the wall time
 * written as if it were UTC, so civil-date arithmetic is plain integer
 * arithmetic. An instant t has local seconds t + off(t).
 */
#ifndef PD_TZ_H
#define PD_TZ_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct pd_tz_type {
	int32_t off; /* seconds east of UTC */
	const char *abbr;
};

/* One date of a POSIX TZ rule: Jn, n or Mm.w.d, then the time of day. */
struct pd_tz_date {
	char kind; /* 'J', 'N' or 'M' */
	int n, m, w, d;
	int32_t secs;
};

struct pd_tz {
	int64_t *trans; /* transition instants, ascending */
	uint8_t *idx;	/* the type each transition starts */
	size_t ntrans;
	struct pd_tz_type types[256];
	size_t ntypes;
	char *chars; /* abbreviations */
	/* The footer: the rule for instants after the last transition. */
	int has_rule, has_dst;
	char std_abbr[32], dst_abbr[32];
	int32_t std_off, dst_off;
	struct pd_tz_date start, end;
};

struct pd_tz_state {
	int32_t off;
	const char *abbr;
	int64_t until; /* the next instant the state may change (INT64_MAX: never) */
};

#define PD_DAY	 86400LL
#define PD_MIN_T (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define PD_MAX_T 253402300799LL	  /* 9999-12-31T23:59:59Z */

#define PD_TZ_MAXOFF (26 * 3600)

/* Every instant whose wall time is L lies within this much of L. */
#define PD_TZ_WINDOW (PD_TZ_MAXOFF + 3600)

/* ---- civil time (proleptic Gregorian, days since 1970-01-01) ---- */

/* a / b rounded toward minus infinity (b > 0). */
int64_t pd_floordiv(int64_t a, int64_t b);
/* The day number of y-m-d (H. Hinnant's algorithm). */
int64_t pd_days_from_civil(int64_t y, int m, int d);
/* The date of day number z. */
void pd_civil_from_days(int64_t z, int64_t *y, int *m, int *d);
int pd_is_leap(int64_t y);
/* Day of the week of a day number, 0 = Sunday. */
int pd_weekday(int64_t day);

/* ---- time zones ---- */

/*
 * Check that zone names a zone of the tz database ($TZDIR, else
 * /usr/share/zoneinfo): a relative name of a TZif file without leap
 * seconds. Fixed offsets ("+02:00", "UTC+2"), POSIX TZ strings, absolute
 * paths, '..' and "localtime" are refused with a message saying why;
 * database names such as "Etc/GMT-3" or "EST5EDT" are accepted. Returns 0,
 * or -1 with e filled: PD_EX_DATAERR for a bad or unknown zone,
 * PD_EX_CONFIG when the file exists but cannot be read.
 */
int pd_tz_check(const char *zone, struct pd_err *e);

/* Load zone (checked as pd_tz_check does) into z: 0, or -1 with e filled. pd_tz_free after. */
int pd_tz_load(struct pd_tz *z, const char *zone, struct pd_err *e);
void pd_tz_free(struct pd_tz *z);
/* The offset and abbreviation in force at instant t, and until when. */
void pd_tz_lookup(const struct pd_tz *z, int64_t t, struct pd_tz_state *st);
/*
 * The instant at which wall time L (local seconds) fires: the earliest
 * instant t with t + off(t) == L; or, when L falls in a gap, L read with the
 * offset in force before the gap, which is L shifted past the gap by its
 * length.
 */
int64_t pd_tz_resolve(const struct pd_tz *z, int64_t L);
/* The smallest and largest offsets in force within PD_TZ_WINDOW of t. */
void pd_tz_offset_range(const struct pd_tz *z, int64_t t, int32_t *min, int32_t *max);

#endif
