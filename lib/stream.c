#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "dur.h"
#include "err.h"
#include "json.h"
#include "link.h"
#include "log.h"
#include "stream.h"
#include "text.h"

#define TAIL_MAX   4096	 /* stderr kept per job */
#define LINE_SLACK 65536 /* an answer line may be this much longer than two results */
#define LOG_LINE   200	 /* bytes of a bad line quoted in the log */

int pd_stream_parse(const char *line, size_t n, struct pd_stream_answer *a, struct pd_err *e)
{
	struct pd_json j = PD_JSON_INIT;
	size_t i = 0;
	int t;

	memset(a, 0, sizeof(*a));
	while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i == n)
		return 0;
	/* lax: a result jsonb cannot store fails its own job (the worker), not the line */
	if (pd_json_parse_lax(&j, line, n, e) < 0)
		return -1;
	if (j.tok[0].type != PD_JSON_OBJECT) {
		pd_json_release(&j);
		return pd_errf(e, PD_EX_DATAERR, "not a JSON object");
	}
	t = pd_json_get(&j, 0, "id");
	if (t < 0 || pd_json_int(&j, t, &a->id) < 0) {
		pd_json_release(&j);
		return pd_errf(e, PD_EX_DATAERR, "no integer \"id\"");
	}
	t = pd_json_get(&j, 0, "snooze");
	if (t >= 0 && j.tok[t].type != PD_JSON_NULL) {
		const char *p;
		size_t len;
		char *v = j.tok[t].type == PD_JSON_STRING ? pd_json_str(&j, t) : NULL;
		struct pd_err se = PD_ERR_INIT;

		if (v == NULL && j.tok[t].type == PD_JSON_NUMBER) {
			pd_json_span(&j, t, &p, &len);
			v = pd_xstrndup(p, len);
		}
		a->snooze = 1;
		if (v == NULL || *v == '\0' || pd_snooze_duration(v, &a->snooze_ms, &se) < 0) {
			struct pd_buf msg = PD_BUF_INIT;

			pd_json_span(&j, t, &p, &len);
			pd_buf_puts(&msg, "bad snooze ");
			pd_buf_append(&msg, p, len < 120 ? len : 120);
			pd_buf_printf(&msg, ": %s", se.msg[0] ? se.msg : "no duration");
			a->failed = 1;
			a->error = pd_xstrdup(pd_buf_str(&msg));
			pd_buf_release(&msg);
		}
		free(v);
		pd_json_release(&j);
		return 1;
	}
	t = pd_json_get(&j, 0, "error");
	if (t >= 0 && j.tok[t].type != PD_JSON_NULL) {
		a->failed = 1;
		a->error = pd_json_str(&j, t);
		t = pd_json_get(&j, 0, "terminal");
		a->terminal = t >= 0 && j.tok[t].type == PD_JSON_TRUE;
	} else if ((t = pd_json_get(&j, 0, "result")) >= 0 && j.tok[t].type != PD_JSON_NULL) {
		pd_json_span(&j, t, &a->result, &a->result_len);
	} else if (t < 0 && (t = pd_json_get(&j, 0, "progress")) >= 0 &&
		   pd_json_get(&j, 0, "error") < 0) {
		a->progress = pd_json_str(&j, t);
	}
	pd_json_release(&j);
	return 1;
}

void pd_stream_init(struct pd_stream *s, const struct pd_stream_cfg *c)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *c;
	if (s->cfg.result_limit == 0)
		s->cfg.result_limit = PD_PROC_STDOUT_LIMIT_DEFAULT;
	if (s->cfg.grace_ms <= 0)
		s->cfg.grace_ms = PD_PROC_GRACE_DEFAULT_MS;
	s->line_max = 2 * s->cfg.result_limit + LINE_SLACK;
	s->state = PD_STREAM_IDLE;
	s->proc.pid = -1;
	s->proc.in_fd = s->proc.out_fd = s->proc.err_fd = -1;
	s->eof_at = -1;
	pd_chan_init(&s->chan);
}

struct pd_progress *pd_stream_progress(struct pd_stream *s, int tag)
{
	for (int k = 0; k < s->njobs; k++)
		if (s->jobs[k].tag == tag && !s->jobs[k].abandoned)
			return &s->jobs[k].progress;
	return NULL;
}

int pd_stream_live(const struct pd_stream *s)
{
	return s->state == PD_STREAM_READY || s->state == PD_STREAM_CLOSING ||
	       s->state == PD_STREAM_STOPPING;
}

