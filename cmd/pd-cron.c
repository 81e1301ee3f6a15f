/*
 * pd-cron: schedules: add, list, rm, pause, resume, preview, apply, and the ticker (run).
 *
 * Only the common options exist so far; the commands land with issue 5.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "log.h"

#define SYNOPSIS "usage: pd-cron [-hV]\n"

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int ch;

	pd_cli_init(argv[0]);
	while ((ch = getopt_long(argc, argv, "+:hV", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			printf(
			    SYNOPSIS
			    "\nPendulum's pd-cron: schedules: add, list, rm, pause, resume, "
			    "preview, apply, and the ticker (run).\n"
			    "Not implemented in this version: only --help and --version work.\n\n"
			    "  -h, --help     show this help\n"
			    "  -V, --version  show the version\n");
			return pd_cli_finish_stdout();
		case 'V':
			pd_cli_version();
			return pd_cli_finish_stdout();
		default:
			return pd_cli_bad_option(SYNOPSIS, ch, argv);
		}
	}
	pd_die_msg("not implemented in this version");
	return PD_EX_SOFTWARE;
}
