/*
 * pd-worker: claim jobs, run each handler as a child process, keep the
 * leases alive, record the outcome with the lease token.
 *
 * One thread, one poll loop: a signalfd (SIGCHLD, SIGTERM, SIGINT), the
 * libpq socket (LISTEN wake-ups) and each child's pipes. The database going
 * away is not lease loss: handlers keep running, outcomes wait in memory,
 * and the loop reconnects with backoff.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app.h"
#include "cli.h"
#include "clock.h"
#include "jobs.h"
#include "json.h"
#include "link.h"
#include "log.h"
#include "proc.h"
#include "retry.h"
#include "sig.h"
#include "text.h"

#define SYNOPSIS                                                                                   \
	"usage: pd-worker [-hVqv] [-c file] [-d conninfo] [options] --handler TYPE=COMMAND ...\n"
#define MAX_HANDLERS 256
#define MAX_QUEUES   64

extern char **environ;

static void help(void)
{
	printf(
	    SYNOPSIS
	    "\nClaim jobs and run each one's handler with the payload on stdin.\n\n"
	    "      --handler TYPE=COMMAND  run COMMAND with /bin/sh -c for jobs of TYPE ('*': "
	    "any)\n"
	    "      --exec TYPE=PATH        exec PATH (no shell) for jobs of TYPE\n"
	    "  -q, --queue QUEUE           queue to serve (repeatable; default 'default')\n"
	    "  -n, --concurrency N         handlers at once (default 4)\n"
	    "      --lease DURATION        lease length (default 30s)\n"
	    "      --heartbeat DURATION    lease renewal interval (default 10s)\n"
	    "      --poll DURATION         poll interval when no notification comes (default 1s)\n"
	    "      --drain-timeout DUR     on SIGTERM, wait this long for handlers (default 30s)\n"
	    "      --batch N               jobs claimed at once (default: concurrency)\n"
	    "      --no-reap               do not give back expired leases (run pd-reaper)\n"
	    "      --until-idle            exit once nothing is runnable and nothing runs\n"
	    "  -c, --config FILE           configuration file (handlers:, worker:, retry:)\n"
	    "  -d, --database CONNINFO     libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	    "      --quiet                 log warnings and errors only\n"
	    "  -v, --verbose               log debug messages\n"
	    "  -h, --help                  show this help\n"
	    "  -V, --version               show the version\n\n"
	    "Handler exit 0 succeeds; 64, 65 or a configured terminal code dead-letters;\n"
	    "anything else is retried with backoff. See pd-worker(1).\n");
}

struct handler {
	const char *type;
	const char *const *argv; /* for exec; NULL for a shell command */
	const char *run;	 /* shell command */
	long long timeout_ms;	 /* -1: none */
	const int *terminal;
	int nterminal;
	char *owned; /* copy of a TYPE=... flag */
	const char *exec_one[2];
};

struct slot {
	int used;
	struct pd_claimed job;
	const struct handler *h;
	struct pd_proc proc;
	int proc_init; /* pd_proc_start was called: pd_proc_release is owed */
	int running;   /* proc started and not yet collected */
	int finished;  /* outcome computed, waiting to be written */
	int marked;    /* LEASED -> RUNNING written */
	int lease_lost;
	struct pd_outcome out;
	struct pd_buf result, tail, error;
	char **envp;
	char prefix[64];
};

struct worker {
	struct pd_app app;
	struct handler handlers[MAX_HANDLERS];
	int nhandlers;
	const char *queues[MAX_QUEUES];
	int nqueues;
	const char **types; /* NULL: any type */
	int ntypes;
	long long concurrency, batch, lease_ms, heartbeat_ms, poll_ms, drain_ms, grace_ms;
	long long result_limit;
	int reap, until_idle;
	char id[128], host[64];
	struct slot *slots;
	int sigfd;
	struct pd_rng rng;
	/* loop state */
	struct pd_link link;
	int wake, idle, draining, drain_killed;
	long long next_claim, next_beat, next_reap, drain_deadline;
};

