/*
 * worksync: the worker's round trips (lib/worker-internal.h). What the
 * holdings (lib/hold) have to write goes out as one trip (lib/trip) while
 * the loop goes on; what comes back moves them: outcomes written, leases
 * found lost, jobs claimed held or started. Jobs claimed ahead of a free
 * run wait LEASED (ready jobs, see struct worker), else a claim goes
 * straight to RUNNING.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "clock.h"
#include "jobs.h"
#include "log.h"
#include "reap.h"
#include "worker-internal.h"

/* A moving average with weight 1/4 for the new sample; 0 means none yet. */
static void average(long long *avg, long long sample)
{
	*avg = *avg == 0 ? sample : (3 * *avg + sample) / 4;
}

/* Run i's handler is over with exit x (taken): its job to the finished list, the run free. */
static void run_over(struct worker *w, int i, const struct pd_pool_exit *x)
{
	enum pd_exit_class cls = x->cls;
	struct pd_hold *f = pd_holdings_over(&w->hs, i, x);

	w->d.idle = 0; /* its outcome may make work runnable (dependencies, retries) */
	if (cls == PD_EXIT_OK || cls == PD_EXIT_FAILED || cls == PD_EXIT_TERMINAL) {
		w->run_sum += f->exit.ran_us > 0 ? f->exit.ran_us : 1;
		w->run_n++;
	}
}

/* Move the jobs of DONE pool slots and the stream handlers' outcomes to the finished list. */
static void harvest(struct worker *w)
{
	struct pd_pool_exit x;
	int tag;

	for (int i = 0; i < w->pool.size; i++) {
		if (w->pool.slots[i].state != PD_SLOT_DONE)
			continue;
		pd_pool_take(&w->pool, i, &x);
		run_over(w, i, &x);
	}
	for (int k = 0; k < w->nstreams; k++)
		while (pd_stream_take(&w->streams[k], &tag, &x))
			run_over(w, tag, &x);
}

/*
 * What the batch and the prefetch depth are sized from (lib/batch), the
 * runs over since the last batch sent averaged in first.
 */
/* lib/batch's inputs from w's configuration and its averages as they stand. */
static struct pd_batch_in batch_in_now(const struct worker *w)
{
	return (struct pd_batch_in){.conc = w->cfg->engine.concurrency,
				    .floor = w->cfg->engine.batch,
				    .cap = w->cfg->engine.batch_max,
				    .rtt_us = w->rtt_us,
				    .run_us = w->run_us,
				    .stream = w->nstreams > 0,
				    .pause_us = w->nstreams > 0 ? 0 : PD_BATCH_PAUSE_MS * 1000LL};
}

/* The same, after the runs measured since the last call are averaged in. */
static struct pd_batch_in batch_in(struct worker *w)
{
	if (w->run_n > 0) {
		average(&w->run_us, w->run_sum / w->run_n);
		w->run_sum = w->run_n = 0;
	}
	return batch_in_now(w);
}

/* Held job x can start in a free run now: its stream handler (if any) takes it. */
static int can_start(const struct worker *w, const struct pd_hold *x)
{
	return x->stream < 0 || pd_stream_can_take(&w->streams[x->stream], x->job.id);
}

/*
 * Start ready jobs, oldest first, while runs are free; a job whose stream
 * handler cannot take it now (restarting) waits, and the later ones go on.
 */
static void start_ready(struct worker *w)
{
	struct pd_holdings *hs = &w->hs;
	int kept = 0, nfree, k;

	if (w->d.phase != PD_DAEMON_SERVING || hs->nready == 0)
		return;
	nfree = pd_holdings_nfree(hs);
	for (k = 0; k < hs->nready && nfree > 0; k++) {
		if (can_start(w, &hs->ready[k])) {
			pd_holdings_start(hs, &hs->ready[k], pd_holdings_free_run(hs));
			nfree--;
			continue;
		}
		hs->ready[kept++] = hs->ready[k];
	}
	/* the few kept (waiting for their stream) just before the rest; the window skips the gap */
	memmove(hs->ready + (k - kept), hs->ready, (size_t)kept * sizeof(*hs->ready));
	pd_holdings_ready_skip(hs, k - kept);
}

