#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "dur.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "pool.h"
#include "text.h"

#define LAST_LINE_MAX 400
#define PROGRESS_READ (64 * 1024) /* progress bytes read a pass, at most */

/* The note in p->part: cleaned, the latest when not empty. */
static void progress_line(struct pd_progress *p)
{
	struct pd_buf b = PD_BUF_INIT;
	size_t n = p->part.len;

	while (n > 0 && p->part.data[n - 1] == '\r')
		n--;
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)p->part.data[k] < 0x20 || p->part.data[k] == 0x7f)
			p->part.data[k] = ' ';
	pd_utf8_sanitize(&b, p->part.data ? p->part.data : "", n);
	for (size_t k = 0; k + 1 < b.len; k++) /* C1 controls, U+0080-U+009F */
		if ((unsigned char)b.data[k] == 0xc2 && (unsigned char)b.data[k + 1] >= 0x80 &&
		    (unsigned char)b.data[k + 1] <= 0x9f)
			b.data[k] = b.data[k + 1] = ' ';
	pd_buf_reset(&p->part);
	if (n == 0) {
		pd_buf_release(&b);
		return;
	}
	pd_buf_release(&p->line);
	p->line = b;
	p->dirty = 1;
}

void pd_progress_feed(struct pd_progress *p, const char *data, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t len = nl ? (size_t)(nl - data) : n;
		size_t room = PD_PROGRESS_MAX - p->part.len;

		pd_buf_append(&p->part, data, len < room ? len : room);
		if (nl == NULL)
			return;
		progress_line(p);
		data = nl + 1;
		n -= len + 1;
	}
}

void pd_progress_eof(struct pd_progress *p)
{
	if (p->part.len > 0)
		progress_line(p);
}

void pd_progress_set(struct pd_progress *p, const char *note, size_t n)
{
	pd_buf_reset(&p->part);
	pd_buf_append(&p->part, note, n < PD_PROGRESS_MAX ? n : PD_PROGRESS_MAX);
	progress_line(p);
}

void pd_progress_release(struct pd_progress *p)
{
	pd_buf_release(&p->line);
	pd_buf_release(&p->part);
	memset(p, 0, sizeof(*p));
}

enum pd_exit_class pd_exit_classify(const struct pd_proc_result *r, enum pd_stop_reason why,
				    const struct pd_handler *h)
{
	switch (why) {
	case PD_STOP_LEASE_LOST:
		return PD_EXIT_LEASE_LOST;
	case PD_STOP_DRAIN:
		return PD_EXIT_DRAINED;
	case PD_STOP_TIMEOUT:
		return PD_EXIT_TIMEOUT;
	case PD_STOP_CANCEL:
		return PD_EXIT_CANCELLED;
	case PD_STOP_NONE:
		break;
	}
	if (r->timed_out)
		return PD_EXIT_TIMEOUT;
	if (r->exit_code == 0)
		return PD_EXIT_OK;
	if (r->exit_code > 0 && pd_handler_terminal(h, r->exit_code))
		return PD_EXIT_TERMINAL;
	if (h->run && (r->exit_code == 127 || r->exit_code == 126))
		return PD_EXIT_CANNOT_RUN;
	return PD_EXIT_FAILED;
}

void pd_exit_not_started(struct pd_pool_exit *x, const char *prog, int err, const char *msg)
{
	switch (err) {
	case ENOENT:
	case EACCES:
	case ENOEXEC:
	case ENOTDIR:
	case ELOOP:
	case ENAMETOOLONG:
		x->cls = PD_EXIT_CANNOT_RUN;
		pd_buf_printf(&x->error, "cannot run %s: %s", prog, strerror(err));
		return;
	default:
		x->cls = PD_EXIT_NOT_STARTED;
		pd_buf_puts(&x->error, msg);
	}
}

enum pd_verdict pd_exit_verdict(enum pd_exit_class c)
{
	switch (c) {
	case PD_EXIT_OK:
		return PD_VERDICT_DONE;
	case PD_EXIT_TERMINAL:
	case PD_EXIT_CANNOT_RUN:
		return PD_VERDICT_DEAD;
	case PD_EXIT_DRAINED:
	case PD_EXIT_LEASE_LOST:
		return PD_VERDICT_RELEASE;
	case PD_EXIT_SNOOZED:
		return PD_VERDICT_SNOOZE;
	case PD_EXIT_CANCELLED:
		return PD_VERDICT_CANCEL;
	case PD_EXIT_FAILED:
	case PD_EXIT_TIMEOUT:
	case PD_EXIT_NOT_STARTED:
		break;
	}
	return PD_VERDICT_RETRY;
}

