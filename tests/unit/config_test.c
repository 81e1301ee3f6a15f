/*
 * config_test: lib/yaml (the tree, positions, accessors, refusals) and
 * lib/config (lookup, every key, defaults, every kind of error, with the
 * exact file:line:column).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "reaper.h"
#include "ydoc.h"
#include "tap.h"

static char dir[200];  /* $TMPDIR/pd-config-test.XXXXXX */
static char path[256]; /* dir/pd.yaml */

static void write_file(const char *p, const char *text)
{
	FILE *fp = fopen(p, "w");

	if (fp == NULL || fputs(text, fp) < 0 || fclose(fp) != 0) {
		perror(p);
		exit(1);
	}
}

/* Load text as dir/pd.yaml into c (initialised here); returns the rc. */
static int load(struct pd_config *c, struct pd_err *e, const char *text)
{
	pd_config_init(c);
	pd_err_clear(e);
	write_file(path, text);
	return pd_config_load(c, path, e);
}

/* The file must load into c (initialised here; release it). */
static void good(struct pd_config *c, const char *text, const char *name)
{
	struct pd_err e = PD_ERR_INIT;

	if (!ok(load(c, &e, text) == 0, name))
		diag(e.msg);
}

/* The file must be refused with exactly "dir/pd.yaml:<where>". */
static void bad(const char *text, const char *where, const char *name)
{
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	char want[600];
	int rc = load(&c, &e, text);

	snprintf(want, sizeof(want), "%s:%s", path, where);
	ok(rc == -1 && e.code == PD_EX_CONFIG, name);
	is_str(e.msg, want, "  with the message");
	pd_config_release(&c);
}

/* Parse text as YAML named "t.yaml"; returns the rc. */
static int yload(struct pd_ydoc *d, struct pd_err *e, const char *text)
{
	pd_err_clear(e);
	return pd_ydoc_load_string(d, "t.yaml", text, strlen(text), e);
}

static void ybad(const char *text, const char *want, const char *name)
{
	struct pd_ydoc d = PD_YDOC_INIT;
	struct pd_err e = PD_ERR_INIT;

	ok(yload(&d, &e, text) == -1 && e.code == PD_EX_CONFIG && d.root == NULL, name);
	is_str(e.msg, want, "  with the message");
	pd_ydoc_release(&d);
}

static const char full[] = "# every key\n"
			   "database_url: postgresql://pd@localhost:5433/pd\n"
			   "log_level: warn\n"
			   "worker:\n"
			   "  queues: [default, email]\n"
			   "  concurrency: 16\n"
			   "  lease: 2m\n"
			   "  heartbeat: 20s\n"
			   "  poll: 250ms\n"
			   "  drain_timeout: 1m30s\n"
			   "  batch: 32\n"
			   "  batch_max: 500\n"
			   "  reap: no\n"
			   "  result_limit: 65536\n"
			   "  kill_grace: 3\n"
			   "retry:\n"
			   "  base: 1.5\n"
			   "  cap: 2h\n"
			   "  max_snoozes: 7\n"
			   "reaper:\n"
			   "  interval: 10s\n"
			   "handlers:\n"
			   "  email.send:\n"
			   "    run: ./send-mail --to \"$PD_JOB_ID\"\n"
			   "    timeout: 30s\n"
			   "    terminal_exit_codes: [3, 4, 255]\n"
			   "    concurrency_key: smtp\n"
			   "    max_snoozes: 3\n"
			   "  resize:\n"
			   "    exec: [/usr/bin/convert, -resize, 50%]\n"
			   "  one:\n"
			   "    exec: /usr/local/bin/one\n"
			   "    terminal_exit_codes: 9\n"
			   "    mode: process\n"
			   "  thumbs:\n"
			   "    exec: /usr/local/bin/thumbs\n"
			   "    mode: stream\n"
			   "    timeout: 5s\n"
			   "  \"*\":\n"
			   "    run: exit 0\n";

static void test_full(void)
{
	struct pd_config c;
	const struct pd_handler *h;

	good(&c, full, "a file with every key loads");
	is_str(c.path, path, "path is the file read");
	is_str(c.database_url, "postgresql://pd@localhost:5433/pd", "database_url");
	is_int(c.log_level, PD_LOG_WARN, "log_level");
	is_int(c.worker.nqueues, 2, "worker.queues has two");
	is_str(c.worker.queues[0], "default", "worker.queues[0]");
	is_str(c.worker.queues[1], "email", "worker.queues[1]");
	ok(c.worker.queues[2] == NULL, "worker.queues is NULL-terminated");
	is_int(c.worker.engine.concurrency, 16, "worker.engine.concurrency");
	is_int(c.worker.lease_ms, 120000, "worker.lease");
	is_int(c.worker.heartbeat_ms, 20000, "worker.heartbeat");
	is_int(c.worker.engine.poll_ms, 250, "worker.poll");
	is_int(c.worker.engine.drain_ms, 90000, "worker.drain_timeout");
	is_int(c.worker.engine.batch, 32, "worker.engine.batch");
	is_int(c.worker.engine.batch_max, 500, "worker.engine.batch_max");
	is_int(c.worker.reap, 0, "worker.reap");
	is_int(c.worker.result_limit, 65536, "worker.result_limit");
	is_int(c.worker.engine.grace_ms, 3000, "worker.kill_grace (plain seconds)");
	is_int(c.retry.base_ms, 1500, "retry.base (fractional seconds)");
	is_int(c.retry.cap_ms, 7200000, "retry.cap");
	is_int(c.retry.max_snoozes, 7, "retry.max_snoozes");
	is_int(c.reaper.interval_ms, 10000, "reaper.interval");
	is_int(c.nhandlers, 5, "five handlers");

	h = &c.handlers[0];
	is_str(h->name, "email.send", "handler 1 type");
	is_str(h->run, "./send-mail --to \"$PD_JOB_ID\"", "handler 1 run");
	ok(h->exec_argv == NULL, "handler 1 has no exec");
	is_int(h->timeout_ms, 30000, "handler 1 timeout");
	is_int(h->nterminal, 3, "handler 1 has three terminal codes");
	ok(h->terminal_codes[0] == 3 && h->terminal_codes[1] == 4 && h->terminal_codes[2] == 255,
	   "handler 1 terminal codes 3 4 255");
	is_str(h->concurrency_key, "smtp", "handler 1 concurrency_key");
	is_int(h->max_snoozes, 3, "handler 1 max_snoozes");
	is_int(c.handlers[1].max_snoozes, 0, "handler 2: no max_snoozes (retry's)");

	h = &c.handlers[1];
	is_str(h->name, "resize", "handler 2 type");
	ok(h->run == NULL, "handler 2 has no run");
	is_str(h->exec_argv[0], "/usr/bin/convert", "handler 2 argv[0]");
	is_str(h->exec_argv[1], "-resize", "handler 2 argv[1]");
	is_str(h->exec_argv[2], "50%", "handler 2 argv[2]");
	ok(h->exec_argv[3] == NULL, "handler 2 argv is NULL-terminated");
	is_int(h->timeout_ms, -1, "handler 2 timeout unset");
	is_int(h->nterminal, 0, "handler 2 has no terminal codes");
	ok(h->concurrency_key == NULL, "handler 2 has no concurrency_key");

	h = &c.handlers[2];
	is_str(h->exec_argv[0], "/usr/local/bin/one", "a single exec string is the program");
	ok(h->exec_argv[1] == NULL, "  alone, not split on spaces");
	ok(h->nterminal == 1 && h->terminal_codes[0] == 9, "a single terminal code");
	is_int(h->mode, PD_HANDLER_PROCESS, "mode: process");
	is_int(c.handlers[0].mode, PD_HANDLER_PROCESS, "no mode: process");

	h = &c.handlers[3];
	is_str(h->name, "thumbs", "handler 4 type");
	is_int(h->mode, PD_HANDLER_STREAM, "mode: stream");
	is_int(h->timeout_ms, 5000, "a stream handler's timeout (per job)");

	is_str(c.handlers[4].name, "*", "handler '*'");
	is_str(c.handlers[4].run, "exit 0", "handler '*' run");

	ok(pd_handler_find(c.handlers, c.nhandlers, "resize") == &c.handlers[1],
	   "handler lookup: exact type");
	ok(pd_handler_find(c.handlers, c.nhandlers, "other") == &c.handlers[4],
	   "handler lookup: '*' otherwise");
	ok(pd_y_get(c.doc.root, "worker") != NULL, "the document is kept for later sections");

	pd_config_release(&c);
	ok(c.path == NULL && c.handlers == NULL && c.doc.root == NULL && c.worker.lease_ms == 30000,
	   "release frees and restores the defaults");
	pd_config_release(&c);
	ok(1, "release twice is safe");
}

