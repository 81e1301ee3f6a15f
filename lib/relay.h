/*
 * relay: the engine of pd-relay. Claims outbox messages, runs the publish
 * command for each in a pool slot with nothing held, records the outcome
 * fenced on the claim token; on the daemon loop (lib/daemon), like the
 * worker.
 *
 * SIGHUP reloads (lib/reload): the flags are settled over the file read
 * again; the new publish commands, topics and limits apply to the messages
 * claimed after it, the publish commands running go on as they were. The
 * pool is sized at start: a concurrency changed in the file needs a restart.
 */
#ifndef PD_RELAY_H
#define PD_RELAY_H

#include "config.h"
#include "db.h"
#include "handler.h"
#include "reload.h"

#define PD_RELAY_MAX_TOPICS 64
#define PD_RELAY_MAX_CMDS   256

/* What a relay does. -1 in a field given to pd_relay_settle: unset. */
struct pd_relay_cfg {
	struct pd_handler cmds[PD_RELAY_MAX_CMDS]; /* publish commands by topic ("*": any) */
	int ncmds;
	const char *topics[PD_RELAY_MAX_TOPICS]; /* the claim's filter */
	int ntopics;
	int any_topic; /* no filter */
	struct pd_engine_cfg
	    engine;		   /* until_idle: exit once nothing is claimable and nothing runs */
	struct pd_retry_cfg retry; /* the file's (retry:) */
	long long visibility_ms, timeout_ms;
	int once; /* claim one batch, publish it, exit */
	/* the flags alone, settled over the file again on SIGHUP; NULL: no reload */
	const struct pd_relay_cfg *flags;
	struct pd_config_source source; /* where SIGHUP reads the file (lib/reload) */
};

void pd_relay_cfg_init(struct pd_relay_cfg *r);

/*
 * Flags over the file (cfg) over the defaults; then the commands and the
 * topics to claim, checked: every topic asked for has a command, and each
 * command's timeout plus the kill grace is shorter than the visibility
 * timeout. Returns 0, or -1 with e filled (64).
 */
int pd_relay_settle(struct pd_relay_cfg *r, const struct pd_config *cfg, struct pd_err *e);

/* Run on db (connected) until drained, idle (until_idle) or done (once). */
int pd_relay_run(const struct pd_relay_cfg *r, struct pd_db *db, struct pd_err *e);

#endif
