#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h> /* CLONE_*: <sched.h> is shadowed by lib/sched.h */
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "proc.h"
#include "sig.h"

#define CHUNK		 65536 /* bytes per read or write */
#define GIVE_UP_READS	 16    /* reads to drain a pipe before closing it */
#define DEFAULT_PATH	 "/usr/local/bin:/usr/bin:/bin"
#define NO_SIGNALFD_POLL 10 /* ms between waitpid checks without a signalfd */
/* glibc's clone(2) wrapper, declared in <sched.h>. */
extern int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);

#define CHILD_STACK (64 * 1024) /* the child's stack until it execs */

/*
 * What the child needs, all prepared before the clone. The child shares the
 * parent's memory (CLONE_VM) and the parent is suspended until it execs or
 * exits (CLONE_VFORK), so the child reports a failure by writing err.
 */
struct child_args {
	const char *path;
	char *const *argv;
	char *const *envp;
	const char *cwd; /* NULL: stay */
	int in_r, out_w, err_w;
	int pass_fd;  /* > 2: to become PD_PROC_PASS_FD */
	int pass_fd2; /* > 2: to become PD_PROC_PASS_FD2 */
	long max_fd;
	pid_t parent; /* getpid() before the clone */
	int err;      /* set by the child when it could not exec: errno */
	int in_cwd;   /* set by the child when the chdir to cwd failed */
};

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/*
 * Keep pipe ends away from 0, 1 and 2 (which may be closed in the parent),
 * so that the child's dup2() onto 0-2 never clobbers a pipe it still needs.
 */
static int move_high(int fd)
{
	int nfd;

	if (fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return nfd;
}

static int make_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	fds[0] = move_high(fds[0]);
	fds[1] = move_high(fds[1]);
	if (fds[0] < 0 || fds[1] < 0) {
		int err = errno;

		close_fd(&fds[0]);
		close_fd(&fds[1]);
		errno = err;
		return -1;
	}
	return 0;
}

/*
 * fd, our end of a pipe just made, non-blocking. It has no other status
 * flag to keep (pipe2 set none; O_CLOEXEC is a descriptor flag), so one
 * F_SETFL without an F_GETFL first: a system call less a descriptor.
 */
static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, O_NONBLOCK);
}

static const char *env_path(const char *const *envp)
{
	for (; envp && *envp; envp++)
		if (strncmp(*envp, "PATH=", 5) == 0)
			return *envp + 5;
	return NULL;
}

/*
 * Look prog up in path like execvp(3): the first executable regular file
 * wins; an empty element means the current directory. NULL with *err set
 * (EACCES if only non-executable files were found, else ENOENT).
 */
static char *path_search(const char *prog, const char *path, int *err)
{
	int saw_eacces = 0;

	for (const char *dir = path;;) {
		const char *end = strchrnul(dir, ':');
		struct pd_buf b = PD_BUF_INIT;
		struct stat st;

		if (end == dir)
			pd_buf_putc(&b, '.');
		else
			pd_buf_append(&b, dir, (size_t)(end - dir));
		pd_buf_putc(&b, '/');
		pd_buf_puts(&b, prog);
		if (stat(b.data, &st) == 0 && S_ISREG(st.st_mode)) {
			if (faccessat(AT_FDCWD, b.data, X_OK, AT_EACCESS) == 0)
				return pd_buf_detach(&b);
			saw_eacces = 1;
		}
		pd_buf_release(&b);
		if (*end == '\0')
			break;
		dir = end + 1;
	}
	*err = saw_eacces ? EACCES : ENOENT;
	return NULL;
}

int pd_proc_check(const char *prog, const char *const *envp, int *err)
{
	const char *search;
	struct stat st;
	char *path;

	if (prog == NULL || *prog == '\0') {
		*err = ENOENT;
		return -1;
	}
	if (strchr(prog, '/') == NULL) {
		search = env_path(envp ? envp : (const char *const *)environ);
		if (search == NULL)
			search = getenv("PATH");
		path = path_search(prog, search ? search : DEFAULT_PATH, err);
		free(path);
		return path ? 0 : -1;
	}
	if (stat(prog, &st) < 0) {
		*err = errno;
		return -1;
	}
	if (!S_ISREG(st.st_mode) || faccessat(AT_FDCWD, prog, X_OK, AT_EACCESS) < 0) {
		*err = EACCES;
		return -1;
	}
	return 0;
}