static const struct handler *find_handler(const struct worker *w, const char *type)
{
	const struct handler *any = NULL;

	for (int i = 0; i < w->nhandlers; i++) {
		if (strcmp(w->handlers[i].type, type) == 0)
			return &w->handlers[i];
		if (strcmp(w->handlers[i].type, "*") == 0 && any == NULL)
			any = &w->handlers[i];
	}
	return any;
}

static int running_count(const struct worker *w)
{
	int n = 0;

	for (int i = 0; i < w->concurrency; i++)
		n += w->slots[i].used;
	return n;
}

static void slot_free(struct slot *s)
{
	if (s->proc_init)
		pd_proc_release(&s->proc);
	free(s->job.type);
	free(s->job.queue);
	free(s->job.tenant);
	free(s->job.payload);
	free(s->job.run_at);
	free(s->job.idempotency_key);
	free(s->job.traceparent);
	pd_buf_release(&s->result);
	pd_buf_release(&s->tail);
	pd_buf_release(&s->error);
	for (char **e = s->envp; e && *e; e++)
		free(*e);
	free(s->envp);
	memset(s, 0, sizeof(*s));
}

static void on_stderr(void *ctx, const char *line, size_t n)
{
	struct slot *s = ctx;
	char q[4200];

	(void)n;
	pd_log(PD_LOG_INFO, "handler stderr", "%s line=%s", s->prefix,
	       pd_log_quote(q, sizeof(q), line));
}

static char *envvar(const char *k, const char *v)
{
	size_t n = strlen(k) + strlen(v) + 2;
	char *s = pd_xmalloc(n);

	snprintf(s, n, "%s=%s", k, v);
	return s;
}

