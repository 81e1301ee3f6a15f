/*
 * pd-enqueue: put one job, or many (--ndjson), on a queue, or start a
 * workflow run (--workflow); print their ids. The work is lib/enqueue's and
 * lib/flowdb's; this is the command line around it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cli.h"
#include "dur.h"
#include "enqueue.h"
#include "flowdb.h"
#include "log.h"
#include "text.h"

#define SYNOPSIS                                                                                   \
	"usage: pd-enqueue [-hVv] [-c file] [-d conninfo] [options] TYPE [PAYLOAD]\n"              \
	"       pd-enqueue [options] --ndjson [TYPE]\n"                                            \
	"       pd-enqueue [options] --workflow NAME [INPUT]\n"

#define MAX_AFTER 64

static void help(void)
{
	printf(
	    SYNOPSIS
	    "\nEnqueue a job of type TYPE with a JSON PAYLOAD (default: read from stdin when it\n"
	    "is not a terminal and --no-stdin is not given; {} otherwise) and print its id.\n"
	    "With --workflow, start a run of workflow NAME with the JSON INPUT (read the\n"
	    "same way) and print the run's id.\n\n"
	    "  -t, --tenant TENANT          tenant (default 'default')\n"
	    "  -q, --queue QUEUE            queue (default 'default')\n"
	    "  -p, --priority N             integer, higher first; or high, normal, low\n"
	    "      --run-at INSTANT         not before this ISO 8601 instant\n"
	    "      --delay DURATION         not before now + DURATION (250ms 30s 5m 2h 1d)\n"
	    "      --start-by WHEN          cancel unless started by now+DURATION or INSTANT\n"
	    "  -k, --idempotency-key KEY    one job per KEY and tenant; repeats get its id\n"
	    "      --max-attempts N         attempts before dead-lettering (default 25)\n"
	    "      --timeout DURATION       kill the handler after DURATION\n"
	    "      --at-most-once           never re-run after a lost lease: dead-letter it\n"
	    "      --traceparent TP         W3C trace context (default $TRACEPARENT)\n"
	    "      --key KEY                count against KEY's limits (pd-admin limit set;\n"
	    "                               default: the handler's concurrency_key)\n"
	    "      --after ID               run only after job ID succeeded (repeatable)\n"
	    "      --ndjson                 one job a line on stdin, all or nothing\n"
	    "      --no-stdin               never read stdin (while read loops): payload {}\n"
	    "      --max-payload SIZE       refuse larger payloads (default max_payload)\n"
	    "      --workflow NAME          start a run of workflow NAME instead of a job\n"
	    "      --json                   print the job rows as JSON, not the ids\n"
	    "      --wait                   wait for the job (run) to end, print only its\n"
	    "                               result and exit with the handler's status; a\n"
	    "                               line on stderr per failed attempt and progress\n"
	    "      --print-id               with --wait, the id (--json: row) on stderr first\n"
	    "      --wait-timeout DURATION  with --wait, give up after DURATION: exit 124,\n"
	    "                               the job stays queued\n"
	    "  -c, --config FILE            configuration file\n"
	    "  -d, --database CONNINFO      libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	    "      --database-url-file PATH\n"
	    "                               the conninfo or URI on PATH's first line\n"
	    "  -v, --verbose                log more\n"
	    "      --quiet                  log warnings and errors only (--wait: no line for\n"
	    "                               a failed attempt or progress)\n"
	    "      --log-format FORMAT      logfmt (default) or json, a line each\n"
	    "  -h, --help                   show this help\n"
	    "  -V, --version                show the version\n\n"
	    "Exit status: 0 done, 1 idempotency key of a job that is no run, 2 dependency not\n"
	    "found, 64 usage, 65 bad input (nothing enqueued), 69 database unavailable;\n"
	    "with --wait the handler's status, 124 when --wait-timeout passed.\n"
	    "See pd-enqueue(1).\n");
}

/* The long options without a short one (getopt_long's values). */
enum {
	O_RUN_AT = PD_APP_OPT_OWN,
	O_DELAY,
	O_MAX,
	O_TIMEOUT,
	O_AMO,
	O_TP,
	O_AFTER,
	O_NDJSON,
	O_JSON,
	O_WAIT,
	O_WORKFLOW,
	O_PRINT_ID,
	O_WAIT_TIMEOUT,
	O_MAX_PAYLOAD,
	O_KEY,
	O_START_BY,
	O_NO_STDIN
};

