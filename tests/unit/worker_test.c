/*
 * worker_test: lib/worker's settings, without PostgreSQL. pd_worker_cfg_init
 * (every field unset) and pd_worker_settle: flags over the file over the
 * defaults (the lease, the heartbeat's two defaults, queues, poll, reap,
 * the result limit), the handlers merged from the flags, the program's
 * (pd_worker_ext) and the file's (precedence, duplicates, "*", none at
 * all), and what it refuses (a lease of 0, a heartbeat not shorter than
 * the lease, a poll of 0, the reserved hook type, a command that cannot
 * run as handler, hook or workflow step, more queues than a worker serves).
 * Then what the running worker builds from its settings, on a worker
 * struct alone (no loop, no process started): the claim's type filter
 * (workflows, handlers, "*", the hook type), and the stream handlers'
 * streams across reloads (kept, reused, new, old; the MAX_STREAMS refusal),
 * and which requests on a handler's channel are a lease question.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "err.h"
#include "handler.h"
#include "worker-internal.h"
#include "worker.h"
#include "tap.h"

/* The file text into c (initialised here); the test stops if it does not load. */
static void load(struct pd_config *c, const char *text)
{
	struct pd_err e = PD_ERR_INIT;

	pd_config_init(c);
	if (pd_config_load_string(c, "pd.yaml", text, strlen(text), &e) < 0) {
		printf("Bail out! the test's config does not load: %s\n", e.msg);
		exit(1);
	}
}

/* A shell handler of the flags: name=run. */
static struct pd_handler sh(const char *name, const char *run)
{
	struct pd_handler h;

	memset(&h, 0, sizeof(h));
	h.name = (char *)name;
	h.run = (char *)run;
	h.timeout_ms = -1;
	return h;
}

/* Settle flags w over the file text; the rc, the error in e. */
static int settle(struct pd_worker_cfg *w, const char *text, struct pd_err *e)
{
	struct pd_config c;
	int rc;

	load(&c, text);
	pd_err_clear(e);
	rc = pd_worker_settle(w, &c, e);
	/* w points into c (queues, flows, hooks): only the numbers are read after this */
	pd_config_release(&c);
	return rc;
}

static void test_init(void)
{
	struct pd_worker_cfg w;

	memset(&w, 0x5a, sizeof(w));
	pd_worker_cfg_init(&w);
	is_int(w.lease_ms, -1, "init: the lease unset");
	is_int(w.heartbeat_ms, -1, "init: the heartbeat unset");
	is_int(w.result_limit, -1, "init: the result limit unset");
	is_int(w.reap, -1, "init: reap unset");
	is_int(w.engine.concurrency, -1, "init: the concurrency unset");
	is_int(w.engine.poll_ms, -1, "init: the poll unset");
	is_int(w.engine.drain_ms, -1, "init: the drain timeout unset");
	is_int(w.engine.grace_ms, -1, "init: the kill grace unset");
	is_int(w.engine.until_idle, 0, "init: not until idle");
	is_int(w.nqueues, 0, "init: no queue");
	is_int(w.nhandlers, 0, "init: no handler");
	ok(w.handlers == NULL && w.merged == NULL && w.flags == NULL && w.ext == NULL,
	   "init: no handlers, merged array, flags or ext");
	ok(w.flows == NULL && w.nflows == 0, "init: no workflows");
}

