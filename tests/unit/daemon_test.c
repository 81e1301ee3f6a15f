/*
 * Unit tests for lib/daemon without a database: the poll timeout of a
 * deadline, on_tick running at (never before) each absolute deadline and
 * not in between, SIGTERM/SIGINT counted into on_stop, SIGHUP to on_reload,
 * SIGCHLD to on_child, and the loop ending when finished says so.
 */
#include <sys/wait.h>

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "err.h"
#include "tap.h"

#define NDEADLINES 4

struct engine {
	long long due[NDEADLINES]; /* absolute monotonic ms */
	long long ticked_at[NDEADLINES];
	int next;  /* the deadline waited for */
	int early; /* ticks that found their deadline not yet come */
	int ticks;
	int stops[3]; /* count seen by on_stop, by call */
	int nstops;
	int reloads;
	int children;
	int raise_step;	      /* which signal to raise on the next tick */
	long long first_pass; /* the loop pass of on_period's first run */
};

static int deadline_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct engine *g = d->ctx;

	(void)e;
	g->ticks++;
	if (g->next < NDEADLINES && now >= g->due[g->next])
		g->ticked_at[g->next++] = now;
	return 0;
}

static long long deadline_next(struct pd_daemon *d)
{
	struct engine *g = d->ctx;

	return g->next < NDEADLINES ? g->due[g->next] : -1;
}

static int deadline_done(struct pd_daemon *d)
{
	struct engine *g = d->ctx;

	return g->next == NDEADLINES;
}

static void test_deadlines(void)
{
	static const struct pd_daemon_ops ops = {.kind = {"test"},
						 .on_tick = deadline_tick,
						 .deadline = deadline_next,
						 .finished = deadline_done};
	struct engine g;
	struct pd_daemon d;
	struct pd_err e = PD_ERR_INIT;
	long long start, late = 0;
	int order = 1;
	char line[96];

	memset(&g, 0, sizeof(g));
	pd_daemon_init(&d, &ops, NULL, &g, NULL, NULL);
	ok(pd_daemon_open(&d, &e) == 0, "open without a database");
	start = pd_now_ms();
	for (int i = 0; i < NDEADLINES; i++)
		g.due[i] = start + 40 * (i + 1);
	ok(pd_daemon_run(&d, &e) == 0, "run to the last deadline");
	for (int i = 0; i < NDEADLINES; i++) {
		if (g.ticked_at[i] - g.due[i] > late)
			late = g.ticked_at[i] - g.due[i];
		order &= g.ticked_at[i] >= g.due[i];
	}
	ok(order, "every deadline was acted on at or after its time, never before");
	/* How late is reported, never checked: make bench reads this line. */
	snprintf(line, sizeof(line), "timing: the latest deadline acted on %lld ms after it", late);
	diag(line);
	ok(g.ticks <= NDEADLINES + 3, "no busy loop: a pass per deadline (and a first one)");
	pd_daemon_close(&d);
}

static int signal_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct engine *g = d->ctx;
	pid_t pid;

	(void)now;
	(void)e;
	switch (g->raise_step++) {
	case 0:
		raise(SIGHUP);
		break;
	case 1:
		pid = fork();
		if (pid == 0)
			_exit(0);
		break;
	case 2:
		raise(SIGTERM);
		break;
	case 3:
		raise(SIGINT);
		break;
	default:
		break;
	}
	return 0;
}

static void on_stop(struct pd_daemon *d, int sig, int count)
{
	struct engine *g = d->ctx;

	(void)sig;
	if (g->nstops < 3)
		g->stops[g->nstops++] = count;
}

static void on_reload(struct pd_daemon *d)
{
	struct engine *g = d->ctx;

	g->reloads++;
}

static void on_child(struct pd_daemon *d)
{
	struct engine *g = d->ctx;

	while (waitpid(-1, NULL, WNOHANG) > 0)
		g->children++;
}

static int two_stops(struct pd_daemon *d)
{
	return d->stops >= 2;
}

static int period_run(struct pd_daemon *d, struct pd_err *e)
{
	struct engine *g = d->ctx;

	(void)e;
	if (g->next == 0)
		g->first_pass = d->passes;
	if (g->next < NDEADLINES)
		g->ticked_at[g->next++] = pd_now_ms();
	return 0;
}

