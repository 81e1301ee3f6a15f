/*
 * worker: pd-worker's engine (worker.h): its settings, SIGHUP's reload, the
 * stream handlers' slots, and the hooks the daemon loop calls. The jobs it
 * holds are lib/hold's; its round trips lib/worksync's, each one a lib/trip.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "jobrun.h"
#include "log.h"
#include "text.h"
#include "worker-internal.h"

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
	w->hooks = cfg->hooks;
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
	if (w->nqueues == 0 && cfg->worker.nqueues > PD_WORKER_MAX_QUEUES)
		return pd_errf(e, PD_EX_CONFIG,
			       "%s: worker.queues names %d queues: a worker serves at most %d",
			       cfg->path ? cfg->path : "the configuration file",
			       cfg->worker.nqueues, PD_WORKER_MAX_QUEUES);
	if (w->nqueues == 0)
		for (int i = 0; i < cfg->worker.nqueues; i++)
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
	for (int i = 0; i < w->nhandlers; i++) {
		if (strcmp(w->handlers[i].name, PD_HOOK_TYPE) == 0)
			return pd_errf(e, PD_EX_USAGE, "job type '%s' is reserved for hook jobs",
				       PD_HOOK_TYPE);
		if (pd_handler_check(&w->handlers[i], "handler", e) < 0)
			return -1;
		for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++)
			if (w->handlers[i].hooks.on[ev] &&
			    pd_handler_check(w->handlers[i].hooks.on[ev], "hook", e) < 0)
				return -1;
	}
	for (int ev = 0; ev < PD_HOOK_NEVENTS; ev++)
		if (w->hooks.on[ev] && pd_handler_check(w->hooks.on[ev], "hook", e) < 0)
			return -1;
	for (int i = 0; i < w->nflows; i++)
		for (int k = 0; k < w->flows[i].nsteps; k++)
			if (pd_handler_check(&w->flows[i].steps[k].h, "workflow step", e) < 0)
				return -1;
	return 0;
}

/*
 * A new session: the program's hook, the workers row, and after a
 * reconnect the leases it does not hold.
 */
static int on_connect(struct pd_daemon *d, int first, struct pd_err *e)
{
	struct worker *w = d->ctx;

	if (first)
		pd_reap_lead_init(&w->lead, d->id, w->cfg->lease_ms);
	else
		pd_reap_lead_reset(&w->lead);
	if (w->cfg->ext && w->cfg->ext->connect)
		w->cfg->ext->connect(w->cfg->ext);
	if (pd_worksync_register(d, first, e) < 0)
		return -1;
	return first ? 0 : pd_worksync_release_unheld(w, e);
}

/* Runs in use: jobs in flight. */
static int runs_busy(const struct worker *w)
{
	return w->pool.size - pd_holdings_nfree(&w->hs);
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
	int calm =
	    w->d.phase == PD_DAEMON_DRAINING ||
	    ((w->d.until_idle || w->settled) && w->d.idle && w->hs.nready == 0 && w->hs.nfin == 0);

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

/*
 * A positive decimal at *p into *v, *p moved past it: digits only (no sign,
 * no white space), at most LLONG_MAX (a longer one is refused, never cut).
 * 0, or -1.
 */
static int request_num(const char **p, long long *v)
{
	const char *s = *p;
	long long n = 0;

	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (LLONG_MAX - (*s - '0')) / 10)
			return -1;
		n = n * 10 + (*s - '0');
	}
	if (s == *p || n <= 0)
		return -1;
	*p = s;
	*v = n;
	return 0;
}

int pd_worker_request_reply(struct worker *w, const char *q, const char **reply, struct pd_err *e)
{
	int lease = strncmp(q, "lease ", 6) == 0, held;
	const char *p = lease ? q + 6 : q;
	long long id, token;

	*reply = "unavailable";
	if (!lease || request_num(&p, &id) < 0 || *p++ != ' ' || request_num(&p, &token) < 0 ||
	    *p != '\0') {
		*reply = "error unknown request (want: lease JOBID TOKEN)";
		return 0;
	}
	if (!pd_daemon_up(&w->d))
		return 0;
	if ((held = pd_jobs_lease_held(w->d.db, id, token, e)) < 0)
		return -1;
	*reply = held == 2 ? "cancelled" : held ? "held" : "lost";
	return 0;
}

/* Requests waiting on the handlers' and the stream handlers' channels. */
int pd_worker_requests(const struct worker *w)
{
	int n = pd_pool_requests(&w->pool);

	for (int k = 0; k < w->nstreams; k++)
		n += pd_stream_request(&w->streams[k]) != NULL;
	return n;
}

