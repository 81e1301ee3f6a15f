#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "jobs.h"
#include "json.h"
#include "log.h"
#include "pool.h"
#include "reap.h"
#include "retry.h"
#include "text.h"
#include "worker.h"

#define MAX_BATCH_BYTES (16 * 1024 * 1024) /* outcome bytes sent in one round trip */

extern char **environ;

/* Whether the database knows that a slot's handler started. */
enum start_record {
	START_RECORDED,	 /* claimed straight to RUNNING, or the start was written */
	START_TO_SEND,	 /* started from the ready jobs (LEASED): the next batch writes RUNNING,
			    or, once the handler is over, its outcome records the start too */
	START_IN_FLIGHT, /* in the batch in flight */
};

/*
 * A job whose handler is over, taken out of its slot (which is free again at
 * once) until its outcome is written.
 */
struct finished {
	struct pd_claimed job;
	struct pd_pool_exit exit;
	enum start_record started;
	int sending; /* in the batch in flight */
};

/*
 * One round trip's worth of writes, sent with pd_jobs_sync_send and collected
 * later while the loop goes on: what it refers to stays put until its
 * results are in (batch_done).
 */
struct batch {
	struct pd_jobs_sync s;
	struct pd_job_outcome *outs;
	int *out_fin;	   /* outs[k] is fin[out_fin[k]]'s; -1: a ready job released */
	int *lost_fin;	   /* the finished jobs whose lease_lost records are in it */
	long long *ids;	   /* lost, beat and start ids, tokens (and lost attempts, ages) */
	int nrel;	   /* ready jobs released in it */
	long long sent_us; /* pd_now_us() at send */
	long long sent_ms; /* pd_now_ms() at send */
};

/*
 * Ready jobs: claimed LEASED ahead of a free slot, so that a slot that comes
 * free starts its next handler without waiting for a round trip. How many
 * are held is the prefetch depth, sized from what was measured: as many as
 * the slots that come free during two round trips (concurrency x 2 x rtt /
 * handler run time), at most the concurrency. Handlers that run long
 * compared with a round trip get none: their jobs stay claimable by idle
 * workers, and claims go straight to RUNNING.
 */
struct worker {
	const struct pd_worker_cfg *cfg;
	struct pd_daemon d;
	struct pd_pool pool;
	struct pd_claimed *jobs;    /* jobs[i]: the job in pool slot i */
	enum start_record *started; /* started[i]: for jobs[i] */
	struct pd_claimed *ready;   /* claimed LEASED, not started; FIFO */
	int nready;
	struct finished *fin; /* outcomes to write, in the order the handlers ended */
	int nfin, capfin;
	const char **types; /* the claim's filter; NULL: any type */
	int ntypes;
	long long next_claim, next_beat, next_reap, next_due;
	/* moving averages, 0 until measured: a batch's round trip, a handler's run time */
	long long rtt_us, run_us;
	struct batch *flight; /* the batch in flight, or NULL */
};

void pd_worker_cfg_init(struct pd_worker_cfg *w)
{
	memset(w, 0, sizeof(*w));
	pd_engine_cfg_init(&w->engine);
	w->lease_ms = w->heartbeat_ms = w->result_limit = -1;
	w->reap = -1;
}

int pd_worker_settle(struct pd_worker_cfg *w, const struct pd_config *cfg, struct pd_err *e)
{
	int lease_given = w->lease_ms >= 0;

	pd_engine_cfg_settle(&w->engine, &cfg->worker.engine);
	w->retry = cfg->retry;
	if (w->lease_ms < 0)
		w->lease_ms = cfg->worker.lease_ms;
	if (w->heartbeat_ms < 0)
		w->heartbeat_ms = cfg->worker.heartbeat_ms >= 0 && !lease_given
				      ? cfg->worker.heartbeat_ms
				      : w->lease_ms / 3;
	if (w->result_limit < 0)
		w->result_limit = cfg->worker.result_limit;
	if (w->reap < 0)
		w->reap = cfg->worker.reap;
	if (w->nqueues == 0)
		for (int i = 0; i < cfg->worker.nqueues && w->nqueues < PD_WORKER_MAX_QUEUES; i++)
			w->queues[w->nqueues++] = cfg->worker.queues[i];
	if (w->nqueues == 0)
		w->queues[w->nqueues++] = "default";
	if (w->lease_ms <= 0)
		return pd_errf(e, PD_EX_USAGE,
			       "the lease must be longer than 0 (how long a claimed job stays "
			       "this worker's without a heartbeat)");
	if (w->heartbeat_ms <= 0 || w->heartbeat_ms >= w->lease_ms)
		return pd_errf(e, PD_EX_USAGE,
			       "the heartbeat (%lldms) must be shorter than the lease (%lldms)",
			       w->heartbeat_ms, w->lease_ms);
	if (w->engine.poll_ms <= 0)
		return pd_errf(e, PD_EX_USAGE, "the poll interval must be longer than 0");
	return 0;
}