int pd_stream_inflight(const struct pd_stream *s)
{
	int n = 0;

	for (int k = 0; k < s->njobs; k++)
		n += !s->jobs[k].ghost;
	return n;
}

int pd_stream_outcomes(const struct pd_stream *s)
{
	return s->ndone;
}

static int find(const struct pd_stream *s, long long id)
{
	for (int k = 0; k < s->njobs; k++)
		if (s->jobs[k].id == id)
			return k;
	return -1;
}

int pd_stream_can_take(const struct pd_stream *s, long long id)
{
	if (s->state != PD_STREAM_IDLE && s->state != PD_STREAM_READY)
		return 0;
	for (int k = 0; k < s->njobs; k++)
		if (s->jobs[k].id == id || !s->jobs[k].written || s->jobs[k].suspect)
			return 0; /* or jobs wait to be re-sent, or suspects are being isolated */
	return 1;
}

/* Job k out of flight, without an outcome (a ghost's). */
static void drop(struct pd_stream *s, int k)
{
	pd_buf_release(&s->jobs[k].tail);
	pd_buf_release(&s->jobs[k].line);
	pd_progress_release(&s->jobs[k].progress);
	s->jobs[k] = s->jobs[--s->njobs];
}

/*
 * Job j's outcome with class cls queued (an abandoned one: LEASE_LOST; a
 * cancelled one: CANCELLED). Returns the outcome's exit, to fill in now
 * (the pointer lasts until the next queued outcome).
 */
static struct pd_pool_exit *outcome(struct pd_stream *s, struct pd_stream_job *j,
				    enum pd_exit_class cls)
{
	struct pd_stream_done *d;

	if (s->done_off + s->ndone == s->capdone) {
		if (s->done_off > 0) {
			memmove(s->done, s->done + s->done_off,
				(size_t)s->ndone * sizeof(*s->done));
			s->done_off = 0;
		} else {
			s->capdone = s->capdone ? 2 * s->capdone : 16;
			s->done = pd_xrealloc(s->done, (size_t)s->capdone * sizeof(*s->done));
		}
	}
	d = &s->done[s->done_off + s->ndone++];
	memset(d, 0, sizeof(*d));
	d->tag = j->tag;
	d->exit.cls = j->abandoned ? PD_EXIT_LEASE_LOST : j->cancelled ? PD_EXIT_CANCELLED : cls;
	d->exit.exit_code = -1;
	d->exit.started_us = j->sent_us;
	d->exit.ran_us = pd_now_us() - j->sent_us;
	d->exit.ran_ms = d->exit.ran_us / 1000;
	if (j->tail.len > 0)
		pd_utf8_sanitize(&d->exit.tail, j->tail.data, j->tail.len);
	pd_buf_release(&j->tail);
	d->exit.progress = j->progress; /* moved: j keeps none */
	memset(&j->progress, 0, sizeof(j->progress));
	return &d->exit;
}

/* Job k is over with class cls (outcome): out of flight, its outcome queued. */
static struct pd_pool_exit *finish(struct pd_stream *s, int k, enum pd_exit_class cls)
{
	struct pd_pool_exit *x = outcome(s, &s->jobs[k], cls);

	drop(s, k);
	return x;
}

/*
 * Cancelled job k not answered within the grace: CANCELLED now, left in
 * flight as a ghost whose answer is dropped.
 */
static void ghost(struct pd_stream *s, int k)
{
	struct pd_stream_job *j = &s->jobs[k];
	struct pd_pool_exit *x = outcome(s, j, PD_EXIT_CANCELLED);

	pd_log(PD_LOG_WARN, "cancelled stream job not answered within the grace: cancelled anyway",
	       "%s stream=%s pid=%d", j->prefix, s->cfg.name, (int)s->proc.pid);
	pd_buf_puts(&x->error, "cancelled (no answer within the kill grace)");
	j->ghost = 1;
	j->deadline = -1;
}

/*
 * The jobs written to the process (all: the waiting ones too) are over with
 * class cls and error msg (NULL: none); each gets the process's status and
 * its last 4 KiB of stderr.
 */
