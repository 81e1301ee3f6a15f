/*
 * pd-admin: operate Pendulum from a terminal. Subcommands git-style from
 * the table below through lib/subcmd; their handlers are in lib/admincmd.c,
 * the queries and their output in lib/admin.c, lib/metrics.c and lib/top.c.
 */
#include <getopt.h>
#include <stdio.h>

#include "admincmd.h"
#include "app.h"
#include "cli.h"
#include "log.h"

#define SYNOPSIS "usage: pd-admin [-hVv] [-c file] [-d conninfo] [--json] command [args]\n"

#define FILTERS "state,tenant,type,queue,limit,offset,json"

/* clang-format off */
static const struct pd_subcmd commands[] = {
    {NULL, "migrate", pd_admincmd_migrate, "migrate [--status]", "apply pending schema migrations",
     "Apply the pending schema migrations in order, each in its own transaction.",
     "status,json",
     0, 0, "job id", 0, 0, 2},
    {NULL, "jobs", pd_admincmd_jobs, "jobs [options]", "jobs, newest first, filtered and paged",
     "List jobs, newest (highest id) first, and how many match.", FILTERS, 0, 0, "job id", 50, 10000, 1},
    {"job", "show", pd_admincmd_on_id, "job show ID", "a job's fields, result and attempt chain",
     "Print every field of job ID, its result and the chain of its attempts.", "json", 1, 1, "job id", 0, 0, 1},
    {"job", "replay", pd_admincmd_on_id, "job replay ID [--with-dependents]", "run a finished job again",
     "Put a SUCCEEDED, DEAD_LETTERED or CANCELLED job back to PENDING, to run now\n"
     "(BLOCKED while one of its dependencies has not succeeded): attempts reset,\n"
     "replay_count + 1.", "with-dependents,json", 1, 1, "job id", 0, 0, 1},
    {"job", "cancel", pd_admincmd_on_id, "job cancel ID [--reason TEXT]",
     "cancel a job (a running one is stopped)",
     "Cancel a PENDING or BLOCKED job now; of a LEASED or RUNNING one, ask the worker\n"
     "that holds it to stop its handler and record it CANCELLED.", "reason,json", 1, 1, "job id", 0, 0, 1},
    {NULL, "wait", pd_admincmd_wait, "wait [options] [ID...]", "wait until jobs end: 0 all succeeded",
     "Wait until every job that matches (the IDs given, and --type, --queue, --tenant)\n"
     "has ended: exit 0 when all succeeded, 1 when one dead-lettered or was\n"
     "cancelled, 124 at --timeout. Ended jobs count, the dead letters of the past too.",
     "tenant,type,queue,timeout,json", 0, -1, "job id", 0, 10000, 1},
    {"dlq", "list", pd_admincmd_dlq_list, "dlq list [options]", "dead letters, newest first, with reasons",
     "List dead-lettered jobs, most recently dead first, with the reason.",
     "tenant,type,queue,limit,offset,json", 0, 0, "job id", 50, 10000, 1},
    {"dlq", "replay", pd_admincmd_on_ids, "dlq replay [ID...] [--limit N]",
     "replay dead letters, at most 1000 a call",
     "Replay the dead letters named, or without IDs the longest dead of those that\n"
     "match, up to --limit.", "tenant,type,queue,limit,json", 0, -1, "job id", 100, 1000, 1},
    {"dlq", "delete", pd_admincmd_on_ids, "dlq delete ID...", "delete dead letters",
     "Delete dead-lettered jobs and their attempts.", "json", 1, -1, "job id", 0, 1000, 1},
    {"dlq", "purge", pd_admincmd_dlq_purge, "dlq purge --older-than DURATION",
     "delete old dead letters (retention)",
     "Delete the dead letters that died more than DURATION ago.", "older-than,queue,dry-run,json",
     0, 0, "job id", 0, 0, 1},
    {NULL, "prune", pd_admincmd_prune, "prune [--dry-run]", "delete finished history (retention:)",
     "Delete finished jobs (with their attempts and workflow runs), published outbox\n"
     "messages and gone workers older than the retention: of the configuration, in\n"
     "batches, and print how many of each kind.", "dry-run,json", 0, 0, "job id", 0, 0, 1},
    {NULL, "queues", pd_admincmd_queues, "queues", "jobs per queue and state, oldest runnable",
     "Per queue: jobs in each state, the runnable ones, how long the oldest\n"
     "runnable job has waited since its run_at, the live workers that take from\n"
     "it, and the types of its PENDING jobs that no live worker serves.",
     "json", 0, 0, "job id", 0, 0, 1},
    {NULL, "depth", pd_admincmd_depth, "depth QUEUE [--state STATE]", "one number: a queue's depth",
     "Print the number of PENDING jobs (or jobs in STATE) of QUEUE.", "state,runnable,json", 1, 1, "queue name", 0, 0, 1},
    {NULL, "workers", pd_admincmd_workers, "workers [--stale DURATION]", "workers, gone ones marked",
     "List registered workers: host, pid, queues, jobs in flight / concurrency, last\n"
     "seen, and live or gone (not seen within its lease: its slots are not busy).",
     "stale,json", 0, 0, "job id", 0, 0, 1},
    {NULL, "leaders", pd_admincmd_leaders, "leaders", "who holds the ticker and reaper roles",
     "List the elected roles (the cron ticker, the fleet's reaper): the holder (a\n"
     "daemon id), its token, the time until it expires, and held or expired.",
     "json", 0, 0, "job id", 0, 0, 1},
    {NULL, "metrics", pd_admincmd_metrics, "metrics [--stale DURATION]", "Prometheus text exposition",
     "Print Prometheus metrics (text format 0.0.4) read from the database.", "stale,json", 0, 0, "job id", 0, 0, 1},
    {"outbox", "stats", pd_admincmd_outbox_stats, "outbox stats", "outbox messages per topic and state",
     "Per topic: outbox messages in each state, and how long the oldest PENDING\n"
     "message has waited since it was recorded.", "json", 0, 0, "job id", 0, 0, 1},
    {"outbox", "list", pd_admincmd_outbox_list, "outbox list [options]",
     "outbox messages, newest first, paged",
     "List outbox messages, newest (highest id) first, and how many match.",
     "state,tenant,topic,limit,offset,json", 0, 0, "job id", 50, 10000, 1},
    {"outbox", "replay", pd_admincmd_on_ids, "outbox replay ID...",
     "publish dead-lettered messages again",
     "Put DEAD_LETTERED outbox messages back to PENDING, to publish now:\n"
     "attempts reset, replay_count + 1, pd-relay woken.", "json", 1, -1, "message id", 0, 1000, 1},
    {"outbox", "delete", pd_admincmd_on_ids, "outbox delete ID...", "delete dead-lettered messages",
     "Delete DEAD_LETTERED outbox messages, all or none: any other ID (or an unknown\n"
     "one) deletes nothing. The next message of each key is published.",
     "json", 1, -1, "message id", 0, 1000, 1},
    {"outbox", "purge", pd_admincmd_outbox_purge, "outbox purge --older-than DURATION",
     "delete old dead-lettered messages",
     "Delete the dead-lettered outbox messages that died more than DURATION ago.",
     "older-than,topic,dry-run,json", 0, 0, "message id", 0, 0, 1},
    {NULL, "top", pd_admincmd_top, "top [--interval DURATION] [--once]",
     "live view of queues, workers, dead letters",
     "A live view of queue depth by state, worker occupancy, the running jobs with\n"
     "their progress and the newest dead letters, redrawn every --interval. q or\n"
     "Ctrl-C quits.", "interval,stale,once,json", 0, 0, "job id", 0, 0, 1},
    {"flow", "runs", pd_admincmd_flow_runs, "flow runs [options]", "workflow runs, newest first",
     "List workflow runs, newest (highest id) first, with the step each is at, and\n"
     "how many match. A run's STATE: RUNNING, SLEEPING, WAITING, SUCCEEDED,\n"
     "DEAD_LETTERED or CANCELLED.", "workflow,state,tenant,queue,limit,offset,json", 0, 0, "run id", 50, 10000, 1},
    {"flow", "show", pd_admincmd_on_id, "flow show RUN", "a workflow run and its steps",
     "Print workflow run RUN (state, position, job, input, result) and each of its\n"
     "steps: done, pending, or at the position the run's state; attempts, output.",
     "json", 1, 1, "run id", 0, 0, 1},
    {"flow", "signal", pd_admincmd_flow_signal, "flow signal RUN NAME [PAYLOAD]",
     "send a signal to a workflow run",
     "Send signal NAME with the JSON PAYLOAD (default null; - reads it from stdin)\n"
     "to workflow run RUN; a wait_for step parked on it resumes at once, else the\n"
     "signal is kept until a wait_for step of that name takes it.", "json", 1, 3, "run id", 0, 0, 1},
    {"flow", "cancel", pd_admincmd_on_id, "flow cancel RUN [--reason TEXT]",
     "cancel a workflow run (a running step too)",
     "Cancel workflow run RUN: its job as 'job cancel' does (PENDING or BLOCKED:\n"
     "waiting, sleeping or not yet claimed; a running step: its worker stops it).",
     "reason,json", 1, 1, "run id", 0, 0, 1},
    {"lease", "check", pd_admincmd_lease_check, "lease check", "in a handler: is my lease still held?",
     "Exit 0 while the lease of the job this handler runs (PD_JOB_ID, PD_LEASE_TOKEN,\n"
     "set by pd-worker) is still held, 1 once it is lost, 3 (printing \"cancelled\")\n"
     "once an operator asked to cancel the job. Asked through the worker\n"
     "(PD_WORKER_FD) when it set one: no database credential needed.", "json", 0, 0, "job id", 0, 0, 0},
    {"tenant", "grant", pd_admincmd_tenant, "tenant grant ROLE TENANT",
     "let a role see and write a tenant's rows",
     "Let role ROLE, and every role that is a member of it, see and write the rows\n"
     "of tenant TENANT under row-level security (pendulum.tenant_members; see\n"
     "pendulum(7)). Granting it again changes nothing.", "json", 2, 2, "role,tenant", 0, 0, 1},
    {"tenant", "revoke", pd_admincmd_tenant, "tenant revoke ROLE TENANT",
     "take a tenant back from a role",
     "Undo 'tenant grant ROLE TENANT': the role no longer sees or writes the\n"
     "tenant's rows (its sessions' next statements).", "json", 2, 2, "role,tenant", 0, 0, 1},
    {"tenant", "list", pd_admincmd_tenant, "tenant list [ROLE]", "which roles see which tenants",
     "List the tenant grants, of ROLE or of every role: role, tenant, when granted.",
     "json", 0, 1, "role", 0, 0, 1},
    {"tenant", "set", pd_admincmd_tenant, "tenant set TENANT --weight N",
     "a tenant's share of the claims",
     "Set TENANT's weight, 1 to 1000: within a queue and a priority, the claims go\n"
     "round-robin across the tenants with work, each taking as many jobs a turn as\n"
     "its weight. default (or no weight set) is 1.", "weight,json", 1, 1, "tenant", 0, 0, 1},
    {NULL, "tenants", pd_admincmd_tenants, "tenants", "tenant weights that were set",
     "List the tenants whose weight was set, with it; every other tenant has weight 1.",
     "json", 0, 0, "job id", 0, 0, 1},
    {"limit", "set", pd_admincmd_limit, "limit set KEY [options]",
     "cap a key's running jobs or starts",
     "Limit the jobs under KEY across every worker: at most N running at once\n"
     "(--concurrency), at most N started in any PERIOD (--rate 100/1m); none\n"
     "removes that cap. KEY is a job's concurrency key, or queue:NAME, tenant:NAME\n"
     "or type:NAME for every job of that queue, tenant or type. Jobs over a limit\n"
     "stay PENDING (parked on KEY) until it has room.",
     "concurrency,rate,json", 1, 1, "limit key", 0, 0, 1},
    {"limit", "unset", pd_admincmd_limit, "limit unset KEY", "remove a key's limits and pause",
     "Remove the limit on KEY (caps, rate and pause): its waiting jobs may run.\n"
     "Exit status 2 when KEY had none.", "json", 1, 1, "limit key", 0, 0, 1},
    {NULL, "limits", pd_admincmd_limits, "limits", "limit keys: caps, running, window, waiting",
     "Per limit key: its concurrency cap and the jobs running under it, its rate,\n"
     "the starts in the current window, the jobs waiting (parked) on it, and\n"
     "whether it is paused.", "json", 0, 0, "job id", 0, 0, 1},
    {"queue", "pause", pd_admincmd_queue_pause, "queue pause QUEUE | --type TYPE",
     "stop starting a queue's (or a type's) jobs",
     "Pause QUEUE (or job type TYPE in every queue) across the fleet: no worker\n"
     "starts its jobs until it is resumed; running jobs finish and enqueue still\n"
     "works (the limit key queue:QUEUE or type:TYPE, paused).",
     "pause-type,json", 0, 1, "queue name", 0, 0, 1},
    {"queue", "resume", pd_admincmd_queue_pause, "queue resume QUEUE | --type TYPE",
     "start a paused queue (or type) again",
     "Resume QUEUE (or job type TYPE): workers take its jobs again at once.",
     "pause-type,json", 0, 1, "queue name", 0, 0, 1},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, 0, 0, 0},
};
/* clang-format on */

