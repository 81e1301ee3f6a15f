/*
 * reap: one reap pass. Expired leases go back to their queues (the
 * statement is pd_jobs_reap_leases'), and on this host nothing of the handlers
 * of a dead worker is left running when its jobs are given back. Jobs never
 * claimed whose start deadline has passed are cancelled (sql/026).
 *
 * A handler's own process dies with its worker (PR_SET_PDEATHSIG, see
 * proc.h); what it started in turn does not. So for each expired lease
 * whose worker ran on this host (same hostname) and is gone (no process
 * with its pid, a zombie, or one that is not a pd-worker), the pass kills,
 * with SIGKILL, every process whose environment holds that attempt's
 * PD_JOB_ID and PD_LEASE_TOKEN, and the process group of each, before the
 * statement gives the job back (and once more for any lease that expired
 * in between). Safety:
 *
 *   - the environment, read from /proc/PID/environ, is what marks a
 *     process as the attempt's; a process whose environment cannot be
 *     read (another user's, without the privilege) is skipped;
 *   - a matching process tree whose top is the child of a live pd-worker
 *     (or of a process we may not look at) is that worker's business, not
 *     a leftover: another installation on this host may have a job with
 *     the same id and token;
 *   - each process is held by a pidfd from before its environment is read
 *     until it is killed (stopped first, so its group id stays its own),
 *     so a pid reused meanwhile is never signalled; a group is killed only
 *     when its leader is gone or is itself a match.
 *
 * A worker whose pid was reused by another pd-worker counts as alive: its
 * leftovers then live on until they end. Leftovers on other hosts are for
 * a reaper on those hosts (any pd-worker there reaps, unless --no-reap).
 */
#ifndef PD_REAP_H
#define PD_REAP_H

#include "db.h"
#include "jobs.h"
#include "prune.h"

struct pd_err;

/*
 * One pass: the sweep (pd_jobs_sweep: BLOCKED jobs whose dependencies all
 * succeeded, and when the earliest lease expires); if a lease has expired,
 * kill the leftovers of the expired leases of dead workers on this host
 * (each killed process is logged), then give the expired leases back
 * (pd_jobs_reap_leases). *requeued and *dead count the jobs given back as PENDING
 * and DEAD_LETTERED. Then the PENDING jobs never claimed whose start_by has
 * passed are cancelled, with those BLOCKED on them
 * (pendulum.cancel_late_starts). *next_ms: the ms until the next pass is
 * due for the leases and the start deadlines (the earliest expiry or
 * deadline; 0 after a reap: soon; -1 nothing leased and no deadline). A
 * pass with nothing expired and no prune due is two statements. -1 with e
 * filled on a database error. hooks: the caller's hook events
 * (pd_hooks_json), or NULL or "" for none: with hooks, the leases are given
 * back and their hook jobs made in one transaction (pd_jobs_reap_hooks).
 */
int pd_reap_pass(struct pd_db *db, const struct pd_retention *ret, const char *hooks,
		 long long *next_prune, long long *next_ms, int *requeued, int *dead,
		 struct pd_err *e);

/*
 * pd_reap_pass as a worker runs it also prunes finished history (lib/prune)
 * by ret (the caller's current configuration's: a reload applies to the
 * next pass), with a budget that keeps the pass short: when *next_prune
 * (pd_now_ms, the caller's, 0 at first) has come, at most
 * PD_REAP_WORKER_BATCHES statements of PD_PRUNE_BATCH rows, and *next_prune
 * becomes now while rows are left, else PD_REAP_PRUNE_EVERY_MS later.
 */
#define PD_REAP_WORKER_BATCHES 4
#define PD_REAP_PRUNE_EVERY_MS 60000

/*
 * The pass with an explicit prune budget (pd-reaper's): leases as
 * pd_reap_pass, then at most prune_batches statements of batch rows
 * (0 batches: no pruning), what they deleted in *pruned (logged when
 * anything was).
 */
int pd_reap_pass_prune(struct pd_db *db, const struct pd_retention *ret, const char *hooks,
		       int prune_batches, int batch, long long *next_ms, int *requeued, int *dead,
		       struct pd_prune_report *pruned, struct pd_err *e);

#endif