static void check_defaults(const struct pd_config *c, const char *what)
{
	char name[128];

	snprintf(name, sizeof(name), "%s: all defaults", what);
	ok(c->database_url == NULL && c->log_level == -1 && c->worker.queues == NULL &&
	       c->worker.nqueues == 0 && c->worker.engine.concurrency == 4 &&
	       c->worker.lease_ms == 30000 && c->worker.heartbeat_ms == -1 &&
	       c->worker.engine.poll_ms == 1000 && c->worker.engine.drain_ms == 30000 &&
	       c->worker.engine.grace_ms == 5000 && c->worker.engine.batch == 0 &&
	       c->worker.reap == 1 && c->worker.result_limit == 1048576 &&
	       c->retry.base_ms == 1000 && c->retry.cap_ms == 3600000 &&
	       c->retry.max_snoozes == 100 && c->reaper.interval_ms == 5000 &&
	       c->handlers == NULL && c->nhandlers == 0,
	   name);
}

static void test_lookup(void)
{
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	char other[300], missing[300], want[400];

	snprintf(other, sizeof(other), "%s/other.yaml", dir);
	snprintf(missing, sizeof(missing), "%s/nope.yaml", dir);
	write_file(other, "worker:\n  concurrency: 7\n");

	pd_config_init(&c);
	check_defaults(&c, "pd_config_init");

	unsetenv("PD_CONFIG");
	if (access(PD_CONFIG_DEFAULT_PATH, F_OK) == 0) {
		ok(1, "# SKIP " PD_CONFIG_DEFAULT_PATH " exists here");
	} else {
		ok(pd_config_load(&c, NULL, &e) == 0 && c.path == NULL,
		   "no file anywhere: no error");
		check_defaults(&c, "no file");
	}
	pd_config_release(&c);

	setenv("PD_CONFIG", other, 1);
	pd_config_init(&c);
	ok(pd_config_load(&c, NULL, &e) == 0, "$PD_CONFIG is read");
	is_str(c.path, other, "  path is $PD_CONFIG");
	is_int(c.worker.engine.concurrency, 7, "  its values are used");
	pd_config_release(&c);

	write_file(path, "worker:\n  concurrency: 9\n");
	pd_config_init(&c);
	ok(pd_config_load(&c, path, &e) == 0, "an explicit file wins over $PD_CONFIG");
	is_int(c.worker.engine.concurrency, 9, "  its values are used");
	pd_config_release(&c);

	pd_err_clear(&e);
	pd_config_init(&c);
	ok(pd_config_load(&c, missing, &e) == -1 && e.code == PD_EX_CONFIG,
	   "a missing explicit file is an error");
	snprintf(want, sizeof(want), "config file '%s': No such file or directory", missing);
	is_str(e.msg, want, "  with the message");
	pd_config_release(&c);

	setenv("PD_CONFIG", missing, 1);
	pd_err_clear(&e);
	pd_config_init(&c);
	ok(pd_config_load(&c, NULL, &e) == -1 && e.code == PD_EX_CONFIG,
	   "a missing $PD_CONFIG file is an error");
	is_str(e.msg, want, "  with the message");
	pd_config_release(&c);

	pd_err_clear(&e);
	pd_config_init(&c);
	ok(pd_config_load(&c, dir, &e) == -1 && e.code == PD_EX_CONFIG, "a directory is an error");
	snprintf(want, sizeof(want), "cannot read '%s': Is a directory", dir);
	is_str(e.msg, want, "  with the message");
	pd_config_release(&c);
	unsetenv("PD_CONFIG");

	ok(load(&c, &e, "") == 0, "an empty file loads");
	is_str(c.path, path, "  path is set");
	check_defaults(&c, "empty file");
	pd_config_release(&c);
	ok(load(&c, &e, "# nothing\n\n# here\n") == 0, "a file of comments loads");
	check_defaults(&c, "comments only");
	pd_config_release(&c);
	ok(load(&c, &e, "---\n...\n") == 0, "an empty document loads");
	check_defaults(&c, "empty document");
	pd_config_release(&c);
	ok(load(&c, &e, "worker:\nretry: ~\nhandlers:\n") == 0, "null sections are empty");
	check_defaults(&c, "null sections");
	pd_config_release(&c);
	ok(load(&c, &e, "{worker: {queues: solo, reap: ON}, log_level: debug}\n") == 0,
	   "flow style and a single queue string");
	ok(c.worker.nqueues == 1 && strcmp(c.worker.queues[0], "solo") == 0 &&
	       c.worker.queues[1] == NULL,
	   "  a single string is a list of one");
	ok(c.worker.reap == 1 && c.log_level == PD_LOG_DEBUG, "  ON is true, debug is 0");
	pd_config_release(&c);
	ok(load(&c, &e, "log_level: error\ndatabase_url: ''\n") == 0, "an empty database_url");
	ok(c.log_level == PD_LOG_ERROR && c.database_url && c.database_url[0] == '\0',
	   "  is kept as ''");
	pd_config_release(&c);
	ok(c.prepared_statements == PD_PREPARE_AUTO && c.listen_url == NULL,
	   "prepared_statements: auto and no listen_url by default");
	pd_config_release(&c);
	ok(load(&c, &e, "prepared_statements: on\nlisten_url: host=/run/pg dbname=x\n") == 0,
	   "prepared_statements on, a listen_url");
	ok(c.prepared_statements == PD_PREPARE_ON && c.listen_url &&
	       strcmp(c.listen_url, "host=/run/pg dbname=x") == 0,
	   "  on (a string, not a YAML boolean), the listen_url kept");
	pd_config_release(&c);
	ok(load(&c, &e, "prepared_statements: off\n") == 0 &&
	       c.prepared_statements == PD_PREPARE_OFF,
	   "prepared_statements off");
	pd_config_release(&c);
}

