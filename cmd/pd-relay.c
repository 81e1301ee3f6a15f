/*
 * pd-relay: flags and configuration in, lib/relay does the rest (drain the
 * outbox: claim messages, run a publish command for each with nothing held,
 * record the outcome fenced on the claim token).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "log.h"
#include "relay.h"

#define SYNOPSIS                                                                                   \
	"usage: pd-relay [-hVv] [-c file] [-d conninfo] [options] --publish COMMAND\n"             \
	"       pd-relay [-hVv] [-c file] [-d conninfo] [options] --exec PATH\n"

static void help(void)
{
	printf(SYNOPSIS
	       "\nClaim outbox messages and run a publish command for each, payload on stdin.\n\n"
	       "      --publish COMMAND       run COMMAND with /bin/sh -c for every topic\n"
	       "      --exec PATH             exec PATH (no shell) for every topic\n"
	       "      --topic TOPIC           claim only this topic (repeatable)\n"
	       "      --timeout DURATION      kill a publish command after this (default 30s)\n"
	       "      --visibility DURATION   a claimed message stays hidden this long\n"
	       "                              (default 60s)\n"
	       "  -j, --concurrency N         publish commands at once (default 4)\n"
	       "      --batch N               messages claimed at once (default: concurrency)\n"
	       "      --poll DURATION         poll interval without notifications (default 1s)\n"
	       "      --drain-timeout DUR     on SIGTERM, wait for commands this long (30s)\n"
	       "      --once                  claim one batch, publish it, exit\n"
	       "      --until-idle            exit once nothing is claimable and nothing runs\n"
	       "  -c, --config FILE           configuration file (relay:, retry:)\n"
	       "  -d, --database CONNINFO     libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	       "      --database-url-file PATH\n"
	       "                              the conninfo or URI on PATH's first line\n"
	       "      --quiet                 log warnings and errors only\n"
	       "  -v, --verbose               log debug messages\n"
	       "      --log-format FORMAT     logfmt (default) or json, a line each\n"
	       "  -h, --help                  show this help\n"
	       "  -V, --version               show the version\n\n"
	       "Exit 0 publishes; 64 or 65 dead-letters; anything else is retried with backoff.\n"
	       "Per message key, messages are published in the order recorded. See pd-relay(1).\n");
}

static int set_cmd(struct pd_relay_cfg *r, const char *arg, int exec, struct pd_err *e)
{
	static char *exec_one[2];
	struct pd_handler *c = &r->cmds[0];

	if (r->ncmds > 0)
		return pd_errf(e, PD_EX_USAGE, "give --publish or --exec once");
	if (*arg == '\0')
		return pd_errf(e, PD_EX_USAGE, "option --%s: must not be empty",
			       exec ? "exec" : "publish");
	memset(c, 0, sizeof(*c));
	c->name = (char *)"*";
	c->timeout_ms = -1;
	if (exec) {
		exec_one[0] = (char *)arg;
		c->exec_argv = exec_one;
	} else {
		c->run = (char *)arg;
	}
	r->ncmds = 1;
	return 0;
}

static int parse_args(struct pd_relay_cfg *r, struct pd_app *app, int argc, char **argv,
		      struct pd_err *e)
{
	enum {
		O_PUBLISH = PD_APP_OPT_OWN,
		O_EXEC,
		O_TIMEOUT,
		O_VISIBILITY,
		O_ONCE,
		O_TOPIC,
	};
	static const struct option opts[] = {
	    {"publish", required_argument, NULL, O_PUBLISH},
	    {"exec", required_argument, NULL, O_EXEC},
	    {"topic", required_argument, NULL, O_TOPIC},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"visibility", required_argument, NULL, O_VISIBILITY},
	    {"once", no_argument, NULL, O_ONCE},
	    PD_APP_ENGINE_LONG_OPTIONS,
	    PD_APP_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	int ch, rc;

	while ((ch = pd_cli_getopt(argc, argv, "+:j:c:d:vhV", opts)) != -1) {
		switch (ch) {
		case O_PUBLISH:
		case O_EXEC:
			if (set_cmd(r, optarg, ch == O_EXEC, e) < 0)
				return -1;
			break;
		case O_TOPIC:
			if (pd_cli_push("--topic", "topics", optarg, r->topics, &r->ntopics,
					PD_RELAY_MAX_TOPICS, e) < 0)
				return -1;
			break;
		case O_TIMEOUT:
			if (pd_cli_dur("--timeout", optarg, &r->timeout_ms, e) < 0)
				return -1;
			if (r->timeout_ms <= 0)
				return pd_errf(e, PD_EX_USAGE,
					       "option --timeout: must be positive");
			break;
		case O_VISIBILITY:
			if (pd_cli_dur("--visibility", optarg, &r->visibility_ms, e) < 0)
				return -1;
			if (r->visibility_ms <= 0)
				return pd_errf(e, PD_EX_USAGE,
					       "option --visibility: must be positive");
			break;
		case O_ONCE:
			r->once = 1;
			break;
		default:
			if ((rc = pd_app_option(app, &r->engine, ch, optarg, help, SYNOPSIS, argv,
						e)) != 0)
				return rc;
			break;
		}
	}
	if (optind < argc)
		return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'", argv[optind]);
	if (r->once && r->engine.until_idle)
		return pd_errf(e, PD_EX_USAGE, "give --once or --until-idle, not both");
	return 0;
}

int main(int argc, char **argv)
{
	static struct pd_relay_cfg flags, r;
	struct pd_app app;
	struct pd_err e = PD_ERR_INIT;
	int rc;

	pd_cli_init(argv[0]);
	pd_app_init(&app);
	pd_relay_cfg_init(&flags);
	rc = parse_args(&flags, &app, argc, argv, &e);
	if (rc != 0)
		return pd_app_parse_exit(rc, SYNOPSIS, &e);
	r = flags;
	r.flags = &flags; /* SIGHUP settles them over the file again */
	pd_app_source(&app, &r.source);
	if (pd_app_load(&app, &e) < 0 || pd_relay_settle(&r, &app.cfg, &e) < 0 ||
	    pd_app_connect(&app, 1, &e) < 0 || pd_relay_run(&r, &app.db, &e) < 0) {
		pd_die_msg(e.msg);
		rc = e.code;
	}
	pd_app_release(&app);
	return rc;
}