/* Answer every request waiting (pd_worker_request_reply). */
static int requests_answer(struct worker *w, struct pd_err *e)
{
	const char *q, *reply;
	int rc = 0;

	for (int i = 0; i < w->pool.size; i++) {
		if ((q = pd_pool_request(&w->pool, i)) == NULL)
			continue;
		rc = rc < 0 ? rc : pd_worker_request_reply(w, q, &reply, e);
		pd_pool_answer(&w->pool, i, rc < 0 ? "unavailable" : reply);
	}
	for (int k = 0; k < w->nstreams; k++) {
		if ((q = pd_stream_request(&w->streams[k])) == NULL)
			continue;
		rc = rc < 0 ? rc : pd_worker_request_reply(w, q, &reply, e);
		pd_stream_answer(&w->streams[k], rc < 0 ? "unavailable" : reply);
	}
	return rc < 0 ? pd_daemon_db_failed(&w->d, e) : 0;
}

/*
 * until_settled, once idle with nothing held: is a job it serves still to
 * run without anyone's help (pd_jobs_unsettled, the horizon the retry
 * backoff's cap)? Looked at most once per claim poll.
 */
static int settle_look(struct worker *w, long long now, struct pd_err *e)
{
	long long id;
	char why[96];

	if (pd_jobs_unsettled(w->d.db, w->cfg->queues, w->cfg->nqueues, w->types, w->ntypes,
			      w->cfg->retry.cap_ms, &id, why, sizeof(why), e) < 0)
		return pd_daemon_db_failed(&w->d, e);
	w->next_settle = now + w->poll_ms;
	if (id > 0)
		pd_log(PD_LOG_DEBUG, "not settled", "job=%lld why=\"%s\"", id, why);
	w->settled = id == 0;
	if (w->settled)
		pd_log(PD_LOG_INFO, "settled", "queues=%d", w->cfg->nqueues);
	return 0;
}

static int on_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct worker *w = d->ctx;
	int rc = 0;

	if (!d->idle)
		w->settled = 0;

	/* Deadlines and exits first: their outcomes go in this pass's batch. */
	for (int k = 0; k < w->nstreams; k++)
		pd_stream_tick(&w->streams[k], now);
	if (pd_daemon_up(d)) {
		rc = pd_worksync_pass(w, now, e);
		if (rc == 0 && pd_daemon_up(d) && !w->flight && w->cfg->reap && now >= w->next_reap)
			rc = pd_worksync_reap(w, now, e);
		if (rc == 0 && pd_daemon_up(d) && !w->flight && w->cfg->ext &&
		    d->phase == PD_DAEMON_SERVING && now >= w->next_ext)
			rc = pd_worksync_ext(w, now, e);
		if (rc == 0 && pd_daemon_up(d) && !w->flight && w->cfg->engine.until_settled &&
		    d->phase == PD_DAEMON_SERVING && d->idle && !w->settled && runs_busy(w) == 0 &&
		    w->hs.nready == 0 && w->hs.nfin == 0 && now >= w->next_settle)
			rc = settle_look(w, now, e);
	}
	if (rc == 0 && pd_worker_requests(w) > 0 && !(pd_daemon_up(d) && w->flight))
		rc = requests_answer(w, e);
	streams_pass(w);
	return rc;
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
	if (pd_worker_requests(w) > 0 && !(pd_daemon_up(d) && w->flight))
		return now; /* answered at once (requests_answer) */
	if (!pd_daemon_up(d))
		return t;
	if (pd_worksync_startable(w))
		return now; /* started at once */
	if (w->flight)
		return t; /* its results wake the loop */
	if ((start = pd_worksync_paused(w, now)) >= 0) {
		/* writes and claims wait; an exited handler is reaped still, side work runs */
		if (pd_pool_count(&w->pool, PD_SLOT_DONE) > 0)
			return now;
		t = pd_deadline_min(pd_deadline_min(t, start), w->next_beat);
		if (w->cfg->reap)
			t = pd_deadline_min(t, w->next_reap);
		if (w->cfg->ext)
			t = pd_deadline_min(t, w->next_ext);
		return t;
	}
	start = pd_worksync_starts_due(w);
	if (pd_pool_count(&w->pool, PD_SLOT_DONE) > 0 || streams_outcomes(w) ||
	    pd_holdings_unsent(&w->hs) || (start >= 0 && start <= pd_now_us()) ||
	    (w->hs.nready > 0 && w->d.phase != PD_DAEMON_SERVING) ||
	    (w->d.wake && w->d.phase == PD_DAEMON_SERVING && pd_holdings_free_run(&w->hs) >= 0))
		return now; /* written, released or claimed at once */
	if (start >= 0)
		t = pd_deadline_min(t, (start + 999) / 1000);
	if (runs_busy(w) > 0 || w->hs.nready > 0)
		t = pd_deadline_min(t, w->next_beat);
	if (w->d.phase == PD_DAEMON_SERVING) {
		t = pd_deadline_min(t, w->next_claim);
		t = pd_deadline_min(t, w->next_due);
		if (w->cfg->engine.until_settled && w->d.idle && !w->settled)
			t = pd_deadline_min(t, w->next_settle);
	}
	if (w->cfg->reap)
		t = pd_deadline_min(t, w->next_reap);
	if (w->cfg->ext && w->d.phase == PD_DAEMON_SERVING)
		t = pd_deadline_min(t, w->next_ext);
	return t;
}

