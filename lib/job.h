/*
 * job: the job's state type. The seven states of pendulum.jobs.state as an
 * enum, their names, and parsing; beside them the state words of the two
 * other stored state machines (the outbox message, the workflow run), so that
 * a state is spelled in C in this one module (and in SQL text).
 *
 *   PENDING -> LEASED -> RUNNING -> SUCCEEDED | DEAD_LETTERED | PENDING (retry)
 *   BLOCKED -> PENDING when the jobs it waits for succeed; any -> CANCELLED
 *
 * The transitions themselves are SQL (lib/jobs.c and the migrations); this
 * module names the states, it does not move them.
 */
#ifndef PD_JOB_H
#define PD_JOB_H

/* In the order of listings and metrics (pd_job_states). */
enum pd_job_state {
	PD_JOB_NONE = -1, /* not a job state (pd_job_state_parse) */
	PD_JOB_PENDING,
	PD_JOB_BLOCKED,
	PD_JOB_LEASED,
	PD_JOB_RUNNING,
	PD_JOB_SUCCEEDED,
	PD_JOB_DEAD_LETTERED,
	PD_JOB_CANCELLED,
	PD_JOB_NSTATES
};

/* The names in enum order, NULL-terminated: for iteration. */
extern const char *const pd_job_states[PD_JOB_NSTATES + 1];

/* The stored name of st ("PENDING", ...); NULL for anything else. */
const char *pd_job_state_name(enum pd_job_state st);
/* The state named s exactly as stored (case matters), or PD_JOB_NONE. */
enum pd_job_state pd_job_state_parse(const char *s);

/* pendulum.outbox.state, in enum order. */
enum pd_outbox_state {
	PD_OUTBOX_PENDING,
	PD_OUTBOX_PUBLISHED,
	PD_OUTBOX_DEAD_LETTERED,
	PD_OUTBOX_NSTATES
};
extern const char *const pd_outbox_states[PD_OUTBOX_NSTATES + 1];

/* pendulum.workflow_run_states.state, in enum order (the order of listings). */
enum pd_run_state {
	PD_RUN_RUNNING,
	PD_RUN_SLEEPING,
	PD_RUN_WAITING,
	PD_RUN_SUCCEEDED,
	PD_RUN_DEAD_LETTERED,
	PD_RUN_CANCELLED,
	PD_RUN_NSTATES
};
extern const char *const pd_run_states[PD_RUN_NSTATES + 1];

#endif
