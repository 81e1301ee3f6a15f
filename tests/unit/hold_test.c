/*
 * Unit tests for lib/hold, without PostgreSQL: every cell of the holdings'
 * transition tables (stage, start record, fate) against the life cycle
 * written out here a second time, a hole refused with the entry unchanged,
 * and jobs walked through the collection (claimed, ready, started, over,
 * lost, written, failed) with no pool behind it.
 */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hold.h"
#include "jobrun.h"
#include "tap.h"

#define NS PD_HOLD_NSTAGES
#define NE PD_HOLD_NEVENTS

/* Short names, as the diagram in hold.h reads. */
enum {
	N = PD_HOLD_NONE,
	RD = PD_HOLD_READY,
	RL = PD_HOLD_RELEASING,
	RU = PD_HOLD_RUNNING,
	AB = PD_HOLD_ABANDONED,
	FI = PD_HOLD_FINISHED,
	SE = PD_HOLD_SENDING,
	CA = PD_HOLD_CANCELLING,
	X = -1,
};

/* The stage a move leads to: [stage][event], X where there is no move. */
static const int want_stage[NS][NE] = {
    /*   CLAIMED START NO_RUN OVER LOST SEND WRITTEN FAILED REFUSED REF_ALONE DROP CANCEL */
    [N] = {RD, RU, FI, X, X, X, N, N, X, X, X, X},
    [RD] = {X, RU, X, X, N, RL, RD, RD, X, X, X, FI},
    [RL] = {X, X, X, X, X, X, N, RD, X, X, X, X},
    [RU] = {X, X, X, FI, AB, RU, RU, RU, X, X, X, CA},
    [AB] = {X, X, X, FI, X, X, AB, AB, X, X, X, X},
    [FI] = {X, X, X, X, X, SE, FI, FI, X, X, N, X},
    [SE] = {X, X, X, X, X, X, N, FI, SE, SE, N, X},
    [CA] = {X, X, X, FI, AB, CA, CA, CA, X, X, X, CA},
};

/* The start record: what changes it (the rest leave it as it is). */
static int want_start(int r, int ev)
{
	if (r == PD_HOLD_START_RECORDED && ev == PD_HOLD_CLAIMED)
		return PD_HOLD_START_TO_SEND;
	if (r == PD_HOLD_START_TO_SEND && ev == PD_HOLD_SEND)
		return PD_HOLD_START_IN_FLIGHT;
	if (r == PD_HOLD_START_IN_FLIGHT && ev == PD_HOLD_WRITTEN)
		return PD_HOLD_START_RECORDED;
	if (r == PD_HOLD_START_IN_FLIGHT && ev == PD_HOLD_FAILED)
		return PD_HOLD_START_TO_SEND;
	return r;
}

/* The fate: a refused batch of several, then alone, then dropped. */
static int want_fate(int f, int ev)
{
	if (ev == PD_HOLD_REFUSED)
		return PD_HOLD_FATE_ALONE;
	if (ev == PD_HOLD_REFUSED_ALONE)
		return f == PD_HOLD_FATE_FAILURE ? PD_HOLD_FATE_DROP : PD_HOLD_FATE_FAILURE;
	return f;
}

