/*
 * dur: durations in milliseconds and instants in microseconds since the
 * epoch, parsed from and formatted to text.
 *
 * Durations: a whole or fractional number followed by a unit, "250ms",
 * "30s", "1.5m", "2h", "1d", or a plain number of seconds, "12", "1.5".
 * Several of them written together are summed, largest unit first and each
 * unit at most once: "1h30m", "1m30s500ms" (so pd_dur_format's output parses
 * back). No signs, spaces or exponents. Sub-millisecond fractions are
 * dropped ("1.5ms" is 1ms). At most PD_DUR_MAX_MS, 100 years.
 *
 * Instants: RFC 3339 / ISO 8601 with an explicit zone, "2026-03-29T01:30:00Z",
 * "2026-03-29T01:30:00.123456+02:00", "2026-03-29T01:30Z", a space instead
 * of the T, or a date alone, "2026-03-29", which is midnight UTC. A time
 * without Z or an offset is refused: a local time is ambiguous. Years 0001
 * to 9999 (from 0001-01-01T00:00:00Z in UTC): PostgreSQL has no year 0.
 *
 * With these maxima an instant plus a duration is below year 10100, well
 * inside PostgreSQL's timestamptz (to 294276) and interval, and a duration
 * in microseconds or an instant in microseconds fits 64 bits many times.
 */
#ifndef PD_DUR_H
#define PD_DUR_H

#include <stddef.h>

#include "err.h"

/* Room for any pd_dur_format or pd_instant_format output, NUL included. */
#define PD_DUR_MAX     48
#define PD_INSTANT_MAX 40

/* The longest duration: 100 years of 365.25 days, "36525d". */
#define PD_DUR_MAX_MS (36525LL * 86400000LL)

/* The earliest instant, 0001-01-01T00:00:00Z, in microseconds since the epoch. */
#define PD_INSTANT_MIN_US (-62135596800LL * 1000000LL)

/*
 * Parse s into *ms. On failure fill e with code 65 (PD_EX_DATAERR):
 * "invalid duration 'X': expected a number with ms, s, m, h or d", and
 * return -1; or, for a well-formed duration longer than PD_DUR_MAX_MS,
 * "invalid duration 'X': more than 100 years (36525d)" and return -2.
 * Callers that want 64 or 78 copy the message under their own code.
 */
int pd_dur_parse(const char *s, long long *ms, struct pd_err *e);

/*
 * Format ms as the sum of its nonzero parts, largest first: "250ms", "30s",
 * "5m", "1h30m", "2d", "1s500ms"; 0 is "0s" and negatives get a '-'.
 * Truncates to fit n bytes (PD_DUR_MAX always suffices).
 */
void pd_dur_format(long long ms, char *out, size_t n);

/*
 * Parse s into microseconds since 1970-01-01T00:00:00Z. On failure fill e
 * with code 65: "invalid instant 'X': <why>" (a year 0000, or an offset
 * that takes it before year 0001: "out of range 0001 to 9999").
 */
int pd_instant_parse(const char *s, long long *epoch_us, struct pd_err *e);

/*
 * Format as UTC, "2026-03-29T01:30:00Z", with a six-digit fraction only when
 * it is nonzero, "2026-03-29T01:30:00.123456Z". Truncates to fit n bytes
 * (PD_INSTANT_MAX always suffices).
 */
void pd_instant_format(long long epoch_us, char *out, size_t n);

#endif
