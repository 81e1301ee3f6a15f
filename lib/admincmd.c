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
#include "admincmd.h"
#include "job.h"
#include "cli.h"
#include "clock.h"
#include "dur.h"
#include "enqueue.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "migrate.h"
#include "prune.h"
#include "summary.h"
#include "text.h"
#include "top.h"

#define DEFAULT_STALE_MS (-1) /* each worker's own lease */

/* What a subcommand's options parse into (k->x). */
struct args {
	struct pd_admin_filter f;
	const char *reason, *state;
	long long older_ms, stale_ms, interval_ms;
	int older_set, dry_run, once, runnable, with_dependents, status;
	struct pd_admin_limit lim; /* limit set */
	long long weight;	   /* tenant set: 1..1000, 0 the default */
	int weight_set;
	const char *pause_type; /* queue pause/resume --type */
	long long timeout_ms;	/* wait --timeout; -1: none */
};

const size_t pd_admincmd_xsize = sizeof(struct args);

#define X(k)  ((struct args *)(k)->x)
#define DB(k) (&(k)->a->db)

const struct pd_subopt pd_admincmd_opts[PD_ADMIN_NOPTS] = {
    [O_STATE] = {"state", 0, "STATE", "only those in STATE (listings: repeatable, or A,B)"},
    [O_TENANT] = {"tenant", 0, "TENANT", "only those of TENANT"},
    [O_TYPE] = {"type", 0, "TYPE", "only jobs of type TYPE"},
    [O_QUEUE] = {"queue", 0, "QUEUE", "only jobs of QUEUE"},
    [O_TOPIC] = {"topic", 0, "TOPIC", "only outbox messages of TOPIC"},
    [O_WORKFLOW] = {"workflow", 0, "NAME", "only runs of workflow NAME"},
    [O_LIMIT] = {"limit", 0, "N", NULL}, /* help from the command's limits */
    [O_OFFSET] = {"offset", 0, "N", "skip the first N (paging)"},
    [O_REASON] = {"reason", 0, "TEXT", "why: kept as dead_reason and last_error"},
    [O_OLDER] = {"older-than", 0, "DURATION", "dead letters that died more than DURATION ago"},
    [O_DRY] = {"dry-run", 0, NULL, "count them, delete nothing"},
    [O_STALE] = {"stale", 0, "DURATION",
		 "a worker not seen for DURATION is gone (default: its lease)"},
    [O_INTERVAL] = {"interval", 0, "DURATION", "time between frames (default 1s)"},
    [O_ONCE] = {"once", 0, NULL, "print one frame and exit (so does a non-terminal)"},
    [O_RUNNABLE] = {"runnable", 0, NULL, "only PENDING jobs whose run_at has come"},
    [O_JSON] = {"json", 0, NULL, "one JSON object a line (as the global --json)"},
    [O_WITH_DEPS] = {"with-dependents", 0, NULL,
		     "the jobs its failure failed go back to BLOCKED too"},
    [O_STATUS] = {"status", 0, NULL, "list applied and pending migrations instead"},
    [O_CONCURRENCY] = {"concurrency", 0, "N|none", "at most N of its jobs running at once"},
    [O_RATE] = {"rate", 0, "N/PERIOD|none",
		"at most N of its jobs started per PERIOD (100/1m; PERIOD up to 1d)"},
    [O_WEIGHT] = {"weight", 0, "N|default", "its share of the claims, 1-1000 (default 1)"},
    [O_PAUSE_TYPE] = {"type", 0, "TYPE", "the job type TYPE (in every queue) instead of a queue",
		      "pause-type"},
    [O_TIMEOUT] = {"timeout", 0, "DURATION", "give up after DURATION: exit 124"},
};

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
			char shown[PD_TEXT_SHOW_MAX + 4];

			for (int i = 0; names[i]; i++)
				pd_buf_printf(&b, "%s%s",
					      i == 0	     ? ""
					      : names[i + 1] ? ", "
							     : " or ",
					      names[i]);
			rc = pd_errf(e, PD_EX_USAGE, "option --state: unknown %sstate '%s' (%s)",
				     what, pd_text_show(shown, sizeof shown, s, strlen(s)), b.data);
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

	if (pd_name_check("name", v, &ne) < 0)
		return pd_errf(e, ne.code, "option --%s: %s", pd_admincmd_opts[ch].name, ne.msg);
	*to = v;
	return 0;
}

