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

struct worker {
	const struct pd_worker_cfg *cfg;
	struct pd_daemon d;
	struct pd_pool pool;
	struct pd_claimed *jobs; /* jobs[i]: the job in pool slot i */
	const char **types;	 /* the claim's filter; NULL: any type */
	int ntypes;
	int wake; /* claim at the next pass */
	long long next_claim, next_beat, next_reap, next_due;
};

void pd_worker_cfg_init(struct pd_worker_cfg *w)
{
	memset(w, 0, sizeof(*w));
	w->concurrency = w->batch = w->lease_ms = w->heartbeat_ms = w->poll_ms = w->drain_ms = -1;
	w->grace_ms = w->result_limit = w->retry_base_ms = w->retry_cap_ms = -1;
	w->reap = -1;
}

int pd_worker_settle(struct pd_worker_cfg *w, const struct pd_config *cfg, struct pd_err *e)
{
	int lease_given = w->lease_ms >= 0;

	if (w->concurrency < 0)
		w->concurrency = cfg->worker.concurrency;
	if (w->batch < 0)
		w->batch = cfg->worker.batch > 0 ? cfg->worker.batch : w->concurrency;
	if (w->lease_ms < 0)
		w->lease_ms = cfg->worker.lease_ms;
	if (w->heartbeat_ms < 0)
		w->heartbeat_ms = cfg->worker.heartbeat_ms >= 0 && !lease_given
				      ? cfg->worker.heartbeat_ms
				      : w->lease_ms / 3;
	if (w->poll_ms < 0)
		w->poll_ms = cfg->worker.poll_ms;
	if (w->drain_ms < 0)
		w->drain_ms = cfg->worker.drain_timeout_ms;
	if (w->grace_ms < 0)
		w->grace_ms = cfg->worker.kill_grace_ms;
	if (w->result_limit < 0)
		w->result_limit = cfg->worker.result_limit;
	if (w->retry_base_ms < 0)
		w->retry_base_ms = cfg->retry.base_ms;
	if (w->retry_cap_ms < 0)
		w->retry_cap_ms = cfg->retry.cap_ms;
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
	if (w->poll_ms <= 0)
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
static char **build_env(const struct pd_claimed *j)
{
	static const char *ours[] = {"PD_JOB_ID",	"PD_JOB_TYPE", "PD_QUEUE",
				     "PD_TENANT",	"PD_ATTEMPT",  "PD_MAX_ATTEMPTS",
				     "PD_LEASE_TOKEN",	"PD_RUN_AT",   "PD_IDEMPOTENCY_KEY",
				     "PD_REPLAY_COUNT", "TRACEPARENT", NULL};
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

static void slot_free(struct worker *w, int i)
{
	pd_pool_clear(&w->pool, i);
	job_clear(&w->jobs[i]);
}

/* Start claimed job j in a free slot; the slot takes j's strings. */
static void start_job(struct worker *w, struct pd_claimed *j)
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
	j = &w->jobs[i];
	h = pd_handler_find(w->cfg->handlers, w->cfg->nhandlers, j->type);
	snprintf(prefix, sizeof(prefix), "job=%lld attempt=%d", j->id, j->attempt);
	pd_log(PD_LOG_DEBUG, "job started", "%s type=%s token=%lld", prefix, j->type, j->token);
	memset(&pj, 0, sizeof(pj));
	pj.h = h;
	pj.envp = build_env(j);
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

/*
 * The job's outcome from slot i's exit (DESIGN.md, the handler contract).
 * Strings point into the slot: valid until it is cleared.
 */
static void outcome_of(struct worker *w, int i, struct pd_job_outcome *x)
{
	struct pd_pool_exit *ex = &w->pool.slots[i].exit;
	struct pd_outcome *o = &x->o;

	memset(x, 0, sizeof(*x));
	x->id = w->jobs[i].id;
	x->token = w->jobs[i].token;
	o->exit_code = ex->exit_code;
	o->signal = ex->signal;
	o->outcome = pd_exit_class_name(ex->cls);
	o->stderr_tail = ex->tail.len ? ex->tail.data : NULL;
	o->error = ex->error.len ? ex->error.data : NULL;
	switch (ex->cls) {
	case PD_EXIT_OK:
		o->kind = PD_FINISH_SUCCEEDED;
		o->result_truncated = ex->out_truncated;
		if (ex->out.len > 0) {
			struct pd_json j = PD_JSON_INIT;
			struct pd_err ignore = PD_ERR_INIT;

			if (!ex->out_truncated &&
			    pd_json_parse(&j, ex->out.data, ex->out.len, &ignore) == 0) {
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
		break;
	case PD_EXIT_TERMINAL:
		o->kind = PD_FINISH_DEAD;
		o->dead_reason = "terminal exit code";
		break;
	case PD_EXIT_DRAINED:
		o->kind = PD_FINISH_RELEASE;
		break;
	case PD_EXIT_FAILED:
	case PD_EXIT_TIMEOUT:
	case PD_EXIT_NOT_STARTED:
	case PD_EXIT_LEASE_LOST:
		o->kind = PD_FINISH_RETRY;
		o->backoff_ms = pd_backoff_ms(&w->d.rng, w->cfg->retry_base_ms,
					      w->cfg->retry_cap_ms, w->jobs[i].attempt);
		break;
	}
}

static void log_outcome(const struct worker *w, int i, const struct pd_job_outcome *x)
{
	const struct pd_claimed *j = &w->jobs[i];
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
	int free_slots = pd_pool_count(&w->pool, PD_SLOT_FREE);

	if (w->d.phase != PD_DAEMON_SERVING || free_slots == 0)
		return 0;
	if (!w->wake && now < w->next_claim && (w->next_due < 0 || now < w->next_due))
		return 0;
	return 1;
}

/* One round trip: outcomes, lease_lost records, heartbeat, claim. */
static int sync_db(struct worker *w, long long now, struct pd_err *e)
{
	int size = w->pool.size, nout = 0, nlost = 0, nbeat = 0, done_slots = 0, rc;
	struct pd_job_outcome *outs = pd_xcalloc((size_t)size, sizeof(*outs));
	long long *lost_ids = pd_xcalloc((size_t)size, sizeof(long long));
	long long *lost_tokens = pd_xcalloc((size_t)size, sizeof(long long));
	long long *beat_ids = pd_xcalloc((size_t)size, sizeof(long long));
	long long *beat_tokens = pd_xcalloc((size_t)size, sizeof(long long));
	int *held = pd_xcalloc((size_t)size, sizeof(int));
	int *out_slot = pd_xcalloc((size_t)size, sizeof(int));
	int *lost_slot = pd_xcalloc((size_t)size, sizeof(int));
	int *beat_slot = pd_xcalloc((size_t)size, sizeof(int));
	struct pd_jobs_sync s;
	size_t bytes = 0;

	memset(&s, 0, sizeof(s));
	for (int i = 0; i < size; i++) {
		struct pd_pool_slot *sl = &w->pool.slots[i];

		if (sl->state != PD_SLOT_DONE)
			continue;
		if (sl->exit.cls == PD_EXIT_LEASE_LOST) {
			lost_ids[nlost] = w->jobs[i].id;
			lost_tokens[nlost] = w->jobs[i].token;
			lost_slot[nlost++] = i;
			continue;
		}
		if (bytes > MAX_BATCH_BYTES)
			continue; /* next pass */
		outcome_of(w, i, &outs[nout]);
		bytes += sl->exit.out.len + sl->exit.tail.len + 256;
		out_slot[nout++] = i;
	}
	done_slots = nout + nlost;
	s.beat = now >= w->next_beat;
	if (s.beat) {
		for (int i = 0; i < size; i++) {
			if (!holds_lease(&w->pool.slots[i]))
				continue;
			beat_ids[nbeat] = w->jobs[i].id;
			beat_tokens[nbeat] = w->jobs[i].token;
			beat_slot[nbeat++] = i;
		}
	}
	if (want_claim(w, now)) {
		s.claim = pd_pool_count(&w->pool, PD_SLOT_FREE) + done_slots;
		if (s.claim > w->cfg->batch)
			s.claim = (int)w->cfg->batch;
	}
	s.outcomes = outs;
	s.noutcomes = nout;
	s.lost_ids = lost_ids;
	s.lost_tokens = lost_tokens;
	s.nlost = nlost;
	s.beat_ids = beat_ids;
	s.beat_tokens = beat_tokens;
	s.nbeat = nbeat;
	s.held = held;
	s.worker = w->d.id;
	s.lease_ms = w->cfg->lease_ms;
	s.queues = w->cfg->queues;
	s.nqueues = w->cfg->nqueues;
	s.types = w->types;
	s.ntypes = w->ntypes;
	rc = 0;
	if (nout + nlost > 0 || s.beat || s.claim > 0)
		rc = pd_jobs_sync(w->d.db, &s, e);
	if (rc < 0) {
		rc = pd_daemon_db_failed(&w->d, e);
		goto out;
	}
	if (s.claim > 0) {
		w->wake = s.nclaimed == s.claim; /* there may be more */
		w->d.idle = s.nclaimed == 0;
		w->next_claim = now + w->cfg->poll_ms;
		if (w->next_due >= 0 && w->next_due <= now)
			w->next_due = -1;
	}
	if (s.beat)
		w->next_beat = now + w->cfg->heartbeat_ms;
	for (int k = 0; k < nout; k++) {
		log_outcome(w, out_slot[k], &outs[k]);
		if (outs[k].applied && outs[k].due_in_ms >= 0) {
			long long due = pd_now_ms() + outs[k].due_in_ms;

			w->next_due = w->next_due < 0 || due < w->next_due ? due : w->next_due;
		}
		slot_free(w, out_slot[k]);
	}
	for (int k = 0; k < nlost; k++) {
		pd_log(PD_LOG_WARN, "lease lost: handler stopped, nothing written",
		       "job=%lld attempt=%d", w->jobs[lost_slot[k]].id,
		       w->jobs[lost_slot[k]].attempt);
		slot_free(w, lost_slot[k]);
	}
	for (int k = 0; k < nbeat; k++) {
		if (held[k])
			continue;
		pd_log(PD_LOG_WARN, "lease lost: stopping the handler", "job=%lld attempt=%d",
		       w->jobs[beat_slot[k]].id, w->jobs[beat_slot[k]].attempt);
		pd_pool_stop(&w->pool, beat_slot[k], PD_STOP_LEASE_LOST);
	}
	for (int k = 0; k < s.nclaimed; k++)
		start_job(w, &s.claimed[k]);
	free(s.claimed); /* the strings now belong to the slots */
	if (nout > 0 || nlost > 0)
		w->wake = 1; /* slots came free */
out:
	free(outs);
	free(lost_ids);
	free(lost_tokens);
	free(beat_ids);
	free(beat_tokens);
	free(held);
	free(out_slot);
	free(lost_slot);
	free(beat_slot);
	return rc;
}

static int reap_pass(struct worker *w, long long now, struct pd_err *e)
{
	int requeued, dead;

	w->next_reap = now + w->cfg->lease_ms / 2;
	if (pd_reap_pass(w->d.db, &requeued, &dead, e) < 0)
		return pd_daemon_db_failed(&w->d, e);
	if (requeued || dead)
		pd_log(PD_LOG_INFO, "expired leases given back", "requeued=%d dead=%d", requeued,
		       dead);
	return 0;
}

static int on_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	static const char *any[] = {"*"};
	struct worker *w = d->ctx;

	if (pd_worker_register(d->db, w->d.id, w->d.host, (int)getpid(), w->cfg->queues,
			       w->cfg->nqueues, w->types ? w->types : any, w->types ? w->ntypes : 1,
			       (int)w->cfg->concurrency, e) < 0)
		return -1;
	w->wake = 1;
	pd_log(first ? PD_LOG_DEBUG : PD_LOG_INFO, first ? "connected" : "reconnected", "worker=%s",
	       w->d.id);
	return 0;
}

static int on_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct worker *w = d->ctx;

	if (!pd_daemon_up(d))
		return 0;
	if (sync_db(w, now, e) < 0)
		return -1;
	if (pd_daemon_up(d) && w->cfg->reap && now >= w->next_reap && reap_pass(w, now, e) < 0)
		return -1;
	return 0;
}

static long long deadline(struct pd_daemon *d)
{
	struct worker *w = d->ctx;
	long long t = pd_pool_deadline(&w->pool);

	if (pd_daemon_up(d)) {
		if (pd_pool_count(&w->pool, PD_SLOT_DONE) > 0 ||
		    (w->wake && w->d.phase == PD_DAEMON_SERVING &&
		     pd_pool_free_slot(&w->pool) >= 0))
			return pd_now_ms(); /* written or claimed at once */
		if (pd_pool_busy(&w->pool) > 0)
			t = pd_deadline_min(t, w->next_beat);
		if (w->d.phase == PD_DAEMON_SERVING) {
			t = pd_deadline_min(t, w->next_claim);
			t = pd_deadline_min(t, w->next_due);
		}
		if (w->cfg->reap)
			t = pd_deadline_min(t, w->next_reap);
	}
	return t;
}

static void on_notify(struct pd_daemon *d, const char *channel, const char *payload)
{
	struct worker *w = d->ctx;

	(void)channel;
	for (int i = 0; i < w->cfg->nqueues; i++)
		if (payload == NULL || strcmp(payload, w->cfg->queues[i]) == 0)
			w->wake = 1;
}

static const struct pd_daemon_ops worker_ops = {
    .on_connect = on_connect,
    .on_tick = on_tick,
    .deadline = deadline,
    .on_notify = on_notify,
};

int pd_worker_run(const struct pd_worker_cfg *cfg, struct pd_db *db, struct pd_err *e)
{
	static const char *const channels[] = {"pendulum_jobs", NULL};
	struct worker w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.cfg = cfg;
	w.next_due = -1;
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
	pd_pool_init(&w.pool, (int)cfg->concurrency, (size_t)cfg->result_limit, cfg->grace_ms,
		     "handler stderr");
	w.jobs = pd_xcalloc((size_t)cfg->concurrency, sizeof(*w.jobs));
	w.d.name = "worker";
	w.d.db = db;
	w.d.listen = channels;
	w.d.ops = &worker_ops;
	w.d.ctx = &w;
	w.d.pool = &w.pool;
	w.d.drain_ms = cfg->drain_ms;
	w.d.work = "jobs";
	w.d.children = "handlers";
	w.d.until_idle = cfg->until_idle;
	rc = pd_daemon_open(&w.d, e);
	if (rc == 0) {
		pd_log(PD_LOG_INFO, "worker started",
		       "worker=%s concurrency=%lld queues=%d handlers=%d", w.d.id, cfg->concurrency,
		       cfg->nqueues, cfg->nhandlers);
		rc = pd_daemon_run(&w.d, e);
		/* Release what the drain stopped (or what is left after an error). */
		if (pd_daemon_up(&w.d)) {
			struct pd_err ue = PD_ERR_INIT;

			w.d.phase = PD_DAEMON_STOPPING; /* claims nothing more */
			pd_pool_tick(&w.pool, pd_now_ms());
			if (pd_pool_count(&w.pool, PD_SLOT_DONE) > 0)
				sync_db(&w, pd_now_ms(), &ue);
			pd_err_clear(&ue);
			pd_worker_unregister(db, w.d.id, &ue);
		}
		pd_log(PD_LOG_INFO, "worker stopped", "worker=%s", w.d.id);
	}
	pd_daemon_close(&w.d);
	for (int i = 0; i < w.pool.size; i++)
		job_clear(&w.jobs[i]);
	pd_pool_release(&w.pool);
	free(w.jobs);
	free(w.types);
	return rc;
}