static void test_errors(void)
{
	/* Unknown keys, at every level, with the exact position. */
	bad("retires: 3\n", "1:1: unknown key 'retires'", "unknown top-level key");
	bad("worker: {}\nworkr:\n  poll: 1s\n", "2:1: unknown key 'workr'; did you mean 'worker'?",
	    "unknown top-level key with a hint");
	bad("cron: {}\n", "1:1: unknown key 'cron'", "no cron section yet");
	bad("worker:\n  lease: 1m\n  concurency: 4\n",
	    "3:3: unknown key 'concurency' in 'worker'; did you mean 'concurrency'?",
	    "unknown key in worker");
	bad("retry:\n    bsae: 1s\n", "2:5: unknown key 'bsae' in 'retry'; did you mean 'base'?",
	    "unknown key in retry (transposition)");
	bad("reaper: {once: true}\n", "1:10: unknown key 'once' in 'reaper'",
	    "unknown key in reaper (flow)");
	bad("handlers:\n  a:\n    run: x\n    tiemout: 1s\n",
	    "4:5: unknown key 'tiemout' in 'a'; did you mean 'timeout'?",
	    "unknown key in a handler");
	bad("handlers:\n  a:\n    rum: x\n", "3:5: unknown key 'rum' in 'a'; did you mean 'run'?",
	    "unknown key in a handler, short");
	bad("handlers:\n  a:\n    xyz: x\n", "3:5: unknown key 'xyz' in 'a'",
	    "unknown short key has no far-fetched hint");

	/* Wrong types and ranges. */
	bad("- a\n- b\n", "1:1: the top level: expected a mapping, got a sequence",
	    "a list at the top");
	bad("just text\n", "1:1: the top level: expected a mapping, got 'just text'",
	    "a scalar at the top");
	bad("worker: [a]\n", "1:9: 'worker': expected a mapping, got a sequence",
	    "worker is a list");
	bad("worker: 4\n", "1:9: 'worker': expected a mapping, got '4'", "worker is a scalar");
	bad("worker:\n  concurrency: lots\n",
	    "2:16: 'concurrency': expected an integer from 1 to 1024, got 'lots'",
	    "concurrency not a number");
	bad("worker:\n  concurrency: 0\n",
	    "2:16: 'concurrency': expected an integer from 1 to 1024, got '0'", "concurrency 0");
	bad("worker:\n  concurrency: 1025\n",
	    "2:16: 'concurrency': expected an integer from 1 to 1024, got '1025'",
	    "concurrency too big");
	bad("worker:\n  concurrency: \"4\"\n",
	    "2:16: 'concurrency': expected an integer from 1 to 1024, got the quoted string '4'",
	    "concurrency quoted");
	bad("worker:\n  concurrency: 4.0\n",
	    "2:16: 'concurrency': expected an integer from 1 to 1024, got '4.0'",
	    "concurrency fractional");
	bad("worker:\n  concurrency:\n",
	    "2:15: 'concurrency': expected an integer from 1 to 1024, got null",
	    "concurrency null");
	bad("worker:\n  batch: 1001\n",
	    "2:10: 'batch': expected an integer from 1 to 1000, got '1001'", "batch too big");
	bad("worker:\n  batch_max: 0\n",
	    "2:14: 'batch_max': expected an integer from 1 to 1000, got '0'", "batch_max zero");
	bad("retry:\n  max_snoozes: 1000001\n",
	    "2:16: 'max_snoozes': expected an integer from 0 to 1000000, got '1000001'",
	    "max_snoozes too big");
	bad("worker:\n  result_limit: 1073741825\n",
	    "2:17: 'result_limit': expected an integer from 1 to 1073741824, got '1073741825'",
	    "result_limit too big");
	bad("worker:\n  lease: 5x\n",
	    "2:10: 'lease': invalid duration '5x': expected a number with ms, s, m, h or d",
	    "lease junk");
	bad("worker:\n  lease: 0s\n",
	    "2:10: 'lease': expected a duration from 1ms to 365d, got '0s'", "lease zero");
	bad("worker:\n  poll: 366d\n",
	    "2:9: 'poll': expected a duration from 1ms to 365d, got '366d'", "poll too long");
	bad("worker:\n  heartbeat: [1s]\n",
	    "2:14: 'heartbeat': expected a duration, got a sequence", "heartbeat a list");
	bad("worker:\n  reap: maybe\n", "2:9: 'reap': expected true or false, got 'maybe'",
	    "reap not a bool");
	bad("worker:\n  reap: 'yes'\n",
	    "2:9: 'reap': expected true or false, got the quoted string 'yes'", "reap quoted");
	bad("worker:\n  queues: {a: b}\n", "2:11: 'queues': expected a sequence, got a mapping",
	    "queues a mapping");
	bad("worker:\n  queues: []\n",
	    "2:11: 'queues': expected a queue name or a list of them, got []", "queues empty");
	bad("worker:\n  queues: [a, '']\n", "2:15: 'queues' item 2: expected a queue name, got ''",
	    "an empty queue name");
	bad("worker:\n  queues:\n    - a\n    - [b]\n",
	    "4:7: 'queues' item 2: expected a string, got a sequence", "a nested list in queues");
	bad("log_level: loud\n",
	    "1:12: 'log_level': expected debug, info, warn or error, got 'loud'",
	    "log_level unknown");
	bad("database_url: {host: x}\n", "1:15: 'database_url': expected a string, got a mapping",
	    "database_url a mapping");
	bad("prepared_statements: yes\n",
	    "1:22: 'prepared_statements': expected auto, on or off, got 'yes'",
	    "prepared_statements unknown");
	bad("listen_url: [a]\n", "1:13: 'listen_url': expected a string, got a sequence",
	    "listen_url a list");
	bad("retry:\n  cap: -1s\n",
	    "2:8: 'cap': invalid duration '-1s': expected a number with ms, s, m, h or d",
	    "negative duration");

	/* Handlers. */
	bad("handlers: [a]\n", "1:11: 'handlers': expected a mapping, got a sequence",
	    "handlers a list");
	bad("handlers:\n  a: ./run\n", "2:6: 'a': expected a mapping, got './run'",
	    "a handler is a scalar");
	bad("handlers:\n  a:\n    run: x\n    mode: streaming\n",
	    "4:11: 'mode': expected process or stream, got 'streaming'", "an unknown mode");
	bad("handlers:\n  a:\n    run: x\n    mode: [stream]\n",
	    "4:11: 'mode': expected a string, got a sequence", "mode a list");
	bad("handlers:\n  a:\n    run: x\n    mode: stream\n    terminal_exit_codes: [3]\n",
	    "5:26: 'terminal_exit_codes': a stream handler has no exit status per job (its "
	    "answers say \"terminal\": true)",
	    "terminal exit codes on a stream handler");
	bad("handlers:\n  a:\n    run: x\n    mdoe: stream\n",
	    "4:5: unknown key 'mdoe' in 'a'; did you mean 'mode'?", "a misspelt mode key");
	bad("handlers:\n  a:\n    run: x\n    exec: /bin/x\n",
	    "2:3: handler 'a' has both 'run' and 'exec': set exactly one", "run and exec both set");
	bad("handlers:\n  b:\n    timeout: 1s\n",
	    "2:3: handler 'b' has neither 'run' nor 'exec': set exactly one",
	    "neither run nor exec");
	bad("handlers:\n  b:\n", "2:3: handler 'b' has neither 'run' nor 'exec': set exactly one",
	    "an empty handler");
	bad("handlers:\n  '':\n    run: x\n", "2:3: a handler's job type must not be empty",
	    "an empty job type");
	bad("handlers:\n  a:\n    run: ''\n", "3:10: 'run': expected a command, got ''",
	    "run empty");
	bad("handlers:\n  a:\n    run: [x]\n", "3:10: 'run': expected a string, got a sequence",
	    "run a list");
	bad("handlers:\n  a:\n    exec: []\n",
	    "3:11: 'exec': expected a program or a list of them, got []", "exec empty list");
	bad("handlers:\n  a:\n    exec: [x, {y: 1}]\n",
	    "3:15: 'exec' item 2: expected a string, got a mapping", "exec argument a mapping");
	bad("handlers:\n  a:\n    run: x\n    timeout: 0\n",
	    "4:14: 'timeout': expected a duration from 1ms to 365d, got '0'", "timeout zero");
	bad("handlers:\n  a:\n    run: x\n    terminal_exit_codes: [1, 256]\n",
	    "4:30: 'terminal_exit_codes' item 2: expected an integer from 1 to 255, got '256'",
	    "terminal code too big");
	bad("handlers:\n  a:\n    run: x\n    terminal_exit_codes: [0]\n",
	    "4:27: 'terminal_exit_codes' item 1: expected an integer from 1 to 255, got '0'",
	    "terminal code zero");
	bad("handlers:\n  a:\n    run: x\n    terminal_exit_codes: {a: 1}\n",
	    "4:26: 'terminal_exit_codes': expected a sequence, got a mapping",
	    "terminal codes a mapping");
	bad("handlers:\n  a:\n    run: x\n    terminal_exit_codes: [1,2,3,4,5,6,7,8,9,10,11,12,13,"
	    "14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33]\n",
	    "4:26: 'terminal_exit_codes': at most 32 exit codes, got 33",
	    "too many terminal codes");

	/* YAML-level refusals come out the same way. */
	bad("worker:\n  lease: [1s\n",
	    "3:1: did not find expected ',' or ']' while parsing a flow sequence started at line "
	    "2, column 10",
	    "a YAML syntax error");
	bad("worker:\n  lease: 1s\n poll: 1s\n",
	    "3:2: did not find expected key while parsing a block mapping started at line 1, "
	    "column 1",
	    "bad indentation");
	bad("base: &b 1s\nretry:\n  cap: *b\n", "1:7: anchors and aliases are not supported",
	    "an anchor and alias");
	bad("retry:\n  cap: *b\n", "2:8: anchors and aliases are not supported",
	    "an alias without an anchor");
	bad("worker:\n  poll: 1s\n  lease: 1m\n  poll: 2s\n",
	    "4:3: duplicate key 'poll' (first at line 2, column 3)", "a duplicate key");
	bad("handlers:\n  a: {run: x}\n  a: {run: y}\n",
	    "3:3: duplicate key 'a' (first at line 2, column 3)", "a duplicate handler");
	bad("worker: {}\n---\nretry: {}\n", "2:1: more than one document is not supported",
	    "two documents");
}