struct opts {
	struct pd_jobspec spec; /* the flags: defaults for every job */
	long long after[MAX_AFTER];
	int ndjson, json, wait, print_id;
	int no_stdin;		   /* --no-stdin: never read stdin */
	long long wait_timeout_ms; /* --wait-timeout; -1: none */
	long long max_payload;	   /* --max-payload; 0: the file's */
	const char *workflow;	   /* --workflow NAME */
};

/* A job's own option into s: 1 taken, 0 not one of them, -1 a bad value (e filled, 64). */
static int job_option(struct opts *o, int ch, const char *arg, struct pd_err *e)
{
	struct pd_jobspec *s = &o->spec;

	switch (ch) {
	case 't':
	case 'q':
	case 'k':
		if (*arg == '\0')
			return pd_errf(e, PD_EX_USAGE, "option -%c: must not be empty", ch);
		*(ch == 't' ? &s->tenant : ch == 'q' ? &s->queue : &s->idempotency_key) = arg;
		return 1;
	case 'p':
		if (pd_priority_parse(arg, &s->priority, e) < 0)
			return e->code = PD_EX_USAGE, -1;
		s->has_priority = 1;
		return 1;
	case O_RUN_AT:
		if (pd_instant_parse(arg, &s->run_at_us, e) < 0)
			return e->code = PD_EX_USAGE, -1;
		s->has_run_at = 1;
		return 1;
	case O_DELAY:
		return pd_cli_dur("--delay", arg, &s->delay_ms, e) < 0 ? -1 : 1;
	case O_MAX:
		return pd_cli_int("--max-attempts", arg, 1, 1000, &s->max_attempts, e) < 0 ? -1 : 1;
	case O_TIMEOUT:
		if (pd_cli_dur("--timeout", arg, &s->timeout_ms, e) < 0)
			return -1;
		if (s->timeout_ms == 0)
			return pd_errf(e, PD_EX_USAGE, "option --timeout: must be positive");
		return 1;
	case O_AMO:
		s->delivery = "at-most-once";
		return 1;
	case O_TP:
		s->traceparent = arg;
		return 1;
	case O_KEY:
		s->concurrency_key = arg;
		return 1;
	case O_START_BY: {
		struct pd_err se = PD_ERR_INIT;

		if (pd_start_by_parse(arg, s, &se) < 0)
			return pd_errf(e, PD_EX_USAGE, "option --start-by: %s", se.msg);
		return 1;
	}
	case O_AFTER:
		if (s->nafter == MAX_AFTER)
			return pd_errf(e, PD_EX_USAGE, "at most %d --after options", MAX_AFTER);
		if (pd_cli_int("--after", arg, 1, __LONG_LONG_MAX__, &o->after[s->nafter], e) < 0)
			return -1;
		s->after = o->after;
		s->nafter++;
		return 1;
	default:
		return 0;
	}
}

/* check_args with --workflow NAME [INPUT]: the job options a run has no use for are errors. */
static int check_workflow(int argc, char **argv, struct opts *o, struct pd_err *e)
{
	const struct pd_jobspec *s = &o->spec;
	const char *bad = o->ndjson	       ? "--ndjson"
			  : s->nafter	       ? "--after"
			  : s->timeout_ms >= 0 ? "--timeout"
			  : s->delivery	       ? "--at-most-once"
			  : s->traceparent     ? "--traceparent"
			  : s->concurrency_key ? "--key"
					       : NULL;

	if (bad)
		return pd_errf(e, PD_EX_USAGE, "--workflow: %s does not apply to a workflow run",
			       bad);
	if (*o->workflow == '\0')
		return pd_errf(e, PD_EX_USAGE, "--workflow: NAME must not be empty");
	if (argc - optind > 1)
		return pd_errf(e, PD_EX_USAGE,
			       "unexpected argument '%s' (--workflow takes INPUT only)",
			       argv[optind + 1]);
	return 0;
}

