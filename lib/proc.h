/*
 * proc: run one handler as a child process, without ever blocking.
 *
 * The child gets the payload on stdin (then EOF), its stdout is captured up
 * to a limit, its stderr is split into lines for a callback and its last
 * 4 KiB are kept. It runs in its own process group, with an empty signal
 * mask, default signal dispositions and only fds 0, 1 and 2 open (and 3
 * and 4 when the spec passes them: pass_fd, pass_fd2). A timeout
 * or pd_proc_kill() sends SIGTERM to the whole group, then SIGKILL after a
 * grace period.
 *
 * The child dies with its parent: it gets SIGKILL when the thread that
 * started it exits, however that happens (PR_SET_PDEATHSIG; a parent that
 * died before the child could ask for that gets a child that exits 127
 * before exec). That covers the child alone, not the processes it starts in
 * turn (a shell's background jobs): those are left running, and finding
 * them is lib/reap's job (by the PD_JOB_ID and PD_LEASE_TOKEN in their
 * environment). The setting is also lost when the child execs a set-user-ID
 * or set-group-ID program or one with file capabilities.
 *
 * The owner runs any number of these in one poll loop that also watches
 * its own fds (a signalfd with SIGCHLD blocked, a libpq socket):
 *
 *   pd_sig_ignore_pipe();                       (once, at startup)
 *   sfd = pd_sig_open((int[]){SIGCHLD, ...}, n, &e);
 *   pd_proc_start(&p, &spec, &e);
 *   while (!pd_proc_done(&p)) {
 *           n = pd_proc_pollfds(&p, fds, PD_PROC_MAX_FDS);
 *           (add the owner's fds; timeout = pd_proc_deadline(&p) - pd_now_ms())
 *           poll(fds, ...);
 *           pd_proc_io(&p, fds, n);
 *           on SIGCHLD: while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
 *                           pd_proc_reap(&p, pid, st);  (each proc; 0: not its child)
 *           pd_proc_tick(&p, pd_now_ms());
 *   }
 *   pd_proc_result(&p, &r);
 *   pd_proc_release(&p);
 *
 * Every pid the owner reaps must reach pd_proc_reap() before the next
 * pd_proc_* call on that process: the process group id is the child's pid,
 * and signalling it after the pid was reused would hit a stranger.
 *
 * pd_proc_run() does all of that for a caller with nothing else to watch.
 *
 * A long-lived child that takes its input piece by piece (lib/stream) sets
 * keep_stdin and on_stdout: stdin then stays open after the initial input,
 * more is queued with pd_proc_write() and sent with pd_proc_flush() (or when
 * poll(2) says the pipe has room), and end of file comes with
 * pd_proc_close_input(); stdout goes to on_stdout as it is read instead of
 * being captured.
 */
#ifndef PD_PROC_H
#define PD_PROC_H

#include <poll.h>
#include <stddef.h>
#include <sys/types.h>

#include "buf.h"

struct pd_err;

#define PD_PROC_STDOUT_LIMIT_DEFAULT (1024 * 1024) /* stdout_limit 0 means this */
#define PD_PROC_GRACE_DEFAULT_MS     5000	   /* kill_grace_ms 0 means this */
#define PD_PROC_EOF_WAIT_MS	     200	   /* after exit, how long to wait for pipe EOF */
#define PD_PROC_LINE_MAX	     4096	   /* longer stderr lines are split */
#define PD_PROC_MAX_FDS		     3		   /* most fds pd_proc_pollfds() returns */

