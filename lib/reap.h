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
 * the candidates of those hosts (below).
 *
 * One reaper for the fleet: the pass is an elected role, 'reaper' in
 * pendulum.leaders (lib/elect), held like a lease. Every pd-worker that
 * reaps (not --no-reap) and every pd-reaper daemon is a candidate, and
 * each calls pd_reap_turn when its turn is due. The holder runs the pass;
 * the others stand by at the cost of one statement (the election's) each
 * time the holder's role would expire, a job lease expires, or a holder
 * resigns (NOTIFY pendulum_leaders): a holder that dies or freezes is
 * replaced within its role lease. The election saves work and nothing
 * else: a frozen ex-holder that acts late runs statements that check
 * again under row locks (pd_jobs_reap_leases, pendulum.cancel_late_starts,
 * the sweep, the prune), so two actors give nothing back twice.
 *
 * Orphan killing stays per host, and costs an idle fleet nothing: the
 * election's statement also says when the earliest job lease expires
 * (NULL with nothing leased: no wake-up). When one has expired, every
 * candidate, holder or not, reads the expired leases and kills the
 * leftovers of those whose worker ran on its own host and is gone. The
 * holder gives back the leases of its own host's workers at once (their
 * leftovers killed first, as before), those of other hosts only once they
 * have been expired for a grace of a third of its role lease, at most 2 s
 * (pd_reap_grace): the time for a candidate of that host to wake and kill
 * them first (it wakes at the earliest lease expiry it read at its last
 * turn). The trade-off: a dead worker's jobs on another host wait that
 * grace longer to go back; a busy fleet's standbys wake about once per job
 * lease (the earliest expiry moves on with each heartbeat), not only once
 * per role lease; a lease claimed after a standby's last turn that expires
 * before its next (a lease much shorter than the role's) may be given back
 * before that host's candidates look, and then its leftovers live on until
 * they end; and a host without a live candidate (every worker there
 * --no-reap, or frozen) keeps its leftovers, as before.
 */
#ifndef PD_REAP_H
#define PD_REAP_H

#include "db.h"
#include "jobs.h"
#include "prune.h"

/* The role's name in pendulum.leaders. */
#define PD_REAP_ROLE "reaper"

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
 * grace_ms: the leases of workers on other hosts go back only once expired
 * that long (pd_jobs_reap_leases; 0: all at once); *next_ms is then at the
 * latest when the first of them is due.
 */
int pd_reap_pass(struct pd_db *db, const struct pd_retention *ret, const char *hooks,
		 long long grace_ms, long long *next_prune, long long *next_ms, int *requeued,
		 int *dead, struct pd_err *e);

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
		       long long grace_ms, int prune_batches, int batch, long long *next_ms,
		       int *requeued, int *dead, struct pd_prune_report *pruned, struct pd_err *e);

/* Where a candidate stands in the reaper election. */
enum pd_reap_stand {
	PD_REAP_NONE,	 /* not asked yet (since start or a reconnect) */
	PD_REAP_STANDBY, /* another candidate holds the role */
	PD_REAP_ACTIVE,	 /* this one holds it: it runs the pass */
};

/* A candidate for the reaper role. */
struct pd_reap_lead {
	char holder[128];	  /* this candidate's name in pendulum.leaders (a daemon id) */
	long long lease_ms;	  /* the role's lease (> 0) */
	enum pd_reap_stand stand; /* moved by pd_reap_turn only */
	long long pass_at;	  /* pd_now_ms: the holder's next pass (0: at once) */
};

/* Not standing yet, as holder (unique among the candidates), with this role lease. */
void pd_reap_lead_init(struct pd_reap_lead *l, const char *holder, long long lease_ms);

/* After a reconnect: the next standing is logged again; a holder passes at once. */
void pd_reap_lead_reset(struct pd_reap_lead *l);

/*
 * The grace another host's leases get (see above): a third of the role
 * lease, at most PD_REAP_GRACE_MAX_MS.
 */
#define PD_REAP_GRACE_MAX_MS 2000
long long pd_reap_grace(const struct pd_reap_lead *l);

/*
 * The pass a holder runs (the caller's: its prune budget, its counts):
 * pd_reap_pass or pd_reap_pass_prune with grace_ms. *due_ms: the ms until
 * its next pass is due (>= 0). -1 with e filled.
 */
typedef int (*pd_reap_pass_fn)(void *ctx, long long grace_ms, long long *due_ms, struct pd_err *e);

/*
 * One turn: stand for the role (pd_elect_hold, one statement that also
 * reads when the role and the earliest job lease expire). Holding it: run
 * pass when its time has come (at once on taking the role). On standby:
 * when a job lease has expired, kill this host's leftovers of the expired
 * leases (pd_jobs_expired, then as the pass does). Each move between
 * ACTIVE and STANDBY is logged. *next_ms: the ms until the next turn is
 * due: the holder's next pass or renewal (a third of the lease), a
 * standby's when the holder's role expires or the earliest job lease does
 * (a little after). -1 with e filled on a database error.
 */
int pd_reap_turn(struct pd_reap_lead *l, struct pd_db *db, pd_reap_pass_fn pass, void *ctx,
		 long long *next_ms, struct pd_err *e);

/* Give the role up if held (a clean stop: NOTIFY pendulum_leaders); errors ignored. */
void pd_reap_lead_release(struct pd_reap_lead *l, struct pd_db *db);

#endif
