/*
 * handler: the command that serves a name — a job type for pd-worker, an
 * outbox topic for pd-relay — and the one lookup both use: an exact match,
 * else the first "*", else none.
 */
#ifndef PD_HANDLER_H
#define PD_HANDLER_H

#define PD_HANDLER_MAX_CODES 32

/*
 * Hooks (pendulum.yaml(5) hooks:): a command run, as a job of the reserved
 * type PD_HOOK_TYPE, on an event of a job's outcome. The hook job's payload
 * is the job's JSON with "event" (pd_hook_event_name) added; its command is
 * looked up by event and the original job's type (pd_hook_find).
 */
#define PD_HOOK_TYPE "pd:hook"

enum pd_hook_event {
	PD_HOOK_DEAD_LETTER, /* on_dead_letter: the job became DEAD_LETTERED */
	PD_HOOK_FAILURE,     /* on_failure: an attempt failed (retried or dead-lettered) */
	PD_HOOK_SUCCESS,     /* on_success: the job SUCCEEDED */
	PD_HOOK_NEVENTS
};

struct pd_handler;

/* The hook commands of a handler or of the whole config: on[ev], NULL: none. */
struct pd_hooks {
	struct pd_handler *on[PD_HOOK_NEVENTS];
};

/* How a worker runs a handler's jobs (pd-worker(1)). */
enum pd_handler_mode {
	PD_HANDLER_PROCESS, /* a process per job: payload on stdin, the exit status classifies */
	PD_HANDLER_STREAM,  /* one long-lived process, a JSON line per job each way (lib/stream) */
};

struct pd_handler {
	char *name;	      /* job type or topic, or "*" for every name */
	char *run;	      /* shell command for /bin/sh -c, or NULL */
	char **exec_argv;     /* argv to exec without a shell, NULL-terminated, or NULL */
	long long timeout_ms; /* -1 unset: the program's default */
	int terminal_codes[PD_HANDLER_MAX_CODES]; /* exit codes that dead-letter at once */
	int nterminal;
	enum pd_handler_mode mode; /* zeroed: PD_HANDLER_PROCESS */
	char *const *env;	/* "NAME=value" set in its processes' environment, NULL-terminated;
				   NULL: none (a crontab's assignments; the job's PD_* win) */
	int env_only;		/* env is its processes' whole environment with the job's PD_*:
				   nothing of the worker's (a crontab line's, cron's) */
	char *cwd;		/* the directory its processes start in; NULL: the worker's */
	char *shell;		/* run is run by "SHELL -c run"; NULL: /bin/sh */
	char **pass_env;	/* pass_env: names its processes get though withheld (lib/henv),
				   NULL-terminated; NULL: none */
	long long result_limit; /* bytes of stdout kept as the result; 0: the worker's */
	long long max_snoozes;	/* max_snoozes: snoozes a job of it may take; 0: retry's */
	char *concurrency_key;	/* concurrency_key: the default limit key of its jobs
				   (pd-enqueue; a workflow step's: the run's job while at
				   the step), NULL: none */
	struct pd_hooks hooks;	/* hooks: its own (owned by whoever built it); NULL each: none */
};

/* The bytes of h's stdout kept as the result: its own result_limit, else dflt. */
size_t pd_handler_result_limit(const struct pd_handler *h, size_t dflt);

/* The handler for name among v[0..n): an exact match, else the first "*", else NULL. */
const struct pd_handler *pd_handler_find(const struct pd_handler *v, int n, const char *name);

/* 1 if code is terminal for h: 64 (EX_USAGE), 65 (EX_DATAERR) or one of h's codes. */
int pd_handler_terminal(const struct pd_handler *h, int code);

/*
 * 1 if a and b run the same command the same way: the same mode, and the
 * same run string or the same exec argv (a reload keeps a stream handler's
 * process only then).
 */
int pd_handler_same_command(const struct pd_handler *a, const struct pd_handler *b);

/*
 * Check that h's program can be run now: its exec path, or /bin/sh for a
 * shell command (what the command itself runs is found only when it runs).
 * what names it in the error ("handler", "publish command"). 0, or -1 with
 * e filled, code 78: "handler 't': cannot run /nonexistent: No such file
 * or directory".
 */
struct pd_err;
int pd_handler_check(const struct pd_handler *h, const char *what, struct pd_err *e);

/* "dead_letter", "failure", "success" (the event as a hook job's payload names it). */
const char *pd_hook_event_name(enum pd_hook_event ev);
/* The event named name (as pd_hook_event_name), or -1. */
int pd_hook_event_parse(const char *name);

/*
 * The hook command for event ev of a job of type: the handler's for type
 * in v[0..n) (pd_handler_find) if it has one, else global's (may be NULL),
 * else NULL.
 */
const struct pd_handler *pd_hook_find(const struct pd_handler *v, int n,
				      const struct pd_hooks *global, const char *type,
				      enum pd_hook_event ev);

/*
 * The events (bit 1 << ev) that have a command for a job of type, as
 * pd_hook_find finds them; 0 for a hook job itself (a hook never triggers
 * hooks).
 */
unsigned pd_hook_mask(const struct pd_handler *v, int n, const struct pd_hooks *global,
		      const char *type);

/*
 * The hook events of v[0..n) and global as JSON into b (replacing what it
 * held), for a statement that looks them up by job type as pd_hook_find
 * does: {"types": {TYPE: [EVENT, ...], ...}, "global": [EVENT, ...]}, every
 * handler listed (its own events, maybe none: it hides a "*" handler's),
 * first match of a name kept; "" when none has a hook.
 */
struct pd_buf;
void pd_hooks_json(struct pd_buf *b, const struct pd_handler *v, int n,
		   const struct pd_hooks *global);

/* Free the commands of hs (each a handler of its own: name, run, exec_argv); all NULL. */
void pd_hooks_release(struct pd_hooks *hs);

#endif