static char *envvar(const char *k, const char *v)
{
	size_t n = strlen(k) + strlen(v) + 2;
	char *s = pd_xmalloc(n);

	snprintf(s, n, "%s=%s", k, v);
	return s;
}

/* The worker's environment plus the job's PD_* variables (DESIGN.md, the handler contract). */
static char **build_env(const struct pd_claimed *j, const char *worker)
{
	static const char *ours[] = {"PD_JOB_ID",
				     "PD_JOB_TYPE",
				     "PD_QUEUE",
				     "PD_TENANT",
				     "PD_ATTEMPT",
				     "PD_MAX_ATTEMPTS",
				     "PD_LEASE_TOKEN",
				     "PD_RUN_AT",
				     "PD_IDEMPOTENCY_KEY",
				     "PD_REPLAY_COUNT",
				     "TRACEPARENT",
				     "PD_WORKER_ID",
				     NULL};
	size_t n = 0, k = 0;
	char num[24], **env;

	while (environ[n])
		n++;
	env = pd_xcalloc(n + 16, sizeof(*env));
	for (size_t i = 0; i < n; i++) {
		int skip = 0;

		for (int o = 0; ours[o] && !skip; o++) {
			size_t l = strlen(ours[o]);

			skip = strncmp(environ[i], ours[o], l) == 0 && environ[i][l] == '=';
		}
		if (!skip)
			env[k++] = pd_xstrdup(environ[i]);
	}
	snprintf(num, sizeof(num), "%lld", j->id);
	env[k++] = envvar("PD_JOB_ID", num);
	env[k++] = envvar("PD_JOB_TYPE", j->type);
	env[k++] = envvar("PD_QUEUE", j->queue);
	env[k++] = envvar("PD_TENANT", j->tenant);
	snprintf(num, sizeof(num), "%d", j->attempt);
	env[k++] = envvar("PD_ATTEMPT", num);
	snprintf(num, sizeof(num), "%d", j->max_attempts);
	env[k++] = envvar("PD_MAX_ATTEMPTS", num);
	snprintf(num, sizeof(num), "%lld", j->token);
	env[k++] = envvar("PD_LEASE_TOKEN", num);
	env[k++] = envvar("PD_RUN_AT", j->run_at ? j->run_at : "");
	if (j->idempotency_key)
		env[k++] = envvar("PD_IDEMPOTENCY_KEY", j->idempotency_key);
	snprintf(num, sizeof(num), "%d", j->replay_count);
	env[k++] = envvar("PD_REPLAY_COUNT", num);
	if (j->traceparent)
		env[k++] = envvar("TRACEPARENT", j->traceparent);
	env[k++] = envvar("PD_WORKER_ID", worker);
	env[k] = NULL;
	return env;
}

static void job_clear(struct pd_claimed *j)
{
	free(j->type);
	free(j->queue);
	free(j->tenant);
	free(j->payload);
	free(j->run_at);
	free(j->idempotency_key);
	free(j->traceparent);
	memset(j, 0, sizeof(*j));
}

static void average(long long *avg, long long sample);

/* Move the jobs of DONE slots to the finished list; their slots are FREE. */
static void harvest(struct worker *w)
{
	for (int i = 0; i < w->pool.size; i++) {
		struct finished *f;

		if (w->pool.slots[i].state != PD_SLOT_DONE)
			continue;
		if (w->nfin == w->capfin) {
			w->capfin = w->capfin ? 2 * w->capfin : 2 * w->pool.size;
			w->fin = pd_xrealloc(w->fin, (size_t)w->capfin * sizeof(*w->fin));
		}
		f = &w->fin[w->nfin++];
		w->d.idle = 0; /* its outcome may make work runnable (dependencies, retries) */
		memset(f, 0, sizeof(*f));
		f->job = w->jobs[i];
		f->started = w->started[i];
		pd_pool_take(&w->pool, i, &f->exit);
		memset(&w->jobs[i], 0, sizeof(w->jobs[i]));
		w->started[i] = START_RECORDED;
		if (f->exit.cls == PD_EXIT_OK || f->exit.cls == PD_EXIT_FAILED ||
		    f->exit.cls == PD_EXIT_TERMINAL)
			average(&w->run_us, f->exit.ran_us > 0 ? f->exit.ran_us : 1);
	}
}