static void fail_all(struct pd_stream *s, int all, enum pd_exit_class cls, const char *msg,
		     int code, int sig)
{
	struct pd_buf raw = PD_BUF_INIT, tail = PD_BUF_INIT;
	int k = 0;

	if (s->njobs == 0)
		return;
	pd_tail_copy(&s->proc.err_tail, &raw);
	pd_utf8_sanitize(&tail, pd_buf_str(&raw), raw.len);
	while (k < s->njobs) {
		struct pd_pool_exit *x;

		if (!all && !s->jobs[k].written) {
			k++;
			continue;
		}
		if (s->jobs[k].ghost) {
			drop(s, k); /* its outcome given already */
			continue;
		}
		x = finish(s, k, cls); /* the last job moves to k */
		if (msg)
			pd_buf_puts(&x->error, msg);
		x->exit_code = code;
		x->signal = sig;
		pd_buf_reset(&x->tail);
		if (tail.len > 0)
			pd_buf_append(&x->tail, tail.data, tail.len);
	}
	pd_buf_release(&raw);
	pd_buf_release(&tail);
}

/* Write job j's line to the process (queued: pd_stream_flush): its timeout starts now. */
static void write_job(struct pd_stream *s, struct pd_stream_job *j)
{
	pd_proc_write(&s->proc, j->line.data, j->line.len);
	pd_proc_write(&s->proc, "\n", 1);
	j->written = 1;
	j->sent_us = pd_now_us();
	j->deadline = j->timeout_ms > 0 ? j->sent_us / 1000 + j->timeout_ms : -1;
}

/* Jobs written to the process, and whether any job is a suspect. */
static int written(const struct pd_stream *s, int *suspects)
{
	int n = 0;

	if (suspects)
		*suspects = 0;
	for (int k = 0; k < s->njobs; k++) {
		n += s->jobs[k].written && !s->jobs[k].ghost;
		if (suspects && s->jobs[k].suspect && !s->jobs[k].ghost)
			*suspects = 1;
	}
	return n;
}

/*
 * READY: write the jobs waiting to be re-sent. While any job is a suspect,
 * one suspect at a time, and only when nothing else is written to the
 * process: its death then has a single job to blame. Without suspects, all
 * the waiting ones at once.
 */
static void feed(struct pd_stream *s)
{
	int suspects, busy;

	if (s->state != PD_STREAM_READY)
		return;
	busy = written(s, &suspects) > 0;
	for (int k = 0; k < s->njobs; k++) {
		struct pd_stream_job *j = &s->jobs[k];

		if (j->written || (suspects && !j->suspect))
			continue;
		if (suspects && busy)
			return;
		write_job(s, j);
		busy = 1;
	}
}

/*
 * The jobs written to the process are not charged for its end: they wait to
 * be re-sent to the next process (feed), without an outcome, so without an
 * attempt used; with suspect, as suspects, re-sent one at a time. An
 * abandoned one is dropped now (PD_EXIT_LEASE_LOST): its answer is not
 * wanted; a cancelled one is over (PD_EXIT_CANCELLED), a ghost dropped.
 */
static void hold_written(struct pd_stream *s, int suspect)
{
	int k = 0;

	while (k < s->njobs) {
		struct pd_stream_job *j = &s->jobs[k];

		if (!j->written) {
			k++;
			continue;
		}
		if (j->ghost) {
			drop(s, k); /* the last job moves to k */
			continue;
		}
		if (j->abandoned || j->cancelled) {
			/* LEASE_LOST, or CANCELLED (finish): the last job moves to k */
			finish(s, k, PD_EXIT_LEASE_LOST);
			continue;
		}
		j->written = 0;
		j->suspect |= suspect;
		j->deadline = -1;
		k++;
	}
}

/*
 * The process died, or is being ended for misbehaving, while READY
 * (DESIGN.md "Stream mode": a stream process that dies charges an attempt
 * only to the job that caused it). With a single job written to it, that
 * job is the culprit: it fails, retryable, with error alone, the process's
 * status and its stderr. With more, the culprit is not known and none is
 * charged: they become suspects (hold_written), which the next process is
 * given one at a time until each has been answered or charged alone; only
 * then do new jobs go to it (pd_stream_can_take). Jobs that die with the
 * culprit are thus isolated in the worker that holds them (their leases
 * are still its own and heartbeated), instead of being released to come
 * back in another batch with the culprit.
 */
static void blame(struct pd_stream *s, const char *alone, int code, int sig)
{
	int n = written(s, NULL);

	if (n > 1) {
		pd_log(PD_LOG_WARN, "stream jobs in flight held as suspects: re-sent one at a time",
		       "stream=%s suspects=%d", s->cfg.name, n);
		hold_written(s, 1);
		return;
	}
	fail_all(s, 0, PD_EXIT_FAILED, alone, code, sig);
}

