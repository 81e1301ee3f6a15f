/*
 * admincmd: pd-admin's subcommands for the dispatcher (subcmd): its
 * options, how their values are taken, and one handler a command. The
 * queries and their output are admin's, metrics' and top's; cmd/pd-admin.c
 * holds the command table.
 */
#ifndef PD_ADMINCMD_H
#define PD_ADMINCMD_H

#include <stddef.h>

#include "subcmd.h"

/* pd-admin's options: indexes into pd_admincmd_opts, in --help order. */
enum {
	O_STATE,
	O_TENANT,
	O_TYPE,
	O_QUEUE,
	O_TOPIC,
	O_WORKFLOW,
	O_LIMIT,
	O_OFFSET,
	O_REASON,
	O_OLDER,
	O_DRY,
	O_STALE,
	O_INTERVAL,
	O_ONCE,
	O_RUNNABLE,
	O_JSON,
	O_WITH_DEPS,
	O_STATUS,
	O_CONCURRENCY,
	O_RATE,
	O_WEIGHT,
	O_PAUSE_TYPE,
	O_TIMEOUT,
	PD_ADMIN_NOPTS
};

extern const struct pd_subopt pd_admincmd_opts[PD_ADMIN_NOPTS];
extern const size_t pd_admincmd_xsize; /* its values (struct pd_subprog xsize) */

/* The struct pd_subprog callbacks: defaults, one option, the rules after all. */
void pd_admincmd_init(struct pd_subcall *k);
int pd_admincmd_set(struct pd_subcall *k, int opt, const char *val, struct pd_err *e);
int pd_admincmd_check(struct pd_subcall *k, struct pd_err *e);

/*
 * The handlers. on_id: job show, replay and cancel, flow show and cancel;
 * on_ids: dlq replay and delete, outbox replay and delete (by the command's
 * group and name); tenant: tenant grant, revoke, list and set; limit: limit set and
 * unset; queue_pause: queue pause and resume; the rest one command each.
 */
pd_subcmd_fn pd_admincmd_migrate, pd_admincmd_jobs, pd_admincmd_on_id, pd_admincmd_dlq_list,
    pd_admincmd_on_ids, pd_admincmd_dlq_purge, pd_admincmd_prune, pd_admincmd_queues,
    pd_admincmd_depth, pd_admincmd_workers, pd_admincmd_metrics, pd_admincmd_top,
    pd_admincmd_outbox_stats, pd_admincmd_outbox_list, pd_admincmd_lease_check,
    pd_admincmd_flow_runs, pd_admincmd_flow_signal, pd_admincmd_tenant, pd_admincmd_tenants,
    pd_admincmd_limit, pd_admincmd_limits, pd_admincmd_queue_pause, pd_admincmd_outbox_purge,
    pd_admincmd_wait, pd_admincmd_leaders;

#endif
