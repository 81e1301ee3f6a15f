#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "flow.h"
#include "jobs.h"
#include "json.h"
#include "log.h"
#include "pool.h"
#include "reap.h"
#include "retry.h"
#include "stream.h"
#include "text.h"
#include "worker.h"

#define MAX_BATCH_BYTES (16 * 1024 * 1024) /* outcome bytes sent in one round trip */

/*
 * Stream handlers at once, old ones still answering after a reload
 * included: their slots are allocated at start (the loop sizes its poll
 * array then, and a stream's process points back at its slot).
 */
#define MAX_STREAMS 64

extern char **environ;

/* Whether the database knows that a slot's handler started. */
enum start_record {
	START_RECORDED,	 /* claimed straight to RUNNING, or the start was written */
	START_TO_SEND,	 /* started from the ready jobs (LEASED): the next batch writes RUNNING,
			    or, once the handler is over, its outcome records the start too */
	START_IN_FLIGHT, /* in the batch in flight */
};

/* Where a job in flight runs. */
enum run_kind {
	RUN_FREE,    /* no job */
	RUN_PROCESS, /* in the pool slot of the same index */
	RUN_STREAM,  /* written to a stream handler (lib/stream), not answered yet */
};

/*
 * A job in flight: the concurrency is how many of these a worker has, for
 * process and stream handlers alike. runs[i] of kind RUN_PROCESS is pool
 * slot i's job (a pool slot is busy only while its run is).
 */
struct run {
	enum run_kind kind;
	int stream; /* RUN_STREAM: its index in streams */
	int lost;   /* RUN_STREAM: the lease is lost, the answer will be dropped */
	enum start_record started;
	long long since_us; /* pd_now_us() at start */
	struct pd_claimed job;
	struct pd_flow_plan *plan; /* a workflow job's (owned), else NULL */
};

/* A job claimed ahead of a free run (LEASED), with its handler looked up once. */
struct held {
	struct pd_claimed job;
	const struct pd_handler *h; /* NULL: none (cannot happen: the claim filters on types) */
	int stream;		    /* h's stream, or -1: a process per job */
	struct pd_flow_plan *plan;  /* a workflow job's (owned): h is its step's, or NULL */
};

/*
 * How a finished job's outcome goes to the database. A batch the database
 * refuses for its data (batch_refused) is no reason to stop: its outcomes go
 * again one per round trip, and one refused on its own is written as a
 * retryable failure with the database's reason.
 */
enum write_fate {
	WRITE_BATCHED, /* with the others */
	WRITE_ALONE,   /* in a refused batch: alone in its round trip */
	WRITE_REFUSED, /* refused alone: a failure, exit.error the reason, nothing else */
	WRITE_DROP,    /* refused even so: not written (the lease expires; the reaper) */
};

/*
 * A job whose handler is over, taken out of its run (which is free again at
 * once) until its outcome is written.
 */
