/*
 * pd-admin: operate Pendulum from a terminal. Subcommands git-style,
 * dispatched from a table; the queries and their output live in lib/admin.c,
 * lib/metrics.c and lib/top.c.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "admin.h"
#include "app.h"
#include "cli.h"
#include "clock.h"
#include "dur.h"
#include "enqueue.h"
#include "job.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "prune.h"
#include "migrate.h"
#include "text.h"
#include "top.h"

#define SYNOPSIS "usage: pd-admin [-hVv] [-c file] [-d conninfo] [--json] command [args]\n"

#define DEFAULT_STALE_MS (-1) /* each worker's own lease */

/* What a subcommand's options and arguments parse into. */
struct args {
	int argc; /* positional arguments */
	char **argv;
	struct pd_admin_filter f;
	const char *reason, *state;
	long long older_ms, stale_ms, interval_ms;
	int older_set, dry_run, once, runnable, with_dependents;
};

struct command;
typedef int cmd_fn(struct pd_app *a, const struct command *c, struct args *x,
		   const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e);

struct command {
	const char *group, *name; /* "dlq", "replay"; group NULL for one word */
	cmd_fn *fn;
	const char *usage;   /* after "pd-admin " */
	const char *summary; /* for pd-admin --help */
	const char *about;   /* for pd-admin COMMAND --help */
	const char *opts;    /* the options it takes, comma-separated */
	int min_args, max_args;
	long long limit_def, limit_max;
};

static cmd_fn cmd_jobs, cmd_on_id, cmd_dlq_list, cmd_dlq_replay, cmd_dlq_delete, cmd_dlq_purge,
    cmd_queues, cmd_depth, cmd_workers, cmd_metrics, cmd_top, cmd_outbox_stats, cmd_outbox_list,
    cmd_outbox_replay, cmd_lease_check, cmd_flow_runs, cmd_flow_signal, cmd_prune;
static int cmd_migrate(struct pd_app *a, int argc, char **argv, struct pd_err *e);

#define FILTERS "state,tenant,type,queue,limit,offset,json"