void pd_admincmd_init(struct pd_subcall *k)
{
	struct args *x = k->x;

	x->f.limit = k->cmd->count_def;
	x->stale_ms = DEFAULT_STALE_MS;
	x->interval_ms = 1000;
	x->timeout_ms = -1;
}

int pd_admincmd_set(struct pd_subcall *k, int opt, const char *v, struct pd_err *e)
{
	const struct pd_subcmd *c = k->cmd;
	struct args *x = k->x;
	int rc = 0;

	switch (opt) {
	case O_STATE:
		if (c->fn == pd_admincmd_outbox_list)
			rc = add_states(&x->f, v, pd_outbox_states, "outbox ", e);
		else if (c->fn == pd_admincmd_flow_runs)
			rc = add_states(&x->f, v, pd_run_states, "run ", e);
		else
			rc = add_states(&x->f, v, pd_job_states, "", e);
		if (rc == 0 && c->fn == pd_admincmd_depth && x->f.nstates > 1)
			rc = pd_errf(e, PD_EX_USAGE, "option --state: one state only");
		x->state = x->f.states[0];
		return rc;
	case O_TENANT:
	case O_TYPE:
	case O_QUEUE:
	case O_TOPIC:
	case O_WORKFLOW:
		return filter_name(&x->f, opt, v, e);
	case O_LIMIT:
		return pd_cli_int("--limit", v, 1, c->count_max, &x->f.limit, e);
	case O_OFFSET:
		return pd_cli_int("--offset", v, 0, 1LL << 53, &x->f.offset, e);
	case O_REASON:
		x->reason = v;
		return 0;
	case O_OLDER:
		x->older_set = 1;
		return pd_cli_dur("--older-than", v, &x->older_ms, e);
	case O_DRY:
		x->dry_run = 1;
		return 0;
	case O_STALE:
		return pd_cli_dur("--stale", v, &x->stale_ms, e);
	case O_INTERVAL:
		rc = pd_cli_dur("--interval", v, &x->interval_ms, e);
		if (rc == 0 && x->interval_ms < 100)
			rc = pd_errf(e, PD_EX_USAGE, "option --interval: at least 100ms");
		return rc;
	case O_ONCE:
		x->once = 1;
		return 0;
	case O_RUNNABLE:
		x->runnable = 1;
		return 0;
	case O_WITH_DEPS:
		x->with_dependents = 1;
		return 0;
	case O_STATUS:
		x->status = 1;
		return 0;
	case O_CONCURRENCY:
		x->lim.concurrency_set = 1;
		x->lim.concurrency = -1;
		if (strcmp(v, "none") == 0)
			return 0;
		return pd_cli_int("--concurrency", v, 0, 1000000, &x->lim.concurrency, e);
	case O_RATE:
		x->lim.rate_set = 1;
		x->lim.rate = 0;
		if (strcmp(v, "none") == 0)
			return 0;
		return pd_admin_parse_rate("--rate", v, &x->lim.rate, &x->lim.period_ms, e);
	case O_WEIGHT:
		x->weight_set = 1;
		x->weight = 0;
		if (strcmp(v, "default") == 0)
			return 0;
		return pd_cli_int("--weight", v, 1, 1000, &x->weight, e);
	case O_PAUSE_TYPE:
		x->pause_type = v;
		return pd_cli_name("--type", v, e);
	case O_TIMEOUT:
		return pd_cli_dur("--timeout", v, &x->timeout_ms, e);
	}
	return 0;
}