/*
 * In the child: every fd from first on closes on exec. The child's descriptor
 * table is its own (no CLONE_FILES): marking them leaves the parent's open.
 */
static void close_others(unsigned first, long max_fd)
{
#ifdef CLOSE_RANGE_CLOEXEC
	if (close_range(first, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
#endif
	if (close_range(first, ~0U, 0) == 0)
		return;
	for (long fd = first; fd < max_fd; fd++)
		close((int)fd);
}

/*
 * The child, between clone and exec: raw system calls only. It runs on its
 * own stack in the parent's memory (the parent waits), so it changes nothing
 * but c->err and its own kernel state.
 */
static int child(void *arg)
{
	struct child_args *c = arg;
	struct sigaction dfl;
	sigset_t empty;
	int fd2 = c->pass_fd2;

	if (setpgid(0, 0) < 0)
		goto fail;
	if (dup2(c->in_r, 0) < 0 || dup2(c->out_w, 1) < 0 || dup2(c->err_w, 2) < 0)
		goto fail;
	/* the second out of the first's way */
	if (c->pass_fd > 2 && fd2 == PD_PROC_PASS_FD &&
	    (fd2 = fcntl(fd2, F_DUPFD, PD_PROC_PASS_FD2 + 1)) < 0)
		goto fail;
	/* dup2 onto itself keeps close-on-exec: clear it then */
	if (c->pass_fd > 2 &&
	    (c->pass_fd == PD_PROC_PASS_FD ? fcntl(PD_PROC_PASS_FD, F_SETFD, 0)
					   : dup2(c->pass_fd, PD_PROC_PASS_FD)) < 0)
		goto fail;
	if (fd2 > 2 && (fd2 == PD_PROC_PASS_FD2 ? fcntl(PD_PROC_PASS_FD2, F_SETFD, 0)
						: dup2(fd2, PD_PROC_PASS_FD2)) < 0)
		goto fail;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL); /* SIGKILL, SIGSTOP and libc's own fail: fine */
	sigemptyset(&empty);
	sigprocmask(SIG_SETMASK, &empty, NULL);
	/*
	 * Die with the parent. If it died before this line, nobody would ever
	 * collect us (or kill us): do not start at all.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		goto fail;
	if (getppid() != c->parent) {
		c->err = ESRCH;
		_exit(127);
	}
	if (fd2 > 2 && c->pass_fd <= 2)
		close(PD_PROC_PASS_FD);
	close_others(fd2 > 2	      ? PD_PROC_PASS_FD2 + 1
		     : c->pass_fd > 2 ? PD_PROC_PASS_FD + 1
				      : 3,
		     c->max_fd);
	if (c->cwd && chdir(c->cwd) < 0) {
		c->in_cwd = 1;
		goto fail;
	}
	execve(c->path, c->argv, c->envp);
fail:
	c->err = errno ? errno : EINVAL;
	_exit(127);
}

/*
 * The descriptor limit, for the child's fallback when close_range is
 * missing: read once (a getrlimit call a spawn otherwise), at the first
 * spawn; a limit raised later leaves descriptors above the old one to
 * close-on-exec alone (all of ours are opened O_CLOEXEC).
 */
static long open_max(void)
{
	static long max_fd = -1;

	if (max_fd < 0) {
		max_fd = sysconf(_SC_OPEN_MAX);
		if (max_fd < 0 || max_fd > INT_MAX)
			max_fd = INT_MAX;
	}
	return max_fd;
}

/*
 * The child's stack, mapped once. One is enough: the parent is suspended
 * while the child uses it, and the process runs one thread.
 */
static char *child_stack(void)
{
	static char *stack;

	if (stack == NULL) {
		void *m = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

		if (m != MAP_FAILED)
			stack = m;
	}
	return stack;
}

static void init(struct pd_proc *p, const struct pd_proc_spec *s)
{
	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->in_fd = p->out_fd = p->err_fd = -1;
	p->out_limit = s->stdout_limit ? s->stdout_limit : PD_PROC_STDOUT_LIMIT_DEFAULT;
	pd_tail_init(&p->err_tail);
	p->on_stderr_line = s->on_stderr_line;
	p->on_stdout = s->on_stdout;
	p->keep_stdin = s->keep_stdin;
	p->ctx = s->ctx;
	p->timeout_at = p->kill_at = p->eof_at = -1;
	p->grace_ms = s->kill_grace_ms > 0 ? s->kill_grace_ms : PD_PROC_GRACE_DEFAULT_MS;
}

int pd_proc_start(struct pd_proc *p, const struct pd_proc_spec *s, struct pd_err *e)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
	const char *const *envp = s->envp ? s->envp : (const char *const *)environ;
	struct child_args c;
	sigset_t all, old;
	const char *prog;
	char *path;
	int child_errno = 0, clone_errno;
	char *stack;
	pid_t pid;

	init(p, s);
	if (s->argv == NULL || s->argv[0] == NULL || s->argv[0][0] == '\0') {
		p->start_errno = ENOENT;
		return pd_errf(e, PD_EX_SOFTWARE, "could not start handler: empty command");
	}
	prog = s->argv[0];
	if (strchr(prog, '/')) {
		path = pd_xstrdup(prog);
	} else {
		const char *search = env_path(envp);

		if (search == NULL)
			search = getenv("PATH");
		path = path_search(prog, search ? search : DEFAULT_PATH, &child_errno);
		p->start_errno = child_errno;
		if (path == NULL)
			return pd_errf(e, PD_EX_SOFTWARE, "could not start '%s': %s", prog,
				       strerror(child_errno));
	}
	if (make_pipe(in) < 0 || make_pipe(out) < 0 || make_pipe(err) < 0) {
		p->start_errno = errno;
		pd_errf(e, PD_EX_SOFTWARE, "could not start '%s': could not create pipe: %s", prog,
			strerror(errno));
		goto fail;
	}

	c.path = path;
	c.argv = (char *const *)s->argv;
	c.envp = (char *const *)envp;
	c.cwd = s->cwd;
	c.in_r = in[0];
	c.out_w = out[1];
	c.err_w = err[1];
	c.pass_fd = s->pass_fd;
	c.pass_fd2 = s->pass_fd2;
	c.parent = getpid();
	c.err = 0;
	c.in_cwd = 0;
	c.max_fd = open_max();

	if ((stack = child_stack()) == NULL) {
		p->start_errno = ENOMEM;
		pd_errf(e, PD_EX_SOFTWARE, "could not start '%s': no memory for the child's stack",
			prog);
		goto fail;
	}
	/*
	 * No handler of ours may run in the child (on our memory) before it
	 * resets them. Like posix_spawn(3): share memory, wait for the exec.
	 */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = clone(child, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	clone_errno = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	if (pid < 0) {
		p->start_errno = clone_errno;
		pd_errf(e, PD_EX_SOFTWARE, "could not start '%s': clone: %s", prog,
			strerror(clone_errno));
		goto fail;
	}
	if (c.err != 0) { /* it exited 127 without exec */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		p->start_errno = c.err;
		if (c.in_cwd)
			pd_errf(e, PD_EX_SOFTWARE, "could not start '%s' in '%s': %s", prog, s->cwd,
				strerror(c.err));
		else
			pd_errf(e, PD_EX_SOFTWARE, "could not start '%s': %s", prog,
				strerror(c.err));
		goto fail;
	}
	free(path);

	p->pid = pid;
	p->in_fd = in[1];
	p->out_fd = out[0];
	p->err_fd = err[0];
	set_nonblock(p->out_fd);
	set_nonblock(p->err_fd);
	if (s->input_len > 0)
		pd_buf_append(&p->input, s->input, s->input_len);
	else if (!p->keep_stdin)
		close_fd(&p->in_fd);
	if (p->in_fd >= 0)
		set_nonblock(p->in_fd);
	p->started_ms = pd_now_ms();
	if (s->timeout_ms > 0)
		p->timeout_at = p->started_ms + s->timeout_ms;
	return 0;

fail:
	free(path);
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&err[0]);
	close_fd(&err[1]);
	return -1;
}

int pd_proc_pollfds(const struct pd_proc *p, struct pollfd *fds, int max)
{
	int n = 0;

	if (p->in_fd >= 0 && p->input_off < p->input.len && n < max)
		fds[n++] = (struct pollfd){.fd = p->in_fd, .events = POLLOUT};
	if (p->out_fd >= 0 && n < max)
		fds[n++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
	if (p->err_fd >= 0 && n < max)
		fds[n++] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
	return n;
}

static void close_input(struct pd_proc *p)
{
	close_fd(&p->in_fd);
	pd_buf_release(&p->input);
	p->input_off = 0;
}

/* One write of what is left; returns 1 if the pipe may take more now. */
static int write_input(struct pd_proc *p)
{
	size_t left = p->input.len - p->input_off;
	ssize_t n;

	if (left > CHUNK)
		left = CHUNK;
	n = left > 0 ? write(p->in_fd, p->input.data + p->input_off, left) : 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		close_input(p); /* EPIPE: the child does not want the rest */
		return 0;
	}
	p->input_off += (size_t)n;
	if (p->input_off < p->input.len)
		return (size_t)n == left;
	if (p->keep_stdin && !p->input_eof) {
		pd_buf_reset(&p->input); /* all written: the buffer starts over */
		p->input_off = 0;
	} else {
		close_input(p);
	}
	return 0;
}

void pd_proc_write(struct pd_proc *p, const char *data, size_t n)
{
	if (p->in_fd < 0 || p->input_eof)
		return;
	if (p->input_off > 0 && p->input_off >= p->input.len / 2) {
		/* keep the unwritten part at the front */
		memmove(p->input.data, p->input.data + p->input_off, p->input.len - p->input_off);
		p->input.len -= p->input_off;
		p->input_off = 0;
	}
	pd_buf_append(&p->input, data, n);
}

void pd_proc_flush(struct pd_proc *p)
{
	while (p->in_fd >= 0 && p->input_off < p->input.len && write_input(p))
		;
}

void pd_proc_close_input(struct pd_proc *p)
{
	p->input_eof = 1;
	if (p->in_fd >= 0 && p->input_off >= p->input.len)
		close_input(p);
}

/* One read of stdout; returns what read(2) returned. */
static ssize_t read_out(struct pd_proc *p)
{
	size_t room = p->out_limit > p->out.len ? p->out_limit - p->out.len : 0;
	ssize_t n;

	if (p->on_stdout) {
		char tmp[CHUNK];

		n = read(p->out_fd, tmp, sizeof(tmp));
		if (n > 0)
			p->on_stdout(p->ctx, tmp, (size_t)n);
	} else if (room > 0) {
		char *dst = pd_buf_grow(&p->out, room < CHUNK ? room : CHUNK);

		n = read(p->out_fd, dst, room < CHUNK ? room : CHUNK);
		if (n > 0) {
			p->out.len += (size_t)n;
			p->out.data[p->out.len] = '\0';
		}
	} else {
		char sink[CHUNK];

		n = read(p->out_fd, sink, sizeof(sink));
		if (n > 0)
			p->truncated = 1;
	}
	return n;
}

static void emit_line(struct pd_proc *p)
{
	if (p->on_stderr_line)
		p->on_stderr_line(p->ctx, pd_buf_str(&p->err_line), p->err_line.len);
	pd_buf_reset(&p->err_line);
}

/* Lines up to PD_PROC_LINE_MAX bytes go out whole, longer ones in pieces. */
static void split_lines(struct pd_proc *p, const char *s, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(s, '\n', n);
		size_t take = nl ? (size_t)(nl - s) : n;
		size_t room = PD_PROC_LINE_MAX - p->err_line.len;

		if (take > room) {
			pd_buf_append(&p->err_line, s, room);
			emit_line(p);
			s += room;
			n -= room;
			continue;
		}
		pd_buf_append(&p->err_line, s, take);
		s += take;
		n -= take;
		if (nl) {
			emit_line(p);
			s++;
			n--;
		}
	}
}

