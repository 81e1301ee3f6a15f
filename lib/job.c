#include <string.h>

#include "job.h"

/* The one place in C where a state is spelled. */
const char *const pd_job_states[PD_JOB_NSTATES + 1] = {
    [PD_JOB_PENDING] = "PENDING",     [PD_JOB_BLOCKED] = "BLOCKED",
    [PD_JOB_LEASED] = "LEASED",	      [PD_JOB_RUNNING] = "RUNNING",
    [PD_JOB_SUCCEEDED] = "SUCCEEDED", [PD_JOB_DEAD_LETTERED] = "DEAD_LETTERED",
    [PD_JOB_CANCELLED] = "CANCELLED", [PD_JOB_NSTATES] = NULL,
};

const char *const pd_outbox_states[PD_OUTBOX_NSTATES + 1] = {
    [PD_OUTBOX_PENDING] = "PENDING",
    [PD_OUTBOX_PUBLISHED] = "PUBLISHED",
    [PD_OUTBOX_DEAD_LETTERED] = "DEAD_LETTERED",
    [PD_OUTBOX_NSTATES] = NULL,
};

const char *const pd_run_states[PD_RUN_NSTATES + 1] = {
    [PD_RUN_RUNNING] = "RUNNING",
    [PD_RUN_SLEEPING] = "SLEEPING",
    [PD_RUN_WAITING] = "WAITING",
    [PD_RUN_SUCCEEDED] = "SUCCEEDED",
    [PD_RUN_DEAD_LETTERED] = "DEAD_LETTERED",
    [PD_RUN_CANCELLED] = "CANCELLED",
    [PD_RUN_NSTATES] = NULL,
};

const char *pd_job_state_name(enum pd_job_state st)
{
	return st >= 0 && st < PD_JOB_NSTATES ? pd_job_states[st] : NULL;
}

enum pd_job_state pd_job_state_parse(const char *s)
{
	for (int i = 0; s && i < PD_JOB_NSTATES; i++)
		if (strcmp(s, pd_job_states[i]) == 0)
			return (enum pd_job_state)i;
	return PD_JOB_NONE;
}