/* An operand that is a name: not empty (64), valid as pd_name_check says (65). */
static int operand_name(const char *what, const char *v, struct pd_err *e)
{
	if (v[0] == '\0')
		return pd_errf(e, PD_EX_USAGE, "%s must not be empty", what);
	return pd_name_check(what, v, e);
}

int pd_admincmd_check(struct pd_subcall *k, struct pd_err *e)
{
	const struct args *x = k->x;

	if (k->cmd->fn == pd_admincmd_depth && k->argv[0][0] == '\0')
		return pd_errf(e, PD_EX_USAGE, "QUEUE must not be empty");
	if (k->cmd->fn == pd_admincmd_depth)
		return pd_name_check("QUEUE", k->argv[0], e);
	if (k->cmd->fn == pd_admincmd_flow_signal && k->argc < 2)
		return pd_errf(e, PD_EX_USAGE, "missing signal NAME");
	if (k->cmd->fn == pd_admincmd_flow_signal)
		return pd_name_check("signal NAME", k->argv[1], e);
	if ((k->cmd->fn == pd_admincmd_dlq_purge || k->cmd->fn == pd_admincmd_outbox_purge) &&
	    !x->older_set)
		return pd_errf(e, PD_EX_USAGE, "missing --older-than DURATION");
	if (k->cmd->fn == pd_admincmd_limit) {
		if (pd_admin_limit_key_check(k->argv[0], e) < 0)
			return -1;
		if (strcmp(k->cmd->name, "set") == 0 && !x->lim.concurrency_set && !x->lim.rate_set)
			return pd_errf(e, PD_EX_USAGE, "missing --concurrency or --rate");
		return 0;
	}
	if (k->cmd->fn == pd_admincmd_queue_pause) {
		if (k->argc > 0 && x->pause_type)
			return pd_errf(e, PD_EX_USAGE, "give QUEUE or --type TYPE, not both");
		if (k->argc == 0 && !x->pause_type)
			return pd_errf(e, PD_EX_USAGE, "missing QUEUE (or --type TYPE)");
		return k->argc > 0 ? operand_name("QUEUE", k->argv[0], e) : 0;
	}
	if (k->cmd->fn == pd_admincmd_tenant && strcmp(k->cmd->name, "set") == 0) {
		if (operand_name("TENANT", k->argv[0], e) < 0)
			return -1;
		if (!x->weight_set)
			return pd_errf(e, PD_EX_USAGE, "missing --weight N");
	}
	return 0;
}

/* The job or message ids among the positional arguments (malloc'd), at most its count_max. */
static int parse_ids(const struct pd_subcall *k, long long **ids, struct pd_err *e)
{
	const char *what =
	    k->cmd->group && strcmp(k->cmd->group, "outbox") == 0 ? "message" : "job";

	if (k->argc > k->cmd->count_max)
		return pd_errf(e, PD_EX_USAGE, "%d ids: at most %lld in one call", k->argc,
			       k->cmd->count_max);
	*ids = pd_xcalloc((size_t)k->argc + 1, sizeof(**ids));
	for (int i = 0; i < k->argc; i++)
		if (pd_admin_parse_id(k->argv[i], what, &(*ids)[i], e) < 0)
			return -1;
	return 0;
}

/* The id that is the first positional argument: a run's for a flow command, else a job's. */
static int one_id(const struct pd_subcall *k, long long *id, struct pd_err *e)
{
	const struct pd_subcmd *c = k->cmd;

	return pd_admin_parse_id(k->argv[0], strcmp(c->group, "flow") == 0 ? "run" : "job", id, e);
}