static ssize_t read_err(struct pd_proc *p)
{
	char tmp[CHUNK];
	ssize_t n = read(p->err_fd, tmp, sizeof(tmp));

	if (n > 0) {
		pd_tail_append(&p->err_tail, tmp, (size_t)n);
		split_lines(p, tmp, (size_t)n);
	}
	return n;
}

static void close_err(struct pd_proc *p)
{
	close_fd(&p->err_fd);
	if (p->err_line.len > 0)
		emit_line(p);
	pd_buf_release(&p->err_line);
}

/* After a read: close on EOF or a real error, keep on EAGAIN. */
static int settle(ssize_t n)
{
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

void pd_proc_io(struct pd_proc *p, const struct pollfd *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i].revents == 0 || fds[i].fd < 0)
			continue;
		if (fds[i].fd == p->in_fd) {
			write_input(p);
		} else if (fds[i].fd == p->out_fd) {
			if (settle(read_out(p)))
				close_fd(&p->out_fd);
		} else if (fds[i].fd == p->err_fd) {
			if (settle(read_err(p)))
				close_err(p);
		}
	}
}

long long pd_proc_deadline(const struct pd_proc *p)
{
	if (p->pid <= 0)
		return -1;
	if (!p->reaped) {
		if (p->term_sent)
			return p->kill_sent ? -1 : p->kill_at;
		return p->timeout_at;
	}
	return pd_proc_done(p) ? -1 : p->eof_at;
}