/* The worker's environment plus the job's PD_* variables. */
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

		for (int o = 0; ours[o]; o++) {
			size_t l = strlen(ours[o]);

			skip |= strncmp(environ[i], ours[o], l) == 0 && environ[i][l] == '=';
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

/* Classify a finished child into s->out (DESIGN.md, the handler contract). */
static void classify(struct worker *w, struct slot *s, int start_failed, const char *start_error)
{
	struct pd_outcome *o = &s->out;
	struct pd_proc_result r = {-1, 0, 0, NULL};
	int terminal = 0;

	memset(o, 0, sizeof(*o));
	o->exit_code = -1;
	if (!start_failed) {
		pd_proc_result(&s->proc, &r);
		pd_tail_copy(&s->proc.err_tail, &s->error);
		pd_utf8_sanitize(&s->tail, pd_buf_str(&s->error), s->error.len);
		pd_buf_reset(&s->error);
		o->stderr_tail = s->tail.len ? s->tail.data : NULL;
		o->exit_code = r.exit_code;
		o->signal = r.signal;
	}
	if (start_failed) {
		o->kind = PD_FINISH_RETRY;
		o->outcome = "could_not_start";
		pd_buf_printf(&s->error, "%s", start_error);
	} else if (r.killed_reason && strcmp(r.killed_reason, "drain") == 0) {
		o->kind = PD_FINISH_RELEASE;
		o->outcome = "released";
	} else if (r.timed_out) {
		o->kind = PD_FINISH_RETRY;
		o->outcome = "timeout";
		pd_buf_printf(&s->error, "timeout after %lldms",
			      s->proc.timeout_at - s->proc.started_ms);
	} else if (r.exit_code == 0) {
		struct pd_json j = PD_JSON_INIT;
		struct pd_err ignore = PD_ERR_INIT;
		const char *out = pd_buf_str(&s->proc.out);

		o->kind = PD_FINISH_SUCCEEDED;
		o->outcome = "succeeded";
		o->result_truncated = s->proc.truncated;
		if (s->proc.out.len == 0) {
			o->result = NULL;
		} else if (!s->proc.truncated &&
			   pd_json_parse(&j, out, s->proc.out.len, &ignore) == 0) {
			pd_buf_append(&s->result, out, s->proc.out.len);
			o->result = s->result.data;
		} else {
			struct pd_buf clean = PD_BUF_INIT;

			pd_utf8_sanitize(&clean, out, s->proc.out.len);
			pd_json_quote(&s->result, pd_buf_str(&clean), clean.len);
			pd_buf_release(&clean);
			o->result = s->result.data;
			o->result_is_text = 1;
		}
		pd_json_release(&j);
	} else {
		if (r.exit_code == 64 || r.exit_code == 65)
			terminal = 1;
		for (int i = 0; i < s->h->nterminal; i++)
			terminal |= r.exit_code == s->h->terminal[i];
		if (r.exit_code >= 0)
			pd_buf_printf(&s->error, "exit %d", r.exit_code);
		else
			pd_buf_printf(&s->error, "killed by signal %d (%s)", r.signal,
				      strsignal(r.signal));
		o->kind = terminal ? PD_FINISH_DEAD : PD_FINISH_RETRY;
		o->outcome = terminal ? "terminal" : "failed";
		if (terminal)
			o->dead_reason = "terminal exit code";
	}
	if (o->kind == PD_FINISH_RETRY)
		o->backoff_ms = pd_backoff_ms(&w->rng, w->app.cfg.retry.base_ms,
					      w->app.cfg.retry.cap_ms, s->job.attempt);
	o->error = s->error.len ? s->error.data : NULL;
	s->finished = 1;
	s->running = 0;
}

static void start_slot(struct worker *w, struct slot *s)
{
	struct pd_proc_spec spec;
	const char *sh[4] = {"/bin/sh", "-c", NULL, NULL};
	struct pd_err e = PD_ERR_INIT;
	long long timeout = s->job.timeout_ms >= 0 ? s->job.timeout_ms : s->h->timeout_ms;

	snprintf(s->prefix, sizeof(s->prefix), "job=%lld attempt=%d", s->job.id, s->job.attempt);
	s->envp = build_env(&s->job);
	memset(&spec, 0, sizeof(spec));
	if (s->h->run) {
		sh[2] = s->h->run;
		spec.argv = sh;
	} else {
		spec.argv = s->h->argv;
	}
	spec.envp = (const char *const *)s->envp;
	spec.input = s->job.payload;
	spec.input_len = strlen(s->job.payload);
	spec.stdout_limit = (size_t)w->result_limit;
	spec.timeout_ms = timeout > 0 ? timeout : 0;
	spec.kill_grace_ms = w->grace_ms;
	spec.on_stderr_line = on_stderr;
	spec.ctx = s;
	pd_log(PD_LOG_DEBUG, "job started", "%s type=%s token=%lld", s->prefix, s->job.type,
	       s->job.token);
	s->proc_init = 1;
	if (pd_proc_start(&s->proc, &spec, &e) < 0) {
		pd_log(PD_LOG_WARN, "handler could not start", "%s error=%s", s->prefix,
		       pd_log_quote((char[600]){0}, 600, e.msg));
		classify(w, s, 1, e.msg);
		return;
	}
	s->running = 1;
}

/*
 * Connect, LISTEN and register. At start-up (first) any failure is final:
 * the caller exits with e's code. Later, an unavailable database is retried
 * with backoff and the loop goes on; anything else is final.
 */
static int connect_db(struct worker *w, int first, struct pd_err *e)
{
	static const char *any[] = {"*"};

	if (pd_app_connect(&w->app, 1, e) < 0 ||
	    pd_db_exec(&w->app.db, "LISTEN pendulum_jobs", 0, NULL, PGRES_COMMAND_OK, NULL, e) <
		0 ||
	    pd_worker_register(&w->app.db, w->id, w->host, (int)getpid(), w->queues, w->nqueues,
			       w->types ? w->types : any, w->types ? w->ntypes : 1,
			       (int)w->concurrency, e) < 0) {
		if (first || e->code != PD_EX_UNAVAILABLE)
			return -1;
		pd_link_retry(&w->link, e);
		pd_err_clear(e);
		return 0;
	}
	pd_link_up(&w->link);
	w->wake = 1;
	pd_log(first ? PD_LOG_DEBUG : PD_LOG_INFO, first ? "connected" : "reconnected", "worker=%s",
	       w->id);
	return 0;
}

/* Write the outcomes of finished jobs. */
static int flush_outcomes(struct worker *w)
{
	for (int i = 0; i < w->concurrency && w->link.up; i++) {
		struct slot *s = &w->slots[i];
		struct pd_err e = PD_ERR_INIT;
		char state[16];
		int rc;

		if (!s->used || !s->finished)
			continue;
		if (s->lease_lost) {
			pd_log(PD_LOG_WARN, "lease lost: handler stopped, nothing written", "%s",
			       s->prefix);
			slot_free(s);
			continue;
		}
		rc = pd_jobs_finish(&w->app.db, s->job.id, s->job.token, &s->out, state, &e);
		if (rc < 0)
			return pd_link_failed(&w->link, &e);
		if (rc == 0)
			pd_log(PD_LOG_WARN, "fenced: the lease was taken over, outcome not written",
			       "%s outcome=%s", s->prefix, s->out.outcome);
		else
			pd_log(PD_LOG_INFO, "job done", "%s outcome=%s state=%s%s%s", s->prefix,
			       s->out.outcome, state, s->out.error ? " error=" : "",
			       s->out.error ? pd_log_quote((char[300]){0}, 300, s->out.error) : "");
		slot_free(s);
		w->wake = 1;
	}
	return 0;
}

static int heartbeat(struct worker *w)
{
	long long ids[1024] = {0}, tokens[1024] = {0};
	int held[1024], idx[1024], n = 0;
	struct pd_err e = PD_ERR_INIT;

	for (int i = 0; i < w->concurrency && n < 1024; i++) {
		struct slot *s = &w->slots[i];

		/*
		 * A handler that already exited has an outcome to write: let that write
		 * go through the fence (and be counted if fenced) rather than drop it here.
		 */
		if (s->used && !s->finished && !s->lease_lost && !s->proc.reaped) {
			ids[n] = s->job.id;
			tokens[n] = s->job.token;
			idx[n++] = i;
		}
	}
	if (pd_jobs_heartbeat(&w->app.db, w->id, ids, tokens, n, w->lease_ms, held, &e) < 0)
		return pd_link_failed(&w->link, &e);
	for (int k = 0; k < n; k++) {
		struct slot *s = &w->slots[idx[k]];

		if (held[k])
			continue;
		s->lease_lost = 1;
		if (s->running)
			pd_proc_kill(&s->proc, "lease_lost");
		pd_log(PD_LOG_WARN, "lease lost: stopping the handler", "%s", s->prefix);
	}
	return 0;
}

static int claim(struct worker *w)
{
	struct pd_claimed *c = NULL;
	struct pd_err e = PD_ERR_INIT;
	int free_slots = (int)w->concurrency - running_count(w), n = 0, want, started = 0;
	long long ids[1024], tokens[1024];

	want = free_slots < w->batch ? free_slots : (int)w->batch;
	if (want <= 0)
		return 0;
	if (pd_jobs_claim(&w->app.db, w->id, w->queues, w->nqueues, w->types, w->ntypes, want,
			  w->lease_ms, 0, &c, &n, &e) < 0)
		return pd_link_failed(&w->link, &e);
	w->idle = n == 0;
	if (n == want)
		w->wake = 1; /* there may be more */
	for (int k = 0, i = 0; k < n; k++) {
		struct slot *s;

		while (w->slots[i].used)
			i++;
		s = &w->slots[i];
		s->used = 1;
		s->job = c[k];
		s->h = find_handler(w, s->job.type);
		start_slot(w, s);
		if (s->running && started < 1024) {
			ids[started] = s->job.id;
			tokens[started++] = s->job.token;
		}
	}
	free(c); /* the strings now belong to the slots */
	if (pd_jobs_start(&w->app.db, ids, tokens, started, &e) < 0)
		return pd_link_failed(&w->link, &e);
	return 0;
}

static void reap_children(struct worker *w)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int mine = 0;

		for (int i = 0; i < w->concurrency && !mine; i++)
			if (w->slots[i].running)
				mine = pd_proc_reap(&w->slots[i].proc, pid, st);
		if (!mine)
			pd_log(PD_LOG_DEBUG, "reaped an unknown child", "pid=%d", (int)pid);
	}
}