static void test_relay(void)
{
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	const struct pd_handler *t;

	pd_config_init(&c);
	ok(c.relay.engine.concurrency == 4 && c.relay.engine.batch == 0 &&
	       c.relay.visibility_ms == 60000 && c.relay.engine.poll_ms == 1000 &&
	       c.relay.timeout_ms == 30000 && c.relay.engine.drain_ms == 30000 &&
	       c.relay.engine.grace_ms == 5000 && c.relay.topics == NULL && c.relay.ntopics == 0,
	   "relay: the defaults");
	ok(pd_handler_find(c.relay.topics, c.relay.ntopics, "orders") == NULL,
	   "relay: no topic command by default");
	pd_config_release(&c);

	good(&c,
	     "relay:\n"
	     "  concurrency: 8\n"
	     "  batch: 16\n"
	     "  visibility: 2m\n"
	     "  poll: 250ms\n"
	     "  timeout: 45s\n"
	     "  drain_timeout: 10s\n"
	     "  kill_grace: 2\n"
	     "  topics:\n"
	     "    orders:\n"
	     "      run: kcat -P -t orders -k \"$PD_MESSAGE_KEY\"\n"
	     "      timeout: 10s\n"
	     "    hooks:\n"
	     "      exec: [/usr/local/bin/post-hook, --retry, '0']\n"
	     "    \"*\":\n"
	     "      exec: /usr/local/bin/publish\n",
	     "relay: a section with every key loads");
	is_int(c.relay.engine.concurrency, 8, "relay.engine.concurrency");
	is_int(c.relay.engine.batch, 16, "relay.engine.batch");
	is_int(c.relay.visibility_ms, 120000, "relay.visibility");
	is_int(c.relay.engine.poll_ms, 250, "relay.poll");
	is_int(c.relay.timeout_ms, 45000, "relay.timeout");
	is_int(c.relay.engine.drain_ms, 10000, "relay.drain_timeout");
	is_int(c.relay.engine.grace_ms, 2000, "relay.kill_grace (plain seconds)");
	is_int(c.relay.ntopics, 3, "relay.topics has three");
	t = &c.relay.topics[0];
	is_str(t->name, "orders", "topic 1 name");
	is_str(t->run, "kcat -P -t orders -k \"$PD_MESSAGE_KEY\"", "topic 1 run");
	ok(t->exec_argv == NULL, "topic 1 has no exec");
	is_int(t->timeout_ms, 10000, "topic 1 timeout");
	t = &c.relay.topics[1];
	is_str(t->name, "hooks", "topic 2 name");
	ok(t->run == NULL, "topic 2 has no run");
	ok(t->exec_argv && strcmp(t->exec_argv[0], "/usr/local/bin/post-hook") == 0 &&
	       strcmp(t->exec_argv[1], "--retry") == 0 && strcmp(t->exec_argv[2], "0") == 0 &&
	       t->exec_argv[3] == NULL,
	   "topic 2 exec argv");
	is_int(t->timeout_ms, -1, "topic 2 timeout unset");
	t = &c.relay.topics[2];
	ok(strcmp(t->name, "*") == 0 && t->exec_argv && t->exec_argv[1] == NULL,
	   "topic '*' with a single exec string");
	ok(pd_handler_find(c.relay.topics, c.relay.ntopics, "hooks") == &c.relay.topics[1],
	   "topic lookup: exact");
	ok(pd_handler_find(c.relay.topics, c.relay.ntopics, "other") == &c.relay.topics[2],
	   "topic lookup: '*' otherwise");
	ok(c.worker.engine.concurrency == 4 && c.nhandlers == 0, "relay: leaves worker: alone");
	pd_config_release(&c);
	ok(c.relay.topics == NULL && c.relay.ntopics == 0 && c.relay.visibility_ms == 60000,
	   "relay: release frees the topics and restores the defaults");

	ok(load(&c, &e, "relay:\nworker: {concurrency: 2}\n") == 0 &&
	       c.relay.engine.concurrency == 4,
	   "relay: a null section is empty");
	pd_config_release(&c);
	ok(load(&c, &e, "relay: {topics: {}}\n") == 0 && c.relay.ntopics == 0,
	   "relay: an empty topics map");
	pd_config_release(&c);
	ok(load(&c, &e, "relay: {topics: {a: {run: x}}}\n") == 0 &&
	       pd_handler_find(c.relay.topics, c.relay.ntopics, "b") == NULL,
	   "relay: no '*': other topics have no command");
	pd_config_release(&c);

	bad("relay:\n  visiblity: 1m\n",
	    "2:3: unknown key 'visiblity' in 'relay'; did you mean 'visibility'?",
	    "relay: unknown key with a hint");
	bad("relay:\n  max_attempts: 3\n", "2:3: unknown key 'max_attempts' in 'relay'",
	    "relay: max_attempts belongs to the message, not the relay");
	bad("relay: [a]\n", "1:8: 'relay': expected a mapping, got a sequence", "relay: a list");
	bad("relay:\n  concurrency: 0\n",
	    "2:16: 'concurrency': expected an integer from 1 to 1024, got '0'",
	    "relay: concurrency 0");
	bad("relay:\n  batch: 1001\n",
	    "2:10: 'batch': expected an integer from 1 to 1000, got '1001'",
	    "relay: batch too big");
	bad("relay:\n  visibility: 0s\n",
	    "2:15: 'visibility': expected a duration from 1ms to 365d, got '0s'",
	    "relay: visibility zero");
	bad("relay:\n  timeout: soon\n",
	    "2:12: 'timeout': invalid duration 'soon': expected a number with ms, s, m, h or d",
	    "relay: timeout junk");
	bad("relay:\n  poll: [1s]\n", "2:9: 'poll': expected a duration, got a sequence",
	    "relay: poll a list");
	bad("relay:\n  topics: [orders]\n", "2:11: 'topics': expected a mapping, got a sequence",
	    "relay: topics a list");
	bad("relay:\n  topics:\n    orders: kcat\n",
	    "3:13: 'orders': expected a mapping, got 'kcat'", "relay: a topic is a scalar");
	bad("relay:\n  topics:\n    orders:\n      run: x\n      exec: /bin/x\n",
	    "3:5: relay topic 'orders' has both 'run' and 'exec': set exactly one",
	    "relay: run and exec both set");
	bad("relay:\n  topics:\n    orders:\n      timeout: 1s\n",
	    "3:5: relay topic 'orders' has neither 'run' nor 'exec': set exactly one",
	    "relay: neither run nor exec");
	bad("relay:\n  topics:\n    orders:\n",
	    "3:5: relay topic 'orders' has neither 'run' nor 'exec': set exactly one",
	    "relay: an empty topic");
	bad("relay:\n  topics:\n    '':\n      run: x\n", "3:5: a relay topic must not be empty",
	    "relay: an empty topic name");
	bad("relay:\n  topics:\n    a:\n      run: ''\n", "4:12: 'run': expected a command, got ''",
	    "relay: run empty");
	bad("relay:\n  topics:\n    a:\n      exec: []\n",
	    "4:13: 'exec': expected a program or a list of them, got []", "relay: exec empty");
	bad("relay:\n  topics:\n    a:\n      run: x\n      timeout: 0\n",
	    "5:16: 'timeout': expected a duration from 1ms to 365d, got '0'",
	    "relay: topic timeout zero");
	bad("relay:\n  topics:\n    a:\n      run: x\n      terminal_exit_codes: [3]\n",
	    "5:7: unknown key 'terminal_exit_codes' in 'a'", "relay: no terminal codes per topic");
	bad("relay:\n  topics:\n    a: {run: x}\n    a: {run: y}\n",
	    "4:5: duplicate key 'a' (first at line 3, column 5)", "relay: a duplicate topic");
}