int pd_snooze_duration(const char *s, long long *ms, struct pd_err *e)
{
	if (pd_dur_parse(s, ms, e) < 0)
		return -1;
	if (*ms > PD_SNOOZE_MAX_MS)
		return pd_errf(e, PD_EX_DATAERR, "snooze of '%s' longer than a year (365d)", s);
	return 0;
}

/* The value of line's "snooze" member as text (malloc'd), or NULL: not such an object. */
static char *snooze_member(const char *line, size_t n)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err ignore = PD_ERR_INIT;
	char *v = NULL;
	int t;

	if (pd_json_parse(&j, line, n, &ignore) < 0)
		return NULL;
	if (j.tok[0].type == PD_JSON_OBJECT && (t = pd_json_get(&j, 0, "snooze")) >= 0) {
		if (j.tok[t].type == PD_JSON_NUMBER) {
			const char *p;
			size_t len;

			pd_json_span(&j, t, &p, &len);
			v = pd_xstrndup(p, len);
		} else {
			v = j.tok[t].type == PD_JSON_STRING ? pd_json_str(&j, t) : pd_xstrdup("");
		}
	}
	pd_json_release(&j);
	return v;
}

int pd_snooze_line(const char *out, size_t n, long long *ms, struct pd_err *e)
{
	size_t end = n, start;
	const char *line;
	char *v = NULL;
	int rc = 1;

	while (end > 0 && strchr(" \t\r\n", out[end - 1]) != NULL)
		end--;
	start = end;
	while (start > 0 && out[start - 1] != '\n')
		start--;
	while (start < end && (out[start] == ' ' || out[start] == '\t'))
		start++;
	line = out + start;
	n = end - start;
	if (n >= 6 && memcmp(line, "snooze", 6) == 0 &&
	    (n == 6 || line[6] == ' ' || line[6] == '\t')) {
		size_t i = 6;

		while (i < n && (line[i] == ' ' || line[i] == '\t'))
			i++;
		v = pd_xstrndup(line + i, n - i);
	} else if (n == 0 || line[0] != '{' || (v = snooze_member(line, n)) == NULL) {
		return 0;
	}
	if (*v == '\0' || pd_snooze_duration(v, ms, e) < 0) {
		struct pd_buf q = PD_BUF_INIT;
		char why[sizeof(e->msg)];

		snprintf(why, sizeof(why), "%s", *v ? e->msg : "no duration");
		pd_utf8_sanitize(&q, line, n < 120 ? n : 120);
		pd_err_clear(e);
		pd_errf(e, PD_EX_DATAERR, "bad snooze line '%s%s': %s", pd_buf_str(&q),
			n > 120 ? "..." : "", why);
		pd_buf_release(&q);
		rc = -1;
	}
	free(v);
	return rc;
}

void pd_exit_snooze(struct pd_pool_exit *x)
{
	struct pd_err e = PD_ERR_INIT;
	int rc;

	if (x->cls != PD_EXIT_FAILED || x->exit_code != 75 || x->out_truncated)
		return;
	rc = pd_snooze_line(pd_buf_str(&x->out), x->out.len, &x->snooze_ms, &e);
	if (rc == 0)
		return;
	pd_buf_reset(&x->error);
	if (rc < 0) {
		pd_buf_printf(&x->error, "exit 75: %s", e.msg);
		return;
	}
	x->cls = PD_EXIT_SNOOZED;
}

const char *pd_exit_class_name(enum pd_exit_class c)
{
	switch (c) {
	case PD_EXIT_OK:
		return "succeeded";
	case PD_EXIT_FAILED:
		return "failed";
	case PD_EXIT_TERMINAL:
		return "terminal";
	case PD_EXIT_TIMEOUT:
		return "timeout";
	case PD_EXIT_NOT_STARTED:
	case PD_EXIT_CANNOT_RUN:
		return "could_not_start";
	case PD_EXIT_DRAINED:
		return "released";
	case PD_EXIT_LEASE_LOST:
		return "lease_lost";
	case PD_EXIT_SNOOZED:
		return "snoozed";
	case PD_EXIT_CANCELLED:
		return "cancelled";
	}
	return "failed";
}

