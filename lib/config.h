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
#include "ydoc.h"

#define PD_CONFIG_DEFAULT_PATH "/etc/pendulum/pendulum.yaml"
#define PD_HANDLER_MAX_CODES   32

struct pd_handler_cfg {
	char *type;	      /* job type, or "*" for every type */
	char *run;	      /* shell command for /bin/sh -c, or NULL */
	char **exec_argv;     /* argv to exec without a shell, NULL-terminated, or NULL */
	long long timeout_ms; /* -1 unset */
	int terminal_codes[PD_HANDLER_MAX_CODES]; /* exit codes that dead-letter at once */
	int nterminal;
};

/* relay.topics: the publish command for a topic (pd-relay(1)). */
struct pd_topic_cfg {
	char *topic;	      /* topic, or "*" for every topic */
	char *run;	      /* shell command for /bin/sh -c, or NULL */
	char **exec_argv;     /* argv to exec without a shell, NULL-terminated, or NULL */
	long long timeout_ms; /* -1 unset: relay.timeout */
};

struct pd_config {
	char *path;	    /* file read, or NULL */
	char *database_url; /* NULL unset */
	int log_level;	    /* enum pd_log_level, -1 unset */
	struct {
		char **queues; /* NULL-terminated, or NULL (unset) */
		int nqueues;
		int concurrency;
		long long lease_ms, heartbeat_ms, poll_ms, drain_timeout_ms, kill_grace_ms;
		int batch; /* 0: the same as concurrency */
		int reap;
		long long result_limit; /* bytes */
	} worker;
	struct {
		long long base_ms, cap_ms;
	} retry;
	struct {
		long long interval_ms;
	} reaper;
	struct {
		int concurrency;
		int batch; /* 0: the same as concurrency */
		long long visibility_ms, poll_ms, timeout_ms, drain_timeout_ms, kill_grace_ms;
		struct pd_topic_cfg *topics; /* in file order */
		int ntopics;
	} relay;
	struct pd_handler_cfg *handlers; /* in file order */
	int nhandlers;
	struct pd_ydoc doc; /* kept so later modules can read their own sections */
};

/* Set the defaults: nothing to free yet. */
void pd_config_init(struct pd_config *c);

/*
 * Find and read the file (explicit_path may be NULL) over the defaults
 * already in c. Returns 0, or -1 with e filled (code 78). Either way c must
 * be released.
 */
int pd_config_load(struct pd_config *c, const char *explicit_path, struct pd_err *e);

/* Free everything; c holds the defaults again. */
void pd_config_release(struct pd_config *c);

/* The handler for a job type: an exact match, else "*", else NULL. */
const struct pd_handler_cfg *pd_config_handler(const struct pd_config *c, const char *type);

/* The relay's publish command for a topic: an exact match, else "*", else NULL. */
const struct pd_topic_cfg *pd_config_topic(const struct pd_config *c, const char *topic);

#endif
