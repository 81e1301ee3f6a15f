/*
 * pd-worker: flags and configuration in, lib/worker does the rest (claim,
 * run each handler as a child process or hand the job to a stream handler,
 * keep the leases alive, record the outcome with the lease token).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "cronserve.h"
#include "log.h"
#include "worker.h"

#define SYNOPSIS                                                                                   \
	"usage: pd-worker [-hVv] [-c file] [-d conninfo] [-q queue] [options]\n"                   \
	"                 --handler TYPE=COMMAND ...\n"
#define MAX_HANDLERS 256

static void help(void)
{
	printf(SYNOPSIS
	       "\nClaim jobs and run each one's handler with the payload on stdin.\n\n"
	       "      --handler TYPE=COMMAND  run COMMAND with /bin/sh -c for jobs of TYPE\n"
	       "                              ('*': any)\n"
	       "      --exec TYPE=PATH        exec PATH (no shell) for jobs of TYPE\n"
	       "      --stream TYPE=COMMAND   one long-lived /bin/sh -c COMMAND for jobs of\n"
	       "                              TYPE, a JSON line per job each way\n"
	       "      --stream-exec TYPE=PATH the same, exec PATH (no shell)\n"
	       "      --crontab FILE          serve a crontab: its commands, its schedules\n"
	       "                              (applied with --prune for that file), the ticker\n"
	       "  -q, --queue QUEUE           queue to serve (repeatable; default 'default')\n"
	       "  -j, --concurrency N         jobs in flight at once (default 4)\n"
	       "      --lease DURATION        lease length (default 30s)\n"
	       "      --heartbeat DURATION    lease renewal interval (default: a third of it)\n"
	       "      --poll DURATION         poll interval without notifications (default 1s)\n"
	       "      --drain-timeout DUR     on SIGTERM, wait for handlers this long (30s)\n"
	       "      --batch N               least jobs claimed at once (default: concurrency)\n"
	       "      --batch-max N           most jobs claimed at once (default 1000); between\n"
	       "                              the two, the batch follows the handlers' rate\n"
	       "      --no-reap               do not stand for the reaper role (run pd-reaper)\n"
	       "      --until-idle            exit once nothing is runnable and nothing runs\n"
	       "      --until-settled         exit once no job served will run without help\n"
	       "  -c, --config FILE           configuration file (handlers:, worker:, retry:)\n"
	       "  -d, --database CONNINFO     libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --database-url-file PATH\n"
	       "                              the conninfo or URI on PATH's first line\n"
	       "      --quiet                 log warnings and errors only\n"
	       "  -v, --verbose               log debug messages\n"
	       "      --log-format FORMAT     logfmt (default) or json, a line each\n"
	       "  -h, --help                  show this help\n"
	       "  -V, --version               show the version\n\n"
	       "Handler exit 0 succeeds; 64, 65 or a configured terminal code dead-letters;\n"
	       "anything else is retried with backoff. See pd-worker(1).\n");
}

/* The handlers from the flags (owned strings). */
struct handlers {
	struct pd_handler v[MAX_HANDLERS];
	int n;
	char *owned[MAX_HANDLERS];
	char *argv[MAX_HANDLERS][2];
};

/* TYPE=VALUE for option (--handler, --exec, --stream, --stream-exec). */
static int add_handler(struct handlers *hs, const char *option, const char *arg, int exec,
		       enum pd_handler_mode mode, struct pd_err *e)
{
	struct pd_handler *h;
	char *owned, *eq;

	if (hs->n == MAX_HANDLERS)
		return pd_errf(e, PD_EX_USAGE, "too many handlers (at most %d)", MAX_HANDLERS);
	owned = pd_xstrdup(arg);
	eq = strchr(owned, '=');
	if (eq == NULL || eq == owned || eq[1] == '\0') {
		free(owned);
		return pd_errf(e, PD_EX_USAGE, "%s '%s': expected TYPE=%s", option, arg,
			       exec ? "PATH" : "COMMAND");
	}
	*eq = '\0';
	if (pd_cli_name(option, owned, e) < 0) {
		free(owned);
		return -1;
	}
	h = &hs->v[hs->n];
	memset(h, 0, sizeof(*h));
	hs->owned[hs->n] = owned;
	h->name = owned;
	h->timeout_ms = -1;
	h->mode = mode;
	if (exec) {
		hs->argv[hs->n][0] = eq + 1;
		h->exec_argv = hs->argv[hs->n];
	} else {
		h->run = eq + 1;
	}
	hs->n++;
	return 0;
}

