/*
 * pd-reaper: give expired leases back. A job whose worker died returns to
 * PENDING; one whose attempts are exhausted, or that was at-most-once, is
 * dead-lettered with the reason. The lost attempt is recorded. What a dead
 * worker's handlers left running on this host is killed first (reap.h).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "cli.h"
#include "log.h"
#include "reap.h"

#define SYNOPSIS "usage: pd-reaper [-hqVv] [-c file] [-d conninfo] [--interval DURATION] [--once]\n"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void help(void)
{
	printf(SYNOPSIS
	       "\nGive expired leases back to their queues; dead-letter jobs whose attempts\n"
	       "are exhausted and at-most-once jobs.\n\n"
	       "      --interval DURATION  time between passes (default 5s)\n"
	       "      --once               one pass, print what it did, and exit\n"
	       "  -c, --config FILE        configuration file\n"
	       "  -d, --database CONNINFO  libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "  -q, --quiet              log warnings and errors only\n"
	       "  -v, --verbose            log debug messages\n"
	       "  -h, --help               show this help\n"
	       "  -V, --version            show the version\n\n"
	       "pd-worker does the same pass unless --no-reap. See pd-reaper(1).\n");
}

int main(int argc, char **argv)
{
	enum { O_INTERVAL = 256, O_ONCE };
	static const struct option opts[] = {
	    {"interval", required_argument, NULL, O_INTERVAL},
	    {"once", no_argument, NULL, O_ONCE},
	    {"config", required_argument, NULL, 'c'},
	    {"database", required_argument, NULL, 'd'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct pd_err e = PD_ERR_INIT;
	struct pd_app a;
	long long interval = -1;
	int ch, once = 0, requeued, dead;
	struct sigaction sa;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	while ((ch = getopt_long(argc, argv, "+:c:d:qvhV", opts, NULL)) != -1) {
		switch (ch) {
		case O_INTERVAL:
			if (pd_cli_dur("--interval", optarg, &interval, &e) < 0)
				return pd_cli_usage(SYNOPSIS, "%s", e.msg);
			if (interval <= 0)
				return pd_cli_usage(SYNOPSIS,
						    "option --interval: must be positive");
			break;
		case O_ONCE:
			once = 1;
			break;
		case 'c':
			a.config_path = optarg;
			break;
		case 'd':
			a.database = optarg;
			break;
		case 'q':
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
	if (optind < argc)
		return pd_cli_usage(SYNOPSIS, "unexpected argument '%s'", argv[optind]);
	if (pd_app_load(&a, &e) < 0 || pd_app_connect(&a, 1, &e) < 0)
		goto fail;
	if (interval < 0)
		interval = a.cfg.reaper.interval_ms;
	if (once) {
		if (pd_reap_pass(&a.db, &requeued, &dead, &e) < 0)
			goto fail;
		printf("requeued %d, dead-lettered %d\n", requeued, dead);
		pd_app_release(&a);
		return pd_cli_finish_stdout();
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the sleep ends at once */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pd_log(PD_LOG_INFO, "reaper started", "interval_ms=%lld", interval);
	while (!stop) {
		struct timespec ts = {interval / 1000, (interval % 1000) * 1000000L};

		pd_err_clear(&e);
		if (pd_reap_pass(&a.db, &requeued, &dead, &e) < 0) {
			if (e.code != PD_EX_UNAVAILABLE)
				goto fail;
			pd_log(PD_LOG_WARN, "database unavailable", "error=%s",
			       pd_log_quote((char[600]){0}, 600, e.msg));
			if (pd_db_reconnect(&a.db, (volatile int *)&stop, &e) < 0)
				break;
			continue;
		}
		if (requeued || dead)
			pd_log(PD_LOG_INFO, "expired leases given back", "requeued=%d dead=%d",
			       requeued, dead);
		nanosleep(&ts, NULL);
	}
	pd_log(PD_LOG_INFO, "reaper stopped", NULL);
	pd_app_release(&a);
	return 0;
fail:
	pd_die_msg(e.msg);
	pd_app_release(&a);
	return e.code;
}