static void start_drain(struct worker *w, int sig)
{
	if (w->draining) {
		pd_log(PD_LOG_WARN, "second signal: stopping handlers now", "signal=%d", sig);
		w->drain_deadline = pd_now_ms();
		return;
	}
	w->draining = 1;
	w->drain_deadline = pd_now_ms() + w->drain_ms;
	pd_log(PD_LOG_INFO, "draining: no new jobs", "signal=%d running=%d drain_timeout_ms=%lld",
	       sig, running_count(w), w->drain_ms);
}

static int loop(struct worker *w)
{
	struct pollfd *fds = pd_xcalloc((size_t)(2 + 3 * w->concurrency), sizeof(*fds));
	int rc = 0;

	for (;;) {
		long long now = pd_now_ms(), deadline = -1;
		int nfds = 0, n;

		if (!w->link.up && now >= w->link.next_connect) {
			struct pd_err e = PD_ERR_INIT;

			if (connect_db(w, 0, &e) < 0) {
				pd_log(PD_LOG_ERROR, "cannot reconnect", "error=%s",
				       pd_log_quote((char[600]){0}, 600, e.msg));
				rc = e.code;
				break;
			}
		}
		/* Outcomes first: a worker resumed after a stop writes (and is fenced) before it
		 * heartbeats. */
		if (w->link.up && flush_outcomes(w) < 0) {
			rc = PD_EX_SOFTWARE;
			break;
		}
		now = pd_now_ms();
		if (w->link.up && now >= w->next_beat) {
			/*
			 * Collect children that exited unnoticed (poll can return EINTR after a
			 * SIGSTOP/SIGCONT), so a finished handler's outcome is written and
			 * fenced rather than taken for a lost lease.
			 */
			reap_children(w);
			if (heartbeat(w) < 0) {
				rc = PD_EX_SOFTWARE;
				break;
			}
			w->next_beat = now + w->heartbeat_ms;
		}
		if (w->link.up && w->reap && now >= w->next_reap) {
			int requeued, dead;
			struct pd_err e = PD_ERR_INIT;

			if (pd_jobs_reap(&w->app.db, &requeued, &dead, &e) < 0) {
				if (pd_link_failed(&w->link, &e) < 0) {
					rc = PD_EX_SOFTWARE;
					break;
				}
			} else if (requeued || dead) {
				pd_log(PD_LOG_INFO, "expired leases given back",
				       "requeued=%d dead=%d", requeued, dead);
			}
			w->next_reap = now + w->lease_ms / 2;
		}
		/* notifications that arrived during our own queries */
		if (pd_link_notifies(&w->link))
			w->wake = 1;
		if (w->link.up && !w->draining && (w->wake || now >= w->next_claim) &&
		    running_count(w) < w->concurrency) {
			w->wake = 0;
			w->next_claim = now + w->poll_ms;
			if (claim(w) < 0) {
				rc = PD_EX_SOFTWARE;
				break;
			}
			continue; /* start the new children's I/O at once */
		}
		if (w->draining) {
			if (running_count(w) == 0)
				break;
			if (now >= w->drain_deadline && !w->drain_killed) {
				w->drain_killed = 1;
				for (int i = 0; i < w->concurrency; i++)
					if (w->slots[i].running)
						pd_proc_kill(&w->slots[i].proc, "drain");
			}
		}
		if (w->until_idle && w->idle && running_count(w) == 0 && w->link.up)
			break;

		fds[nfds++] = (struct pollfd){.fd = w->sigfd, .events = POLLIN};
		if (w->link.up)
			fds[nfds++] =
			    (struct pollfd){.fd = PQsocket(w->app.db.conn), .events = POLLIN};
		for (int i = 0; i < w->concurrency; i++) {
			struct slot *s = &w->slots[i];

			if (!s->running)
				continue;
			nfds += pd_proc_pollfds(&s->proc, fds + nfds, 3);
			deadline = pd_deadline_min(deadline, pd_proc_deadline(&s->proc));
		}
		if (w->link.up) {
			deadline = pd_deadline_min(deadline, w->next_beat);
			if (!w->draining)
				deadline = pd_deadline_min(deadline, w->next_claim);
			if (w->reap)
				deadline = pd_deadline_min(deadline, w->next_reap);
		} else {
			deadline = pd_deadline_min(deadline, w->link.next_connect);
		}
		if (w->draining && !w->drain_killed)
			deadline = pd_deadline_min(deadline, w->drain_deadline);
		now = pd_now_ms();
		n = poll(fds, (nfds_t)nfds,
			 deadline < 0	   ? -1
			 : deadline <= now ? 0
					   : (int)(deadline - now));
		if (n < 0 && errno != EINTR) {
			pd_log(PD_LOG_ERROR, "poll failed", "error=%s", strerror(errno));
			rc = PD_EX_SOFTWARE;
			break;
		}
		if (n > 0 && (fds[0].revents & POLLIN)) {
			int sig;

			while ((sig = pd_sig_read(w->sigfd)) > 0) {
				if (sig == SIGCHLD)
					reap_children(w);
				else
					start_drain(w, sig);
			}
		}
		if (n > 0 && w->link.up && fds[1].revents) {
			pd_link_read(&w->link);
			if (pd_link_notifies(&w->link))
				w->wake = 1;
		}
		now = pd_now_ms();
		for (int i = 0; i < w->concurrency; i++) {
			struct slot *s = &w->slots[i];

			if (!s->running)
				continue;
			if (n > 0)
				pd_proc_io(&s->proc, fds, nfds);
			pd_proc_tick(&s->proc, now);
			if (pd_proc_done(&s->proc))
				classify(w, s, 0, NULL);
		}
	}
	/* Release what the drain stopped (or what is left after a fatal error). */
	if (w->link.up)
		flush_outcomes(w);
	free(fds);
	return rc;
}

