/*
 * croncmd: pd-cron's subcommands for the dispatcher (subcmd): its options,
 * how their values are taken, and one handler a command. Schedules are
 * sched's, the ticker ticker's; cmd/pd-cron.c holds the command table.
 */
#ifndef PD_CRONCMD_H
#define PD_CRONCMD_H

#include <stddef.h>

#include "subcmd.h"

/* pd-cron's options: indexes into pd_croncmd_opts, in --help order. */
enum {
	C_CRON,
	C_TZ,
	C_TZ_PREVIEW,
	C_TYPE,
	C_PAYLOAD,
	C_QUEUE,
	C_PRIORITY,
	C_MISFIRE,
	C_CATCH_UP,
	C_OVERLAP,
	C_JITTER,
	C_ATTEMPTS,
	C_TIMEOUT,
	C_KEY,
	C_CRONTAB,
	C_PRUNE,
	C_DRY,
	C_FROM,
	C_FROM_CHECK,
	C_COUNT,
	C_LOCAL,
	C_TENANT,
	C_TENANT_APPLY,
	C_ONCE,
	C_INTERVAL,
	C_LEASE,
	C_GRACE,
	C_WIDE,
	C_JSON,
	PD_CRON_NOPTS
};

extern const struct pd_subopt pd_croncmd_opts[PD_CRON_NOPTS];
extern const size_t pd_croncmd_xsize; /* its values (struct pd_subprog xsize) */

/* The struct pd_subprog callbacks: defaults, one option, the rules after all. */
void pd_croncmd_init(struct pd_subcall *k);
int pd_croncmd_set(struct pd_subcall *k, int opt, const char *val, struct pd_err *e);
int pd_croncmd_check(struct pd_subcall *k, struct pd_err *e);

/* The handlers; by_name: rm, pause, resume and trigger (by the command's name). */
pd_subcmd_fn pd_croncmd_add, pd_croncmd_list, pd_croncmd_by_name, pd_croncmd_history,
    pd_croncmd_preview, pd_croncmd_apply, pd_croncmd_check_file, pd_croncmd_run;

#endif