/* The commands on one job or run id: job show, replay and cancel; flow show and cancel. */
int pd_admincmd_on_id(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	const struct pd_subcmd *c = k->cmd;
	struct args *x = k->x;
	const struct pd_fmt *fmt = &k->fmt;
	struct pd_buf *out = &k->out;
	int flow = strcmp(c->group, "flow") == 0;
	long long id;

	if (one_id(k, &id, e) < 0)
		return -1;
	if (strcmp(c->name, "show") == 0)
		return (flow ? pd_admin_flow_show : pd_admin_job_show)(&a->db, id, fmt, out, e);
	if (strcmp(c->name, "cancel") == 0)
		return (flow ? pd_admin_flow_cancel : pd_admin_job_cancel)(&a->db, id, x->reason,
									   fmt, out, e);
	return pd_admin_job_replay(&a->db, id, x->with_dependents, fmt, out, e);
}

int pd_admincmd_jobs(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_jobs(DB(k), &X(k)->f, &k->fmt, &k->out, e);
}

int pd_admincmd_dlq_list(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_dlq_list(DB(k), &X(k)->f, &k->fmt, &k->out, e);
}

/* The commands on a list of ids: dlq replay and delete, outbox replay and delete. */
int pd_admincmd_on_ids(struct pd_subcall *k, struct pd_err *e)
{
	long long *ids = NULL;
	int rc = parse_ids(k, &ids, e);
	int outbox = strcmp(k->cmd->group, "outbox") == 0;

	if (rc == 0 && outbox && strcmp(k->cmd->name, "delete") == 0)
		rc = pd_admin_outbox_delete(DB(k), ids, k->argc, &k->fmt, &k->out, e);
	else if (rc == 0 && outbox)
		rc = pd_admin_outbox_replay(DB(k), ids, k->argc, &k->fmt, &k->out, e);
	else if (rc == 0 && strcmp(k->cmd->name, "delete") == 0)
		rc = pd_admin_dlq_delete(DB(k), ids, k->argc, &k->fmt, &k->out, e);
	else if (rc == 0)
		rc = pd_admin_dlq_replay(DB(k), ids, k->argc, &X(k)->f, &k->fmt, &k->out, e);
	free(ids);
	return rc;
}

int pd_admincmd_dlq_purge(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_dlq_purge(DB(k), X(k)->older_ms, X(k)->f.queue, X(k)->dry_run, &k->fmt,
				  &k->out, e);
}

/* Progress of a long prune on a terminal: one line, redrawn. */
static void prune_progress(void *arg, enum pd_prune_kind k, const struct pd_prune_report *rep)
{
	(void)arg;
	fprintf(stderr, "\rpd-admin: prune: %s: %lld rows in %lld batches", pd_prune_kinds[k],
		rep->rows[k], rep->batches[k]);
}

int pd_admincmd_prune(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	struct args *x = k->x;
	const struct pd_fmt *fmt = &k->fmt;
	struct pd_buf *out = &k->out;
	static const struct pd_col cols[] = {
	    {"kind", NULL, 's', 'b'},	 {"retention", NULL, 's', 'b'}, {"rows", NULL, 'n', 'b'},
	    {"batches", NULL, 'n', 'b'}, {"dry_run", NULL, 'b', 'j'},
	};
	struct pd_prune_opts o = {.batch = 5000, .dry_run = x->dry_run};
	struct pd_prune_report rep;
	char cell[PD_PRUNE_NKINDS][3][PD_DUR_MAX];
	const char *cells[PD_PRUNE_NKINDS * 5];
	long long total = 0;
	int rc;

	if (isatty(STDERR_FILENO) && !x->dry_run)
		o.progress = prune_progress;
	rc = pd_prune(&a->db, &a->cfg.retention, &o, &rep, e);
	if (o.progress && (rep.batches[0] || rep.batches[1] || rep.batches[2] || rep.batches[3] ||
			   rep.batches[4]))
		fputc('\n', stderr);
	for (int i = 0; i < PD_PRUNE_NKINDS; i++) {
		long long w = pd_prune_window(&a->cfg.retention, (enum pd_prune_kind)i);

		if (w == PD_RETAIN_FOREVER)
			snprintf(cell[i][0], PD_DUR_MAX, "forever");
		else
			pd_dur_format(w, cell[i][0], PD_DUR_MAX);
		snprintf(cell[i][1], PD_DUR_MAX, "%lld", rep.rows[i]);
		snprintf(cell[i][2], PD_DUR_MAX, "%lld", rep.batches[i]);
		cells[5 * i] = pd_prune_kinds[i];
		cells[5 * i + 1] = cell[i][0];
		cells[5 * i + 2] = cell[i][1];
		cells[5 * i + 3] = cell[i][2];
		cells[5 * i + 4] = x->dry_run ? "t" : "f";
		total += rep.rows[i];
	}
	pd_render(cols, 5, cells, PD_PRUNE_NKINDS, fmt, out);
	if (!fmt->json)
		pd_buf_printf(out, "%s %lld row%s\n", x->dry_run ? "would prune" : "pruned", total,
			      total == 1 ? "" : "s");
	return rc;
}