/* Terminate the process (SIGTERM, SIGKILL after the grace): STOPPING. */
static void terminate(struct pd_stream *s, const char *reason)
{
	pd_proc_kill(&s->proc, reason);
	s->state = PD_STREAM_STOPPING;
}

/* A failure: no process until a backoff on the failures in a row has passed. */
static void to_backoff(struct pd_stream *s)
{
	long long delay;

	s->failures++;
	delay = pd_backoff_ms(s->cfg.rng, PD_STREAM_BACKOFF_BASE_MS, PD_STREAM_BACKOFF_CAP_MS,
			      s->failures);
	s->restart_at = pd_now_ms() + delay;
	s->state = PD_STREAM_BACKOFF;
	pd_log(PD_LOG_INFO, "stream handler restarts after a backoff",
	       "stream=%s failures=%d backoff_ms=%lld", s->cfg.name, s->failures, delay);
}

/* A bad line while READY: every job in flight fails, the process is restarted. */
static void bad_line(struct pd_stream *s, const char *what, const char *line, size_t n)
{
	char q[2 * LOG_LINE], w[600], raw[LOG_LINE + 1];
	struct pd_buf msg = PD_BUF_INIT;

	if (n > LOG_LINE)
		n = LOG_LINE;
	memcpy(raw, line, n);
	raw[n] = '\0';
	pd_log(PD_LOG_WARN, "stream handler wrote a bad line: restarting it",
	       "stream=%s pid=%d in_flight=%d error=%s line=%s", s->cfg.name, (int)s->proc.pid,
	       written(s, NULL), pd_log_quote(w, sizeof(w), what), pd_log_quote(q, sizeof(q), raw));
	pd_buf_printf(&msg, "stream handler protocol error: %s", what);
	blame(s, msg.data, -1, 0);
	pd_buf_release(&msg);
	terminate(s, "protocol error");
}

static void too_long(struct pd_stream *s, const char *line, size_t n)
{
	char what[96];

	snprintf(what, sizeof(what), "a line longer than %zu bytes", s->line_max);
	bad_line(s, what, line, n);
}

/* One line of stdout, without its '\n'. */
static void answer(struct pd_stream *s, const char *line, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_stream_answer a;
	struct pd_pool_exit *x;
	int rc, k;

	if (n > s->line_max) {
		too_long(s, line, n);
		return;
	}
	rc = pd_stream_parse(line, n, &a, &e);
	if (rc == 0)
		return;
	if (rc < 0) {
		bad_line(s, e.msg, line, n);
		return;
	}
	if (a.progress) { /* a note, not an answer: of a job no longer in flight, dropped */
		if ((k = find(s, a.id)) >= 0)
			pd_progress_set(&s->jobs[k].progress, a.progress, strlen(a.progress));
		free(a.progress);
		return;
	}
	if ((k = find(s, a.id)) < 0) {
		char what[96];

		snprintf(what, sizeof(what), "an answer for job %lld, which is not in flight",
			 a.id);
		free(a.error);
		bad_line(s, what, line, n);
		return;
	}
	s->failures = 0;
	if (s->jobs[k].ghost) {
		drop(s, k); /* cancelled, its outcome given: the answer dropped */
		free(a.error);
		feed(s);
		return;
	}
	if (s->jobs[k].cancelled) {
		finish(s, k, PD_EXIT_CANCELLED); /* its answer acknowledges the cancel */
	} else if (a.snooze && !a.failed) {
		x = finish(s, k, PD_EXIT_SNOOZED);
		x->snooze_ms = a.snooze_ms;
	} else if (a.failed) {
		x = finish(s, k, a.terminal ? PD_EXIT_TERMINAL : PD_EXIT_FAILED);
		pd_buf_puts(&x->error, a.error);
	} else {
		x = finish(s, k, PD_EXIT_OK);
		if (a.result && a.result_len > s->cfg.result_limit) {
			pd_buf_append(&x->out, a.result, s->cfg.result_limit);
			x->out_truncated = 1;
		} else if (a.result) {
			pd_buf_append(&x->out, a.result, a.result_len);
		}
	}
	free(a.error);
	feed(s); /* the next suspect, if any */
}