/* Drop the finished jobs whose outcomes the batch just written carried. */
static void fin_written(struct worker *w)
{
	int k = 0;

	for (int i = 0; i < w->nfin; i++) {
		if (w->fin[i].sending) {
			job_clear(&w->fin[i].job);
			pd_pool_exit_release(&w->fin[i].exit);
			continue;
		}
		w->fin[k++] = w->fin[i];
	}
	w->nfin = k;
}

static int fin_unsent(const struct worker *w)
{
	for (int i = 0; i < w->nfin; i++)
		if (!w->fin[i].sending)
			return 1;
	return 0;
}

/* A moving average with weight 1/4 for the new sample; 0 means none yet. */
static void average(long long *avg, long long sample)
{
	*avg = *avg == 0 ? sample : (3 * *avg + sample) / 4;
}

/* How many ready jobs to hold (see struct worker). */
static int prefetch_depth(const struct worker *w)
{
	long long conc = w->cfg->engine.concurrency, d;

	if (w->rtt_us == 0 || w->run_us == 0)
		return 0;
	d = (2 * conc * w->rtt_us + w->run_us / 2) / w->run_us;
	return d > conc ? (int)conc : (int)d;
}

/* Start claimed job j in a free slot; the slot takes j's strings. */
static void start_job(struct worker *w, struct pd_claimed *j, enum start_record rec)
{
	int i = pd_pool_free_slot(&w->pool);
	const struct pd_handler *h;
	struct pd_pool_job pj;
	char prefix[64];

	if (i < 0) { /* cannot happen: the claim asks for the free slots only */
		pd_log(PD_LOG_ERROR, "no free slot for a claimed job", "job=%lld", j->id);
		job_clear(j);
		return;
	}
	w->jobs[i] = *j;
	w->started[i] = rec;
	j = &w->jobs[i];
	h = pd_handler_find(w->cfg->handlers, w->cfg->nhandlers, j->type);
	snprintf(prefix, sizeof(prefix), "job=%lld attempt=%d", j->id, j->attempt);
	pd_log(PD_LOG_DEBUG, "job started", "%s type=%s token=%lld", prefix, j->type, j->token);
	memset(&pj, 0, sizeof(pj));
	pj.h = h;
	pj.envp = build_env(j, w->d.id);
	pj.input = j->payload;
	pj.input_len = strlen(j->payload);
	pj.timeout_ms = j->timeout_ms >= 0 ? j->timeout_ms : h ? h->timeout_ms : 0;
	pj.prefix = prefix;
	if (h == NULL) {
		/* The claim filters on the handled types; a '*' handler takes all. */
		static const struct pd_handler none = {
		    (char *)"?", (char *)"exit 70", NULL, -1, {0}, 0};

		pj.h = &none;
	}
	pd_pool_start(&w->pool, i, &pj);
}

/* Start ready jobs, oldest first, while slots are free. */
static void start_ready(struct worker *w)
{
	int k = 0;

	while (k < w->nready && w->d.phase == PD_DAEMON_SERVING && pd_pool_free_slot(&w->pool) >= 0)
		start_job(w, &w->ready[k++], START_TO_SEND);
	if (k > 0) {
		memmove(w->ready, w->ready + k, (size_t)(w->nready - k) * sizeof(*w->ready));
		w->nready -= k;
	}
}

/* Drop ready job k (its strings freed); the later ones move up. */
static void ready_drop(struct worker *w, int k)
{
	job_clear(&w->ready[k]);
	memmove(w->ready + k, w->ready + k + 1, (size_t)(w->nready - k - 1) * sizeof(*w->ready));
	w->nready--;
}

