/*
 * henv_test: what a child inherits of a daemon's environment (the one
 * builder, pd_henv_build): no PD_DATABASE_URL, no PG* variable, no
 * secret_env: name, unless pass_env: names it; a variable withheld from
 * the process (pd_henv_withhold) comes back only through pass_env:, and is
 * gone, name and value, from the environment block itself.
 */
#include <stdlib.h>
#include <string.h>

#include "henv.h"
#include "tap.h"
#include "text.h"

extern char **environ;

/* The value of name in env, or NULL. */
static const char *get(char **env, const char *name)
{
	size_t l = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, l) == 0 && (*env)[l] == '=')
			return *env + l + 1;
	return NULL;
}

static void test_rule(void)
{
	const char *base[] = {"PATH=/bin",     "PD_DATABASE_URL=postgres://u:pw@h/d",
			      "PGPASSWORD=pw", "PGHOST=/tmp",
			      "PGX=1",	       "MY_TOKEN=t0k",
			      "OTHER=o",       "PD_JOB_ID=9",
			      "PGUSERX",       NULL};
	const char *secret[] = {"MY_TOKEN", NULL};
	const char *pass[] = {"PGHOST", "MY_TOKEN", NULL};
	const char *drop[] = {"PD_JOB_ID", NULL};
	size_t k;
	char **env = pd_henv_build(base, secret, NULL, drop, 2, &k);

	is_int((long long)k, 2, "two of nine pass");
	is_str(get(env, "PATH"), "/bin", "PATH passes");
	is_str(get(env, "OTHER"), "o", "an ordinary variable passes");
	ok(get(env, "PD_DATABASE_URL") == NULL, "PD_DATABASE_URL is withheld");
	ok(get(env, "PGPASSWORD") == NULL, "PGPASSWORD is withheld");
	ok(get(env, "PGHOST") == NULL, "PGHOST is withheld (every name starting with PG)");
	ok(get(env, "PGX") == NULL, "PGX is withheld");
	ok(get(env, "MY_TOKEN") == NULL, "a secret_env: name is withheld");
	ok(get(env, "PD_JOB_ID") == NULL, "a dropped name is left out");
	ok(env[k] == NULL && env[k + 1] == NULL && env[k + 2] == NULL, "room for 2 more");
	pd_strv_free(env);

	env = pd_henv_build(base, secret, pass, drop, 0, &k);
	is_str(get(env, "PGHOST"), "/tmp", "pass_env: passes a PG* variable");
	is_str(get(env, "MY_TOKEN"), "t0k", "pass_env: passes a secret_env: name");
	ok(get(env, "PGPASSWORD") == NULL, "what pass_env: does not name stays withheld");
	pd_strv_free(env);

	ok(pd_henv_passes("PGPASSWORD", NULL, NULL) == 0, "a bare name is judged too");
	ok(pd_henv_passes("PD_DATABASE_URLX=1", NULL, NULL) == 1, "only the exact name");
	ok(pd_henv_passes("PD_LISTEN_URL=host=/x", NULL, NULL) == 0, "PD_LISTEN_URL is withheld");
	ok(pd_henv_passes("PD_LISTEN_URLX=1", NULL, NULL) == 1, "  only the exact name");
	ok(pd_henv_passes("MY_TOKENX=1", secret, NULL) == 1, "secret_env: exact names");
}

static void test_names(void)
{
	char longname[PD_HENV_NAME_MAX + 2];

	ok(pd_henv_name_ok("MY_TOKEN_2"), "letters, digits, _");
	ok(pd_henv_name_ok("_x"), "a leading _");
	ok(!pd_henv_name_ok(""), "not empty");
	ok(!pd_henv_name_ok("2X"), "not a leading digit");
	ok(!pd_henv_name_ok("A=B"), "no =");
	ok(!pd_henv_name_ok("A B"), "no space");
	memset(longname, 'A', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ok(!pd_henv_name_ok(longname), "at most PD_HENV_NAME_MAX bytes");
	longname[PD_HENV_NAME_MAX] = '\0';
	ok(pd_henv_name_ok(longname), "PD_HENV_NAME_MAX bytes");
}

static void test_withhold(void)
{
	static char var[] = "PD_DATABASE_URL=host=/x password=s3cret";
	const char *pass[] = {"PD_DATABASE_URL", NULL};
	const char *v;
	size_t k;
	char **env;

	putenv(var); /* var itself is the environment block's string, as at exec */
	v = pd_henv_withhold("PD_DATABASE_URL");
	is_str(v, "host=/x password=s3cret", "the value is kept");
	ok(getenv("PD_DATABASE_URL") == NULL, "and unset");
	ok(strstr(var, "s3cret") == NULL && strstr(var, "PD_DATABASE_URL") == NULL,
	   "the bytes in the block are overwritten, name and value");
	is_str(pd_henv_held("PD_DATABASE_URL"), "host=/x password=s3cret", "held");
	ok(pd_henv_withhold("PD_NOT_SET_AT_ALL") == NULL, "an unset one: NULL");
	ok(pd_henv_held("PD_NOT_SET_AT_ALL") == NULL, "and nothing held");

	env = pd_henv_build((const char *const *)environ, NULL, NULL, NULL, 0, &k);
	ok(get(env, "PD_DATABASE_URL") == NULL, "withheld: not given to a child");
	pd_strv_free(env);
	env = pd_henv_build((const char *const *)environ, NULL, pass, NULL, 0, &k);
	is_str(get(env, "PD_DATABASE_URL"), "host=/x password=s3cret",
	       "withheld, passed: given back");
	pd_strv_free(env);
}

int main(void)
{
	test_rule();
	test_names();
	test_withhold();
	return done_testing();
}