void pd_pool_init(struct pd_pool *p, int size, size_t stdout_limit, long long grace_ms,
		  const char *stderr_msg)
{
	memset(p, 0, sizeof(*p));
	p->slots = pd_xcalloc((size_t)size, sizeof(*p->slots));
	p->size = size;
	p->stdout_limit = stdout_limit;
	p->grace_ms = grace_ms;
	p->stderr_msg = stderr_msg ? stderr_msg : "handler stderr";
	for (int i = 0; i < size; i++) {
		p->slots[i].proc.pid = -1, pd_chan_init(&p->slots[i].chan);
		p->slots[i].progress_fd = -1;
	}
}

void pd_pool_exit_release(struct pd_pool_exit *x)
{
	pd_buf_release(&x->out);
	pd_buf_release(&x->error);
	pd_buf_release(&x->tail);
	pd_buf_release(&x->last_line);
	pd_progress_release(&x->progress);
	memset(x, 0, sizeof(*x));
}

/* Any state -> FREE: kill and reap a child still there, free what the slot owns. */
static void slot_reset(struct pd_pool_slot *s)
{
	if (s->state != PD_SLOT_FREE)
		pd_proc_release(&s->proc); /* kills and reaps a child still running */
	for (char **e = s->envp; e && *e; e++)
		free(*e);
	free(s->envp);
	pd_pool_exit_release(&s->exit);
	pd_chan_close(&s->chan);
	if (s->progress_fd >= 0)
		close(s->progress_fd);
	pd_progress_release(&s->progress);
	memset(s, 0, sizeof(*s));
	s->proc.pid = -1;
	pd_chan_init(&s->chan);
	s->progress_fd = -1;
	s->state = PD_SLOT_FREE;
}

void pd_chan_init(struct pd_chan *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void pd_chan_close(struct pd_chan *c)
{
	if (c->fd >= 0)
		close(c->fd);
	pd_buf_release(&c->in);
	pd_chan_init(c);
}

int pd_chan_open(struct pd_chan *c, int *child)
{
	int sv[2];

	pd_chan_close(c);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0) {
		int err = errno;

		close(sv[0]);
		close(sv[1]);
		errno = err;
		return -1;
	}
	c->fd = sv[0];
	*child = sv[1];
	return 0;
}

int pd_chan_pollfd(const struct pd_chan *c, struct pollfd *fds, int max)
{
	if (c->fd < 0 || c->ready || max < 1)
		return 0;
	fds[0] = (struct pollfd){.fd = c->fd, .events = POLLIN};
	return 1;
}

void pd_chan_io(struct pd_chan *c, const struct pollfd *fds, int n)
{
	ssize_t r = 1;
	char ch;
	int k = 0;

	while (k < n && !(c->fd >= 0 && fds[k].fd == c->fd && fds[k].revents))
		k++;
	if (k == n)
		return;
	/* a byte at a time: a request is short, and what follows it stays unread */
	while (!c->ready && (r = read(c->fd, &ch, 1)) == 1) {
		if (ch == '\n') {
			c->ready = 1;
			return;
		}
		if (c->in.len >= PD_CHAN_REQUEST_MAX) {
			static const char err[] = "error request too long\n";

			(void)!send(c->fd, err, sizeof(err) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			pd_chan_close(c);
			return;
		}
		pd_buf_putc(&c->in, ch);
	}
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
		pd_chan_close(c); /* every holder of the child's end closed it */
}

const char *pd_chan_request(const struct pd_chan *c)
{
	return c->fd >= 0 && c->ready ? pd_buf_str(&c->in) : NULL;
}

void pd_chan_answer(struct pd_chan *c, const char *line)
{
	struct pd_buf b = PD_BUF_INIT;

	if (c->fd < 0)
		return;
	pd_buf_printf(&b, "%s\n", line);
	/* short, and the child waits for it: a full socket is a child not reading */
	if (send(c->fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)b.len) {
		pd_chan_close(c);
	} else {
		c->ready = 0;
		pd_buf_reset(&c->in);
	}
	pd_buf_release(&b);
}

/* Slot s's child gets a channel: PD_WORKER_FD in its environment. 0, or -1 (errno). */
static int chan_open(struct pd_pool_slot *s, int *child)
{
	size_t n = 0;

	if (pd_chan_open(&s->chan, child) < 0)
		return -1;
	while (s->envp && s->envp[n])
		n++;
	s->envp = pd_xrealloc(s->envp, (n + 2) * sizeof(*s->envp));
	s->envp[n] = pd_xstrdup("PD_WORKER_FD=3");
	s->envp[n + 1] = NULL;
	return 0;
}

/*
 * Slot s's child gets a progress pipe: PD_PROGRESS_FD in its environment,
 * *child the write end. 0, or -1 (errno).
 */
static int progress_open(struct pd_pool_slot *s, int *child)
{
	int fds[2];
	size_t n = 0;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		errno = err;
		return -1;
	}
	s->progress_fd = fds[0];
	*child = fds[1];
	while (s->envp && s->envp[n])
		n++;
	s->envp = pd_xrealloc(s->envp, (n + 2) * sizeof(*s->envp));
	s->envp[n] = pd_xstrdup("PD_PROGRESS_FD=4");
	s->envp[n + 1] = NULL;
	return 0;
}