struct finished {
	struct pd_claimed job;
	struct pd_pool_exit exit; /* out: the result as judge_result settled it */
	int out_is_text;	  /* out is the handler's text as a JSON string */
	enum start_record started;
	enum write_fate fate;
	int stream;		   /* run by a stream handler */
	int sending;		   /* in the batch in flight */
	struct pd_flow_plan *plan; /* a workflow job's (owned), else NULL */
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
 * Ready jobs: claimed LEASED ahead of a free run, so that a run that comes
 * free starts its next job without waiting for a round trip. How many are
 * held is the prefetch depth, sized from what was measured: as many as the
 * runs that come free during two round trips (concurrency x 2 x rtt /
 * handler run time), at most the concurrency, or, with stream handlers, at
 * most twice the batch (so that every round trip can carry a whole batch of
 * outcomes and claims while the handler works through the previous one).
 * Handlers that run long compared with a round trip get none: their jobs
 * stay claimable by idle workers, and claims go straight to RUNNING.
 */
struct worker {
	const struct pd_worker_cfg *cfg; /* the caller's, or own after a reload */
	struct pd_worker_cfg *own;	 /* the settings of the last reload, or NULL */
	struct pd_reload_keep kept;	 /* the settings reloads replaced (work may point in) */
	int reregister;			 /* a reload changed what the workers row says */
	struct pd_daemon d;
	struct pd_pool pool;
	struct run *runs;   /* concurrency of them */
	struct held *ready; /* claimed LEASED, not started; FIFO but for jobs that must wait */
	int nready, capready;
	struct finished *fin; /* outcomes to write, in the order the handlers ended */
	int nfin, capfin;
	struct pd_stream *streams; /* MAX_STREAMS slots; one per stream handler, started at
				      its first job, and old ones a reload left (streams_map) */
	int nstreams;
	char *stream_old;   /* stream_old[k]: no current handler uses stream k: closed once idle */
	int *stream_of;	    /* stream_of[h]: handler h's stream, or -1 */
	char **stream_env;  /* the stream handlers' environment */
	struct pd_buf line; /* a job's line for a stream handler, reused */
	const char **types; /* the claim's filter; NULL: any type */
	int ntypes;
	char **flow_types; /* the workflow job types in types (owned), NULL-terminated */
	long long next_claim, next_beat, next_reap, next_due, next_ext;
	long long next_prune; /* the reap pass prunes from then on (pd_reap_pass) */
	long long poll_ms;    /* the claim poll's interval now (pd_idle_poll) */
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

/* Append to v[0..*n) those of add[0..nadd) whose type none of v[0..given) names. */
static void merge_more(struct pd_handler *v, int *n, int given, const struct pd_handler *add,
		       int nadd)
{
	for (int i = 0; i < nadd; i++) {
		const struct pd_handler *f = pd_handler_find(v, given, add[i].name);

		if (f == NULL || strcmp(f->name, add[i].name) != 0)
			v[(*n)++] = add[i];
	}
}

/* The handlers given, then the ext's and the file's for the other types, into w->merged. */
static void merge_handlers(struct pd_worker_cfg *w, const struct pd_config *cfg)
{
	int next = w->ext ? w->ext->nhandlers : 0;
	struct pd_handler *v =
	    pd_xcalloc((size_t)(w->nhandlers + next + cfg->nhandlers) + 1, sizeof(*v));
	int n = w->nhandlers;

	if (n > 0)
		memcpy(v, w->handlers, (size_t)n * sizeof(*v));
	if (next)
		merge_more(v, &n, w->nhandlers, w->ext->handlers, next);
	merge_more(v, &n, n, cfg->handlers, cfg->nhandlers);
	free(w->merged);
	w->merged = v;
	w->handlers = v;
	w->nhandlers = n;
}

void pd_worker_cfg_release(struct pd_worker_cfg *w)
{
	free(w->merged);
	w->merged = NULL;
}

int pd_worker_settle(struct pd_worker_cfg *w, const struct pd_config *cfg, struct pd_err *e)
{
	int lease_given = w->lease_ms >= 0;

	pd_engine_cfg_settle(&w->engine, &cfg->worker.engine);
	merge_handlers(w, cfg);
	w->flows = cfg->flows;
	w->nflows = cfg->nflows;
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
	w->retention = cfg->retention;
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
	for (int i = 0; i < w->nhandlers; i++)
		if (pd_handler_check(&w->handlers[i], "handler", e) < 0)
			return -1;
	for (int i = 0; i < w->nflows; i++)
		for (int k = 0; k < w->flows[i].nsteps; k++)
			if (pd_handler_check(&w->flows[i].steps[k].h, "workflow step", e) < 0)
				return -1;
	return 0;
}

static char *envvar(const char *k, const char *v)
{
	size_t n = strlen(k) + strlen(v) + 2;
	char *s = pd_xmalloc(n);

	snprintf(s, n, "%s=%s", k, v);
	return s;
}

/*
 * The worker's environment without the variables the handler contract sets
 * (DESIGN.md), with room for extra more and the NULL; *k: how many are set.
 */
static char **env_base(size_t extra, size_t *k)
{
	static const char *ours[] = {"PD_JOB_ID",	   "PD_JOB_TYPE", "PD_QUEUE",
				     "PD_TENANT",	   "PD_ATTEMPT",  "PD_MAX_ATTEMPTS",
				     "PD_LEASE_TOKEN",	   "PD_RUN_AT",	  "PD_IDEMPOTENCY_KEY",
				     "PD_REPLAY_COUNT",	   "TRACEPARENT", "PD_WORKER_ID",
				     "PD_WORKFLOW_RUN_ID", "PD_WORKFLOW", "PD_STEP_NAME",
				     "PD_STEP_INDEX",	   NULL};
	size_t n = 0;
	char **env;

	while (environ[n])
		n++;
	env = pd_xcalloc(n + extra + 1, sizeof(*env));
	*k = 0;
	for (size_t i = 0; i < n; i++) {
		int skip = 0;

		for (int o = 0; ours[o] && !skip; o++) {
			size_t l = strlen(ours[o]);

			skip = strncmp(environ[i], ours[o], l) == 0 && environ[i][l] == '=';
		}
		if (!skip)
			env[(*k)++] = pd_xstrdup(environ[i]);
	}
	return env;
}

/*
 * The worker's environment plus the job's PD_* variables (DESIGN.md, the
 * handler contract), and a workflow step's (plan not NULL).
 */
/* Set h's variables ("NAME=value") in env[0..*k), replacing the worker's of the same name. */
static void handler_env(const struct pd_handler *h, char **env, size_t *k)
{
	for (int i = 0; h && h->env && h->env[i]; i++) {
		size_t l = strcspn(h->env[i], "="), o = 0;

		while (o < *k && !(strncmp(env[o], h->env[i], l) == 0 && env[o][l] == '='))
			o++;
		if (o == *k)
			(*k)++;
		else
			free(env[o]);
		env[o] = pd_xstrdup(h->env[i]);
	}
}

static char **build_env(const struct pd_claimed *j, const char *worker,
			const struct pd_flow_plan *plan, const struct pd_handler *h)
{
	size_t k, nh = 0;
	char num[24], **env;

	while (h && h->env && h->env[nh])
		nh++;
	env = env_base(19 + nh, &k);
	handler_env(h, env, &k); /* first: a job's PD_* variable is never replaced */

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
	if (plan) {
		snprintf(num, sizeof(num), "%lld", plan->run);
		env[k++] = envvar("PD_WORKFLOW_RUN_ID", num);
		env[k++] = envvar("PD_WORKFLOW", plan->def->name);
		env[k++] = envvar("PD_STEP_NAME", plan->s->name);
		snprintf(num, sizeof(num), "%d", plan->step);
		env[k++] = envvar("PD_STEP_INDEX", num);
	}
	env[k] = NULL;
	return env;
}

/* A stream handler's environment: the worker's, with PD_WORKER_ID; no job's. */
static char **stream_env(const char *worker)
{
	size_t k;
	char **env = env_base(1, &k);

	env[k++] = envvar("PD_WORKER_ID", worker);
	env[k] = NULL;
	return env;
}

static void env_free(char **env)
{
	for (char **e = env; e && *e; e++)
		free(*e);
	free(env);
}

/*
 * The job's line for a stream handler (pd-worker(1), "Stream handlers"):
 * one JSON object, no newline (the payload is jsonb's text, which has none).
 */
static void job_line(struct pd_buf *b, const struct pd_claimed *j)
{
	pd_buf_reset(b);
	pd_buf_printf(b, "{\"id\":%lld,\"attempt\":%d,\"lease_token\":%lld,\"type\":", j->id,
		      j->attempt, j->token);
	pd_json_quote_or_null(b, j->type);
	pd_json_member_str(b, "queue", j->queue);
	pd_json_member_str(b, "tenant", j->tenant);
	pd_json_member_str(b, "traceparent", j->traceparent);
	pd_json_member_raw(b, "payload", j->payload);
	pd_buf_printf(b, ",\"max_attempts\":%d,\"replay_count\":%d,\"run_at\":", j->max_attempts,
		      j->replay_count);
	pd_json_quote_or_null(b, j->run_at);
	pd_json_member_str(b, "idempotency_key", j->idempotency_key);
	pd_buf_putc(b, '}');
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
	free(j->flow);
	memset(j, 0, sizeof(*j));
}

static void plan_free(struct pd_flow_plan **p)
{
	if (*p == NULL)
		return;
	pd_flow_plan_release(*p);
	free(*p);
	*p = NULL;
}

static void average(long long *avg, long long sample);

/* A new zeroed entry at the end of the finished list. */
static struct finished *fin_add(struct worker *w)
{
	struct finished *f;

