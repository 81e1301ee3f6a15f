/*
 * subcmd: the git-style subcommands of pd-admin and pd-cron from one table
 * shape and one parser. A program lists its options once (struct
 * pd_subopt) and its commands (struct pd_subcmd: name, the options it
 * takes, its operands, summary, handler); pd_subcmd_main finds the command
 * in argv, parses its options through the program's set callback, prints
 * `PROG COMMAND --help` (usage, about, the options it takes) and reports a
 * usage error with the command's synopsis and a pointer to its --help.
 */
#ifndef PD_SUBCMD_H
#define PD_SUBCMD_H

#include "app.h"
#include "buf.h"
#include "render.h"

/* An option a program's commands may take. */
struct pd_subopt {
	const char *name; /* the long name, without "--"; "json" sets a->json */
	int letter;	  /* its short letter, or 0 */
	const char *arg;  /* its value's name ("DURATION"), NULL when it takes none */
	const char *help; /* NULL: the program's count_help */
	const char
	    *key; /* what a command's opts name it by, NULL: name (one long name, two helps) */
};

struct pd_subcall;

/* A command's handler: 0, or -1 with e (code 64: a usage error; an empty msg: said already). */
typedef int pd_subcmd_fn(struct pd_subcall *k, struct pd_err *e);

struct pd_subcmd {
	const char *group, *name; /* "dlq", "replay"; group NULL for one word */
	pd_subcmd_fn *fn;
	const char *usage;	/* after "PROG " */
	const char *summary;	/* for PROG --help */
	const char *about;	/* for PROG COMMAND --help */
	const char *opts;	/* the long names of the options it takes, comma-separated */
	int min_args, max_args; /* operands; max_args -1: any number */
	const char *operand;	/* what missing operands are called: "job id", "role,tenant" */
	long long count_def, count_max; /* its count option's (--limit, -n) default and bound */
	int db; /* connect before fn: 1 checking the schema version, 2 without; 0 not */
};

struct pd_subprog {
	const char *name; /* "pd-admin" */
	const char *synopsis;
	const struct pd_subopt *opts; /* indexed by the program's option ids */
	int nopts;
	const struct pd_subcmd *cmds; /* ends with a NULL name */
	const char *count_help;	      /* an option's help without its own: "%lld" def, max */
	size_t xsize;		      /* the size of the program's values (struct args) */
	/* Set up k->x (zeroed) for k->cmd before its options: defaults. */
	void (*init)(struct pd_subcall *k);
	/* Take option opt (its id) with its value (NULL for none) into k->x. */
	int (*set)(struct pd_subcall *k, int opt, const char *val, struct pd_err *e);
	/* After the options and operands: the rules between them, NULL for none. */
	int (*check)(struct pd_subcall *k, struct pd_err *e);
	/* Once the command is found, before its options (pd_app_load), NULL for none. */
	int (*found)(struct pd_app *a, struct pd_err *e);
};

/* One command being run. */
struct pd_subcall {
	const struct pd_subprog *prog;
	const struct pd_subcmd *cmd;
	struct pd_app *a;
	int argc; /* its operands */
	char **argv;
	void *x;	   /* the program's values, prog->xsize bytes */
	struct pd_fmt fmt; /* --json, and colour on a terminal */
	struct pd_buf out; /* written to stdout after fn, whatever it returns */
};

/*
 * Run the command argv[0] (argv[0..1] for a group) names, argv being what
 * follows the program's own options; `PROG GROUP` alone or with --help
 * lists the group's commands. A main's last step: releases a, finishes
 * stdout (pd_cli_finish_stdout: 70 when it could not be written) and
 * returns the exit status.
 */
int pd_subcmd_main(const struct pd_subprog *p, struct pd_app *a, int argc, char **argv);

/*
 * Have `PROG --complete-words` (pd_cli_getopt) list p's commands with the
 * options each takes, from the tables their parse gives getopt. p is kept.
 */
void pd_subcmd_complete(const struct pd_subprog *p);

/* 1 when c takes the option named (keyed) name. */
int pd_subcmd_takes(const struct pd_subcmd *c, const char *name);

#endif