static const char flows[] = "workflows:\n"
			    "  place-order:\n"
			    "    steps:\n"
			    "      - name: reserve-stock\n"
			    "        run: ./reserve.sh\n"
			    "        timeout: 30s\n"
			    "        terminal_exit_codes: [3, 4]\n"
			    "        concurrency_key: stock-db\n"
			    "      - name: approval\n"
			    "        wait_for: approved\n"
			    "        timeout: 3d\n"
			    "        on_timeout: continue\n"
			    "      - name: cool-off\n"
			    "        sleep: 1h\n"
			    "      - name: charge-card\n"
			    "        exec: /usr/local/bin/charge\n"
			    "  Nightly_v2.1:\n"
			    "    steps:\n"
			    "      - {name: a, exec: [/bin/echo, hi]}\n"
			    "      - {name: b, wait_for: go, on_timeout: fail}\n";

static void test_workflows(void)
{
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	const struct pd_flow *f;
	const struct pd_flow_step *s;

	good(&c, flows, "workflows: the example loads");
	is_int(c.nflows, 2, "workflows: two");
	f = pd_config_flow(&c, "place-order");
	ok(f == &c.flows[0], "workflows: lookup by name");
	ok(pd_config_flow(&c, "workflow:place-order") == NULL && pd_config_flow(&c, "x") == NULL,
	   "workflows: lookup misses (the name is without the job type's prefix)");
	is_str(f->name, "place-order", "workflows: the name");
	is_int(f->nsteps, 4, "workflows: four steps");

	s = &f->steps[0];
	is_str(s->name, "reserve-stock", "step 1 name");
	is_int(s->kind, PD_FLOW_STEP_RUN, "step 1 runs a command");
	is_str(s->h.run, "./reserve.sh", "step 1 run");
	ok(s->h.exec_argv == NULL, "step 1 has no exec");
	ok(s->h.name == s->name, "step 1's handler is named by the step's name, not a copy");
	is_int(s->h.timeout_ms, 30000, "step 1 timeout");
	ok(s->h.nterminal == 2 && s->h.terminal_codes[0] == 3 && s->h.terminal_codes[1] == 4,
	   "step 1 terminal codes 3 4");
	is_int(s->h.mode, PD_HANDLER_PROCESS, "step 1 runs a process per job");
	ok(s->signal == NULL && s->wait_ms == -1, "step 1 waits for nothing");
	is_str(s->h.concurrency_key, "stock-db", "step 1 concurrency_key");

	s = &f->steps[1];
	is_str(s->name, "approval", "step 2 name");
	is_int(s->kind, PD_FLOW_STEP_WAIT, "step 2 waits");
	is_str(s->signal, "approved", "step 2 signal");
	is_int(s->wait_ms, 259200000, "step 2 timeout 3d");
	is_int(s->on_timeout_continue, 1, "step 2 on_timeout: continue");
	ok(s->h.run == NULL && s->h.exec_argv == NULL && s->h.timeout_ms == -1,
	   "step 2 has no command");

	s = &f->steps[2];
	is_str(s->name, "cool-off", "step 3 name");
	is_int(s->kind, PD_FLOW_STEP_SLEEP, "step 3 sleeps");
	is_int(s->sleep_ms, 3600000, "step 3 sleep 1h");
	ok(s->signal == NULL && s->h.run == NULL && s->h.exec_argv == NULL,
	   "step 3 has no signal and no command");

	s = &f->steps[3];
	is_str(s->name, "charge-card", "step 4 name");
	is_int(s->kind, PD_FLOW_STEP_RUN, "step 4 runs a command");
	ok(s->h.run == NULL && s->h.exec_argv &&
	       strcmp(s->h.exec_argv[0], "/usr/local/bin/charge") == 0 && s->h.exec_argv[1] == NULL,
	   "step 4 exec, a single string");
	is_int(s->h.timeout_ms, -1, "step 4 timeout unset");
	is_int(s->h.nterminal, 0, "step 4 has no terminal codes");
	ok(s->h.concurrency_key == NULL, "step 4 has no concurrency_key");

	f = pd_config_flow(&c, "Nightly_v2.1");
	ok(f == &c.flows[1] && f->nsteps == 2, "workflows: the second, in flow style");
	ok(strcmp(f->steps[0].h.exec_argv[1], "hi") == 0, "  exec with arguments");
	ok(f->steps[1].kind == PD_FLOW_STEP_WAIT && f->steps[1].wait_ms == -1 &&
	       f->steps[1].on_timeout_continue == 0,
	   "  a wait without a timeout, on_timeout: fail");
	pd_config_release(&c);
	ok(c.flows == NULL && c.nflows == 0, "workflows: release frees them");

	ok(load(&c, &e, "workflows:\n") == 0 && c.nflows == 0 && c.flows == NULL,
	   "workflows: a null section is empty");
	pd_config_release(&c);
	ok(load(&c, &e, "workflows: {}\n") == 0 && c.nflows == 0 && pd_config_flow(&c, "a") == NULL,
	   "workflows: an empty mapping");
	pd_config_release(&c);
	{
		char text[300];

		snprintf(text, sizeof(text),
			 "workflows:\n  %0100d:\n    steps: [{name: a, sleep: 1s}]\n", 0);
		ok(load(&c, &e, text) == 0 && c.nflows == 1 && strlen(c.flows[0].name) == 100,
		   "workflows: a name of 100 bytes");
		pd_config_release(&c);
		snprintf(text, sizeof(text),
			 "workflows:\n  %0101d:\n    steps: [{name: a, sleep: 1s}]\n", 0);
		ok(load(&c, &e, text) == -1 && e.code == PD_EX_CONFIG,
		   "workflows: a name of 101 bytes is refused");
		like(e.msg, ":2:3: workflow name '0000", "  at the name");
		pd_config_release(&c);
	}

	/* The workflow and its steps. */
	bad("workflows: [a]\n", "1:12: 'workflows': expected a mapping, got a sequence",
	    "workflows: a list");
	bad("workflows:\n  a b:\n    steps: [{name: x, sleep: 1s}]\n",
	    "2:3: workflow name 'a b': expected 1 to 100 letters, digits, '-', '_' or '.'",
	    "workflows: a name with a space");
	bad("workflows:\n  'a:b':\n    steps: [{name: x, sleep: 1s}]\n",
	    "2:3: workflow name 'a:b': expected 1 to 100 letters, digits, '-', '_' or '.'",
	    "workflows: a name with a colon");
	/* Found by tests/fuzz/config_fuzz: a folded name's newline made a two-line message. */
	bad("workflows:\n  \"a\\nb\\tc\\u0001\":\n    steps: [{name: x, sleep: 1s}]\n",
	    "2:3: workflow name 'a b c?': expected 1 to 100 letters, digits, '-', '_' or '.'",
	    "workflows: a name with control characters, in one line");
	bad("workflows:\n  '':\n    steps: [{name: x, sleep: 1s}]\n",
	    "2:3: workflow name '': expected 1 to 100 letters, digits, '-', '_' or '.'",
	    "workflows: an empty name");
	bad("workflows:\n  w: [a]\n", "2:6: 'w': expected a mapping, got a sequence",
	    "workflows: a workflow is a list");
	bad("workflows:\n  w:\n    stpes: []\n",
	    "3:5: unknown key 'stpes' in 'w'; did you mean 'steps'?",
	    "workflows: an unknown key in a workflow");
	bad("workflows:\n  w:\n", "2:3: workflow 'w' has no 'steps'", "workflows: no steps");
	bad("workflows:\n  w:\n    steps: []\n", "3:12: 'steps': expected a list of steps, got []",
	    "workflows: empty steps");
	bad("workflows:\n  w:\n    steps:\n", "3:11: 'steps': expected a list of steps, got null",
	    "workflows: null steps");
	bad("workflows:\n  w:\n    steps: {name: a}\n",
	    "3:12: 'steps': expected a sequence, got a mapping", "workflows: steps a mapping");
	bad("workflows:\n  w:\n    steps:\n      - ./run.sh\n",
	    "4:9: 'steps' item 1: expected a mapping, got './run.sh'",
	    "workflows: a step a string");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: x\n        tiemout: 1s\n",
	    "6:9: unknown key 'tiemout' in 'steps' item 1; did you mean 'timeout'?",
	    "workflows: an unknown key in a step");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: x\n        mode: stream\n",
	    "6:9: unknown key 'mode' in 'steps' item 1", "workflows: no mode in a step");
	bad("workflows:\n  w:\n    steps:\n      - run: x\n",
	    "4:9: step 1 of workflow 'w' has no 'name'", "workflows: a step without a name");
	bad("workflows:\n  w:\n    steps:\n      - name: ''\n        run: x\n",
	    "4:15: 'name': expected a step name, got ''", "workflows: an empty step name");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: x\n      - name: b\n"
	    "        sleep: 1s\n      -   name: a\n          run: y\n",
	    "8:17: duplicate step name 'a' (first at line 4, column 15)",
	    "workflows: a duplicate step name");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        timeout: 1s\n",
	    "4:9: step 'a' has none of run, exec, sleep, wait_for: set exactly one",
	    "workflows: a step with neither");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: x\n        sleep: 1s\n",
	    "4:9: step 'a' has both 'run' and 'sleep': set exactly one",
	    "workflows: a step with two");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        exec: x\n        wait_for: s\n",
	    "4:9: step 'a' has both 'exec' and 'wait_for': set exactly one",
	    "workflows: a step with exec and wait_for");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        sleep: 1h\n"
	    "        concurrency_key: k\n",
	    "6:9: step 'a': 'concurrency_key' is only for run and exec steps",
	    "workflows: concurrency_key on a sleep");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: x\n"
	    "        concurrency_key: 'type:x'\n",
	    "6:26: invalid concurrency_key 'type:x': the prefixes queue:, tenant: and type: are "
	    "reserved (they name the limits of a queue, a tenant and a job type)",
	    "workflows: a step's reserved concurrency_key");
	bad("handlers:\n  a:\n    run: x\n    concurrency_key: ''\n",
	    "4:22: invalid concurrency_key: must not be empty",
	    "handlers: an empty concurrency_key");
	bad("handlers:\n  a:\n    run: x\n    concurrency_key: 'queue:q'\n",
	    "4:22: invalid concurrency_key 'queue:q': the prefixes queue:, tenant: and type: are "
	    "reserved (they name the limits of a queue, a tenant and a job type)",
	    "handlers: a reserved concurrency_key");
	bad("handlers:\n  a:\n    run: x\n    concurrency_key: [k]\n",
	    "4:22: 'concurrency_key': expected a string, got a sequence",
	    "handlers: a concurrency_key that is no string");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        sleep: 1h\n        timeout: "
	    "1s\n",
	    "6:9: step 'a': 'timeout' is only for run, exec and wait_for steps",
	    "workflows: timeout on a sleep");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: x\n"
	    "        on_timeout: continue\n",
	    "6:9: step 'a': 'on_timeout' is only for wait_for steps",
	    "workflows: on_timeout on a run step");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        wait_for: s\n"
	    "        terminal_exit_codes: [3]\n",
	    "6:9: step 'a': 'terminal_exit_codes' is only for run and exec steps",
	    "workflows: terminal codes on a wait");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        wait_for: s\n"
	    "        on_timeout: skip\n",
	    "6:21: 'on_timeout': expected fail or continue, got 'skip'",
	    "workflows: a bad on_timeout");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        wait_for: ''\n",
	    "5:19: 'wait_for': expected a signal name, got ''", "workflows: an empty signal");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        sleep: 0s\n",
	    "5:16: 'sleep': expected a duration from 1ms to 365d, got '0s'",
	    "workflows: a sleep of zero");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        wait_for: s\n"
	    "        timeout: 0\n",
	    "6:18: 'timeout': expected a duration from 1ms to 365d, got '0'",
	    "workflows: a wait timeout of zero");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: ''\n",
	    "5:14: 'run': expected a command, got ''", "workflows: an empty run");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        exec: x\n"
	    "        terminal_exit_codes: [0]\n",
	    "6:31: 'terminal_exit_codes' item 1: expected an integer from 1 to 255, got '0'",
	    "workflows: a bad terminal code");
	bad("workflows:\n  w:\n    steps:\n      - name: a\n        run: x\n"
	    "        timeout: soon\n",
	    "6:18: 'timeout': invalid duration 'soon': expected a number with ms, s, m, h or d",
	    "workflows: a bad run timeout");
	bad("workflows:\n  a: {steps: [{name: x, sleep: 1s}]}\n  b: {steps: [{name: x, wait_for: "
	    "s, on_timeout: no}]}\n",
	    "3:50: 'on_timeout': expected fail or continue, got 'no'",
	    "workflows: an error in the second workflow");
}