int pd_admincmd_queues(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_queues(DB(k), &k->fmt, &k->out, e);
}

int pd_admincmd_depth(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_depth(DB(k), k->argv[0], X(k)->state, X(k)->runnable, &k->fmt, &k->out, e);
}

int pd_admincmd_workers(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_workers(DB(k), X(k)->stale_ms, &k->fmt, &k->out, e);
}

int pd_admincmd_leaders(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_leaders(DB(k), &k->fmt, &k->out, e);
}

int pd_admincmd_metrics(struct pd_subcall *k, struct pd_err *e)
{
	return pd_metrics_collect(DB(k), X(k)->stale_ms, k->fmt.json, &k->out, e);
}

int pd_admincmd_outbox_stats(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_outbox_stats(DB(k), &k->fmt, &k->out, e);
}

int pd_admincmd_outbox_list(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_outbox_list(DB(k), &X(k)->f, &k->fmt, &k->out, e);
}

int pd_admincmd_outbox_purge(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_outbox_purge(DB(k), X(k)->older_ms, X(k)->f.topic, X(k)->dry_run, &k->fmt,
				     &k->out, e);
}

int pd_admincmd_flow_runs(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_flow_runs(DB(k), &X(k)->f, &k->fmt, &k->out, e);
}

/* flow signal RUN NAME [PAYLOAD]: PAYLOAD "-" is read from stdin; at most max_payload bytes. */
int pd_admincmd_flow_signal(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	const struct pd_fmt *fmt = &k->fmt;
	struct pd_buf *out = &k->out;
	struct pd_buf in = PD_BUF_INIT;
	const char *payload = k->argc > 2 ? k->argv[2] : NULL, *where = "PAYLOAD";
	long long id;
	int rc = one_id(k, &id, e);

	if (rc == 0 && payload && strcmp(payload, "-") == 0) {
		rc = pd_enqueue_read(0, &in, a->cfg.max_payload, e);
		payload = pd_buf_str(&in);
		where = "stdin";
	} else if (rc == 0 && payload) {
		rc = pd_enqueue_check_size(strlen(payload), a->cfg.max_payload, where, e);
	}
	if (rc == 0)
		rc = pd_admin_flow_signal(&a->db, id, k->argv[1], payload, where, fmt, out, e);
	pd_buf_release(&in);
	return rc;
}

/* lease check's exit status once an operator asked to cancel the job (pd-admin(1)) */
#define LEASE_CANCELLED_EXIT 3

/*
 * Ask the worker that runs this handler, through the channel it gave it
 * (PD_WORKER_FD, lib/pool): 1 held, 2 held with a cancel asked, 0 lost, -1
 * with e (69: no answer).
 */
