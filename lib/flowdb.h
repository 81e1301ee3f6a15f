/*
 * flowdb: what the command line does to workflow runs in the database —
 * start one (pendulum.start_workflow), signal one
 * (pendulum.signal_workflow), find the job that drives one. The engine's
 * side (claiming, planning, recording steps) is lib/flow and lib/worker;
 * listing and showing runs is lib/admin.
 *
 *   struct pd_flow_started run = PD_FLOW_STARTED_INIT;
 *   if (pd_flow_start(&db, "orders", &spec, def, &run, &e) < 0) ...
 *   printf("%lld\n", run.run);      // run.job is the job to wait for
 *   pd_flow_started_release(&run);
 */
#ifndef PD_FLOWDB_H
#define PD_FLOWDB_H

#include "db.h"
#include "err.h"
#include "flow.h"
#include "jobspec.h"

/* A run pd_flow_start started, or found by its idempotency key. */
struct pd_flow_started {
	long long run;
	long long job; /* the job of type workflow:NAME that drives it */
	int created;   /* 0: the idempotency key named a run that existed already */
	char *row;     /* its pendulum.workflow_runs row as one line of JSON (malloc'd) */
};

#define PD_FLOW_STARTED_INIT                                                                       \
	{                                                                                          \
		0, 0, 0, NULL                                                                      \
	}

void pd_flow_started_release(struct pd_flow_started *s);

/*
 * Start a run of workflow name (not empty) in one transaction of its own.
 * From spec it takes the input (payload, payload_len: JSON text already
 * checked; NULL: null), tenant, queue, priority, idempotency key, max
 * attempts, and run_at or delay; its other fields do not apply to a run and
 * are ignored (the caller refuses them). def: the definition whose step
 * names the run records (pd_flow_steps_json) and whose first step's
 * concurrency_key the run's job gets, or NULL to leave the names to the
 * first worker that runs it (the job then has no key until the run moves
 * on to a step with one). With notify_done, the same transaction marks
 * the run's job for pd_enqueue_wait (pendulum.wait_job). Fills out. Codes:
 * 1 when the idempotency key belongs to a job that is not a workflow run,
 * 65 when the database refuses a value, 69, 70.
 */
int pd_flow_start(struct pd_db *db, const char *name, const struct pd_jobspec *spec,
		  const struct pd_flow *def, int notify_done, struct pd_flow_started *out,
		  struct pd_err *e);

/*
 * Send signal name (not empty) with payload (JSON text, checked first and
 * named where in errors, e.g. "PAYLOAD" or "stdin"; NULL: null) to run.
 * *woke is 1 when a wait_for step of the run was parked on it and the run
 * is due now, 0 when it is kept until such a step takes it. Codes: 2 when
 * the run does not exist, 1 when it is over (SUCCEEDED, DEAD_LETTERED,
 * CANCELLED), 64 for an empty name, 65 for a payload that is not JSON
 * (nothing sent), 69, 70.
 */
int pd_flow_signal(struct pd_db *db, long long run, const char *name, const char *payload,
		   const char *where, int *woke, struct pd_err *e);

/* The job that drives run into *job. Code 2 "workflow run N not found". */
int pd_flow_job(struct pd_db *db, long long run, long long *job, struct pd_err *e);

#endif
