/*
 * stream: one long-lived handler process that serves many jobs at once, a
 * line of JSON per job each way (pd-worker(1), "Stream handlers").
 *
 * The owner sends a job as one line on the process's stdin (pd_stream_send,
 * which starts the process first when there is none); the process answers
 * each job with one line on its stdout, in any order:
 *
 *   {"id": 42, "result": ...}                         succeeded (result optional)
 *   {"id": 42, "error": "text", "terminal": false}    failed: retried
 *   {"id": 42, "error": "text", "terminal": true}     failed: dead-lettered
 *   {"id": 42, "progress": "40% (400/1000)"}           not an answer: its progress note
 *
 * Every job sent comes back exactly once as an outcome (pd_stream_take): the
 * owner's tag for it and a struct pd_pool_exit classified like a process's
 * exit (lib/pool), so that the owner records both kinds the same way.
 * Whatever happens to the process, the jobs in flight in it get an outcome,
 * though not always from this process (blame, below).
 *
 * The process's life:
 *
 *   IDLE --send--> READY               (could not start: BACKOFF, the job NOT_STARTED)
 *   READY --a job past its timeout--> STOPPING: that job TIMEOUT, the others re-sent
 *   READY --a bad line-------------> STOPPING: blamed
 *   READY --exit, or stdout closed--> BACKOFF: blamed
 *   READY --pd_stream_stop(why)----> STOPPING: every job classified by why
 *   READY, none in flight --pd_stream_close--> CLOSING (stdin closed)
 *   CLOSING --exit--> IDLE; CLOSING --grace passed--> STOPPING
 *   STOPPING --exit--> BACKOFF after a failure, IDLE after pd_stream_stop
 *   BACKOFF --restart_at passed--> IDLE
 *   IDLE, jobs to re-send --tick--> READY, and they are written (could not
 *                                   start: BACKOFF, they are DRAINED)
 *
 * Blame (DESIGN.md "Stream mode": a process that dies charges an attempt
 * only to the job that caused it). When the process dies or misbehaves (a
 * bad line, stdout closed) with one job written to it, that job FAILED
 * (retryable, "... while running this job"). With more, none is charged:
 * they stay in flight, unwritten, as suspects; the next process gets them
 * one at a time, nothing else written to it while one is (so its death has
 * one job to blame), and new jobs only once every suspect has been answered
 * or charged alone. Jobs written with one that timed out are re-sent to the
 * next process, all at once (not suspects: the culprit is known). A process
 * that ends with nothing written to it charges nobody. Jobs waiting to be
 * re-sent keep their timeouts: each starts when the job is written again.
 *
 * Cancel (pd_stream_cancel, an operator's, sql/022): the process gets the
 * line {"cancel": ID} on its stdin; the job ends CANCELLED whatever it
 * answers (its answer is its acknowledgement), or, with no answer within
 * the grace period, CANCELLED then, the process left running and its
 * answer, if it comes later, dropped (the job stays in flight as a ghost
 * until then: no second outcome; a job with its id is not taken meanwhile).
 *
 * A bad line is one that is not a JSON object, has no integer "id", or
 * names a job not in flight (a blank line is skipped). STOPPING means
 * SIGTERM to the process group, then SIGKILL after the grace period
 * (lib/proc); the process dies with the owner too (PR_SET_PDEATHSIG). The
 * restart waits a full-jitter backoff (lib/retry) on the failures in a row;
 * a job answered resets the count (so a process that dies on every suspect
 * is restarted ever more slowly, up to PD_STREAM_BACKOFF_CAP_MS). A job whose lease the owner lost
 * (pd_stream_abandon) stays in flight until its answer comes and is then
 * reported as PD_EXIT_LEASE_LOST, answer dropped.
 *
 * Stderr lines are logged as they come. A line that starts with "job=ID"
 * and a space, for a job in flight, is logged with that job's prefix
 * ("job=42 attempt=1") and kept as its stderr tail (the last 4 KiB); other
 * lines are logged with the stream's name and pid. Jobs failed because the
 * process ended or misbehaved get the process's last 4 KiB of stderr.
 */
#ifndef PD_STREAM_H
#define PD_STREAM_H

#include <poll.h>
#include <stddef.h>

#include "buf.h"
#include "handler.h"
#include "pool.h"
#include "proc.h"
#include "retry.h"

#define PD_STREAM_BACKOFF_BASE_MS 100  /* restart backoff after the first failure */
#define PD_STREAM_BACKOFF_CAP_MS  5000 /* and at most */

