/*
 * pd-cron: schedules whose occurrences become ordinary jobs. add, list, rm,
 * pause, resume, trigger, history, preview, apply (a YAML or crontab file),
 * check (a file, without a database), and run (the ticker, which lib/ticker
 * runs on the daemon loop). --json is taken before or after the command
 * (sub_getopt).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "cli.h"
#include "crontab.h"
#include "dur.h"
#include "jobspec.h"
#include "json.h"
#include "log.h"
#include "render.h"
#include "text.h"
#include "sched.h"
#include "ticker.h"

#define SYNOPSIS "usage: pd-cron [-hVv] [-c file] [-d conninfo] [--json] command [args]\n"

struct command {
	const char *name;
	int (*fn)(struct pd_app *a, int argc, char **argv, struct pd_err *e);
	const char *usage;
	const char *help; /* the command's options, for 'pd-cron COMMAND --help' */
};

static int cmd_add(struct pd_app *a, int argc, char **argv, struct pd_err *e);
static int cmd_list(struct pd_app *a, int argc, char **argv, struct pd_err *e);
static int cmd_by_name(struct pd_app *a, int argc, char **argv, struct pd_err *e);
static int cmd_preview(struct pd_app *a, int argc, char **argv, struct pd_err *e);
static int cmd_apply(struct pd_app *a, int argc, char **argv, struct pd_err *e);
static int cmd_check(struct pd_app *a, int argc, char **argv, struct pd_err *e);
static int cmd_run(struct pd_app *a, int argc, char **argv, struct pd_err *e);
static int cmd_history(struct pd_app *a, int argc, char **argv, struct pd_err *e);

#define T_HELP "  -t, --tenant TENANT      the schedule's tenant (default 'default')\n"

static const struct command commands[] = {
    {"add", cmd_add,
     "add NAME --cron EXPR --tz ZONE --type TYPE [--payload JSON] [--queue Q]\n"
     "      [--priority P] [--misfire POLICY] [--catch-up-limit N] [--overlap allow|skip]\n"
     "      [--jitter DURATION] [--max-attempts N] [--timeout DURATION] [-t TENANT]",
     "Create a schedule; each occurrence becomes a job of TYPE. Nothing is caught up\n"
     "from before it was created.\n"
     "      --cron EXPR            five fields or @daily, @hourly... (see pd-cron(1))\n"
     "      --tz ZONE              IANA time zone of the wall-clock times, e.g. Europe/Berlin\n"
     "      --type TYPE            the jobs' type\n"
     "      --payload JSON         the jobs' payload (default {})\n"
     "      --queue Q              the jobs' queue (default 'default')\n"
     "      --priority P           integer, or high, normal, low (default 0)\n"
     "      --misfire POLICY       SKIP, FIRE_ONCE (default) or FIRE_ALL\n"
     "      --catch-up-limit N     FIRE_ALL fires at most the latest N (default 100)\n"
     "      --overlap allow|skip   skip: no occurrence fires while its last job is active\n"
     "      --jitter DURATION      delay each job by a fixed offset below DURATION (up to 1d)\n"
     "      --max-attempts N       the jobs' attempts, 1 to 1000 (default the jobs' default)\n"
     "      --timeout DURATION     the jobs' timeout (default none)\n" T_HELP},
    {"list", cmd_list, "list [-t TENANT]",
     "List schedules: zone, next fire in that zone and in UTC, the last fire, the\n"
     "last job's state and duration.\n" T_HELP},
    {"rm", cmd_by_name, "rm NAME [-t TENANT]", "Delete a schedule (its jobs stay).\n" T_HELP},
    {"pause", cmd_by_name, "pause NAME [-t TENANT]", "Stop firing a schedule.\n" T_HELP},
    {"resume", cmd_by_name, "resume NAME [-t TENANT]",
     "Fire a paused or disabled schedule again, from now on: the time it was\n"
     "paused is not caught up.\n" T_HELP},
    {"trigger", cmd_by_name, "trigger NAME [-t TENANT]",
     "Fire a schedule now: an ordinary job with a key of its own, whatever the\n"
     "schedule's overlap, even when paused. Prints the job id.\n" T_HELP},
    {"history", cmd_history, "history NAME [-n COUNT] [-t TENANT]",
     "A schedule's latest occurrences, newest first: fire time, kind (fired,\n"
     "skipped, triggered), job id, state, attempts, exit status, duration.\n"
     "  -n, --count COUNT          how many (default 20, at most 10000)\n" T_HELP},
    {"preview", cmd_preview, "preview EXPR [--tz ZONE] [--from INSTANT] [-n COUNT] [--local]",
     "Print the next fire instants of EXPR in UTC, one a line. Needs no database.\n"
     "      --tz ZONE              IANA time zone (default UTC)\n"
     "      --from INSTANT         start at this ISO 8601 instant, included (default now)\n"
     "  -n, --count COUNT          how many (default 5, at most 10000)\n"
     "      --local                add the wall-clock time in ZONE\n"},
    {"apply", cmd_apply, "apply FILE [--crontab] [--prune] [--dry-run] [-t TENANT]",
     "Make the stored schedules match a YAML or crontab file: create and update,\n"
     "and with --prune delete those the file does not name (of a crontab file:\n"
     "those of the same file only). One transaction.\n"
     "      --crontab              FILE is a crontab (default: guessed from its content)\n"
     "      --prune                delete schedules not in FILE\n"
     "      --dry-run              print the changes, write nothing\n"
     "  -t, --tenant TENANT        manage only TENANT's schedules\n"},
    {"check", cmd_check, "check FILE [--crontab] [--from INSTANT]",
     "Parse a YAML or crontab file and print each schedule with its next three\n"
     "fires, in its zone and in UTC, and what daylight-saving time does to\n"
     "them. Needs no database.\n"
     "      --crontab              FILE is a crontab (default: guessed from its content)\n"
     "      --from INSTANT         fires from this ISO 8601 instant on (default now)\n"},
    {"run", cmd_run,
     "run [--once] [--interval DURATION] [--lease DURATION] [--skip-grace DURATION]",
     "The ticker: enqueue every due occurrence as a job.\n"
     "      --once                 one tick, print what it did, and exit\n"
     "      --interval DURATION    shortest time between two steps (default 1s)\n"
     "      --lease DURATION       the ticker role's lease (default 10s)\n"
     "      --skip-grace DURATION  SKIP fires an occurrence at most this late (default 60s)\n"},
    {NULL, NULL, NULL, NULL},
};