/* TYPE=VALUE */
static int add_handler(struct worker *w, const char *arg, int exec, struct pd_err *e)
{
	struct handler *h;
	char *eq;

	if (w->nhandlers == MAX_HANDLERS)
		return pd_errf(e, PD_EX_USAGE, "too many handlers (at most %d)", MAX_HANDLERS);
	h = &w->handlers[w->nhandlers];
	h->owned = pd_xstrdup(arg);
	eq = strchr(h->owned, '=');
	if (eq == NULL || eq == h->owned || eq[1] == '\0') {
		free(h->owned);
		h->owned = NULL;
		return pd_errf(e, PD_EX_USAGE, "--%s '%s': expected TYPE=%s",
			       exec ? "exec" : "handler", arg, exec ? "PATH" : "COMMAND");
	}
	*eq = '\0';
	h->type = h->owned;
	h->timeout_ms = -1;
	if (exec) {
		h->exec_one[0] = eq + 1;
		h->argv = h->exec_one;
	} else {
		h->run = eq + 1;
	}
	w->nhandlers++;
	return 0;
}

static int parse_args(struct worker *w, int argc, char **argv, struct pd_err *e)
{
	enum {
		O_HANDLER = 256,
		O_EXEC,
		O_LEASE,
		O_BEAT,
		O_POLL,
		O_DRAIN,
		O_BATCH,
		O_NOREAP,
		O_IDLE,
		O_QUIET
	};
	static const struct option opts[] = {
	    {"handler", required_argument, NULL, O_HANDLER},
	    {"exec", required_argument, NULL, O_EXEC},
	    {"queue", required_argument, NULL, 'q'},
	    {"concurrency", required_argument, NULL, 'n'},
	    {"lease", required_argument, NULL, O_LEASE},
	    {"heartbeat", required_argument, NULL, O_BEAT},
	    {"poll", required_argument, NULL, O_POLL},
	    {"drain-timeout", required_argument, NULL, O_DRAIN},
	    {"batch", required_argument, NULL, O_BATCH},
	    {"no-reap", no_argument, NULL, O_NOREAP},
	    {"until-idle", no_argument, NULL, O_IDLE},
	    {"config", required_argument, NULL, 'c'},
	    {"database", required_argument, NULL, 'd'},
	    {"quiet", no_argument, NULL, O_QUIET},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "+:q:n:c:d:vhV", opts, NULL)) != -1) {
		switch (ch) {
		case O_HANDLER:
		case O_EXEC:
			if (add_handler(w, optarg, ch == O_EXEC, e) < 0)
				return -1;
			break;
		case 'q':
			if (w->nqueues == MAX_QUEUES)
				return pd_errf(e, PD_EX_USAGE, "too many queues (at most %d)",
					       MAX_QUEUES);
			if (*optarg == '\0')
				return pd_errf(e, PD_EX_USAGE, "option -q: must not be empty");
			w->queues[w->nqueues++] = optarg;
			break;
		case 'n':
			if (pd_cli_int("--concurrency", optarg, 1, 1024, &w->concurrency, e) < 0)
				return -1;
			break;
		case O_LEASE:
			if (pd_cli_dur("--lease", optarg, &w->lease_ms, e) < 0)
				return -1;
			break;
		case O_BEAT:
			if (pd_cli_dur("--heartbeat", optarg, &w->heartbeat_ms, e) < 0)
				return -1;
			break;
		case O_POLL:
			if (pd_cli_dur("--poll", optarg, &w->poll_ms, e) < 0)
				return -1;
			break;
		case O_DRAIN:
			if (pd_cli_dur("--drain-timeout", optarg, &w->drain_ms, e) < 0)
				return -1;
			break;
		case O_BATCH:
			if (pd_cli_int("--batch", optarg, 1, 1000, &w->batch, e) < 0)
				return -1;
			break;
		case O_NOREAP:
			w->reap = 0;
			break;
		case O_IDLE:
			w->until_idle = 1;
			break;
		case 'c':
			w->app.config_path = optarg;
			break;
		case 'd':
			w->app.database = optarg;
			break;
		case O_QUIET:
			w->app.verbosity--;
			break;
		case 'v':
			w->app.verbosity++;
			break;
		case 'h':
			help();
			return 1;
		case 'V':
			pd_cli_version();
			return 1;
		default:
			pd_cli_bad_option(SYNOPSIS, ch, argv);
			return 2;
		}
	}
	if (optind < argc)
		return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int main(int argc, char **argv)
{
	static struct worker w;
	struct pd_err e = PD_ERR_INIT;
	const struct pd_config *cfg = &w.app.cfg;
	int rc, signals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};

	pd_cli_init(argv[0]);
	pd_app_init(&w.app);
	w.concurrency = w.batch = w.lease_ms = w.heartbeat_ms = w.poll_ms = w.drain_ms = -1;
	w.reap = -1;
	w.sigfd = -1;
	rc = parse_args(&w, argc, argv, &e);
	if (rc == 1)
		return pd_cli_finish_stdout();
	if (rc == 2)
		return PD_EX_USAGE;
	if (rc < 0)
		return pd_cli_usage(SYNOPSIS, "%s", e.msg);
	if (pd_app_load(&w.app, &e) < 0)
		goto fail;
	/* Flags override the file, which overrides the defaults. */
	if (w.concurrency < 0)
		w.concurrency = cfg->worker.concurrency;
	if (w.batch < 0)
		w.batch = cfg->worker.batch > 0 ? cfg->worker.batch : w.concurrency;
	if (w.lease_ms < 0)
		w.lease_ms = cfg->worker.lease_ms;
	if (w.heartbeat_ms < 0)
		w.heartbeat_ms = cfg->worker.heartbeat_ms;
	if (w.poll_ms < 0)
		w.poll_ms = cfg->worker.poll_ms;
	if (w.drain_ms < 0)
		w.drain_ms = cfg->worker.drain_timeout_ms;
	if (w.reap < 0)
		w.reap = cfg->worker.reap;
	w.grace_ms = cfg->worker.kill_grace_ms;
	w.result_limit = cfg->worker.result_limit;
	if (w.nqueues == 0)
		for (int i = 0; i < cfg->worker.nqueues && w.nqueues < MAX_QUEUES; i++)
			w.queues[w.nqueues++] = cfg->worker.queues[i];
	if (w.nqueues == 0)
		w.queues[w.nqueues++] = "default";
	for (int i = 0; i < cfg->nhandlers && w.nhandlers < MAX_HANDLERS; i++) {
		const struct pd_handler_cfg *hc = &cfg->handlers[i];
		struct handler *h = &w.handlers[w.nhandlers];

		if (find_handler(&w, hc->type) &&
		    strcmp(find_handler(&w, hc->type)->type, hc->type) == 0)
			continue; /* a flag for this type wins */
		h->type = hc->type;
		h->run = hc->run;
		h->argv = (const char *const *)hc->exec_argv;
		h->timeout_ms = hc->timeout_ms;
		h->terminal = hc->terminal_codes;
		h->nterminal = hc->nterminal;
		w.nhandlers++;
	}
	if (w.nhandlers == 0) {
		rc = pd_cli_usage(SYNOPSIS, "no handlers: give --handler TYPE=COMMAND, --exec "
					    "TYPE=PATH, or a handlers: map in the config file");
		pd_app_release(&w.app);
		return rc;
	}
	if (w.heartbeat_ms <= 0 || w.heartbeat_ms >= w.lease_ms) {
		pd_errf(&e, PD_EX_USAGE,
			"the heartbeat (%lldms) must be shorter than the lease (%lldms)",
			w.heartbeat_ms, w.lease_ms);
		goto fail;
	}
	w.types = pd_xcalloc((size_t)w.nhandlers, sizeof(*w.types));
	for (int i = 0; i < w.nhandlers; i++) {
		if (strcmp(w.handlers[i].type, "*") == 0) {
			free(w.types);
			w.types = NULL;
			w.ntypes = 0;
			break;
		}
		w.types[w.ntypes++] = w.handlers[i].type;
	}
	w.slots = pd_xcalloc((size_t)w.concurrency, sizeof(*w.slots));
	gethostname(w.host, sizeof(w.host) - 1);
	pd_rng_seed(&w.rng, 0);
	snprintf(w.id, sizeof(w.id), "%s:%d:%04x", w.host, (int)getpid(),
		 (unsigned)(pd_rng_next(&w.rng) & 0xffff));
	if ((w.sigfd = pd_sig_open(signals, 4, &e)) < 0)
		goto fail;
	/* A failure to connect at start-up is an error (69), not a retry loop. */
	pd_link_init(&w.link, &w.app.db);
	if (connect_db(&w, 1, &e) < 0)
		goto fail;
	pd_log(PD_LOG_INFO, "worker started", "worker=%s concurrency=%lld queues=%d handlers=%d",
	       w.id, w.concurrency, w.nqueues, w.nhandlers);
	rc = loop(&w);
	if (w.link.up) {
		struct pd_err ue = PD_ERR_INIT;

		pd_worker_unregister(&w.app.db, w.id, &ue);
	}
	pd_log(PD_LOG_INFO, "worker stopped", "worker=%s", w.id);
	goto out;
fail:
	pd_die_msg(e.msg);
	rc = e.code;
out:
	for (int i = 0; w.slots && i < w.concurrency; i++)
		if (w.slots[i].used)
			slot_free(&w.slots[i]);
	free(w.slots);
	free(w.types);
	for (int i = 0; i < w.nhandlers; i++)
		free(w.handlers[i].owned);
	if (w.sigfd >= 0)
		close(w.sigfd);
	pd_app_release(&w.app);
	return rc;
}
