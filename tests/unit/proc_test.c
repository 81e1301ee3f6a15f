/*
 * Unit tests for lib/clock, lib/sig and lib/proc through the C API: the
 * stderr line callback, the tail's contents, start errors, release of a
 * running child, and that nothing leaks (fds, zombies, signal state).
 */
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "proc.h"
#include "sig.h"
#include "tap.h"

#define MAX_LINES 16

struct lines {
	int n;
	struct pd_buf v[MAX_LINES];
	struct pd_proc *p;   /* for kill_on */
	const char *kill_on; /* pd_proc_kill(p, "boom") on this line */
};

static void collect(void *ctx, const char *line, size_t n)
{
	struct lines *l = ctx;

	ok(line[n] == '\0', "the line is NUL-terminated");
	if (l->n < MAX_LINES) {
		l->v[l->n] = (struct pd_buf)PD_BUF_INIT;
		pd_buf_append(&l->v[l->n], line, n);
	}
	l->n++;
	if (l->kill_on && strcmp(line, l->kill_on) == 0)
		pd_proc_kill(l->p, "boom");
}

static void lines_release(struct lines *l)
{
	for (int i = 0; i < l->n && i < MAX_LINES; i++)
		pd_buf_release(&l->v[i]);
	l->n = 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

static int no_children(void)
{
	return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static struct pd_proc_spec sh(const char *const *argv, struct lines *l)
{
	struct pd_proc_spec s = {.argv = argv, .on_stderr_line = collect, .ctx = l};

	return s;
}

static void test_clock(void)
{
	long long a = pd_now_ms(), us = pd_now_us(), b = pd_now_ms();

	ok(a > 0 && b >= a, "pd_now_ms is positive and does not go back");
	ok(us / 1000 >= a && us / 1000 <= b, "pd_now_us agrees with pd_now_ms");
}

static void test_sig(void)
{
	int sigs[] = {SIGUSR1, SIGUSR2};
	int bad[] = {SIGKILL};
	struct pd_err e = PD_ERR_INIT;
	sigset_t cur;
	int fd = pd_sig_open(sigs, 2, &e);

	ok(fd >= 0, "pd_sig_open opens a signalfd");
	sigprocmask(SIG_BLOCK, NULL, &cur);
	ok(sigismember(&cur, SIGUSR1) && sigismember(&cur, SIGUSR2), "the signals are blocked");
	is_int(pd_sig_read(fd), 0, "nothing pending: 0");
	raise(SIGUSR2);
	is_int(pd_sig_read(fd), SIGUSR2, "a raised signal is read");
	is_int(pd_sig_read(fd), 0, "then nothing");
	close(fd);

	is_int(pd_sig_open(bad, 1, &e), -1, "SIGKILL cannot be watched");
	is_int(e.code, PD_EX_SOFTWARE, "code 70");
	is_str(e.msg, "cannot watch signal 9: invalid signal", "the message names the signal");
}

static void test_lines(void)
{
	/* 4097 x, newline; 4096 y, newline; "a", "", then "tail" without \n */
	const char *argv[] = {"sh", "-c",
			      "head -c 4097 /dev/zero | tr '\\0' x >&2; echo >&2;"
			      "head -c 4096 /dev/zero | tr '\\0' y >&2; echo >&2;"
			      "printf 'a\\n\\ntail' >&2; printf out",
			      NULL};
	struct lines l = {0};
	struct pd_proc_spec s = sh(argv, &l);
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf tail = PD_BUF_INIT, want = PD_BUF_INIT;
	struct pd_proc_result r;
	struct pd_proc p;

	is_int(pd_proc_run(&p, &s, &e), 0, "pd_proc_run: sh runs");
	pd_proc_result(&p, &r);
	is_int(r.exit_code, 0, "exit 0");
	is_int(r.signal, 0, "no signal");
	ok(r.killed_reason == NULL && !r.timed_out, "not killed");
	is_str(pd_buf_str(&p.out), "out", "stdout captured");
	is_int(l.n, 6, "six stderr lines");
	if (l.n == 6) {
		is_int(l.v[0].len, 4096, "a 4097-byte line: 4096 first");
		is_int(l.v[1].len, 1, "then 1");
		is_int(l.v[2].len, 4096, "a 4096-byte line is one line");
		ok(l.v[2].data[0] == 'y' && l.v[2].data[4095] == 'y', "of y");
		is_str(pd_buf_str(&l.v[3]), "a", "a short line");
		is_str(pd_buf_str(&l.v[4]), "", "an empty line");
		is_str(pd_buf_str(&l.v[5]), "tail", "the last partial line is flushed");
	}
	/* Tail: the last 4096 of 4098 + 4097 + 7 bytes. */
	pd_tail_copy(&p.err_tail, &tail);
	for (int i = 0; i < 4096 - 8; i++)
		pd_buf_putc(&want, 'y');
	pd_buf_puts(&want, "\na\n\ntail");
	is_int(tail.len, 4096, "the tail holds 4096 bytes");
	ok(tail.len == want.len && memcmp(tail.data, want.data, want.len) == 0,
	   "the tail holds the last 4096 bytes of stderr");
	pd_buf_release(&tail);
	pd_buf_release(&want);
	pd_proc_release(&p);
	lines_release(&l);
}

static void test_kill_from_callback(void)
{
	const char *argv[] = {"sh", "-c", "echo boom >&2; exec sleep 30", NULL};
	struct lines l = {0};
	struct pd_proc_spec s = sh(argv, &l);
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc_result r;
	struct pd_proc p;
	long long t0 = pd_now_ms();

	l.p = &p;
	l.kill_on = "boom";
	is_int(pd_proc_run(&p, &s, &e), 0, "runs");
	pd_proc_result(&p, &r);
	is_int(r.signal, SIGTERM, "killed with SIGTERM by the callback");
	is_int(r.exit_code, -1, "exit_code -1 when signalled");
	is_str(r.killed_reason, "boom", "with its reason");
	is_int(r.timed_out, 0, "not a timeout");
	ok(pd_now_ms() - t0 < 5000, "promptly");
	pd_proc_release(&p);
	lines_release(&l);
}

static void test_start_errors(void)
{
	const char *missing[] = {"/nonexistent/x", NULL};
	const char *nopath[] = {"sh", "-c", "true", NULL};
	const char *env[] = {"PATH=/nonexistent:/also/not", NULL};
	const char *empty[] = {NULL};
	struct pd_proc_spec s = {.argv = missing};
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc p;
	int fds = count_fds();

	is_int(pd_proc_start(&p, &s, &e), -1, "a missing program does not start");
	is_int(e.code, PD_EX_SOFTWARE, "code 70");
	is_str(e.msg, "could not start '/nonexistent/x': No such file or directory",
	       "the message names the program and the reason");
	ok(pd_proc_done(&p), "nothing to wait for");
	ok(no_children(), "the failed child was reaped");
	pd_proc_release(&p);
	is_int(count_fds(), fds, "no fd leaked");

	pd_err_clear(&e);
	s.argv = nopath;
	s.envp = env;
	is_int(pd_proc_start(&p, &s, &e), -1, "the PATH searched is the child's");
	is_str(e.msg, "could not start 'sh': No such file or directory", "not found there");
	pd_proc_release(&p);

	pd_err_clear(&e);
	s.argv = empty;
	s.envp = NULL;
	is_int(pd_proc_start(&p, &s, &e), -1, "an empty argv does not start");
	is_str(e.msg, "could not start handler: empty command", "and says so");
	pd_proc_release(&p);
	is_int(count_fds(), fds, "still no fd leaked");
}

static void test_api_shape(void)
{
	const char *argv[] = {"cat", NULL};
	struct pd_proc_spec s = {
	    .argv = argv, .input = "abc", .input_len = 3, .timeout_ms = 100000};
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc p;
	struct pollfd fds[PD_PROC_MAX_FDS];
	int nfds = count_fds(), st;
	pid_t pid;
	long long dl;

	is_int(pd_proc_start(&p, &s, &e), 0, "cat starts");
	is_int(pd_proc_pollfds(&p, fds, PD_PROC_MAX_FDS), 3, "stdin, stdout, stderr to poll");
	ok(fds[0].fd == p.in_fd && fds[0].events == POLLOUT, "stdin for POLLOUT");
	ok(fds[1].fd == p.out_fd && fds[1].events == POLLIN, "stdout for POLLIN");
	is_int(pd_proc_pollfds(&p, fds, 1), 1, "never more than max");
	dl = pd_proc_deadline(&p);
	ok(dl >= p.started_ms + 100000 && dl <= pd_now_ms() + 100000, "deadline is the timeout");
	is_int(pd_proc_reap(&p, p.pid + 1, 0), 0, "another pid is not this child");
	ok(!pd_proc_done(&p), "not done while running");
	pd_proc_kill(&p, "drain");
	dl = pd_proc_deadline(&p);
	ok(dl > pd_now_ms() && dl <= pd_now_ms() + PD_PROC_GRACE_DEFAULT_MS,
	   "after kill the deadline is the grace (default)");
	pid = p.pid;
	pd_proc_release(&p);
	ok(kill(pid, 0) < 0 && errno == ESRCH, "release killed the child");
	ok(waitpid(pid, &st, WNOHANG) < 0 && errno == ECHILD, "and reaped it");
	is_int(count_fds(), nfds, "and closed every fd");
}

/* The owner's loop, without a signalfd: waitpid(pid) after each short poll. */
static void drive(struct pd_proc *p)
{
	long long give_up = pd_now_ms() + 10000;

	while (!pd_proc_done(p) && pd_now_ms() < give_up) {
		struct pollfd fds[PD_PROC_MAX_FDS];
		int n = pd_proc_pollfds(p, fds, PD_PROC_MAX_FDS), st;

		if (poll(fds, (nfds_t)n, 20) > 0)
			pd_proc_io(p, fds, n);
		if (!p->reaped && waitpid(p->pid, &st, WNOHANG) == p->pid)
			pd_proc_reap(p, p->pid, st);
		pd_proc_tick(p, pd_now_ms());
	}
}

/*
 * With 0 and 2 closed (the worker's own fds may be), pipe2() hands them
 * out: the child must still get its pipes on 0, 1 and 2.
 */
static void test_low_fds_closed(void)
{
	const char *argv[] = {"sh", "-c", "cat; echo err >&2", NULL};
	struct pd_proc_spec s = {.argv = argv, .input = "abc", .input_len = 3};
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc_result r;
	struct pd_proc p;
	int save0 = dup(0), save2 = dup(2), rc;

	close(0);
	close(2);
	rc = pd_proc_start(&p, &s, &e);
	dup2(save0, 0);
	dup2(save2, 2);
	close(save0);
	close(save2);
	is_int(rc, 0, "starts with fds 0 and 2 closed in the parent");
	drive(&p);
	ok(pd_proc_done(&p), "and ends");
	pd_proc_result(&p, &r);
	is_int(r.exit_code, 0, "exit 0");
	is_str(pd_buf_str(&p.out), "abc", "stdin and stdout are the pipes");
	is_int(p.err_tail.len, 4, "stderr is the pipe");
	pd_proc_release(&p);
}

static void test_no_timeout_deadline(void)
{
	const char *argv[] = {"true", NULL};
	struct pd_proc_spec s = {.argv = argv};
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc p;

	is_int(pd_proc_start(&p, &s, &e), 0, "true starts");
	is_int(pd_proc_deadline(&p), -1, "no timeout: no deadline");
	is_int(pd_proc_pollfds(&p, (struct pollfd[3]){0}, 3), 2, "no input: stdin closed at once");
	pd_proc_release(&p);
}

static void test_sigchld_ignored(void)
{
	const char *argv[] = {"sh", "-c", "exit 3", NULL};
	struct pd_proc_spec s = {.argv = argv};
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc_result r;
	struct sigaction sa;
	struct pd_proc p;
	sigset_t cur;

	signal(SIGCHLD, SIG_IGN);
	is_int(pd_proc_run(&p, &s, &e), 0, "runs with SIGCHLD ignored");
	pd_proc_result(&p, &r);
	is_int(r.exit_code, 3, "and still gets the exit status");
	sigaction(SIGCHLD, NULL, &sa);
	ok(sa.sa_handler == SIG_IGN, "the SIGCHLD disposition is restored");
	sigprocmask(SIG_BLOCK, NULL, &cur);
	ok(!sigismember(&cur, SIGCHLD), "SIGCHLD is not left blocked");
	signal(SIGCHLD, SIG_DFL);
	pd_proc_release(&p);
}

static void test_many_runs_leak_nothing(void)
{
	const char *argv[] = {"sh", "-c", "cat; echo e >&2", NULL};
	struct pd_proc_spec s = {.argv = argv, .input = "x", .input_len = 1};
	int fds = count_fds(), good = 0;

	for (int i = 0; i < 50; i++) {
		struct pd_err e = PD_ERR_INIT;
		struct pd_proc_result r;
		struct pd_proc p;

		if (pd_proc_run(&p, &s, &e) == 0) {
			pd_proc_result(&p, &r);
			good += r.exit_code == 0 && strcmp(pd_buf_str(&p.out), "x") == 0;
		}
		pd_proc_release(&p);
	}
	is_int(good, 50, "50 runs, all right");
	is_int(count_fds(), fds, "no fd leaked");
	ok(no_children(), "no zombie left");
}

/* pid runs: it exists and is not a zombie. */
static int runs(pid_t pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z';
}

/*
 * PR_SET_PDEATHSIG: a middle process (the worker) starts a child and dies
 * without a word, as under kill -9; the child, left to init, dies too.
 */
static void test_dies_with_parent(void)
{
	int fds[2], i;
	pid_t mid, child = -1;

	if (pipe(fds) < 0) {
		ok(0, "pipe");
		return;
	}
	mid = fork();
	if (mid == 0) {
		const char *argv[] = {"sleep", "30", NULL};
		struct pd_proc_spec s = {.argv = argv};
		struct pd_err e = PD_ERR_INIT;
		struct pd_proc p;

		close(fds[0]);
		if (pd_proc_start(&p, &s, &e) == 0 &&
		    write(fds[1], &p.pid, sizeof(p.pid)) == (ssize_t)sizeof(p.pid))
			_exit(0); /* no pd_proc_release(): nothing kills the child */
		_exit(1);
	}
	close(fds[1]);
	if (mid < 0 || read(fds[0], &child, sizeof(child)) != (ssize_t)sizeof(child))
		child = -1;
	close(fds[0]);
	if (mid > 0)
		waitpid(mid, NULL, 0);
	ok(child > 0, "the middle process started a child");
	if (child <= 0)
		return;
	for (i = 0; i < 500 && runs(child); i++)
		usleep(10000);
	ok(!runs(child), "the child died with its parent");
	if (runs(child))
		kill(child, SIGKILL);
}

/* spec.cwd: the child starts there; a directory that is not there: not started, said. */
static void test_cwd(void)
{
	const char *pwd[] = {"/bin/sh", "-c", "pwd", NULL};
	struct pd_proc_spec s = {.argv = pwd, .cwd = "/tmp"};
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc p;

	is_int(pd_proc_run(&p, &s, &e), 0, "runs in cwd");
	is_str(pd_buf_str(&p.out), "/tmp\n", "pwd says /tmp");
	pd_proc_release(&p);
	s.cwd = "/nonexistent/dir";
	is_int(pd_proc_start(&p, &s, &e), -1, "a missing cwd: not started");
	is_str(e.msg, "could not start '/bin/sh' in '/nonexistent/dir': No such file or directory",
	       "the message names the directory");
	ok(no_children(), "the failed child was reaped");
	pd_proc_release(&p);
}

int main(void)
{
	pd_sig_ignore_pipe();
	test_cwd();
	test_clock();
	test_sig();
	test_lines();
	test_kill_from_callback();
	test_start_errors();
	test_api_shape();
	test_low_fds_closed();
	test_no_timeout_deadline();
	test_sigchld_ignored();
	test_many_runs_leak_nothing();
	test_dies_with_parent();
	return done_testing();
}