/* Stdout as it comes: whole lines are answers. */
static void on_stdout(void *ctx, const char *data, size_t n)
{
	struct pd_stream *s = ctx;
	size_t off = 0, from = s->line.len;
	const char *nl;

	if (s->state != PD_STREAM_READY && s->state != PD_STREAM_CLOSING)
		return; /* stopping: no answer is wanted any more */
	pd_buf_append(&s->line, data, n);
	while ((nl = memchr(s->line.data + from, '\n', s->line.len - from)) != NULL) {
		size_t len = (size_t)(nl - (s->line.data + off));

		answer(s, s->line.data + off, len);
		off += len + 1;
		from = off;
		if (s->state != PD_STREAM_READY && s->state != PD_STREAM_CLOSING) {
			pd_buf_reset(&s->line);
			return;
		}
	}
	if (off > 0) {
		memmove(s->line.data, s->line.data + off, s->line.len - off);
		s->line.len -= off;
		s->line.data[s->line.len] = '\0';
	}
	if (s->line.len > s->line_max) {
		too_long(s, s->line.data, s->line.len);
		pd_buf_reset(&s->line);
	}
}

int pd_stream_stderr_job(const char *line, size_t n, long long *id, size_t *skip)
{
	long long v = 0;
	size_t i = 4;

	if (n < 5 || memcmp(line, "job=", 4) != 0)
		return 0;
	while (i < n && i < 24 && line[i] >= '0' && line[i] <= '9') {
		if (v > (LLONG_MAX - (line[i] - '0')) / 10)
			return 0;
		v = v * 10 + (line[i++] - '0');
	}
	if (i == 4 || (i < n && line[i] != ' '))
		return 0;
	*id = v;
	*skip = i < n ? i + 1 : i;
	return 1;
}

/* The job in flight a stderr line names: its index, or -1. */
static int named(const struct pd_stream *s, const char *line, size_t n, size_t *skip)
{
	long long id;

	return pd_stream_stderr_job(line, n, &id, skip) ? find(s, id) : -1;
}

static void on_stderr(void *ctx, const char *line, size_t n)
{
	struct pd_stream *s = ctx;
	char q[4200];
	size_t skip = 0;
	int k = named(s, line, n, &skip);

	if (k < 0) {
		pd_log(PD_LOG_INFO, "handler stderr", "stream=%s pid=%d line=%s", s->cfg.name,
		       (int)s->proc.pid, pd_log_quote(q, sizeof(q), line));
		return;
	}
	pd_log(PD_LOG_INFO, "handler stderr", "%s line=%s", s->jobs[k].prefix,
	       pd_log_quote(q, sizeof(q), line + skip));
	{
		struct pd_buf *t = &s->jobs[k].tail;

		pd_buf_append(t, line + skip, n - skip);
		pd_buf_putc(t, '\n');
		if (t->len > TAIL_MAX) {
			memmove(t->data, t->data + t->len - TAIL_MAX, TAIL_MAX);
			t->len = TAIL_MAX;
			t->data[t->len] = '\0';
		}
	}
}

static int start(struct pd_stream *s, struct pd_err *e)
{
	const char *sh[4] = {"/bin/sh", "-c", NULL, NULL};
	struct pd_proc_spec spec;
	int rc;

	memset(&spec, 0, sizeof(spec));
	if (s->cfg.h->run) {
		sh[2] = s->cfg.h->run;
		spec.argv = sh;
	} else {
		spec.argv = (const char *const *)s->cfg.h->exec_argv;
	}
	spec.envp = (const char *const *)s->cfg.envp;
	spec.kill_grace_ms = s->cfg.grace_ms;
	spec.keep_stdin = 1;
	spec.on_stdout = on_stdout;
	spec.on_stderr_line = on_stderr;
	spec.ctx = s;
	pd_buf_reset(&s->line);
	s->eof_at = -1;
	s->stopped = 0;
	if (s->cfg.chan && pd_chan_open(&s->chan, &spec.pass_fd) < 0)
		return pd_errf(e, PD_EX_SOFTWARE, "could not start: socketpair: %s",
			       strerror(errno));
	rc = pd_proc_start(&s->proc, &spec, e);
	if (spec.pass_fd > 2)
		close(spec.pass_fd);
	if (rc < 0) {
		pd_proc_release(&s->proc);
		pd_chan_close(&s->chan);
		return -1;
	}
	s->state = PD_STREAM_READY;
	pd_log(PD_LOG_INFO, "stream handler started", "stream=%s pid=%d", s->cfg.name,
	       (int)s->proc.pid);
	return 0;
}