/* The names the command line gives: code 65 naming the first bad one (pd_name_check). */
static int check_names(const struct opts *o, struct pd_err *e)
{
	const struct pd_jobspec *s = &o->spec;
	const struct {
		const char *what, *v;
	} names[] = {
	    {"TYPE", s->type},
	    {"workflow NAME", o->workflow},
	    {"tenant (-t)", s->tenant},
	    {"queue (-q)", s->queue},
	    {"idempotency key (-k)", s->idempotency_key},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (pd_name_check(names[i].what, names[i].v, e) < 0)
			return -1;
	if (s->type && strcmp(s->type, PD_HOOK_TYPE) == 0)
		return pd_errf(e, PD_EX_DATAERR, "invalid TYPE: %s is reserved for hook jobs",
			       PD_HOOK_TYPE);
	return pd_concurrency_key_check("--key", s->concurrency_key, e);
}

/* The arguments after the options, and the combinations that cannot be. */
static int check_args(int argc, char **argv, struct opts *o, struct pd_err *e)
{
	struct pd_jobspec *s = &o->spec;

	if (o->workflow && check_workflow(argc, argv, o, e) < 0)
		return -1;
	if (s->traceparent == NULL && !o->workflow)
		s->traceparent = getenv("TRACEPARENT");
	if (s->traceparent && *s->traceparent == '\0')
		s->traceparent = NULL;
	if (s->has_run_at && s->delay_ms >= 0)
		return pd_errf(e, PD_EX_USAGE, "--run-at and --delay cannot be combined");
	if (!o->ndjson) { /* an NDJSON line may give its own: checked with the line */
		struct pd_err se = PD_ERR_INIT;

		if (pd_jobspec_check_start_by(s, pd_jobspec_wall_us(), &se) < 0)
			return pd_errf(e, PD_EX_DATAERR, "option --start-by: %s", se.msg);
	}
	if (o->ndjson && o->no_stdin)
		return pd_errf(e, PD_EX_USAGE,
			       "--ndjson reads the jobs from stdin: not with --no-stdin");
	if (!o->wait && (o->print_id || o->wait_timeout_ms >= 0))
		return pd_errf(e, PD_EX_USAGE, "%s applies to --wait only",
			       o->print_id ? "--print-id" : "--wait-timeout");
	if (o->workflow)
		return check_names(o, e);
	if (o->ndjson) {
		if (argc - optind > 1)
			return pd_errf(e, PD_EX_USAGE,
				       "unexpected argument '%s' (with --ndjson the "
				       "jobs come from stdin)",
				       argv[optind + 1]);
		if (o->wait)
			return pd_errf(e, PD_EX_USAGE, "--wait takes a single job, not --ndjson");
		if (s->idempotency_key)
			return pd_errf(e, PD_EX_USAGE,
				       "-k applies to one job; with --ndjson give "
				       "\"idempotency_key\" on each line");
	} else {
		if (argc - optind < 1)
			return pd_errf(e, PD_EX_USAGE, "missing TYPE");
		if (argc - optind > 2)
			return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'",
				       argv[optind + 2]);
	}
	if (argc > optind && *argv[optind] == '\0')
		return pd_errf(e, PD_EX_USAGE, "TYPE must not be empty");
	s->type = argc > optind ? argv[optind] : NULL;
	return check_names(o, e);
}

