/*
 * crontab: a crontab file as schedules and the commands that serve them
 * (`pd-cron apply FILE`, `pd-cron check FILE`, `pd-worker --crontab FILE`).
 * Pure code but for reading the file and the zone files.
 *
 *   # comments and blank lines are ignored
 *   CRON_TZ=Europe/Berlin          the zone of the lines after it (default:
 *                                  the host's, pd_host_zone)
 *   BACKUP_DIR=/srv/backup         exported to the commands of the lines after it
 *   # pd: name=backup timeout=1h   annotates the next line (keys below)
 *   30 2 * * * tar czf "$BACKUP_DIR/etc.tgz" /etc
 *   @hourly /usr/local/bin/rotate  @yearly @annually @monthly @weekly
 *                                  @daily @midnight @hourly
 *
 * A line's jobs have one attempt, as cron runs a line once (max_attempts=
 * opts into retries). Its command runs as cron runs it: cron's environment
 * (pd_crontab_run_env), in $HOME, by $SHELL -c.
 *
 * Annotation keys: name, timeout, max_attempts, queue, key (the jobs'
 * concurrency_key), misfire, overlap
 * (allow or skip; a crontab line's default is skip), jitter, priority,
 * catch_up_limit, workflow. Any other key is an error.
 *
 * workflow=NAME: the line starts a run of workflow NAME per occurrence
 * (lib/sched, pendulum.cron_enqueue): its type is "workflow:NAME", its
 * payload (the run's input) {"crontab": "SCOPE"}, which is how --prune
 * finds it among the file's schedules, and its command must be '-' (the
 * steps are the config's workflows:; no timeout). An unnamed one is named
 * from its expression and type. A line without a name is
 * named "cron-" and 8 hex digits of a hash of its expression and command,
 * so re-applying an unchanged file finds the same schedules.
 *
 * Job types: "crontab.SCOPE.NAME", SCOPE being the file's scope
 * (pd_crontab_scope: its base name without the extension). The type is
 * how the worker finds a schedule's command. A schedule belongs to the
 * file that applied it first (its source, the file's absolute path:
 * pd_sched_apply_types), so applying one file with --prune deletes only
 * that file's schedules, and another file naming one is refused.
 *
 * The payload is {}: the command lives in the file on the worker's host,
 * never in the database. '%' in a command has no special meaning.
 *
 * MAILTO=addr (in effect for the lines after it, as any assignment) makes
 * the failures of those lines' jobs mailed to addr through sendmail, as an
 * on_failure hook (pendulum.yaml(5) hooks:) of the worker that serves the
 * file: pd_crontab_mail_hook. MAILTO="" (or none) mails nothing.
 */
#ifndef PD_CRONTAB_H
#define PD_CRONTAB_H

#include <stddef.h>

#include "err.h"
#include "handler.h"
#include "sched.h"

#define PD_CRONTAB_TYPE_PREFIX "crontab."
#define PD_CRONTAB_ZONE_MAX    128

struct pd_crontab_entry {
	struct pd_sched s; /* its strings point into the crontab */
	const char *command;
	char **env; /* "NAME=value" exported by the lines before it, NULL-terminated */
	int nenv;
	int named;	/* the name came from an annotation */
	char **run_env; /* cron's environment of the command (pd_crontab_run_env), set by
			   whoever runs it, freed with the crontab; NULL: none */
};

struct pd_crontab {
	const char *path;
	const char *source; /* path made absolute (realpath; path when it fails): its
			       schedules' owner (struct pd_sched source) */
	char scope[64];
	char zone[PD_CRONTAB_ZONE_MAX]; /* the host's zone: lines before any CRON_TZ */
	char zone_from[64];		/* where it was found ("TZ", "/etc/timezone"...) */
	struct pd_crontab_entry *v;
	int n;
	char **owned; /* every string v points to */
	int nowned;
};

/*
 * The host's zone name into out: $TZ (a zone name, ":Name", or a path into
 * the tz database), else the first line of /etc/timezone, else the target
 * of the /etc/localtime link below a "zoneinfo/" directory, else "UTC".
 * from (m bytes) says which; each candidate must pass pd_tz_check.
 */