static void test_defaults(void)
{
	struct pd_worker_cfg w;
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;

	pd_worker_cfg_init(&w);
	load(&c, "");
	is_int(pd_worker_settle(&w, &c, &e), 0, "defaults: nothing given settles");
	is_int(w.lease_ms, 30000, "defaults: a lease of 30 s");
	is_int(w.heartbeat_ms, 10000, "defaults: the heartbeat a third of it");
	is_int(w.engine.poll_ms, 1000, "defaults: a poll of 1 s");
	is_int(w.engine.concurrency, 4, "defaults: 4 at once");
	is_int(w.engine.batch, 4, "defaults: the batch the concurrency");
	is_int(w.reap, 1, "defaults: reaps");
	is_int(w.result_limit, 1048576, "defaults: 1 MiB of stdout kept");
	is_int(w.nqueues, 1, "defaults: one queue");
	is_str(w.queues[0], "default", "defaults: the queue 'default'");
	is_int(w.nhandlers, 0, "defaults: no handler");
	ok(w.handlers != NULL && w.handlers == w.merged, "defaults: handlers is w's own array");
	is_int(w.nflows, 0, "defaults: no workflow");
	is_int(w.retry.base_ms, c.retry.base_ms, "defaults: the file's retry base");
	is_int(w.retry.cap_ms, c.retry.cap_ms, "defaults: the file's retry cap");
	pd_worker_cfg_release(&w);
	ok(w.merged == NULL, "release: the merged array freed");
	pd_worker_cfg_release(&w);
	ok(w.merged == NULL, "release twice: nothing freed twice");
	pd_config_release(&c);
}

static void test_precedence(void)
{
	struct pd_worker_cfg w;
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	static const char file[] = "worker:\n"
				   "  queues: [q1, q2]\n"
				   "  lease: 9s\n"
				   "  heartbeat: 4s\n"
				   "  poll: 250ms\n"
				   "  concurrency: 7\n"
				   "  reap: false\n"
				   "  result_limit: 100\n";

	pd_worker_cfg_init(&w);
	load(&c, file);
	is_int(pd_worker_settle(&w, &c, &e), 0, "file: settles");
	is_int(w.lease_ms, 9000, "file: its lease");
	is_int(w.heartbeat_ms, 4000, "file: its heartbeat");
	is_int(w.engine.poll_ms, 250, "file: its poll");
	is_int(w.engine.concurrency, 7, "file: its concurrency");
	is_int(w.reap, 0, "file: reap: false");
	is_int(w.result_limit, 100, "file: its result limit");
	is_int(w.nqueues, 2, "file: its two queues");
	is_str(w.queues[1], "q2", "file: in its order");
	pd_worker_cfg_release(&w);

	/* The flags win over the file, field by field. */
	pd_worker_cfg_init(&w);
	w.queues[w.nqueues++] = "mine";
	w.engine.poll_ms = 50;
	w.reap = 1;
	w.result_limit = 7;
	w.heartbeat_ms = 1000;
	is_int(pd_worker_settle(&w, &c, &e), 0, "flags: settle over the file");
	is_int(w.nqueues, 1, "flags: their queue alone, none of the file's");
	is_str(w.queues[0], "mine", "flags: the queue given");
	is_int(w.engine.poll_ms, 50, "flags: their poll");
	is_int(w.engine.concurrency, 7, "flags: the file's concurrency where none given");
	is_int(w.reap, 1, "flags: their reap over the file's false");
	is_int(w.result_limit, 7, "flags: their result limit");
	is_int(w.lease_ms, 9000, "flags: the file's lease where none given");
	is_int(w.heartbeat_ms, 1000, "flags: their heartbeat");
	pd_worker_cfg_release(&w);

	/*
	 * A lease given as a flag: the heartbeat is a third of it, not the
	 * file's (which was shorter than the file's lease, not this one's).
	 */
	pd_worker_cfg_init(&w);
	w.lease_ms = 3000;
	is_int(pd_worker_settle(&w, &c, &e), 0, "flag lease: settles");
	is_int(w.heartbeat_ms, 1000, "flag lease: the heartbeat a third of it, not the file's 4s");
	pd_worker_cfg_release(&w);
	pd_config_release(&c);
}