static const char *summary[] = {
    "create a schedule",
    "schedules, next and last fire, the last job",
    "delete a schedule",
    "stop firing a schedule",
    "fire it again, from now on",
    "fire a schedule now",
    "a schedule's latest occurrences and their jobs",
    "next fire instants; no database needed",
    "sync schedules from a YAML or crontab file",
    "parse a file, show the next fires; no database needed",
    "the ticker: enqueue due occurrences as jobs",
};

static void help(void)
{
	printf(SYNOPSIS
	       "\nSchedules whose occurrences become ordinary Pendulum jobs.\n\nCommands:\n");
	for (int i = 0; commands[i].name; i++)
		printf("  %s\n      %s\n", commands[i].usage, summary[i]);
	printf("\nOptions:\n"
	       "  -c, --config FILE        configuration file\n"
	       "  -d, --database CONNINFO  libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --json               one JSON object a line instead of a table\n"
	       "      --quiet              log warnings and errors only\n"
	       "  -v, --verbose            log debug messages\n"
	       "      --log-format FORMAT  logfmt (default) or json, a line each\n"
	       "  -h, --help               show this help\n"
	       "  -V, --version            show the version\n\n"
	       "Run 'pd-cron COMMAND --help' for a command's options. See pd-cron(1).\n");
}

static const struct command *self; /* the command being run */

static const char *sub_synopsis(void)
{
	static char syn[512];

	snprintf(syn, sizeof(syn), "usage: pd-cron %s\n", self->usage);
	return syn;
}

static int sub_help(void)
{
	printf("%s\n%s", sub_synopsis(), self->help);
	printf("      --json                 one JSON object a line (as before the command)\n");
	return 0;
}

/*
 * pd_cli_getopt over a command's options and --json, which sets a->json
 * wherever it stands: pd-cron --json list and pd-cron list --json agree.
 */
static int sub_getopt(struct pd_app *a, int argc, char **argv, const char *optstring,
		      const struct option *opts)
{
	enum { O_JSON = 1000 };
	static struct option all[32];
	int n = 0, ch;

	while (opts[n].name && n < 30) {
		all[n] = opts[n];
		n++;
	}
	all[n] = (struct option){"json", no_argument, NULL, O_JSON};
	all[n + 1] = (struct option){NULL, 0, NULL, 0};
	while ((ch = pd_cli_getopt(argc, argv, optstring, all)) == O_JSON)
		a->json = 1;
	return ch;
}

/* -t TENANT's value is a name (pd_name_check): 0, else 65 after saying so. */
static int bad_tenant(const char *v)
{
	struct pd_err e = PD_ERR_INIT;

	if (pd_name_check("tenant (-t)", v, &e) == 0)
		return 0;
	pd_die_msg(e.msg);
	return e.code;
}

/* Exactly one operand is left (what: "NAME", "FILE"): 0, else the usage error's status. */
static int one_operand(int argc, char **argv, const char *what)
{
	if (argc - optind < 1)
		return pd_cli_usage(sub_synopsis(), "missing %s", what);
	if (argc - optind > 1)
		return pd_cli_usage(sub_synopsis(), "unexpected argument '%s'", argv[optind + 1]);
	return 0;
}

static int connect_db(struct pd_app *a, struct pd_err *e)
{
	if (pd_app_load(a, e) < 0)
		return -1;
	return pd_app_connect(a, 1, e);
}

