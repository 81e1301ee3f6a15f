/*
 * pd-reaper: flags and configuration in, lib/reaper does the rest (give
 * expired leases back: a job whose worker died returns to PENDING, one
 * whose attempts are exhausted, or that was at-most-once, is dead-lettered
 * with the reason; what a dead worker's handlers left running on this host
 * is killed first).
 */
#include <getopt.h>
#include <stdio.h>

#include "app.h"
#include "cli.h"
#include "log.h"
#include "reaper.h"

#define SYNOPSIS "usage: pd-reaper [-hVv] [-c file] [-d conninfo] [--interval DURATION] [--once]\n"

static void help(void)
{
	printf(SYNOPSIS
	       "\nGive expired leases back to their queues; dead-letter jobs whose attempts\n"
	       "are exhausted and at-most-once jobs; cancel jobs not started by their start\n"
	       "deadline; prune finished history older than its retention.\n\n"
	       "      --interval DURATION  time between passes (default 5s)\n"
	       "      --once               one pass, print what it did, and exit\n"
	       "  -c, --config FILE        configuration file\n"
	       "  -d, --database CONNINFO  libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --database-url-file PATH\n"
	       "                           the conninfo or URI on PATH's first line\n"
	       "      --quiet              log warnings and errors only\n"
	       "  -v, --verbose            log debug messages\n"
	       "      --log-format FORMAT  logfmt (default) or json, a line each\n"
	       "  -h, --help               show this help\n"
	       "  -V, --version            show the version\n\n"
	       "One elected reaper passes for the fleet: pd-reaper or a pd-worker without\n"
	       "--no-reap. See pd-reaper(1).\n");
}

int main(int argc, char **argv)
{
	enum { O_INTERVAL = PD_APP_OPT_OWN, O_ONCE };
	static const struct option opts[] = {
	    {"interval", required_argument, NULL, O_INTERVAL},
	    {"once", no_argument, NULL, O_ONCE},
	    PD_APP_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct pd_err e = PD_ERR_INIT;
	struct pd_reaper_cfg flags, r;
	struct pd_reaper_stats st;
	struct pd_app a;
	int ch, rc = 0;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	pd_reaper_cfg_init(&flags);
	while ((ch = pd_cli_getopt(argc, argv, "+:c:d:vhV", opts)) != -1) {
		switch (ch) {
		case O_INTERVAL:
			if (pd_cli_dur("--interval", optarg, &flags.interval_ms, &e) < 0)
				return pd_cli_usage(SYNOPSIS, "%s", e.msg);
			if (flags.interval_ms <= 0)
				return pd_cli_usage(SYNOPSIS,
						    "option --interval: must be positive");
			break;
		case O_ONCE:
			flags.once = 1;
			break;
		default:
			if ((rc = pd_app_option(&a, NULL, ch, optarg, help, SYNOPSIS, argv, &e)) !=
			    0)
				return pd_app_parse_exit(rc, SYNOPSIS, &e);
			break;
		}
	}
	if (optind < argc)
		return pd_cli_usage(SYNOPSIS, "unexpected argument '%s'", argv[optind]);
	r = flags;
	r.flags = &flags; /* SIGHUP settles them over the file again */
	pd_app_source(&a, &r.source);
	if (pd_app_load(&a, &e) < 0 || pd_app_connect(&a, 1, &e) < 0)
		goto fail;
	pd_reaper_settle(&r, &a.cfg);
	if (pd_reaper_run(&r, &a.db, &st, &e) < 0)
		goto fail;
	if (r.once) {
		printf("requeued %lld, dead-lettered %lld\n", st.requeued, st.dead);
		if (st.pruned > 0)
			printf("pruned %lld rows of finished history\n", st.pruned);
		rc = pd_cli_finish_stdout();
	}
	pd_reaper_cfg_release(&r);
	pd_app_release(&a);
	return rc;
fail:
	pd_die_msg(e.msg);
	pd_reaper_cfg_release(&r);
	pd_app_release(&a);
	return e.code;
}