/* Options into o; returns -1 after printing a usage error, 1 after --help/--version, 0 to go on. */
static int parse_args(int argc, char **argv, struct pd_app *a, struct opts *o, struct pd_err *e)
{
	static const struct option opts[] = {
	    {"tenant", required_argument, NULL, 't'},
	    {"queue", required_argument, NULL, 'q'},
	    {"priority", required_argument, NULL, 'p'},
	    {"run-at", required_argument, NULL, O_RUN_AT},
	    {"delay", required_argument, NULL, O_DELAY},
	    {"idempotency-key", required_argument, NULL, 'k'},
	    {"max-attempts", required_argument, NULL, O_MAX},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"at-most-once", no_argument, NULL, O_AMO},
	    {"traceparent", required_argument, NULL, O_TP},
	    {"key", required_argument, NULL, O_KEY},
	    {"start-by", required_argument, NULL, O_START_BY},
	    {"after", required_argument, NULL, O_AFTER},
	    {"ndjson", no_argument, NULL, O_NDJSON},
	    {"no-stdin", no_argument, NULL, O_NO_STDIN},
	    {"json", no_argument, NULL, O_JSON},
	    {"wait", no_argument, NULL, O_WAIT},
	    {"workflow", required_argument, NULL, O_WORKFLOW},
	    {"print-id", no_argument, NULL, O_PRINT_ID},
	    {"wait-timeout", required_argument, NULL, O_WAIT_TIMEOUT},
	    {"max-payload", required_argument, NULL, O_MAX_PAYLOAD},
	    PD_APP_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	int ch, rc;

	while ((ch = pd_cli_getopt(argc, argv, ":t:q:p:k:c:d:vhV", opts)) != -1) {
		if ((rc = job_option(o, ch, optarg, e)) != 0) {
			if (rc < 0)
				return -1;
		} else if (ch == O_WORKFLOW) {
			o->workflow = optarg;
		} else if (ch == O_WAIT_TIMEOUT) {
			if (pd_cli_dur("--wait-timeout", optarg, &o->wait_timeout_ms, e) < 0)
				return -1;
			if (o->wait_timeout_ms == 0)
				return pd_errf(e, PD_EX_USAGE,
					       "option --wait-timeout: must be positive");
		} else if (ch == O_MAX_PAYLOAD) {
			struct pd_err se = PD_ERR_INIT;

			if (pd_size_parse(optarg, &o->max_payload, &se) < 0)
				return pd_errf(e, PD_EX_USAGE, "option --max-payload: %s", se.msg);
		} else if (ch == O_NDJSON || ch == O_JSON || ch == O_WAIT || ch == O_PRINT_ID ||
			   ch == O_NO_STDIN) {
			*(ch == O_NDJSON     ? &o->ndjson
			  : ch == O_JSON     ? &o->json
			  : ch == O_WAIT     ? &o->wait
			  : ch == O_NO_STDIN ? &o->no_stdin
					     : &o->print_id) = 1;
		} else if ((rc = pd_app_option(a, NULL, ch, optarg, help, SYNOPSIS, argv, e)) !=
			   0) {
			return rc == 2 ? (e->code = PD_EX_USAGE, -2) : rc;
		}
	}
	return check_args(argc, argv, o, e);
}

/* --wait's warning: nobody would run the job. ctx is what names it. */
static void warn_unserved(void *ctx, long long id, const char *queue, const char *type)
{
	(void)id;
	fprintf(stderr,
		"%s: warning: %s waits, but no live worker serves type '%s' in queue '%s'\n",
		pd_progname(), (const char *)ctx, type, queue);
}

/*
 * "; stderr: LINE" into out (n bytes) for the first line of an attempt's
 * stderr tail, shown (pd_text_show), or "" when there is none.
 */
static const char *stderr_note(char *out, size_t n, const char *line)
{
	char shown[PD_TEXT_SHOW_MAX + 1];

	if (line == NULL || *line == '\0')
		return "";
	snprintf(out, n, "; stderr: %s", pd_text_show(shown, sizeof(shown), line, strlen(line)));
	return out;
}