static void test_refused(void)
{
	struct pd_worker_cfg w;
	struct pd_err e = PD_ERR_INIT;

	pd_worker_cfg_init(&w);
	w.lease_ms = 0;
	is_int(settle(&w, "", &e), -1, "a lease of 0 is refused");
	is_int(e.code, PD_EX_USAGE, "  with 64");
	like(e.msg, "the lease must be longer than 0", "  naming the lease");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	w.lease_ms = 2; /* a third of 2 ms is 0 ms */
	is_int(settle(&w, "", &e), -1, "a lease of 2 ms is refused (its heartbeat would be 0)");
	is_str(e.msg, "the heartbeat (0ms) must be shorter than the lease (2ms)", "  naming both");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	w.lease_ms = 3;
	is_int(settle(&w, "", &e), 0, "a lease of 3 ms: a heartbeat of 1 ms");
	is_int(w.heartbeat_ms, 1, "  which is kept");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	w.lease_ms = w.heartbeat_ms = 5000;
	is_int(settle(&w, "", &e), -1, "a heartbeat equal to the lease is refused");
	is_int(e.code, PD_EX_USAGE, "  with 64");
	is_str(e.msg, "the heartbeat (5000ms) must be shorter than the lease (5000ms)",
	       "  naming both");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	is_int(settle(&w, "worker:\n  lease: 2s\n  heartbeat: 3s\n", &e), -1,
	       "the file's heartbeat longer than its lease is refused");
	is_str(e.msg, "the heartbeat (3000ms) must be shorter than the lease (2000ms)",
	       "  naming both");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	w.heartbeat_ms = 40000;
	is_int(settle(&w, "", &e), -1, "a heartbeat flag over the default lease is refused");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	w.lease_ms = 1LL << 62;
	is_int(settle(&w, "", &e), 0, "a huge lease settles");
	is_int(w.heartbeat_ms, (1LL << 62) / 3, "  its heartbeat a third of it");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	w.engine.poll_ms = 0;
	is_int(settle(&w, "", &e), -1, "a poll of 0 is refused");
	is_str(e.msg, "the poll interval must be longer than 0", "  naming the poll");
	pd_worker_cfg_release(&w);
}

/* A file of n queues q0..q(n-1). */
static char *queues_file(int n)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_buf_puts(&b, "worker:\n  queues: [");
	for (int i = 0; i < n; i++)
		pd_buf_printf(&b, "%sq%d", i ? ", " : "", i);
	pd_buf_puts(&b, "]\n");
	return pd_buf_detach(&b);
}

static void test_queues(void)
{
	struct pd_worker_cfg w;
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	char *f64 = queues_file(PD_WORKER_MAX_QUEUES), *f65 = queues_file(PD_WORKER_MAX_QUEUES + 1);

	pd_worker_cfg_init(&w);
	load(&c, f64);
	is_int(pd_worker_settle(&w, &c, &e), 0, "64 queues in the file settle");
	is_int(w.nqueues, PD_WORKER_MAX_QUEUES, "  all 64 served");
	is_str(w.queues[63], "q63", "  the last one too");
	pd_worker_cfg_release(&w);
	pd_config_release(&c);

	/* One more: refused, not the 65th dropped without a word. */
	pd_worker_cfg_init(&w);
	load(&c, f65);
	is_int(pd_worker_settle(&w, &c, &e), -1, "65 queues in the file are refused");
	is_int(e.code, PD_EX_CONFIG, "  with 78");
	is_str(e.msg, "pd.yaml: worker.queues names 65 queues: a worker serves at most 64",
	       "  naming the file, the key, the count and the limit");
	pd_worker_cfg_release(&w);

	/* The flags' queues replace the file's: its 65 are not used, nor refused. */
	pd_worker_cfg_init(&w);
	w.queues[w.nqueues++] = "mine";
	is_int(pd_worker_settle(&w, &c, &e), 0, "65 queues in the file, a queue flag: settles");
	is_int(w.nqueues, 1, "  the flag's queue alone");
	pd_worker_cfg_release(&w);
	pd_config_release(&c);
	free(f64);
	free(f65);
}

/* The names of w's handlers, comma-separated, and their runs. */
static void handlers_are(const struct pd_worker_cfg *w, const char *names, const char *runs,
			 const char *name)
{
	struct pd_buf n = PD_BUF_INIT, r = PD_BUF_INIT;

	for (int i = 0; i < w->nhandlers; i++) {
		pd_buf_printf(&n, "%s%s", i ? "," : "", w->handlers[i].name);
		pd_buf_printf(&r, "%s%s", i ? "," : "",
			      w->handlers[i].run ? w->handlers[i].run : "(exec)");
	}
	is_str(n.data ? n.data : "", names, name);
	is_str(r.data ? r.data : "", runs, "  each from where it should");
	pd_buf_release(&n);
	pd_buf_release(&r);
}

