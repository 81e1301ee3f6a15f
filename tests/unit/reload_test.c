/*
 * reload_test: lib/reload (pd_reload's paths: no source, a file that does
 * not parse, an apply that refuses, success; the concurrency pin),
 * pd_handler_same_command, and pd_worker_settle's merge of the flags'
 * handlers over the file's, which a reload redoes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "handler.h"
#include "log.h"
#include "reload.h"
#include "worker.h"
#include "tap.h"

/* A fake source: counts calls; load fails when fail is set. */
struct fake {
	int loads, keeps, drops, fail;
	struct pd_config *kept;
};

static struct pd_config *fake_load(void *ctx, struct pd_err *e)
{
	struct fake *f = ctx;

	f->loads++;
	if (f->fail) {
		pd_errf(e, PD_EX_CONFIG, "pd.yaml:3:5: unknown key 'rum'");
		return NULL;
	}
	return pd_config_new();
}

static void fake_keep(void *ctx, struct pd_config *c)
{
	struct fake *f = ctx;

	f->keeps++;
	pd_config_free(f->kept);
	f->kept = c;
}

static void fake_drop(void *ctx, struct pd_config *c)
{
	struct fake *f = ctx;

	f->drops++;
	pd_config_free(c);
}

static int applied;

static int apply_ok(void *arg, const struct pd_config *c, struct pd_buf *summary, struct pd_err *e)
{
	(void)arg;
	(void)c;
	(void)e;
	applied++;
	pd_buf_printf(summary, "handlers=0");
	return 0;
}

static int apply_refuse(void *arg, const struct pd_config *c, struct pd_buf *summary,
			struct pd_err *e)
{
	(void)arg;
	(void)c;
	(void)summary;
	return pd_errf(e, PD_EX_CONFIG, "no handlers");
}

static void test_reload(void)
{
	struct fake f = {0};
	struct pd_config_source src = {fake_load, fake_keep, fake_drop, &f};
	struct pd_config_source none = {NULL, NULL, NULL, NULL};

	is_int(pd_reload(NULL, "worker", apply_ok, NULL), 0, "no source: nothing reloaded");
	is_int(pd_reload(&none, "worker", apply_ok, NULL), 0, "a source without load: nothing");
	is_int(applied, 0, "and nothing applied");
	f.fail = 1;
	is_int(pd_reload(&src, "worker", apply_ok, NULL), 0, "a file that does not parse: 0");
	is_int(applied + f.keeps + f.drops, 0, "nothing applied, kept or dropped");
	f.fail = 0;
	is_int(pd_reload(&src, "worker", apply_refuse, NULL), 0, "an apply that refuses: 0");
	is_int(f.drops, 1, "the new config dropped");
	is_int(f.keeps, 0, "and not kept");
	is_int(pd_reload(&src, "worker", apply_ok, NULL), 1, "both succeed: 1");
	is_int(applied, 1, "applied once");
	is_int(f.keeps, 1, "the new config kept by the source");
	ok(f.kept != NULL, "the source holds it");
	pd_config_free(f.kept);
}

static void test_pin(void)
{
	struct pd_engine_cfg flags, file;

	pd_engine_cfg_init(&flags);
	pd_engine_cfg_init(&file);
	file.concurrency = 8;
	pd_reload_pin_concurrency(&flags, &file, 4, "worker");
	is_int(flags.concurrency, 4, "a file's new concurrency: the running one kept");
	flags.concurrency = 2;
	pd_reload_pin_concurrency(&flags, &file, 2, "worker");
	is_int(flags.concurrency, 2, "a flag's concurrency: kept");
}

static void test_same_command(void)
{
	char *argv1[] = {(char *)"/bin/a", (char *)"x", NULL};
	char *argv2[] = {(char *)"/bin/a", (char *)"x", NULL};
	char *argv3[] = {(char *)"/bin/a", NULL};
	struct pd_handler a = {(char *)"t", (char *)"echo 1", NULL, -1, {0}, 0, PD_HANDLER_STREAM};
	struct pd_handler b = a, c = a;

	ok(pd_handler_same_command(&a, &b), "the same run string");
	b.run = (char *)"echo 2";
	ok(!pd_handler_same_command(&a, &b), "another run string");
	c.mode = PD_HANDLER_PROCESS;
	ok(!pd_handler_same_command(&a, &c), "another mode");
	a.run = b.run = NULL;
	a.exec_argv = argv1;
	b.exec_argv = argv2;
	ok(pd_handler_same_command(&a, &b), "equal exec argvs");
	b.exec_argv = argv3;
	ok(!pd_handler_same_command(&a, &b), "a shorter exec argv");
	ok(!pd_handler_same_command(&b, &a), "a longer exec argv");
	b.exec_argv = NULL;
	b.run = (char *)"/bin/a x";
	ok(!pd_handler_same_command(&a, &b), "exec against run");
}

static void test_merge(void)
{
	struct pd_handler flag[] = {{(char *)"t", (char *)"flag", NULL, -1, {0}, 0, 0}};
	struct pd_handler file[] = {{(char *)"t", (char *)"file-t", NULL, -1, {0}, 0, 0},
				    {(char *)"u", (char *)"file-u", NULL, -1, {0}, 0, 0}};
	struct pd_config cfg;
	struct pd_worker_cfg w;
	struct pd_err e = PD_ERR_INIT;

	pd_config_init(&cfg);
	cfg.handlers = file;
	cfg.nhandlers = 2;
	pd_worker_cfg_init(&w);
	w.handlers = flag;
	w.nhandlers = 1;
	is_int(pd_worker_settle(&w, &cfg, &e), 0, "settle");
	is_int(w.nhandlers, 2, "the flag's t and the file's u");
	is_str(w.handlers[0].run, "flag", "a flag's handler wins for its type");
	is_str(w.handlers[1].name, "u", "the file's for another type follows");
	pd_worker_cfg_release(&w);
}

int main(void)
{
	pd_log_set_level(PD_LOG_ERROR); /* the refusals log at error: keep stderr for those */
	test_reload();
	test_pin();
	test_same_command();
	test_merge();
	return done_testing();
}
