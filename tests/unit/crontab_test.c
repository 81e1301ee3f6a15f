/*
 * crontab_test: lib/crontab without a database: the four-line example of
 * issue 14, annotations, CRON_TZ and NAME=value scoping, stable generated
 * names, the file's scope and type prefix, YAML-or-crontab detection, and
 * each error with its line; workflow= lines (scheduled workflows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "crontab.h"
#include "henv.h"
#include "text.h"
#include "tap.h"

static int parse(struct pd_crontab *t, const char *text, struct pd_err *e)
{
	return pd_crontab_parse(t, "/etc/pendulum/app.crontab", text, strlen(text), "UTC", NULL, e);
}

/* The error of text, "" when it parses. */
static const char *error_of(const char *text)
{
	static struct pd_err e;
	struct pd_crontab t;

	pd_err_clear(&e);
	if (parse(&t, text, &e) == 0) {
		pd_crontab_release(&t);
		return "";
	}
	return e.msg;
}

static void example(void)
{
	static const char text[] = "# the acceptance's crontab\n"
				   "CRON_TZ=Europe/Berlin\n"
				   "30 2 * * * /usr/local/bin/nightly\n"
				   "CRON_TZ=UTC\n"
				   "@hourly  rotate-logs\n"
				   "GREETING=\"hello world\"\n"
				   "*/5 * * * * echo \"$GREETING\"\n"
				   "# pd: name=backup timeout=1h max_attempts=3 queue=ops "
				   "misfire=fire_all overlap=allow jitter=5m key=backups\n"
				   "0 4 * * sun tar czf /tmp/etc.tgz /etc\n";
	struct pd_err e = PD_ERR_INIT;
	struct pd_crontab t;

	ok(parse(&t, text, &e) == 0, "the four-line example parses");
	is_int(t.n, 4, "four schedules");
	is_str(t.scope, "app", "the scope is the base name without extension");
	is_str(t.v[0].s.timezone, "Europe/Berlin", "CRON_TZ applies to the line after it");
	is_str(t.v[0].s.cron, "30 2 * * *", "the expression");
	is_str(t.v[0].command, "/usr/local/bin/nightly", "the command");
	is_int(t.v[0].s.line, 3, "the line");
	is_int(t.v[0].s.overlap, PD_OVERLAP_SKIP, "a crontab line skips overlaps by default");
	is_str(t.v[0].s.payload, "{}", "the payload is {}");
	ok(strncmp(t.v[0].s.name, "cron-", 5) == 0 && strlen(t.v[0].s.name) == 13,
	   "an unnamed line gets cron-XXXXXXXX");
	ok(strcmp(t.v[0].s.type, "crontab.app.") > 0 &&
	       strcmp(t.v[0].s.type + strlen("crontab.app."), t.v[0].s.name) == 0,
	   "its type is crontab.SCOPE.NAME");
	is_str(t.v[1].s.timezone, "UTC", "a second CRON_TZ applies after it");
	is_str(t.v[1].s.cron, "@hourly", "a macro");
	is_str(t.v[1].command, "rotate-logs", "the macro's command");
	is_int(t.v[1].nenv, 0, "no variable before the assignment");
	is_int(t.v[2].nenv, 1, "one variable after it");
	is_str(t.v[2].env[0], "GREETING=hello world", "quotes are removed from the value");
	ok(t.v[2].env[1] == NULL, "the environment is NULL-terminated");
	is_str(t.v[3].s.name, "backup", "annotation: name");
	is_str(t.v[3].s.type, "crontab.app.backup", "annotation: the type follows the name");
	is_int(t.v[3].s.timeout_ms, 3600000, "annotation: timeout");
	is_int(t.v[3].s.max_attempts, 3, "annotation: max_attempts");
	is_str(t.v[3].s.queue, "ops", "annotation: queue");
	is_str(t.v[3].s.concurrency_key, "backups", "annotation: key");
	ok(t.v[0].s.concurrency_key == NULL, "no key without the annotation");
	is_int(t.v[3].s.misfire, PD_MISFIRE_FIRE_ALL, "annotation: misfire");
	is_int(t.v[3].s.overlap, PD_OVERLAP_ALLOW, "annotation: overlap");
	is_int(t.v[3].s.jitter_ms, 300000, "annotation: jitter");
	is_int(t.v[2].s.timeout_ms, -1, "no annotation: the default timeout");
	is_int(t.v[2].s.jitter_ms, 0, "no annotation: no jitter");
	is_int(t.v[2].nenv, 1, "the annotation does not touch the environment");
	pd_crontab_release(&t);
}