static void test_merge(void)
{
	struct pd_worker_cfg w;
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	struct pd_handler flags[3], ext[2];
	struct pd_worker_ext x;
	const struct pd_handler *h;
	static const char file[] = "handlers:\n"
				   "  a:\n    run: file-a\n"
				   "  b:\n    run: file-b\n"
				   "  c:\n    run: file-c\n";

	load(&c, file);

	/* Flags first; the file's for the other types, in its order. */
	flags[0] = sh("c", "flag-c");
	flags[1] = sh("x", "flag-x");
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 2;
	is_int(pd_worker_settle(&w, &c, &e), 0, "merge: settles");
	handlers_are(&w, "c,x,a,b", "flag-c,flag-x,file-a,file-b",
		     "merge: the flags', then the file's for the other types");
	ok(w.handlers != flags, "merge: into w's own array, not the flags'");
	is_str(flags[0].run, "flag-c", "merge: the flags' array untouched");
	pd_worker_cfg_release(&w);

	/* The same type twice in the flags: both kept, the first found. */
	flags[0] = sh("a", "first");
	flags[1] = sh("a", "second");
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 2;
	is_int(pd_worker_settle(&w, &c, &e), 0, "duplicate flags: settle");
	handlers_are(&w, "a,a,b,c", "first,second,file-b,file-c",
		     "duplicate flags: both kept, the file's a dropped");
	h = pd_handler_find(w.handlers, w.nhandlers, "a");
	is_str(h ? h->run : NULL, "first", "duplicate flags: the first wins the lookup");
	pd_worker_cfg_release(&w);

	/*
	 * A "*" flag covers no named type of the file: the file's a, b and c
	 * are kept, and the lookup finds an exact match before any "*".
	 */
	flags[0] = sh("*", "flag-any");
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 1;
	is_int(pd_worker_settle(&w, &c, &e), 0, "a '*' flag: settles");
	handlers_are(&w, "*,a,b,c", "flag-any,file-a,file-b,file-c",
		     "a '*' flag: the file's named types kept after it");
	h = pd_handler_find(w.handlers, w.nhandlers, "b");
	is_str(h ? h->run : NULL, "file-b", "a '*' flag: the file's exact type found first");
	h = pd_handler_find(w.handlers, w.nhandlers, "zzz");
	is_str(h ? h->run : NULL, "flag-any", "a '*' flag: any other type");
	pd_worker_cfg_release(&w);
	pd_config_release(&c);

	/* A "*" in the file after a "*" flag: the flag's alone. */
	load(&c, "handlers:\n  '*':\n    run: file-any\n");
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 1;
	is_int(pd_worker_settle(&w, &c, &e), 0, "'*' in flags and file: settles");
	handlers_are(&w, "*", "flag-any", "'*' in flags and file: the flag's alone");
	pd_worker_cfg_release(&w);
	pd_config_release(&c);

	/* The program's (ext) between the flags' and the file's. */
	load(&c, file);
	flags[0] = sh("a", "flag-a");
	ext[0] = sh("a", "ext-a");
	ext[1] = sh("b", "ext-b");
	memset(&x, 0, sizeof(x));
	x.handlers = ext;
	x.nhandlers = 2;
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 1;
	w.ext = &x;
	is_int(pd_worker_settle(&w, &c, &e), 0, "ext: settles");
	handlers_are(&w, "a,b,c", "flag-a,ext-b,file-c",
		     "ext: the flags', then the program's, then the file's");
	pd_worker_cfg_release(&w);

	/* Nothing anywhere: no handler, an array all the same. */
	pd_config_release(&c);
	load(&c, "handlers: {}\n");
	pd_worker_cfg_init(&w);
	is_int(pd_worker_settle(&w, &c, &e), 0, "no handler anywhere: settles");
	is_int(w.nhandlers, 0, "  none");
	ok(w.merged != NULL, "  in an array of w's (released)");
	pd_worker_cfg_release(&w);
	pd_config_release(&c);

	/* A reload settles a fresh copy of the flags again: the same result. */
	load(&c, file);
	flags[0] = sh("b", "flag-b");
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 1;
	is_int(pd_worker_settle(&w, &c, &e), 0, "settled once");
	is_int(pd_worker_settle(&w, &c, &e), 0, "settled again over its own result");
	handlers_are(&w, "b,a,c", "flag-b,file-a,file-c", "settled twice: nothing doubled");
	pd_worker_cfg_release(&w);
	pd_config_release(&c);
}