/*
 * Read slot s's progress pipe: at most PROGRESS_READ bytes (more waits for
 * the next pass), closed at its end.
 */
static void progress_read(struct pd_pool_slot *s)
{
	char buf[4096];
	size_t total = 0;
	ssize_t r = 0;

	while (s->progress_fd >= 0 && total < PROGRESS_READ &&
	       (r = read(s->progress_fd, buf, sizeof(buf))) > 0) {
		pd_progress_feed(&s->progress, buf, (size_t)r);
		total += (size_t)r;
	}
	if (s->progress_fd >= 0 && (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))) {
		close(s->progress_fd);
		s->progress_fd = -1;
		pd_progress_eof(&s->progress);
	}
}

void pd_pool_release(struct pd_pool *p)
{
	for (int i = 0; i < p->size; i++)
		slot_reset(&p->slots[i]);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}

int pd_pool_free_slot(const struct pd_pool *p)
{
	for (int i = 0; i < p->size; i++)
		if (p->slots[i].state == PD_SLOT_FREE)
			return i;
	return -1;
}

int pd_pool_count(const struct pd_pool *p, enum pd_slot_state s)
{
	int n = 0;

	for (int i = 0; i < p->size; i++)
		n += p->slots[i].state == s;
	return n;
}

int pd_pool_busy(const struct pd_pool *p)
{
	return p->size - pd_pool_count(p, PD_SLOT_FREE);
}

static void on_stderr(void *ctx, const char *line, size_t n)
{
	struct pd_pool_slot *s = ctx;
	char q[4200];

	pd_log(PD_LOG_INFO, s->stderr_msg, "%s line=%s", s->prefix,
	       pd_log_quote(q, sizeof(q), line));
	if (n > 0) {
		pd_buf_reset(&s->exit.last_line);
		pd_utf8_sanitize(&s->exit.last_line, line, n < LAST_LINE_MAX ? n : LAST_LINE_MAX);
	}
}