void pd_host_zone(char *out, size_t n, char *from, size_t m);

/* The scope of path: its base name up to the first '.', other than [A-Za-z0-9_-] as '-'. */
void pd_crontab_scope(const char *path, char *out, size_t n);

/*
 * 1 when the file reads as a crontab rather than YAML: its first line that
 * is not blank or a comment is an assignment (NAME=value) or starts with
 * '@', a digit or '*'. A name ending .yaml or .yml is YAML (0). -1 with e
 * filled when it cannot be read (65).
 */
int pd_crontab_sniff(const char *path, struct pd_err *e);

/*
 * Parse text (len bytes) as the crontab path into t: host_zone is the zone
 * of lines before any CRON_TZ (NULL: pd_host_zone), tenant the schedules'
 * (NULL: default). Every line is checked (expressions, zones, annotations,
 * duplicate names); the first error fails it all, code 65,
 * "PATH:LINE:COLUMN: what".
 */
int pd_crontab_parse(struct pd_crontab *t, const char *path, const char *text, size_t len,
		     const char *host_zone, const char *tenant, struct pd_err *e);

/* Read and parse path (65 when it cannot be read). */
int pd_crontab_load(struct pd_crontab *t, const char *path, const char *tenant, struct pd_err *e);

void pd_crontab_release(struct pd_crontab *t);

/* The schedules of t as an array (malloc'd, pointing into t) for pd_sched_apply. */
struct pd_sched *pd_crontab_scheds(const struct pd_crontab *t);

/* The MAILTO address in effect for en, or NULL (none, or MAILTO=""). */
const char *pd_crontab_mailto(const struct pd_crontab_entry *en);

/*
 * The sendmail to mail through into out: the first "sendmail" on $PATH
 * that is executable, else /usr/sbin/sendmail or /usr/lib/sendmail. 1
 * found, 0 none on this machine.
 */
int pd_sendmail_find(char *out, size_t n);

/*
 * The on_failure hook of en's jobs in t when en has a MAILTO and sendmail
 * is the sendmail found (pd_sendmail_find): a command (an exec'd sh -c)
 * that mails the job's JSON (its stdin) to the address with sendmail -t,
 * the subject naming the job (id and type) and the file's line. A new
 * handler (pd_hooks_release frees it), or NULL when en has no MAILTO.
 */
struct pd_handler *pd_crontab_mail_hook(const struct pd_crontab *t,
					const struct pd_crontab_entry *en, const char *sendmail);

/*
 * cron's environment of en's command, as cron builds it: SHELL=/bin/sh,
 * PATH=/usr/bin:/bin, HOME=home and LOGNAME=logname (the worker's user,
 * from passwd), then the file's assignments before the line, which may
 * replace any of them (PATH=, SHELL=, HOME=). Nothing of the worker's own
 * environment: a crontab line's handler has env_only, its cwd HOME and its
 * shell SHELL (lib/cronserve). A new NULL-terminated vector (pd_strv_free);
 * the job's PD_* variables are added when it runs (lib/jobrun).
 */
#define PD_CRONTAB_SHELL "/bin/sh"
#define PD_CRONTAB_PATH	 "/usr/bin:/bin"
char **pd_crontab_run_env(const struct pd_crontab_entry *en, const char *home, const char *logname);

/*
 * What en does unlike cron (Vixie cron, cronie) into out, one note a line,
 * "LINE<TAB>note\n": overlap skip, a missed occurrence fired late, retries,
 * timeout, jitter, a concurrency key, '%' as an ordinary character, a
 * workflow instead of a command, and where output and failures go (never
 * mail; MAILTO= mails failures through the on_failure hook). Nothing when
 * the line, annotated misfire=skip overlap=allow, does as cron does (but
 * for its output).
 */
struct pd_buf;
void pd_crontab_differences(const struct pd_crontab_entry *en, struct pd_buf *out);

/* "crontab.SCOPE." of t into out. */
void pd_crontab_prefix(const struct pd_crontab *t, char *out, size_t n);

#endif
