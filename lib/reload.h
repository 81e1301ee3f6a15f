/*
 * reload: SIGHUP in the daemons (pd-worker, pd-relay, pd-cron, pd-reaper).
 *
 * The program gives its engine a source (lib/app: pd_app_source) that reads
 * the config file found at start again into a new struct pd_config. On
 * SIGHUP the engine's on_reload hook calls pd_reload with its apply step:
 * build its settings from its flags (kept from the command line, so flags
 * still override the file) over the new file, check them, and move onto
 * them. A file that does not parse (78, file:line:col) or settings the
 * engine refuses are logged at error and change nothing: the daemon goes on
 * with the config it had.
 *
 * Ownership: nothing a reload replaces is freed while the daemon runs. Work
 * in flight points into the old config and the old settings (a running
 * handler's struct pd_handler, a ready job's, a stream handler's command, a
 * workflow plan's definition), so the source keeps every config it handed
 * out until the program releases it, and the engines keep their replaced
 * settings (pd_reload_keep) until they return. A reload costs a config's
 * memory until exit; daemons are reloaded by hand, a few times a day at most.
 */
#ifndef PD_RELOAD_H
#define PD_RELOAD_H

#include "buf.h"
#include "config.h"

/* Where a daemon reads its config again. */
struct pd_config_source {
	/* A new config read from the file, or NULL with e filled (78, file:line:col). */
	struct pd_config *(*load)(void *ctx, struct pd_err *e);
	/* The engine runs on c now: the source takes it (and keeps the one before). */
	void (*keep)(void *ctx, struct pd_config *c);
	/* The engine refused c: free it. */
	void (*drop)(void *ctx, struct pd_config *c);
	void *ctx;
};

/*
 * An engine's apply step: settle its settings over c (flags over the new
 * file) and move onto them, appending a short summary for the log
 * ("handlers=3 workflows=1"); or refuse with -1 and e filled, nothing
 * changed.
 */
typedef int (*pd_reload_apply_fn)(void *arg, const struct pd_config *c, struct pd_buf *summary,
				  struct pd_err *e);

/*
 * SIGHUP for an engine named what ("worker"): read the file again from src,
 * hand it to apply; both succeed: src keeps the new config, "config
 * reloaded" is logged at info with the file and the summary, and 1 is
 * returned. Otherwise "config not reloaded: keeping the old one" at error
 * with the reason, and 0. src NULL or without load: "SIGHUP: nothing to
 * reload" at info, 0.
 */
int pd_reload(const struct pd_config_source *src, const char *what, pd_reload_apply_fn apply,
	      void *arg);

/*
 * The concurrency of an engine whose pool was sized at start: when the
 * flags did not set it (flags->concurrency < 0) and the file now asks for
 * another than running, log a warning that it needs a restart. Either way
 * flags->concurrency becomes running, so that settling over the file keeps
 * the pool's size (and a batch that defaults to it).
 */
void pd_reload_pin_concurrency(struct pd_engine_cfg *flags, const struct pd_engine_cfg *file,
			       long long running, const char *section);

/* What an engine keeps until it returns: the settings reloads replaced. */
struct pd_reload_keep {
	void **v;
	int n;
};

#define PD_RELOAD_KEEP_INIT                                                                        \
	{                                                                                          \
		NULL, 0                                                                            \
	}

/* Keep p (heap) until pd_reload_keep_release. */
void pd_reload_keep(struct pd_reload_keep *k, void *p);

/* Free what k keeps, each with fn (NULL: free) first. */
void pd_reload_keep_release(struct pd_reload_keep *k, void (*fn)(void *));

/* A config on the heap, with the defaults (pd_config_init). */
struct pd_config *pd_config_new(void);

/* Release and free c; NULL is fine. */
void pd_config_free(struct pd_config *c);

#endif