static void test_commands(void)
{
	struct pd_worker_cfg w;
	struct pd_err e = PD_ERR_INIT;
	struct pd_handler flags[1];
	char *argv[] = {(char *)"/nonexistent/handler", NULL};

	flags[0] = sh(PD_HOOK_TYPE, "true");
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 1;
	is_int(settle(&w, "", &e), -1, "a handler for the hook type is refused");
	is_int(e.code, PD_EX_USAGE, "  with 64");
	is_str(e.msg, "job type 'pd:hook' is reserved for hook jobs", "  naming the type");
	pd_worker_cfg_release(&w);

	flags[0] = sh("t", NULL);
	flags[0].exec_argv = argv;
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 1;
	is_int(settle(&w, "", &e), -1, "a flag's program that cannot run is refused");
	is_int(e.code, PD_EX_CONFIG, "  with 78");
	is_str(e.msg, "handler 't': cannot run /nonexistent/handler: No such file or directory",
	       "  naming the handler and the program");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	is_int(settle(&w, "handlers:\n  u:\n    exec: /nonexistent/u\n", &e), -1,
	       "a file's program that cannot run is refused");
	like(e.msg, "handler 'u': cannot run /nonexistent/u", "  naming it");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	is_int(settle(&w,
		      "handlers:\n  u:\n    run: 'true'\n    hooks:\n"
		      "      on_failure:\n        exec: /nonexistent/hook\n",
		      &e),
	       -1, "a handler's hook that cannot run is refused");
	like(e.msg, "hook 'on_failure': cannot run /nonexistent/hook", "  naming the hook");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	is_int(settle(&w, "hooks:\n  on_success:\n    exec: /nonexistent/global\n", &e), -1,
	       "a global hook that cannot run is refused");
	like(e.msg, "hook 'on_success': cannot run /nonexistent/global", "  naming the hook");
	pd_worker_cfg_release(&w);

	pd_worker_cfg_init(&w);
	is_int(settle(&w,
		      "workflows:\n  f:\n    steps:\n      - name: s1\n"
		      "        exec: /nonexistent/step\n",
		      &e),
	       -1, "a workflow step that cannot run is refused");
	like(e.msg, "workflow step 's1': cannot run /nonexistent/step", "  naming the step");
	pd_worker_cfg_release(&w);

	/* A handler the flags replace is not checked: only what runs is. */
	flags[0] = sh("u", "true");
	flags[0].exec_argv = NULL;
	pd_worker_cfg_init(&w);
	w.handlers = flags;
	w.nhandlers = 1;
	is_int(settle(&w, "handlers:\n  u:\n    exec: /nonexistent/u\n", &e), 0,
	       "a file's handler the flags replace is not checked");
	pd_worker_cfg_release(&w);
}

/* A settled cfg w over config c from text (both released by the caller). */
static void settled(struct pd_worker_cfg *w, struct pd_config *c, const char *text)
{
	struct pd_err e = PD_ERR_INIT;

	load(c, text);
	pd_worker_cfg_init(w);
	if (pd_worker_settle(w, c, &e) < 0) {
		printf("Bail out! the test's config does not settle: %s\n", e.msg);
		exit(1);
	}
}