long long pd_worksync_paused(const struct worker *w, long long now)
{
	struct pd_batch_in in = batch_in_now(w);
	long long until = w->trip.sent_ms + PD_BATCH_PAUSE_MS;

	if (w->d.phase != PD_DAEMON_SERVING || w->flight || now >= until || now >= w->next_beat ||
	    !pd_batch_pause(&in, w->hs.nready, 1000 * (until - now)))
		return -1;
	/* a lost lease, a refused batch's outcomes: written at once */
	for (int k = 0; k < w->hs.nfin; k++)
		if (w->hs.fin[k].fate != PD_HOLD_FATE_BATCHED ||
		    w->hs.fin[k].exit.cls == PD_EXIT_LEASE_LOST)
			return -1;
	return until;
}

/* A ready job would start now. */
int pd_worksync_startable(const struct worker *w)
{
	if (w->d.phase != PD_DAEMON_SERVING || w->hs.nready == 0 ||
	    pd_holdings_free_run(&w->hs) < 0)
		return 0;
	for (int k = 0; k < w->hs.nready; k++)
		if (can_start(w, &w->hs.ready[k]))
			return 1;
	return 0;
}

static int want_claim(const struct worker *w, long long now)
{
	if (w->d.phase != PD_DAEMON_SERVING)
		return 0;
	if (!w->d.wake && now < w->next_claim && (w->next_due < 0 || now < w->next_due))
		return 0;
	return 1;
}

/* Pool slot i's handler has exited, or was stopped for a lost lease: no heartbeat. */
static int slot_gone(void *ctx, int i)
{
	const struct pd_pool_slot *s = &((struct worker *)ctx)->pool.slots[i];

	if (s->proc.reaped)
		return 1;
	return !(s->state == PD_SLOT_RUNNING ||
		 (s->state == PD_SLOT_STOPPING && s->stop != PD_STOP_LEASE_LOST));
}

/* Run i's progress note: its pool slot's, or its stream job's; NULL: none. */
static struct pd_progress *run_progress(void *ctx, int i)
{
	struct worker *w = ctx;
	struct pd_pool_slot *s = &w->pool.slots[i];

	if (w->hs.run[i].stream >= 0)
		return pd_stream_progress(&w->streams[w->hs.run[i].stream], i);
	return s->state == PD_SLOT_RUNNING || s->state == PD_SLOT_STOPPING ? &s->progress : NULL;
}

/* A batch that carried progress notes was not written: they go again in the next. */
static void progress_unsent(struct worker *w)
{
	struct pd_progress *p;

	if (w->trip.nprogress == 0)
		return;
	for (int i = 0; i < w->hs.size; i++)
		if (w->hs.run[i].stage == PD_HOLD_RUNNING && (p = run_progress(w, i)) != NULL)
			p->dirty = p->line.len > 0;
	for (int k = 0; k < w->hs.nfin; k++)
		w->hs.fin[k].exit.progress.dirty = w->hs.fin[k].exit.progress.line.len > 0;
}

/* The batch in flight failed: its start records and outcomes go in the next one. */
static void batch_failed(struct worker *w)
{
	progress_unsent(w);
	pd_holdings_apply(&w->hs, PD_HOLD_FAILED);
	w->flight = 0;
}

/* The batch in flight failed with e: 1 when its data was refused (pd_trip_refused). */
static int batch_refused(struct worker *w, const struct pd_err *e)
{
	if (!pd_trip_refused(&w->trip, &w->hs, e))
		return 0;
	progress_unsent(w);
	w->flight = 0;
	w->d.wake = 1;
	return 1;
}

/*
 * Send what is ready to be written (pd_trip_build), the heartbeat when due
 * and a claim of the runs free now, less the ready jobs waiting for them,
 * plus the prefetch depth. Nothing to send: no batch.
 */
