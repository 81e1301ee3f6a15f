/*
 * metrics: Pendulum's state in the Prometheus text exposition format
 * (version 0.0.4), read from the database in one read-only snapshot, for
 * node_exporter's textfile collector or a scrape wrapper.
 *
 * Every family has its HELP and TYPE lines, even without samples; series
 * are unique and sorted by queue or topic (byte order). Gauges describe the
 * current state; pendulum_writes_fenced_total,
 * pendulum_outbox_writes_fenced_total, pendulum_attempts_total and
 * pendulum_queue_attempts_total are counters, and
 * pendulum_job_duration_seconds and pendulum_queue_wait_seconds histograms
 * by queue (bounds 5ms to 1h). The attempt counters and the histograms are
 * pendulum.metric_totals (sql/011): the rows of the tables plus what the
 * rows deleted by prune and dlq delete/purge counted, so they never go down
 * unless rows are deleted by hand. pendulum_queue_paused covers the queues
 * `queues` lists (with jobs, or with a 'queue:NAME' limit);
 * pendulum_limit_running and pendulum_limit_waiting every limit key.
 */
#ifndef PD_METRICS_H
#define PD_METRICS_H

#include "buf.h"
#include "db.h"

/*
 * Append the exposition to out; with json, one object a sample instead,
 * {"name":"pendulum_dead_letters","type":"gauge","labels":{"queue":"q"},"value":3}.
 * A worker is live while seen within its lease (pendulum.worker_states);
 * stale_ms >= 0 replaces every worker's lease as the window.
 */
int pd_metrics_collect(struct pd_db *db, long long stale_ms, int json, struct pd_buf *out,
		       struct pd_err *e);

/* Append v as a quoted label value: '\', '"' and newline escaped. */
void pd_metrics_label(struct pd_buf *b, const char *v);

#endif