/* w's claim filter as "a,b,c", or "(any)". */
static void types_are(const struct worker *w, const char *want, const char *name)
{
	struct pd_buf b = PD_BUF_INIT;

	if (w->types == NULL)
		pd_buf_puts(&b, "(any)");
	for (int i = 0; w->types && i < w->ntypes; i++)
		pd_buf_printf(&b, "%s%s", i ? "," : "", w->types[i]);
	is_str(b.data ? b.data : "", want, name);
	pd_buf_release(&b);
}

static void test_claim_types(void)
{
	static const char flows[] = "workflows:\n"
				    "  f:\n    steps:\n      - name: s1\n        run: 'true'\n"
				    "  g:\n    steps:\n      - name: s2\n        run: 'true'\n";
	struct pd_worker_cfg cfg;
	struct pd_config c;
	struct worker w;
	struct pd_buf text = PD_BUF_INIT;

	memset(&w, 0, sizeof(w));
	w.cfg = &cfg;

	settled(&cfg, &c, "handlers: {}\n");
	pd_worker_claim_types(&w);
	types_are(&w, "", "claim types: no handler, no workflow: none, not any");
	ok(w.types != NULL, "  an empty filter, never NULL (which claims any type)");
	pd_worker_cfg_release(&cfg);
	pd_config_release(&c);

	pd_buf_printf(&text, "%shandlers:\n  a:\n    run: 'true'\n  b:\n    run: 'true'\n", flows);
	settled(&cfg, &c, text.data);
	pd_worker_claim_types(&w);
	types_are(&w, "workflow:f,workflow:g,a,b", "claim types: the workflows', the handlers'");
	ok(w.flow_types && w.flow_types[0] == w.types[0] && w.flow_types[2] == NULL,
	   "  the workflows' owned in flow_types");
	pd_worker_claim_types(&w); /* again: the old filter freed (ASan) */
	types_are(&w, "workflow:f,workflow:g,a,b", "claim types: built again, the same");
	pd_worker_cfg_release(&cfg);
	pd_config_release(&c);

	pd_buf_reset(&text);
	pd_buf_printf(&text,
		      "%shandlers:\n  a:\n    run: 'true'\nhooks:\n  on_dead_letter:\n"
		      "    run: 'true'\n",
		      flows);
	settled(&cfg, &c, text.data);
	pd_worker_claim_types(&w);
	types_are(&w, "workflow:f,workflow:g,a,pd:hook",
		  "claim types: a global hook: its jobs too");
	pd_worker_cfg_release(&cfg);
	pd_config_release(&c);

	settled(&cfg, &c,
		"handlers:\n  a:\n    run: 'true'\n    hooks:\n      on_success: 'true'\n");
	pd_worker_claim_types(&w);
	types_are(&w, "a,pd:hook", "claim types: a handler's hook: its jobs too");
	pd_worker_cfg_release(&cfg);
	pd_config_release(&c);

	pd_buf_reset(&text);
	pd_buf_printf(&text,
		      "%shandlers:\n  a:\n    run: 'true'\n  '*':\n    run: 'true'\n"
		      "  b:\n    run: 'true'\nhooks:\n  on_failure: 'true'\n",
		      flows);
	settled(&cfg, &c, text.data);
	pd_worker_claim_types(&w);
	types_are(&w, "(any)", "claim types: a '*' handler among others: any type");
	is_int(w.ntypes, 0, "  none counted");
	ok(w.flow_types && w.flow_types[1] != NULL, "  the workflows' types still owned (freed)");
	pd_worker_cfg_release(&cfg);
	pd_config_release(&c);

	pd_worker_claim_types_free(&w);
	ok(w.types == NULL && w.flow_types == NULL && w.ntypes == 0, "claim types: freed");
	pd_buf_release(&w.hooks);
	pd_buf_release(&text);
}

/* A file of stream handlers s0..s(n-1), each running "cat -N" with N from first. */
static char *streams_file(int n, int first, const char *extra)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_buf_printf(&b, "%shandlers:\n  p:\n    run: 'true'\n", extra);
	for (int i = 0; i < n; i++)
		pd_buf_printf(&b, "  s%d:\n    run: cat -%d\n    mode: stream\n", i, first + i);
	return pd_buf_detach(&b);
}