/*
 * pendulum_jobs: work in a queue (payload) this worker serves, or in any
 * (none). pendulum_cancel: a cancel asked of a job this worker (payload)
 * holds: the heartbeat, which answers it, is due now. pendulum_leaders: a
 * holder resigned the role (payload): the reaper's turn is due now.
 */
static int on_notify(struct pd_daemon *d, const char *channel, const char *payload)
{
	struct worker *w = d->ctx;

	if (strcmp(channel, "pendulum_leaders") == 0) {
		if (w->cfg->reap && payload && strcmp(payload, PD_REAP_ROLE) == 0)
			w->next_reap = 0;
		return 0;
	}

	if (strcmp(channel, "pendulum_cancel") == 0) {
		if (payload && strcmp(payload, w->d.id) == 0)
			w->next_beat = 0;
		return 0;
	}
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
 * and the worker is past serving (drained) or, with until_idle, idle, or
 * with until_settled, idle and settled.
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
	return (d->until_idle || w->settled) && d->idle && pd_daemon_up(d);
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
	int running = runs_busy(w);

	if (running == 0 && w->hs.nready == 0)
		pd_buf_puts(b, "idle");
	else
		pd_buf_printf(b, "running %d of %d, %d ready", running, w->pool.size, w->hs.nready);
}
static void on_reload(struct pd_daemon *d);

static const char *const worker_channels[] = {"pendulum_jobs", "pendulum_cancel",
					      "pendulum_leaders", NULL};

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
	       c->result_limit == pd_handler_result_limit(h, (size_t)w->cfg->result_limit) &&
	       c->grace_ms == w->cfg->engine.grace_ms;
}

/* Stream k may take another command: no process, nothing in flight or to take, no job for it. */
static int stream_free(const struct worker *w, int k)
{
	const struct pd_stream *s = &w->streams[k];

	if (pd_stream_live(s) || pd_stream_inflight(s) > 0 || pd_stream_outcomes(s) > 0)
		return 0;
	for (int i = 0; i < w->hs.nready; i++)
		if (w->hs.ready[i].stream == k)
			return 0;
	return 1;
}

int pd_worker_streams_map(struct worker *w, struct pd_err *e)
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
		pd_strv_free(w->stream_env[k]);
		w->stream_env[k] = pd_jobrun_stream_env(w->d.id, &cfg->handlers[i]);
		sc.envp = w->stream_env[k];
		sc.result_limit = pd_handler_result_limit(sc.h, (size_t)cfg->result_limit);
		sc.grace_ms = cfg->engine.grace_ms;
		sc.rng = &w->d.rng;
		sc.chan = 1; /* PD_WORKER_FD: requests_answer */
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

int pd_worker_streams_init(struct worker *w, struct pd_err *e)
{
	w->stream_env = pd_xcalloc(MAX_STREAMS, sizeof(*w->stream_env));
	w->streams = pd_xcalloc(MAX_STREAMS, sizeof(*w->streams));
	w->stream_old = pd_xcalloc(MAX_STREAMS, 1);
	w->hs.streams = w->streams;
	w->hs.worker = w->d.id;
	w->pool.adopt = adopt;
	w->pool.adopt_ctx = w;
	w->d.maxfds = PD_POOL_SLOT_FDS * MAX_STREAMS; /* its pipes and its channel */
	return pd_worker_streams_map(w, e);
}

