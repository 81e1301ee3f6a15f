/*
 * jobrun: a claimed job as a worker runs it. The handler contract's
 * environment (DESIGN.md: the worker's own environment without the PD_*
 * variables the contract sets, the handler's env: over it, then the job's
 * PD_* variables and a workflow step's), a stream handler's environment,
 * and the job's line for a stream handler (pd-worker(1), "Stream
 * handlers").
 */
#ifndef PD_JOBRUN_H
#define PD_JOBRUN_H

#include "buf.h"
#include "flow.h"
#include "handler.h"
#include "jobs.h"

/*
 * The environment of j's handler process h (NULL: none of its own), run by
 * worker, a workflow step's when plan is not NULL: a NULL-terminated vector
 * (pd_strv_free, text.h). The worker's own environment comes in as lib/henv
 * says (no PD_DATABASE_URL, no PG* variable, no secret_env: name, unless h's
 * pass_env: names it), or none of it when h has env_only (a crontab line's:
 * h's env is cron's, lib/crontab). A job's PD_* variable is never replaced
 * by h's env.
 */
char **pd_jobrun_env(const struct pd_claimed *j, const char *worker,
		     const struct pd_flow_plan *plan, const struct pd_handler *h);

/*
 * Stream handler h's environment: the worker's (as above), with
 * PD_WORKER_ID and PD_WORKER_FD (its channel: pd_stream_cfg.chan); no job's.
 */
char **pd_jobrun_stream_env(const char *worker, const struct pd_handler *h);

/*
 * j's line for a stream handler, into b (reset first): one JSON object, no
 * newline (the payload is jsonb's text, which has none).
 */
void pd_jobrun_line(struct pd_buf *b, const struct pd_claimed *j);

/* Free j's strings and zero it. */
void pd_jobrun_clear(struct pd_claimed *j);

#endif