static int parse_args(struct pd_worker_cfg *w, struct handlers *hs, struct pd_app *app,
		      const char **crontab, int argc, char **argv, struct pd_err *e)
{
	enum {
		O_HANDLER = PD_APP_OPT_OWN,
		O_EXEC,
		O_STREAM,
		O_STREAM_EXEC,
		O_LEASE,
		O_BEAT,
		O_NOREAP,
		O_CRONTAB,
	};
	static const struct option opts[] = {
	    {"handler", required_argument, NULL, O_HANDLER},
	    {"exec", required_argument, NULL, O_EXEC},
	    {"stream", required_argument, NULL, O_STREAM},
	    {"stream-exec", required_argument, NULL, O_STREAM_EXEC},
	    {"queue", required_argument, NULL, 'q'},
	    {"lease", required_argument, NULL, O_LEASE},
	    {"heartbeat", required_argument, NULL, O_BEAT},
	    {"no-reap", no_argument, NULL, O_NOREAP},
	    {"crontab", required_argument, NULL, O_CRONTAB},
	    {"until-settled", no_argument, NULL, PD_APP_OPT_SETTLED},
	    {"batch-max", required_argument, NULL, PD_APP_OPT_BATCH_MAX},
	    PD_APP_ENGINE_LONG_OPTIONS,
	    PD_APP_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	static const char *const handler_opts[] = {"--handler", "--exec", "--stream",
						   "--stream-exec"};
	int ch, rc;

	while ((ch = pd_cli_getopt(argc, argv, "+:q:j:c:d:vhV", opts)) != -1) {
		switch (ch) {
		case O_HANDLER:
		case O_EXEC:
		case O_STREAM:
		case O_STREAM_EXEC:
			if (add_handler(hs, handler_opts[ch - O_HANDLER], optarg,
					ch == O_EXEC || ch == O_STREAM_EXEC,
					ch == O_STREAM || ch == O_STREAM_EXEC ? PD_HANDLER_STREAM
									      : PD_HANDLER_PROCESS,
					e) < 0)
				return -1;
			break;
		case 'q':
			if (pd_cli_push("--queue", "queues", optarg, w->queues, &w->nqueues,
					PD_WORKER_MAX_QUEUES, e) < 0)
				return -1;
			break;
		case O_LEASE:
			if (pd_cli_dur("--lease", optarg, &w->lease_ms, e) < 0)
				return -1;
			if (w->lease_ms <= 0)
				return pd_errf(
				    e, PD_EX_USAGE,
				    "option --lease: must be longer than 0 (how long a "
				    "claimed job stays this worker's without a heartbeat)");
			break;
		case O_BEAT:
			if (pd_cli_dur("--heartbeat", optarg, &w->heartbeat_ms, e) < 0)
				return -1;
			break;
		case O_NOREAP:
			w->reap = 0;
			break;
		case O_CRONTAB:
			if (*crontab)
				return pd_errf(e, PD_EX_USAGE, "option --crontab: given twice");
			*crontab = optarg;
			break;
		default:
			if ((rc = pd_app_option(app, &w->engine, ch, optarg, help, SYNOPSIS, argv,
						e)) != 0)
				return rc;
			break;
		}
	}
	if (optind < argc)
		return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'", argv[optind]);
	if (w->engine.until_idle && w->engine.until_settled)
		return pd_errf(e, PD_EX_USAGE, "give --until-idle or --until-settled, not both");
	return 0;
}

int main(int argc, char **argv)
{
	static struct handlers hs;
	static struct pd_cronserve cs;
	struct pd_worker_cfg flags, w;
	const char *crontab = NULL;
	char *cfg_crontab = NULL; /* the config's crontab:, ours: the config may be reloaded */
	struct pd_app app;
	struct pd_err e = PD_ERR_INIT;
	int rc;

	pd_cli_init(argv[0]);
	pd_app_init(&app);
	pd_worker_cfg_init(&flags);
	pd_worker_cfg_init(&w); /* released on every path */
	rc = parse_args(&flags, &hs, &app, &crontab, argc, argv, &e);
	if (rc != 0)
		return pd_app_parse_exit(rc, SYNOPSIS, &e);
	/* A crontab that does not parse: 65, FILE:LINE:COL, before anything else. */
	if (crontab && pd_cronserve_init(&cs, crontab, NULL, &e) < 0)
		goto fail;
	if (crontab)
		flags.ext = &cs.ext;
	flags.handlers = hs.v;
	flags.nhandlers = hs.n;
	w = flags;
	w.flags = &flags; /* SIGHUP settles them over the file again */
	pd_app_source(&app, &w.source);
	if (pd_app_load(&app, &e) < 0)
		goto fail;
	/* The config's crontab: when --crontab gives none (a change needs a restart). */
	if (crontab == NULL && app.cfg.crontab) {
		crontab = cfg_crontab = pd_xstrdup(app.cfg.crontab);
		if (pd_cronserve_init(&cs, crontab, NULL, &e) < 0)
			goto fail;
		flags.ext = w.ext = &cs.ext;
	}
	if (pd_worker_settle(&w, &app.cfg, &e) < 0)
		goto fail;
	if (w.nhandlers == 0 && w.nflows == 0) {
		rc = pd_cli_usage(SYNOPSIS,
				  "no handlers: give --handler TYPE=COMMAND, --exec "
				  "TYPE=PATH, --stream TYPE=COMMAND, --stream-exec "
				  "TYPE=PATH, or a handlers: or workflows: map in the config "
				  "file");
		goto out;
	}
	if (pd_app_connect(&app, 1, &e) < 0 ||
	    (crontab && pd_cronserve_apply(&cs, &app.db, &e) < 0) ||
	    pd_worker_run(&w, &app.db, &e) < 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	pd_die_msg(e.msg);
	rc = e.code;
out:
	for (int i = 0; i < MAX_HANDLERS; i++)
		free(hs.owned[i]);
	pd_worker_cfg_release(&w);
	pd_cronserve_release(&cs);
	free(cfg_crontab);
	pd_app_release(&app);
	return rc;
}
