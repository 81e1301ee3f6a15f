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
#include "handler.h"
#include "ydoc.h"

#define PD_CONFIG_DEFAULT_PATH "/etc/pendulum/pendulum.yaml"

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
		struct pd_handler *topics; /* relay.topics, in file order (no terminal codes) */
		int ntopics;
	} relay;
	struct pd_handler *handlers; /* in file order */
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
const struct pd_handler *pd_config_handler(const struct pd_config *c, const char *type);

/* The relay's publish command for a topic: an exact match, else "*", else NULL. */
const struct pd_handler *pd_config_topic(const struct pd_config *c, const char *topic);

#endif
