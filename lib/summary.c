#include "summary.h"

#define SECS(x) "round(extract(epoch FROM (" x "))::numeric, 3)"

/* clang-format off */
const char pd_summary_queues_sql[] =
    "WITH u AS (SELECT queue, array_agg(job_type ORDER BY job_type COLLATE \"C\") AS types"
    "  FROM pendulum.unserved GROUP BY queue)"
    " SELECT j.queue,"
    " count(*) FILTER (WHERE state = 'PENDING'), count(*) FILTER (WHERE state = 'BLOCKED'),"
    " count(*) FILTER (WHERE state = 'LEASED'), count(*) FILTER (WHERE state = 'RUNNING'),"
    " count(*) FILTER (WHERE state = 'SUCCEEDED'),"
    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'),"
    " count(*) FILTER (WHERE state = 'CANCELLED'),"
    " count(*) FILTER (WHERE state = 'PENDING' AND run_at <= now()),"
    " " SECS("now() - min(run_at) FILTER (WHERE state = 'PENDING' AND run_at <= now())") ","
    " (SELECT count(*) FROM pendulum.live_workers w WHERE j.queue = ANY (w.queues)),"
    " EXISTS (SELECT 1 FROM pendulum.limits l WHERE l.key = 'queue:' || j.queue AND l.paused),"
    " array_to_string(u.types, ','), to_json(coalesce(u.types, '{}'))::text"
    /* the queues with jobs, and those with a limit (paused before any job came) */
    " FROM (SELECT queue, state, run_at FROM pendulum.jobs UNION ALL"
    "  SELECT substr(key, 7), NULL, NULL FROM pendulum.limits WHERE key LIKE 'queue:%') j"
    " LEFT JOIN u ON u.queue = j.queue"
    " GROUP BY j.queue, u.types ORDER BY j.queue COLLATE \"C\"";

const char pd_summary_outbox_sql[] =
    "SELECT topic,"
    " count(*) FILTER (WHERE state = 'PENDING'), count(*) FILTER (WHERE state = 'PUBLISHED'),"
    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'),"
    " " SECS("now() - min(created_at) FILTER (WHERE state = 'PENDING')")
    " FROM pendulum.outbox GROUP BY topic ORDER BY topic COLLATE \"C\"";

const char pd_summary_flow_sql[] =
    "SELECT workflow,"
    " count(*) FILTER (WHERE state = 'RUNNING'), count(*) FILTER (WHERE state = 'SLEEPING'),"
    " count(*) FILTER (WHERE state = 'WAITING'), count(*) FILTER (WHERE state = 'SUCCEEDED'),"
    " count(*) FILTER (WHERE state = 'DEAD_LETTERED'),"
    " count(*) FILTER (WHERE state = 'CANCELLED')"
    " FROM pendulum.workflow_run_states GROUP BY workflow ORDER BY workflow COLLATE \"C\"";
/* clang-format on */

/* clang-format off */
const struct pd_col pd_summary_queue_cols[PD_SUMMARY_QUEUE_NCOLS] = {
    {"queue", NULL, 's', 'b'},
    {"pending", NULL, 'n', 'b'},
    {"blocked", NULL, 'n', 'b'},
    {"leased", NULL, 'n', 'b'},
    {"running", NULL, 'n', 'b'},
    {"succeeded", NULL, 'n', 'b'},
    {"dead_lettered", NULL, 'n', 'b'},
    {"cancelled", NULL, 'n', 'b'},
    {"runnable", NULL, 'n', 'b'},
    {"oldest_runnable_age_s", "oldest_runnable", 'd', 'b'},
    {"workers", NULL, 'n', 'b'},
    {"paused", NULL, 'b', 'b'},
    {"unserved_list", "unserved", 's', 't'},
    {"unserved", NULL, 'j', 'j'},
};
/* clang-format on */