static int batch_send(struct worker *w, long long now, struct pd_err *e)
{
	struct pd_trip *t = &w->trip;
	struct pd_batch_in in = batch_in(w);
	int free_now = pd_holdings_nfree(&w->hs) - w->hs.nready, depth = (int)pd_batch_depth(&in);
	int batch = (int)pd_batch_size(&in);
	struct pd_trip_ask a = {.now_us = pd_now_us(),
				.serving = w->d.phase == PD_DAEMON_SERVING,
				.beat = now >= w->next_beat,
				.rtt_us = w->rtt_us,
				.rng = &w->d.rng,
				.retry = &w->cfg->retry,
				.gone = slot_gone,
				.progress = run_progress,
				.ctx = w};

	if (want_claim(w, now) && free_now + depth > 0) {
		a.claim = free_now + depth;
		if (a.claim > batch)
			a.claim = batch;
		a.claim_start = depth == 0 && w->hs.nready == 0;
	}
	if (!pd_trip_build(t, &w->hs, &a))
		return 0;
	t->worker = w->d.id;
	t->lease_ms = w->cfg->lease_ms;
	t->queues = w->cfg->queues;
	t->nqueues = w->cfg->nqueues;
	t->types = w->types;
	t->ntypes = w->ntypes;
	t->sent_us = pd_now_us();
	t->sent_ms = now;
	w->flight = 1;
	if (t->claim > 0) {
		w->d.wake = 0;
		w->next_claim = now + w->cfg->engine.poll_ms;
	}
	if (t->beat)
		w->next_beat = now + w->cfg->heartbeat_ms;
	if (pd_jobs_sync_send(w->d.db, t, e) < 0) {
		batch_failed(w);
		w->d.wake = 1;
		return pd_daemon_db_failed(&w->d, e);
	}
	return 0;
}

/*
 * Claimed job c (its strings taken): over at once (a workflow job with no
 * step to run now), started in a free run when claimed straight to RUNNING,
 * else held until a run is free (released if the worker stops serving).
 */
static void take_claimed(struct worker *w, const struct pd_claimed *c, int claim_start)
{
	struct pd_hold x;

	pd_hold_claimed(&x, c, w->cfg->handlers, w->cfg->nhandlers, w->stream_of, w->cfg->flows,
			w->cfg->nflows);
	pd_hold_hooks(&x, w->cfg->handlers, w->cfg->nhandlers, &w->cfg->hooks);
	if (x.plan && x.plan->action != PD_FLOW_RUN) {
		pd_holdings_no_run(&w->hs, &x, pd_now_us());
		w->d.idle = 0;
		return;
	}
	if (claim_start && w->d.phase == PD_DAEMON_SERVING && pd_holdings_free_run(&w->hs) >= 0 &&
	    can_start(w, &x)) {
		pd_holdings_start(&w->hs, &x, pd_holdings_free_run(&w->hs));
		return;
	}
	pd_holdings_ready_add(&w->hs, &x);
}

/* The batch in flight is in: log, move the holdings, take what it claimed. */
static void batch_done(struct worker *w)
{
	struct pd_trip *t = &w->trip;

	w->flight = 0;
	pd_log(PD_LOG_DEBUG, "batch written",
	       "starts=%d outcomes=%d lost=%d beat=%d claim=%d claimed=%d rtt_us=%lld "
	       "avg_rtt_us=%lld avg_run_us=%lld ready=%d",
	       t->nstart, t->noutcomes, t->nlost, t->beat, t->claim, t->nclaimed,
	       pd_now_us() - t->sent_us, w->rtt_us, w->run_us, w->hs.nready);
	if (t->claim > 0) {
		average(&w->rtt_us, pd_now_us() - t->sent_us);
		w->d.wake = w->d.wake || t->nclaimed == t->claim; /* there may be more */
		if (w->next_due >= 0 && w->next_due <= t->sent_ms)
			w->next_due = -1;
	}
	pd_trip_written(t, &w->hs, &w->next_due);
	/* Idle: the claim found nothing after every outcome so far was written. */
	if (t->claim > 0) {
		w->d.idle = t->nclaimed == 0 && w->hs.nready == 0 && w->hs.nfin == 0;
		/* with nothing running either, poll less often (woken by notifications) */
		w->poll_ms = pd_idle_poll(w->poll_ms, w->cfg->engine.poll_ms,
					  w->d.idle && pd_holdings_nfree(&w->hs) == w->pool.size);
		w->next_claim = t->sent_ms + w->poll_ms;
	}
	for (int k = 0; k < t->n; k++) {
		if (t->items[k].kind != PD_TRIP_BEAT)
			continue;
		if (!t->items[k].held)
			pd_holdings_lost(&w->hs, t->items[k].id, t->items[k].token);
		else if (t->items[k].cancel)
			pd_holdings_cancel(&w->hs, t->items[k].id, t->items[k].token);
	}
	if (t->nrel > 0)
		pd_log(PD_LOG_INFO, "ready jobs released", "jobs=%d", t->nrel);
	for (int k = 0; k < t->nclaimed; k++)
		take_claimed(w, &t->claimed[k], t->claim_start);
	free(t->claimed); /* the strings now belong to the holdings */
	t->claimed = NULL;
	t->nclaimed = 0;
	if (t->noutcomes > 0 || t->nlost > 0)
		w->d.wake = 1; /* slots came free */
}