static void test_tables(void)
{
	char name[160];
	int bad = 0;

	for (int s = 0; s < NS; s++)
		for (int ev = 0; ev < NE; ev++) {
			snprintf(name, sizeof(name), "stage %s on %s", pd_hold_stage_name(s),
				 pd_hold_event_name(ev));
			bad += pd_hold_next(s, ev) != want_stage[s][ev];
			is_int(pd_hold_next(s, ev), want_stage[s][ev], name);
		}
	for (int r = 0; r < PD_HOLD_NSTARTS; r++)
		for (int ev = 0; ev < NE; ev++) {
			snprintf(name, sizeof(name), "start record %d on %s", r,
				 pd_hold_event_name(ev));
			is_int(pd_hold_next_start(r, ev), want_start(r, ev), name);
		}
	for (int f = 0; f < PD_HOLD_NFATES; f++)
		for (int ev = 0; ev < NE; ev++) {
			snprintf(name, sizeof(name), "fate %d on %s", f, pd_hold_event_name(ev));
			is_int(pd_hold_next_fate(f, ev), want_fate(f, ev), name);
		}
	is_int(bad, 0, "no stage cell differs from the life cycle");
	is_int(pd_hold_next(NS, 0), -1, "a stage out of range has no move");
	is_int(pd_hold_next(0, NE), -1, "an event out of range has no move");
	is_str(pd_hold_stage_name(PD_HOLD_SENDING), "sending", "stage names");
	is_str(pd_hold_event_name(PD_HOLD_DROP), "drop", "event names");
	is_str(pd_hold_stage_name(PD_HOLD_CANCELLING), "cancelling", "the cancel's stage name");
	is_str(pd_hold_event_name(PD_HOLD_CANCEL), "cancel", "and event name");
}

static void test_hole(void)
{
	struct pd_hold x;

	memset(&x, 0, sizeof(x));
	x.stage = PD_HOLD_FINISHED;
	x.start = PD_HOLD_START_TO_SEND;
	is_int(pd_hold_move(&x, PD_HOLD_START), -1, "FINISHED cannot START");
	is_int(x.stage, PD_HOLD_FINISHED, "the refused move left the stage");
	is_int(x.start, PD_HOLD_START_TO_SEND, "and the start record");
	is_int(pd_hold_move(&x, PD_HOLD_SEND), 0, "FINISHED is SENT");
	is_int(x.stage, PD_HOLD_SENDING, "SENDING");
	is_int(x.start, PD_HOLD_START_IN_FLIGHT, "its start with it");
}

static struct pd_claimed job(long long id, const char *type)
{
	struct pd_claimed c;

	memset(&c, 0, sizeof(c));
	c.id = id;
	c.token = 100 + id;
	c.attempt = 1;
	c.timeout_ms = -1;
	c.type = pd_xstrdup(type);
	c.payload = pd_xstrdup("{}");
	return c;
}