enum pd_stream_state {
	PD_STREAM_IDLE,	    /* no process; the next pd_stream_send starts one */
	PD_STREAM_READY,    /* running: takes jobs, answers them */
	PD_STREAM_CLOSING,  /* stdin closed, nothing in flight: waiting for it to exit */
	PD_STREAM_STOPPING, /* terminated, nothing in flight: waiting for it to exit */
	PD_STREAM_BACKOFF,  /* ended badly: no process until restart_at */
};

/* What a stream runs, and how. Pointers are the owner's, alive as long as the stream. */
struct pd_stream_cfg {
	const char *name;	    /* for log lines: the job type it serves ("*" too) */
	const struct pd_handler *h; /* run (sh -c) or exec_argv */
	char *const *envp;	    /* the process's environment; NULL: this process's */
	size_t result_limit;	    /* bytes of a result kept; 0: PD_PROC_STDOUT_LIMIT_DEFAULT */
	long long grace_ms;	    /* SIGTERM to SIGKILL; 0: PD_PROC_GRACE_DEFAULT_MS */
	struct pd_rng *rng;	    /* the restart backoff's jitter */
	int chan; /* give the process a channel (lib/pool: PD_WORKER_FD, set in envp) */
};

/* A job in flight: sent, not answered yet (written to the process, or waiting to be re-sent). */
struct pd_stream_job {
	long long id;
	int tag;	      /* the owner's */
	int abandoned;	      /* pd_stream_abandon: the answer will be dropped */
	int cancelled;	      /* pd_stream_cancel: its cancel line written; ends CANCELLED */
	int ghost;	      /* cancelled, its outcome given: its answer, if it comes, dropped */
	int written;	      /* written to the current process; 0: waiting to be re-sent */
	int suspect;	      /* in flight when a process died with others: isolated */
	struct pd_buf line;   /* its line, kept to be re-sent */
	long long sent_us;    /* pd_now_us() when last written */
	long long deadline;   /* monotonic ms, -1: no timeout (or not written) */
	long long timeout_ms; /* for the error text */
	struct pd_buf tail;   /* stderr lines naming it, the last 4 KiB */
	char prefix[64];      /* "job=42 attempt=1" */
	/* its latest progress note, moved to its outcome */
	struct pd_progress progress;
};

/* An outcome the owner has not taken yet. */
struct pd_stream_done {
	int tag;
	struct pd_pool_exit exit;
};

struct pd_stream {
	struct pd_stream_cfg cfg;
	enum pd_stream_state state;
	struct pd_proc proc;	    /* valid in READY, CLOSING, STOPPING */
	int stopped;		    /* STOPPING by pd_stream_stop: IDLE after, not BACKOFF */
	int failures;		    /* abnormal ends in a row */
	long long restart_at;	    /* BACKOFF: monotonic ms */
	long long close_at;	    /* CLOSING: terminate if not gone by then */
	long long eof_at;	    /* READY with stdout closed: give up on it then; -1 */
	struct pd_buf line;	    /* stdout not yet split into lines */
	size_t line_max;	    /* a longer line is a bad line */
	struct pd_stream_job *jobs; /* in flight, in no order */
	int njobs, capjobs;
	struct pd_stream_done *done; /* outcomes, oldest first */
	int ndone, capdone, done_off;
	struct pd_chan chan; /* the process's channel (cfg.chan), one request at a time */
};

/* The fields of an answer line (pd_stream_parse). Spans point into the line. */
struct pd_stream_answer {
	long long id;
	int failed;	    /* "error" present and not null */
	int terminal;	    /* "terminal": true */
	const char *result; /* the raw JSON text of "result", or NULL (absent or null) */
	size_t result_len;
	char *error; /* failed: malloc'd text (a string unescaped, else its JSON) */
	/* a progress line (no "result", "error" or "snooze"): malloc'd; else NULL */
	char *progress;
	int snooze; /* "snooze" present and not null: put off snooze_ms, or failed
		       with error naming the bad duration */
	long long snooze_ms;
};

/*
 * Parse one answer line (n bytes, without its '\n'). Returns 1 with *a
 * filled (free a->error and a->progress), 0 for a blank line, -1 for a bad
 * line with e filled (PD_EX_DATAERR): not JSON, not an object, no integer
 * "id". A "snooze" (a duration as pd_snooze_duration takes it, or a number
 * of seconds) wins over "error" and "result"; a bad one makes the answer a
 * retryable failure whose error names it. The line is read as
 * pd_json_parse_lax reads it: a result that jsonb cannot store fails its
 * own job (the worker judges it), not the line.
 */
int pd_stream_parse(const char *line, size_t n, struct pd_stream_answer *a, struct pd_err *e);

/* The process's request on its channel waiting for an answer, or NULL (lib/pool). */
const char *pd_stream_request(const struct pd_stream *s);
/* Answer it with line. */
void pd_stream_answer(struct pd_stream *s, const char *line);