static void scoping(void)
{
	static const char text[] = "A=1\n"
				   "* * * * * one\n"
				   "A=2\n"
				   "B = 'x y'\n"
				   "* * * * * two\n"
				   "CRON_TZ=Asia/Tokyo\n"
				   "* * * * * three\n";
	struct pd_err e = PD_ERR_INIT;
	struct pd_crontab t;

	ok(parse(&t, text, &e) == 0, "scoping example parses");
	is_int(t.v[0].nenv, 1, "line 2 sees A");
	is_str(t.v[0].env[0], "A=1", "line 2 sees A=1");
	is_int(t.v[1].nenv, 2, "line 5 sees A and B");
	is_str(t.v[1].env[0], "A=2", "a later assignment replaces the earlier one");
	is_str(t.v[1].env[1], "B=x y", "blanks around '=' and single quotes");
	is_str(t.v[0].s.timezone, "UTC", "before any CRON_TZ: the host zone given");
	is_str(t.v[1].s.timezone, "UTC", "still the host zone");
	is_str(t.v[2].s.timezone, "Asia/Tokyo", "after CRON_TZ");
	is_int(t.v[2].nenv, 2, "CRON_TZ is not exported");
	pd_crontab_release(&t);
}

static void names(void)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_crontab a, b, c;

	ok(parse(&a, "0 3 * * * backup.sh\n", &e) == 0, "parse a");
	ok(parse(&b, "# a comment\nX=1\n0   3 * * *   backup.sh  \n", &e) == 0, "parse b");
	ok(parse(&c, "0 4 * * * backup.sh\n", &e) == 0, "parse c");
	is_str(a.v[0].s.name, b.v[0].s.name, "the name survives comments, blanks and moves");
	ok(strcmp(a.v[0].s.name, c.v[0].s.name) != 0, "another expression, another name");
	pd_crontab_release(&a);
	pd_crontab_release(&b);
	pd_crontab_release(&c);
}

static void errors(void)
{
	const char *m;

	m = error_of("# ok\n* * * * * ok\n61 * * * * bad\n");
	ok(strncmp(m, "/etc/pendulum/app.crontab:3:1: ", 31) == 0, "a bad minute names FILE:3:1");
	ok(strstr(m, "61") != NULL, "and the value");
	is_str(error_of("\n\n* * * *\n"),
	       "/etc/pendulum/app.crontab:3:8: expected five fields and a command", "a short line");
	is_str(error_of("* * * * *\n"),
	       "/etc/pendulum/app.crontab:1:10: missing command after '* * * * *'", "no command");
	ok(strstr(error_of("@reboot x\n"), ":1:1: @reboot is not supported") != NULL, "@reboot");
	ok(strstr(error_of("@often x\n"), ":1:1: ") != NULL, "an unknown macro");
	ok(strstr(error_of("CRON_TZ=Mars/Base\n"), ":1:9: CRON_TZ: ") != NULL,
	   "an unknown zone names the value's column");
	m = error_of("# pd: name=x retries=3\n* * * * * x\n");
	ok(strstr(m, ":1:14: unknown annotation key 'retries'") != NULL, "an unknown key");
	ok(strstr(error_of("# pd: timeout\n* * * * * x\n"),
		  ":1:7: annotation: expected KEY=VALUE") != NULL,
	   "a key without a value");
	ok(strstr(error_of("# pd: timeout=soon\n* * * * * x\n"), ":1:7: annotation 'timeout': ") !=
	       NULL,
	   "a bad duration");
	ok(strstr(error_of("# pd: overlap=never\n* * * * * x\n"), "'overlap'") != NULL,
	   "a bad overlap");
	ok(strstr(error_of("# pd: max_attempts=0\n* * * * * x\n"), "'max_attempts'") != NULL,
	   "a bad max_attempts");
	ok(strstr(error_of("# pd: name=a key=queue:ops\n* * * * * x\n"),
		  ":1:14: annotation 'key': invalid key 'queue:ops': the prefixes queue:, tenant: "
		  "and type: are reserved") != NULL,
	   "a reserved key");
	ok(strstr(error_of("# pd: name=-x\n* * * * * x\n"), ":1:7: annotation 'name'") != NULL,
	   "a bad name");
	ok(strstr(error_of("# pd: name=a\n# pd: name=b\n* * * * * x\n"),
		  ":2:1: a second annotation") != NULL,
	   "two annotations");
	ok(strstr(error_of("# pd: name=a\nX=1\n* * * * * x\n"), ":2:1: the annotation at line 1") !=
	       NULL,
	   "an annotation before an assignment");
	ok(strstr(error_of("* * * * * x\n# pd: name=a\n"),
		  ":2: the annotation is followed by no") != NULL,
	   "an annotation at the end");
	ok(strstr(error_of("# pd: name=a\n* * * * * x\n# pd: name=a\n1 * * * * y\n"),
		  ":4:1: schedule 'a' is already defined at line 2") != NULL,
	   "a duplicate name");
	ok(strstr(error_of("* * * * * x\n\n* * * * * x\n"), ":3:1: same expression and command as "
							    "line 1") != NULL,
	   "a duplicate line");
	ok(strstr(error_of("0 0 31 2 * x\n"), ":1:1: ") != NULL, "an expression that never fires");
}