static void test_yaml(void)
{
	struct pd_ydoc d = PD_YDOC_INIT;
	struct pd_err e = PD_ERR_INIT;
	const struct pd_ynode *r, *n;
	const char *s = NULL;
	long long v = 0;
	int b = -1;
	char desc[200];

	ok(yload(&d, &e, "a: 1\nb:\n  - x\n  - 'y'\n  - {c: \"z\"}\nempty:\n") == 0,
	   "a small document loads");
	r = d.root;
	is_str(d.path, "t.yaml", "the name is kept");
	ok(r->type == PD_Y_MAP && r->n == 3 && r->parent == NULL, "root is a mapping of three");
	ok(r->keys[0]->line == 1 && r->keys[0]->col == 1 && r->items[0]->line == 1 &&
	       r->items[0]->col == 4,
	   "positions are 1-based");
	n = pd_y_get(r, "b");
	ok(n && n->type == PD_Y_SEQ && n->n == 3 && n->keys == NULL, "b is a sequence of three");
	ok(!n->items[0]->quoted && n->items[1]->quoted, "quoted is remembered");
	ok(n->items[2]->line == 5 && n->items[2]->col == 5, "a flow mapping's position");
	is_str(pd_y_describe(pd_y_get(n->items[2], "c"), desc, sizeof(desc)), "'c'",
	       "describe a mapping value");
	is_str(pd_y_describe(n->items[1], desc, sizeof(desc)), "'b' item 2", "describe an item");
	is_str(pd_y_describe(r->keys[1], desc, sizeof(desc)), "key 'b'", "describe a key");
	is_str(pd_y_describe(r, desc, sizeof(desc)), "the top level", "describe the root");
	ok(pd_y_get(r, "nope") == NULL && pd_y_get(NULL, "a") == NULL && pd_y_get(n, "a") == NULL,
	   "pd_y_get misses");
	ok(pd_y_is_null(pd_y_get(r, "empty")), "an empty value is null");
	ok(pd_y_str(&d, n->items[1], &s, 78, &e) == 0 && strcmp(s, "y") == 0, "pd_y_str");
	pd_err_clear(&e);
	ok(pd_y_str(&d, pd_y_get(r, "empty"), &s, 64, &e) == -1 && e.code == 64,
	   "pd_y_str refuses null, with the caller's code");
	is_str(e.msg, "t.yaml:6:7: 'empty': expected a string, got null", "  and says where");
	pd_err_clear(&e);
	ok(pd_y_seq(&d, r, 78, &e) == -1, "pd_y_seq refuses a mapping");
	is_str(e.msg, "t.yaml:1:1: the top level: expected a sequence, got a mapping",
	       "  with the message");
	pd_err_clear(&e);
	ok(pd_y_unknown_key(&d, r->keys[0], 78, &e) == -1, "pd_y_unknown_key");
	is_str(e.msg, "t.yaml:1:1: unknown key 'a'", "  with the message");
	pd_ydoc_release(&d);
	ok(d.root == NULL && d.path == NULL, "release empties the document");
	pd_ydoc_release(&d);

	/* Integers and booleans, every accepted and refused spelling. */
	static const struct {
		const char *text;
		int ok;
		long long v;
	} ints[] = {
	    {"0", 1, 0},     {"-5", 1, -5},
	    {"+7", 1, 7},    {"0010", 1, 10},
	    {"100", 1, 100}, {"101", 0, 0},
	    {"-6", 0, 0},    {"0x10", 0, 0},
	    {"1_000", 0, 0}, {"1e2", 0, 0},
	    {"1.0", 0, 0},   {"1 2", 0, 0},
	    {"'5'", 0, 0},   {"99999999999999999999", 0, 0},
	    {"", 0, 0},	     {"[1]", 0, 0},
	};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		char text[64], name[96];

		snprintf(text, sizeof(text), "k: %s\n", ints[i].text);
		snprintf(name, sizeof(name), "pd_y_int -5..100 %s '%s'",
			 ints[i].ok ? "takes" : "refuses", ints[i].text);
		yload(&d, &e, text);
		v = -99;
		if (ints[i].ok)
			ok(pd_y_int(&d, pd_y_get(d.root, "k"), -5, 100, &v, 78, &e) == 0 &&
			       v == ints[i].v,
			   name);
		else
			ok(pd_y_int(&d, pd_y_get(d.root, "k"), -5, 100, &v, 78, &e) == -1 &&
			       v == -99,
			   name);
		pd_ydoc_release(&d);
	}
	yload(&d, &e, "k: 9223372036854775807\n");
	ok(pd_y_int(&d, pd_y_get(d.root, "k"), 0, 9223372036854775807LL, &v, 78, &e) == 0 &&
	       v == 9223372036854775807LL,
	   "pd_y_int at LLONG_MAX");
	pd_ydoc_release(&d);

	static const struct {
		const char *text;
		int v;
	} bools[] = {
	    {"true", 1}, {"True", 1}, {"YES", 1},     {"on", 1}, {"false", 0}, {"no", 0},
	    {"Off", 0},	 {"1", -1},   {"'true'", -1}, {"y", -1}, {"", -1},     {"{}", -1},
	};
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		char text[64], name[96];

		snprintf(text, sizeof(text), "k: %s\n", bools[i].text);
		snprintf(name, sizeof(name), "pd_y_bool '%s' is %d", bools[i].text, bools[i].v);
		yload(&d, &e, text);
		b = -1;
		pd_y_bool(&d, pd_y_get(d.root, "k"), &b, 78, &e);
		is_int(b, bools[i].v, name);
		pd_ydoc_release(&d);
	}

	yload(&d, &e, "k: '90'\nj: 1h30m\n");
	ok(pd_y_dur(&d, pd_y_get(d.root, "k"), &v, 78, &e) == 0 && v == 90000,
	   "pd_y_dur: a quoted number is seconds too");
	ok(pd_y_dur(&d, pd_y_get(d.root, "j"), &v, 78, &e) == 0 && v == 5400000, "pd_y_dur: 1h30m");
	pd_ydoc_release(&d);

	/* Structure refusals. */
	ybad("? [a]\n: 1\n", "t.yaml:1:3: a mapping key must be a scalar, not a sequence",
	     "a sequence as a key");
	ybad("a: {b: 1, b: 2}\n", "t.yaml:1:11: duplicate key 'b' (first at line 1, column 5)",
	     "a duplicate key in a flow mapping");
	ybad("a: 1\nb: \"\\0\"\n", "t.yaml:2:4: a NUL character is not allowed",
	     "a NUL in a scalar");
	ybad("a: 1\nb: \xff\n", "t.yaml:2:4: invalid leading UTF-8 octet (byte 0xFF)",
	     "invalid UTF-8");
	ybad("a: \"x\n",
	     "t.yaml:2:1: found unexpected end of stream while scanning a quoted "
	     "scalar started at line 1, column 4",
	     "an unterminated string");
	{
		char deep[300];

		memset(deep, '[', 100);
		memset(deep + 100, ']', 100);
		deep[200] = '\0';
		ybad(deep, "t.yaml:1:66: nested too deeply", "deep nesting is refused");
	}
	ok(yload(&d, &e, "[1, 2]\n") == 0 && d.root->type == PD_Y_SEQ,
	   "the yaml reader itself takes any root");
	pd_ydoc_release(&d);
	ok(yload(&d, &e, "a: !!str 1\n") == 0 && strcmp(pd_y_get(d.root, "a")->value, "1") == 0,
	   "tags are ignored");
	pd_ydoc_release(&d);

	pd_err_clear(&e);
	ok(pd_ydoc_load(&d, "/nonexistent/pd.yaml", &e) == -1 && e.code == PD_EX_CONFIG,
	   "pd_ydoc_load of a missing file");
	is_str(e.msg, "cannot open '/nonexistent/pd.yaml': No such file or directory",
	       "  with the message");
	pd_ydoc_release(&d);
}

