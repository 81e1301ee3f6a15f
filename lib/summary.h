/*
 * summary: the counts by state that pd-admin's `queues` and `outbox stats`,
 * `metrics` and `top` all show, as SQL with the columns and state lists
 * that give their order. One place, so that the three views agree.
 */
#ifndef PD_SUMMARY_H
#define PD_SUMMARY_H

#include "render.h"

/*
 * The per-queue summary: queue, the seven job state counts in state-machine
 * order (PENDING, BLOCKED, LEASED, RUNNING, SUCCEEDED, DEAD_LETTERED,
 * CANCELLED), runnable, oldest runnable age in seconds (NULL when none), the
 * live workers that take from the queue, whether it is paused (its
 * 'queue:NAME' limit, sql/020), the types of its PENDING jobs that no live
 * worker serves (pendulum.unserved) as "a,b" (NULL when none) and as a JSON
 * array; ordered by queue, byte-wise. The queues: those with jobs, and
 * those with a 'queue:NAME' limit row.
 */
extern const char pd_summary_queues_sql[];
/* Its columns: what `queues` prints. */
extern const struct pd_col pd_summary_queue_cols[];
#define PD_SUMMARY_QUEUE_NCOLS	14
#define PD_SUMMARY_QUEUE_PAUSED 11 /* the column of paused */

/*
 * The per-topic outbox summary: topic, the three state counts in
 * pd_outbox_states order (job.h), the oldest PENDING message's age in
 * seconds (NULL when none); ordered by topic, byte-wise.
 */
extern const char pd_summary_outbox_sql[];
#define PD_SUMMARY_OUTBOX_NCOLS 5

/*
 * The per-workflow run counts: workflow, then the counts in
 * pd_run_states order (job.h); ordered by workflow, byte-wise.
 */
extern const char pd_summary_flow_sql[];
#define PD_SUMMARY_FLOW_NCOLS 7

#endif