/*
 * --wait's line for a failed attempt that is tried again: ctx names the job.
 * "pd-enqueue: job 42: attempt 3 of 25 failed: exit 7; stderr: no route to
 * host; next try in 4s"; a snoozed one: "pd-enqueue: job 42: attempt 1 of
 * 25 snoozed; next try in 30s".
 */
static void report_failed(void *ctx, long long id, const struct pd_enqueue_failure *f)
{
	char d[PD_DUR_MAX] = "", note[PD_TEXT_SHOW_MAX + 16];

	(void)id;
	/* whole seconds from 1 s on: the backoff's jitter is noise here */
	if (f->next_ms > 0)
		pd_dur_format(f->next_ms >= 1000 ? (f->next_ms + 999) / 1000 * 1000 : f->next_ms, d,
			      sizeof(d));
	fprintf(stderr, "%s: %s: %s%s%sattempt %d of %d %s%s%s%s%s\n", pd_progname(),
		(const char *)ctx, f->step ? "step '" : "", f->step ? f->step : "",
		f->step ? "' " : "", f->attempt, f->max_attempts,
		f->snoozed ? "snoozed" : "failed: ", f->snoozed ? "" : f->cause,
		f->snoozed ? "" : stderr_note(note, sizeof(note), f->tail),
		f->next_ms < 0	  ? ""
		: f->next_ms == 0 ? "; next try now"
				  : "; next try in ",
		d);
}

/* --wait's line for a new progress note: "pd-enqueue: job 42: 40% (400/1000)". */
static void report_progress(void *ctx, long long id, const char *note)
{
	(void)id;
	fprintf(stderr, "%s: %s: %s\n", pd_progname(), (const char *)ctx, note);
}

/*
 * --wait: print how job id ended; returns the exit status, or -1 with e
 * filled. what names it on stderr ("job 12", "workflow run 3 (job 12)").
 */
static int wait_job(struct pd_db *db, const struct opts *o, long long id, const char *what,
		    struct pd_err *e)
{
	struct pd_enqueue_waiting w = PD_ENQUEUE_WAITING_INIT;
	struct pd_enqueue_end end;
	char note[PD_TEXT_SHOW_MAX + 16];
	int status, rc;

	w.timeout_ms = o->wait_timeout_ms;
	w.marked = 1; /* when it was enqueued */
	w.unserved = warn_unserved;
	if (pd_log_get_level() <= PD_LOG_INFO) { /* not with --quiet */
		w.failed = report_failed;
		w.progress = report_progress;
	}
	w.ctx = (void *)what;
	fflush(stderr);
	if ((rc = pd_enqueue_wait(db, id, &w, &end, e)) < 0)
		return -1;
	if (rc == 1) {
		char d[PD_DUR_MAX];

		pd_dur_format(o->wait_timeout_ms, d, sizeof(d));
		fprintf(stderr, "%s: %s still %s after %s: no longer waiting; it stays queued\n",
			pd_progname(), what, end.state, d);
		pd_enqueue_end_release(&end);
		return PD_ENQUEUE_TIMED_OUT;
	}
	if (end.succeeded && end.result) {
		fputs(end.result, stdout);
		if (!end.result_is_text)
			putchar('\n');
	} else if (!end.succeeded) {
		fprintf(stderr, "%s: %s %s: %s%s%s%s\n", pd_progname(), what,
			end.cancelled ? "cancelled" : "dead-lettered", end.reason,
			*end.last_error ? ": " : "", end.last_error,
			stderr_note(note, sizeof(note), end.tail));
	}
	status = end.status;
	pd_enqueue_end_release(&end);
	return status;
}

/*
 * Where the ids (or rows) go: stdout, but with --wait stdout is the
 * result's alone: stderr with --print-id, else nowhere (NULL).
 */
static FILE *id_stream(const struct opts *o)
{
	return !o->wait ? stdout : o->print_id ? stderr : NULL;
}

/* The ids one a line, or with --json the job rows. */
static int print_jobs(struct pd_db *db, const struct opts *o, const struct pd_enqueue *q,
		      struct pd_err *e)
{
	FILE *f = id_stream(o);
	PGresult *r;

