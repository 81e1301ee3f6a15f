#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "henv.h"
#include "jobrun.h"
#include "json.h"

extern char **environ;

/*
 * The worker's environment as h's processes get it (lib/henv: no database
 * credential, no secret_env: name unless h passes it) and without the
 * variables the handler contract sets (DESIGN.md), with room for extra
 * more and the NULL; *k: how many are set.
 */
static char **env_base(const struct pd_handler *h, size_t extra, size_t *k)
{
	static const char *const ours[] = {
	    "PD_JOB_ID",	  "PD_JOB_TYPE",  "PD_QUEUE",
	    "PD_TENANT",	  "PD_ATTEMPT",	  "PD_MAX_ATTEMPTS",
	    "PD_LEASE_TOKEN",	  "PD_RUN_AT",	  "PD_IDEMPOTENCY_KEY",
	    "PD_REPLAY_COUNT",	  "TRACEPARENT",  "PD_WORKER_ID",
	    "PD_WORKFLOW_RUN_ID", "PD_WORKFLOW",  "PD_STEP_NAME",
	    "PD_STEP_INDEX",	  "PD_WORKER_FD", NULL};

	/* A handler with env_only (a crontab line's) gets nothing of ours. */
	return pd_henv_build(h && h->env_only ? NULL : (const char *const *)environ,
			     pd_henv_secret(), h ? (const char *const *)h->pass_env : NULL, ours,
			     extra, k);
}

/* Set h's variables ("NAME=value") in env[0..*k), replacing the worker's of the same name. */
static void handler_env(const struct pd_handler *h, char **env, size_t *k)
{
	for (int i = 0; h && h->env && h->env[i]; i++)
		pd_henv_put(env, k, pd_xstrdup(h->env[i]));
}

char **pd_jobrun_env(const struct pd_claimed *j, const char *worker,
		     const struct pd_flow_plan *plan, const struct pd_handler *h)
{
	size_t k, nh = 0;
	char num[PD_I64_CHARS], **env;

	while (h && h->env && h->env[nh])
		nh++;
	env = env_base(h, 19 + nh, &k);
	handler_env(h, env, &k); /* first: a job's PD_* variable is never replaced */

	pd_fmt_i64(num, j->id);
	env[k++] = pd_henv_var("PD_JOB_ID", num);
	env[k++] = pd_henv_var("PD_JOB_TYPE", j->type);
	env[k++] = pd_henv_var("PD_QUEUE", j->queue);
	env[k++] = pd_henv_var("PD_TENANT", j->tenant);
	pd_fmt_i64(num, j->attempt);
	env[k++] = pd_henv_var("PD_ATTEMPT", num);
	pd_fmt_i64(num, j->max_attempts);
	env[k++] = pd_henv_var("PD_MAX_ATTEMPTS", num);
	pd_fmt_i64(num, j->token);
	env[k++] = pd_henv_var("PD_LEASE_TOKEN", num);
	env[k++] = pd_henv_var("PD_RUN_AT", j->run_at ? j->run_at : "");
	if (j->idempotency_key)
		env[k++] = pd_henv_var("PD_IDEMPOTENCY_KEY", j->idempotency_key);
	pd_fmt_i64(num, j->replay_count);
	env[k++] = pd_henv_var("PD_REPLAY_COUNT", num);
	if (j->traceparent)
		env[k++] = pd_henv_var("TRACEPARENT", j->traceparent);
	env[k++] = pd_henv_var("PD_WORKER_ID", worker);
	if (plan) {
		pd_fmt_i64(num, plan->run);
		env[k++] = pd_henv_var("PD_WORKFLOW_RUN_ID", num);
		env[k++] = pd_henv_var("PD_WORKFLOW", plan->def->name);
		env[k++] = pd_henv_var("PD_STEP_NAME", plan->s->name);
		pd_fmt_i64(num, plan->step);
		env[k++] = pd_henv_var("PD_STEP_INDEX", num);
	}
	env[k] = NULL;
	return env;
}

char **pd_jobrun_stream_env(const char *worker, const struct pd_handler *h)
{
	size_t k;
	char **env = env_base(h, 2, &k);

	env[k++] = pd_henv_var("PD_WORKER_ID", worker);
	env[k++] = pd_henv_var("PD_WORKER_FD", "3"); /* its channel (PD_PROC_PASS_FD, lib/pool) */
	env[k] = NULL;
	return env;
}

void pd_jobrun_line(struct pd_buf *b, const struct pd_claimed *j)
{
	pd_buf_reset(b);
	pd_buf_puts(b, "{\"id\":");
	pd_buf_put_i64(b, j->id);
	pd_json_member_i64(b, "attempt", j->attempt);
	pd_json_member_i64(b, "lease_token", j->token);
	pd_json_member_str(b, "type", j->type);
	pd_json_member_str(b, "queue", j->queue);
	pd_json_member_str(b, "tenant", j->tenant);
	pd_json_member_str(b, "traceparent", j->traceparent);
	pd_json_member_raw(b, "payload", j->payload);
	pd_json_member_i64(b, "max_attempts", j->max_attempts);
	pd_json_member_i64(b, "replay_count", j->replay_count);
	pd_json_member_str(b, "run_at", j->run_at);
	pd_json_member_str(b, "idempotency_key", j->idempotency_key);
	pd_buf_putc(b, '}');
}

void pd_jobrun_clear(struct pd_claimed *j)
{
	free(j->type);
	free(j->queue);
	free(j->tenant);
	free(j->payload);
	free(j->run_at);
	free(j->idempotency_key);
	free(j->traceparent);
	free(j->flow);
	memset(j, 0, sizeof(*j));
}
