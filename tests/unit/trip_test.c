/*
 * Unit tests for lib/trip, without PostgreSQL: round trips built from
 * holdings (start records due, outcomes recording their start, lease_lost
 * records, the ready jobs' release once not serving, the leases to
 * heartbeat, the claim), the entries they move, the arrays the statements
 * take, one outcome at a time after a refused batch, and what written,
 * failed and refused batches do to the holdings.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "err.h"
#include "hold.h"
#include "tap.h"
#include "trip.h"

static const struct pd_handler hv[] = {{(char *)"a", (char *)"true", NULL, -1, {0}, 0},
				       {(char *)"s", (char *)"cat", NULL, -1, {0}, 0}};
static const int stream_of[] = {-1, 0};

static struct pd_claimed job(long long id, const char *type)
{
	struct pd_claimed c;

	memset(&c, 0, sizeof(c));
	c.id = id;
	c.token = 100 + id;
	c.attempt = 2;
	c.timeout_ms = -1;
	c.type = pd_xstrdup(type);
	return c;
}

/* Job id of type in run i, or (i < 0) ready; its start to send when leased. */
static struct pd_hold *put(struct pd_holdings *hs, long long id, const char *type, int i,
			   int leased)
{
	struct pd_claimed c = job(id, type);
	struct pd_hold x;

	pd_hold_claimed(&x, &c, hv, 2, stream_of, NULL, 0);
	if (i < 0)
		return pd_holdings_ready_add(hs, &x);
	if (leased)
		pd_hold_move(&x, PD_HOLD_CLAIMED);
	return pd_holdings_start(hs, &x, i);
}

/* Run i's handler over with class cls, started at started_us. */
static void over(struct pd_holdings *hs, int i, enum pd_exit_class cls, long long started_us)
{
	struct pd_pool_exit ex;

	memset(&ex, 0, sizeof(ex));
	ex.cls = cls;
	ex.exit_code = cls == PD_EXIT_OK ? 0 : -1;
	ex.started_us = started_us;
	pd_holdings_over(hs, i, &ex);
}

static const struct pd_trip_item *nth(const struct pd_trip *t, enum pd_trip_kind k, int n)
{
	for (int i = 0; i < t->n; i++)
		if (t->items[i].kind == k && n-- == 0)
			return &t->items[i];
	return NULL;
}

static void test_build(void)
{
	struct pd_holdings hs;
	struct pd_trip t;
	struct pd_rng rng;
	struct pd_retry_cfg retry = {1000, 60000};
	struct pd_buf b = PD_BUF_INIT;
	long long now = pd_now_us();
	struct pd_trip_ask a = {.now_us = now + 1000000,
				.serving = 1,
				.beat = 1,
				.claim = 3,
				.claim_start = 1,
				.rtt_us = 5000000,
				.rng = &rng,
				.retry = &retry};

	pd_rng_seed(&rng, 1);
	memset(&t, 0, sizeof(t));
	pd_holdings_init(&hs, 4);
	put(&hs, 1, "a", 0, 1); /* a process started from LEASED: its start due */
	put(&hs, 2, "s", 1, 1); /* a stream job: its start waits a round trip */
	put(&hs, 3, "a", 2, 1); /* over before its start was written */
	over(&hs, 2, PD_EXIT_OK, now - 3000000);
	put(&hs, 4, "a", 3, 0); /* its lease lost */
	over(&hs, 3, PD_EXIT_LEASE_LOST, now - 2000000);
	put(&hs, 5, "a", -1, 0); /* ready */

	is_int(pd_trip_build(&t, &hs, &a), 1, "something to send");
	is_int(t.n, 6, "six items");
	is_int(t.nstart, 1, "one start record");
	is_int(nth(&t, PD_TRIP_START, 0)->id, 1, "the process's, at once");
	is_int(hs.run[0].start, PD_HOLD_START_IN_FLIGHT, "its start in flight");
	is_int(hs.run[1].start, PD_HOLD_START_TO_SEND, "the stream job's not yet");
	is_int(t.noutcomes, 1, "one outcome");
	is_int(nth(&t, PD_TRIP_OUTCOME, 0)->out.id, 3, "job 3's");
	is_str(nth(&t, PD_TRIP_OUTCOME, 0)->out.o.outcome, "succeeded", "succeeded");
	ok(nth(&t, PD_TRIP_OUTCOME, 0)->out.o.started_ago_ms >= 3000, "it records its start");
	is_int(nth(&t, PD_TRIP_OUTCOME, 0)->fin, 0, "its entry");
	is_int(t.nlost, 1, "one lease_lost record");
	is_int(nth(&t, PD_TRIP_LOST, 0)->id, 4, "job 4's");
	is_int(nth(&t, PD_TRIP_LOST, 0)->attempt, 2, "with its attempt");
	ok(nth(&t, PD_TRIP_LOST, 0)->ago_ms >= 2000, "and how long ago it started");
	is_int(t.nbeat, 3, "three leases to extend: two runs and the ready job");
	is_int(nth(&t, PD_TRIP_BEAT, 2)->id, 5, "the ready job's last");
	is_int(t.claim, 3, "the claim asked");
	is_int(t.claim_start, 1, "straight to RUNNING");
	is_int(hs.fin[0].stage, PD_HOLD_SENDING, "the outcome SENDING");
	is_int(hs.fin[1].stage, PD_HOLD_SENDING, "the lease_lost record SENDING");
	is_int(t.nrel, 0, "nothing released while serving");

	pd_trip_array(&b, &t, PD_TRIP_BEAT, PD_TRIP_ID);
	is_str(b.data, "{1,2,5}", "the beat ids as an array");
	pd_buf_reset(&b);
	pd_trip_array(&b, &t, PD_TRIP_LOST, PD_TRIP_TOKEN);
	is_str(b.data, "{104}", "the lost tokens");
	pd_buf_reset(&b);
	pd_trip_array(&b, &t, PD_TRIP_START, PD_TRIP_TOKEN);
	is_str(b.data, "{101}", "the start tokens");

	{
		long long due = -1;

		pd_trip_written(&t, &hs, &due);
		is_int(hs.nfin, 0, "written: the finished jobs gone");
		is_int(hs.run[0].start, PD_HOLD_START_RECORDED, "the start recorded");
		is_int(due, -1, "nothing due");
	}

	/* Not serving: the ready job released, not heartbeat. */
	a.serving = 0;
	a.claim = 0;
	a.now_us = now; /* the stream job's start not due */
	is_int(pd_trip_build(&t, &hs, &a), 1, "a release to send");
	is_int(t.nrel, 1, "one release");
	is_int(nth(&t, PD_TRIP_OUTCOME, 0)->fin, -1, "a release has no finished entry");
	is_str(nth(&t, PD_TRIP_OUTCOME, 0)->out.o.outcome, "released", "given back, released");
	is_int(hs.ready[0].stage, PD_HOLD_RELEASING, "RELEASING");
	is_int(t.nbeat, 2, "the released job not heartbeat");
	pd_holdings_apply(&hs, PD_HOLD_FAILED);
	is_int(hs.ready[0].stage, PD_HOLD_READY, "failed: READY again");
	is_int(pd_trip_build(&t, &hs, &a), 1, "again");
	{
		long long due = -1;

		pd_trip_written(&t, &hs, &due);
	}
	is_int(hs.nready, 0, "written: released");

	/* Nothing at all: no trip. */
	a.beat = 0;
	is_int(pd_trip_build(&t, &hs, &a), 0, "nothing to send");
	pd_buf_release(&b);
	pd_trip_release(&t);
	pd_holdings_release(&hs);
}

