/*
 * outbox_test: the pure parts of lib/outbox: header names to environment
 * variables, and the publish command's whole environment. (The claim and
 * outcome statements are tested against PostgreSQL in tests/outbox.bats.)
 */
#include <stdlib.h>
#include <string.h>

#include "outbox.h"
#include "tap.h"
#include "text.h"

static void var_is(const char *key, const char *want)
{
	struct pd_buf b = PD_BUF_INIT;
	char name[200];

	pd_outbox_header_var(&b, key);
	snprintf(name, sizeof(name), "header '%s' is %s", key, want);
	is_str(pd_buf_str(&b), want, name);
	pd_buf_release(&b);
}

static int count(char **env)
{
	int n = 0;

	while (env && env[n])
		n++;
	return n;
}

/* The value of name in env, NULL when absent; fails the test if it occurs twice. */
static const char *get(char **env, const char *name)
{
	size_t l = strlen(name);
	const char *v = NULL;
	int seen = 0;

	for (int i = 0; env && env[i]; i++) {
		if (strncmp(env[i], name, l) == 0 && env[i][l] == '=') {
			v = env[i] + l + 1;
			seen++;
		}
	}
	if (seen > 1)
		ok(0, name);
	return v;
}

static void test_header_var(void)
{
	var_is("x-trace-id", "PD_HEADER_X_TRACE_ID");
	var_is("Content-Type", "PD_HEADER_CONTENT_TYPE");
	var_is("ce_specversion", "PD_HEADER_CE_SPECVERSION");
	var_is("a.b/c d", "PD_HEADER_A_B_C_D");
	var_is("v2", "PD_HEADER_V2");
	var_is("ABC", "PD_HEADER_ABC");
	var_is("=", "PD_HEADER__");
	var_is("caf\xc3\xa9", "PD_HEADER_CAF__");
	var_is("", "PD_HEADER_");
}

static void test_env(void)
{
	const char *base[] = {"PATH=/usr/bin:/bin",   "HOME=/root",	     "PD_TOPIC=stale",
			      "PD_MESSAGE_KEY=stale", "PD_HEADER_OLD=stale", "PD_TOPICS=kept",
			      "PD_ATTEMPTX=kept",     "PD_JOB_ID=kept",	     NULL};
	struct pd_outbox_msg m = {0};
	struct pd_err e = PD_ERR_INIT;
	char **env;

	m.id = 42;
	m.token = 7001;
	m.attempt = 2;
	m.max_attempts = 10;
	m.tenant = "acme";
	m.topic = "orders";
	m.key = "order-42";
	m.payload = "{\"total\": 12}";
	m.headers = "{\"x-trace-id\": \"abc\", \"content-type\": \"application/json\", "
		    "\"quote\": \"a \\\"b\\\"\\nc \\u00e9\", \"n\": 5, \"o\": {\"k\": [1]}}";
	env = pd_outbox_env(base, &m, &e);
	if (!ok(env != NULL, "an environment for a keyed message with headers"))
		diag(e.msg);
	is_str(get(env, "PATH"), "/usr/bin:/bin", "the base is kept");
	is_str(get(env, "HOME"), "/root", "  all of it");
	is_str(get(env, "PD_TOPICS"), "kept", "  a longer name is not ours");
	is_str(get(env, "PD_ATTEMPTX"), "kept", "  nor one with a suffix");
	is_str(get(env, "PD_JOB_ID"), "kept", "  nor a worker's variable");
	ok(get(env, "PD_HEADER_OLD") == NULL, "an inherited PD_HEADER_ is dropped");
	is_str(get(env, "PD_TOPIC"), "orders", "PD_TOPIC (the inherited one replaced)");
	is_str(get(env, "PD_MESSAGE_KEY"), "order-42", "PD_MESSAGE_KEY");
	is_str(get(env, "PD_MESSAGE_ID"), "42", "PD_MESSAGE_ID");
	is_str(get(env, "PD_TENANT"), "acme", "PD_TENANT");
	is_str(get(env, "PD_ATTEMPT"), "2", "PD_ATTEMPT");
	is_str(get(env, "PD_MAX_ATTEMPTS"), "10", "PD_MAX_ATTEMPTS");
	is_str(get(env, "PD_CLAIM_TOKEN"), "7001", "PD_CLAIM_TOKEN");
	is_str(get(env, "PD_HEADER_X_TRACE_ID"), "abc", "a header");
	is_str(get(env, "PD_HEADER_CONTENT_TYPE"), "application/json", "another header");
	is_str(get(env, "PD_HEADER_QUOTE"), "a \"b\"\nc \xc3\xa9", "a string header is unescaped");
	is_str(get(env, "PD_HEADER_N"), "5", "a number header is its JSON text");
	is_str(get(env, "PD_HEADER_O"), "{\"k\": [1]}", "an object header is its JSON text");
	is_int(count(env), 5 + 7 + 5, "nothing else: 5 kept, 7 PD_*, 5 headers");
	ok(strstr(env[0], "PATH=") == env[0] && strstr(env[4], "PD_JOB_ID=") == env[4],
	   "the base comes first, in its order");
	pd_strv_free(env);

	m.key = NULL;
	m.headers = "{}";
	env = pd_outbox_env(NULL, &m, &e);
	ok(env != NULL, "no key, no headers, no base");
	ok(get(env, "PD_MESSAGE_KEY") == NULL, "  PD_MESSAGE_KEY is unset without a key");
	is_int(count(env), 6, "  six variables");
	pd_strv_free(env);

	m.headers = NULL;
	env = pd_outbox_env(NULL, &m, &e);
	ok(env != NULL && count(env) == 6, "NULL headers are none");
	pd_strv_free(env);

	m.headers = "{\"a-b\": \"1\", \"a_b\": \"2\", \"A.B\": \"3\"}";
	env = pd_outbox_env(NULL, &m, &e);
	is_str(get(env, "PD_HEADER_A_B"), "3", "two headers on one variable: the later wins, once");
	is_int(count(env), 7, "  one variable for the three");
	pd_strv_free(env);

	m.headers = "[\"a\"]";
	pd_err_clear(&e);
	ok(pd_outbox_env(NULL, &m, &e) == NULL && e.code == PD_EX_DATAERR,
	   "headers that are an array are refused");
	is_str(e.msg, "message 42: headers: expected a JSON object", "  with the message");
	m.headers = "{\"a\": ";
	pd_err_clear(&e);
	ok(pd_outbox_env(NULL, &m, &e) == NULL && e.code == PD_EX_DATAERR,
	   "headers that are not JSON are refused");
	like(e.msg, "message 42: headers: invalid JSON at line 1, column ", "  with the message");
}

int main(void)
{
	test_header_var();
	test_env();
	return done_testing();
}