struct pd_proc_spec {
	/*
	 * argv[0] is the program. With a '/' it is exec'd as is; without one
	 * it is looked up in the PATH of envp (else of this process) before
	 * the fork, like execvp(3). NULL-terminated.
	 */
	const char *const *argv;
	/* The child's whole environment, NULL-terminated; NULL: this process's. */
	const char *const *envp;
	/* The directory the child starts in (chdir before the exec; failing,
	   it does not start: start_errno is chdir's); NULL: ours. */
	const char *cwd;
	/* Written to stdin (copied at start), then stdin is closed. */
	const char *input;
	size_t input_len;
	/* stdout bytes kept; more is read and thrown away, and truncated set. */
	size_t stdout_limit;
	/* From start to SIGTERM, in ms; 0: no timeout. */
	long long timeout_ms;
	/* From SIGTERM to SIGKILL, in ms; 0: PD_PROC_GRACE_DEFAULT_MS. */
	long long kill_grace_ms;
	/*
	 * Called with each stderr line, without its '\n' (line[n] is '\0',
	 * but the line may hold other NULs). A line longer than
	 * PD_PROC_LINE_MAX comes in pieces of that size; a last line without
	 * '\n' comes at EOF. May be NULL. It may call pd_proc_kill().
	 */
	void (*on_stderr_line)(void *ctx, const char *line, size_t n);
	/*
	 * Stdin stays open once input is written: more comes with
	 * pd_proc_write(), end of file with pd_proc_close_input().
	 */
	int keep_stdin;
	/*
	 * Called with stdout's bytes as they are read (in pieces of any size),
	 * instead of capturing them; stdout_limit is then unused. May be NULL.
	 * It may call pd_proc_kill().
	 */
	void (*on_stdout)(void *ctx, const char *data, size_t n);
	void *ctx;
	/*
	 * > 2: a descriptor the child gets as PD_PROC_PASS_FD (lib/pool's
	 * channel to its owner), whatever its close-on-exec flag; 0: none.
	 * The caller closes its copy after the start.
	 */
	int pass_fd;
	/*
	 * > 2: a descriptor the child gets as PD_PROC_PASS_FD2 (lib/pool's
	 * progress pipe), the same way; 0: none.
	 */
	int pass_fd2;
};

#define PD_PROC_PASS_FD	 3
#define PD_PROC_PASS_FD2 4

/*
 * One child. The fields are for reading; only the functions below change
 * them. Valid from pd_proc_start() (whether it succeeds or not) to
 * pd_proc_release().
 */
struct pd_proc {
	pid_t pid;  /* also the process group id; -1 when not started */
	int in_fd;  /* parent ends of the pipes, -1 once closed */
	int out_fd; /* all O_CLOEXEC | O_NONBLOCK */
	int err_fd;

	struct pd_buf input; /* what is left to write is input.data + input_off */
	size_t input_off;
	int keep_stdin; /* stdin stays open when input runs out */
	int input_eof;	/* keep_stdin: close stdin once input is written */

	struct pd_buf out; /* captured stdout, at most out_limit bytes */
	size_t out_limit;
	int truncated; /* stdout went past out_limit */

	struct pd_tail err_tail; /* the last 4 KiB of stderr */
	struct pd_buf err_line;	 /* the stderr line being assembled */
	void (*on_stderr_line)(void *ctx, const char *line, size_t n);
	void (*on_stdout)(void *ctx, const char *data, size_t n);
	void *ctx;

	long long started_ms; /* pd_now_ms() at start */
	long long timeout_at; /* monotonic ms, -1: none */
	long long grace_ms;
	long long kill_at; /* SIGKILL due, once SIGTERM was sent */
	long long eof_at;  /* after exit: stop waiting for EOF, -1: not yet */
	int term_sent;
	int kill_sent;
	int timed_out;
	const char *killed_reason; /* NULL unless we signalled it */

	int reaped;
	int status_lost; /* reaped by someone else: status unknown */
	int wstatus;
	int orphans_killed; /* pipes still open after exit: the group was SIGKILLed */
	int start_errno;    /* why pd_proc_start() failed (ENOENT...), 0 if it did not */
};

struct pd_proc_result {
	int exit_code;		   /* -1 if signalled (or status unknown) */
	int signal;		   /* 0 if exited */
	int timed_out;		   /* the timeout fired (killed_reason "timeout") */
	const char *killed_reason; /* NULL if not signalled by us */
};