static void terminate(struct pd_proc *p, const char *reason, long long now_ms)
{
	if (p->pid <= 0 || p->reaped || p->term_sent)
		return;
	p->killed_reason = reason;
	p->term_sent = 1;
	p->kill_at = now_ms + p->grace_ms;
	kill(-p->pid, SIGTERM);
	kill(-p->pid, SIGCONT); /* a stopped process cannot act on SIGTERM */
}

/*
 * The child exited but something still holds its stdout or stderr: take
 * what is buffered, close, and kill what is left of the group.
 */
static void give_up(struct pd_proc *p)
{
	for (int i = 0; p->out_fd >= 0 && i < GIVE_UP_READS; i++)
		if (read_out(p) <= 0)
			break;
	for (int i = 0; p->err_fd >= 0 && i < GIVE_UP_READS; i++)
		if (read_err(p) <= 0)
			break;
	close_fd(&p->out_fd);
	close_err(p);
	kill(-p->pid, SIGKILL);
	p->orphans_killed = 1;
}

void pd_proc_tick(struct pd_proc *p, long long now_ms)
{
	if (p->pid <= 0)
		return;
	if (!p->reaped) {
		if (p->timeout_at >= 0 && !p->term_sent && now_ms >= p->timeout_at) {
			p->timed_out = 1;
			terminate(p, "timeout", now_ms);
		}
		if (p->term_sent && !p->kill_sent && now_ms >= p->kill_at) {
			p->kill_sent = 1;
			kill(-p->pid, SIGKILL);
		}
	} else if (!pd_proc_done(p) && now_ms >= p->eof_at) {
		give_up(p);
	}
}