/* Flags over the file: pd_engine_cfg_settle fills only what the flags left unset. */
static void test_engine_settle(void)
{
	struct pd_engine_cfg flags,
	    file = {
		.concurrency = 8, .batch = 0, .poll_ms = 250, .drain_ms = 9000, .grace_ms = 3000};

	pd_engine_cfg_init(&flags);
	flags.concurrency = 2;
	flags.drain_ms = 0;
	pd_engine_cfg_settle(&flags, &file);
	is_int(flags.concurrency, 2, "engine: a flag's concurrency wins over the file's");
	is_int(flags.batch, 2, "engine: a batch of 0 in the file is the concurrency");
	is_int(flags.batch_max, PD_BATCH_MAX_DEFAULT, "engine: a batch_max of 0 in the file: 1000");
	is_int(flags.poll_ms, 250, "engine: the file's poll fills an unset flag");
	is_int(flags.drain_ms, 0, "engine: a flag of 0 is set, not unset");
	is_int(flags.grace_ms, 3000, "engine: the file's kill_grace");
	pd_engine_cfg_init(&flags);
	file.batch = 16;
	pd_engine_cfg_settle(&flags, &file);
	is_int(flags.batch, 16, "engine: the file's batch when given");
	pd_engine_cfg_init(&flags);
	flags.batch_max = 50;
	file.batch_max = 200;
	pd_engine_cfg_settle(&flags, &file);
	is_int(flags.batch_max, 50, "engine: --batch-max wins over the file's");
	pd_engine_cfg_init(&flags);
	pd_engine_cfg_settle(&flags, &file);
	is_int(flags.batch_max, 200, "engine: the file's batch_max when given");
	is_int(flags.until_idle, 0, "engine: until_idle stays off without the flag");
}

