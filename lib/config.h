/*
 * config: pendulum.yaml (see pendulum.yaml(5)).
 *
 * The file is the one given with -c, else $PD_CONFIG, else
 * /etc/pendulum/pendulum.yaml if it exists, else none (the defaults).
 * Every key is optional; an unknown key or a value of the wrong type at any
 * level is an error naming file:line:column, exit code 78.
 *
 * Binaries call pd_config_init, pd_config_load, then apply their flags over
 * the result (flags override the file, which overrides the defaults).
 */
#ifndef PD_CONFIG_H
#define PD_CONFIG_H

#include "err.h"
#include "flow.h"
#include "handler.h"
#include "ydoc.h"

#define PD_CONFIG_DEFAULT_PATH "/etc/pendulum/pendulum.yaml"

/*
 * What the worker: and relay: sections share, and the flags of pd-worker and
 * pd-relay that override them. -1: unset (pd_engine_cfg_init).
 */
struct pd_engine_cfg {
	long long concurrency; /* jobs in flight at once (handlers running) */
	long long batch;       /* least claimed at once; 0 in the file: the concurrency */
	long long batch_max;   /* most claimed at once (lib/batch); 0 in the file: 1000 */
	long long poll_ms;     /* claim this often without a notification */
	long long drain_ms;    /* drain_timeout: how long children may finish on SIGTERM */
	long long grace_ms;    /* kill_grace: SIGTERM to SIGKILL for a child stopped */
	int until_idle;	       /* a flag only: end once idle and nothing runs */
	int until_settled;     /* a flag only (pd-worker): end once settled (pd_jobs_unsettled) */
};

/* worker.batch_max, --batch-max when neither is given. */
#define PD_BATCH_MAX_DEFAULT 1000

struct pd_retry_cfg {
	long long base_ms, cap_ms; /* the backoff: base x 2^(attempt-1), jittered, capped */
	long long max_snoozes;	   /* snoozes a job may take; past them a snooze is a retry */
};

/*
 * retention: how long finished history is kept, in milliseconds, each
 * PD_RETAIN_FOREVER (never pruned) or a duration (lib/prune).
 */
#define PD_RETAIN_FOREVER (-1LL)

struct pd_retention {
	long long succeeded_ms;	       /* SUCCEEDED jobs, by finished_at (default 7d) */
	long long cancelled_ms;	       /* CANCELLED jobs (7d) */
	long long dead_lettered_ms;    /* DEAD_LETTERED jobs (30d) */
	long long outbox_published_ms; /* PUBLISHED outbox messages, by published_at (7d) */
	long long workers_gone_ms;     /* worker rows, by last_seen_at (1d) */
};

/* max_payload's default: 1 MiB. */
#define PD_MAX_PAYLOAD_DEFAULT (1024 * 1024)

/*
 * prepared_statements: whether pipelines use named (server-side prepared)
 * statements (lib/db). auto: on a direct connection only; on: always; off:
 * never. A pooler in transaction mode (PgBouncer) hands each transaction
 * whichever server connection is free, where a statement prepared by
 * another client exists and this client's does not.
 */
enum pd_prepare { PD_PREPARE_AUTO, PD_PREPARE_ON, PD_PREPARE_OFF };

struct pd_config {
	char *path;	    /* file read, or NULL */
	char *database_url; /* NULL unset */
	char *listen_url;   /* a direct session for LISTEN behind a pooler; NULL unset */
	char *crontab;	    /* crontab: the file pd-worker serves as --crontab does; NULL unset */
	enum pd_prepare prepared_statements;
	char **secret_env;     /* secret_env: names withheld from children (lib/henv); NULL: none */
	int log_level;	       /* enum pd_log_level, -1 unset */
	long long max_payload; /* bytes: the largest payload (or input, or signal) taken */
	struct {
		char **queues; /* NULL-terminated, or NULL (unset) */
		int nqueues;
		struct pd_engine_cfg engine;
		long long lease_ms, heartbeat_ms;
		int reap;
		long long result_limit; /* bytes */
	} worker;
	struct pd_retry_cfg retry;
	struct {
		long long interval_ms;
	} reaper;
	struct pd_retention retention;
	struct {
		struct pd_engine_cfg engine;
		long long visibility_ms, timeout_ms;
		struct pd_handler *topics; /* relay.topics, in file order (no terminal codes) */
		int ntopics;
	} relay;
	struct pd_handler *handlers; /* in file order */
	int nhandlers;
	struct pd_hooks hooks; /* hooks: the global ones (a handler's own come first) */
	struct pd_flow *flows; /* workflows:, in file order */
	int nflows;
	struct pd_ydoc doc; /* kept so later modules can read their own sections */
};

/* Every field unset. */
void pd_engine_cfg_init(struct pd_engine_cfg *c);

/* Fill c's unset fields from file's (a section of a loaded pd_config). */
void pd_engine_cfg_settle(struct pd_engine_cfg *c, const struct pd_engine_cfg *file);

/* Set the defaults: nothing to free yet. */
void pd_config_init(struct pd_config *c);

/*
 * Find and read the file (explicit_path may be NULL) over the defaults
 * already in c. Returns 0, or -1 with e filled (code 78). Either way c must
 * be released.
 */
int pd_config_load(struct pd_config *c, const char *explicit_path, struct pd_err *e);

/* The same with the file's text given (len bytes), named name in messages (tests/fuzz). */
int pd_config_load_string(struct pd_config *c, const char *name, const char *text, size_t len,
			  struct pd_err *e);

/* Free everything; c holds the defaults again. */
void pd_config_release(struct pd_config *c);

/* The workflow called name (without "workflow:"), or NULL. */
const struct pd_flow *pd_config_flow(const struct pd_config *c, const char *name);

#endif
