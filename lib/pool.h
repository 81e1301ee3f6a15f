/*
 * pool: the child slots pd-worker and pd-relay run their handlers in.
 *
 * A pool has a fixed number of slots. The owner takes a free slot, starts a
 * handler in it with its input (the payload, written to stdin, then EOF),
 * and drives the pool from its event loop: pd_pool_pollfds/pd_pool_io for
 * the pipes, pd_pool_reap on SIGCHLD, pd_pool_tick at pd_pool_deadline.
 * When the child has exited and its pipes are drained, the slot is DONE and
 * holds the classified exit (struct pd_pool_exit); the owner records it and
 * frees the slot with pd_pool_clear.
 *
 * A slot's life:
 *
 *   FREE --start--> RUNNING --exit, pipes closed--> DONE --clear--> FREE
 *   FREE --start fails--------------------------->  DONE (PD_EXIT_NOT_STARTED)
 *   RUNNING --timeout, pd_pool_stop--> STOPPING --exit--> DONE
 *
 * STOPPING means SIGTERM went to the child's process group, with SIGKILL
 * after the grace period. The reason (timeout, drain, lease lost, cancel)
 * decides the class: a stop for a lost lease gives PD_EXIT_LEASE_LOST,
 * whatever the child's status, so its outcome is never written; a stop for
 * a cancel PD_EXIT_CANCELLED (verdict CANCEL), whatever the status too. A
 * child STOPPING for a cancel whose lease is lost meanwhile is stopped for
 * the lost lease from then on.
 *
 * Stderr lines are logged as they come (message stderr_msg, prefixed with the
 * slot's prefix); the last 4 KiB and the last line are kept for the outcome.
 *
 * The channel (a pool with chan set): each child also gets one end of a
 * socket pair (AF_UNIX, SOCK_STREAM) as fd PD_PROC_PASS_FD, named in its
 * environment as PD_WORKER_FD=3, for requests to the owner, one line
 * each ("lease JOBID TOKEN\n"), answered with one line ("held\n",
 * "cancelled\n", "lost\n": lib/worker). The pool
 * reads one request at a time (pd_pool_request) and reads no more until
 * the owner answers it (pd_pool_answer): one request in flight per child.
 * A line longer than PD_CHAN_REQUEST_MAX is answered "error request too
 * long" and the channel closed. The worker side is close-on-exec: no other
 * child inherits it.
 *
 * The progress pipe (a pool with progress set): each child also gets the
 * write end of a pipe as fd PD_PROC_PASS_FD2, named in its environment as
 * PD_PROGRESS_FD=4; every line it writes there is a progress note, of which
 * the slot keeps the latest (struct pd_progress), moved to the exit at the
 * end. The pool reads it as poll(2) says, a bounded amount per pass, so a
 * child that floods it costs reads, never a block.
 */
#ifndef PD_POOL_H
#define PD_POOL_H

#include <poll.h>
#include <stddef.h>

#include "buf.h"
#include "handler.h"
#include "proc.h"
#include "verdict.h"

enum pd_slot_state {
	PD_SLOT_FREE,
	PD_SLOT_RUNNING,
	PD_SLOT_STOPPING,
	PD_SLOT_DONE,
};

/* Why a pool stopped a child before it ended by itself. */
enum pd_stop_reason {
	PD_STOP_NONE,
	PD_STOP_TIMEOUT,    /* ran past its timeout */
	PD_STOP_DRAIN,	    /* the daemon is shutting down: give the work back */
	PD_STOP_LEASE_LOST, /* another holder owns the work now: write nothing */
	PD_STOP_CANCEL,	    /* an operator cancelled the job: CANCELLED, whatever the status */
};