/*
 * Start the child described by s. Returns 0, or -1 with e filled ("could
 * not start 'PROG': No such file or directory", code PD_EX_SOFTWARE), the
 * errno in p->start_errno (the exec's own when the program could not be
 * run) and nothing left running. Either way p is initialised: call
 * pd_proc_release() when done with it. SIGCHLD must not be ignored
 * (SIG_IGN or SA_NOCLDWAIT), or the status is lost.
 */
int pd_proc_start(struct pd_proc *p, const struct pd_proc_spec *s, struct pd_err *e);

/*
 * keep_stdin: queue n bytes for stdin (copied). Nothing is written yet:
 * pd_proc_flush() or pd_proc_io() writes. Dropped once stdin is closed (the
 * child went away, or pd_proc_close_input()).
 */
void pd_proc_write(struct pd_proc *p, const char *data, size_t n);

/* Write what is queued for stdin now, as far as the pipe takes it without blocking. */
void pd_proc_flush(struct pd_proc *p);

/* keep_stdin: close stdin once what is queued is written (at once if nothing is). */
void pd_proc_close_input(struct pd_proc *p);

/*
 * Fill up to max entries of fds with the descriptors to poll now (stdin
 * for POLLOUT while input is left, stdout and stderr for POLLIN until EOF)
 * and return how many.
 */
int pd_proc_pollfds(const struct pd_proc *p, struct pollfd *fds, int max);

/*
 * Do the I/O that poll(2) reported. fds may hold other descriptors too
 * (the owner's whole array): only this process's are acted on. Never
 * blocks. A child that stops reading stdin is no error (EPIPE: the rest of
 * the input is dropped); the caller must ignore SIGPIPE.
 */
void pd_proc_io(struct pd_proc *p, const struct pollfd *fds, int n);

/* The monotonic ms at which pd_proc_tick() must run next, or -1 for none. */
long long pd_proc_deadline(const struct pd_proc *p);

/*
 * Act on deadlines that have passed: the timeout sends SIGTERM (and
 * SIGCONT) to the group, the grace period SIGKILL; after the child exited,
 * pipes still open past PD_PROC_EOF_WAIT_MS are drained, closed, and the
 * group is SIGKILLed (its leftovers were holding them).
 */
void pd_proc_tick(struct pd_proc *p, long long now_ms);

/*
 * Terminate the group now, with the same SIGTERM-then-SIGKILL escalation,
 * recording reason (a string that lives as long as p: "lease_lost",
 * "drain"). No-op once the child was reaped or already signalled.
 */
void pd_proc_kill(struct pd_proc *p, const char *reason);

/*
 * Tell p that pid was reaped with wstatus (from the owner's waitpid).
 * Returns 1 if pid was this child, 0 otherwise.
 */
int pd_proc_reap(struct pd_proc *p, pid_t pid, int wstatus);

/* 1 once the child was reaped and its stdout and stderr are closed. */
int pd_proc_done(const struct pd_proc *p);

/* How it ended; meaningful once pd_proc_done(). */
void pd_proc_result(const struct pd_proc *p, struct pd_proc_result *r);

/*
 * Free everything. A child still running is SIGKILLed with its group and
 * reaped (waitpid, which can block only as long as SIGKILL takes).
 */
void pd_proc_release(struct pd_proc *p);

/*
 * Whether prog could be exec'd now, found the way pd_proc_start() finds it
 * (a '/' in it: as is; else along the PATH of envp, else of this process):
 * 0, or -1 with *err set (ENOENT, EACCES: not a regular file or not
 * executable). An exec can still fail later (ENOEXEC, a missing
 * interpreter): pd_proc_start() reports that.
 */
int pd_proc_check(const char *prog, const char *const *envp, int *err);

/*
 * Start s and run it to the end: pd_proc_start() plus the loop above, with
 * its own signalfd for SIGCHLD (blocked for the duration, then the mask and
 * the SIGCHLD disposition are restored). It waits for this child only, so
 * the caller should have no other children to reap meanwhile. Returns 0
 * when the child ran (whatever it did: see pd_proc_result()), -1 with e
 * filled when it could not be started. Call pd_proc_release() after.
 */
int pd_proc_run(struct pd_proc *p, const struct pd_proc_spec *s, struct pd_err *e);

#endif