/* The progress of the job in flight with tag, or NULL when none is. */
struct pd_progress *pd_stream_progress(struct pd_stream *s, int tag);

/* IDLE, no process yet. c is copied. */
void pd_stream_init(struct pd_stream *s, const struct pd_stream_cfg *c);

/*
 * Kill and reap the process if there is one, free everything. Jobs still in
 * flight and outcomes not taken are dropped: the owner's leases on them
 * expire.
 */
void pd_stream_release(struct pd_stream *s);

/*
 * 1 if a job with this id can be sent now: the stream is IDLE or READY, no
 * job with the same id is in flight (one abandoned, say), and no job waits
 * to be re-sent or is a suspect.
 */
int pd_stream_can_take(const struct pd_stream *s, long long id);

/*
 * Send job id (tag: the owner's, for pd_stream_take; prefix: "job=42
 * attempt=1", for log lines) as line, one JSON object of n bytes without a
 * newline; its timeout (0: none) starts now. Starts the process when IDLE.
 * Only when pd_stream_can_take. The line is queued: pd_stream_flush writes
 * it. Returns 0, or -1 when the process could not start: the job's outcome
 * is then PD_EXIT_NOT_STARTED, and the stream is in BACKOFF.
 */
int pd_stream_send(struct pd_stream *s, long long id, int tag, const char *prefix,
		   long long timeout_ms, const char *line, size_t n);

/* Write the lines queued, as far as the pipe takes them without blocking. */
void pd_stream_flush(struct pd_stream *s);

/* Jobs in flight, abandoned ones and ones waiting to be re-sent included, ghosts not. */
int pd_stream_inflight(const struct pd_stream *s);

/* 1 while there is a process (READY, CLOSING, STOPPING). */
int pd_stream_live(const struct pd_stream *s);

/*
 * The lease of the job with tag is lost: its answer, when it comes, is
 * dropped; if it waits to be re-sent, it is over now (PD_EXIT_LEASE_LOST).
 */
void pd_stream_abandon(struct pd_stream *s, int tag);

/*
 * An operator cancelled the job with tag: if it waits to be re-sent, it is
 * over now (PD_EXIT_CANCELLED); else {"cancel": ID} goes to the process
 * and the job ends PD_EXIT_CANCELLED at its answer, or at the latest after
 * the grace period (see above).
 */
void pd_stream_cancel(struct pd_stream *s, int tag);

/*
 * The jobs waiting to be re-sent (suspects and others) are over now with
 * PD_EXIT_DRAINED: released, the attempt refunded (a drain). The jobs
 * written to the process stay in flight.
 */
void pd_stream_give_back(struct pd_stream *s);

/*
 * READY with nothing in flight: close stdin (CLOSING), so that the process
 * exits; terminated if it has not after the grace period. Otherwise no-op.
 */
void pd_stream_close(struct pd_stream *s);

/*
 * Give every job in flight (waiting ones too) its outcome for why
 * (PD_STOP_DRAIN: PD_EXIT_DRAINED) and terminate the process if there is one
 * (STOPPING); IDLE once it has exited.
 */
void pd_stream_stop(struct pd_stream *s, enum pd_stop_reason why);

/*
 * The job a line of a stream handler's stderr names: "job=ID" then a space
 * or the end of the line, ID at most LLONG_MAX. Returns 1 with *id, and
 * *skip the bytes of that prefix (its space included), else 0.
 */
int pd_stream_stderr_job(const char *line, size_t n, long long *id, size_t *skip);

/* Poll and I/O, as for lib/pool. */
int pd_stream_pollfds(const struct pd_stream *s, struct pollfd *fds, int max);
void pd_stream_io(struct pd_stream *s, const struct pollfd *fds, int n);

/*
 * Read the answers the process has written so far, without waiting (one
 * read, as if poll(2) said stdout was readable).
 */
void pd_stream_read(struct pd_stream *s);

/* A pid the owner reaped (waitpid): 1 if it was this stream's process. */
int pd_stream_reap(struct pd_stream *s, pid_t pid, int wstatus);

/* The monotonic ms at which pd_stream_tick must run next, -1 for none. */
long long pd_stream_deadline(const struct pd_stream *s);

/* Act on deadlines (timeouts, kill escalation, restart) and on the process's end. */
void pd_stream_tick(struct pd_stream *s, long long now_ms);

/*
 * Take the oldest outcome: 1 with *tag and *out set (the caller's:
 * pd_pool_exit_release), 0 when there is none.
 */
int pd_stream_take(struct pd_stream *s, int *tag, struct pd_pool_exit *out);

/* Outcomes waiting to be taken. */
int pd_stream_outcomes(const struct pd_stream *s);

#endif