/* The result of a handler that exited 0: its stdout, as JSON or else as a JSON string. */
static void result_of(struct pd_pool_exit *ex, struct pd_outcome *o)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err ignore = PD_ERR_INIT;

	o->result_truncated = ex->out_truncated;
	if (ex->out.len == 0)
		return;
	if (!ex->out_truncated && pd_json_parse(&j, ex->out.data, ex->out.len, &ignore) == 0) {
		o->result = ex->out.data;
	} else {
		struct pd_buf clean = PD_BUF_INIT, quoted = PD_BUF_INIT;

		pd_utf8_sanitize(&clean, pd_buf_str(&ex->out), ex->out.len);
		pd_json_quote(&quoted, pd_buf_str(&clean), clean.len);
		pd_buf_release(&clean);
		pd_buf_release(&ex->out);
		ex->out = quoted;
		o->result = ex->out.data;
		o->result_is_text = 1;
	}
	pd_json_release(&j);
}

/*
 * The outcome of finished job f (DESIGN.md, the handler contract).
 * Strings point into f: valid until it is released.
 */
static void outcome_of(struct worker *w, struct finished *f, struct pd_job_outcome *x)
{
	struct pd_pool_exit *ex = &f->exit;
	struct pd_outcome *o = &x->o;

	memset(x, 0, sizeof(*x));
	x->id = f->job.id;
	x->token = f->job.token;
	o->started_ago_ms = -1;
	o->exit_code = ex->exit_code;
	o->signal = ex->signal;
	o->outcome = pd_exit_class_name(ex->cls);
	o->stderr_tail = ex->tail.len ? ex->tail.data : NULL;
	o->error = ex->error.len ? ex->error.data : NULL;
	o->kind = pd_exit_verdict(ex->cls);
	switch (o->kind) {
	case PD_VERDICT_DONE:
		result_of(ex, o);
		break;
	case PD_VERDICT_RETRY:
		o->backoff_ms = pd_backoff_ms(&w->d.rng, w->cfg->retry.base_ms,
					      w->cfg->retry.cap_ms, f->job.attempt);
		break;
	case PD_VERDICT_DEAD:
		o->dead_reason = "terminal exit code";
		break;
	case PD_VERDICT_RELEASE:
		break;
	}
}

static void log_outcome(const struct pd_claimed *j, const struct pd_job_outcome *x)
{
	char q[300];

	if (!x->applied) {
		pd_log(PD_LOG_WARN, "fenced: the lease was taken over, outcome not written",
		       "job=%lld attempt=%d outcome=%s", j->id, j->attempt, x->o.outcome);
		return;
	}
	pd_log(PD_LOG_INFO, "job done", "job=%lld attempt=%d outcome=%s state=%s%s%s", j->id,
	       j->attempt, x->o.outcome, x->state, x->o.error ? " error=" : "",
	       x->o.error ? pd_log_quote(q, sizeof(q), x->o.error) : "");
}

/*
 * The leases to heartbeat: RUNNING slots, and STOPPING ones not stopped for
 * a lost lease. A handler that has already exited is left out: its outcome
 * is on its way, and that write goes through the fence (and is counted if
 * fenced) rather than being dropped as a lost lease.
 */
static int holds_lease(const struct pd_pool_slot *s)
{
	if (s->proc.reaped)
		return 0;
	return s->state == PD_SLOT_RUNNING ||
	       (s->state == PD_SLOT_STOPPING && s->stop != PD_STOP_LEASE_LOST);
}

static int want_claim(const struct worker *w, long long now)
{
	if (w->d.phase != PD_DAEMON_SERVING)
		return 0;
	if (!w->d.wake && now < w->next_claim && (w->next_due < 0 || now < w->next_due))
		return 0;
	return 1;
}

/* The release of ready job k, which never started: given back, the attempt refunded. */
static void ready_release(const struct pd_claimed *j, struct pd_job_outcome *x)
{
	memset(x, 0, sizeof(*x));
	x->id = j->id;
	x->token = j->token;
	x->o.kind = PD_VERDICT_RELEASE;
	x->o.outcome = pd_exit_class_name(PD_EXIT_DRAINED);
	x->o.started_ago_ms = -1;
	x->o.exit_code = -1;
}

static void batch_free(struct batch *b)
{
	free(b->outs);
	free(b->out_fin);
	free(b->lost_fin);
	free(b->ids);
	free(b->s.held);
	free(b);
}