int pd_pool_start(struct pd_pool *p, int i, const struct pd_pool_job *j)
{
	struct pd_pool_slot *s = &p->slots[i];
	const char *sh[4] = {"/bin/sh", "-c", NULL, NULL};
	struct pd_proc_spec spec;
	struct pd_err e = PD_ERR_INIT;
	const char *what = NULL;
	int rc;

	slot_reset(s);
	s->h = j->h;
	s->stderr_msg = p->stderr_msg;
	s->envp = j->envp;
	s->timeout_ms = j->timeout_ms > 0 ? j->timeout_ms : 0;
	snprintf(s->prefix, sizeof(s->prefix), "%s", j->prefix ? j->prefix : "");
	s->exit.exit_code = -1;
	memset(&spec, 0, sizeof(spec));
	if (j->h->run) {
		sh[0] = j->h->shell ? j->h->shell : "/bin/sh";
		sh[2] = j->h->run;
		spec.argv = sh;
	} else {
		spec.argv = (const char *const *)j->h->exec_argv;
	}
	if ((p->chan && chan_open(s, &spec.pass_fd) < 0 && (what = "socketpair")) ||
	    (p->progress && progress_open(s, &spec.pass_fd2) < 0 && (what = "pipe"))) {
		int err = errno;

		if (spec.pass_fd > 2)
			close(spec.pass_fd);
		pd_errf(&e, PD_EX_SOFTWARE, "could not start: %s: %s", what, strerror(err));
		pd_log(PD_LOG_WARN, "handler could not start", "%s error=%s", s->prefix,
		       pd_log_quote((char[600]){0}, 600, e.msg));
		pd_exit_not_started(&s->exit, spec.argv[0], err, e.msg);
		s->proc.in_fd = s->proc.out_fd = s->proc.err_fd = -1; /* none started */
		s->state = PD_SLOT_DONE;
		return -1;
	}
	spec.envp = (const char *const *)s->envp;
	spec.cwd = j->h->cwd;
	spec.input = j->input;
	spec.input_len = j->input_len;
	spec.stdout_limit = pd_handler_result_limit(j->h, p->stdout_limit);
	spec.timeout_ms = s->timeout_ms;
	spec.kill_grace_ms = p->grace_ms;
	spec.on_stderr_line = on_stderr;
	spec.ctx = s;
	s->state = PD_SLOT_RUNNING;
	s->started_us = pd_now_us();
	rc = pd_proc_start(&s->proc, &spec, &e);
	if (spec.pass_fd > 2)
		close(spec.pass_fd);
	if (spec.pass_fd2 > 2)
		close(spec.pass_fd2);
	if (rc < 0) {
		pd_log(PD_LOG_WARN, "handler could not start", "%s error=%s", s->prefix,
		       pd_log_quote((char[600]){0}, 600, e.msg));
		pd_exit_not_started(&s->exit, spec.argv[0], s->proc.start_errno, e.msg);
		pd_proc_release(&s->proc);
		pd_chan_close(&s->chan);
		s->state = PD_SLOT_DONE;
		return -1;
	}
	return 0;
}

static int live(const struct pd_pool_slot *s)
{
	return s->state == PD_SLOT_RUNNING || s->state == PD_SLOT_STOPPING;
}

int pd_pool_pollfds(const struct pd_pool *p, struct pollfd *fds, int max)
{
	int n = 0;

	for (int i = 0; i < p->size && n < max; i++) {
		const struct pd_pool_slot *s = &p->slots[i];

		if (!live(s))
			continue;
		n += pd_proc_pollfds(&s->proc, fds + n, max - n);
		n += pd_chan_pollfd(&s->chan, fds + n, max - n);
		if (s->progress_fd >= 0 && n < max)
			fds[n++] = (struct pollfd){.fd = s->progress_fd, .events = POLLIN};
	}
	return n;
}

void pd_pool_io(struct pd_pool *p, const struct pollfd *fds, int n)
{
	for (int i = 0; i < p->size; i++) {
		struct pd_pool_slot *s = &p->slots[i];

		if (!live(s))
			continue;
		pd_proc_io(&s->proc, fds, n);
		pd_chan_io(&s->chan, fds, n);
		for (int k = 0; k < n && s->progress_fd >= 0; k++)
			if (fds[k].fd == s->progress_fd && fds[k].revents)
				progress_read(s);
	}
}

const char *pd_pool_request(const struct pd_pool *p, int i)
{
	return pd_chan_request(&p->slots[i].chan);
}

int pd_pool_requests(const struct pd_pool *p)
{
	int n = 0;

	for (int i = 0; i < p->size; i++)
		n += pd_pool_request(p, i) != NULL;
	return n;
}

void pd_pool_answer(struct pd_pool *p, int i, const char *line)
{
	pd_chan_answer(&p->slots[i].chan, line);
}

void pd_pool_reap(struct pd_pool *p)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int mine = 0;

		for (int i = 0; i < p->size && !mine; i++)
			if (live(&p->slots[i]))
				mine = pd_proc_reap(&p->slots[i].proc, pid, st);
		if (!mine && p->adopt)
			mine = p->adopt(p->adopt_ctx, pid, st);
		if (!mine)
			pd_log(PD_LOG_DEBUG, "reaped an unknown child", "pid=%d", (int)pid);
	}
}

long long pd_pool_deadline(const struct pd_pool *p)
{
	long long d = -1;

	for (int i = 0; i < p->size; i++) {
		long long t;

		if (!live(&p->slots[i]))
			continue;
		t = pd_proc_deadline(&p->slots[i].proc);
		if (t >= 0 && (d < 0 || t < d))
			d = t;
	}
	return d;
}