static void detection(void)
{
	static const struct {
		const char *name, *text;
		int want;
	} cases[] = {
	    {"a", "# c\n\n0 3 * * * x\n", 1},
	    {"b", "PATH=/bin\n* * * * * x\n", 1},
	    {"c", "@daily x\n", 1},
	    {"d", "# pd: name=x\n* * * * * x\n", 1},
	    {"e", "schedules:\n  - name: x\n", 0},
	    {"f.yaml", "@daily x\n", 0},
	    {"g", "", 0},
	};
	char dir[] = "/tmp/crontab_test.XXXXXX", path[256];
	struct pd_err e = PD_ERR_INIT;

	if (mkdtemp(dir) == NULL) {
		printf("Bail out! mkdtemp\n");
		exit(255);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].name);
		f = fopen(path, "w");
		fputs(cases[i].text, f);
		fclose(f);
		is_int(pd_crontab_sniff(path, &e), cases[i].want, cases[i].name);
		unlink(path);
	}
	rmdir(dir);
	is_int(pd_crontab_sniff("/nonexistent/crontab", &e), -1, "an unreadable file");
	is_int(e.code, PD_EX_DATAERR, "is 65");
}

static void scope_and_zone(void)
{
	char s[64], z[128], from[64];

	pd_crontab_scope("/etc/crontab", s, sizeof(s));
	is_str(s, "crontab", "scope of /etc/crontab");
	pd_crontab_scope("my jobs.cron", s, sizeof(s));
	is_str(s, "my-jobs", "other characters become '-'");
	pd_crontab_scope(".hidden", s, sizeof(s));
	is_str(s, "crontab", "an empty scope is 'crontab'");
	setenv("TZ", ":America/New_York", 1);
	pd_host_zone(z, sizeof(z), from, sizeof(from));
	is_str(z, "America/New_York", "the host zone from TZ=:Zone");
	is_str(from, "TZ", "named as from TZ");
	setenv("TZ", "/usr/share/zoneinfo/Asia/Tokyo", 1);
	pd_host_zone(z, sizeof(z), from, sizeof(from));
	is_str(z, "Asia/Tokyo", "the host zone from a TZ path");
	setenv("TZ", "CET-1CEST", 1);
	pd_host_zone(z, sizeof(z), from, sizeof(from));
	ok(strcmp(from, "TZ") != 0, "a POSIX TZ string is not a zone name: the next source");
	unsetenv("TZ");
}