/* The batch in flight failed: its start records go in the next one. */
static void batch_failed(struct worker *w)
{
	for (int i = 0; i < w->pool.size; i++)
		if (w->started[i] == START_IN_FLIGHT)
			w->started[i] = START_TO_SEND;
	for (int k = 0; k < w->nfin; k++) {
		w->fin[k].sending = 0;
		if (w->fin[k].started == START_IN_FLIGHT)
			w->fin[k].started = START_TO_SEND;
	}
	batch_free(w->flight);
	w->flight = NULL;
}

/*
 * Send what is ready to be written: start records, outcomes (and the release
 * of the ready jobs once the worker no longer serves), lease_lost records,
 * the heartbeat when due, and a claim. Nothing to send: no batch.
 */
static int batch_send(struct worker *w, long long now, struct pd_err *e)
{
	int size = w->pool.size, cap = size + w->nready + w->nfin, nout = 0, nlost = 0, nbeat = 0;
	int nstart = 0, free_now, depth;
	struct batch *b = pd_xcalloc(1, sizeof(*b));
	struct pd_jobs_sync *s = &b->s;
	long long *lost_ids, *lost_tokens, *lost_attempts, *lost_ago, *beat_ids, *beat_tokens;
	long long *start_ids, *start_tokens;
	size_t bytes = 0;

	b->outs = pd_xcalloc((size_t)cap, sizeof(*b->outs));
	b->out_fin = pd_xcalloc((size_t)cap, sizeof(int));
	b->lost_fin = pd_xcalloc((size_t)cap, sizeof(int));
	b->ids = pd_xcalloc((size_t)cap * 8, sizeof(long long));
	s->held = pd_xcalloc((size_t)cap, sizeof(int));
	lost_ids = b->ids, lost_tokens = b->ids + cap, beat_ids = b->ids + 2 * cap;
	beat_tokens = b->ids + 3 * cap, start_ids = b->ids + 4 * cap;
	start_tokens = b->ids + 5 * cap, lost_attempts = b->ids + 6 * cap;
	lost_ago = b->ids + 7 * cap;
	for (int i = 0; i < size; i++) {
		if (w->pool.slots[i].state != PD_SLOT_FREE && w->started[i] == START_TO_SEND) {
			start_ids[nstart] = w->jobs[i].id;
			start_tokens[nstart++] = w->jobs[i].token;
			w->started[i] = START_IN_FLIGHT;
		}
	}
	for (int k = 0; k < w->nfin; k++) {
		struct finished *f = &w->fin[k];

		if (bytes > MAX_BATCH_BYTES)
			break; /* the rest in the next batch */
		f->sending = 1;
		if (f->exit.cls == PD_EXIT_LEASE_LOST) {
			/* nothing of the job is written, its start neither */
			if (f->started == START_TO_SEND)
				f->started = START_IN_FLIGHT;
			lost_ids[nlost] = f->job.id;
			lost_tokens[nlost] = f->job.token;
			lost_attempts[nlost] = f->job.attempt;
			lost_ago[nlost] = (pd_now_us() - f->exit.started_us) / 1000;
			b->lost_fin[nlost++] = k;
			continue;
		}
		outcome_of(w, f, &b->outs[nout]);
		if (f->started == START_TO_SEND) {
			/* over before its start was written: the outcome records both */
			b->outs[nout].o.started_ago_ms = (pd_now_us() - f->exit.started_us) / 1000;
			f->started = START_IN_FLIGHT;
		}
		bytes += f->exit.out.len + f->exit.tail.len + 256;
		b->out_fin[nout++] = k;
	}
	if (w->d.phase != PD_DAEMON_SERVING) {
		for (int k = 0; k < w->nready; k++) {
			ready_release(&w->ready[k], &b->outs[nout]);
			b->out_fin[nout++] = -1;
			b->nrel++;
		}
	}
	s->beat = now >= w->next_beat;
	if (s->beat) {
		for (int i = 0; i < size; i++) {
			if (!holds_lease(&w->pool.slots[i]))
				continue;
			beat_ids[nbeat] = w->jobs[i].id;
			beat_tokens[nbeat++] = w->jobs[i].token;
		}
		for (int k = 0; k < w->nready && b->nrel == 0; k++) {
			beat_ids[nbeat] = w->ready[k].id;
			beat_tokens[nbeat++] = w->ready[k].token;
		}
	}
	/* The slots free now, less the ready jobs waiting for them. */
	free_now = pd_pool_count(&w->pool, PD_SLOT_FREE) - w->nready;
	depth = prefetch_depth(w);
	if (want_claim(w, now) && free_now + depth > 0) {
		s->claim = free_now + depth;
		if (s->claim > w->cfg->engine.batch)
			s->claim = (int)w->cfg->engine.batch;
		s->claim_start = depth == 0 && w->nready == 0;
	}
	if (nstart + nout + nlost == 0 && !s->beat && s->claim == 0) {
		batch_free(b);
		return 0;
	}
	s->start_ids = start_ids;
	s->start_tokens = start_tokens;
	s->nstart = nstart;
	s->outcomes = b->outs;
	s->noutcomes = nout;
	s->lost_ids = lost_ids;
	s->lost_tokens = lost_tokens;
	s->lost_attempts = lost_attempts;
	s->lost_ago_ms = lost_ago;
	s->nlost = nlost;
	s->beat_ids = beat_ids;
	s->beat_tokens = beat_tokens;
	s->nbeat = nbeat;
	s->worker = w->d.id;
	s->lease_ms = w->cfg->lease_ms;
	s->queues = w->cfg->queues;
	s->nqueues = w->cfg->nqueues;
	s->types = w->types;
	s->ntypes = w->ntypes;
	b->sent_us = pd_now_us();
	b->sent_ms = now;
	w->flight = b;
	if (s->claim > 0) {
		w->d.wake = 0;
		w->next_claim = now + w->cfg->engine.poll_ms;
	}
	if (s->beat)
		w->next_beat = now + w->cfg->heartbeat_ms;
	if (pd_jobs_sync_send(w->d.db, s, e) < 0) {
		batch_failed(w);
		w->d.wake = 1;
		return pd_daemon_db_failed(&w->d, e);
	}
	return 0;
}