void pd_proc_kill(struct pd_proc *p, const char *reason)
{
	terminate(p, reason, pd_now_ms());
}

int pd_proc_reap(struct pd_proc *p, pid_t pid, int wstatus)
{
	if (p->pid <= 0 || pid != p->pid || p->reaped)
		return 0;
	p->reaped = 1;
	p->wstatus = wstatus;
	close_input(p);
	if (p->out_fd >= 0 || p->err_fd >= 0)
		p->eof_at = pd_now_ms() + PD_PROC_EOF_WAIT_MS;
	return 1;
}

int pd_proc_done(const struct pd_proc *p)
{
	if (p->pid <= 0)
		return 1;
	return p->reaped && p->in_fd < 0 && p->out_fd < 0 && p->err_fd < 0;
}

void pd_proc_result(const struct pd_proc *p, struct pd_proc_result *r)
{
	r->exit_code = -1;
	r->signal = 0;
	if (p->reaped && !p->status_lost) {
		if (WIFEXITED(p->wstatus))
			r->exit_code = WEXITSTATUS(p->wstatus);
		else if (WIFSIGNALED(p->wstatus))
			r->signal = WTERMSIG(p->wstatus);
	}
	r->timed_out = p->timed_out;
	r->killed_reason = p->killed_reason;
}

