/*
 * flow: durable workflows (DESIGN.md, Workflows; sql/010_workflows.sql).
 *
 * A definition (struct pd_flow) is a named list of steps from the config's
 * workflows: section (pendulum.yaml(5)). A run of it is driven by one job of
 * type "workflow:NAME" (PD_FLOW_JOB_PREFIX NAME); the claim hands the worker
 * the run's context (pendulum.workflow_context) beside the job, and
 * pd_flow_plan decides, without touching the database, what the job does
 * this time: run the step at the run's position as a handler, complete a
 * sleep or wait_for step at once, park the run, finish it, or dead-letter
 * it because the definition no longer agrees with the run's step names.
 */
#ifndef PD_FLOW_H
#define PD_FLOW_H

#include "buf.h"
#include "err.h"
#include "handler.h"

#define PD_FLOW_JOB_PREFIX "workflow:"
/* The longest workflow name: it becomes the job type "workflow:NAME". */
#define PD_FLOW_NAME_MAX 100

/* 1 if name is 1 to PD_FLOW_NAME_MAX ASCII letters, digits, '-', '_' or '.'. */
int pd_flow_name_ok(const char *name);

enum pd_flow_step_kind {
	PD_FLOW_STEP_RUN,   /* run: / exec: a handler, its stdout the step's output */
	PD_FLOW_STEP_SLEEP, /* sleep: DURATION; the job is due again after it */
	PD_FLOW_STEP_WAIT,  /* wait_for: SIGNAL; the signal's payload is the output */
};

struct pd_flow_step {
	char *name;
	enum pd_flow_step_kind kind;
	/* RUN: run or exec_argv, timeout_ms, terminal codes; h.name is the step's name */
	struct pd_handler h;
	long long sleep_ms;	 /* SLEEP */
	char *signal;		 /* WAIT: the signal's name */
	long long wait_ms;	 /* WAIT: the timeout, -1: none */
	int on_timeout_continue; /* WAIT: past the timeout the step's output is null */
};

struct pd_flow {
	char *name;
	struct pd_flow_step *steps; /* in order, nsteps >= 1 */
	int nsteps;
};

/* The definition called name among v[0..n), or NULL. */
const struct pd_flow *pd_flow_find(const struct pd_flow *v, int n, const char *name);

/* Free v[0..n) and v itself (NULL is fine). */
void pd_flows_free(struct pd_flow *v, int n);

/* What a workflow job does this time (pd_flow_plan). */
enum pd_flow_action {
	PD_FLOW_RUN,	 /* run step's handler with stdin; its success completes the step */
	PD_FLOW_ADVANCE, /* the step is complete without a handler: sleep, signal, timeout */
	PD_FLOW_PARK,	 /* wait_for: no signal yet; give the job back until one comes */
	PD_FLOW_FINISH,	 /* every step is complete: the job succeeds with the last output */
	PD_FLOW_FAIL,	 /* dead-letter the job with reason (and the wait's fields reset) */
	PD_FLOW_RETRY,	 /* cannot go on here (no definition, unreadable context): retry, reason */
};

struct pd_flow_plan {
	enum pd_flow_action action;
	long long run;
	int step; /* the run's position: the step concerned (RUN, ADVANCE, PARK, FAIL) */
	const struct pd_flow *def;
	const struct pd_flow_step *s; /* def->steps[step], or NULL (FINISH, a FAIL past the end) */
	int last;		      /* step is the definition's last */
	struct pd_buf stdin_json;     /* RUN: {"input": …, "outputs": {…}} */
	struct pd_buf output;	      /* ADVANCE: the step's output; FINISH: the last output */
	struct pd_buf reason;	      /* FAIL, RETRY */
	struct pd_buf steps;	      /* def's step names, a JSON array (the run records them) */
	int consumes_signal;	      /* ADVANCE of a wait_for by its signal */
	int unpark;		      /* FAIL of a wait_for past its deadline */
};

#define PD_FLOW_PLAN_INIT                                                                          \
	{                                                                                          \
		.stdin_json = PD_BUF_INIT, .output = PD_BUF_INIT, .reason = PD_BUF_INIT,           \
		.steps = PD_BUF_INIT                                                               \
	}

/*
 * Plan the job of a run of workflow name, from the run's context ctx
 * (pendulum.workflow_context's JSON; NULL: the job has no run, FAIL) and
 * definition def (NULL when this worker has none: RETRY). p must be
 * PD_FLOW_PLAN_INIT; release it with pd_flow_plan_release.
 *
 * The run's recorded step names must agree with def's at every index up to
 * and including the position (else FAIL, naming the difference); steps
 * appended after it are fine. A run with no recorded names takes def's.
 */
void pd_flow_plan(const struct pd_flow *def, const char *name, const char *ctx,
		  struct pd_flow_plan *p);
void pd_flow_plan_release(struct pd_flow_plan *p);

/* def's step names as a JSON array, appended to b. */
void pd_flow_steps_json(struct pd_buf *b, const struct pd_flow *def);

#endif
