/*
 * job_test: the job's state type: every state's stored name, parsing it
 * back, the list for iteration, and the words of the outbox and run states.
 */
#include <string.h>

#include "job.h"
#include "tap.h"

static void test_job_states(void)
{
	static const char *const want[] = {"PENDING",	"BLOCKED",	 "LEASED",   "RUNNING",
					   "SUCCEEDED", "DEAD_LETTERED", "CANCELLED"};
	int n = 0;

	for (; pd_job_states[n]; n++)
		is_str(pd_job_states[n], want[n], "job states in state-machine order");
	is_int(n, PD_JOB_NSTATES, "the list ends after the last state");
	is_int(n, 7, "seven job states");
	for (int i = 0; i < PD_JOB_NSTATES; i++) {
		is_str(pd_job_state_name((enum pd_job_state)i), want[i], "name of each state");
		is_int(pd_job_state_parse(want[i]), i, "parse gives the state back");
	}
	is_int(PD_JOB_PENDING, 0, "PENDING is the first");
	is_int(pd_job_state_parse("DEAD_LETTERED"), PD_JOB_DEAD_LETTERED, "DEAD_LETTERED");
	is_int(pd_job_state_parse("pending"), PD_JOB_NONE, "stored names only: case matters");
	is_int(pd_job_state_parse("DEAD"), PD_JOB_NONE, "a prefix is no state");
	is_int(pd_job_state_parse("PENDINGX"), PD_JOB_NONE, "a longer word is no state");
	is_int(pd_job_state_parse(""), PD_JOB_NONE, "the empty string is no state");
	is_int(pd_job_state_parse(NULL), PD_JOB_NONE, "NULL is no state");
	is_int(pd_job_state_parse("PUBLISHED"), PD_JOB_NONE, "an outbox state is no job state");
	ok(pd_job_state_name(PD_JOB_NONE) == NULL, "PD_JOB_NONE has no name");
	ok(pd_job_state_name(PD_JOB_NSTATES) == NULL, "past the last state has no name");
}

static void test_other_machines(void)
{
	static const char *const outbox[] = {"PENDING", "PUBLISHED", "DEAD_LETTERED"};
	static const char *const run[] = {"RUNNING",   "SLEEPING",	"WAITING",
					  "SUCCEEDED", "DEAD_LETTERED", "CANCELLED"};
	int n = 0;

	for (; pd_outbox_states[n]; n++)
		is_str(pd_outbox_states[n], outbox[n], "outbox states in life order");
	is_int(n, PD_OUTBOX_NSTATES, "three outbox states");
	for (n = 0; pd_run_states[n]; n++)
		is_str(pd_run_states[n], run[n], "run states in view order");
	is_int(n, PD_RUN_NSTATES, "six run states");
}

int main(void)
{
	test_job_states();
	test_other_machines();
	return done_testing();
}
