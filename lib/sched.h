/*
 * sched: cron schedules kept in pendulum.cron_schedules, the ticker that
 * turns their occurrences into jobs, and the YAML file `pd-cron apply` syncs
 * from. The expressions and the time-zone arithmetic are lib/cron.
 *
 * Progress is two columns. next_fire_at is the earliest occurrence not yet
 * dealt with; a schedule is due when next_fire_at <= now() (the database
 * clock). last_fired_at is the instant of the last occurrence enqueued (the
 * creation time until the first one). A tick takes the occurrences after
 * max(last_fired_at, next_fire_at - 1s) up to now, keeps those the misfire
 * policy keeps (pd_sched_due), enqueues each through pendulum.enqueue_ex
 * with idempotency key cron:<schedule-id>:<fire-instant> and run_at = the
 * occurrence's instant (plus the schedule's fixed jitter offset), records
 * each occurrence in pendulum.cron_fires, then records the progress, all in
 * one transaction that holds the schedule's row (FOR UPDATE SKIP LOCKED).
 * Two tickers never make two jobs of one occurrence: the unique key stops
 * the second insert. With overlap SKIP, an occurrence finding an earlier job
 * of the schedule still active (pendulum.cron_busy_job) is recorded as
 * skipped instead of enqueued.
 */
#ifndef PD_SCHED_H
#define PD_SCHED_H

#include "buf.h"
#include "cron.h"
#include "db.h"
#include "err.h"
#include "ydoc.h"

#define PD_SCHED_CATCH_UP_DEFAULT 100
#define PD_SCHED_CATCH_UP_MAX	  10000
#define PD_SCHED_NAME_MAX	  100

enum pd_misfire { PD_MISFIRE_SKIP, PD_MISFIRE_FIRE_ONCE, PD_MISFIRE_FIRE_ALL };

/* "SKIP", "FIRE_ONCE", "FIRE_ALL" in any case, '-' for '_'; code 65 otherwise. */
int pd_misfire_parse(const char *s, enum pd_misfire *m, struct pd_err *e);
/* The stored name: "SKIP", "FIRE_ONCE", "FIRE_ALL". */
const char *pd_misfire_name(enum pd_misfire m);

/*
 * What an occurrence does while the schedule's previous job is still
 * PENDING, BLOCKED, LEASED or RUNNING: ALLOW enqueues it anyway; SKIP records
 * it as skipped instead (systemd timers' behaviour, the default of crontab
 * lines).
 */
enum pd_overlap { PD_OVERLAP_ALLOW, PD_OVERLAP_SKIP };

/* "allow" or "skip" in any case; code 65 otherwise. */
int pd_overlap_parse(const char *s, enum pd_overlap *o, struct pd_err *e);
/* The stored name: "allow", "skip". */
const char *pd_overlap_name(enum pd_overlap o);

#define PD_SCHED_JITTER_MAX_MS 86400000LL /* a day */

/*
 * The fixed jitter of a schedule, in [0, jitter_ms) milliseconds (0 when
 * jitter_ms <= 0): FNV-1a of "TENANT/NAME" (tenant NULL: "default") modulo
 * jitter_ms. The same schedule always gets the same offset (systemd's
 * FixedRandomDelay), different ones spread over the interval.
 */
long long pd_sched_jitter_offset(const char *tenant, const char *name, long long jitter_ms);

/*
 * A schedule as the user defines it. The strings are not owned. tenant and
 * queue NULL mean "default"; payload NULL means {}.
 */
struct pd_sched {
	const char *tenant, *name, *cron, *timezone, *type, *payload, *queue;
	long long priority;
	enum pd_misfire misfire;
	long long catch_up_limit;
	int enabled;
	enum pd_overlap overlap;
	long long jitter_ms; /* each occurrence's run_at moved by a fixed offset in [0, jitter) */
	long long max_attempts, timeout_ms; /* of its jobs; -1: the defaults */
	int line;			    /* where it is defined in a file; 0 otherwise */
	const char *concurrency_key;	    /* of its jobs (pendulum.limits); NULL: none */
	const char *source;  /* the crontab file that owns it (absolute path); NULL: none */
	const char *command; /* a crontab line's command, shown by pd-cron list; NULL: none */
};