void pd_worker_streams_release(struct worker *w)
{
	for (int k = 0; k < w->nstreams; k++)
		pd_stream_release(&w->streams[k]);
	free(w->streams);
	free(w->stream_old);
	free(w->stream_of);
	for (int k = 0; w->stream_env && k < MAX_STREAMS; k++)
		pd_strv_free(w->stream_env[k]);
	free(w->stream_env);
	w->streams = NULL;
	w->stream_old = NULL;
	w->stream_of = NULL;
	w->stream_env = NULL;
	w->nstreams = 0;
}

void pd_worker_claim_types_free(struct worker *w)
{
	free(w->types);
	for (int i = 0; w->flow_types && w->flow_types[i]; i++)
		free(w->flow_types[i]);
	free(w->flow_types);
	w->types = NULL;
	w->flow_types = NULL;
	w->ntypes = 0;
}

void pd_worker_claim_types(struct worker *w)
{
	const struct pd_worker_cfg *cfg = w->cfg;

	pd_worker_claim_types_free(w);
	w->types = pd_xcalloc((size_t)(cfg->nhandlers + cfg->nflows) + 2, sizeof(*w->types));
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
	/* empty: no hook command, global or a handler's */
	pd_hooks_json(&w->hooks, cfg->handlers, cfg->nhandlers, &cfg->hooks);
	if (w->types && w->hooks.len > 0)
		w->types[w->ntypes++] = PD_HOOK_TYPE; /* served: this worker has hook commands */
}

/* Ready jobs (claimed ahead, not started) take the new handler for their type, if any. */
static void ready_rehold(struct worker *w)
{
	for (int k = 0; k < w->hs.nready; k++) {
		struct pd_hold *r = &w->hs.ready[k];
		const struct pd_handler *h;

		if (r->plan != NULL || strcmp(r->job.type, PD_HOOK_TYPE) == 0)
			continue; /* a workflow job: planned on the definition it was claimed under
				   (a hook job: its command as claimed) */
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
	if (pd_worker_streams_map(w, e) < 0) {
		w->cfg = was;
		goto refuse;
	}
	if (w->own)
		pd_reload_keep(&w->kept, w->own);
	w->own = next;
	pd_worker_claim_types(w);
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

	pd_worker_claim_types(&w);
	pd_pool_init(&w.pool, (int)cfg->engine.concurrency, (size_t)cfg->result_limit,
		     cfg->engine.grace_ms, "handler stderr");
	w.pool.chan = 1; /* PD_WORKER_FD: requests_answer */
	/* PD_PROGRESS_FD: the notes go with the heartbeat */
	w.pool.progress = 1;
	pd_holdings_init(&w.hs, (int)cfg->engine.concurrency);
	w.hs.pool = &w.pool;
	pd_daemon_init(&w.d, &worker_ops, db, &w, &w.pool, &cfg->engine);
	rc = pd_daemon_open(&w.d, e);
	if (rc == 0) {
		pd_worker_streams_init(&w, e); /* cannot fail: counted above */
		pd_log(PD_LOG_INFO, "worker started",
		       "worker=%s concurrency=%lld queues=%d handlers=%d streams=%d lease_ms=%lld "
		       "heartbeat_ms=%lld",
		       w.d.id, cfg->engine.concurrency, cfg->nqueues, cfg->nhandlers, w.nstreams,
		       cfg->lease_ms, cfg->heartbeat_ms);
		rc = pd_daemon_run(&w.d, e);
		/* Release what the drain stopped (or what is left after an error). */
		if (pd_daemon_up(&w.d)) {
			struct pd_err ue = PD_ERR_INIT;

			w.d.phase = PD_DAEMON_STOPPING; /* claims nothing more */
			pd_pool_tick(&w.pool, pd_now_ms());
			pd_worksync_final(&w);
			pd_reap_lead_release(&w.lead, db);
			pd_worker_unregister(db, w.d.id, &ue);
		}
		pd_log(PD_LOG_INFO, "worker stopped", "worker=%s", w.d.id);
	}
	pd_daemon_close(&w.d);
	pd_worker_streams_release(&w);
	pd_holdings_release(&w.hs);
	pd_trip_release(&w.trip);
	pd_pool_release(&w.pool);
	pd_worker_claim_types_free(&w);
	pd_buf_release(&w.hooks);
	if (w.own) {
		pd_worker_cfg_release(w.own);
		free(w.own);
	}
	pd_reload_keep_release(&w.kept, cfg_free);
	return rc;
}