/* How a handler ended (DESIGN.md, the handler contract). */
enum pd_exit_class {
	PD_EXIT_OK,	     /* exit 0 */
	PD_EXIT_FAILED,	     /* another exit code, or a signal we did not send: retryable */
	PD_EXIT_TERMINAL,    /* 64, 65, or one of the handler's terminal codes */
	PD_EXIT_TIMEOUT,     /* stopped at its timeout: retryable */
	PD_EXIT_NOT_STARTED, /* could not be started for want of a resource: retryable */
	PD_EXIT_CANNOT_RUN,  /* the program is missing, not executable or not a valid
				executable (or a shell command's sh says so: exit 127, 126):
				terminal, outcome could_not_start too */
	PD_EXIT_DRAINED,     /* stopped by a drain: released, the attempt refunded */
	PD_EXIT_LEASE_LOST,  /* stopped because its lease was lost: nothing is written */
	PD_EXIT_SNOOZED,     /* exit 75 with a snooze line, or a stream snooze: put off,
				the attempt refunded (pd_exit_snooze) */
	PD_EXIT_CANCELLED,   /* stopped because an operator cancelled it: CANCELLED */
};

struct pd_pool_exit;

#define PD_PROGRESS_MAX 200 /* bytes of a progress note kept */

/*
 * A job's latest progress note: at most PD_PROGRESS_MAX bytes of the line
 * (the rest dropped), valid UTF-8, control characters replaced by spaces;
 * empty lines do not count. dirty: a note came since the owner last took
 * it for storing (its to clear).
 */
struct pd_progress {
	struct pd_buf line; /* the latest; empty: none yet */
	struct pd_buf part; /* the line being read (at most PD_PROGRESS_MAX bytes) */
	int dirty;
};

/* Bytes read from a pipe (a piece of any size): each whole line a note. */
void pd_progress_feed(struct pd_progress *p, const char *data, size_t n);
/* The pipe's end: a last line without its newline is a note too. */
void pd_progress_eof(struct pd_progress *p);
/* One note of n bytes (a stream handler's). */
void pd_progress_set(struct pd_progress *p, const char *note, size_t n);
void pd_progress_release(struct pd_progress *p);

/*
 * The class of a child that ran: r is its result, why the pool stopped it.
 * A shell command (h->run) that exits 127 or 126 is PD_EXIT_CANNOT_RUN: that
 * is how sh(1) says a command was not found or could not be executed.
 */
enum pd_exit_class pd_exit_classify(const struct pd_proc_result *r, enum pd_stop_reason why,
				    const struct pd_handler *h);

/*
 * A child that could not be started, prog with errno err (pd_proc's
 * start_errno), msg the start error: into x's class and error. A program
 * that cannot run (ENOENT, EACCES, ENOEXEC, ENOTDIR, ELOOP, ENAMETOOLONG)
 * gives PD_EXIT_CANNOT_RUN and "cannot run PROG: No such file or
 * directory"; anything else (EAGAIN, ENOMEM, EMFILE, ENFILE...)
 * PD_EXIT_NOT_STARTED and msg.
 */
void pd_exit_not_started(struct pd_pool_exit *x, const char *prog, int err, const char *msg);

/* "succeeded", "failed", "terminal", "timeout", ... (job_attempts.outcome). */
const char *pd_exit_class_name(enum pd_exit_class c);

/*
 * What becomes of the work after an exit of class c. A lost lease gives
 * RELEASE: a worker writes nothing for it (the lease's new holder decides),
 * a relay gives its claim back. A cancel gives CANCEL.
 */
enum pd_verdict pd_exit_verdict(enum pd_exit_class c);

struct pd_pool_exit {
	enum pd_exit_class cls;
	long long snooze_ms;  /* PD_EXIT_SNOOZED: how long */
	int exit_code;	      /* -1: none (signalled, not started) */
	int signal;	      /* 0: none */
	long long ran_ms;     /* from start to exit */
	long long ran_us;     /* the same in microseconds */
	long long started_us; /* pd_now_us() at start */
	struct pd_buf out;    /* stdout, at most the pool's stdout_limit bytes */
	int out_truncated;    /* stdout went past the limit */
	struct pd_buf error;  /* one line: "exit 3", "timeout after 2s", "could not start ..." */
	struct pd_buf tail;   /* the last 4 KiB of stderr, valid UTF-8 */
	struct pd_buf
	    last_line; /* the last non-empty stderr line, valid UTF-8, at most 400 bytes */
	struct pd_progress progress; /* the last progress note */
};