static int periods_done(struct pd_daemon *d)
{
	struct engine *g = d->ctx;

	return g->next == NDEADLINES;
}

/* on_period: at once after open, then every period_ms, never sooner. */
static void test_period(void)
{
	static const struct pd_daemon_ops ops = {
	    .kind = {"test"}, .on_period = period_run, .finished = periods_done};
	struct engine g;
	struct pd_daemon d;
	struct pd_err e = PD_ERR_INIT;
	int early = 0;

	memset(&g, 0, sizeof(g));
	pd_daemon_init(&d, &ops, NULL, &g, NULL, NULL);
	d.period_ms = 30;
	ok(pd_daemon_open(&d, &e) == 0, "period: open without a database");
	ok(pd_daemon_run(&d, &e) == 0, "period: run until the last period");
	is_int((int)g.first_pass, 1,
	       "period: the first run in the loop's first pass, before any wait");
	for (int i = 1; i < NDEADLINES; i++)
		early += g.ticked_at[i] - g.ticked_at[i - 1] < 30;
	is_int(early, 0, "period: no run sooner than period_ms after the one before");
	ok(d.passes < 4 * NDEADLINES, "period: the loop slept between runs");
	pd_daemon_close(&d);
}

static void test_signals(void)
{
	static const struct pd_daemon_ops ops = {.on_tick = signal_tick,
						 .on_stop = on_stop,
						 .on_reload = on_reload,
						 .on_child = on_child,
						 .finished = two_stops};
	static const struct pd_daemon_ops first_stop = {.on_tick = signal_tick};
	struct engine g;
	struct pd_daemon d;
	struct pd_err e = PD_ERR_INIT;

	memset(&g, 0, sizeof(g));
	pd_daemon_init(&d, &ops, NULL, &g, NULL, NULL);
	ok(pd_daemon_open(&d, &e) == 0, "open");
	ok(pd_daemon_run(&d, &e) == 0, "run until two stop signals");
	is_int(g.reloads, 1, "SIGHUP: on_reload once");
	is_int(g.children, 1, "SIGCHLD: on_child collected the child");
	is_int(g.nstops, 2, "SIGTERM then SIGINT: on_stop twice");
	is_int(g.stops[0], 1, "the first stop counts 1");
	is_int(g.stops[1], 2, "the second counts 2");
	pd_daemon_close(&d);

	/* Without finished, the loop ends at the first stop signal. */
	memset(&g, 0, sizeof(g));
	g.raise_step = 2;
	d.ops = &first_stop;
	ok(pd_daemon_open(&d, &e) == 0, "open again");
	ok(pd_daemon_run(&d, &e) == 0 && d.stops == 1, "no finished hook: ends at SIGTERM");
	pd_daemon_close(&d);
}

int main(void)
{
	is_int(pd_daemon_timeout(-1, 100), -1, "no deadline: wait for an event");
	is_int(pd_daemon_timeout(90, 100), 0, "a past deadline: do not wait");
	is_int(pd_daemon_timeout(100, 100), 0, "a deadline now: do not wait");
	is_int(pd_daemon_timeout(350, 100), 250, "the ms left");
	is_int(pd_daemon_timeout(100 + (long long)INT_MAX * 4, 100), INT_MAX, "capped at INT_MAX");
	is_int((int)pd_idle_poll(0, 1000, 1), 1000, "idle poll: the poll interval first");
	is_int((int)pd_idle_poll(1000, 1000, 1), 2000, "idle poll: doubles after an empty claim");
	is_int((int)pd_idle_poll(2000, 1000, 1), 4000, "idle poll: up to four times");
	is_int((int)pd_idle_poll(4000, 1000, 1), 4000, "idle poll: no further");
	is_int((int)pd_idle_poll(3000, 1000, 1), 4000, "idle poll: capped, not past the cap");
	is_int((int)pd_idle_poll(4000, 1000, 0), 1000, "idle poll: work found: the poll interval");
	is_int((int)pd_idle_poll(4000, 500, 1), 2000,
	       "idle poll: a lower poll interval lowers the cap");
	test_deadlines();
	test_signals();
	test_period();
	return done_testing();
}