int pd_stream_send(struct pd_stream *s, long long id, int tag, const char *prefix,
		   long long timeout_ms, const char *line, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_stream_job *j;
	struct pd_pool_exit *x;
	int started = s->state == PD_STREAM_READY || start(s, &e) == 0;

	if (s->njobs == s->capjobs) {
		s->capjobs = s->capjobs ? 2 * s->capjobs : 8;
		s->jobs = pd_xrealloc(s->jobs, (size_t)s->capjobs * sizeof(*s->jobs));
	}
	j = &s->jobs[s->njobs++];
	memset(j, 0, sizeof(*j));
	j->id = id;
	j->tag = tag;
	j->sent_us = pd_now_us();
	j->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	j->deadline = -1;
	snprintf(j->prefix, sizeof(j->prefix), "%s", prefix ? prefix : "");
	if (!started) {
		char q[600];

		pd_log(PD_LOG_WARN, "stream handler could not start", "stream=%s %s error=%s",
		       s->cfg.name, j->prefix, pd_log_quote(q, sizeof(q), e.msg));
		x = finish(s, s->njobs - 1, PD_EXIT_NOT_STARTED);
		pd_exit_not_started(x, s->cfg.h->run ? "/bin/sh" : s->cfg.h->exec_argv[0],
				    s->proc.start_errno, e.msg);
		to_backoff(s);
		return -1;
	}
	pd_buf_append(&j->line, line, n);
	write_job(s, j);
	return 0;
}

void pd_stream_flush(struct pd_stream *s)
{
	if (pd_stream_live(s))
		pd_proc_flush(&s->proc);
}

void pd_stream_abandon(struct pd_stream *s, int tag)
{
	for (int k = 0; k < s->njobs; k++) {
		if (s->jobs[k].tag != tag || s->jobs[k].ghost)
			continue;
		s->jobs[k].abandoned = 1;
		if (!s->jobs[k].written)
			finish(s, k, PD_EXIT_LEASE_LOST); /* never re-sent */
		return;
	}
}

void pd_stream_cancel(struct pd_stream *s, int tag)
{
	char line[64];
	int n;

	for (int k = 0; k < s->njobs; k++) {
		struct pd_stream_job *j = &s->jobs[k];

		if (j->tag != tag || j->ghost)
			continue;
		j->cancelled = 1;
		if (!j->written || s->state != PD_STREAM_READY) {
			finish(s, k, PD_EXIT_CANCELLED); /* never re-sent */
			return;
		}
		n = snprintf(line, sizeof(line), "{\"cancel\":%lld}\n", j->id);
		pd_proc_write(&s->proc, line, (size_t)n);
		j->deadline = pd_deadline_min(j->deadline, pd_now_ms() + s->cfg.grace_ms);
		return;
	}
}

void pd_stream_give_back(struct pd_stream *s)
{
	int k = 0;

	while (k < s->njobs) {
		if (s->jobs[k].written)
			k++;
		else
			finish(s, k, PD_EXIT_DRAINED); /* the last job moves to k */
	}
}

void pd_stream_close(struct pd_stream *s)
{
	if (s->state != PD_STREAM_READY || pd_stream_inflight(s) > 0)
		return;
	while (s->njobs > 0)
		drop(s, 0); /* ghosts: their answers are not wanted */
	pd_proc_close_input(&s->proc);
	s->state = PD_STREAM_CLOSING;
	s->close_at = pd_now_ms() + s->cfg.grace_ms;
}

void pd_stream_stop(struct pd_stream *s, enum pd_stop_reason why)
{
	static const char *const names[] = {"stop", "timeout", "drain", "lease_lost", "cancel"};
	enum pd_exit_class cls = why == PD_STOP_DRAIN	     ? PD_EXIT_DRAINED
				 : why == PD_STOP_LEASE_LOST ? PD_EXIT_LEASE_LOST
				 : why == PD_STOP_TIMEOUT    ? PD_EXIT_TIMEOUT
							     : PD_EXIT_FAILED;

	fail_all(s, 1, cls, cls == PD_EXIT_DRAINED ? NULL : "stream handler stopped", -1, 0);
	if (!pd_stream_live(s))
		return;
	if (s->state != PD_STREAM_STOPPING)
		terminate(s, names[why]);
	s->stopped = 1;
}