/* clang-format off */
static const struct command commands[] = {
    {NULL, "migrate", NULL, "migrate [--status]", "apply pending schema migrations", NULL, NULL,
     0, 0, 0, 0},
    {NULL, "jobs", cmd_jobs, "jobs [options]", "list jobs, newest first, filtered and paged",
     "List jobs, newest (highest id) first, and how many match.", FILTERS, 0, 0, 50, 10000},
    {"job", "show", cmd_on_id, "job show ID", "a job's fields, result and attempt chain",
     "Print every field of job ID, its result and the chain of its attempts.", "json", 1, 1, 0, 0},
    {"job", "replay", cmd_on_id, "job replay ID [--with-dependents]", "run a finished job again",
     "Put a SUCCEEDED, DEAD_LETTERED or CANCELLED job back to PENDING, to run now\n"
     "(BLOCKED while one of its dependencies has not succeeded): attempts reset,\n"
     "replay_count + 1.", "with-dependents,json", 1, 1, 0, 0},
    {"job", "cancel", cmd_on_id, "job cancel ID [--reason TEXT]",
     "cancel a PENDING or BLOCKED job", "Cancel a PENDING or BLOCKED job.", "reason,json", 1, 1,
     0, 0},
    {"dlq", "list", cmd_dlq_list, "dlq list [options]", "dead letters, newest first, with reasons",
     "List dead-lettered jobs, most recently dead first, with the reason.",
     "tenant,type,queue,limit,offset,json", 0, 0, 50, 10000},
    {"dlq", "replay", cmd_dlq_replay, "dlq replay [ID...] [--limit N]",
     "replay dead letters, at most 1000 a call",
     "Replay the dead letters named, or without IDs the longest dead of those that\n"
     "match, up to --limit.", "tenant,type,queue,limit,json", 0, -1, 100, 1000},
    {"dlq", "delete", cmd_dlq_delete, "dlq delete ID...", "delete dead letters",
     "Delete dead-lettered jobs and their attempts.", "json", 1, -1, 0, 1000},
    {"dlq", "purge", cmd_dlq_purge, "dlq purge --older-than DURATION",
     "delete old dead letters (retention)",
     "Delete the dead letters that died more than DURATION ago.", "older-than,queue,dry-run,json",
     0, 0, 0, 0},
    {NULL, "prune", cmd_prune, "prune [--dry-run]", "delete finished history (retention:)",
     "Delete finished jobs (with their attempts and workflow runs), published outbox\n"
     "messages and gone workers older than the retention: of the configuration, in\n"
     "batches, and print how many of each kind.", "dry-run,json", 0, 0, 0, 0},
    {NULL, "queues", cmd_queues, "queues", "jobs per queue and state, oldest runnable",
     "Per queue: jobs in each state, the runnable ones, how long the oldest\n"
     "runnable job has waited since its run_at, the live workers that take from\n"
     "it, and the types of its PENDING jobs that no live worker serves.",
     "json", 0, 0, 0, 0},
    {NULL, "depth", cmd_depth, "depth QUEUE [--state STATE]", "one number: a queue's depth",
     "Print the number of PENDING jobs (or jobs in STATE) of QUEUE.", "state,runnable,json", 1, 1,
     0, 0},
    {NULL, "workers", cmd_workers, "workers [--stale DURATION]", "workers, gone ones marked",
     "List registered workers: host, pid, queues, jobs in flight / concurrency, last\n"
     "seen, and live or gone (not seen within its lease: its slots are not busy).",
     "stale,json", 0, 0, 0, 0},
    {NULL, "metrics", cmd_metrics, "metrics [--stale DURATION]", "Prometheus text exposition",
     "Print Prometheus metrics (text format 0.0.4) read from the database.", "stale,json", 0, 0, 0,
     0},
    {"outbox", "stats", cmd_outbox_stats, "outbox stats", "outbox messages per topic and state",
     "Per topic: outbox messages in each state, and how long the oldest PENDING\n"
     "message has waited since it was recorded.", "json", 0, 0, 0, 0},
    {"outbox", "list", cmd_outbox_list, "outbox list [options]",
     "outbox messages, newest first, filtered and paged",
     "List outbox messages, newest (highest id) first, and how many match.",
     "state,tenant,topic,limit,offset,json", 0, 0, 50, 10000},
    {"outbox", "replay", cmd_outbox_replay, "outbox replay ID...",
     "publish dead-lettered messages again",
     "Put DEAD_LETTERED outbox messages back to PENDING, to publish now:\n"
     "attempts reset, replay_count + 1, pd-relay woken.", "json", 1, -1, 0, 1000},
    {NULL, "top", cmd_top, "top [--interval DURATION] [--once]",
     "live view of queues, workers, dead letters",
     "A live view of queue depth by state, worker occupancy and the newest dead\n"
     "letters, redrawn every --interval. q or Ctrl-C quits.", "interval,stale,once,json", 0, 0,
     0, 0},
    {"flow", "runs", cmd_flow_runs, "flow runs [options]", "workflow runs, newest first",
     "List workflow runs, newest (highest id) first, with the step each is at, and\n"
     "how many match. A run's STATE: RUNNING, SLEEPING, WAITING, SUCCEEDED,\n"
     "DEAD_LETTERED or CANCELLED.", "workflow,state,tenant,queue,limit,offset,json", 0, 0, 50,
     10000},
    {"flow", "show", cmd_on_id, "flow show RUN", "a workflow run and its steps",
     "Print workflow run RUN (state, position, job, input, result) and each of its\n"
     "steps: done, pending, or at the position the run's state; attempts, output.",
     "json", 1, 1, 0, 0},
    {"flow", "signal", cmd_flow_signal, "flow signal RUN NAME [PAYLOAD]",
     "send a signal to a workflow run",
     "Send signal NAME with the JSON PAYLOAD (default null; - reads it from stdin)\n"
     "to workflow run RUN; a wait_for step parked on it resumes at once, else the\n"
     "signal is kept until a wait_for step of that name takes it.", "json", 2, 3, 0, 0},
    {"flow", "cancel", cmd_on_id, "flow cancel RUN [--reason TEXT]",
     "cancel a run whose job is PENDING",
     "Cancel workflow run RUN: its job, when PENDING or BLOCKED (waiting, sleeping\n"
     "or not yet claimed), as 'job cancel' does.", "reason,json", 1, 1, 0, 0},
    {"lease", "check", cmd_lease_check, "lease check", "in a handler: is my lease still held?",
     "Exit 0 while the lease of the job this handler runs (PD_JOB_ID, PD_LEASE_TOKEN,\n"
     "set by pd-worker) is still held, 1 once it is lost.", "json", 0, 0, 0, 0},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0},
};
/* clang-format on */

enum {
	O_STATE = 256,
	O_TENANT,
	O_TYPE,
	O_QUEUE,
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
	O_TOPIC,
	O_WORKFLOW,
	O_WITH_DEPS,
};