static void test_walk(void)
{
	static const struct pd_handler hv[] = {{(char *)"a", (char *)"true", NULL, -1, {0}, 0},
					       {(char *)"s", (char *)"cat", NULL, -1, {0}, 0}};
	static const int stream_of[] = {-1, 0};
	struct pd_holdings hs;
	struct pd_claimed c1 = job(1, "a"), c2 = job(2, "s"), c3 = job(3, "a");
	struct pd_pool_exit ex;
	struct pd_hold x, *r;

	pd_holdings_init(&hs, 2);
	is_int(pd_holdings_nfree(&hs), 2, "two runs free");

	pd_hold_claimed(&x, &c1, hv, 2, stream_of, NULL, 0);
	ok(x.h == &hv[0], "the handler for its type");
	is_int(x.stream, -1, "a process");
	r = pd_holdings_ready_add(&hs, &x);
	is_int(r->stage, PD_HOLD_READY, "CLAIMED: READY");
	is_int(r->start, PD_HOLD_START_TO_SEND, "LEASED: its start to send");

	pd_hold_claimed(&x, &c2, hv, 2, stream_of, NULL, 0);
	is_int(x.stream, 0, "a stream job");
	r = pd_holdings_start(&hs, &x, 1);
	is_int(r->stage, PD_HOLD_RUNNING, "claimed straight to RUNNING");
	is_int(r->start, PD_HOLD_START_RECORDED, "its start recorded by the claim");
	is_int(pd_holdings_free_run(&hs), 0, "run 0 is free");

	r = pd_holdings_start(&hs, &hs.ready[0], 0);
	pd_holdings_ready_drop(&hs, 0); /* the zeroed place the start left */
	is_int(r->stage, PD_HOLD_RUNNING, "the ready job RUNNING");
	is_int(r->start, PD_HOLD_START_TO_SEND, "its start still to send");
	is_int(hs.nready, 0, "no ready job left");
	is_int(pd_holdings_nfree(&hs), 0, "no run free");

	pd_holdings_lost(&hs, 2, c2.token);
	is_int(hs.run[1].stage, PD_HOLD_ABANDONED, "a stream job's lost lease: ABANDONED");

	memset(&ex, 0, sizeof(ex));
	ex.cls = PD_EXIT_OK;
	pd_buf_puts(&ex.out, "not json");
	r = pd_holdings_over(&hs, 0, &ex);
	is_int(r->stage, PD_HOLD_FINISHED, "OVER: FINISHED");
	is_int(r->out_is_text, 1, "text that is not JSON is judged a JSON string");
	is_str(r->exit.out.data, "\"not json\"", "quoted");
	is_int(hs.run[0].stage, PD_HOLD_NONE, "its run free");
	memset(&ex, 0, sizeof(ex));
	ex.cls = PD_EXIT_LEASE_LOST;
	pd_holdings_over(&hs, 1, &ex);
	is_int(hs.nfin, 2, "two finished");
	ok(pd_holdings_unsent(&hs), "outcomes unsent");

	pd_hold_move(&hs.fin[0], PD_HOLD_SEND);
	pd_holdings_apply(&hs, PD_HOLD_FAILED);
	is_int(hs.fin[0].stage, PD_HOLD_FINISHED, "FAILED: back to FINISHED");
	is_int(hs.fin[0].start, PD_HOLD_START_TO_SEND, "its start to send again");
	pd_hold_move(&hs.fin[0], PD_HOLD_SEND);
	pd_holdings_apply(&hs, PD_HOLD_WRITTEN);
	is_int(hs.nfin, 1, "WRITTEN: the one sent is gone");
	is_int(hs.fin[0].job.id, 2, "the other stays");
	pd_holdings_fin_drop(&hs, 0);
	is_int(hs.nfin, 0, "DROP: gone");

	pd_hold_claimed(&x, &c3, hv, 2, stream_of, NULL, 0);
	pd_holdings_ready_add(&hs, &x);
	pd_holdings_lost(&hs, 3, c3.token);
	is_int(hs.nready, 0, "a ready job's lost lease: dropped");
	pd_holdings_release(&hs);
}

/* An operator's cancel (CANCEL, from the heartbeat): running, ready, and what follows. */
static void test_cancel(void)
{
	static const struct pd_handler hv[] = {{(char *)"a", (char *)"true", NULL, -1, {0}, 0},
					       {(char *)"s", (char *)"cat", NULL, -1, {0}, 0}};
	static const int stream_of[] = {-1, 0};
	struct pd_holdings hs;
	struct pd_claimed c1 = job(1, "a"), c2 = job(2, "s"), c3 = job(3, "a");
	struct pd_pool_exit ex;
	struct pd_hold x, *r;

	pd_holdings_init(&hs, 2);
	pd_hold_claimed(&x, &c1, hv, 2, stream_of, NULL, 0);
	pd_holdings_start(&hs, &x, 0);
	pd_hold_claimed(&x, &c2, hv, 2, stream_of, NULL, 0);
	pd_holdings_start(&hs, &x, 1);
	pd_hold_claimed(&x, &c3, hv, 2, stream_of, NULL, 0);
	pd_holdings_ready_add(&hs, &x);

	pd_holdings_cancel(&hs, 1, c1.token);
	is_int(hs.run[0].stage, PD_HOLD_CANCELLING, "a running process: CANCELLING");
	pd_holdings_cancel(&hs, 1, c1.token);
	is_int(hs.run[0].stage, PD_HOLD_CANCELLING, "asked again: still CANCELLING");
	pd_holdings_apply(&hs, PD_HOLD_WRITTEN);
	is_int(hs.run[0].stage, PD_HOLD_CANCELLING, "a batch written leaves it CANCELLING");
	memset(&ex, 0, sizeof(ex));
	ex.cls = PD_EXIT_CANCELLED;
	r = pd_holdings_over(&hs, 0, &ex);
	is_int(r->stage, PD_HOLD_FINISHED, "OVER: FINISHED");
	is_int(r->exit.cls, PD_EXIT_CANCELLED, "its exit CANCELLED");
	is_int(pd_exit_verdict(r->exit.cls), PD_VERDICT_CANCEL, "verdict CANCEL");
	is_str(pd_exit_class_name(r->exit.cls), "cancelled", "the attempt's outcome: cancelled");

	pd_holdings_cancel(&hs, 2, c2.token);
	is_int(hs.run[1].stage, PD_HOLD_CANCELLING, "a stream job: CANCELLING");
	pd_holdings_lost(&hs, 2, c2.token);
	is_int(hs.run[1].stage, PD_HOLD_ABANDONED, "its lease lost meanwhile: ABANDONED");
	pd_holdings_cancel(&hs, 2, c2.token);
	is_int(hs.run[1].stage, PD_HOLD_ABANDONED, "a cancel of an abandoned job: nothing");

	pd_holdings_cancel(&hs, 3, c3.token);
	is_int(hs.nready, 0, "a ready job cancelled leaves the ready list");
	is_int(hs.nfin, 2, "for the finished one");
	is_int(hs.fin[1].job.id, 3, "job 3");
	is_int(hs.fin[1].stage, PD_HOLD_FINISHED, "FINISHED, never started");
	is_int(hs.fin[1].exit.cls, PD_EXIT_CANCELLED, "CANCELLED");
	ok(hs.fin[1].exit.started_us == 0, "with no start time");

	pd_holdings_cancel(&hs, 9, 999);
	is_int(hs.nfin, 2, "a token not held: nothing");
	pd_holdings_release(&hs);
}

