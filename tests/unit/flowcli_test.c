/*
 * flowcli_test: what pd-enqueue --workflow and pd-admin flow check without a
 * database: the run states and their parsing, the JSON check of an INPUT or
 * a signal's PAYLOAD, and how a run's state words are coloured.
 */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "summary.h"
#include "enqueue.h"
#include "job.h"
#include "tap.h"

static void test_run_states(void)
{
	const char *want[] = {"RUNNING",   "SLEEPING",	    "WAITING",
			      "SUCCEEDED", "DEAD_LETTERED", "CANCELLED"};
	int n = 0;

	for (; pd_run_states[n]; n++)
		is_str(pd_run_states[n], want[n], "run states in view order");
	is_int(n, 6, "six run states");
	ok(pd_admin_state_in(pd_run_states, "waiting") == pd_run_states[2],
	   "a run state in any case is the canonical string");
	ok(pd_admin_state_in(pd_run_states, "PENDING") == NULL, "a job state is not a run state");
	ok(pd_admin_state_in(pd_run_states, "") == NULL, "an empty state is none");
	ok(pd_admin_state_in(pd_job_states, "leased") == pd_admin_state("LEASED"),
	   "pd_admin_state is pd_admin_state_in over the job states");
	ok(pd_admin_state_in(pd_outbox_states, "published") == pd_admin_outbox_state("PUBLISHED"),
	   "pd_admin_outbox_state is pd_admin_state_in over the outbox states");
}

/* pd_enqueue_check_json on text named where: 0, or the message in msg. */
static int check(const char *text, const char *where, char *msg, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	int rc = pd_enqueue_check_json(text, strlen(text), where, &e);

	snprintf(msg, n, "%s", e.msg);
	return rc < 0 ? e.code : 0;
}

static void test_check_json(void)
{
	char msg[512];

	is_int(check("{\"a\": [1, null]}", "INPUT", msg, sizeof(msg)), 0, "an object is JSON");
	is_int(check("null", "PAYLOAD", msg, sizeof(msg)), 0, "null is JSON");
	is_int(check(" \"text\" \n", "PAYLOAD", msg, sizeof(msg)), 0, "a string is JSON");
	is_int(check("{\"a\": }", "INPUT", msg, sizeof(msg)), 65, "a bad value is code 65");
	is_str(msg, "invalid JSON in INPUT at line 1, column 7: expected a value",
	       "the error names where, the line and the column");
	is_int(check("[\n  1,\n  ]", "stdin", msg, sizeof(msg)), 65, "a trailing comma is 65");
	ok(strncmp(msg, "invalid JSON in stdin at line 3, column 3: ", 43) == 0,
	   "the line and column are the input's");
	is_int(check("", "stdin", msg, sizeof(msg)), 65, "nothing is not JSON");
	is_int(check("1 2", "PAYLOAD", msg, sizeof(msg)), 65, "two values are not one");
}

static void test_state_colours(void)
{
	static const struct pd_col cols[] = {{"state", NULL, 'S', 'b'}};
	const char *cells[] = {"WAITING", "done", "dead"};
	struct pd_fmt color = {0, 1};
	struct pd_buf b = PD_BUF_INIT;

	pd_render(cols, 1, cells, 3, &color, &b);
	ok(strstr(pd_buf_str(&b), "\033[33mWAITING\033[0m") != NULL, "a waiting run is yellow");
	ok(strstr(pd_buf_str(&b), "\033[32mdone\033[0m") != NULL, "a done step is green");
	ok(strstr(pd_buf_str(&b), "\033[31mdead\033[0m") != NULL, "a dead step is red");
	pd_buf_release(&b);
}

int main(void)
{
	test_run_states();
	test_check_json();
	test_state_colours();
	return done_testing();
}
