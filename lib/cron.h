/*
 * cron: five-field cron expressions, IANA time zones, and the next fire
 * instant with exact daylight-saving semantics. Pure code: no I/O except
 * reading TZif files from the tz database, no process-wide state (TZ is
 * never touched), so every function here is safe to call from any thread.
 *
 * Expressions: minute hour day-of-month month day-of-week, separated by any
 * whitespace. Each field is a comma list of items; an item is '*', a value
 * 'a', a range 'a-b', or one of those with a step '/n' (on a single value
 * 'a/n' means a-max/n). Steps run from 1 to the field's span (60 for
 * minutes, 7 for days of the week...). Months and days of the week also take
 * three-letter names in any case (jan..dec, sun..sat), in ranges too
 * (mon-fri). In the day-of-week field 0 and 7 are both Sunday ("5-7" is
 * Friday to Sunday); '*' and 'a/n' there stop at 6 (Saturday). Macros:
 * @yearly @annually (0 0 1 1 *), @monthly (0 0 1 * *), @weekly (0 0 * * 0),
 * @daily @midnight (0 0 * * *), @hourly (0 * * * *), in any case.
 *
 * Day matching follows Vixie cron exactly: a field is "starred" when its
 * text begins with '*' (so both '*' and a stepped star such as '*' '/2'
 * are starred, while '1-31' is not). When both day-of-month and day-of-week
 * are unstarred, a day matches when EITHER matches ("0 0 13 * fri": every
 * 13th and every Friday); when at least one is starred, a day matches when
 * BOTH match (a stepped-star day-of-month '/2' with day-of-week 'mon' means
 * odd days that are also Mondays, as in Vixie cron).
 *
 * Times are wall-clock times in the schedule's zone:
 * - a wall time that exists once fires at that instant;
 * - a wall time that happens twice (fall back) fires once, the first time;
 * - a wall time that does not exist (spring forward) fires anyway, shifted
 *   past the gap by the gap's length (Europe/Berlin 2026-03-29 02:30 fires
 *   at 03:30 CEST); when that lands on an instant that also fires naturally
 *   it is one fire.
 * A shifted time can land after a later wall time's natural instant (with
 * Lord Howe's 30-minute gap, "7,35 2 * * *" fires at 02:35 and then at
 * 02:37 for the shifted 02:07); pd_cron_next always returns the earliest
 * instant, so successive calls give strictly increasing instants. An hourly
 * schedule fires 24 times on a 25-hour day and 23 times on a 23-hour day;
 * with a 30-minute shift (Australia/Lord_Howe) it fires 24 times on the
 * 23.5-hour day, the 02:00 fire moving to 02:30.
 */
#ifndef PD_CRON_H
#define PD_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "tz.h"

struct pd_cron {
	uint64_t minute; /* bit i set = minute i allowed, bits 0..59 */
	uint32_t hour;	 /* bits 0..23 */
	uint32_t dom;	 /* bits 1..31 */
	uint16_t month;	 /* bits 1..12 */
	uint8_t dow;	 /* bits 0..6, 0 = Sunday */
	int dom_star;	 /* the day-of-month field began with '*' */
	int dow_star;	 /* the day-of-week field began with '*' */
};

/*
 * Parse expr into c. Returns 0, or -1 with e filled (PD_EX_DATAERR), e.g.
 * "invalid cron expression '61 * * * *': minute field '61': value 61 out of
 * range 0-59". c is zeroed first and is only meaningful on success.
 */
int pd_cron_parse(struct pd_cron *c, const char *expr, struct pd_err *e);

/*
 * The first fire instant of c in zone strictly after `after` (both UTC
 * epoch seconds; `after` need not be on a minute) into *next. An
 * expression that can never fire is refused from its fields alone: when
 * both day fields must match (one is starred) and no month of the
 * expression has one of its days of the month ("30 2 31 2 *", "0 0 31
 * 4,6,9,11 *"), it fails with "cron expression never matches: day-of-month
 * 31 never falls in February". Any other expression fires within one
 * 400-year Gregorian cycle, and the search goes as far as it takes (Feb 29
 * after 2096 is 2104), skipping months and days that cannot match. `after`
 * must lie in the years 0001 to 9999; the result may lie beyond. Returns 0,
 * or -1 with e filled (PD_EX_DATAERR, or as pd_tz_check for the zone).
 */
int pd_cron_next(const struct pd_cron *c, const char *zone, long long after, long long *next,
		 struct pd_err *e);

/*
 * Format instant t as wall-clock time in zone with the zone's abbreviation,
 * "2026-03-29 03:30:00 CEST" (numeric abbreviations come out as the tz
 * database has them: "2026-10-04 02:30:00 +11"). Returns 0, or -1 when the
 * zone is not valid (see pd_tz_check), t is outside the years 0001 to 9999,
 * or out (n bytes) is too small; out is then "" if n > 0.
 */
int pd_cron_local(long long t, const char *zone, char *out, size_t n);

/*
 * What daylight-saving time did to t, a fire instant of c in zone (for
 * `pd-cron check`): PD_DST_GAP when the wall time it stands for does not
 * exist that day and it fired shifted past the gap, PD_DST_TWICE when its
 * wall time happens twice (it fired the first time only), else
 * PD_DST_NONE (also for a bad zone or instant).
 */
enum { PD_DST_NONE, PD_DST_GAP, PD_DST_TWICE };
int pd_cron_dst(const struct pd_cron *c, const char *zone, long long t);

#endif