static const struct optdef {
	const char *name;
	int has_arg, id;
	const char *arg, *help;
} optdefs[] = {
    {"state", 1, O_STATE, "STATE", "only those in STATE (listings: repeatable, or A,B)"},
    {"tenant", 1, O_TENANT, "TENANT", "only those of TENANT"},
    {"type", 1, O_TYPE, "TYPE", "only jobs of type TYPE"},
    {"queue", 1, O_QUEUE, "QUEUE", "only jobs of QUEUE"},
    {"topic", 1, O_TOPIC, "TOPIC", "only outbox messages of TOPIC"},
    {"workflow", 1, O_WORKFLOW, "NAME", "only runs of workflow NAME"},
    {"limit", 1, O_LIMIT, "N", NULL}, /* help from the command's limits */
    {"offset", 1, O_OFFSET, "N", "skip the first N (paging)"},
    {"reason", 1, O_REASON, "TEXT", "why: kept as dead_reason and last_error"},
    {"older-than", 1, O_OLDER, "DURATION", "dead letters that died more than DURATION ago"},
    {"dry-run", 0, O_DRY, NULL, "count them, delete nothing"},
    {"stale", 1, O_STALE, "DURATION",
     "a worker not seen for DURATION is gone (default: its lease)"},
    {"interval", 1, O_INTERVAL, "DURATION", "time between frames (default 1s)"},
    {"once", 0, O_ONCE, NULL, "print one frame and exit (so does a non-terminal)"},
    {"runnable", 0, O_RUNNABLE, NULL, "only PENDING jobs whose run_at has come"},
    {"json", 0, O_JSON, NULL, "one JSON object a line (as the global --json)"},
    {"with-dependents", 0, O_WITH_DEPS, NULL, "the jobs its failure failed go back to BLOCKED too"},
};

#define NOPTDEFS ((int)(sizeof(optdefs) / sizeof(optdefs[0])))

static void help(void)
{
	printf(SYNOPSIS
	       "\nOperate Pendulum, the durable job engine on PostgreSQL.\n\nOptions:\n"
	       "  -c, --config FILE       configuration file (default $PD_CONFIG, then\n"
	       "                          /etc/pendulum/pendulum.yaml)\n"
	       "  -d, --database CONNINFO libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --json              one JSON object a line instead of a table\n"
	       "      --quiet             log warnings and errors only\n"
	       "  -v, --verbose           log debug messages\n"
	       "  -h, --help              show this help\n"
	       "  -V, --version           show the version\n\nCommands:\n");
	for (const struct command *c = commands; c->name; c++)
		printf("  %-35s %s\n", c->usage, c->summary);
	printf("\nRun 'pd-admin COMMAND --help' for a command's options. See pd-admin(1).\n");
}

/* "usage: pd-admin migrate [--status]\n" for a subcommand's usage errors. */
static const char *sub_synopsis(const struct command *c)
{
	static char syn[256];

	snprintf(syn, sizeof(syn), "usage: pd-admin %s\n", c->usage);
	return syn;
}

static int takes(const struct command *c, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = c->opts; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, opt, n) == 0)
			return 1;
		p = end ? end + 1 : p + len;
	}
	return 0;
}

static void sub_help(const struct command *c)
{
	printf("usage: pd-admin %s\n\n%s\n\n", c->usage, c->about);
	for (int i = 0; i < NOPTDEFS; i++) {
		const struct optdef *o = &optdefs[i];
		char left[40], lim[80];

		if (!takes(c, o->name))
			continue;
		snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
		snprintf(lim, sizeof(lim), "at most N (default %lld, up to %lld)", c->limit_def,
			 c->limit_max);
		printf("  %-22s %s\n", left, o->help ? o->help : lim);
	}
	printf("  %-22s %s\n\nSee pd-admin(1).\n", "-h, --help", "show this help");
}

/*
 * Add each state of "A,B" to f: one of names (job, outbox or run states;
 * what: "", "outbox ", "run " for the message).
 */
