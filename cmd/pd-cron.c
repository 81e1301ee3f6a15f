/*
 * pd-cron: schedules whose occurrences become ordinary jobs. add, list, rm,
 * pause, resume, trigger, history, preview, apply (a YAML or crontab file),
 * check (a file, without a database), and run (the ticker, which lib/ticker
 * runs on the daemon loop). Subcommands from the table below through
 * lib/subcmd; their handlers are in lib/croncmd.c. --json is taken before
 * or after the command.
 */
#include <getopt.h>
#include <stdio.h>

#include "app.h"
#include "cli.h"
#include "croncmd.h"
#include "text.h"

#define SYNOPSIS "usage: pd-cron [-hVv] [-c file] [-d conninfo] [--json] command [args]\n"

#define ADD_OPTS                                                                                   \
	"cron,tz,type,payload,queue,priority,misfire,catch-up-limit,overlap,jitter,max-attempts,"  \
	"timeout,key,tenant,json"

/* clang-format off */
static const struct pd_subcmd commands[] = {
    {NULL, "add", pd_croncmd_add,
     "add NAME --cron EXPR --tz ZONE --type TYPE [--payload JSON] [--queue Q]\n"
     "      [--priority P] [--misfire POLICY] [--catch-up-limit N] [--overlap allow|skip]\n"
     "      [--jitter DURATION] [--max-attempts N] [--timeout DURATION] [--key KEY]\n"
     "      [-t TENANT]",
     "create a schedule",
     "Create a schedule; each occurrence becomes a job of TYPE. Nothing is caught up\n"
     "from before it was created.", ADD_OPTS, 1, 1, "NAME", 0, 0, 0},
    {NULL, "list", pd_croncmd_list, "list [--wide] [-t TENANT]",
     "schedules, next and last fire, the last job",
     "List schedules: zone, next fire in that zone, the last job's state and the\n"
     "command, within 120 columns; --wide adds the tenant, type, next fire in UTC,\n"
     "last fire, last job, duration and reason.", "wide,tenant,json", 0, 0, NULL, 0, 0, 0},
    {NULL, "rm", pd_croncmd_by_name, "rm NAME [-t TENANT]", "delete a schedule",
     "Delete a schedule (its jobs stay).", "tenant,json", 1, 1, "NAME", 0, 0, 0},
    {NULL, "pause", pd_croncmd_by_name, "pause NAME [-t TENANT]", "stop firing a schedule",
     "Stop firing a schedule.", "tenant,json", 1, 1, "NAME", 0, 0, 0},
    {NULL, "resume", pd_croncmd_by_name, "resume NAME [-t TENANT]", "fire it again, from now on",
     "Fire a paused or disabled schedule again, from now on: the time it was\n"
     "paused is not caught up.", "tenant,json", 1, 1, "NAME", 0, 0, 0},
    {NULL, "trigger", pd_croncmd_by_name, "trigger NAME [-t TENANT]", "fire a schedule now",
     "Fire a schedule now: an ordinary job with a key of its own, whatever the\n"
     "schedule's overlap, even when paused. Prints the job id.", "tenant,json", 1, 1, "NAME",
     0, 0, 0},
    {NULL, "history", pd_croncmd_history, "history NAME [-n COUNT] [-t TENANT]",
     "a schedule's latest occurrences and their jobs",
     "A schedule's latest occurrences, newest first: fire time, kind (fired,\n"
     "skipped, triggered), job id, state, attempts, exit status, duration.",
     "count,tenant,json", 1, 1, "NAME", 20, 10000, 0},
    {NULL, "preview", pd_croncmd_preview,
     "preview EXPR [--tz ZONE] [--from INSTANT] [-n COUNT] [--local]",
     "next fire instants; no database needed",
     "Print the next fire instants of EXPR in UTC, one a line. Needs no database.",
     "tz-preview,from,count,local,json", 1, -1, "EXPR", 5, 10000, 0},
    {NULL, "apply", pd_croncmd_apply, "apply FILE [--crontab] [--prune] [--dry-run] [-t TENANT]",
     "sync schedules from a YAML or crontab file",
     "Make the stored schedules match a YAML or crontab file: create and update,\n"
     "and with --prune delete those the file does not name (of a crontab file:\n"
     "those of the same file only). One transaction.",
     "crontab,prune,dry-run,tenant-apply,json", 1, 1, "FILE", 0, 0, 0},
    {NULL, "check", pd_croncmd_check_file, "check FILE [--crontab] [--from INSTANT]",
     "parse a file, show the next fires; no database needed",
     "Parse a YAML or crontab file and print each schedule with its next three\n"
     "fires, in its zone and in UTC, and what daylight-saving time does to\n"
     "them. Needs no database.", "crontab,from-check,json", 1, 1, "FILE", 0, 0, 0},
    {NULL, "run", pd_croncmd_run,
     "run [--once] [--interval DURATION] [--lease DURATION] [--skip-grace DURATION]",
     "the ticker: enqueue due occurrences as jobs",
     "The ticker: enqueue every due occurrence as a job.",
     "once,interval,lease,skip-grace,json", 0, 0, NULL, 0, 0, 0},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, 0, 0, 0},
};
/* clang-format on */

static void help(void)
{
	printf(SYNOPSIS
	       "\nSchedules whose occurrences become ordinary Pendulum jobs.\n\nCommands:\n");
	struct pd_buf b = PD_BUF_INIT;

	for (const struct pd_subcmd *c = commands; c->name; c++) {
		pd_buf_puts(&b, "  ");
		pd_text_wrap(&b, c->usage, 2, 6, PD_CLI_WIDTH);
		pd_buf_puts(&b, "      ");
		pd_text_wrap(&b, c->summary, 6, 6, PD_CLI_WIDTH);
	}
	fputs(pd_buf_str(&b), stdout);
	pd_buf_release(&b);
	printf("\nOptions:\n"
	       "  -c, --config FILE        configuration file\n"
	       "  -d, --database CONNINFO  libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --database-url-file PATH\n"
	       "                           the conninfo or URI on PATH's first line\n"
	       "      --json               one JSON object a line instead of a table\n"
	       "      --quiet              log warnings and errors only\n"
	       "  -v, --verbose            log debug messages\n"
	       "      --log-format FORMAT  logfmt (default) or json, a line each\n"
	       "  -h, --help               show this help\n"
	       "  -V, --version            show the version\n\n"
	       "Run 'pd-cron COMMAND --help' for a command's options. See pd-cron(1).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    PD_APP_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct pd_subprog p = {
	    .name = "pd-cron",
	    .synopsis = SYNOPSIS,
	    .opts = pd_croncmd_opts,
	    .nopts = PD_CRON_NOPTS,
	    .cmds = commands,
	    .count_help = "how many (default %lld, at most %lld)",
	    .xsize = pd_croncmd_xsize,
	    .init = pd_croncmd_init,
	    .set = pd_croncmd_set,
	    .check = pd_croncmd_check,
	};
	struct pd_err e = PD_ERR_INIT;
	struct pd_app a;
	int ch, rc;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	pd_subcmd_complete(&p);
	while ((ch = pd_cli_getopt(argc, argv, "+:c:d:vhV", opts)) != -1) {
		if (ch == 'j')
			a.json = 1;
		else if ((rc = pd_app_option(&a, NULL, ch, optarg, help, SYNOPSIS, argv, &e)) != 0)
			return pd_app_parse_exit(rc, SYNOPSIS, &e);
	}
	return pd_subcmd_main(&p, &a, argc - optind, argv + optind);
}