/*
 * Stderr first: pd_proc_io acts on the descriptors in this order, so a
 * stderr line written before the answer is read while its job is still in
 * flight, and kept with it.
 */
int pd_stream_pollfds(const struct pd_stream *s, struct pollfd *fds, int max)
{
	int n = pd_stream_live(s) ? pd_proc_pollfds(&s->proc, fds, max) : 0;

	for (int i = 1; i < n; i++) {
		if (fds[i].fd == s->proc.err_fd) {
			struct pollfd err = fds[i];

			memmove(fds + 1, fds, (size_t)i * sizeof(*fds));
			fds[0] = err;
			break;
		}
	}
	return n + pd_chan_pollfd(&s->chan, fds + n, max - n);
}

void pd_stream_io(struct pd_stream *s, const struct pollfd *fds, int n)
{
	if (pd_stream_live(s))
		pd_proc_io(&s->proc, fds, n);
	pd_chan_io(&s->chan, fds, n);
}

const char *pd_stream_request(const struct pd_stream *s)
{
	return pd_chan_request(&s->chan);
}

void pd_stream_answer(struct pd_stream *s, const char *line)
{
	pd_chan_answer(&s->chan, line);
}

void pd_stream_read(struct pd_stream *s)
{
	struct pollfd f = {.fd = s->proc.out_fd, .events = POLLIN, .revents = POLLIN};

	if (pd_stream_live(s) && f.fd >= 0)
		pd_proc_io(&s->proc, &f, 1);
}

int pd_stream_reap(struct pd_stream *s, pid_t pid, int wstatus)
{
	return pd_stream_live(s) && pd_proc_reap(&s->proc, pid, wstatus);
}

long long pd_stream_deadline(const struct pd_stream *s)
{
	long long d;

	if (s->state == PD_STREAM_BACKOFF)
		return s->restart_at;
	if (s->state == PD_STREAM_IDLE && s->njobs > 0)
		return pd_now_ms(); /* jobs wait to be re-sent: restart now */
	if (!pd_stream_live(s))
		return -1;
	d = pd_proc_deadline(&s->proc);
	if (s->state == PD_STREAM_CLOSING)
		d = pd_deadline_min(d, s->close_at);
	if (s->state != PD_STREAM_READY)
		return d;
	d = pd_deadline_min(d, s->eof_at);
	for (int k = 0; k < s->njobs; k++)
		d = pd_deadline_min(d, s->jobs[k].deadline);
	return d;
}

/* The process is gone and its pipes are closed. */
static void ended(struct pd_stream *s)
{
	struct pd_proc_result r;
	char status[96];

	pd_proc_result(&s->proc, &r);
	if (r.exit_code >= 0)
		snprintf(status, sizeof(status), "exit %d", r.exit_code);
	else if (r.signal > 0)
		snprintf(status, sizeof(status), "killed by signal %d (%s)", r.signal,
			 strsignal(r.signal));
	else
		snprintf(status, sizeof(status), "exit status lost");
	if (s->state == PD_STREAM_READY) {
		char msg[200];

		pd_log(PD_LOG_WARN, "stream handler exited",
		       "stream=%s pid=%d status=\"%s\" in_flight=%d", s->cfg.name, (int)s->proc.pid,
		       status, written(s, NULL));
		if (r.exit_code >= 0)
			snprintf(msg, sizeof(msg),
				 "stream handler exited with status %d while running this job",
				 r.exit_code);
		else
			snprintf(msg, sizeof(msg), "stream handler %s while running this job",
				 r.signal > 0 ? status : "exited, status lost,");
		blame(s, msg, r.exit_code, r.signal);
		pd_proc_release(&s->proc);
		pd_chan_close(&s->chan);
		to_backoff(s);
		return;
	}
	pd_log(PD_LOG_INFO, "stream handler stopped", "stream=%s pid=%d status=\"%s\"", s->cfg.name,
	       (int)s->proc.pid, status);
	fail_all(s, 0, PD_EXIT_FAILED, "stream handler stopped", r.exit_code, r.signal);
	pd_proc_release(&s->proc);
	pd_chan_close(&s->chan);
	if (s->state == PD_STREAM_STOPPING && !s->stopped)
		to_backoff(s);
	else
		s->state = PD_STREAM_IDLE;
}

/*
 * READY: the jobs past their timeout fail, and the process is restarted; the
 * other jobs written to it are not to blame (not suspects either): they are
 * re-sent to the next process without an attempt used.
 */