static void test_retention(void)
{
	struct pd_config c;
	struct pd_reaper_cfg r;

	pd_config_init(&c);
	is_int(c.retention.succeeded_ms, 7 * 86400000LL, "retention: succeeded defaults to 7d");
	is_int(c.retention.cancelled_ms, 7 * 86400000LL, "retention: cancelled defaults to 7d");
	is_int(c.retention.dead_lettered_ms, 30 * 86400000LL,
	       "retention: dead_lettered defaults to 30d");
	is_int(c.retention.outbox_published_ms, 7 * 86400000LL,
	       "retention: outbox_published defaults to 7d");
	is_int(c.retention.workers_gone_ms, 86400000LL, "retention: workers_gone defaults to 1d");
	good(&c,
	     "retention:\n  succeeded: 2d12h\n  cancelled: forever\n  dead_lettered: 3650d\n"
	     "  outbox_published: 90s\n",
	     "retention: durations and forever");
	is_int(c.retention.succeeded_ms, 60 * 3600000LL, "retention.succeeded");
	is_int(c.retention.cancelled_ms, PD_RETAIN_FOREVER, "retention.cancelled: forever");
	is_int(c.retention.dead_lettered_ms, 3650 * 86400000LL, "retention.dead_lettered");
	is_int(c.retention.outbox_published_ms, 90000, "retention.outbox_published");
	is_int(c.retention.workers_gone_ms, 86400000LL, "retention.workers_gone: default kept");
	pd_reaper_cfg_init(&r);
	pd_reaper_settle(&r, &c);
	is_int(r.retention.succeeded_ms, 60 * 3600000LL, "the reaper settles the file's retention");
	pd_config_release(&c);
	bad("retention:\n  succeeded: a week\n",
	    "2:14: 'succeeded': expected 'forever' or a duration from 1s to 3650d, got "
	    "'a week'",
	    "retention: not a duration");
	is_int(r.retention.succeeded_ms, 60 * 3600000LL,
	       "a config that fails leaves the settled retention");
	bad("retention:\n  cancelled: 500ms\n",
	    "2:14: 'cancelled': expected 'forever' or a duration from 1s to 3650d, got "
	    "'500ms'",
	    "retention: below a second");
	bad("retention:\n  workers_gone: Forever\n",
	    "2:17: 'workers_gone': expected 'forever' or a duration from 1s to 3650d, "
	    "got 'Forever'",
	    "retention: forever is lower case");
	bad("retention:\n  succeded: 1d\n",
	    "2:3: unknown key 'succeded' in 'retention'; did you mean 'succeeded'?",
	    "retention: unknown key");
	bad("retention:\n  succeeded: [1d]\n",
	    "2:14: 'succeeded': expected a duration, got a sequence", "retention: a sequence");
}

/* hooks: top level and per handler, the lookup by event and type, and the JSON the reap pass takes.
 */
static void test_hooks(void)
{
	struct pd_config c;
	struct pd_buf b = PD_BUF_INIT;
	const struct pd_handler *h;

	good(&c,
	     "hooks:\n"
	     "  on_dead_letter: {run: page}\n"
	     "  on_success: log-ok\n"
	     "handlers:\n"
	     "  t:\n"
	     "    run: cat\n"
	     "    hooks:\n"
	     "      on_dead_letter: {exec: [own, x], timeout: 5s}\n"
	     "  u: {run: cat}\n",
	     "hooks: top level and a handler's");
	h = pd_hook_find(c.handlers, c.nhandlers, &c.hooks, "t", PD_HOOK_DEAD_LETTER);
	ok(h && h->exec_argv && strcmp(h->exec_argv[0], "own") == 0 && h->timeout_ms == 5000,
	   "  the handler's own on_dead_letter wins");
	h = pd_hook_find(c.handlers, c.nhandlers, &c.hooks, "u", PD_HOOK_DEAD_LETTER);
	is_str(h ? h->run : NULL, "page", "  another type gets the top level's");
	h = pd_hook_find(c.handlers, c.nhandlers, &c.hooks, "t", PD_HOOK_SUCCESS);
	is_str(h ? h->run : NULL, "log-ok",
	       "  an event the handler does not name: the top level's");
	ok(pd_hook_find(c.handlers, c.nhandlers, &c.hooks, "t", PD_HOOK_FAILURE) == NULL,
	   "  an event nobody names: none");
	is_int(pd_hook_mask(c.handlers, c.nhandlers, &c.hooks, "t"),
	       (1u << PD_HOOK_DEAD_LETTER) | (1u << PD_HOOK_SUCCESS), "  the events of t");
	is_int(pd_hook_mask(c.handlers, c.nhandlers, &c.hooks, PD_HOOK_TYPE), 0,
	       "  a hook job fires none");
	pd_hooks_json(&b, c.handlers, c.nhandlers, &c.hooks);
	is_str(b.data,
	       "{\"types\":{\"t\":[\"dead_letter\"],\"u\":[]},\"global\":[\"dead_letter\","
	       "\"success\"]}",
	       "  as JSON for the reap pass");
	pd_config_release(&c);
	good(&c, "handlers:\n  t: {run: cat}\n", "no hooks");
	pd_hooks_json(&b, c.handlers, c.nhandlers, &c.hooks);
	is_int((int)b.len, 0, "  no JSON");
	pd_config_release(&c);
	pd_buf_release(&b);
	bad("hooks:\n  on_dead: {run: x}\n", "2:3: unknown key 'on_dead' in 'hooks'",
	    "hooks: an unknown event");
	bad("hooks:\n  on_failure: {run: x, exec: y}\n",
	    "2:15: hook 'on_failure' has both "
	    "'run' and 'exec': set exactly one",
	    "hooks: run and exec");
	bad("handlers:\n  pd:hook: {run: x}\n",
	    "2:3: job type 'pd:hook' is reserved for hook jobs: set hooks: instead",
	    "a handler for pd:hook");
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char cmd[300];

	snprintf(dir, sizeof(dir), "%s/pd-config-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/pd.yaml", dir);
	test_full();
	test_lookup();
	test_errors();
	test_relay();
	test_workflows();
	test_yaml();
	test_engine_settle();
	test_retention();
	test_hooks();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove the temporary directory");
	return done_testing();
}