#define PD_SCHED_SOURCE_MAX 4096

/*
 * The workflow a schedule of type "workflow:NAME" starts a run of at each
 * occurrence (pendulum.cron_enqueue, sql/027): NAME, pointing into type; NULL
 * when type names a job type.
 */
const char *pd_sched_workflow(const char *type);

/*
 * The defaults: FIRE_ONCE, catch-up limit 100, priority 0, enabled, overlap
 * ALLOW, no jitter, the jobs' default attempts and timeout.
 */
void pd_sched_init(struct pd_sched *s);

/*
 * A schedule name: 1 to 100 letters, digits, '.', '_' or '-', starting with
 * a letter or a digit. Code 65 otherwise.
 */
int pd_sched_check_name(const char *name, struct pd_err *e);

/*
 * Check every field of s before anything is written: the name, the cron
 * expression (pd_cron_parse, which refuses one that can never fire), the
 * zone (pd_tz_check), type and queue not empty, the payload valid JSON,
 * catch_up_limit 1 to 10000, jitter 0 to a day, max_attempts 1 to 1000 (or
 * -1), timeout positive (or -1), the concurrency key one a job may carry
 * (pd_concurrency_key_check). A workflow schedule (type "workflow:NAME"):
 * NAME a workflow name (pd_flow_name_ok), no timeout (its steps have theirs
 * in the config's workflows:). Code 65, naming the field.
 */
int pd_sched_check(const struct pd_sched *s, struct pd_err *e);

/*
 * pd_sched_check's rules of a workflow schedule (none for a job type): code
 * 65, *field (when field is not NULL) the field at fault, "type" or
 * "timeout".
 */
int pd_sched_check_workflow(const struct pd_sched *s, const char **field, struct pd_err *e);

/*
 * The expression parses, the zone exists, and it can fire at all
 * (pd_cron_next finds a time): 0, or -1 with e filled.
 */
int pd_sched_check_timing(const char *cron, const char *zone, struct pd_err *e);

/*
 * The occurrences one tick fires: of those of c in zone after `after`
 * (exclusive) up to `now` (inclusive), both epoch seconds,
 *   SKIP       the latest, only if it is at most grace seconds old;
 *   FIRE_ONCE  the latest, whatever its age;
 *   FIRE_ALL   the latest `limit` of them (the most recent ones).
 * Pure: no I/O but the zone file. d->at (d->n of them, ascending, malloc'd)
 * are the instants to fire; d->dropped is 1 when older occurrences in the
 * span were left out; d->next is the first occurrence after max(now,
 * after). The work is about proportional to what is fired, not to the
 * length of the span, so an outage of years costs no more than a few
 * thousand steps. Returns 0, or -1 with e filled as pd_cron_next does (the
 * zone vanished, the expression never fires).
 */
struct pd_due {
	long long *at;
	int n;
	int dropped;
	long long next;
};

int pd_sched_due(const struct pd_cron *c, const char *zone, long long after, long long now,
		 enum pd_misfire m, int limit, long long grace, struct pd_due *d, struct pd_err *e);
void pd_due_release(struct pd_due *d);

/*
 * Create s (already checked): last_fired_at = now(), next_fire_at = its
 * first occurrence after now() (or NULL when not enabled). *next gets that
 * instant (epoch seconds; 0 when not enabled). Code 1 (PD_EX_CONFLICT) when
 * the tenant already has a schedule of that name.
 */
int pd_sched_add(struct pd_db *db, const struct pd_sched *s, long long *next, struct pd_err *e);

/* Delete, pause, resume a schedule by tenant (NULL: default) and name; code 2 when there is none.
 */
int pd_sched_remove(struct pd_db *db, const char *tenant, const char *name, struct pd_err *e);
/*
 * enabled = false, next_fire_at = NULL. Pausing a paused (or disabled)
 * schedule changes nothing: *changed 0 then, 1 when it was active.
 */