static void help(void)
{
	printf(SYNOPSIS
	       "\nOptions (operate Pendulum, the durable job engine on PostgreSQL):\n"
	       "  -c, --config FILE       configuration file (default $PD_CONFIG)\n"
	       "  -d, --database CONNINFO libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --database-url-file PATH  the conninfo or URI on PATH's first line\n"
	       "      --json              one JSON object a line instead of a table\n"
	       "      --quiet             log warnings and errors only\n"
	       "  -v, --verbose           log debug messages\n"
	       "  -h, --help              show this help\n"
	       "  -V, --version           show the version\nCommands:\n");
	struct pd_buf b = PD_BUF_INIT;

	for (const struct pd_subcmd *c = commands; c->name; c++)
		pd_cli_help_item(&b, 2, 36, c->usage, c->summary);
	fputs(pd_buf_str(&b), stdout);
	pd_buf_release(&b);
	printf("Run 'pd-admin COMMAND --help' for a command's options. See pd-admin(1).\n");
}

static struct pd_subprog prog = {
    .name = "pd-admin",
    .synopsis = SYNOPSIS,
    .opts = pd_admincmd_opts,
    .nopts = PD_ADMIN_NOPTS,
    .cmds = commands,
    .count_help = "at most N (default %lld, up to %lld)",
    .init = pd_admincmd_init,
    .set = pd_admincmd_set,
    .check = pd_admincmd_check,
    .found = pd_app_load,
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"database", required_argument, NULL, 'd'},
	    {"database-url-file", required_argument, NULL, PD_APP_OPT_DBFILE},
	    {"json", no_argument, NULL, 'j'},
	    {"quiet", no_argument, NULL, PD_APP_OPT_QUIET},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct pd_subprog p = prog;
	struct pd_app a;
	struct pd_err e = PD_ERR_INIT;
	int ch;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	pd_subcmd_complete(&p);
	while ((ch = pd_cli_getopt(argc, argv, "+:c:d:vhV", opts)) != -1) {
		switch (ch) {
		case 'c':
			a.config_path = optarg;
			break;
		case 'd':
		case PD_APP_OPT_DBFILE:
			if (pd_app_database(&a, optarg, ch == PD_APP_OPT_DBFILE, &e) < 0) {
				pd_die_msg(e.msg);
				return e.code;
			}
			break;
		case 'j':
			a.json = 1;
			break;
		case PD_APP_OPT_QUIET:
			a.verbosity--;
			break;
		case 'v':
			a.verbosity++;
			break;
		case 'h':
			help();
			return pd_cli_finish_stdout();
		case 'V':
			pd_cli_version();
			return pd_cli_finish_stdout();
		default:
			return pd_cli_bad_option(SYNOPSIS, ch, argv);
		}
	}
	p.xsize = pd_admincmd_xsize;
	return pd_subcmd_main(&p, &a, argc - optind, argv + optind);
}