/* workflow=NAME: a schedule of type workflow:NAME, its command '-', its payload the file's mark. */
static void workflows(void)
{
	struct pd_crontab t;
	struct pd_err e = PD_ERR_INIT;
	const char *text = "# pd: workflow=order\n* * * * * -\n"
			   "# pd: workflow=refund\n* * * * * -\n"
			   "# pd: name=nightly workflow=order key=shop overlap=allow\n@daily -\n"
			   "* * * * * -\n";

	ok(parse(&t, text, &e) == 0, "workflow lines parse");
	is_str(t.v[0].s.type, "workflow:order", "workflow=order: type workflow:order");
	is_str(pd_sched_workflow(t.v[0].s.type), "order", "which names workflow order");
	is_str(t.v[0].s.payload, "{\"crontab\": \"app\"}", "the payload marks the file's scope");
	ok(strcmp(t.v[0].s.name, t.v[1].s.name) != 0,
	   "same expression, another workflow: another generated name");
	is_str(t.v[2].s.name, "nightly", "annotated name");
	is_str(t.v[2].s.concurrency_key, "shop", "and key");
	ok(t.v[2].s.overlap == PD_OVERLAP_ALLOW, "and overlap");
	ok(strncmp(t.v[3].s.type, "crontab.app.", 12) == 0 && strcmp(t.v[3].command, "-") == 0,
	   "a '-' command without workflow= is a command of the crontab's types");
	pd_crontab_release(&t);
	ok(strstr(error_of("# pd: workflow=order\n* * * * * echo hi\n"),
		  ":2:11: the command of a workflow=order line must be '-'") != NULL,
	   "a workflow line's command must be '-'");
	ok(strstr(error_of("# pd: workflow=a/b\n* * * * * -\n"), ":1:7: annotation 'workflow'") !=
	       NULL,
	   "a workflow name of other characters");
	ok(strstr(error_of("# pd: workflow=\n* * * * * -\n"),
		  ":1:7: annotation: expected KEY=VALUE") != NULL,
	   "an empty workflow name");
	ok(strstr(error_of("# pd: workflow=order timeout=1m\n* * * * * -\n"),
		  ":2:1: invalid timeout for workflow 'order'") != NULL,
	   "a workflow line takes no timeout");
}

/* Issue 27: one attempt, cron's environment, what differs from cron. */
static void like_cron(void)
{
	static const char text[] = "@daily a\n"
				   "SHELL=/bin/bash\n"
				   "PATH=/opt/bin:/usr/bin\n"
				   "HOME=/srv\n"
				   "# pd: max_attempts=4 misfire=skip overlap=allow\n"
				   "@daily date +%s\n";
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf d = PD_BUF_INIT;
	struct pd_crontab t;
	char **env;

	ok(parse(&t, text, &e) == 0, "parses");
	is_int(t.v[0].s.max_attempts, 1, "a line has one attempt by default");
	is_int(t.v[1].s.max_attempts, 4, "max_attempts= opts into retries");
	is_str(t.v[0].s.command, "a", "the command, for pd-cron list");
	ok(t.v[0].s.source != NULL && t.v[0].s.source == t.source, "the file owns it");
	env = pd_crontab_run_env(&t.v[0], "/home/u", "u");
	is_str(pd_henv_get(env, "SHELL"), "/bin/sh", "cron's SHELL");
	is_str(pd_henv_get(env, "PATH"), "/usr/bin:/bin", "cron's PATH");
	is_str(pd_henv_get(env, "HOME"), "/home/u", "the user's HOME");
	is_str(pd_henv_get(env, "LOGNAME"), "u", "the user's LOGNAME");
	ok(env[4] == NULL, "nothing else");
	pd_strv_free(env);
	env = pd_crontab_run_env(&t.v[1], "/home/u", "u");
	is_str(pd_henv_get(env, "SHELL"), "/bin/bash", "the file's SHELL= wins");
	is_str(pd_henv_get(env, "PATH"), "/opt/bin:/usr/bin", "the file's PATH= wins");
	is_str(pd_henv_get(env, "HOME"), "/srv", "the file's HOME= wins");
	ok(env[4] == NULL, "replaced, not added");
	pd_strv_free(env);
	pd_crontab_differences(&t.v[0], &d);
	ok(strstr(d.data, "3\tskipped while its previous job waits or runs") == NULL &&
	       strstr(d.data, "1\tskipped while its previous job waits or runs") != NULL,
	   "overlap skip noted, with the line");
	pd_buf_reset(&d);
	pd_crontab_differences(&t.v[1], &d);
	ok(strstr(d.data, "skipped") == NULL && strstr(d.data, "fires late") == NULL,
	   "misfire=skip overlap=allow: as cron");
	ok(strstr(d.data, "6\ta failure is retried, up to 4 attempts") != NULL, "retries noted");
	ok(strstr(d.data, "6\t'%' is an ordinary character") != NULL, "'%' noted");
	pd_buf_release(&d);
	pd_crontab_release(&t);
}

int main(void)
{
	example();
	like_cron();
	scoping();
	names();
	errors();
	detection();
	scope_and_zone();
	workflows();
	return done_testing();
}