static void timeouts(struct pd_stream *s, long long now)
{
	char dur[PD_DUR_MAX];
	long long first = -1;
	int k = 0, n;

	while (k < s->njobs) {
		struct pd_stream_job *j = &s->jobs[k];
		struct pd_pool_exit *x;
		long long id = j->id;

		if (!j->written || j->deadline < 0 || now < j->deadline) {
			k++;
			continue;
		}
		if (j->cancelled) {
			ghost(s, k++);
			continue;
		}
		pd_dur_format(j->timeout_ms, dur, sizeof(dur));
		pd_log(PD_LOG_WARN, "stream job timed out: restarting the stream handler",
		       "%s stream=%s pid=%d timeout=%s", j->prefix, s->cfg.name, (int)s->proc.pid,
		       dur);
		x = finish(s, k, PD_EXIT_TIMEOUT); /* the last job moves to k */
		pd_buf_printf(&x->error, "timeout after %s", dur);
		if (first < 0)
			first = id;
	}
	if (first < 0) {
		feed(s); /* a ghost made: the next suspect, if any */
		return;
	}
	if ((n = written(s, NULL)) > 0)
		pd_log(PD_LOG_INFO, "stream jobs in flight re-sent after the restart",
		       "stream=%s jobs=%d timed_out=%lld", s->cfg.name, n, first);
	hold_written(s, 0);
	terminate(s, "timeout");
}

/*
 * IDLE with jobs waiting to be re-sent: start the process for them. If it
 * cannot start, they are given back (released, the attempt refunded: the
 * failure is not theirs) and the stream backs off.
 */
static void restart(struct pd_stream *s)
{
	struct pd_err e = PD_ERR_INIT;
	char q[600];

	if (start(s, &e) == 0) {
		feed(s);
		return;
	}
	pd_log(PD_LOG_WARN, "stream handler could not restart: its jobs released",
	       "stream=%s jobs=%d error=%s", s->cfg.name, s->njobs,
	       pd_log_quote(q, sizeof(q), e.msg));
	pd_stream_give_back(s);
	to_backoff(s);
}

void pd_stream_tick(struct pd_stream *s, long long now_ms)
{
	if (s->state == PD_STREAM_BACKOFF && now_ms >= s->restart_at)
		s->state = PD_STREAM_IDLE;
	if (s->state == PD_STREAM_IDLE && s->njobs > 0)
		restart(s);
	if (!pd_stream_live(s))
		return;
	pd_proc_tick(&s->proc, now_ms);
	if (pd_proc_done(&s->proc)) {
		ended(s);
		return;
	}
	if (s->state == PD_STREAM_CLOSING && now_ms >= s->close_at)
		terminate(s, "close");
	if (s->state != PD_STREAM_READY)
		return;
	timeouts(s, now_ms);
	if (s->state == PD_STREAM_READY && s->proc.out_fd < 0 && !s->proc.reaped) {
		/* stdout closed: the process may be exiting; if not, it cannot answer */
		if (s->eof_at < 0) {
			s->eof_at = now_ms + PD_PROC_EOF_WAIT_MS;
		} else if (now_ms >= s->eof_at) {
			blame(s, "stream handler closed its standard output while running this job",
			      -1, 0);
			terminate(s, "stdout closed");
		}
	}
}

int pd_stream_take(struct pd_stream *s, int *tag, struct pd_pool_exit *out)
{
	struct pd_stream_done *d;

	if (s->ndone == 0)
		return 0;
	d = &s->done[s->done_off];
	*tag = d->tag;
	*out = d->exit;
	s->done_off++;
	if (--s->ndone == 0)
		s->done_off = 0;
	return 1;
}

void pd_stream_release(struct pd_stream *s)
{
	struct pd_stream_cfg c = s->cfg;

	if (pd_stream_live(s))
		pd_proc_release(&s->proc);
	pd_chan_close(&s->chan);
	for (int k = 0; k < s->njobs; k++) {
		pd_buf_release(&s->jobs[k].tail);
		pd_buf_release(&s->jobs[k].line);
		pd_progress_release(&s->jobs[k].progress);
	}
	for (int k = 0; k < s->ndone; k++)
		pd_pool_exit_release(&s->done[s->done_off + k].exit);
	free(s->jobs);
	free(s->done);
	pd_buf_release(&s->line);
	pd_stream_init(s, &c);
}