/* "k,k,..." the streams of w's handlers (stream_of), and "01.." the old flags. */
static void streams_are(const struct worker *w, const char *of, const char *old, const char *name)
{
	struct pd_buf a = PD_BUF_INIT, b = PD_BUF_INIT;

	for (int i = 0; i < w->cfg->nhandlers; i++)
		pd_buf_printf(&a, "%s%d", i ? "," : "", w->stream_of[i]);
	for (int k = 0; k < w->nstreams; k++)
		pd_buf_putc(&b, w->stream_old[k] ? '1' : '0');
	is_str(a.data, of, name);
	is_str(b.data ? b.data : "", old, "  and which streams are old");
	pd_buf_release(&a);
	pd_buf_release(&b);
}

static void test_streams(void)
{
	struct pd_worker_cfg c1, c2, c3, c4, c64, c64b;
	struct pd_config f1, f2, f3, f4, f64, f64b;
	struct pd_err e = PD_ERR_INIT;
	struct worker w;
	struct pd_hold ready[MAX_STREAMS];
	char *t1 = streams_file(2, 1, ""), *t2, *t3 = streams_file(2, 10, "");
	char *t4 = streams_file(2, 10, "worker:\n  kill_grace: 1s\n");
	char *t64 = streams_file(MAX_STREAMS, 100, ""), *t64b = streams_file(1, 500, "");
	const int *was;

	/* s0 the same command, s1 another, s2 new */
	t2 = pd_xstrdup("handlers:\n  p:\n    run: 'true'\n"
			"  s0:\n    run: cat -1\n    mode: stream\n"
			"  s1:\n    run: cat -99\n    mode: stream\n"
			"  s2:\n    run: cat -98\n    mode: stream\n");
	memset(&w, 0, sizeof(w));
	memset(ready, 0, sizeof(ready));
	settled(&c1, &f1, t1);
	settled(&c2, &f2, t2);
	settled(&c3, &f3, t3);
	settled(&c4, &f4, t4);
	settled(&c64, &f64, t64);
	settled(&c64b, &f64b, t64b);

	w.cfg = &c1;
	is_int(pd_worker_streams_init(&w, &e), 0, "streams: mapped at start");
	is_int(w.nstreams, 2, "  two streams");
	streams_are(&w, "-1,0,1", "00", "  a stream each stream handler, none for a process");
	ok(w.streams[1].cfg.h == &c1.handlers[2], "  stream 1 runs s1");
	ok(!pd_stream_live(&w.streams[0]) && !pd_stream_live(&w.streams[1]),
	   "  no process yet (none until its first job)");

	/* A reload while a ready job waits for stream 1: it cannot be reused. */
	ready[0].stream = 1;
	w.hs.ready = ready;
	w.hs.nready = 1;
	w.cfg = &c2;
	is_int(pd_worker_streams_map(&w, &e), 0, "reload: mapped");
	streams_are(&w, "-1,0,2,3", "0100",
		    "reload: s0 keeps its stream, s1 (changed) and s2 (new) get new ones");
	ok(w.streams[0].cfg.h == &c1.handlers[1],
	   "  the same command: the stream kept as it was (its process would go on)");
	ok(w.streams[2].cfg.h == &c2.handlers[2], "  the changed one on the new command");

	/* Nothing waits: the streams no longer in use are taken again. */
	w.hs.nready = 0;
	w.cfg = &c3;
	is_int(pd_worker_streams_map(&w, &e), 0, "reload, all idle: mapped");
	is_int(w.nstreams, 4, "  no new stream: free ones reused");
	streams_are(&w, "-1,0,1", "0011", "  the first free ones, the rest old");

	/* The same commands with another kill grace: new streams. */
	w.cfg = &c4;
	is_int(pd_worker_streams_map(&w, &e), 0, "reload, another kill_grace: mapped");
	ok(w.streams[0].cfg.grace_ms == 1000, "  stream 0 taken again on the new grace");
	is_int(w.nstreams, 4, "  in the same slots (none was busy)");
	pd_worker_streams_release(&w);
	ok(w.streams == NULL && w.nstreams == 0, "streams: released");

	/* MAX_STREAMS in use, all busy: one more is refused, nothing changed. */
	w.cfg = &c64;
	is_int(pd_worker_streams_init(&w, &e), 0, "64 stream handlers: mapped");
	is_int(w.nstreams, MAX_STREAMS, "  64 streams");
	for (int k = 0; k < MAX_STREAMS; k++)
		ready[k].stream = k;
	w.hs.nready = MAX_STREAMS;
	was = w.stream_of;
	w.cfg = &c64b;
	is_int(pd_worker_streams_map(&w, &e), -1, "reload: a 65th stream while all are busy");
	is_int(e.code, PD_EX_CONFIG, "  refused with 78");
	is_str(e.msg, "too many stream handlers: at most 64, old ones still answering included",
	       "  saying why");
	ok(w.stream_of == was && w.nstreams == MAX_STREAMS, "  nothing changed");
	ok(w.stream_old[0] == 0 && w.streams[63].cfg.h == &c64.handlers[64],
	   "  no stream marked old or replaced");
	w.cfg = &c64;

	/* One of them free: the new command takes it. */
	w.hs.nready = MAX_STREAMS - 1; /* stream 63 waits for nothing */
	w.cfg = &c64b;
	is_int(pd_worker_streams_map(&w, &e), 0, "reload: one stream free: mapped");
	is_int(w.stream_of[1], 63, "  the new handler in the free stream");
	ok(w.stream_old[0] && w.stream_old[62] && !w.stream_old[63], "  the others old");
	pd_worker_streams_release(&w);

	pd_worker_cfg_release(&c1);
	pd_worker_cfg_release(&c2);
	pd_worker_cfg_release(&c3);
	pd_worker_cfg_release(&c4);
	pd_worker_cfg_release(&c64);
	pd_worker_cfg_release(&c64b);
	pd_config_release(&f1);
	pd_config_release(&f2);
	pd_config_release(&f3);
	pd_config_release(&f4);
	pd_config_release(&f64);
	pd_config_release(&f64b);
	free(t1);
	free(t2);
	free(t3);
	free(t4);
	free(t64);
	free(t64b);
}