	for (int i = 0; i < q->n; i++)
		if (!q->created[i])
			fprintf(
			    stderr,
			    "%s: idempotency key already used in tenant '%s': existing job %lld\n",
			    pd_progname(), q->jobs[i].tenant ? q->jobs[i].tenant : "default",
			    q->ids[i]);
	if (f == NULL)
		return 0;
	if (!o->json) {
		for (int i = 0; i < q->n; i++)
			fprintf(f, "%lld\n", q->ids[i]);
		return 0;
	}
	if (pd_enqueue_rows(db, q->ids, q->n, &r, e) < 0)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		fprintf(f, "%s\n", PQgetvalue(r, i, 0));
	PQclear(r);
	return 0;
}

/* What print_streamed keeps: with --json the rows are read 256 ids at a time. */
struct printer {
	struct pd_db *db;
	const struct opts *o;
	long long ids[256];
	int n;
};

/* The --json rows of p's ids; p emptied. */
static int print_rows(struct printer *p, struct pd_err *e)
{
	PGresult *r;

	if (p->n == 0)
		return 0;
	if (pd_enqueue_rows(p->db, p->ids, p->n, &r, e) < 0)
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		fprintf(stdout, "%s\n", PQgetvalue(r, i, 0));
	PQclear(r);
	p->n = 0;
	return 0;
}

/* pd_enqueue_stream's each: print_jobs for one job. */
static int print_streamed(void *ctx, long long id, int created, const char *tenant,
			  struct pd_err *e)
{
	struct printer *p = ctx;

	if (!created)
		fprintf(stderr,
			"%s: idempotency key already used in tenant '%s': existing job %lld\n",
			pd_progname(), tenant, id);
	if (!p->o->json) {
		printf("%lld\n", id);
		return 0;
	}
	p->ids[p->n++] = id;
	return p->n < (int)(sizeof(p->ids) / sizeof(p->ids[0])) ? 0 : print_rows(p, e);
}

/* --ndjson: enqueue nd (q holds its first batch) all or nothing, then print the ids. */
static int run_ndjson(struct pd_app *a, const struct opts *o, struct pd_ndjson *nd,
		      struct pd_enqueue *q, struct pd_err *e)
{
	struct printer p = {&a->db, o, {0}, 0};

	if (nd->done) /* one batch: all at once */
		return pd_enqueue_run(q, &a->db, e) < 0 || print_jobs(&a->db, o, q, e) < 0 ? -1 : 0;
	if (pd_enqueue_stream(nd, q, &a->db, print_streamed, &p, e) < 0)
		return -1;
	return print_rows(&p, e);
}

/*
 * --workflow: start the run of spec (its input in payload), print its id (or
 * with --json its row); *job, what: the job that drives it, for --wait.
 */
static int start_run(struct pd_app *a, const struct opts *o, const struct pd_jobspec *spec,
		     long long *job, char *what, size_t n, struct pd_err *e)
{
	/* NULL (no config file): the first worker records the step names. */
	const struct pd_flow *def = pd_config_flow(&a->cfg, o->workflow);
	struct pd_flow_started run = PD_FLOW_STARTED_INIT;

	if (def == NULL && a->cfg.path)
		return pd_errf(e, PD_EX_USAGE,
			       "unknown workflow '%s': %s has no such workflows: entry",
			       o->workflow, a->cfg.path);
	if (pd_flow_start(&a->db, o->workflow, spec, def, o->wait, &run, e) < 0)
		return -1;
	if (!run.created)
		fprintf(stderr,
			"%s: idempotency key already used in tenant '%s': existing workflow run "
			"%lld\n",
			pd_progname(), spec->tenant ? spec->tenant : "default", run.run);
	if (id_stream(o) && o->json)
		fprintf(id_stream(o), "%s\n", run.row);
	else if (id_stream(o))
		fprintf(id_stream(o), "%lld\n", run.run);
	*job = run.job;
	snprintf(what, n, "workflow run %lld (job %lld)", run.run, run.job);
	pd_flow_started_release(&run);
	return 0;
}

