/*
 * libFuzzer target for lib/cron and lib/tz: an expression parsed, then its
 * next fire searched in a zone and from an instant taken from the input.
 *
 *   input: ZONE-BYTE, 8 bytes of instant, then the expression
 *
 * The zone byte picks one of a list of real zones (gaps and overlaps of every
 * kind: 30-minute, negative, a skipped day) or, past the list, takes the
 * expression's first line as a zone name (anything: unknown names, paths,
 * files of the tz directory that are not TZif). The instant lies anywhere in
 * the years 0001 to 9999, or in 2020-2040.
 *
 *   make fuzz FUZZ_SECONDS=60       (or build-fuzz/fuzz/cron_fuzz DIR)
 *
 * Checks: failures are code 65 (or 78 for an unreadable zone file) with a
 * one-line message; a fire is strictly after the instant, is the same fire
 * from any instant between the two (none is skipped), matches every field
 * of the expression at its wall time unless pd_cron_dst says it was shifted
 * past a gap, and formats as a wall time.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "err.h"
#include "tz.h"
#include "fuzz.h"

static const char *const zones[] = {
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Sao_Paulo",
    "Pacific/Chatham",
    "Africa/Casablanca",
    "Europe/Dublin",
    "Antarctica/Troll",
    "America/St_Johns",
    "Asia/Kathmandu",
    "Pacific/Apia",
    "Pacific/Kiritimati",
    "EST5EDT",
    "Etc/GMT-14",
    "America/Santiago",
    "Europe/London",
    "Asia/Tehran",
    "Australia/Sydney",
};
#define NZONES (int)(sizeof(zones) / sizeof(zones[0]))

static void check_err(const struct pd_err *e)
{
	CHECK(e->code == PD_EX_DATAERR || e->code == PD_EX_CONFIG);
	CHECK(e->msg[0] != '\0' && strchr(e->msg, '\n') == NULL);
}

/* next, a fire of c in zone z, matches c at its wall time. */
static void check_match(const struct pd_cron *c, const char *zone, long long next)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_tz_state st;
	struct pd_tz z;
	int64_t L, day, y;
	int mon, dom, sod, dom_ok, dow_ok;

	if (next > PD_MAX_T || pd_cron_dst(c, zone, next) == PD_DST_GAP)
		return;
	CHECK(pd_tz_load(&z, zone, &e) == 0);
	pd_tz_lookup(&z, next, &st);
	pd_tz_free(&z);
	L = next + st.off;
	day = pd_floordiv(L, PD_DAY);
	sod = (int)(L - day * PD_DAY);
	pd_civil_from_days(day, &y, &mon, &dom);
	CHECK(sod % 60 == 0);
	CHECK((c->minute >> (sod % 3600 / 60)) & 1);
	CHECK((c->hour >> (sod / 3600)) & 1);
	CHECK((c->month >> mon) & 1);
	dom_ok = (c->dom >> dom) & 1;
	dow_ok = (c->dow >> pd_weekday(day)) & 1;
	CHECK(c->dom_star || c->dow_star ? dom_ok && dow_ok : dom_ok || dow_ok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_cron c;
	char *expr, *zone = NULL, local[64];
	const char *z;
	uint64_t u;
	long long after, next = 0, again = 0;

	if (size < 9)
		return 0;
	memcpy(&u, data + 1, 8);
	if (u & 1)
		after = PD_MIN_T + (long long)((u >> 1) % (uint64_t)(PD_MAX_T - PD_MIN_T + 1));
	else
		after = 1577836800LL + (long long)((u >> 1) % (20ULL * 366 * 86400));
	expr = malloc(size - 9 + 1);
	memcpy(expr, data + 9, size - 9);
	expr[size - 9] = '\0';
	if (data[0] % (NZONES + 1) < NZONES) {
		z = zones[data[0] % (NZONES + 1)];
	} else {
		char *nl = strchr(expr, '\n');
		size_t n = nl ? (size_t)(nl - expr) : strlen(expr);

		zone = strndup(expr, n);
		memmove(expr, expr + n + (nl != NULL), strlen(expr + n + (nl != NULL)) + 1);
		z = zone;
	}

	if (pd_cron_parse(&c, expr, &e) < 0) {
		check_err(&e);
		CHECK(strncmp(e.msg, "invalid cron expression '", 25) == 0);
	} else if (pd_cron_next(&c, z, after, &next, &e) < 0) {
		check_err(&e);
	} else {
		CHECK(next > after);
		check_match(&c, z, next);
		/* (Beyond year 9999 a fire is no instant to search from.) */
		if (next <= PD_MAX_T) {
			/* From any instant before it, no fire comes first. */
			CHECK(pd_cron_next(&c, z, next - 1, &again, &e) == 0 && again == next);
			CHECK(pd_cron_next(&c, z, after + (next - after) / 2, &again, &e) == 0);
			CHECK(again == next);
			CHECK(pd_cron_local(next, z, local, sizeof(local)) == 0);
			CHECK(pd_cron_next(&c, z, next, &again, &e) == 0 && again > next);
		}
	}
	free(zone);
	free(expr);
	return 0;
}