	if (w->nfin == w->capfin) {
		w->capfin = w->capfin ? 2 * w->capfin : 2 * w->pool.size;
		w->fin = pd_xrealloc(w->fin, (size_t)w->capfin * sizeof(*w->fin));
	}
	f = &w->fin[w->nfin++];
	w->d.idle = 0; /* its outcome may make work runnable (dependencies, retries) */
	memset(f, 0, sizeof(*f));
	return f;
}

/*
 * Settle once what a handler that exited 0 printed (DESIGN.md, the handler
 * contract): JSON that jsonb can store is the result as it is; text that is
 * not JSON, or was cut at the limit, becomes a JSON string (invalid UTF-8 as
 * U+FFFD); JSON that jsonb cannot store (a number out of numeric's range, a
 * \u0000, invalid UTF-8 in a string), or more than jsonb holds in one value
 * (a worker.result_limit set above PD_JSON_JSONB_MAX), fails the attempt,
 * retryable, with the reason, and nothing of it is written.
 */
static void judge_result(struct finished *f)
{
	struct pd_pool_exit *ex = &f->exit;
	struct pd_err e = PD_ERR_INIT;
	int rc;

	if (ex->cls != PD_EXIT_OK || ex->out.len == 0)
		return;
	rc = ex->out_truncated ? -1 : pd_json_storable(ex->out.data, ex->out.len, &e);
	if (rc < 0) {
		struct pd_buf clean = PD_BUF_INIT, quoted = PD_BUF_INIT;

		pd_utf8_sanitize(&clean, pd_buf_str(&ex->out), ex->out.len);
		pd_json_quote(&quoted, pd_buf_str(&clean), clean.len);
		pd_buf_release(&clean);
		pd_buf_release(&ex->out);
		ex->out = quoted;
		f->out_is_text = 1;
	}
	if (rc != 0 && ex->out.len <= PD_JSON_JSONB_MAX)
		return;
	if (rc != 0) { /* a worker.result_limit above what jsonb holds */
		pd_err_clear(&e);
		pd_errf(&e, PD_EX_DATAERR, "%zu bytes, more than jsonb holds (%d)", ex->out.len,
			PD_JSON_JSONB_MAX);
	}
	ex->cls = PD_EXIT_FAILED;
	pd_buf_reset(&ex->error);
	pd_buf_printf(&ex->error, "result cannot be stored: %s", e.msg);
	pd_buf_release(&ex->out);
	ex->out_truncated = 0;
	f->out_is_text = 0;
}

/* Run i's handler is over with exit x (taken): its job to the finished list, the run free. */
static void run_over(struct worker *w, int i, const struct pd_pool_exit *x)
{
	struct run *r = &w->runs[i];
	struct finished *f = fin_add(w);

	f->job = r->job;
	f->started = r->started;
	f->stream = r->kind == RUN_STREAM;
	f->exit = *x;
	f->plan = r->plan;
	memset(r, 0, sizeof(*r));
	r->kind = RUN_FREE;
	r->started = START_RECORDED;
	if (f->exit.cls == PD_EXIT_OK || f->exit.cls == PD_EXIT_FAILED ||
	    f->exit.cls == PD_EXIT_TERMINAL)
		average(&w->run_us, f->exit.ran_us > 0 ? f->exit.ran_us : 1);
	judge_result(f);
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

/* Drop the finished jobs whose outcomes the batch just written carried. */
static void fin_written(struct worker *w)
{
	int k = 0;

	for (int i = 0; i < w->nfin; i++) {
		if (w->fin[i].sending) {
			job_clear(&w->fin[i].job);
			pd_pool_exit_release(&w->fin[i].exit);
			plan_free(&w->fin[i].plan);
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
	long long conc = w->cfg->engine.concurrency, cap = conc, d;

	if (w->nstreams > 0 && 2 * w->cfg->engine.batch > cap)
		cap = 2 * w->cfg->engine.batch;
	if (w->rtt_us == 0 || w->run_us == 0)
		return 0;
	d = (2 * conc * w->rtt_us + w->run_us / 2) / w->run_us;
	return d > cap ? (int)cap : (int)d;
}

/* The index of a free run, or -1. */
static int run_free(const struct worker *w)
{
	for (int i = 0; i < w->pool.size; i++)
		if (w->runs[i].kind == RUN_FREE)
			return i;
	return -1;
}

static int runs_free(const struct worker *w)
{
	int n = 0;

	for (int i = 0; i < w->pool.size; i++)
		n += w->runs[i].kind == RUN_FREE;
	return n;
}

/* Ready job r can start in a free run now: its stream handler (if any) takes it. */
static int can_start(const struct worker *w, const struct held *r)
{
	return r->stream < 0 || pd_stream_can_take(&w->streams[r->stream], r->job.id);
}

/*
 * The handler for a claimed job, and its stream: into a held job, which
 * takes c's strings. A workflow job gets its plan, and its step's handler
 * when the plan is to run one (else none: see finish_now).
 */
static void hold(const struct worker *w, struct held *r, const struct pd_claimed *c)
{
	int hi;

	memset(r, 0, sizeof(*r));
	r->job = *c;
	if (strncmp(c->type, PD_FLOW_JOB_PREFIX, strlen(PD_FLOW_JOB_PREFIX)) == 0) {
		const char *name = c->type + strlen(PD_FLOW_JOB_PREFIX);

		r->plan = pd_xcalloc(1, sizeof(*r->plan));
		*r->plan = (struct pd_flow_plan)PD_FLOW_PLAN_INIT;
		pd_flow_plan(pd_flow_find(w->cfg->flows, w->cfg->nflows, name), name, c->flow,
			     r->plan);
		r->h = r->plan->action == PD_FLOW_RUN ? &r->plan->s->h : NULL;
		r->stream = -1;
		return;
	}
	r->h = pd_handler_find(w->cfg->handlers, w->cfg->nhandlers, c->type);
	hi = r->h ? (int)(r->h - w->cfg->handlers) : -1;
	r->stream = hi >= 0 ? w->stream_of[hi] : -1;
}

/* Held job r is a workflow job with no handler to run this time (its plan's action). */
static int needs_no_run(const struct held *r)
{
	return r->plan && r->plan->action != PD_FLOW_RUN;
}

/*
 * Held job r (needs_no_run) is over at once: to the finished list as if a
 * handler had ended now, its outcome from its plan (flow_outcome). Takes r's
 * strings and plan.
 */
static void finish_now(struct worker *w, struct held *r)
{
	struct finished *f = fin_add(w);

	f->job = r->job;
	f->plan = r->plan;
	f->started = START_RECORDED;
	f->exit.started_us = pd_now_us();
	f->exit.exit_code = -1;
	f->exit.cls = r->plan->action == PD_FLOW_RETRY ? PD_EXIT_FAILED : PD_EXIT_OK;
	memset(r, 0, sizeof(*r));
}

/* Start ready job r in a free run (there is one); the run takes r's strings. */
static void start_job(struct worker *w, struct held *r, enum start_record rec)
{
	int i = run_free(w);
	const struct pd_claimed *j;
	struct pd_pool_job pj;
	struct run *run;
	long long timeout;
	char prefix[64];

	if (i < 0) { /* cannot happen: the callers look first */
		pd_log(PD_LOG_ERROR, "no free run for a claimed job", "job=%lld", r->job.id);
		job_clear(&r->job);
		return;
	}
	run = &w->runs[i];
	run->job = r->job;
	run->plan = r->plan;
	run->started = rec;
	run->lost = 0;
	run->since_us = pd_now_us();
	j = &run->job;
	timeout = j->timeout_ms >= 0 ? j->timeout_ms : r->h ? r->h->timeout_ms : 0;
	snprintf(prefix, sizeof(prefix), "job=%lld attempt=%d", j->id, j->attempt);
	pd_log(PD_LOG_DEBUG, "job started", "%s type=%s token=%lld", prefix, j->type, j->token);
	if (r->stream >= 0) {
		run->kind = RUN_STREAM;
		run->stream = r->stream;
		job_line(&w->line, j);
		pd_stream_send(&w->streams[r->stream], j->id, i, prefix, timeout, w->line.data,
			       w->line.len);
		return;
	}
	run->kind = RUN_PROCESS;
	memset(&pj, 0, sizeof(pj));
	pj.h = r->h;
	pj.envp = build_env(j, w->d.id, run->plan, r->h);
	pj.input = run->plan ? run->plan->stdin_json.data : j->payload;
	pj.input_len = strlen(pj.input);
	pj.timeout_ms = timeout;
	pj.prefix = prefix;
	if (r->h == NULL) {
		/* The claim filters on the handled types; a '*' handler takes all. */
		static const struct pd_handler none = {
		    (char *)"?", (char *)"exit 70", NULL, -1, {0}, 0};

		pj.h = &none;
	}
	pd_pool_start(&w->pool, i, &pj);
}

/*
 * Start ready jobs, oldest first, while runs are free; a job whose stream
 * handler cannot take it now (restarting) waits, and the later ones go on.
 */
static void start_ready(struct worker *w)
{
	int kept = 0, nfree, k;

	if (w->d.phase != PD_DAEMON_SERVING || w->nready == 0)
		return;
	nfree = runs_free(w);
	for (k = 0; k < w->nready && nfree > 0; k++) {
		if (can_start(w, &w->ready[k])) {
			start_job(w, &w->ready[k], START_TO_SEND);
			nfree--;
			continue;
		}
		w->ready[kept++] = w->ready[k];
	}
	memmove(w->ready + kept, w->ready + k, (size_t)(w->nready - k) * sizeof(*w->ready));
	w->nready = kept + (w->nready - k);
}

/* A ready job would start now. */
static int startable(const struct worker *w)
{
	if (w->d.phase != PD_DAEMON_SERVING || w->nready == 0 || run_free(w) < 0)
		return 0;
	for (int k = 0; k < w->nready; k++)
		if (can_start(w, &w->ready[k]))
			return 1;
	return 0;
}

/* Add held job r to the ready jobs (which take its strings and plan). */
static void ready_add(struct worker *w, const struct held *r)
{
	if (w->nready == w->capready) {
		w->capready = w->capready ? 2 * w->capready : 64;
		w->ready = pd_xrealloc(w->ready, (size_t)w->capready * sizeof(*w->ready));
	}
	w->ready[w->nready++] = *r;
}

/* Drop ready job k (its strings freed); the later ones move up. */
static void ready_drop(struct worker *w, int k)
{
	job_clear(&w->ready[k].job);
	plan_free(&w->ready[k].plan);
	memmove(w->ready + k, w->ready + k + 1, (size_t)(w->nready - k - 1) * sizeof(*w->ready));
	w->nready--;
}

/*
 * What workflow job f's outcome x (as outcome_of made it from the exit)
 * writes to its run, and what its plan makes of the job's own outcome.
 * Strings point into f.
 */
static void flow_outcome(const struct finished *f, struct pd_job_outcome *x)
{
	static const char *const step_kinds[] = {"run", "sleep", "wait_for"};
	const struct pd_flow_plan *p = f->plan;
	struct pd_outcome *o = &x->o;
	struct pd_flow_write *fw = &o->flow;

	fw->run = p->run;
	fw->step = p->step;
	fw->attempts = f->job.attempt;
	fw->steps = p->steps.len ? p->steps.data : NULL;
	fw->wait_ms = -1;
	if (p->s) {
		fw->step_name = p->s->name;
		fw->step_kind = step_kinds[p->s->kind];
	}
	switch (p->action) {
	case PD_FLOW_RUN:
		if (o->kind != PD_VERDICT_DONE)
			return; /* a failed step: the job's retry or dead letter alone */
		fw->kind = PD_FLOW_WRITE_STEP;
		fw->output = o->result ? o->result : "null";
		fw->output_is_text = o->result_is_text;
		fw->output_truncated = o->result_truncated;
		fw->ran_ms = f->exit.ran_us / 1000;
		fw->last = p->last;
		return;
	case PD_FLOW_ADVANCE:
		fw->kind = PD_FLOW_WRITE_STEP;
		fw->output = p->output.data;
		fw->sleep_ms = p->s->kind == PD_FLOW_STEP_SLEEP ? p->s->sleep_ms : 0;
		fw->signal = p->consumes_signal ? p->s->signal : NULL;
		fw->last = p->last && fw->sleep_ms == 0;
		o->backoff_ms = fw->sleep_ms; /* the next step is due after the sleep */
		o->result = fw->last ? fw->output : NULL;
		return;
	case PD_FLOW_PARK:
		fw->kind = PD_FLOW_WRITE_PARK;
		fw->signal = p->s->signal;
		fw->wait_ms = p->s->wait_ms;
		o->kind = PD_VERDICT_RELEASE;
		o->outcome = pd_exit_class_name(PD_EXIT_DRAINED);
		return;
	case PD_FLOW_FINISH:
		o->result = p->output.data;
		return;
	case PD_FLOW_FAIL:
		fw->kind = p->unpark ? PD_FLOW_WRITE_UNPARK : PD_FLOW_WRITE_NONE;
		o->kind = PD_VERDICT_DEAD;
		o->outcome = pd_exit_class_name(PD_EXIT_TERMINAL);
		o->error = o->dead_reason = p->reason.data;
		return;
	case PD_FLOW_RETRY:
		o->error = p->reason.data; /* the exit (PD_EXIT_FAILED) made it a retry */
		return;
	}
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
	o->stderr_tail = ex->tail.len && f->fate != WRITE_REFUSED ? ex->tail.data : NULL;
	o->error = ex->error.len ? ex->error.data : NULL;
	o->kind = pd_exit_verdict(ex->cls);
	switch (o->kind) {
	case PD_VERDICT_DONE:
		o->result = ex->out.len ? ex->out.data : NULL; /* judge_result settled it */
		o->result_is_text = f->out_is_text;
		o->result_truncated = ex->out_truncated;
		break;
	case PD_VERDICT_RETRY:
		o->backoff_ms = pd_backoff_ms(&w->d.rng, w->cfg->retry.base_ms,
					      w->cfg->retry.cap_ms, f->job.attempt);
		break;
	case PD_VERDICT_DEAD:
		o->dead_reason = ex->cls == PD_EXIT_CANNOT_RUN ? o->error
				 : f->stream		       ? "terminal error"
							       : "terminal exit code";
		break;
	case PD_VERDICT_RELEASE:
		break;
	}
	if (f->plan && f->fate != WRITE_REFUSED)
		flow_outcome(f, x);
}

static void log_outcome(const struct pd_claimed *j, const struct pd_job_outcome *x)
{
	const struct pd_flow_write *fw = &x->o.flow;
	char q[300], name[160], step[200] = "";

	if (fw->run > 0) /* a workflow job: which run, and the step it was at */
		snprintf(step, sizeof(step), " run=%lld step=%s", fw->run,
			 fw->step_name ? pd_log_quote(name, sizeof(name), fw->step_name) : "-");
	if (!x->applied) {
		pd_log(PD_LOG_WARN, "fenced: the lease was taken over, outcome not written",
		       "job=%lld attempt=%d outcome=%s%s", j->id, j->attempt, x->o.outcome, step);
		return;
	}
	pd_log(PD_LOG_INFO, "job done", "job=%lld attempt=%d outcome=%s state=%s%s%s%s", j->id,
	       j->attempt, x->o.outcome, x->state, step, x->o.error ? " error=" : "",
	       x->o.error ? pd_log_quote(q, sizeof(q), x->o.error) : "");
}

/*
 * The leases to heartbeat: runs in RUNNING slots, and in STOPPING ones not
 * stopped for a lost lease; stream jobs in flight whose lease is not known
 * lost. A handler that has already exited is left out: its outcome is on
 * its way, and that write goes through the fence (and is counted if fenced)
 * rather than being dropped as a lost lease.
 */
static int holds_lease(const struct worker *w, int i)
{
	const struct pd_pool_slot *s = &w->pool.slots[i];

	switch (w->runs[i].kind) {
	case RUN_FREE:
		return 0;
	case RUN_STREAM:
		return !w->runs[i].lost;
	case RUN_PROCESS:
		break;
	}
	if (s->proc.reaped)
		return 0;
	return s->state == PD_SLOT_RUNNING ||
	       (s->state == PD_SLOT_STOPPING && s->stop != PD_STOP_LEASE_LOST);
}

/*
 * When run i's start is to be written (pd_now_us), or -1: not to be. A
 * handler process's at once; a stream job's once it has been in flight for
 * a round trip, since most are answered sooner and their outcome records
 * the start too, in the same write.
 */
static long long start_due(const struct worker *w, int i)
{
	const struct run *r = &w->runs[i];

	if (r->kind == RUN_FREE || r->started != START_TO_SEND || r->lost)
		return -1;
	return r->kind == RUN_STREAM ? r->since_us + w->rtt_us : r->since_us;
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
		if (w->runs[i].started == START_IN_FLIGHT)
			w->runs[i].started = START_TO_SEND;
	for (int k = 0; k < w->nfin; k++) {
		w->fin[k].sending = 0;
		if (w->fin[k].started == START_IN_FLIGHT)
			w->fin[k].started = START_TO_SEND;
	}
	batch_free(w->flight);
	w->flight = NULL;
}

/* Drop the finished jobs whose outcomes will not be written (WRITE_DROP). */
static void fin_drop(struct worker *w)
{
	int k = 0;

	for (int i = 0; i < w->nfin; i++) {
		if (w->fin[i].fate == WRITE_DROP) {
			job_clear(&w->fin[i].job);
			pd_pool_exit_release(&w->fin[i].exit);
			plan_free(&w->fin[i].plan);
			continue;
		}
		w->fin[k++] = w->fin[i];
	}
	w->nfin = k;
}

/*
 * The batch in flight failed with e. When the database refused its data
 * (SQLSTATE class 22 data exception, 23 integrity, 54 program limit: an
 * outcome it cannot store that judge_result let through) and it carried
 * outcomes, the worker goes on: each outcome goes again in a round trip of
 * its own; one refused alone is written as a retryable failure whose reason
 * is the database's message, without result, stderr or workflow write; one
 * refused even so is not written (its lease expires and the reaper gives it
 * back). Returns 1 when so (the batch is dropped, e stays to be cleared),
 * 0 when e stands.
 */
static int batch_refused(struct worker *w, const struct pd_err *e)
{
	static const char prefix[] = "database error: ";
	struct batch *b = w->flight;
	const char *why = e->msg;
	int nout = 0, last = -1;
	char q[600];

	if (e->code == PD_EX_UNAVAILABLE || !pd_db_data_error(e->sqlstate))
		return 0;
	for (int k = 0; k < b->s.noutcomes; k++) {
		if (b->out_fin[k] >= 0) {
			nout++;
			last = b->out_fin[k];
		}
	}
	if (nout == 0)
		return 0;
	if (strncmp(why, prefix, sizeof(prefix) - 1) == 0)
		why += sizeof(prefix) - 1;
	pd_log_quote(q, sizeof(q), why);
	if (nout > 1) {
		pd_log(PD_LOG_WARN,
		       "the database refused a batch: its outcomes go again one at a time",
		       "outcomes=%d sqlstate=%s error=%s", nout, e->sqlstate, q);
		for (int k = 0; k < b->s.noutcomes; k++)
			if (b->out_fin[k] >= 0)
				w->fin[b->out_fin[k]].fate = WRITE_ALONE;
	} else if (w->fin[last].fate == WRITE_REFUSED) {
		w->fin[last].fate = WRITE_DROP;
		pd_log(PD_LOG_ERROR,
		       "the database refused a job's outcome even as a failure: not written, "
		       "the lease will expire",
		       "job=%lld attempt=%d sqlstate=%s error=%s", w->fin[last].job.id,
		       w->fin[last].job.attempt, e->sqlstate, q);
	} else {
		struct finished *f = &w->fin[last];

		pd_log(PD_LOG_WARN, "the database refused a job's outcome: written as a failure",
		       "job=%lld attempt=%d sqlstate=%s error=%s", f->job.id, f->job.attempt,
		       e->sqlstate, q);
		f->fate = WRITE_REFUSED;
		f->exit.cls = PD_EXIT_FAILED;
		pd_buf_reset(&f->exit.error);
		pd_buf_printf(&f->exit.error, "outcome cannot be stored: %s", why);
	}
	batch_failed(w);
	fin_drop(w);
	w->d.wake = 1;
	return 1;
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
	long long now_us = pd_now_us();
	int alone = 0; /* a refused batch's outcomes are being sent one at a time */

	for (int k = 0; k < w->nfin && !alone; k++)
		alone = w->fin[k].fate != WRITE_BATCHED;

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
		long long due = start_due(w, i);

		if (due >= 0 && due <= now_us) {
			start_ids[nstart] = w->runs[i].job.id;
			start_tokens[nstart++] = w->runs[i].job.token;
			w->runs[i].started = START_IN_FLIGHT;
		}
	}
	for (int k = 0; k < w->nfin; k++) {
		struct finished *f = &w->fin[k];

		long long ago_ms;

		if (bytes > MAX_BATCH_BYTES || (alone && nout + nlost > 0))
			break; /* the rest in the next batch */
		if (alone && f->fate == WRITE_BATCHED)
			continue;
		f->sending = 1;
		ago_ms = (now_us - f->exit.started_us) / 1000; /* since its handler started */
		if (f->exit.cls == PD_EXIT_LEASE_LOST) {
			/* the job row gets nothing, its start neither: lease_lost only */
			if (f->started == START_TO_SEND)
				f->started = START_IN_FLIGHT;
			lost_ids[nlost] = f->job.id;
			lost_tokens[nlost] = f->job.token;
			lost_attempts[nlost] = f->job.attempt;
			lost_ago[nlost] = ago_ms;
			b->lost_fin[nlost++] = k;
			continue;
		}
		outcome_of(w, f, &b->outs[nout]);
		if (f->started == START_TO_SEND) {
			/* over before its start was written: the outcome records both */
			b->outs[nout].o.started_ago_ms = ago_ms;
			f->started = START_IN_FLIGHT;
		}
		bytes += f->exit.out.len + f->exit.tail.len + 256;
		b->out_fin[nout++] = k;
	}
	if (w->d.phase != PD_DAEMON_SERVING && !alone) {
		for (int k = 0; k < w->nready; k++) {
			ready_release(&w->ready[k].job, &b->outs[nout]);
			b->out_fin[nout++] = -1;
			b->nrel++;
		}
	}
	s->beat = now >= w->next_beat;
	if (s->beat) {
		for (int i = 0; i < size; i++) {
			if (!holds_lease(w, i))
				continue;
			beat_ids[nbeat] = w->runs[i].job.id;
			beat_tokens[nbeat++] = w->runs[i].job.token;
		}
		for (int k = 0; k < w->nready && b->nrel == 0; k++) {
			beat_ids[nbeat] = w->ready[k].job.id;
			beat_tokens[nbeat++] = w->ready[k].job.token;
		}
	}
	/* The runs free now, less the ready jobs waiting for them. */
	free_now = runs_free(w) - w->nready;
	depth = prefetch_depth(w);
	if (!alone && want_claim(w, now) && free_now + depth > 0) {
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

/*
 * The lease of token t is lost: stop the handler holding it, or abandon the
 * stream job (its answer will be dropped), or drop the ready job.
 */
static void lease_lost(struct worker *w, long long id, long long t)
{
	for (int i = 0; i < w->pool.size; i++) {
		struct run *r = &w->runs[i];

		if (r->kind == RUN_FREE || r->job.token != t)
			continue;
		if (r->kind == RUN_STREAM) {
			pd_log(PD_LOG_WARN,
			       "lease lost: the stream handler's answer will be dropped",
			       "job=%lld attempt=%d", id, r->job.attempt);
			r->lost = 1;
			pd_stream_abandon(&w->streams[r->stream], i);
			return;
		}
		pd_log(PD_LOG_WARN, "lease lost: stopping the handler", "job=%lld attempt=%d", id,
		       r->job.attempt);
		pd_pool_stop(&w->pool, i, PD_STOP_LEASE_LOST);
		return;
	}
	for (int k = 0; k < w->nready; k++) {
		if (w->ready[k].job.token != t)
			continue;
		pd_log(PD_LOG_WARN, "lease lost: a ready job dropped before it started",
		       "job=%lld attempt=%d", id, w->ready[k].job.attempt);
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
	pd_log(PD_LOG_DEBUG, "batch written",
	       "starts=%d outcomes=%d lost=%d beat=%d claim=%d claimed=%d rtt_us=%lld "
	       "avg_rtt_us=%lld avg_run_us=%lld ready=%d",
	       s->nstart, s->noutcomes, s->nlost, s->beat, s->claim, s->nclaimed,
	       pd_now_us() - b->sent_us, w->rtt_us, w->run_us, w->nready);
	if (s->claim > 0)
		average(&w->rtt_us, pd_now_us() - b->sent_us);
	for (int i = 0; i < w->pool.size; i++)
		if (w->runs[i].started == START_IN_FLIGHT)
			w->runs[i].started = START_RECORDED;
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
		const struct finished *f = &w->fin[b->lost_fin[k]];

		pd_log(PD_LOG_WARN,
		       f->stream ? "lease lost: the answer dropped, nothing written"
				 : "lease lost: handler stopped, nothing written",
		       "job=%lld attempt=%d", f->job.id, f->job.attempt);
	}
	fin_written(w);
	/* Idle: the claim found nothing after every outcome so far was written. */
	if (s->claim > 0) {
		w->d.idle = s->nclaimed == 0 && w->nready == 0 && w->nfin == 0;
		/* with nothing running either, poll less often (woken by notifications) */
		w->poll_ms = pd_idle_poll(w->poll_ms, w->cfg->engine.poll_ms,
					  w->d.idle && runs_free(w) == w->pool.size);
		w->next_claim = b->sent_ms + w->poll_ms;
	}
	for (int k = 0; k < s->nbeat; k++)
		if (!s->held[k])
			lease_lost(w, s->beat_ids[k], s->beat_tokens[k]);
	if (b->nrel > 0) {
		pd_log(PD_LOG_INFO, "ready jobs released", "jobs=%d", b->nrel);
		for (int k = 0; k < b->nrel && w->nready > 0; k++)
			ready_drop(w, 0);
	}
	for (int k = 0; k < s->nclaimed; k++) {
		struct held r;

		hold(w, &r, &s->claimed[k]);
		if (needs_no_run(&r)) {
			finish_now(w, &r);
			continue;
		}
		if (s->claim_start && w->d.phase == PD_DAEMON_SERVING && run_free(w) >= 0 &&
		    can_start(w, &r)) {
			start_job(w, &r, START_RECORDED);
			continue;
		}
		/* Held until a run is free; released if the worker stops serving. */
		ready_add(w, &r);
	}
	free(s->claimed); /* the strings now belong to the slots and the ready jobs */
	if (s->noutcomes > 0 || s->nlost > 0)
		w->d.wake = 1; /* slots came free */
	batch_free(b);
}

static int register_row(struct pd_daemon *d, int first, struct pd_err *e);

/* The workers row again after a reload (queues, job types): nothing in flight. */
static int reregister(struct worker *w, struct pd_err *e)
{
	if (register_row(&w->d, 0, e) < 0)
		return pd_daemon_db_failed(&w->d, e);
	return 0;
}

/*
 * The worker's part of a pass: start ready jobs in free slots, collect the
 * batch in flight if its results are in, and send the next one.
 */
/* The reap pass or the program's periodic work (ext) is due. */
static int side_due(const struct worker *w, long long now)
{
	if (w->cfg->reap && now >= w->next_reap)
		return 1;
	return w->cfg->ext && w->d.phase == PD_DAEMON_SERVING && now >= w->next_ext;
}

static int sync_db(struct worker *w, long long now, struct pd_err *e)
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
		int rc = pd_jobs_sync_collect(w->d.db, &w->flight->s, e);

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
static void sync_final(struct worker *w)
{
	struct pd_err e = PD_ERR_INIT;
	int rounds = 4 + 3 * w->nfin; /* a refused batch's outcomes go one at a time */

	for (int round = 0; round < rounds && pd_daemon_up(&w->d); round++) {
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

	if (pd_reap_pass(w->d.db, &w->cfg->retention, &w->next_prune, &next_ms, &requeued, &dead,
			 e) < 0)
		return pd_daemon_db_failed(&w->d, e);
	if (requeued || dead)
		pd_log(PD_LOG_INFO, "expired leases given back", "requeued=%d dead=%d", requeued,
		       dead);
	/*
	 * Next when the earliest lease expires (a little after, so that it has;
	 * not sooner than 50 ms), or a lease from now when nothing is leased (a
	 * lease this worker claims meanwhile expires later than that), and at
	 * the latest when the prune is due (soon while rows are left).
	 */
	w->next_reap = now + w->cfg->lease_ms;
	if (next_ms >= 0 && now + next_ms + 10 < w->next_reap)
		w->next_reap = now + (next_ms + 10 > 50 ? next_ms + 10 : 50);
	if (w->next_prune < w->next_reap)
		w->next_reap = w->next_prune > now ? w->next_prune : now + 100;
	return 0;
}

/* The workers row (also again after a reload, on the same session). */
static int register_row(struct pd_daemon *d, int first, struct pd_err *e)
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
static int release_unheld(struct worker *w, struct pd_err *e)
{
	long long *t = pd_xcalloc((size_t)(w->pool.size + w->nready + w->nfin) + 1, sizeof(*t));
	int n = 0, released, rc;

	for (int i = 0; i < w->pool.size; i++)
		if (w->runs[i].kind != RUN_FREE)
			t[n++] = w->runs[i].job.token;
	for (int k = 0; k < w->nready; k++)
		t[n++] = w->ready[k].job.token;
	for (int k = 0; k < w->nfin; k++)
		t[n++] = w->fin[k].job.token;
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

/*
 * A new session: the program's hook, the workers row, and after a
 * reconnect the leases it does not hold.
 */
static int on_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	struct worker *w = d->ctx;

	if (w->cfg->ext && w->cfg->ext->connect)
		w->cfg->ext->connect(w->cfg->ext);
	if (register_row(d, first, e) < 0)
		return -1;
	return first ? 0 : release_unheld(w, e);
}

/* Runs in use: jobs in flight. */
static int runs_busy(const struct worker *w)
{
	return w->pool.size - runs_free(w);
}

/*
 * The stream handlers' part of a pass, after the database's (which may
 * have found the worker idle), database or not: on a drain, release the
 * jobs waiting to be re-sent (suspects of a handler's death, lib/stream)
 * with the attempt refunded, close the idle handlers (end of file), and once
 * the drain timeout has passed stop them all, their jobs released; with
 * until_idle, close them once idle. Then write the job lines of this pass,
 * in one write per stream handler.
 */
static void streams_pass(struct worker *w)
{
	int quit = w->d.phase == PD_DAEMON_STOPPING;
	int calm = w->d.phase == PD_DAEMON_DRAINING ||
		   (w->d.until_idle && w->d.idle && w->nready == 0 && w->nfin == 0);

	for (int k = 0; k < w->nstreams; k++) {
		struct pd_stream *s = &w->streams[k];

		if (w->d.phase == PD_DAEMON_DRAINING)
			pd_stream_give_back(s);
		if (quit)
			pd_stream_stop(s, PD_STOP_DRAIN);
		else if (calm || w->stream_old[k])
			pd_stream_close(s);
		pd_stream_flush(s);
	}
}

/* The program's periodic work (struct pd_worker_ext), between batches. */
static int ext_pass(struct worker *w, long long now, struct pd_err *e)
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

static int on_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct worker *w = d->ctx;
	int rc = 0;

	/* Deadlines and exits first: their outcomes go in this pass's batch. */
	for (int k = 0; k < w->nstreams; k++)
		pd_stream_tick(&w->streams[k], now);
	if (pd_daemon_up(d)) {
		rc = sync_db(w, now, e);
		if (rc == 0 && pd_daemon_up(d) && w->flight == NULL && w->cfg->reap &&
		    now >= w->next_reap)
			rc = reap_pass(w, now, e);
		if (rc == 0 && pd_daemon_up(d) && w->flight == NULL && w->cfg->ext &&
		    d->phase == PD_DAEMON_SERVING && now >= w->next_ext)
			rc = ext_pass(w, now, e);
	}
	streams_pass(w);
	return rc;
}

/* When the next start record is due (pd_now_us), or -1. */
static long long starts_due(const struct worker *w)
{
	long long t = -1;

	for (int i = 0; i < w->pool.size; i++) {
		long long due = start_due(w, i);

		if (due >= 0 && (t < 0 || due < t))
			t = due;
	}
	return t;
}

static int streams_outcomes(const struct worker *w)
{
	for (int k = 0; k < w->nstreams; k++)
		if (pd_stream_outcomes(&w->streams[k]) > 0)
			return 1;
	return 0;
}

static long long deadline(struct pd_daemon *d)
{
	struct worker *w = d->ctx;
	long long t = pd_pool_deadline(&w->pool), now = pd_now_ms(), start;

	for (int k = 0; k < w->nstreams; k++)
		t = pd_deadline_min(t, pd_stream_deadline(&w->streams[k]));
	if (!pd_daemon_up(d))
		return t;
	if (startable(w))
		return now; /* started at once */
	if (w->flight)
		return t; /* its results wake the loop */
	start = starts_due(w);
	if (pd_pool_count(&w->pool, PD_SLOT_DONE) > 0 || streams_outcomes(w) || fin_unsent(w) ||
	    (start >= 0 && start <= pd_now_us()) ||
	    (w->nready > 0 && w->d.phase != PD_DAEMON_SERVING) ||
	    (w->d.wake && w->d.phase == PD_DAEMON_SERVING && run_free(w) >= 0))
		return now; /* written, released or claimed at once */
	if (start >= 0)
		t = pd_deadline_min(t, (start + 999) / 1000);
	if (runs_busy(w) > 0 || w->nready > 0)
		t = pd_deadline_min(t, w->next_beat);
	if (w->d.phase == PD_DAEMON_SERVING) {
		t = pd_deadline_min(t, w->next_claim);
		t = pd_deadline_min(t, w->next_due);
	}
	if (w->cfg->reap)
		t = pd_deadline_min(t, w->next_reap);
	if (w->cfg->ext && w->d.phase == PD_DAEMON_SERVING)
		t = pd_deadline_min(t, w->next_ext);
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

static int pollfds(struct pd_daemon *d, struct pollfd *fds, int max)
{
	struct worker *w = d->ctx;
	int n = 0;

	for (int k = 0; k < w->nstreams; k++)
		n += pd_stream_pollfds(&w->streams[k], fds + n, max - n);
	return n;
}

static void on_io(struct pd_daemon *d, const struct pollfd *fds, int n)
{
	struct worker *w = d->ctx;

	for (int k = 0; k < w->nstreams; k++)
		pd_stream_io(&w->streams[k], fds, n);
}

/* The pool's waitpid(-1) collected a child not in the pool: a stream handler's? */
static int adopt(void *ctx, pid_t pid, int wstatus)
{
	struct worker *w = ctx;

	for (int k = 0; k < w->nstreams; k++)
		if (pd_stream_reap(&w->streams[k], pid, wstatus))
			return 1;
	return 0;
}

/*
 * The loop ends once nothing is in flight and no stream handler is left,
 * and the worker is past serving (drained) or, with until_idle, idle.
 */
static int finished(struct pd_daemon *d)
{
	struct worker *w = d->ctx;

	if (pd_pool_busy(&w->pool) > 0 || runs_busy(w) > 0)
		return 0;
	for (int k = 0; k < w->nstreams; k++)
		if (pd_stream_live(&w->streams[k]))
			return 0;
	if (d->phase != PD_DAEMON_SERVING)
		return 1;
	return d->until_idle && d->idle && pd_daemon_up(d);
}

/* A stop signal: the daemon logged its pool's children; say what the stream handlers hold. */
static void on_stop(struct pd_daemon *d, int sig, int count)
{
	struct worker *w = d->ctx;
	int n = 0;

	(void)sig;
	if (w->nstreams == 0)
		return;
	for (int k = 0; k < w->nstreams; k++)
		n += pd_stream_inflight(&w->streams[k]);
	pd_log(PD_LOG_INFO, count > 1 ? "stream handlers stopped now" : "stream handlers draining",
	       "in_flight=%d", n);
}

/* The status line for the service manager: "idle", or "running 3 of 4, 2 ready". */
static void status(struct pd_daemon *d, struct pd_buf *b)
{
	struct worker *w = d->ctx;
	int running = w->pool.size - runs_free(w);

	if (running == 0 && w->nready == 0)
		pd_buf_puts(b, "idle");
	else
		pd_buf_printf(b, "running %d of %d, %d ready", running, w->pool.size, w->nready);
}
static void on_reload(struct pd_daemon *d);

static const char *const worker_channels[] = {"pendulum_jobs", NULL};

static const struct pd_daemon_ops worker_ops = {
    .kind = {"worker", worker_channels, "jobs", "handlers"},
    .on_connect = on_connect,
    .on_tick = on_tick,
    .deadline = deadline,
    .pollfds = pollfds,
    .on_io = on_io,
    .on_notify = on_notify,
    .on_stop = on_stop,
    .status = status,
    .on_reload = on_reload,
    .finished = finished,
};

/* Stream k runs h's command with the current settings: it can serve h. */
static int stream_fits(const struct worker *w, int k, const struct pd_handler *h)
{
	const struct pd_stream_cfg *c = &w->streams[k].cfg;

	return strcmp(c->name, h->name) == 0 && pd_handler_same_command(c->h, h) &&
	       c->result_limit == (size_t)w->cfg->result_limit &&
	       c->grace_ms == w->cfg->engine.grace_ms;
}

/* Stream k may take another command: no process, nothing in flight or to take, no job for it. */
static int stream_free(const struct worker *w, int k)
{
	const struct pd_stream *s = &w->streams[k];

	if (pd_stream_live(s) || pd_stream_inflight(s) > 0 || pd_stream_outcomes(s) > 0)
		return 0;
	for (int i = 0; i < w->nready; i++)
		if (w->ready[i].stream == k)
			return 0;
	return 1;
}

/*
 * Give every stream handler of the current settings a stream: the one
 * running its very command already (its process goes on), else a stream no
 * longer in use, else a new one; none runs until its first job. The
 * streams left over are old: closed once the jobs in flight in them are
 * answered (streams_pass). -1 with e filled, nothing changed, when that
 * takes more than MAX_STREAMS.
 */
static int streams_map(struct worker *w, struct pd_err *e)
{
	const struct pd_worker_cfg *cfg = w->cfg;
	int *of = pd_xcalloc((size_t)cfg->nhandlers + 1, sizeof(*of));
	char used[MAX_STREAMS] = {0};
	int want = 0, avail = MAX_STREAMS - w->nstreams;

	for (int i = 0; i < cfg->nhandlers; i++) {
		of[i] = -1;
		if (cfg->handlers[i].mode != PD_HANDLER_STREAM)
			continue;
		for (int k = 0; k < w->nstreams && of[i] < 0; k++)
			if (!used[k] && stream_fits(w, k, &cfg->handlers[i]))
				used[k] = 1, of[i] = k;
		want += of[i] < 0;
	}
	for (int k = 0; k < w->nstreams; k++)
		avail += !used[k] && stream_free(w, k);
	if (want > avail) {
		free(of);
		return pd_errf(e, PD_EX_CONFIG,
			       "too many stream handlers: at most %d, old ones still answering "
			       "included",
			       MAX_STREAMS);
	}
	for (int i = 0; i < cfg->nhandlers; i++) {
		struct pd_stream_cfg sc;
		int k = 0;

		if (cfg->handlers[i].mode != PD_HANDLER_STREAM || of[i] >= 0)
			continue;
		while (k < w->nstreams && (used[k] || !stream_free(w, k)))
			k++;
		if (k < w->nstreams)
			pd_stream_release(&w->streams[k]);
		else
			w->nstreams++;
		memset(&sc, 0, sizeof(sc));
		sc.name = cfg->handlers[i].name;
		sc.h = &cfg->handlers[i];
		sc.envp = w->stream_env;
		sc.result_limit = (size_t)cfg->result_limit;
		sc.grace_ms = cfg->engine.grace_ms;
		sc.rng = &w->d.rng;
		pd_stream_init(&w->streams[k], &sc);
		used[k] = 1;
		of[i] = k;
	}
	for (int k = 0; k < w->nstreams; k++)
		w->stream_old[k] = !used[k];
	free(w->stream_of);
	w->stream_of = of;
	return 0;
}

/* The stream slots, and the current stream handlers' streams. */
static int streams_init(struct worker *w, struct pd_err *e)
{
	w->stream_env = stream_env(w->d.id);
	w->streams = pd_xcalloc(MAX_STREAMS, sizeof(*w->streams));
	w->stream_old = pd_xcalloc(MAX_STREAMS, 1);
	w->pool.adopt = adopt;
	w->pool.adopt_ctx = w;
	w->d.maxfds = PD_PROC_MAX_FDS * MAX_STREAMS;
	return streams_map(w, e);
}

/* The free of the claim's type filter. */
static void claim_types_free(struct worker *w)
{
	free(w->types);
	for (int i = 0; w->flow_types && w->flow_types[i]; i++)
		free(w->flow_types[i]);
	free(w->flow_types);
	w->types = NULL;
	w->flow_types = NULL;
	w->ntypes = 0;
}

/*
 * The claim's type filter from the current settings: the workflows' job
 * types and the handlers' types, or none (NULL) when a '*' handler takes
 * any type.
 */
static void claim_types(struct worker *w)
{
	const struct pd_worker_cfg *cfg = w->cfg;

	claim_types_free(w);
	w->types = pd_xcalloc((size_t)(cfg->nhandlers + cfg->nflows) + 1, sizeof(*w->types));
	w->flow_types = pd_xcalloc((size_t)cfg->nflows + 1, sizeof(*w->flow_types));
	for (int i = 0; i < cfg->nflows; i++) {
		struct pd_buf t = PD_BUF_INIT;

		pd_buf_printf(&t, "%s%s", PD_FLOW_JOB_PREFIX, cfg->flows[i].name);
		w->types[w->ntypes++] = w->flow_types[i] = pd_buf_detach(&t);
	}
	for (int i = 0; i < cfg->nhandlers; i++) {
		if (strcmp(cfg->handlers[i].name, "*") == 0) {
			free(w->types);
			w->types = NULL;
			w->ntypes = 0;
			break;
		}
		w->types[w->ntypes++] = cfg->handlers[i].name;
	}
}

/* Ready jobs (claimed ahead, not started) take the new handler for their type, if any. */
static void ready_rehold(struct worker *w)
{
	for (int k = 0; k < w->nready; k++) {
		struct held *r = &w->ready[k];
		const struct pd_handler *h;

		if (r->plan != NULL)
			continue; /* a workflow job: planned on the definition it was claimed under
				   */
		h = pd_handler_find(w->cfg->handlers, w->cfg->nhandlers, r->job.type);
		if (h == NULL)
			continue; /* no longer handled here: it runs on the old handler */
		r->h = h;
		r->stream = w->stream_of[h - w->cfg->handlers];
	}
}

static void cfg_free(void *p)
{
	pd_worker_cfg_release(p);
}

/* SIGHUP's apply step (lib/reload): the flags over the new file, then move onto them. */
static int reload_apply(void *arg, const struct pd_config *c, struct pd_buf *summary,
			struct pd_err *e)
{
	struct worker *w = arg;
	const struct pd_worker_cfg *was = w->cfg;
	struct pd_worker_cfg *next = pd_xmalloc(sizeof(*next));
	long long now = pd_now_ms();

	*next = *was->flags;
	next->flags = was->flags;
	next->source = was->source;
	next->merged = NULL;
	pd_reload_pin_concurrency(&next->engine, &c->worker.engine, w->pool.size, "worker");
	if (next->ext && next->ext->reload && next->ext->reload(next->ext, e) < 0)
		goto refuse;
	if (next->ext)
		w->next_ext = now; /* the new version applied at the next pass */
	if (pd_worker_settle(next, c, e) < 0)
		goto refuse;
	if (next->nhandlers == 0 && next->nflows == 0) {
		pd_errf(e, PD_EX_CONFIG,
			"no handlers and no workflows: a worker would claim nothing");
		goto refuse;
	}
	w->cfg = next;
	if (streams_map(w, e) < 0) {
		w->cfg = was;
		goto refuse;
	}
	if (w->own)
		pd_reload_keep(&w->kept, w->own);
	w->own = next;
	claim_types(w);
	ready_rehold(w);
	w->pool.grace_ms = next->engine.grace_ms;
	w->pool.stdout_limit = (size_t)next->result_limit;
	w->d.drain_ms = next->engine.drain_ms;
	w->next_claim = pd_deadline_min(w->next_claim, now + next->engine.poll_ms);
	w->next_beat = pd_deadline_min(w->next_beat, now + next->heartbeat_ms);
	w->d.wake = 1; /* claim at once: there may be jobs of new types */
	w->d.idle = 0;
	w->reregister = 1;
	pd_buf_printf(summary, "handlers=%d workflows=%d queues=%d", next->nhandlers, next->nflows,
		      next->nqueues);
	return 0;
refuse:
	pd_worker_cfg_release(next);
	free(next);
	return -1;
}

static void on_reload(struct pd_daemon *d)
{
	struct worker *w = d->ctx;

	/* an engine started without its flags kept has nothing to settle a file over */
	pd_reload(w->cfg->flags ? &w->cfg->source : NULL, "worker", reload_apply, w);
}

int pd_worker_run(const struct pd_worker_cfg *cfg, struct pd_db *db, struct pd_err *e)
{
	struct worker w = {.cfg = cfg, .next_due = -1};
	int rc, nstream = 0;

	for (int i = 0; i < cfg->nhandlers; i++)
		nstream += cfg->handlers[i].mode == PD_HANDLER_STREAM;
	if (nstream > MAX_STREAMS)
		return pd_errf(e, PD_EX_USAGE, "too many stream handlers: %d, at most %d", nstream,
			       MAX_STREAMS);

	claim_types(&w);
	pd_pool_init(&w.pool, (int)cfg->engine.concurrency, (size_t)cfg->result_limit,
		     cfg->engine.grace_ms, "handler stderr");
	w.runs = pd_xcalloc((size_t)cfg->engine.concurrency, sizeof(*w.runs));
	pd_daemon_init(&w.d, &worker_ops, db, &w, &w.pool, &cfg->engine);
	rc = pd_daemon_open(&w.d, e);
	if (rc == 0) {
		streams_init(&w, e); /* cannot fail: counted above */
		pd_log(PD_LOG_INFO, "worker started",
		       "worker=%s concurrency=%lld queues=%d handlers=%d streams=%d", w.d.id,
		       cfg->engine.concurrency, cfg->nqueues, cfg->nhandlers, w.nstreams);
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
	for (int k = 0; k < w.nstreams; k++)
		pd_stream_release(&w.streams[k]);
	for (int i = 0; i < w.pool.size; i++) {
		job_clear(&w.runs[i].job);
		plan_free(&w.runs[i].plan);
	}
	while (w.nready > 0)
		ready_drop(&w, w.nready - 1);
	for (int k = 0; k < w.nfin; k++) {
		job_clear(&w.fin[k].job);
		pd_pool_exit_release(&w.fin[k].exit);
		plan_free(&w.fin[k].plan);
	}
	free(w.fin);
	if (w.flight)
		batch_failed(&w);
	pd_pool_release(&w.pool);
	free(w.runs);
	free(w.ready);
	free(w.streams);
	free(w.stream_old);
	free(w.stream_of);
	env_free(w.stream_env);
	pd_buf_release(&w.line);
	claim_types_free(&w);
	if (w.own) {
		pd_worker_cfg_release(w.own);
		free(w.own);
	}
	pd_reload_keep_release(&w.kept, cfg_free);
	return rc;
}