/*
 * A handler's request to a worker whose database is down: the lease
 * question gets "unavailable" (it would be asked), anything else an error.
 */
static void test_requests(void)
{
	static const char *const asked[] = {"lease 1 2", "lease 9223372036854775807 1"};
	static const char *const refused[] = {
	    "",
	    "lease",
	    "lease 1",
	    "lease 1 ",
	    "lease 1 2 ",
	    "lease 1 2 3",
	    "lease 1 2x",
	    "lease 0 2",
	    "lease 1 0",
	    "lease -1 2",
	    "lease 1 -2",
	    "lease +1 2",
	    "lease 1 +2",
	    " lease 1 2",
	    "lease  1 2",
	    "lease 1  2",
	    "lease\t1 2",
	    "lease 1\n2",
	    "lease 0x10 2",
	    "LEASE 1 2",
	    "lease 9223372036854775808 1",
	    "lease 1 99999999999999999999999",
	    "leases 1 2",
	};
	struct worker w;
	struct pd_err e = PD_ERR_INIT;
	const char *reply;
	char name[120];

	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		snprintf(name, sizeof(name), "request '%s': asked (unavailable, no database)",
			 asked[i]);
		reply = NULL;
		is_int(pd_worker_request_reply(&w, asked[i], &reply, &e), 0, name);
		is_str(reply, "unavailable", "  unavailable");
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(name, sizeof(name), "request '%s': refused", refused[i]);
		reply = NULL;
		is_int(pd_worker_request_reply(&w, refused[i], &reply, &e), 0, name);
		is_str(reply, "error unknown request (want: lease JOBID TOKEN)", "  an error line");
	}
}

int main(void)
{
	test_init();
	test_defaults();
	test_precedence();
	test_refused();
	test_queues();
	test_merge();
	test_commands();
	test_claim_types();
	test_streams();
	test_requests();
	return done_testing();
}