/* The longest snooze: a year. */
#define PD_SNOOZE_MAX_MS (365LL * 86400000LL)

/*
 * A snooze's duration, text s as lib/dur parses it, at most
 * PD_SNOOZE_MAX_MS, into *ms: 0, or -1 with e filled (PD_EX_DATAERR).
 */
int pd_snooze_duration(const char *s, long long *ms, struct pd_err *e);

/*
 * The snooze line among a handler's stdout (n bytes): its last non-empty
 * line, when that is `snooze DURATION` or a JSON object with a "snooze"
 * member (a string DURATION, or a number of seconds). 1 with *ms set; 0
 * when the last line is no snooze line; -1 when it is one whose duration
 * is missing or bad, with e (PD_EX_DATAERR): "bad snooze line 'snooze
 * 3x': invalid duration '3x': …".
 */
int pd_snooze_line(const char *out, size_t n, long long *ms, struct pd_err *e);

/*
 * Judge a process handler's exit x for a snooze: exit 75 (EX_TEMPFAIL,
 * PD_EXIT_FAILED) whose stdout, not truncated, ends with a snooze line
 * becomes PD_EXIT_SNOOZED with snooze_ms; with a bad snooze line it stays
 * a failure whose error names the line. Any other exit is left as it is.
 */
void pd_exit_snooze(struct pd_pool_exit *x);

#define PD_CHAN_REQUEST_MAX 256 /* the longest request line */

/*
 * A channel to one child (above), also lib/stream's: the owner's end and
 * the request being read. fd -1: none (pd_chan_init).
 */
struct pd_chan {
	int fd;		  /* non-blocking, close-on-exec */
	struct pd_buf in; /* the request being assembled */
	int ready;	  /* in holds a whole request, not yet answered */
};

void pd_chan_init(struct pd_chan *c);
/*
 * A new channel (c closed first): *child the child's end, for
 * pd_proc_spec.pass_fd (close it once the child started). 0, or -1 (errno).
 */
int pd_chan_open(struct pd_chan *c, int *child);
/* Close it and free its buffer; c stays usable (fd -1). */
void pd_chan_close(struct pd_chan *c);
/* Its descriptor to poll now (none while a request waits for its answer): 0 or 1 entries. */
int pd_chan_pollfd(const struct pd_chan *c, struct pollfd *fds, int max);
/* Read what poll(2) reported for it in fds[0..n), up to one whole request. */
void pd_chan_io(struct pd_chan *c, const struct pollfd *fds, int n);
/* The request (without its newline) waiting for an answer, or NULL. */
const char *pd_chan_request(const struct pd_chan *c);
/* Answer it with line (a newline is added); the next request is read. */
void pd_chan_answer(struct pd_chan *c, const char *line);

struct pd_pool_slot {
	enum pd_slot_state state;
	enum pd_stop_reason stop;
	const struct pd_handler *h;
	struct pd_proc proc;
	char **envp; /* owned: freed by pd_pool_clear */
	char prefix[400];
	const char *stderr_msg; /* the pool's */
	long long timeout_ms;
	long long started_us;	  /* pd_now_us() at start */
	struct pd_pool_exit exit; /* valid in DONE */
	struct pd_chan chan;	  /* its channel, when the pool has them */
	/* its progress pipe's read end (non-blocking), -1: none; and the latest note */
	int progress_fd;
	struct pd_progress progress;
};

/* Descriptors one slot may poll: its child's pipes, its channel and its progress pipe. */
#define PD_POOL_SLOT_FDS (PD_PROC_MAX_FDS + 2)