/* "2026-03-29T01:30:00Z" and "2026-03-29 03:30:00 CEST" of t (local "" if the zone is bad). */
static void both(long long t, const char *zone, char *utc, char *local, size_t n)
{
	pd_instant_format(t * 1000000LL, utc, PD_INSTANT_MAX);
	pd_cron_local(t, zone, local, n);
}

/* A usage error from a value check: the message, the synopsis, 64. */
static int bad_value(const struct pd_err *e2)
{
	return pd_cli_usage(sub_synopsis(), "%s", e2->msg);
}

static int cmd_add(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	enum {
		O_CRON = 256,
		O_TZ,
		O_TYPE,
		O_PAYLOAD,
		O_QUEUE,
		O_PRIO,
		O_MISFIRE,
		O_LIMIT,
		O_OVERLAP,
		O_JITTER,
		O_ATTEMPTS,
		O_TIMEOUT
	};
	static const struct option opts[] = {
	    {"cron", required_argument, NULL, O_CRON},
	    {"tz", required_argument, NULL, O_TZ},
	    {"type", required_argument, NULL, O_TYPE},
	    {"payload", required_argument, NULL, O_PAYLOAD},
	    {"queue", required_argument, NULL, O_QUEUE},
	    {"priority", required_argument, NULL, O_PRIO},
	    {"misfire", required_argument, NULL, O_MISFIRE},
	    {"catch-up-limit", required_argument, NULL, O_LIMIT},
	    {"overlap", required_argument, NULL, O_OVERLAP},
	    {"jitter", required_argument, NULL, O_JITTER},
	    {"max-attempts", required_argument, NULL, O_ATTEMPTS},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"tenant", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct pd_err e2 = PD_ERR_INIT;
	struct pd_sched s;
	char utc[PD_INSTANT_MAX], local[96];
	long long next;
	int ch, rc;

	pd_sched_init(&s);
	while ((ch = sub_getopt(a, argc, argv, ":t:h", opts)) != -1) {
		switch (ch) {
		case O_CRON:
			s.cron = optarg;
			break;
		case O_TZ:
			s.timezone = optarg;
			break;
		case O_TYPE:
			s.type = optarg;
			break;
		case O_PAYLOAD:
			s.payload = optarg;
			break;
		case O_QUEUE:
			s.queue = optarg;
			break;
		case O_PRIO:
			if (pd_priority_parse(optarg, &s.priority, &e2) < 0)
				return bad_value(&e2);
			break;
		case O_MISFIRE:
			if (pd_misfire_parse(optarg, &s.misfire, &e2) < 0)
				return bad_value(&e2);
			break;
		case O_LIMIT:
			if (pd_cli_int("--catch-up-limit", optarg, 1, PD_SCHED_CATCH_UP_MAX,
				       &s.catch_up_limit, &e2) < 0)
				return bad_value(&e2);
			break;
		case O_OVERLAP:
			if (pd_overlap_parse(optarg, &s.overlap, &e2) < 0)
				return bad_value(&e2);
			break;
		case O_JITTER:
		case O_TIMEOUT:
			if (pd_cli_dur(ch == O_JITTER ? "--jitter" : "--timeout", optarg,
				       ch == O_JITTER ? &s.jitter_ms : &s.timeout_ms, &e2) < 0 &&
			    e2.code == PD_EX_DATAERR) { /* longer than 100 years: data */
				pd_die_msg(e2.msg);
				return e2.code;
			}
			if (e2.code)
				return bad_value(&e2);
			break;
		case O_ATTEMPTS:
			if (pd_cli_int("--max-attempts", optarg, 1, 1000, &s.max_attempts, &e2) < 0)
				return bad_value(&e2);
			break;
		case 't':
			s.tenant = optarg;
			break;
		case 'h':
			return sub_help();
		default:
			return pd_cli_bad_option(sub_synopsis(), ch, argv);
		}
	}
	if ((rc = one_operand(argc, argv, "NAME")) != 0)
		return rc;
	s.name = argv[optind];
	if (s.cron == NULL || s.timezone == NULL || s.type == NULL)
		return pd_cli_usage(sub_synopsis(), "missing option %s",
				    !s.cron	  ? "--cron"
				    : !s.timezone ? "--tz"
						  : "--type");
	if (pd_sched_check(&s, e) < 0 || connect_db(a, e) < 0 ||
	    pd_sched_add(&a->db, &s, &next, e) < 0)
		return -1;
	both(next, s.timezone, utc, local, sizeof(local));
	printf("created %s, next fire %s (%s)\n", s.name, utc, local);
	return 0;
}

/* -t TENANT and one NAME: rm, pause, resume, trigger. */
static int cmd_by_name(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	static const struct option opts[] = {
	    {"tenant", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *tenant = NULL, *name;
	int ch, rc;

	while ((ch = sub_getopt(a, argc, argv, ":t:h", opts)) != -1) {
		if (ch == 't' && (rc = bad_tenant(optarg)) != 0)
			return rc;
		if (ch == 't')
			tenant = optarg;
		else if (ch == 'h')
			return sub_help();
		else
			return pd_cli_bad_option(sub_synopsis(), ch, argv);
	}
	if ((rc = one_operand(argc, argv, "NAME")) != 0)
		return rc;
	name = argv[optind];
	if (connect_db(a, e) < 0)
		return -1;
	if (strcmp(self->name, "rm") == 0)
		return pd_sched_remove(&a->db, tenant, name, e);
	if (strcmp(self->name, "pause") == 0)
		return pd_sched_pause(&a->db, tenant, name, e);
	if (strcmp(self->name, "trigger") == 0) {
		long long id;

		if (pd_sched_trigger(&a->db, tenant, name, &id, e) < 0)
			return -1;
		if (a->json)
			printf("{\"name\":\"%s\",\"job_id\":%lld}\n", name, id);
		else
			printf("triggered %s: job %lld\n", name, id);
		return 0;
	}
	{
		long long next;

		return pd_sched_resume(&a->db, tenant, name, &next, e);
	}
}

/* "%lld" of v into buf, or NULL when v is `none`. */
static const char *num_or_null(long long v, long long none, char *buf, size_t n)
{
	if (v == none)
		return NULL;
	snprintf(buf, n, "%lld", v);
	return buf;
}

/* A duration in ms as "1m30s" (text) or seconds "90.000" (JSON); NULL when ms < 0. */
static const char *duration(long long ms, int json, char *buf, size_t n)
{
	if (ms < 0)
		return NULL;
	if (json)
		snprintf(buf, n, "%lld.%03lld", ms / 1000, ms % 1000);
	else
		pd_dur_format(ms, buf, n);
	return buf;
}

static int cmd_list(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	static const struct option opts[] = {
	    {"tenant", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static const char *tnames[] = {
	    "name",	     "tenant",	  "cron",     "timezone",  "type",     "state", "next_fire",
	    "next_fire_utc", "last_fire", "last_job", "job_state", "duration", "reason"};
	static const char *jnames[] = {"id",	    "tenant",	       "name",
				       "cron",	    "timezone",	       "type",
				       "payload",   "queue",	       "priority",
				       "misfire",   "catch_up_limit",  "enabled",
				       "state",	    "disabled_reason", "last_fired_at",
				       "next_fire", "next_fire_utc",   "overlap",
				       "jitter_ms", "max_attempts",    "timeout_ms",
				       "last_fire", "last_fire_kind",  "last_job",
				       "job_state", "duration_s"};
	struct pd_sched_row *rows;
	struct pd_table t;
	const char *tenant = NULL;
	int ch, n, rc;

	while ((ch = sub_getopt(a, argc, argv, ":t:h", opts)) != -1) {
		if (ch == 't' && (rc = bad_tenant(optarg)) != 0)
			return rc;
		if (ch == 't')
			tenant = optarg;
		else if (ch == 'h')
			return sub_help();
		else
			return pd_cli_bad_option(sub_synopsis(), ch, argv);
	}
	if (optind < argc)
		return pd_cli_usage(sub_synopsis(), "unexpected argument '%s'", argv[optind]);
	if (connect_db(a, e) < 0 || pd_sched_list(&a->db, tenant, &rows, &n, e) < 0)
		return -1;
	if (a->json)
		pd_table_init(&t, 26, jnames, "nsssssjsnsnbssssssnnnssnsn");
	else
		pd_table_init(&t, 13, tnames, NULL);
	for (int i = 0; i < n; i++) {
		const struct pd_sched_row *w = &rows[i];
		char id[24], prio[24], limit[24], utc[PD_INSTANT_MAX], local[96],
		    last[PD_INSTANT_MAX], fire[PD_INSTANT_MAX], jitter[24], att[24], tmo[24],
		    job[24], dur[PD_DUR_MAX];
		const char *state = w->enabled		 ? "active"
				    : w->disabled_reason ? "disabled"
							 : "paused";
		const char *nu = NULL, *nl = NULL, *lf = NULL;

		if (w->has_next) {
			both(w->next_fire_at, w->timezone, utc, local, sizeof(local));
			nu = utc;
			nl = local[0] ? local : NULL;
		}
		if (w->has_fire) {
			pd_instant_format(w->fire_at_us, fire, sizeof(fire));
			lf = fire;
		}
		pd_instant_format(w->last_fired_at * 1000000LL, last, sizeof(last));
		snprintf(id, sizeof(id), "%lld", w->id);
		snprintf(prio, sizeof(prio), "%lld", w->priority);
		snprintf(limit, sizeof(limit), "%lld", w->catch_up_limit);
		snprintf(jitter, sizeof(jitter), "%lld", w->jitter_ms);
		if (a->json) {
			const char *row[26] = {id,
					       w->tenant,
					       w->name,
					       w->cron,
					       w->timezone,
					       w->type,
					       w->payload,
					       w->queue,
					       prio,
					       w->misfire,
					       limit,
					       w->enabled ? "t" : "f",
					       state,
					       w->disabled_reason,
					       last,
					       nl,
					       nu,
					       w->overlap,
					       jitter,
					       num_or_null(w->max_attempts, -1, att, sizeof(att)),
					       num_or_null(w->timeout_ms, -1, tmo, sizeof(tmo)),
					       lf,
					       w->fire_kind,
					       num_or_null(w->job_id, 0, job, sizeof(job)),
					       w->job_state,
					       duration(w->duration_ms, 1, dur, sizeof(dur))};

			pd_table_add(&t, row);
		} else {
			const char *row[13] = {w->name,
					       w->tenant,
					       w->cron,
					       w->timezone,
					       w->type,
					       state,
					       nl,
					       nu,
					       lf,
					       num_or_null(w->job_id, 0, job, sizeof(job)),
					       w->job_state,
					       duration(w->duration_ms, 0, dur, sizeof(dur)),
					       w->disabled_reason};

			pd_table_add(&t, row);
		}
	}
	pd_table_print(&t, stdout, a->json);
	pd_table_release(&t);
	pd_sched_rows_free(rows, n);
	return 0;
}

/*
 * -t TENANT, -h, or an option the command does not take: TENANT_TAKEN when
 * ch was -t, else the status the command returns.
 */
#define TENANT_TAKEN (-2)
static int tenant_opt(int ch, const char **tenant, char **argv)
{
	if (ch == 't') {
		int rc = bad_tenant(optarg);

		if (rc != 0)
			return rc;
		*tenant = optarg;
		return TENANT_TAKEN;
	}
	if (ch == 'h')
		return sub_help();
	return pd_cli_bad_option(sub_synopsis(), ch, argv);
}

static int cmd_history(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	static const struct option opts[] = {
	    {"count", required_argument, NULL, 'n'},
	    {"tenant", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static const char *tnames[] = {"fire_at",  "kind", "job",      "state",
				       "attempts", "exit", "duration", "run_at"};
	static const char *jnames[] = {"fire_at",  "kind",	"job_id", "busy_job_id", "state",
				       "attempts", "exit_code", "signal", "duration_s",	 "run_at"};
	struct pd_err e2 = PD_ERR_INIT;
	struct pd_fire_row *rows;
	struct pd_table t;
	const char *tenant = NULL;
	long long count = 20;
	int ch, n, rc;

	while ((ch = sub_getopt(a, argc, argv, ":n:t:h", opts)) != -1) {
		if (ch == 'n') {
			if (pd_cli_int("-n", optarg, 1, 10000, &count, &e2) < 0)
				return bad_value(&e2);
		} else if ((rc = tenant_opt(ch, &tenant, argv)) != TENANT_TAKEN) {
			return rc;
		}
	}
	if (optind + 1 < argc)
		return pd_cli_usage(sub_synopsis(), "unexpected argument '%s'", argv[optind + 1]);
	if (optind >= argc)
		return pd_cli_usage(sub_synopsis(), "missing NAME");
	if (connect_db(a, e) < 0 ||
	    pd_sched_history(&a->db, tenant, argv[optind], (int)count, &rows, &n, e) < 0)
		return -1;
	if (a->json)
		pd_table_init(&t, 10, jnames, "ssnnsnnnns");
	else
		pd_table_init(&t, 8, tnames, NULL);
	for (int i = 0; i < n; i++) {
		const struct pd_fire_row *w = &rows[i];
		char fire[PD_INSTANT_MAX], run[PD_INSTANT_MAX], job[24], busy[24], att[24],
		    code[24], sig[24], ex[48], dur[PD_DUR_MAX];
		const char *exit = NULL, *run_at = NULL;

		pd_instant_format(w->fire_at_us, fire, sizeof(fire));
		if (w->run_at_us != -1) {
			pd_instant_format(w->run_at_us, run, sizeof(run));
			run_at = run;
		}
		if (w->signal > 0) {
			snprintf(ex, sizeof(ex), "signal %lld", w->signal);
			exit = ex;
		} else if (w->exit_code >= 0) {
			exit = num_or_null(w->exit_code, -1, ex, sizeof(ex));
		}
		if (a->json) {
			const char *row[10] = {fire,
					       w->kind,
					       num_or_null(w->job_id, 0, job, sizeof(job)),
					       num_or_null(w->busy_job_id, 0, busy, sizeof(busy)),
					       w->state,
					       num_or_null(w->attempts, -1, att, sizeof(att)),
					       num_or_null(w->exit_code, -1, code, sizeof(code)),
					       num_or_null(w->signal, -1, sig, sizeof(sig)),
					       duration(w->duration_ms, 1, dur, sizeof(dur)),
					       run_at};

			pd_table_add(&t, row);
		} else {
			/* A skipped occurrence names the job it waited on. */
			if (w->busy_job_id)
				snprintf(busy, sizeof(busy), "(%lld)", w->busy_job_id);
			const char *row[8] = {fire,
					      w->kind,
					      w->job_id
						  ? num_or_null(w->job_id, 0, job, sizeof(job))
					      : w->busy_job_id ? busy
							       : NULL,
					      w->state,
					      num_or_null(w->attempts, -1, att, sizeof(att)),
					      exit,
					      duration(w->duration_ms, 0, dur, sizeof(dur)),
					      run_at};

			pd_table_add(&t, row);
		}
	}
	pd_table_print(&t, stdout, a->json);
	pd_table_release(&t);
	pd_fire_rows_free(rows, n);
	return 0;
}

/* The epoch second to search after so that --from (microseconds) is included. */
static long long included(long long from_us)
{
	/* one second before its (rounded up) second */
	long long t = from_us / 1000000LL - (from_us % 1000000LL < 0);

	return from_us % 1000000LL == 0 ? t - 1 : t;
}

static int cmd_preview(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	enum { O_TZ = 256, O_FROM, O_LOCAL };
	static const struct option opts[] = {
	    {"tz", required_argument, NULL, O_TZ},   {"from", required_argument, NULL, O_FROM},
	    {"count", required_argument, NULL, 'n'}, {"local", no_argument, NULL, O_LOCAL},
	    {"help", no_argument, NULL, 'h'},	     {NULL, 0, NULL, 0},
	};
	struct pd_err e2 = PD_ERR_INIT;
	const char *zone = "UTC";
	long long count = 5, from_us = (long long)time(NULL) * 1000000LL, t;
	int ch, local = 0;
	struct pd_cron c;

	while ((ch = sub_getopt(a, argc, argv, ":n:h", opts)) != -1) {
		switch (ch) {
		case O_TZ:
			zone = optarg;
			break;
		case O_FROM:
			if (pd_instant_parse(optarg, &from_us, &e2) < 0)
				return pd_cli_usage(sub_synopsis(), "option --from: %s", e2.msg);
			break;
		case 'n':
			if (pd_cli_int("-n", optarg, 1, 10000, &count, &e2) < 0)
				return bad_value(&e2);
			break;
		case O_LOCAL:
			local = 1;
			break;
		case 'h':
			return sub_help();
		default:
			return pd_cli_bad_option(sub_synopsis(), ch, argv);
		}
	}
	if (argc - optind != 1)
		return argc - optind < 1 ? pd_cli_usage(sub_synopsis(), "missing EXPR")
					 : pd_cli_usage(sub_synopsis(),
							"unexpected argument '%s' (quote the "
							"expression: '0 3 * * *')",
							argv[optind + 1]);
	if (pd_cron_parse(&c, argv[optind], e) < 0 || pd_tz_check(zone, e) < 0)
		return -1;
	t = included(from_us);
	for (long long i = 0; i < count; i++) {
		char utc[PD_INSTANT_MAX], lt[96];

		if (pd_cron_next(&c, zone, t, &t, e) < 0)
			return -1;
		both(t, zone, utc, lt, sizeof(lt));
		if (a->json) {
			struct pd_buf b = PD_BUF_INIT;

			pd_buf_puts(&b, "{\"at\":");
			pd_json_quote(&b, utc, strlen(utc));
			if (local) {
				pd_buf_puts(&b, ",\"local\":");
				pd_json_quote(&b, lt, strlen(lt));
			}
			pd_buf_puts(&b, "}\n");
			fputs(b.data, stdout);
			pd_buf_release(&b);
		} else if (local) {
			printf("%s\t%s\n", utc, lt);
		} else {
			printf("%s\n", utc);
		}
	}
	return 0;
}

/* A schedules file of either kind, loaded and checked. */
struct loaded {
	int crontab;
	struct pd_crontab t;
	struct pd_sched_file f;
	struct pd_sched *v; /* the schedules: the crontab's (malloc'd) or f.v */
	int n;
	char prefix[80]; /* a crontab's job types (its --prune scope) */
};

/*
 * Load path as a crontab (crontab set, or guessed from its content) or a
 * YAML file, tenant as for pd_sched_file_load. Nothing is written.
 */
static int load_file(struct loaded *l, const char *path, int crontab, const char *tenant,
		     struct pd_err *e)
{
	memset(l, 0, sizeof(*l));
	if (!crontab && (crontab = pd_crontab_sniff(path, e)) < 0)
		return -1;
	l->crontab = crontab;
	if (!crontab) {
		if (pd_sched_file_load(&l->f, path, tenant, tenant != NULL, e) < 0)
			return -1;
		l->v = l->f.v;
		l->n = l->f.n;
		return 0;
	}
	if (pd_crontab_load(&l->t, path, tenant, e) < 0)
		return -1;
	l->v = pd_crontab_scheds(&l->t);
	l->n = l->t.n;
	pd_crontab_prefix(&l->t, l->prefix, sizeof(l->prefix));
	return 0;
}

static void release_file(struct loaded *l)
{
	if (l->crontab) {
		free(l->v);
		pd_crontab_release(&l->t);
	} else {
		pd_sched_file_release(&l->f);
	}
}

static int cmd_apply(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	enum { O_PRUNE = 256, O_DRY, O_CRONTAB };
	static const struct option opts[] = {
	    {"crontab", no_argument, NULL, O_CRONTAB}, {"prune", no_argument, NULL, O_PRUNE},
	    {"dry-run", no_argument, NULL, O_DRY},     {"tenant", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},	       {NULL, 0, NULL, 0},
	};
	struct loaded f;
	struct pd_apply_stats st;
	struct pd_buf out = PD_BUF_INIT;
	const char *tenant = NULL;
	int ch, prune = 0, dry = 0, crontab = 0, rc;

	while ((ch = sub_getopt(a, argc, argv, ":t:h", opts)) != -1) {
		switch (ch) {
		case O_PRUNE:
			prune = 1;
			break;
		case O_DRY:
			dry = 1;
			break;
		case O_CRONTAB:
			crontab = 1;
			break;
		case 't':
			if ((rc = bad_tenant(optarg)) != 0)
				return rc;
			tenant = optarg;
			break;
		case 'h':
			return sub_help();
		default:
			return pd_cli_bad_option(sub_synopsis(), ch, argv);
		}
	}
	if ((rc = one_operand(argc, argv, "FILE")) != 0)
		return rc;
	/* Everything in the file is checked before the database is touched. */
	if (load_file(&f, argv[optind], crontab, tenant, e) < 0)
		return -1;
	rc = connect_db(a, e);
	if (rc == 0)
		rc = pd_sched_apply_types(&a->db, f.v, f.n, tenant, f.crontab ? f.prefix : NULL,
					  prune, dry, &out, &st, e);
	if (rc == 0 && out.len)
		fputs(out.data, stdout);
	pd_buf_release(&out);
	release_file(&f);
	return rc;
}

static const char *const dst_notes[] = {
    NULL,
    "its wall time does not exist that day (daylight-saving gap): fires after the gap",
    "its wall time happens twice that day (daylight-saving end): fires the first time only",
};
static const char *const dst_names[] = {NULL, "gap", "twice"};

/* One schedule of check: a header line and its next three fires after t, or a JSON line. */
static int check_one(struct pd_app *a, const struct pd_sched *s, const char *command,
		     const struct pd_crontab *t, long long from, struct pd_err *e)
{
	struct pd_buf b = PD_BUF_INIT;
	struct pd_cron c;
	long long at = from;

	if (pd_cron_parse(&c, s->cron, e) < 0)
		return -1;
	if (a->json) {
		pd_buf_puts(&b, "{\"name\":");
		pd_json_quote(&b, s->name, strlen(s->name));
		pd_buf_printf(&b, ",\"line\":%d,\"type\":", s->line);
		pd_json_quote(&b, s->type, strlen(s->type));
		pd_buf_puts(&b, ",\"cron\":");
		pd_json_quote(&b, s->cron, strlen(s->cron));
		pd_buf_puts(&b, ",\"timezone\":");
		pd_json_quote(&b, s->timezone, strlen(s->timezone));
		pd_buf_printf(&b, ",\"host_zone\":%s",
			      t && strcmp(s->timezone, t->zone) == 0 ? "true" : "false");
		if (command) {
			pd_buf_puts(&b, ",\"command\":");
			pd_json_quote(&b, command, strlen(command));
		}
		pd_buf_puts(&b, ",\"next\":[");
	} else {
		printf("%s (line %d): %s  %s%s\n", s->name, s->line, s->cron, s->timezone,
		       t && strcmp(s->timezone, t->zone) == 0 ? " (the host's zone)" : "");
		if (command)
			printf("  command: %s\n", command);
	}
	for (int i = 0; i < 3; i++) {
		char utc[PD_INSTANT_MAX], local[96];
		int dst;

		if (pd_cron_next(&c, s->timezone, at, &at, e) < 0) {
			pd_buf_release(&b);
			return -1;
		}
		both(at, s->timezone, utc, local, sizeof(local));
		dst = pd_cron_dst(&c, s->timezone, at);
		if (a->json) {
			pd_buf_puts(&b, i ? ",{\"at\":" : "{\"at\":");
			pd_json_quote(&b, utc, strlen(utc));
			pd_buf_puts(&b, ",\"local\":");
			pd_json_quote(&b, local, strlen(local));
			if (dst)
				pd_buf_printf(&b, ",\"dst\":\"%s\"", dst_names[dst]);
			pd_buf_putc(&b, '}');
		} else {
			printf("  %s  %s%s%s\n", local, utc, dst ? "  " : "",
			       dst ? dst_notes[dst] : "");
		}
	}
	if (a->json) {
		pd_buf_puts(&b, "]}\n");
		fputs(b.data, stdout);
	}
	pd_buf_release(&b);
	return 0;
}

static int cmd_check(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	enum { O_CRONTAB = 256, O_FROM };
	static const struct option opts[] = {
	    {"crontab", no_argument, NULL, O_CRONTAB},
	    {"from", required_argument, NULL, O_FROM},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct pd_err e2 = PD_ERR_INIT;
	long long from_us = (long long)time(NULL) * 1000000LL, from;
	int ch, crontab = 0, rc = 0;
	struct loaded f;

	while ((ch = sub_getopt(a, argc, argv, ":h", opts)) != -1) {
		switch (ch) {
		case O_CRONTAB:
			crontab = 1;
			break;
		case O_FROM:
			if (pd_instant_parse(optarg, &from_us, &e2) < 0)
				return pd_cli_usage(sub_synopsis(), "option --from: %s", e2.msg);
			break;
		case 'h':
			return sub_help();
		default:
			return pd_cli_bad_option(sub_synopsis(), ch, argv);
		}
	}
	if ((rc = one_operand(argc, argv, "FILE")) != 0)
		return rc;
	from = included(from_us);
	if (load_file(&f, argv[optind], crontab, NULL, e) < 0)
		return -1;
	if (!a->json && f.crontab)
		printf("%s: %d schedule%s; host zone %s (from %s)\n", argv[optind], f.n,
		       f.n == 1 ? "" : "s", f.t.zone, f.t.zone_from);
	else if (!a->json)
		printf("%s: %d schedule%s\n", argv[optind], f.n, f.n == 1 ? "" : "s");
	for (int i = 0; i < f.n && rc == 0; i++)
		rc = check_one(a, &f.v[i], f.crontab ? f.t.v[i].command : NULL,
			       f.crontab ? &f.t : NULL, from, e);
	release_file(&f);
	return rc;
}

static int cmd_run(struct pd_app *a, int argc, char **argv, struct pd_err *e)
{
	enum { O_ONCE = 256, O_INTERVAL, O_GRACE, O_LEASE };
	static const struct option opts[] = {
	    {"once", no_argument, NULL, O_ONCE},
	    {"interval", required_argument, NULL, O_INTERVAL},
	    {"lease", required_argument, NULL, O_LEASE},
	    {"skip-grace", required_argument, NULL, O_GRACE},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct pd_err e2 = PD_ERR_INIT;
	struct pd_ticker_cfg t;
	struct pd_tick_stats st;
	int ch;

	pd_ticker_cfg_init(&t);
	while ((ch = sub_getopt(a, argc, argv, ":h", opts)) != -1) {
		switch (ch) {
		case O_ONCE:
			t.once = 1;
			break;
		case O_INTERVAL:
		case O_GRACE:
			if (pd_cli_dur(ch == O_INTERVAL ? "--interval" : "--skip-grace", optarg,
				       ch == O_INTERVAL ? &t.interval_ms : &t.grace_ms, &e2) < 0)
				return bad_value(&e2);
			if (ch == O_INTERVAL && t.interval_ms <= 0)
				return pd_cli_usage(sub_synopsis(),
						    "option --interval: must be positive");
			break;
		case O_LEASE:
			if (pd_cli_dur("--lease", optarg, &t.lease_ms, &e2) < 0)
				return bad_value(&e2);
			if (t.lease_ms <= 0)
				return pd_cli_usage(sub_synopsis(),
						    "option --lease: must be positive");
			break;
		case 'h':
			return sub_help();
		default:
			return pd_cli_bad_option(sub_synopsis(), ch, argv);
		}
	}
	if (optind < argc)
		return pd_cli_usage(sub_synopsis(), "unexpected argument '%s'", argv[optind]);
	pd_app_source(a, &t.source);
	if (connect_db(a, e) < 0 || pd_ticker_run(&t, &a->db, &st, e) < 0)
		return -1;
	if (!t.once)
		return 0;
	printf("enqueued %d, already enqueued %d, disabled %d", st.enqueued, st.existing,
	       st.disabled);
	if (st.skipped)
		printf(", skipped %d (overlap)", st.skipped);
	putchar('\n');
	if (st.failed)
		return pd_errf(e, PD_EX_SOFTWARE,
			       "%d schedule%s could not be handled (see the log above)", st.failed,
			       st.failed == 1 ? "" : "s");
	return 0;
}

static const struct command *find(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    PD_APP_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct pd_err e = PD_ERR_INIT;
	struct pd_app a;
	int ch, rc;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	while ((ch = pd_cli_getopt(argc, argv, "+:c:d:vhV", opts)) != -1) {
		switch (ch) {
		case 'j':
			a.json = 1;
			break;
		default:
			if ((rc = pd_app_option(&a, NULL, ch, optarg, help, SYNOPSIS, argv, &e)) !=
			    0)
				return pd_app_parse_exit(rc, SYNOPSIS, &e);
			break;
		}
	}
	if (optind >= argc)
		return pd_cli_usage(SYNOPSIS, "missing command");
	self = find(argv[optind]);
	if (self == NULL)
		return pd_cli_usage(SYNOPSIS, "unknown command '%s'", argv[optind]);
	argc -= optind;
	argv += optind;
	optind = 0; /* re-initialise getopt for the command */
	rc = self->fn(&a, argc, argv, &e);
	if (rc < 0 && e.msg[0])
		pd_die_msg(e.msg);
	if (rc < 0)
		rc = e.code ? e.code : PD_EX_SOFTWARE;
	pd_app_release(&a);
	if (pd_cli_finish_stdout() && rc == 0)
		rc = PD_EX_SOFTWARE;
	return rc;
}