static int lease_ask_worker(const char *fd_s, long long id, long long token, struct pd_err *e)
{
	char req[80], ans[64];
	size_t got = 0;
	char *end;
	long fd = strtol(fd_s, &end, 10);
	int n;

	if (*end != '\0' || fd < 0 || fd > 65535)
		return pd_errf(e, PD_EX_USAGE, "PD_WORKER_FD: '%s' is not a descriptor", fd_s);
	n = snprintf(req, sizeof(req), "lease %lld %lld\n", id, token);
	if (write((int)fd, req, (size_t)n) != n)
		return pd_errf(e, PD_EX_UNAVAILABLE, "cannot ask the worker (PD_WORKER_FD=%s): %s",
			       fd_s, strerror(errno));
	/* one line back; a byte at a time, for it is the only answer */
	while (got < sizeof(ans) - 1) {
		ssize_t r = read((int)fd, ans + got, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return pd_errf(e, PD_EX_UNAVAILABLE,
				       "the worker did not answer (PD_WORKER_FD=%s): %s", fd_s,
				       r == 0 ? "it closed the channel" : strerror(errno));
		if (ans[got] == '\n')
			break;
		got++;
	}
	ans[got] = '\0';
	if (strcmp(ans, "held") == 0)
		return 1;
	if (strcmp(ans, "lost") == 0)
		return 0;
	if (strcmp(ans, "cancelled") == 0)
		return 2;
	if (strcmp(ans, "unavailable") == 0)
		return pd_errf(e, PD_EX_UNAVAILABLE,
			       "the worker cannot reach the database to check the lease");
	return pd_errf(e, PD_EX_SOFTWARE, "the worker answered '%s'", ans);
}

int pd_admincmd_lease_check(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	const struct pd_fmt *fmt = &k->fmt;
	struct pd_buf *out = &k->out;
	const char *id_s = getenv("PD_JOB_ID"), *token_s = getenv("PD_LEASE_TOKEN");
	const char *fd_s = getenv("PD_WORKER_FD");
	long long id, token;
	int held;

	if (id_s == NULL || token_s == NULL)
		return pd_errf(e, PD_EX_USAGE,
			       "PD_JOB_ID and PD_LEASE_TOKEN are not set: run this "
			       "from a handler started by pd-worker");
	if (pd_admin_parse_id(id_s, "job", &id, e) < 0 ||
	    pd_admin_parse_id(token_s, "lease token", &token, e) < 0)
		return -1;
	/* Through the worker (no credential needed), else on a connection of our own. */
	if (fd_s && *fd_s)
		held = lease_ask_worker(fd_s, id, token, e);
	else
		held = pd_app_connect(a, 1, e) < 0 ? -1 : pd_jobs_lease_held(&a->db, id, token, e);
	if (held < 0)
		return -1;
	if (!held)
		return pd_errf(e, PD_EX_CONFLICT,
			       "lease lost: job %lld is no longer held under token %lld", id,
			       token);
	if (fmt->json)
		pd_buf_printf(
		    out, "{\"job\":%lld,\"lease_token\":%lld,\"held\":true,\"cancelled\":%s}\n", id,
		    token, held == 2 ? "true" : "false");
	else if (held == 2)
		pd_buf_puts(out, "cancelled\n");
	if (held == 2) {
		e->code = LEASE_CANCELLED_EXIT; /* said on stdout: no message */
		return -1;
	}
	return 0;
}

/* tenant grant ROLE TENANT, tenant revoke ROLE TENANT, tenant list [ROLE], tenant set TENANT. */
int pd_admincmd_tenant(struct pd_subcall *k, struct pd_err *e)
{
	const char *name = k->cmd->name;

	if (strcmp(name, "set") == 0)
		return pd_admin_tenant_weight(DB(k), k->argv[0], (int)X(k)->weight, &k->fmt,
					      &k->out, e);
	if (strcmp(name, "list") == 0)
		return pd_admin_tenant_list(DB(k), k->argc > 0 ? k->argv[0] : NULL, &k->fmt,
					    &k->out, e);
	if (strcmp(name, "grant") == 0)
		return pd_admin_tenant_grant(DB(k), k->argv[0], k->argv[1], &k->fmt, &k->out, e);
	return pd_admin_tenant_revoke(DB(k), k->argv[0], k->argv[1], &k->fmt, &k->out, e);
}

int pd_admincmd_tenants(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_tenants(DB(k), &k->fmt, &k->out, e);
}

/* limit set KEY [--concurrency N|none] [--rate N/PERIOD|none], limit unset KEY. */
int pd_admincmd_limit(struct pd_subcall *k, struct pd_err *e)
{
	if (strcmp(k->cmd->name, "unset") == 0)
		return pd_admin_limit_unset(DB(k), k->argv[0], &k->fmt, &k->out, e);
	return pd_admin_limit_set(DB(k), k->argv[0], &X(k)->lim, &k->fmt, &k->out, e);
}

int pd_admincmd_limits(struct pd_subcall *k, struct pd_err *e)
{
	return pd_admin_limits(DB(k), &k->fmt, &k->out, e);
}

/* queue pause|resume QUEUE, queue pause|resume --type TYPE. */
int pd_admincmd_queue_pause(struct pd_subcall *k, struct pd_err *e)
{
	const char *type = X(k)->pause_type;

	return pd_admin_pause(DB(k), type ? "type" : "queue", type ? type : k->argv[0],
			      strcmp(k->cmd->name, "pause") == 0, &k->fmt, &k->out, e);
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
static int top_loop(struct pd_app *a, struct pd_top_opts *o, struct pd_err *e)
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
		ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
		o->width = ws.ws_col;
		if (pd_top_frame(&a->db, o, &frame, e) < 0) {
			rc = -1;
			break;
		}
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

int pd_admincmd_top(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	struct args *x = k->x;
	const struct pd_fmt *fmt = &k->fmt;
	struct pd_buf *out = &k->out;
	struct pd_top_opts o = {x->stale_ms, x->interval_ms, 10, fmt->color};
	struct pd_buf frame = PD_BUF_INIT;

	if (fmt->json) /* what top shows, for a script: the queue summary */
		return pd_admin_queues(&a->db, fmt, out, e);
	if (x->once || !isatty(STDOUT_FILENO)) {
		struct winsize ws = {0};
		const char *cols = getenv("COLUMNS");

		/* a terminal's width, else $COLUMNS (as ls(1)), else no limit */
		if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
			o.width = ws.ws_col;
		else if (cols && atoi(cols) > 0)
			o.width = atoi(cols);
		o.interval_ms = 0;
		if (o.width == 0)
			return pd_top_frame(&a->db, &o, out, e);
		if (pd_top_frame(&a->db, &o, &frame, e) < 0) {
			pd_buf_release(&frame);
			return -1;
		}
		pd_top_clip(pd_buf_str(&frame), o.width, 0, 0, out);
		pd_buf_release(&frame);
		return 0;
	}
	return top_loop(a, &o, e);
}

int pd_admincmd_migrate(struct pd_subcall *k, struct pd_err *e)
{
	const struct args *x = k->x;
	struct pd_app *a = k->a;
	int applied = 0;

	if (x->status) {
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

/* wait's progress on stderr: redrawn on a terminal, else a line each time it changes. */
static void wait_progress(int tty, long long left, long long of)
{
	if (tty)
		fprintf(stderr, "\rpd-admin: waiting for %lld of %lld job%s\033[K", left, of,
			of == 1 ? "" : "s");
	else
		fprintf(stderr, "pd-admin: waiting for %lld of %lld job%s\n", left, of,
			of == 1 ? "" : "s");
}

/*
 * wait [--type T] [--queue Q] [--tenant T] [ID...] [--timeout D]: until
 * every matching job has ended, reading at most about once a second
 * (sooner when a job named by id ends: pd_enqueue_await); then one full
 * count for the verdict: 0 all succeeded, 1 some dead-lettered or
 * cancelled, 124 at the timeout.
 */
int pd_admincmd_wait(struct pd_subcall *k, struct pd_err *e)
{
	struct args *x = k->x;
	struct pd_db *db = DB(k);
	struct pd_admin_waited w = {0};
	long long *ids = NULL, start = pd_now_ms(), last = 0, before, shown_left = -1,
		  shown_of = -1;
	long long stop = x->timeout_ms >= 0 ? start + x->timeout_ms : -1;
	int tty = isatty(STDERR_FILENO), quiet = k->a->verbosity < 0, timed_out = 0, rc;
	static const char *const done[] = {"pendulum_done", NULL};
	struct pd_db ls = PD_DB_INIT, *ldb = NULL; /* where LISTEN runs: pd_db_listener */

	if ((rc = parse_ids(k, &ids, e)) < 0 || (rc = pd_db_listener(db, &ls, done, &ldb, e)) < 0 ||
	    (rc = pd_admin_wait_mark(db, ids, k->argc, e)) < 0 ||
	    (rc = pd_admin_wait_count(db, ids, k->argc, &x->f, 1, &w, e)) < 0)
		goto out;
	before = w.jobs - w.unfinished; /* ended before the wait began */
	for (;;) {
		long long until, of;

		if (w.unfinished == 0) { /* the verdict, and new jobs that may have come */
			if ((rc = pd_admin_wait_count(db, ids, k->argc, &x->f, 1, &w, e)) < 0)
				goto out;
			if (w.unfinished == 0)
				break;
			before = w.jobs - w.unfinished;
		}
		of = before + w.finished_since + w.unfinished;
		if (!quiet && (w.unfinished != shown_left || of != shown_of))
			wait_progress(tty, w.unfinished, of);
		shown_left = w.unfinished;
		shown_of = of;
		last = pd_now_ms();
		if (stop >= 0 && last >= stop) {
			timed_out = 1;
			break;
		}
		/* a job named ended: read again, but not sooner than 250 ms after the last */
		until = stop >= 0 && stop < last + 1000 ? stop : last + 1000;
		rc = pd_enqueue_await(ldb, ids, k->argc, until, e);
		if (rc > 0 && pd_now_ms() < last + 250)
			rc = pd_enqueue_await(ldb, NULL, 0, last + 250, e);
		if (rc < 0 || (rc = pd_admin_wait_count(db, ids, k->argc, &x->f, 0, &w, e)) < 0)
			goto out;
	}
	if (!quiet && tty && shown_left >= 0)
		fputc('\n', stderr);
	if (timed_out)
		w.jobs = before + w.finished_since + w.unfinished;
	if (k->fmt.json)
		pd_buf_printf(&k->out,
			      "{\"jobs\":%lld,\"succeeded\":%lld,\"dead_lettered\":%lld,"
			      "\"cancelled\":%lld,\"unfinished\":%lld,\"timed_out\":%s}\n",
			      w.jobs, w.succeeded, w.dead_lettered, w.cancelled, w.unfinished,
			      timed_out ? "true" : "false");
	else if (!timed_out)
		pd_buf_printf(
		    &k->out, "%lld job%s: %lld succeeded, %lld dead-lettered, %lld cancelled\n",
		    w.jobs, w.jobs == 1 ? "" : "s", w.succeeded, w.dead_lettered, w.cancelled);
	if (timed_out) {
		char d[PD_DUR_MAX];

		pd_dur_format(x->timeout_ms, d, sizeof(d));
		rc = pd_errf(e, PD_ENQUEUE_TIMED_OUT,
			     "timed out after %s: %lld of %lld jobs not finished", d, w.unfinished,
			     w.jobs);
	} else if (w.dead_lettered + w.cancelled > 0) {
		rc = pd_errf(
		    e, PD_EX_CONFLICT,
		    "%lld of %lld jobs did not succeed (%lld dead-lettered, %lld cancelled): %s%s",
		    w.dead_lettered + w.cancelled, w.jobs, w.dead_lettered, w.cancelled, w.failed,
		    w.dead_lettered + w.cancelled > 10 ? ", ..." : "");
	}
out:
	pd_db_close(&ls);
	free(ids);
	return rc;
}