static int add_states(struct pd_admin_filter *f, const char *list, const char *const *names,
		      const char *what, struct pd_err *e)
{
	char *dup = pd_xstrdup(list), *save = NULL;
	int rc = 0;

	for (char *s = strtok_r(dup, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		const char *st = pd_admin_state_in(names, s);
		int seen = 0;

		if (st == NULL) {
			struct pd_buf b = PD_BUF_INIT;

			for (int i = 0; names[i]; i++)
				pd_buf_printf(&b, "%s%s",
					      i == 0	     ? ""
					      : names[i + 1] ? ", "
							     : " or ",
					      names[i]);
			rc = pd_errf(e, PD_EX_USAGE, "option --state: unknown %sstate '%s' (%s)",
				     what, s, b.data);
			pd_buf_release(&b);
			break;
		}
		for (int i = 0; i < f->nstates; i++)
			seen |= f->states[i] == st;
		if (!seen)
			f->states[f->nstates++] = st;
	}
	if (rc == 0 && f->nstates == 0)
		rc = pd_errf(e, PD_EX_USAGE, "option --state: no state in '%s'", list);
	free(dup);
	return rc;
}

/* A name filter's value into f, checked as a name (65 naming the option). */
static int filter_name(struct pd_admin_filter *f, int ch, const char *v, struct pd_err *e)
{
	const char **to = ch == O_TENANT  ? &f->tenant
			  : ch == O_TYPE  ? &f->type
			  : ch == O_QUEUE ? &f->queue
			  : ch == O_TOPIC ? &f->topic
					  : &f->workflow;
	struct pd_err ne = PD_ERR_INIT;

	for (int i = 0; i < NOPTDEFS; i++)
		if (optdefs[i].id == ch && pd_name_check("name", v, &ne) < 0)
			return pd_errf(e, ne.code, "option --%s: %s", optdefs[i].name, ne.msg);
	*to = v;
	return 0;
}

/*
 * Parse a subcommand's options into x. Returns 0, 1 after --help, or -1
 * with e filled (code 64, or 65 for a bad name).
 */
static int parse(struct pd_app *a, const struct command *c, int argc, char **argv, struct args *x,
		 struct pd_err *e)
{
	struct option lo[NOPTDEFS + 2];
	int n = 0, ch;

	for (int i = 0; i < NOPTDEFS; i++)
		if (takes(c, optdefs[i].name))
			lo[n++] = (struct option){optdefs[i].name, optdefs[i].has_arg, NULL,
						  optdefs[i].id};
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n] = (struct option){NULL, 0, NULL, 0};
	x->f.limit = c->limit_def;
	x->stale_ms = DEFAULT_STALE_MS;
	x->interval_ms = 1000;
	while ((ch = pd_cli_getopt(argc, argv, ":h", lo)) != -1) {
		int rc = 0;

		switch (ch) {
		case 'h':
			sub_help(c);
			return 1;
		case O_STATE:
			if (c->fn == cmd_outbox_list)
				rc = add_states(&x->f, optarg, pd_outbox_states, "outbox ", e);
			else if (c->fn == cmd_flow_runs)
				rc = add_states(&x->f, optarg, pd_run_states, "run ", e);
			else
				rc = add_states(&x->f, optarg, pd_job_states, "", e);
			if (rc == 0 && c->fn == cmd_depth && x->f.nstates > 1)
				rc = pd_errf(e, PD_EX_USAGE, "option --state: one state only");
			x->state = x->f.states[0];
			break;
		case O_TENANT:
		case O_TYPE:
		case O_QUEUE:
		case O_TOPIC:
		case O_WORKFLOW:
			rc = filter_name(&x->f, ch, optarg, e);
			break;
		case O_LIMIT:
			rc = pd_cli_int("--limit", optarg, 1, c->limit_max, &x->f.limit, e);
			break;
		case O_OFFSET:
			rc = pd_cli_int("--offset", optarg, 0, 1LL << 53, &x->f.offset, e);
			break;
		case O_REASON:
			x->reason = optarg;
			break;
		case O_OLDER:
			rc = pd_cli_dur("--older-than", optarg, &x->older_ms, e);
			x->older_set = 1;
			break;
		case O_DRY:
			x->dry_run = 1;
			break;
		case O_STALE:
			rc = pd_cli_dur("--stale", optarg, &x->stale_ms, e);
			break;
		case O_INTERVAL:
			rc = pd_cli_dur("--interval", optarg, &x->interval_ms, e);
			if (rc == 0 && x->interval_ms < 100)
				rc = pd_errf(e, PD_EX_USAGE, "option --interval: at least 100ms");
			break;
		case O_ONCE:
			x->once = 1;
			break;
		case O_RUNNABLE:
			x->runnable = 1;
			break;
		case O_JSON:
			a->json = 1;
			break;
		case O_WITH_DEPS:
			x->with_dependents = 1;
			break;
		default:
			/* pd_cli_bad_option prints; report it as already said */
			e->code = pd_cli_bad_option(sub_synopsis(c), ch, argv);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	x->argc = argc - optind;
	x->argv = argv + optind;
	if (x->argc < c->min_args)
		return pd_errf(e, PD_EX_USAGE, "missing %s",
			       c->fn == cmd_depth			  ? "queue name"
			       : c->fn == cmd_outbox_replay		  ? "message id"
			       : c->fn == cmd_flow_signal && x->argc == 1 ? "signal NAME"
			       : strcmp(c->group ? c->group : "", "flow") == 0 ? "run id"
									       : "job id");
	if (c->max_args >= 0 && x->argc > c->max_args)
		return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'", x->argv[c->max_args]);
	if (c->fn == cmd_depth)
		return pd_name_check("QUEUE", x->argv[0], e);
	return 0;
}

/* The job or message ids among the positional arguments (malloc'd), at most c->limit_max. */
static int parse_ids(const struct command *c, const struct args *x, long long **ids,
		     struct pd_err *e)
{
	const char *what = c->fn == cmd_outbox_replay ? "message" : "job";

	if (x->argc > c->limit_max)
		return pd_errf(e, PD_EX_USAGE, "%d ids: at most %lld in one call", x->argc,
			       c->limit_max);
	*ids = pd_xcalloc((size_t)x->argc + 1, sizeof(**ids));
	for (int i = 0; i < x->argc; i++)
		if (pd_admin_parse_id(x->argv[i], what, &(*ids)[i], e) < 0)
			return -1;
	return 0;
}

/* The id that is the first positional argument: a run's for a flow command, else a job's. */
static int one_id(const struct command *c, const struct args *x, long long *id, struct pd_err *e)
{
	return pd_admin_parse_id(x->argv[0], strcmp(c->group, "flow") == 0 ? "run" : "job", id, e);
}

/* The commands on one job or run id: job show, replay and cancel; flow show and cancel. */
static int cmd_on_id(struct pd_app *a, const struct command *c, struct args *x,
		     const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	int flow = strcmp(c->group, "flow") == 0;
	long long id;

	if (one_id(c, x, &id, e) < 0)
		return -1;
	if (strcmp(c->name, "show") == 0)
		return (flow ? pd_admin_flow_show : pd_admin_job_show)(&a->db, id, fmt, out, e);
	if (strcmp(c->name, "cancel") == 0)
		return (flow ? pd_admin_flow_cancel : pd_admin_job_cancel)(&a->db, id, x->reason,
									   fmt, out, e);
	return pd_admin_job_replay(&a->db, id, x->with_dependents, fmt, out, e);
}

static int cmd_jobs(struct pd_app *a, const struct command *c, struct args *x,
		    const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_admin_jobs(&a->db, &x->f, fmt, out, e);
}

static int cmd_dlq_list(struct pd_app *a, const struct command *c, struct args *x,
			const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_admin_dlq_list(&a->db, &x->f, fmt, out, e);
}

static int cmd_dlq_replay(struct pd_app *a, const struct command *c, struct args *x,
			  const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	long long *ids = NULL;
	int rc = parse_ids(c, x, &ids, e);

	if (rc == 0)
		rc = pd_admin_dlq_replay(&a->db, ids, x->argc, &x->f, fmt, out, e);
	free(ids);
	return rc;
}

static int cmd_dlq_delete(struct pd_app *a, const struct command *c, struct args *x,
			  const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	long long *ids = NULL;
	int rc = parse_ids(c, x, &ids, e);

	if (rc == 0)
		rc = pd_admin_dlq_delete(&a->db, ids, x->argc, fmt, out, e);
	free(ids);
	return rc;
}

static int cmd_dlq_purge(struct pd_app *a, const struct command *c, struct args *x,
			 const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_admin_dlq_purge(&a->db, x->older_ms, x->f.queue, x->dry_run, fmt, out, e);
}

/* Progress of a long prune on a terminal: one line, redrawn. */
static void prune_progress(void *arg, enum pd_prune_kind k, const struct pd_prune_report *rep)
{
	(void)arg;
	fprintf(stderr, "\rpd-admin: prune: %s: %lld rows in %lld batches", pd_prune_kinds[k],
		rep->rows[k], rep->batches[k]);
}

static int cmd_prune(struct pd_app *a, const struct command *c, struct args *x,
		     const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	static const struct pd_admin_col cols[] = {
	    {"kind", NULL, 's', 'b'},	 {"retention", NULL, 's', 'b'}, {"rows", NULL, 'n', 'b'},
	    {"batches", NULL, 'n', 'b'}, {"dry_run", NULL, 'b', 'j'},
	};
	struct pd_prune_opts o = {.batch = 5000, .dry_run = x->dry_run};
	struct pd_prune_report rep;
	char cell[PD_PRUNE_NKINDS][3][PD_DUR_MAX];
	const char *cells[PD_PRUNE_NKINDS * 5];
	long long total = 0;
	int rc;

	(void)c;
	if (isatty(STDERR_FILENO) && !x->dry_run)
		o.progress = prune_progress;
	rc = pd_prune(&a->db, &a->cfg.retention, &o, &rep, e);
	if (o.progress && (rep.batches[0] || rep.batches[1] || rep.batches[2] || rep.batches[3] ||
			   rep.batches[4]))
		fputc('\n', stderr);
	for (int k = 0; k < PD_PRUNE_NKINDS; k++) {
		long long w = pd_prune_window(&a->cfg.retention, (enum pd_prune_kind)k);

		if (w == PD_RETAIN_FOREVER)
			snprintf(cell[k][0], PD_DUR_MAX, "forever");
		else
			pd_dur_format(w, cell[k][0], PD_DUR_MAX);
		snprintf(cell[k][1], PD_DUR_MAX, "%lld", rep.rows[k]);
		snprintf(cell[k][2], PD_DUR_MAX, "%lld", rep.batches[k]);
		cells[5 * k] = pd_prune_kinds[k];
		cells[5 * k + 1] = cell[k][0];
		cells[5 * k + 2] = cell[k][1];
		cells[5 * k + 3] = cell[k][2];
		cells[5 * k + 4] = x->dry_run ? "t" : "f";
		total += rep.rows[k];
	}
	pd_admin_render(cols, 5, cells, PD_PRUNE_NKINDS, fmt, out);
	if (!fmt->json)
		pd_buf_printf(out, "%s %lld row%s\n", x->dry_run ? "would prune" : "pruned", total,
			      total == 1 ? "" : "s");
	return rc;
}

static int cmd_queues(struct pd_app *a, const struct command *c, struct args *x,
		      const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	(void)x;
	return pd_admin_queues(&a->db, fmt, out, e);
}

static int cmd_depth(struct pd_app *a, const struct command *c, struct args *x,
		     const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_admin_depth(&a->db, x->argv[0], x->state, x->runnable, fmt, out, e);
}

static int cmd_workers(struct pd_app *a, const struct command *c, struct args *x,
		       const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_admin_workers(&a->db, x->stale_ms, fmt, out, e);
}

static int cmd_metrics(struct pd_app *a, const struct command *c, struct args *x,
		       const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_metrics_collect(&a->db, x->stale_ms, fmt->json, out, e);
}

static int cmd_outbox_stats(struct pd_app *a, const struct command *c, struct args *x,
			    const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	(void)x;
	return pd_admin_outbox_stats(&a->db, fmt, out, e);
}

static int cmd_outbox_list(struct pd_app *a, const struct command *c, struct args *x,
			   const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_admin_outbox_list(&a->db, &x->f, fmt, out, e);
}

static int cmd_outbox_replay(struct pd_app *a, const struct command *c, struct args *x,
			     const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	long long *ids = NULL;
	int rc = parse_ids(c, x, &ids, e);

	if (rc == 0)
		rc = pd_admin_outbox_replay(&a->db, ids, x->argc, fmt, out, e);
	free(ids);
	return rc;
}

static int cmd_flow_runs(struct pd_app *a, const struct command *c, struct args *x,
			 const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	(void)c;
	return pd_admin_flow_runs(&a->db, &x->f, fmt, out, e);
}

/* flow signal RUN NAME [PAYLOAD]: PAYLOAD "-" is read from stdin. */
static int cmd_flow_signal(struct pd_app *a, const struct command *c, struct args *x,
			   const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	struct pd_buf in = PD_BUF_INIT;
	const char *payload = x->argc > 2 ? x->argv[2] : NULL, *where = "PAYLOAD";
	long long id;
	int rc = one_id(c, x, &id, e);

	if (rc == 0 && payload && strcmp(payload, "-") == 0) {
		rc = pd_enqueue_read(0, &in, e);
		payload = pd_buf_str(&in);
		where = "stdin";
	}
	if (rc == 0)
		rc = pd_admin_flow_signal(&a->db, id, x->argv[1], payload, where, fmt, out, e);
	pd_buf_release(&in);
	return rc;
}

static int cmd_lease_check(struct pd_app *a, const struct command *c, struct args *x,
			   const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	const char *id_s = getenv("PD_JOB_ID"), *token_s = getenv("PD_LEASE_TOKEN");
	long long id, token;
	int held;

	(void)c;
	(void)x;
	if (id_s == NULL || token_s == NULL)
		return pd_errf(e, PD_EX_USAGE,
			       "PD_JOB_ID and PD_LEASE_TOKEN are not set: run this "
			       "from a handler started by pd-worker");
	if (pd_admin_parse_id(id_s, "job", &id, e) < 0 ||
	    pd_admin_parse_id(token_s, "lease token", &token, e) < 0)
		return -1;
	held = pd_jobs_lease_held(&a->db, id, token, e);
	if (held < 0)
		return -1;
	if (!held)
		return pd_errf(e, PD_EX_CONFLICT,
			       "lease lost: job %lld is no longer held under token %lld", id,
			       token);
	if (fmt->json)
		pd_buf_printf(out, "{\"job\":%lld,\"lease_token\":%lld,\"held\":true}\n", id,
			      token);
	return 0;
}

static volatile sig_atomic_t top_quit, top_resized;

static void top_signal(int sig)
{
	if (sig == SIGWINCH)
		top_resized = 1;
	else
		top_quit = 1;
}

/*
 * top on a terminal: the alternate screen, raw keys from stdin when it is a
 * terminal, a frame every interval; q, Ctrl-C, SIGTERM or SIGHUP restore the
 * terminal and return.
 */
static int top_loop(struct pd_app *a, const struct pd_top_opts *o, struct pd_err *e)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
	struct sigaction sa, old[4];
	struct pd_tty tty;
	struct pd_buf frame = PD_BUF_INIT, screen = PD_BUF_INIT;
	int rc = 0, keys;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = top_signal; /* no SA_RESTART: poll() returns on a signal */
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
	keys = pd_tty_raw(&tty, STDIN_FILENO) == 0;
	fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, hide the cursor */
	while (!top_quit) {
		struct winsize ws = {0};
		long long deadline = pd_now_ms() + o->interval_ms;

		pd_buf_reset(&frame);
		pd_buf_reset(&screen);
		if (pd_top_frame(&a->db, o, &frame, e) < 0) {
			rc = -1;
			break;
		}
		ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
		pd_buf_puts(&screen, "\033[H");
		pd_top_clip(pd_buf_str(&frame), ws.ws_col, ws.ws_row, 1, &screen);
		pd_buf_puts(&screen, "\033[J");
		/* the last line's newline would scroll a full screen */
		if (screen.len > 4 && ws.ws_row > 0)
			screen.data[screen.len - 4] = ' ';
		fputs(pd_buf_str(&screen), stdout);
		fflush(stdout);
		top_resized = 0;
		while (!top_quit && !top_resized) {
			struct pollfd p = {STDIN_FILENO, POLLIN, 0};
			long long left = deadline - pd_now_ms();
			char key;

			if (left <= 0)
				break;
			if (poll(&p, keys ? 1 : 0, (int)left) <= 0)
				continue; /* timeout, or a signal */
			if (read(STDIN_FILENO, &key, 1) != 1) {
				keys = 0; /* stdin closed: keep drawing until a signal */
				continue;
			}
			if (key == 'q' || key == 'Q' || key == 3)
				top_quit = 1;
			else if (key == ' ' || key == 'r')
				break; /* redraw now */
		}
	}
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	pd_tty_restore(&tty);
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	pd_buf_release(&frame);
	pd_buf_release(&screen);
	return rc;
}

static int cmd_top(struct pd_app *a, const struct command *c, struct args *x,
		   const struct pd_admin_fmt *fmt, struct pd_buf *out, struct pd_err *e)
{
	struct pd_top_opts o = {x->stale_ms, x->interval_ms, 10, fmt->color};

	(void)c;
	if (fmt->json) /* what top shows, for a script: the queue summary */
		return pd_admin_queues(&a->db, fmt, out, e);
	if (x->once || !isatty(STDOUT_FILENO)) {
		o.interval_ms = 0;
		return pd_top_frame(&a->db, &o, out, e);
	}
	return top_loop(a, &o, e);
}

static int cmd_migrate(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	static const struct option opts[] = {
	    {"status", no_argument, NULL, 's'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const struct command *self = &commands[0];
	int status = 0, ch, applied = 0;

	while ((ch = pd_cli_getopt(argc, argv, "+:h", opts)) != -1) {
		switch (ch) {
		case 's':
			status = 1;
			break;
		case 'j':
			a->json = 1;
			break;
		case 'h':
			printf(
			    "usage: pd-admin %s\n\nApply the pending schema migrations in order, "
			    "each in its own transaction.\n  --status  list applied and pending "
			    "migrations instead\n",
			    self->usage);
			return 0;
		default:
			return pd_cli_bad_option(sub_synopsis(self), ch, argv);
		}
	}
	if (optind < argc)
		return pd_cli_usage(sub_synopsis(self), "unexpected argument '%s'", argv[optind]);
	if (pd_app_connect(a, 0, e) < 0)
		return -1;
	if (status) {
		static const char *names[] = {"version", "name", "state", "applied_at"};
		struct pd_migration_status *st = pd_xcalloc((size_t)pd_nmigrations, sizeof(*st));
		struct pd_table t;

		if (pd_migrate_status(&a->db, st, e) < 0) {
			free(st);
			return -1;
		}
		pd_table_init(&t, 4, names, "nsss");
		for (int i = 0; i < pd_nmigrations; i++) {
			char v[16];
			const char *row[4] = {v, st[i].name,
					      st[i].applied_at[0] ? "applied" : "pending",
					      st[i].applied_at[0] ? st[i].applied_at : NULL};

			snprintf(v, sizeof(v), "%d", st[i].version);
			pd_table_add(&t, row);
		}
		pd_table_print(&t, stdout, a->json);
		pd_table_release(&t);
		free(st);
		return 0;
	}
	if (pd_migrate_apply(&a->db, &applied, e) < 0)
		return -1;
	if (applied)
		printf("applied %d migration%s; schema at version %d\n", applied,
		       applied == 1 ? "" : "s", pd_migrations[pd_nmigrations - 1].version);
	else
		printf("schema up to date at version %d; nothing applied\n",
		       pd_migrations[pd_nmigrations - 1].version);
	return 0;
}

/* "pd-admin job" alone, or "pd-admin job --help": the group's commands. */
static int group_usage(const char *group, const char *bad, int to_stdout)
{
	FILE *f = to_stdout ? stdout : stderr;
	int n = 0;

	if (!to_stdout)
		fprintf(f, "%s: %s %s command%s%s%s\n", pd_progname(), bad ? "unknown" : "missing",
			group, bad ? " '" : "", bad ? bad : "", bad ? "'" : "");
	for (const struct command *c = commands; c->name; c++)
		if (c->group && strcmp(c->group, group) == 0)
			fprintf(f, "%s pd-admin %-33s %s\n", n++ ? "      " : "usage:", c->usage,
				c->summary);
	if (!to_stdout)
		fprintf(f, "Try 'pd-admin --help' for more information.\n");
	return to_stdout ? 0 : PD_EX_USAGE;
}

/* Find the command named by argv[0] (and argv[1] for a group); *used = words taken. */
static const struct command *find(int argc, char **argv, int *used, int *rc)
{
	int group = 0;

	*used = 1;
	for (const struct command *c = commands; c->name; c++) {
		if (c->group == NULL && strcmp(c->name, argv[0]) == 0)
			return c;
		if (c->group && strcmp(c->group, argv[0]) == 0) {
			group = 1;
			if (argc > 1 && strcmp(c->name, argv[1]) == 0) {
				*used = 2;
				return c;
			}
		}
	}
	if (!group) {
		*rc = pd_cli_usage(SYNOPSIS, "unknown command '%s'", argv[0]);
		return NULL;
	}
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		*rc = group_usage(argv[0], NULL, 1);
	else
		*rc = group_usage(argv[0], argc > 1 ? argv[1] : NULL, 0);
	return NULL;
}

/* Parse, connect, run, print: returns the exit status. */
static int run(struct pd_app *a, const struct command *c, int argc, char **argv)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf out = PD_BUF_INIT;
	struct args x;
	struct pd_admin_fmt fmt;
	int rc;

	memset(&x, 0, sizeof(x));
	rc = parse(a, c, argc, argv, &x, &e);
	if (rc == 1)
		return 0;
	if (rc < 0 && e.msg[0] == '\0')
		return e.code; /* already reported */
	if (rc == 0 && c->fn == cmd_dlq_purge && !x.older_set)
		rc = pd_errf(&e, PD_EX_USAGE, "missing --older-than DURATION");
	if (rc < 0 && e.code == PD_EX_USAGE)
		return pd_cli_usage(sub_synopsis(c), "%s", e.msg);
	if (rc < 0) {
		pd_die_msg(e.msg);
		return e.code;
	}
	fmt.json = a->json;
	fmt.color = !a->json && pd_cli_color(stdout);
	rc = pd_app_connect(a, 1, &e);
	if (rc == 0)
		rc = c->fn(a, c, &x, &fmt, &out, &e);
	fwrite(pd_buf_str(&out), 1, out.len, stdout);
	pd_buf_release(&out);
	if (rc == 0)
		return 0;
	fflush(stdout);
	if (e.code == PD_EX_USAGE)
		return pd_cli_usage(sub_synopsis(c), "%s", e.msg);
	pd_die_msg(e.msg);
	return e.code ? e.code : PD_EX_SOFTWARE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"database", required_argument, NULL, 'd'},
	    {"json", no_argument, NULL, 'j'},
	    {"quiet", no_argument, NULL, PD_APP_OPT_QUIET},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct pd_err e = PD_ERR_INIT;
	struct pd_app a;
	const struct command *c;
	int ch, rc = 0, used;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	while ((ch = pd_cli_getopt(argc, argv, "+:c:d:vhV", opts)) != -1) {
		switch (ch) {
		case 'c':
			a.config_path = optarg;
			break;
		case 'd':
			a.database = optarg;
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
	if (optind >= argc)
		return pd_cli_usage(SYNOPSIS, "missing command");
	c = find(argc - optind, argv + optind, &used, &rc);
	if (c == NULL)
		return rc ? rc : pd_cli_finish_stdout();
	if (pd_app_load(&a, &e) < 0) {
		pd_die_msg(e.msg);
		pd_app_release(&a);
		return e.code;
	}
	argc -= optind + used - 1;
	argv += optind + used - 1;
	optind = 0; /* re-initialise getopt for the subcommand */
	if (c->fn == NULL) {
		rc = cmd_migrate(&a, argc, argv, &e);
		if (rc < 0 && e.msg[0])
			pd_die_msg(e.msg);
		if (rc < 0)
			rc = e.code;
	} else {
		rc = run(&a, c, argc, argv);
	}
	pd_app_release(&a);
	if (pd_cli_finish_stdout() && rc == 0)
		rc = PD_EX_SOFTWARE;
	return rc;
}