int pd_sched_pause(struct pd_db *db, const char *tenant, const char *name, int *changed,
		   struct pd_err *e);
/*
 * enabled = true, disabled_reason cleared, next_fire_at = the first
 * occurrence after now(): the time it was paused is not caught up. The
 * expression and zone are checked again (code 65 if they no longer
 * evaluate). Resuming an enabled schedule changes nothing (*changed 0,
 * else 1). *next as for add (an enabled one's stored next fire).
 */
int pd_sched_resume(struct pd_db *db, const char *tenant, const char *name, long long *next,
		    int *changed, struct pd_err *e);

/* A stored schedule, for listings. */
struct pd_sched_row {
	long long id;
	char *tenant, *name, *cron, *timezone, *type, *payload, *queue, *misfire, *disabled_reason;
	long long priority, catch_up_limit;
	int enabled;
	long long last_fired_at; /* epoch seconds */
	long long next_fire_at;	 /* epoch seconds, when has_next */
	int has_next;
	char *overlap;
	long long jitter_ms, max_attempts, timeout_ms; /* -1: none */
	/* The latest occurrence recorded (pendulum.cron_fires), when has_fire. */
	int has_fire;
	char *fire_kind, *job_state;		   /* job_state NULL when skipped */
	long long fire_at_us, job_id, duration_ms; /* job_id 0, duration_ms -1: none */
	char *concurrency_key;			   /* of its jobs, or NULL */
	char *source, *command; /* a crontab line's file and command (sql/031), or NULL */
};

/* Every schedule of tenant (NULL: all), ordered by tenant and name; *rows is malloc'd. */
int pd_sched_list(struct pd_db *db, const char *tenant, struct pd_sched_row **rows, int *n,
		  struct pd_err *e);
void pd_sched_rows_free(struct pd_sched_row *rows, int n);

/*
 * Fire schedule tenant/name now: an ordinary job (its type, payload, queue,
 * priority, attempts and timeout; run_at now, no jitter, whatever its
 * overlap or whether it is paused) with idempotency key
 * cron:<id>:trigger:<now in epoch microseconds>, which no occurrence's key
 * can equal, and a 'triggered' row in pendulum.cron_fires; one transaction.
 * *job_id gets the job's id. Code 2 when there is no such schedule.
 */
int pd_sched_trigger(struct pd_db *db, const char *tenant, const char *name, long long *job_id,
		     struct pd_err *e);

/* One row of pendulum.cron_history, for pd-cron history. */
struct pd_fire_row {
	char *kind, *state;			   /* state NULL when skipped */
	long long fire_at_us, job_id, busy_job_id; /* 0: none */
	long long attempts, exit_code, signal;	   /* -1: none */
	long long run_at_us, duration_ms;	   /* -1: none */
};

/*
 * The latest `limit` occurrences of schedule tenant/name, newest first;
 * *rows is malloc'd. Code 2 when there is no such schedule.
 */
int pd_sched_history(struct pd_db *db, const char *tenant, const char *name, int limit,
		     struct pd_fire_row **rows, int *n, struct pd_err *e);
void pd_fire_rows_free(struct pd_fire_row *rows, int n);

struct pd_tick_stats {
	int schedules; /* schedules that were due and handled */
	int enqueued;  /* jobs created */
	int existing;  /* occurrences whose job already existed (another ticker) */
	int skipped;   /* occurrences skipped: the schedule's previous job was active */
	int dropped;   /* schedules whose missed occurrences were not all fired */
	int disabled;  /* schedules disabled because they can no longer be evaluated */
	int failed;    /* schedules left for the next tick after a database error */
};

/*
 * One tick: every due schedule, each in its own transaction (see the top
 * of this file). A schedule whose expression no longer parses, whose zone
 * vanished, or whose jobs the database refuses (bad data) is disabled with
 * the reason and logged; the others go on. grace is SKIP's, in seconds.
 * Returns -1 only when the tick as a whole failed (the database is gone:
 * code 69); a failure of one schedule is logged and counted in st->failed.
 */
int pd_sched_tick(struct pd_db *db, long long grace, struct pd_tick_stats *st, struct pd_err *e);