/* Stop the handler holding token t, or drop the ready job holding it: its lease is lost. */
static void lease_lost(struct worker *w, long long id, long long t)
{
	for (int i = 0; i < w->pool.size; i++) {
		if (w->pool.slots[i].state == PD_SLOT_FREE || w->jobs[i].token != t)
			continue;
		pd_log(PD_LOG_WARN, "lease lost: stopping the handler", "job=%lld attempt=%d", id,
		       w->jobs[i].attempt);
		pd_pool_stop(&w->pool, i, PD_STOP_LEASE_LOST);
		return;
	}
	for (int k = 0; k < w->nready; k++) {
		if (w->ready[k].token != t)
			continue;
		pd_log(PD_LOG_WARN, "lease lost: a ready job dropped before it started",
		       "job=%lld attempt=%d", id, w->ready[k].attempt);
		ready_drop(w, k);
		return;
	}
}

/* The batch in flight is in: log, free its slots, take what it claimed. */
static void batch_done(struct worker *w)
{
	struct batch *b = w->flight;
	struct pd_jobs_sync *s = &b->s;

	w->flight = NULL;
	if (s->claim > 0)
		average(&w->rtt_us, pd_now_us() - b->sent_us);
	for (int i = 0; i < w->pool.size; i++)
		if (w->started[i] == START_IN_FLIGHT)
			w->started[i] = START_RECORDED;
	for (int k = 0; k < w->nfin; k++)
		if (w->fin[k].started == START_IN_FLIGHT)
			w->fin[k].started = START_RECORDED;
	if (s->claim > 0) {
		w->d.wake = w->d.wake || s->nclaimed == s->claim; /* there may be more */
		if (w->next_due >= 0 && w->next_due <= b->sent_ms)
			w->next_due = -1;
	}
	for (int k = 0; k < s->noutcomes; k++) {
		struct pd_job_outcome *x = &b->outs[k];

		if (b->out_fin[k] < 0)
			continue; /* a ready job released */
		log_outcome(&w->fin[b->out_fin[k]].job, x);
		if (x->applied && x->due_in_ms >= 0) {
			long long due = pd_now_ms() + x->due_in_ms;

			w->next_due = w->next_due < 0 || due < w->next_due ? due : w->next_due;
		}
	}
	for (int k = 0; k < s->nlost; k++) {
		const struct pd_claimed *j = &w->fin[b->lost_fin[k]].job;

		pd_log(PD_LOG_WARN, "lease lost: handler stopped, nothing written",
		       "job=%lld attempt=%d", j->id, j->attempt);
	}
	fin_written(w);
	/* Idle: the claim found nothing after every outcome so far was written. */
	if (s->claim > 0)
		w->d.idle = s->nclaimed == 0 && w->nready == 0 && w->nfin == 0;
	for (int k = 0; k < s->nbeat; k++)
		if (!s->held[k])
			lease_lost(w, s->beat_ids[k], s->beat_tokens[k]);
	if (b->nrel > 0) {
		pd_log(PD_LOG_INFO, "ready jobs released", "jobs=%d", b->nrel);
		for (int k = 0; k < b->nrel && w->nready > 0; k++)
			ready_drop(w, 0);
	}
	for (int k = 0; k < s->nclaimed; k++) {
		if (s->claim_start && w->d.phase == PD_DAEMON_SERVING &&
		    pd_pool_free_slot(&w->pool) >= 0) {
			start_job(w, &s->claimed[k], START_RECORDED);
			continue;
		}
		/* Held until a slot is free; released if the worker stops serving. */
		w->ready[w->nready++] = s->claimed[k]; /* room: size + batch */
	}
	free(s->claimed); /* the strings now belong to the slots and the ready jobs */
	if (s->noutcomes > 0 || s->nlost > 0)
		w->d.wake = 1; /* slots came free */
	batch_free(b);
}