/* The workers row again after a reload (queues, job types): nothing in flight. */
static int reregister(struct worker *w, struct pd_err *e)
{
	if (pd_worksync_register(&w->d, 0, e) < 0)
		return pd_daemon_db_failed(&w->d, e);
	return 0;
}

/*
 * The worker's part of a pass: start ready jobs in free slots, collect the
 * batch in flight if its results are in, and send the next one.
 */
/* The reap pass, the program's periodic work (ext) or a handler's request is due. */
static int side_due(const struct worker *w, long long now)
{
	if (pd_worker_requests(w) > 0)
		return 1;
	if (w->cfg->reap && now >= w->next_reap)
		return 1;
	return w->cfg->ext && w->d.phase == PD_DAEMON_SERVING && now >= w->next_ext;
}

int pd_worksync_pass(struct worker *w, long long now, struct pd_err *e)
{
	/*
	 * Before a heartbeat, the answers stream handlers have written already
	 * (a worker resumed after SIGSTOP): those jobs are over, and their
	 * outcomes go through the fence rather than being dropped as lost leases.
	 */
	if (now >= w->next_beat)
		for (int k = 0; k < w->nstreams; k++)
			pd_stream_read(&w->streams[k]);
	harvest(w);
	start_ready(w);
	if (w->flight) {
		int rc = pd_jobs_sync_collect(w->d.db, &w->trip, e);

		if (rc == 0)
			return 0;
		if (rc < 0 && batch_refused(w, e)) {
			pd_err_clear(e);
			return 0;
		}
		if (rc < 0) {
			batch_failed(w);
			w->d.wake = 1;
			return pd_daemon_db_failed(&w->d, e);
		}
		batch_done(w);
	}
	if (w->reregister && reregister(w, e) < 0)
		return -1;
	/*
	 * The reap pass and the program's periodic work need the connection
	 * without a batch in flight: when one is due, this pass sends nothing
	 * (on_tick runs it, and the next pass sends). Otherwise, with round trips
	 * as long as the poll interval, a batch would always be in flight and
	 * they would never run.
	 */
	if (side_due(w, now)) {
		start_ready(w);
		return 0;
	}
	if (pd_worksync_paused(w, now) >= 0) {
		start_ready(w);
		return 0;
	}
	/* Send first: the database works on it while the handlers are started. */
	if (batch_send(w, now, e) < 0)
		return -1;
	start_ready(w);
	return 0;
}

/* Wait for the batch in flight and take its results. */
static int flight_wait(struct worker *w, struct pd_err *e)
{
	if (pd_jobs_sync_wait(w->d.db, &w->trip, e) < 0) {
		if (batch_refused(w, e)) {
			pd_err_clear(e);
			return 0;
		}
		batch_failed(w);
		return -1;
	}
	batch_done(w);
	return 0;
}

/*
 * The last writes before the worker exits (the phase is past SERVING: no
 * claim): the batch in flight, then the outcomes of the handlers the drain
 * stopped and the release of the ready jobs.
 */
void pd_worksync_final(struct worker *w)
{
	struct pd_err e = PD_ERR_INIT;
	int rounds = 4 + 3 * w->hs.nfin; /* a refused batch's outcomes go one at a time */

	for (int round = 0; round < rounds && pd_daemon_up(&w->d); round++) {
		if (!w->flight && batch_send(w, pd_now_ms(), &e) < 0)
			break;
		if (!w->flight || flight_wait(w, &e) < 0)
			break;
	}
	pd_err_clear(&e);
}