/*
 * A schedules file:
 *
 *   schedules:
 *     - name: nightly-report
 *       cron: "30 2 * * *"
 *       timezone: Europe/Berlin
 *       type: report
 *       payload: {kind: daily}      # or a JSON string; default {}
 *       queue: reports              # default "default"
 *       priority: high              # integer or high/normal/low; default 0
 *       tenant: acme                # default: the tenant given, else "default"
 *       misfire: FIRE_ALL           # SKIP, FIRE_ONCE (default), FIRE_ALL
 *       catch_up_limit: 10          # 1 to 10000, default 100
 *       enabled: true               # default true
 *       overlap: skip               # allow (default) or skip
 *       jitter: 5m                  # a duration up to 1d; default none
 *       max_attempts: 3             # of its jobs, 1 to 1000; default the jobs' default
 *       timeout: 1h                 # of its jobs; default none
 *
 * A payload written as YAML becomes JSON: mappings, sequences, quoted
 * scalars as strings, plain scalars that are JSON numbers, true/false or
 * null as those, any other plain scalar as a string. Every error, an
 * unknown key included, is code 65 and names PATH:LINE:COLUMN.
 */
struct pd_sched_file {
	struct pd_ydoc doc;
	struct pd_sched *v;
	int n;
	char **owned; /* payload JSON texts, freed with the file */
};

/*
 * Load and check path. tenant (may be NULL) is the tenant of entries that
 * name none; when `only` is set, an entry naming another tenant is an error.
 */
int pd_sched_file_load(struct pd_sched_file *f, const char *path, const char *tenant, int only,
		       struct pd_err *e);
void pd_sched_file_release(struct pd_sched_file *f);

struct pd_apply_stats {
	int created, updated, deleted, unchanged;
};

/*
 * Make the stored schedules match v[0..n) (checked): create the missing,
 * update those that differ in any field (and only those: updated_at moves
 * only then), and with prune delete the stored ones v does not name, of
 * tenant `scope` only when it is not NULL, else of every tenant. One
 * transaction; with dry_run it is rolled back. A change of cron, timezone
 * or enabled (to true) sets next_fire_at to the first occurrence after
 * now(). Appends to out one line per change, in the order of v then the
 * deletions by tenant and name:
 *   create NAME
 *   update NAME (cron: '0 3 * * *' -> '0 4 * * *', priority: 0 -> 5)
 *   delete NAME
 * where NAME is TENANT/NAME outside the default tenant.
 */
int pd_sched_apply(struct pd_db *db, const struct pd_sched *v, int n, const char *scope, int prune,
		   int dry_run, struct pd_buf *out, struct pd_apply_stats *st, struct pd_err *e);

/*
 * pd_sched_apply of a crontab file: source its absolute path (every entry's
 * source), types its job types ("crontab.SCOPE.", lib/crontab). A schedule
 * belongs to one file (pendulum.cron_schedules.source, sql/031): an entry
 * naming a stored schedule of another source, or one that no crontab made
 * (no source, a type not of types), is refused, code 1, "FILE:LINE:
 * schedule 'NAME' belongs to OTHER: ..."; one of types without a source
 * (stored before sources were) is adopted. --prune deletes only the
 * file's (its source, or no source and of types; its workflow schedules
 * are those whose payload is {"crontab": "SCOPE"}), and cancels each
 * deleted line's waiting jobs (PENDING, BLOCKED: pd_jobs_cancel, reason
 * "schedule 'NAME' deleted from FILE"), their ids in its line:
 *   delete NAME (cancelled waiting jobs 7, 9)
 * With types and src NULL it is pd_sched_apply, whose entries may not
 * take a crontab's schedules either, and whose --prune leaves them.
 * With dry_run each line begins "would " ("would create NAME").
 */
int pd_sched_apply_types(struct pd_db *db, const struct pd_sched *v, int n, const char *scope,
			 const char *types, const char *src, int prune, int dry_run,
			 struct pd_buf *out, struct pd_apply_stats *st, struct pd_err *e);

#endif