static void test_refused(void)
{
	struct pd_holdings hs;
	struct pd_trip t;
	struct pd_rng rng;
	struct pd_retry_cfg retry = {1000, 60000};
	struct pd_err e = PD_ERR_INIT, down = PD_ERR_INIT;
	struct pd_trip_ask a = {
	    .now_us = pd_now_us(), .serving = 1, .claim = 2, .rng = &rng, .retry = &retry};

	pd_rng_seed(&rng, 1);
	memset(&t, 0, sizeof(t));
	pd_holdings_init(&hs, 2);
	put(&hs, 1, "a", 0, 0);
	put(&hs, 2, "a", 1, 0);
	over(&hs, 0, PD_EXIT_OK, a.now_us);
	over(&hs, 1, PD_EXIT_FAILED, a.now_us);
	pd_trip_build(&t, &hs, &a);
	is_int(t.noutcomes, 2, "two outcomes in one batch");
	pd_errf(&down, PD_EX_UNAVAILABLE, "down");
	is_int(pd_trip_refused(&t, &hs, &down), 0, "a connection lost is no refusal");
	is_int(hs.fin[0].stage, PD_HOLD_SENDING, "nothing moved");
	pd_errf(&e, PD_EX_DATAERR, "database error: bad");
	memcpy(e.sqlstate, "22P02", 6);
	is_int(pd_trip_refused(&t, &hs, &e), 1, "class 22 refuses the batch");
	is_int(hs.fin[0].fate, PD_HOLD_FATE_ALONE, "each outcome alone");
	is_int(hs.fin[1].fate, PD_HOLD_FATE_ALONE, "both");
	is_int(hs.fin[0].stage, PD_HOLD_FINISHED, "to send again");

	pd_trip_build(&t, &hs, &a);
	is_int(t.noutcomes, 1, "alone: one outcome");
	is_int(t.claim, 0, "and no claim");
	is_int(pd_trip_refused(&t, &hs, &e), 1, "refused alone");
	is_int(hs.fin[0].fate, PD_HOLD_FATE_FAILURE, "written as a failure");
	is_str(hs.fin[0].exit.error.data, "outcome cannot be stored: bad", "with the reason");

	pd_trip_build(&t, &hs, &a);
	is_str(nth(&t, PD_TRIP_OUTCOME, 0)->out.o.outcome, "failed", "a failure");
	ok(nth(&t, PD_TRIP_OUTCOME, 0)->out.o.stderr_tail == NULL, "without stderr");
	is_int(pd_trip_refused(&t, &hs, &e), 1, "refused as a failure too");
	is_int(hs.nfin, 1, "dropped");
	is_int(hs.fin[0].job.id, 2, "the other one left");
	pd_trip_release(&t);
	pd_holdings_release(&hs);
}

int main(void)
{
	test_build();
	test_refused();
	return done_testing();
}