/* The pass this worker runs while it holds the reaper role (pd_reap_pass_fn). */
static int reap_pass(void *ctx, long long grace_ms, long long *due_ms, struct pd_err *e)
{
	struct worker *w = ctx;
	long long now = pd_now_ms(), next_ms, at;
	int requeued, dead;

	if (pd_reap_pass(w->d.db, &w->cfg->retention, w->hooks.data, grace_ms, &w->next_prune,
			 &next_ms, &requeued, &dead, e) < 0)
		return -1;
	if (requeued || dead)
		pd_log(PD_LOG_INFO, "expired leases given back", "requeued=%d dead=%d", requeued,
		       dead);
	/*
	 * Next when the earliest lease expires (a little after, so that it has;
	 * not sooner than 50 ms), or a lease from now when nothing is leased (a
	 * lease claimed meanwhile expires later than that), and at the latest
	 * when the prune is due (soon while rows are left).
	 */
	at = now + w->cfg->lease_ms;
	if (next_ms >= 0 && now + next_ms + 10 < at)
		at = now + (next_ms + 10 > 50 ? next_ms + 10 : 50);
	if (w->next_prune < at)
		at = w->next_prune > now ? w->next_prune : now + 100;
	*due_ms = at - now;
	return 0;
}

int pd_worksync_reap(struct worker *w, long long now, struct pd_err *e)
{
	long long next_ms;

	(void)now;
	w->lead.lease_ms = w->cfg->lease_ms; /* a reload's lease from the next turn on */
	if (pd_reap_turn(&w->lead, w->d.db, reap_pass, w, &next_ms, e) < 0)
		return pd_daemon_db_failed(&w->d, e);
	w->next_reap = pd_now_ms() + next_ms;
	return 0;
}

/* The workers row (also again after a reload, on the same session). */
int pd_worksync_register(struct pd_daemon *d, int first, struct pd_err *e)
{
	static const char *any[] = {"*"};
	struct worker *w = d->ctx;

	(void)first;
	if (w->flight)
		batch_failed(w); /* sent on the old connection: its start records go again */
	w->reregister = 0;
	if (pd_worker_register(d->db, w->d.id, w->d.host, (int)getpid(), w->cfg->queues,
			       w->cfg->nqueues, w->types ? w->types : any, w->types ? w->ntypes : 1,
			       (int)w->cfg->engine.concurrency, w->cfg->lease_ms, e) < 0)
		return -1;
	return 0;
}

/*
 * After a reconnect, the jobs leased to this worker (its id is the same on
 * every session) under a token it does not hold, in a run, the ready jobs
 * or an outcome still to write: a claim whose reply the lost connection
 * took. Given back now (pd_jobs_release_unheld) rather than at the lease's
 * expiry.
 */
int pd_worksync_release_unheld(struct worker *w, struct pd_err *e)
{
	const struct pd_holdings *hs = &w->hs;
	long long *t = pd_xcalloc((size_t)(hs->size + hs->nready + hs->nfin) + 1, sizeof(*t));
	int n = 0, released, rc;

	for (int i = 0; i < w->pool.size; i++)
		if (hs->run[i].stage != PD_HOLD_NONE)
			t[n++] = hs->run[i].job.token;
	for (int k = 0; k < hs->nready; k++)
		t[n++] = hs->ready[k].job.token;
	for (int k = 0; k < hs->nfin; k++)
		t[n++] = hs->fin[k].job.token;
	rc = pd_jobs_release_unheld(w->d.db, w->d.id, t, n, &released, e);
	free(t);
	if (rc < 0 && e->code != PD_EX_UNAVAILABLE) {
		char q[600];

		/* not fatal: those leases expire, and the reap pass gives them back */
		pd_log(PD_LOG_ERROR, "could not give back the leases not held", "error=%s",
		       pd_log_quote(q, sizeof(q), e->msg));
		pd_err_clear(e);
		return 0;
	}
	return rc;
}

/* The program's periodic work (struct pd_worker_ext), between batches. */
int pd_worksync_ext(struct worker *w, long long now, struct pd_err *e)
{
	struct pd_worker_ext *x = w->cfg->ext;

	x->next_ms = 0;
	if (x->period && x->period(x, w->d.db, e) < 0) {
		w->next_ext = now + x->period_ms;
		return pd_daemon_db_failed(&w->d, e);
	}
	w->next_ext = now + (x->next_ms > 0 ? x->next_ms : x->period_ms);
	return 0;
}

/* When the next start record is due (pd_now_us), or -1. */
long long pd_worksync_starts_due(const struct worker *w)
{
	long long t = -1;

	for (int i = 0; i < w->pool.size; i++) {
		long long due = pd_trip_start_due(&w->hs.run[i], w->rtt_us);

		if (due >= 0 && (t < 0 || due < t))
			t = due;
	}
	return t;
}