void pd_proc_release(struct pd_proc *p)
{
	if (p->pid > 0 && !p->reaped) {
		int st;

		kill(-p->pid, SIGKILL);
		while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
			;
		p->reaped = 1;
	} else if (p->pid > 0 && (p->out_fd >= 0 || p->err_fd >= 0)) {
		kill(-p->pid, SIGKILL);
	}
	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	pd_buf_release(&p->input);
	pd_buf_release(&p->out);
	pd_buf_release(&p->err_line);
	p->pid = -1;
}

static int run_loop(struct pd_proc *p, int sfd, struct pd_err *e)
{
	while (!pd_proc_done(p)) {
		struct pollfd fds[PD_PROC_MAX_FDS + 1];
		int n = pd_proc_pollfds(p, fds, PD_PROC_MAX_FDS);
		long long dl = pd_proc_deadline(p);
		int timeout = -1;

		if (dl >= 0) {
			long long left = dl - pd_now_ms();

			timeout = left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
		}
		if (sfd >= 0)
			fds[n] = (struct pollfd){.fd = sfd, .events = POLLIN};
		else if (!p->reaped && (timeout < 0 || timeout > NO_SIGNALFD_POLL))
			timeout = NO_SIGNALFD_POLL;
		if (poll(fds, (nfds_t)(n + (sfd >= 0)), timeout) < 0) {
			if (errno != EINTR)
				return pd_errf(e, PD_EX_SOFTWARE,
					       "could not wait for '%d': poll: %s", (int)p->pid,
					       strerror(errno));
			continue;
		}
		pd_proc_io(p, fds, n);
		if (sfd >= 0 && fds[n].revents)
			while (pd_sig_read(sfd) > 0)
				;
		if (!p->reaped) {
			int st;
			pid_t w = waitpid(p->pid, &st, WNOHANG);

			if (w == p->pid) {
				pd_proc_reap(p, w, st);
			} else if (w < 0 && errno == ECHILD) {
				pd_proc_reap(p, p->pid, 0);
				p->status_lost = 1;
			}
		}
		pd_proc_tick(p, pd_now_ms());
	}
	return 0;
}

int pd_proc_run(struct pd_proc *p, const struct pd_proc_spec *s, struct pd_err *e)
{
	struct sigaction old_sa, dfl;
	sigset_t chld, old_mask;
	int restore_sa = 0, sfd, rc;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old_mask);
	sigaction(SIGCHLD, NULL, &old_sa);
	if (old_sa.sa_handler == SIG_IGN || (old_sa.sa_flags & SA_NOCLDWAIT)) {
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(SIGCHLD, &dfl, NULL);
		restore_sa = 1;
	}
	sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC); /* -1: poll instead */

	rc = pd_proc_start(p, s, e);
	if (rc == 0)
		rc = run_loop(p, sfd, e);

	if (sfd >= 0)
		close(sfd);
	if (restore_sa)
		sigaction(SIGCHLD, &old_sa, NULL);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	return rc;
}