/*
 * The worker's part of a pass: start ready jobs in free slots, collect the
 * batch in flight if its results are in, and send the next one.
 */
static int sync_db(struct worker *w, long long now, struct pd_err *e)
{
	harvest(w);
	start_ready(w);
	if (w->flight) {
		int rc = pd_jobs_sync_collect(w->d.db, &w->flight->s, e);

		if (rc == 0)
			return 0;
		if (rc < 0) {
			batch_failed(w);
			w->d.wake = 1;
			return pd_daemon_db_failed(&w->d, e);
		}
		batch_done(w);
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
	if (pd_jobs_sync_wait(w->d.db, &w->flight->s, e) < 0) {
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
static void sync_final(struct worker *w)
{
	struct pd_err e = PD_ERR_INIT;

	for (int round = 0; round < 4 && pd_daemon_up(&w->d); round++) {
		if (w->flight == NULL && batch_send(w, pd_now_ms(), &e) < 0)
			break;
		if (w->flight == NULL || flight_wait(w, &e) < 0)
			break;
	}
	pd_err_clear(&e);
}

static int reap_pass(struct worker *w, long long now, struct pd_err *e)
{
	int requeued, dead;

	long long next_ms;

	w->next_reap = now + w->cfg->lease_ms / 2;
	if (pd_reap_pass(w->d.db, &requeued, &dead, e) < 0 ||
	    pd_jobs_next_expiry(w->d.db, &next_ms, e) < 0)
		return pd_daemon_db_failed(&w->d, e);
	if (requeued || dead)
		pd_log(PD_LOG_INFO, "expired leases given back", "requeued=%d dead=%d", requeued,
		       dead);
	/*
	 * Wake when the earliest lease expires (a little after, so that it has;
	 * not sooner than 50 ms), and at least every half lease.
	 */
	if (next_ms >= 0 && now + next_ms + 10 < w->next_reap)
		w->next_reap = now + (next_ms + 10 > 50 ? next_ms + 10 : 50);
	return 0;
}

static int on_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	static const char *any[] = {"*"};
	struct worker *w = d->ctx;

	(void)first;
	if (w->flight)
		batch_failed(w); /* sent on the old connection: its start records go again */
	if (pd_worker_register(d->db, w->d.id, w->d.host, (int)getpid(), w->cfg->queues,
			       w->cfg->nqueues, w->types ? w->types : any, w->types ? w->ntypes : 1,
			       (int)w->cfg->engine.concurrency, e) < 0)
		return -1;
	return 0;
}

static int on_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct worker *w = d->ctx;

	if (!pd_daemon_up(d))
		return 0;
	if (sync_db(w, now, e) < 0)
		return -1;
	if (pd_daemon_up(d) && w->flight == NULL && w->cfg->reap && now >= w->next_reap &&
	    reap_pass(w, now, e) < 0)
		return -1;
	return 0;
}

static int starts_to_send(const struct worker *w)
{
	for (int i = 0; i < w->pool.size; i++)
		if (w->started[i] == START_TO_SEND)
			return 1;
	return 0;
}

static long long deadline(struct pd_daemon *d)
{
	struct worker *w = d->ctx;
	long long t = pd_pool_deadline(&w->pool);

	if (!pd_daemon_up(d))
		return t;
	if (w->nready > 0 && w->d.phase == PD_DAEMON_SERVING && pd_pool_free_slot(&w->pool) >= 0)
		return pd_now_ms(); /* started at once */
	if (w->flight)
		return t; /* its results wake the loop */
	if (pd_pool_count(&w->pool, PD_SLOT_DONE) > 0 || fin_unsent(w) || starts_to_send(w) ||
	    (w->nready > 0 && w->d.phase != PD_DAEMON_SERVING) ||
	    (w->d.wake && w->d.phase == PD_DAEMON_SERVING && pd_pool_free_slot(&w->pool) >= 0))
		return pd_now_ms(); /* written, released or claimed at once */
	if (pd_pool_busy(&w->pool) > 0 || w->nready > 0)
		t = pd_deadline_min(t, w->next_beat);
	if (w->d.phase == PD_DAEMON_SERVING) {
		t = pd_deadline_min(t, w->next_claim);
		t = pd_deadline_min(t, w->next_due);
	}
	if (w->cfg->reap)
		t = pd_deadline_min(t, w->next_reap);
	return t;
}

static int on_notify(struct pd_daemon *d, const char *channel, const char *payload)
{
	struct worker *w = d->ctx;

	(void)channel;
	for (int i = 0; i < w->cfg->nqueues; i++)
		if (payload == NULL || strcmp(payload, w->cfg->queues[i]) == 0)
			return 1;
	return 0;
}

static const char *const worker_channels[] = {"pendulum_jobs", NULL};

static const struct pd_daemon_ops worker_ops = {
    .kind = {"worker", worker_channels, "jobs", "handlers"},
    .on_connect = on_connect,
    .on_tick = on_tick,
    .deadline = deadline,
    .on_notify = on_notify,
};

int pd_worker_run(const struct pd_worker_cfg *cfg, struct pd_db *db, struct pd_err *e)
{
	struct worker w = {.cfg = cfg, .next_due = -1};
	int rc;

	w.types = pd_xcalloc((size_t)cfg->nhandlers + 1, sizeof(*w.types));
	for (int i = 0; i < cfg->nhandlers; i++) {
		if (strcmp(cfg->handlers[i].name, "*") == 0) {
			free(w.types);
			w.types = NULL;
			w.ntypes = 0;
			break;
		}
		w.types[w.ntypes++] = cfg->handlers[i].name;
	}
	pd_pool_init(&w.pool, (int)cfg->engine.concurrency, (size_t)cfg->result_limit,
		     cfg->engine.grace_ms, "handler stderr");
	w.jobs = pd_xcalloc((size_t)cfg->engine.concurrency, sizeof(*w.jobs));
	w.started = pd_xcalloc((size_t)cfg->engine.concurrency, sizeof(*w.started));
	w.ready = pd_xcalloc((size_t)cfg->engine.concurrency * 2, sizeof(*w.ready));
	pd_daemon_init(&w.d, &worker_ops, db, &w, &w.pool, &cfg->engine);
	rc = pd_daemon_open(&w.d, e);
	if (rc == 0) {
		pd_log(PD_LOG_INFO, "worker started",
		       "worker=%s concurrency=%lld queues=%d handlers=%d", w.d.id,
		       cfg->engine.concurrency, cfg->nqueues, cfg->nhandlers);
		rc = pd_daemon_run(&w.d, e);
		/* Release what the drain stopped (or what is left after an error). */
		if (pd_daemon_up(&w.d)) {
			struct pd_err ue = PD_ERR_INIT;

			w.d.phase = PD_DAEMON_STOPPING; /* claims nothing more */
			pd_pool_tick(&w.pool, pd_now_ms());
			sync_final(&w);
			pd_worker_unregister(db, w.d.id, &ue);
		}
		pd_log(PD_LOG_INFO, "worker stopped", "worker=%s", w.d.id);
	}
	pd_daemon_close(&w.d);
	for (int i = 0; i < w.pool.size; i++)
		job_clear(&w.jobs[i]);
	for (int k = 0; k < w.nready; k++)
		job_clear(&w.ready[k]);
	for (int k = 0; k < w.nfin; k++) {
		job_clear(&w.fin[k].job);
		pd_pool_exit_release(&w.fin[k].exit);
	}
	free(w.fin);
	if (w.flight)
		batch_failed(&w);
	pd_pool_release(&w.pool);
	free(w.jobs);
	free(w.started);
	free(w.ready);
	free(w.types);
	return rc;
}