int main(int argc, char **argv)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_app a;
	struct opts o;
	struct pd_buf in = PD_BUF_INIT;
	struct pd_enqueue q;
	struct pd_ndjson nd;
	long long job = 0, max;
	char what[64] = "";
	int rc;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	pd_enqueue_init(&q);
	memset(&o, 0, sizeof(o));
	pd_jobspec_init(&o.spec);
	o.wait_timeout_ms = -1;
	rc = parse_args(argc, argv, &a, &o, &e);
	if (rc == 1)
		return pd_cli_finish_stdout();
	if (rc == -2)
		return PD_EX_USAGE;
	/* a bad name (data) or an unreadable --database-url-file: not a misuse */
	if (rc < 0 && (e.code == PD_EX_DATAERR || e.code == PD_EX_CONFIG)) {
		pd_die_msg(e.msg);
		return e.code;
	}
	if (rc < 0) {
		pd_cli_usage(SYNOPSIS, "%s", e.msg);
		return e.code;
	}
	memset(&nd, 0, sizeof(nd)); /* released with nothing to free unless --ndjson */
	if (pd_app_load(&a, &e) < 0)
		goto done;
	max = o.max_payload ? o.max_payload : a.cfg.max_payload;
	q.handlers = a.cfg.handlers;
	q.nhandlers = a.cfg.nhandlers;

	/* Read and check the input (--ndjson: its first batch) before touching the database. */
	if (o.ndjson) {
		pd_ndjson_init(&nd, 0, &o.spec, max);
		if (pd_ndjson_read(&nd, &q, PD_ENQUEUE_BATCH, &e) < 0)
			goto done;
	} else if (argc - optind == (o.workflow ? 1 : 2)) {
		if (pd_enqueue_check_size(strlen(argv[argc - 1]), max,
					  o.workflow ? "INPUT" : "PAYLOAD", &e) < 0 ||
		    pd_enqueue_one(&q, &o.spec, argv[argc - 1], strlen(argv[argc - 1]),
				   o.workflow ? "INPUT" : "PAYLOAD", 0, &e) < 0)
			goto done;
	} else {
		/* no PAYLOAD: stdin's, unless a terminal or --no-stdin (`while read` loops) */
		if (!o.no_stdin && !isatty(0) && pd_enqueue_read(0, &in, max, &e) < 0)
			goto done;
		if (pd_enqueue_one(&q, &o.spec, in.data, in.len, "stdin", 1, &e) < 0) {
			struct pd_err je = e;

			pd_err_clear(&e);
			pd_errf(&e, je.code, "%s (to not read stdin: --no-stdin)", je.msg);
			goto done;
		}
	}
	if (pd_app_connect(&a, 1, &e) < 0)
		goto done;
	if (o.workflow) {
		if (start_run(&a, &o, &q.jobs[0], &job, what, sizeof(what), &e) < 0)
			goto done;
	} else if (o.ndjson) {
		if (run_ndjson(&a, &o, &nd, &q, &e) < 0)
			goto done;
	} else {
		q.notify_done = o.wait;
		if (pd_enqueue_run(&q, &a.db, &e) < 0 || print_jobs(&a.db, &o, &q, &e) < 0)
			goto done;
		job = q.ids[0];
		snprintf(what, sizeof(what), "job %lld", job);
	}
	if (o.wait && (rc = wait_job(&a.db, &o, job, what, &e)) >= 0)
		e.code = rc;
done:
	if (e.msg[0])
		pd_die_msg(e.msg);
	pd_buf_release(&in);
	pd_ndjson_release(&nd);
	pd_enqueue_release(&q);
	pd_app_release(&a);
	if (pd_cli_finish_stdout() && e.code == 0)
		e.code = PD_EX_SOFTWARE;
	return e.code;
}