struct pd_pool {
	struct pd_pool_slot *slots;
	int size;
	size_t stdout_limit;	/* 0: PD_PROC_STDOUT_LIMIT_DEFAULT */
	long long grace_ms;	/* SIGTERM to SIGKILL; 0: PD_PROC_GRACE_DEFAULT_MS */
	const char *stderr_msg; /* the log message for a stderr line */
	int chan;		/* give each child a channel (above) */
	int progress;		/* give each child a progress pipe (above) */
	/*
	 * The owner's other children (lib/stream), which pd_pool_reap's
	 * waitpid(-1) collects too: each pid not the pool's is offered here
	 * with its status; 1 if it was the owner's. NULL: none.
	 */
	int (*adopt)(void *ctx, pid_t pid, int wstatus);
	void *adopt_ctx;
};

/* What to start in a slot. */
struct pd_pool_job {
	const struct pd_handler *h; /* run or exec_argv */
	char **envp;		    /* the child's environment; the slot takes ownership */
	const char *input;	    /* copied */
	size_t input_len;
	long long timeout_ms; /* 0: none */
	const char *prefix;   /* for log lines: "job=12 attempt=1" */
};

void pd_pool_init(struct pd_pool *p, int size, size_t stdout_limit, long long grace_ms,
		  const char *stderr_msg);
/* Kill and reap whatever still runs, free everything. */
void pd_pool_release(struct pd_pool *p);

/* The index of a FREE slot, or -1 when none is. */
int pd_pool_free_slot(const struct pd_pool *p);
/* How many slots are in state s. */
int pd_pool_count(const struct pd_pool *p, enum pd_slot_state s);
/* Slots not FREE. */
int pd_pool_busy(const struct pd_pool *p);

/*
 * Start j in slot i (FREE). Returns 0 (RUNNING), or -1 when it could not
 * start: the slot is then DONE with PD_EXIT_NOT_STARTED and the reason in
 * exit.error. Either way the slot owns j->envp.
 */
int pd_pool_start(struct pd_pool *p, int i, const struct pd_pool_job *j);

/* Slot i's request (without its newline) waiting for an answer, or NULL. */
const char *pd_pool_request(const struct pd_pool *p, int i);
/* How many slots have a request waiting for an answer. */
int pd_pool_requests(const struct pd_pool *p);
/* Answer slot i's request with line (a newline is added); the next request is read. */
void pd_pool_answer(struct pd_pool *p, int i, const char *line);

/* The pipes (and channels) to poll now; at most max entries. */
int pd_pool_pollfds(const struct pd_pool *p, struct pollfd *fds, int max);
void pd_pool_io(struct pd_pool *p, const struct pollfd *fds, int n);

/*
 * Collect every exited child (waitpid, WNOHANG); for SIGCHLD. Pids not the
 * pool's go to adopt; unknown ones are logged.
 */
void pd_pool_reap(struct pd_pool *p);

/* The monotonic ms at which pd_pool_tick must run next, -1 for none. */
long long pd_pool_deadline(const struct pd_pool *p);

/*
 * Act on deadlines (timeouts, kill escalation, pipes left open after exit)
 * and move each child that is finished to DONE. Returns how many became DONE.
 */
int pd_pool_tick(struct pd_pool *p, long long now_ms);

/*
 * Stop slot i's child (RUNNING -> STOPPING) for why; STOPPING for a cancel,
 * PD_STOP_LEASE_LOST takes the stop's place (no signal sent again); no-op
 * otherwise.
 */
void pd_pool_stop(struct pd_pool *p, int i, enum pd_stop_reason why);
/* Stop every RUNNING slot. */
void pd_pool_stop_all(struct pd_pool *p, enum pd_stop_reason why);

/* DONE -> FREE: the owner has taken the exit. */
void pd_pool_clear(struct pd_pool *p, int i);
/* DONE -> FREE, the exit moved to out (the caller's: pd_pool_exit_release). */
void pd_pool_take(struct pd_pool *p, int i, struct pd_pool_exit *out);
void pd_pool_exit_release(struct pd_pool_exit *x);

#endif