/* RUNNING/STOPPING -> DONE: classify the finished child into s->exit. */
static void collect(struct pd_pool_slot *s)
{
	struct pd_pool_exit *x = &s->exit;
	struct pd_proc_result r;
	struct pd_buf raw = PD_BUF_INIT;
	char dur[PD_DUR_MAX];

	pd_proc_result(&s->proc, &r);
	x->cls = pd_exit_classify(&r, s->stop, s->h);
	x->exit_code = r.exit_code;
	x->signal = r.signal;
	x->ran_ms = pd_now_ms() - s->proc.started_ms;
	x->ran_us = pd_now_us() - s->started_us;
	x->started_us = s->started_us;
	x->out_truncated = s->proc.truncated;
	if (s->proc.out.len)
		pd_buf_append(&x->out, s->proc.out.data, s->proc.out.len);
	progress_read(s); /* the notes written before the end; a writer left may hold it */
	pd_progress_eof(&s->progress);
	x->progress = s->progress;
	memset(&s->progress, 0, sizeof(s->progress));
	pd_tail_copy(&s->proc.err_tail, &raw);
	pd_utf8_sanitize(&x->tail, pd_buf_str(&raw), raw.len);
	pd_buf_release(&raw);
	switch (x->cls) {
	case PD_EXIT_TIMEOUT:
		pd_dur_format(s->timeout_ms, dur, sizeof(dur));
		pd_buf_printf(&x->error, "timeout after %s", dur);
		break;
	case PD_EXIT_FAILED:
	case PD_EXIT_TERMINAL:
		if (r.exit_code >= 0)
			pd_buf_printf(&x->error, "exit %d", r.exit_code);
		else if (r.signal > 0)
			pd_buf_printf(&x->error, "killed by signal %d (%s)", r.signal,
				      strsignal(r.signal));
		else
			pd_buf_puts(&x->error, "exit status lost");
		break;
	case PD_EXIT_CANNOT_RUN: /* sh: command not found (127), not executable (126) */
		pd_buf_printf(&x->error, "command %s (exit %d)%s%s",
			      r.exit_code == 127 ? "not found" : "not executable", r.exit_code,
			      x->last_line.len ? ": " : "", pd_buf_str(&x->last_line));
		break;
	case PD_EXIT_CANCELLED:
		pd_buf_puts(&x->error, "cancelled");
		break;
	case PD_EXIT_OK:
	case PD_EXIT_NOT_STARTED:
	case PD_EXIT_DRAINED:
	case PD_EXIT_LEASE_LOST:
	case PD_EXIT_SNOOZED:
		break;
	}
	pd_proc_release(&s->proc);
	s->state = PD_SLOT_DONE;
}

int pd_pool_tick(struct pd_pool *p, long long now_ms)
{
	int done = 0;

	for (int i = 0; i < p->size; i++) {
		struct pd_pool_slot *s = &p->slots[i];

		if (!live(s))
			continue;
		pd_proc_tick(&s->proc, now_ms);
		if (s->state == PD_SLOT_RUNNING && s->proc.timed_out) {
			s->state = PD_SLOT_STOPPING;
			s->stop = PD_STOP_TIMEOUT;
		}
		if (pd_proc_done(&s->proc)) {
			collect(s);
			done++;
		}
	}
	return done;
}

void pd_pool_stop(struct pd_pool *p, int i, enum pd_stop_reason why)
{
	struct pd_pool_slot *s = &p->slots[i];
	static const char *const names[] = {"none", "timeout", "drain", "lease_lost", "cancel"};

	if (s->state == PD_SLOT_STOPPING && s->stop == PD_STOP_CANCEL && why == PD_STOP_LEASE_LOST)
		s->stop = why;
	if (s->state != PD_SLOT_RUNNING)
		return;
	s->state = PD_SLOT_STOPPING;
	s->stop = why;
	pd_proc_kill(&s->proc, names[why]);
}

void pd_pool_stop_all(struct pd_pool *p, enum pd_stop_reason why)
{
	for (int i = 0; i < p->size; i++)
		pd_pool_stop(p, i, why);
}

void pd_pool_clear(struct pd_pool *p, int i)
{
	slot_reset(&p->slots[i]);
}

void pd_pool_take(struct pd_pool *p, int i, struct pd_pool_exit *out)
{
	*out = p->slots[i].exit;
	memset(&p->slots[i].exit, 0, sizeof(p->slots[i].exit));
	slot_reset(&p->slots[i]);
}