/*
 * The ready list as a window (pd_holdings_ready_skip): the first entries
 * leave without the rest being copied, and appends after any mix of skips
 * keep the order, across the window's return to the start and its growth.
 */
static void test_ready_window(void)
{
	static const struct pd_handler hv[] = {{(char *)"a", (char *)"true", NULL, -1, {0}, 0}};
	static const int stream_of[] = {-1};
	struct pd_holdings hs;
	long long next = 1, first = 1; /* ids appended: [first, next) are ready */
	int order = 1, most = 0;

	pd_holdings_init(&hs, 1);
	for (int round = 0; round < 40; round++) {
		int add = 1 + round * 7 % 23, skip = round * 5 % 19;
		struct pd_hold *before;

		for (int i = 0; i < add; i++) {
			struct pd_claimed c = job(next++, "a");
			struct pd_hold x;

			pd_hold_claimed(&x, &c, hv, 1, stream_of, NULL, 0);
			pd_holdings_ready_add(&hs, &x);
		}
		most = hs.nready > most ? hs.nready : most;
		if (skip > hs.nready)
			skip = hs.nready;
		before = hs.ready + skip;
		for (int k = 0; k < skip; k++) /* what a start does: moved out, the place zeroed */
			pd_jobrun_clear(&hs.ready[k].job);
		pd_holdings_ready_skip(&hs, skip);
		first += skip;
		order &= hs.nready == 0 || hs.ready == before; /* nothing copied */
		for (int k = 0; k < hs.nready; k++)
			order &= hs.ready[k].job.id == first + k;
	}
	ok(order, "skips move the window only; the ready ones stay in order");
	is_int(hs.nready, next - first, "as many ready as appended and not skipped");
	/* grown only when less than half of it was free before the window */
	ok(hs.capready <= (most < 16 ? 64 : 4 * most), "the room stays within 4x the most ready");
	for (int k = 0; k < hs.nready; k++) /* moved out, as a start does */
		pd_jobrun_clear(&hs.ready[k].job);
	pd_holdings_ready_skip(&hs, hs.nready);
	ok(hs.ready == hs.ready_base, "empty: the window back at the start");
	pd_holdings_release(&hs);
}

int main(void)
{
	test_tables();
	test_hole();
	test_walk();
	test_cancel();
	test_ready_window();
	return done_testing();
}
