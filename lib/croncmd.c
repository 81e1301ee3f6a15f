#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "croncmd.h"
#include "crontab.h"
#include "dur.h"
#include "jobspec.h"
#include "json.h"
#include "log.h"
#include "sched.h"
#include "text.h"
#include "ticker.h"

/* What a command's options parse into (k->x). */
struct args {
	struct pd_sched s;	/* add */
	struct pd_ticker_cfg t; /* run */
	const char *tenant, *zone;
	long long count, from_us;
	int local, crontab, prune, dry, wide;
};

const size_t pd_croncmd_xsize = sizeof(struct args);

#define TENANT_HELP "the schedule's tenant (default 'default')"

/* clang-format off */
const struct pd_subopt pd_croncmd_opts[PD_CRON_NOPTS] = {
    [C_CRON] = {"cron", 0, "EXPR", "five fields or @daily, @hourly... (see pd-cron(1))"},
    [C_TZ] = {"tz", 0, "ZONE", "IANA time zone of the wall-clock times, e.g. Europe/Berlin"},
    [C_TZ_PREVIEW] = {"tz", 0, "ZONE", "IANA time zone (default UTC)", "tz-preview"},
    [C_TYPE] = {"type", 0, "TYPE", "the jobs' type, or workflow:NAME: a run of NAME each time"},
    [C_PAYLOAD] = {"payload", 0, "JSON", "the jobs' payload (default {})"},
    [C_QUEUE] = {"queue", 0, "Q", "the jobs' queue (default 'default')"},
    [C_PRIORITY] = {"priority", 0, "P", "integer, or high, normal, low (default 0)"},
    [C_MISFIRE] = {"misfire", 0, "POLICY", "SKIP, FIRE_ONCE (default) or FIRE_ALL"},
    [C_CATCH_UP] = {"catch-up-limit", 0, "N", "FIRE_ALL fires at most the latest N (default 100)"},
    [C_OVERLAP] = {"overlap", 0, "allow|skip", "skip: no occurrence fires while its last job is active"},
    [C_JITTER] = {"jitter", 0, "DURATION", "delay each job by a fixed offset below DURATION (up to 1d)"},
    [C_ATTEMPTS] = {"max-attempts", 0, "N", "the jobs' attempts, 1 to 1000 (default the jobs' default)"},
    [C_TIMEOUT] = {"timeout", 0, "DURATION", "the jobs' timeout (default none)"},
    [C_KEY] = {"key", 0, "KEY", "the jobs' concurrency key (pendulum.limits; default none)"},
    [C_CRONTAB] = {"crontab", 0, NULL, "FILE is a crontab (default: guessed from its content)"},
    [C_PRUNE] = {"prune", 0, NULL, "delete schedules not in FILE"},
    [C_DRY] = {"dry-run", 0, NULL, "print the changes, write nothing"},
    [C_FROM] = {"from", 0, "INSTANT", "start at this ISO 8601 instant, included (default now)"},
    [C_FROM_CHECK] = {"from", 0, "INSTANT", "fires from this ISO 8601 instant on (default now)", "from-check"},
    [C_COUNT] = {"count", 'n', "COUNT", NULL},
    [C_LOCAL] = {"local", 0, NULL, "add the wall-clock time in ZONE"},
    [C_TENANT] = {"tenant", 't', "TENANT", TENANT_HELP},
    [C_TENANT_APPLY] = {"tenant", 't', "TENANT", "manage only TENANT's schedules", "tenant-apply"},
    [C_ONCE] = {"once", 0, NULL, "one tick, print what it did, and exit"},
    [C_INTERVAL] = {"interval", 0, "DURATION", "shortest time between two steps (default 1s)"},
    [C_LEASE] = {"lease", 0, "DURATION", "the ticker role's lease (default 10s)"},
    [C_GRACE] = {"skip-grace", 0, "DURATION", "SKIP fires an occurrence at most this late (default 60s)"},
    [C_WIDE] = {"wide", 0, NULL, "every column, however wide"},
    [C_JSON] = {"json", 0, NULL, "one JSON object a line (as before the command)"},
};
/* clang-format on */

/* The configuration, then the database with its schema checked: for the commands that need one. */
static int connect_db(struct pd_app *a, struct pd_err *e)
{
	if (pd_app_load(a, e) < 0)
		return -1;
	return pd_app_connect(a, 1, e);
}

/* "2026-03-29T01:30:00Z" and "2026-03-29 03:30:00 CEST" of t (local "" if the zone is bad). */
static void both(long long t, const char *zone, char *utc, char *local, size_t n)
{
	pd_instant_format(t * 1000000LL, utc, PD_INSTANT_MAX);
	pd_cron_local(t, zone, local, n);
}

/* "%lld" of v into buf, or NULL when v is `none`. */
static const char *num_or_null(long long v, long long none, char *buf, size_t n)
{
	if (v == none)
		return NULL;
	snprintf(buf, n, "%lld", v);
	return buf;
}

/* A duration in ms as "1m30s" (text) or seconds "90.000" (JSON); NULL when ms < 0. */
static const char *duration(long long ms, int json, char *buf, size_t n)
{
	if (ms < 0)
		return NULL;
	if (json)
		snprintf(buf, n, "%lld.%03lld", ms / 1000, ms % 1000);
	else
		pd_dur_format(ms, buf, n);
	return buf;
}

/* The epoch second to search after so that --from (microseconds) is included. */
static long long included(long long from_us)
{
	/* one second before its (rounded up) second */
	long long t = from_us / 1000000LL - (from_us % 1000000LL < 0);

	return from_us % 1000000LL == 0 ? t - 1 : t;
}

/* A schedules file of either kind, loaded and checked. */
struct loaded {
	int crontab;
	struct pd_crontab t;
	struct pd_sched_file f;
	struct pd_sched *v; /* the schedules: the crontab's (malloc'd) or f.v */
	int n;
	char prefix[80]; /* a crontab's job types (its --prune scope) */
};

/*
 * Load path as a crontab (crontab set, or guessed from its content) or a
 * YAML file, tenant as for pd_sched_file_load. Nothing is written.
 */
static int load_file(struct loaded *l, const char *path, int crontab, const char *tenant,
		     struct pd_err *e)
{
	memset(l, 0, sizeof(*l));
	if (!crontab && (crontab = pd_crontab_sniff(path, e)) < 0)
		return -1;
	l->crontab = crontab;
	if (!crontab) {
		if (pd_sched_file_load(&l->f, path, tenant, tenant != NULL, e) < 0)
			return -1;
		l->v = l->f.v;
		l->n = l->f.n;
		return 0;
	}
	if (pd_crontab_load(&l->t, path, tenant, e) < 0)
		return -1;
	l->v = pd_crontab_scheds(&l->t);
	l->n = l->t.n;
	pd_crontab_prefix(&l->t, l->prefix, sizeof(l->prefix));
	return 0;
}

static void release_file(struct loaded *l)
{
	if (l->crontab) {
		free(l->v);
		pd_crontab_release(&l->t);
	} else {
		pd_sched_file_release(&l->f);
	}
}

static const char *const dst_notes[] = {
    NULL,
    "its wall time does not exist that day (daylight-saving gap): fires after the gap",
    "its wall time happens twice that day (daylight-saving end): fires the first time only",
};
static const char *const dst_names[] = {NULL, "gap", "twice"};

/*
 * What check says of the workflow of s (NULL: none) into out: defined in
 * the config a->cfg (loaded), or not (a warning on stderr too), or not
 * checked (no config file).
 */
static void check_flow(struct pd_app *a, const char *path, const struct pd_sched *s,
		       const char *flow, char *out, size_t n)
{
	const struct pd_flow *def;

	if (flow == NULL) {
		out[0] = '\0';
	} else if (a->cfg.path == NULL) {
		snprintf(out, n, "not checked: no configuration file");
	} else if ((def = pd_flow_find(a->cfg.flows, a->cfg.nflows, flow)) != NULL) {
		snprintf(out, n, "defined in %s, %d step%s", a->cfg.path, def->nsteps,
			 def->nsteps == 1 ? "" : "s");
	} else {
		snprintf(out, n, "not defined in %s", a->cfg.path);
		fprintf(stderr,
			"%s: warning: %s:%d: schedule '%s': workflow '%s' is not defined in %s "
			"(workflows:); its runs wait for a worker that defines it\n",
			pd_progname(), path, s->line, s->name, flow, a->cfg.path);
	}
}

/* The notes of pd_crontab_differences in b ("LINE\tnote\n"...) as a JSON array into j. */
static void differs_json(const struct pd_buf *b, struct pd_buf *j)
{
	const char *s = b->data ? b->data : "";
	int first = 1;

	pd_buf_putc(j, '[');
	for (const char *nl; (nl = strchr(s, '\n')) != NULL; s = nl + 1) {
		const char *msg = strchr(s, '\t') + 1;

		if (!first)
			pd_buf_putc(j, ',');
		first = 0;
		pd_json_quote(j, msg, (size_t)(nl - msg));
	}
	pd_buf_putc(j, ']');
}

/* One schedule of check: a header line and its next three fires after t, or a JSON line. */
static int check_one(struct pd_app *a, const char *path, const struct pd_sched *s,
		     const struct pd_crontab_entry *en, const struct pd_crontab *t, long long from,
		     struct pd_err *e)
{
	const char *command = en ? en->command : NULL;
	struct pd_buf b = PD_BUF_INIT;
	struct pd_cron c;
	long long at = from;
	const char *flow = pd_sched_workflow(s->type);
	char note[600];

	if (pd_cron_parse(&c, s->cron, e) < 0)
		return -1;
	check_flow(a, path, s, flow, note, sizeof(note));
	if (a->json) {
		pd_buf_puts(&b, "{\"name\":");
		pd_json_quote(&b, s->name, strlen(s->name));
		pd_buf_printf(&b, ",\"line\":%d,\"type\":", s->line);
		pd_json_quote(&b, s->type, strlen(s->type));
		pd_buf_puts(&b, ",\"cron\":");
		pd_json_quote(&b, s->cron, strlen(s->cron));
		pd_buf_puts(&b, ",\"timezone\":");
		pd_json_quote(&b, s->timezone, strlen(s->timezone));
		pd_buf_printf(&b, ",\"host_zone\":%s",
			      t && strcmp(s->timezone, t->zone) == 0 ? "true" : "false");
		if (command && !flow) {
			pd_buf_puts(&b, ",\"command\":");
			pd_json_quote(&b, command, strlen(command));
		}
		if (flow) {
			pd_buf_puts(&b, ",\"workflow\":");
			pd_json_quote(&b, flow, strlen(flow));
			pd_buf_puts(&b, ",\"workflow_check\":");
			pd_json_quote(&b, note, strlen(note));
		}
		if (en) {
			struct pd_buf d = PD_BUF_INIT;

			pd_crontab_differences(en, &d);
			pd_buf_puts(&b, ",\"differs_from_cron\":");
			differs_json(&d, &b);
			pd_buf_release(&d);
		}
		pd_buf_puts(&b, ",\"next\":[");
	} else {
		printf("%s (line %d): %s  %s%s\n", s->name, s->line, s->cron, s->timezone,
		       t && strcmp(s->timezone, t->zone) == 0 ? " (the host's zone)" : "");
		if (flow)
			printf("  workflow: %s (%s)\n", flow, note);
		else if (command)
			printf("  command: %s\n", command);
	}
	for (int i = 0; i < 3; i++) {
		char utc[PD_INSTANT_MAX], local[96];
		int dst;

		if (pd_cron_next(&c, s->timezone, at, &at, e) < 0) {
			pd_buf_release(&b);
			return -1;
		}
		both(at, s->timezone, utc, local, sizeof(local));
		dst = pd_cron_dst(&c, s->timezone, at);
		if (a->json) {
			pd_buf_puts(&b, i ? ",{\"at\":" : "{\"at\":");
			pd_json_quote(&b, utc, strlen(utc));
			pd_buf_puts(&b, ",\"local\":");
			pd_json_quote(&b, local, strlen(local));
			if (dst)
				pd_buf_printf(&b, ",\"dst\":\"%s\"", dst_names[dst]);
			pd_buf_putc(&b, '}');
		} else {
			printf("  %s  %s%s%s\n", local, utc, dst ? "  " : "",
			       dst ? dst_notes[dst] : "");
		}
	}
	if (a->json) {
		pd_buf_puts(&b, "]}\n");
		fputs(b.data, stdout);
	}
	pd_buf_release(&b);
	return 0;
}

void pd_croncmd_init(struct pd_subcall *k)
{
	struct args *x = k->x;

	pd_sched_init(&x->s);
	pd_ticker_cfg_init(&x->t);
	x->zone = "UTC";
	x->count = k->cmd->count_def;
	x->from_us = (long long)time(NULL) * 1000000LL;
}

/* A value refused as a usage error (64), whatever its parser's code. */
static int usage(int rc, struct pd_err *e)
{
	if (rc < 0)
		e->code = PD_EX_USAGE;
	return rc;
}

int pd_croncmd_set(struct pd_subcall *k, int opt, const char *v, struct pd_err *e)
{
	struct args *x = k->x;
	int rc;

	switch (opt) {
	case C_CRON:
		x->s.cron = v;
		return 0;
	case C_TZ:
		x->s.timezone = v;
		return 0;
	case C_TZ_PREVIEW:
		x->zone = v;
		return 0;
	case C_TYPE:
		x->s.type = v;
		return 0;
	case C_PAYLOAD:
		x->s.payload = v;
		return 0;
	case C_QUEUE:
		x->s.queue = v;
		return 0;
	case C_PRIORITY:
		return usage(pd_priority_parse(v, &x->s.priority, e), e);
	case C_MISFIRE:
		return usage(pd_misfire_parse(v, &x->s.misfire, e), e);
	case C_CATCH_UP:
		return usage(pd_cli_int("--catch-up-limit", v, 1, PD_SCHED_CATCH_UP_MAX,
					&x->s.catch_up_limit, e),
			     e);
	case C_OVERLAP:
		return usage(pd_overlap_parse(v, &x->s.overlap, e), e);
	case C_JITTER: /* longer than 100 years: 65 */
		return pd_cli_dur("--jitter", v, &x->s.jitter_ms, e);
	case C_TIMEOUT:
		return pd_cli_dur("--timeout", v, &x->s.timeout_ms, e);
	case C_ATTEMPTS:
		return usage(pd_cli_int("--max-attempts", v, 1, 1000, &x->s.max_attempts, e), e);
	case C_KEY: /* checked with the rest of the schedule: 65 */
		x->s.concurrency_key = v;
		return 0;
	case C_TENANT:
	case C_TENANT_APPLY:
		x->s.tenant = x->tenant = v;
		/* add's tenant is checked with the rest of the schedule */
		return k->cmd->fn == pd_croncmd_add ? 0 : pd_name_check("tenant (-t)", v, e);
	case C_COUNT:
		return usage(pd_cli_int("-n", v, 1, k->cmd->count_max, &x->count, e), e);
	case C_FROM:
	case C_FROM_CHECK: {
		struct pd_err e2 = PD_ERR_INIT;

		if (pd_instant_parse(v, &x->from_us, &e2) < 0)
			return pd_errf(e, PD_EX_USAGE, "option --from: %s", e2.msg);
		return 0;
	}
	case C_LOCAL:
		x->local = 1;
		return 0;
	case C_CRONTAB:
		x->crontab = 1;
		return 0;
	case C_PRUNE:
		x->prune = 1;
		return 0;
	case C_DRY:
		x->dry = 1;
		return 0;
	case C_WIDE:
		x->wide = 1;
		return 0;
	case C_ONCE:
		x->t.once = 1;
		return 0;
	case C_INTERVAL:
		if ((rc = usage(pd_cli_dur("--interval", v, &x->t.interval_ms, e), e)) == 0 &&
		    x->t.interval_ms <= 0)
			rc = pd_errf(e, PD_EX_USAGE, "option --interval: must be positive");
		return rc;
	case C_GRACE:
		return usage(pd_cli_dur("--skip-grace", v, &x->t.grace_ms, e), e);
	case C_LEASE:
		if ((rc = usage(pd_cli_dur("--lease", v, &x->t.lease_ms, e), e)) == 0 &&
		    x->t.lease_ms <= 0)
			rc = pd_errf(e, PD_EX_USAGE, "option --lease: must be positive");
		return rc;
	}
	return 0;
}

int pd_croncmd_check(struct pd_subcall *k, struct pd_err *e)
{
	const struct args *x = k->x;

	if (k->cmd->fn == pd_croncmd_preview && k->argc > 1)
		return pd_errf(e, PD_EX_USAGE,
			       "unexpected argument '%s' (quote the expression: '0 3 * * *')",
			       k->argv[1]);
	if ((k->cmd->fn == pd_croncmd_by_name || k->cmd->fn == pd_croncmd_history) &&
	    k->argv[0][0] == '\0')
		return pd_errf(e, PD_EX_USAGE, "NAME must not be empty");
	if ((k->cmd->fn == pd_croncmd_by_name || k->cmd->fn == pd_croncmd_history) &&
	    pd_name_check("schedule name", k->argv[0], e) < 0)
		return -1;
	if (k->cmd->fn == pd_croncmd_add && (!x->s.cron || !x->s.timezone || !x->s.type))
		return pd_errf(e, PD_EX_USAGE, "missing option %s",
			       !x->s.cron	? "--cron"
			       : !x->s.timezone ? "--tz"
						: "--type");
	return 0;
}

int pd_croncmd_add(struct pd_subcall *k, struct pd_err *e)
{
	struct args *x = k->x;
	struct pd_app *a = k->a;
	char utc[PD_INSTANT_MAX], local[96];
	long long next;

	x->s.name = k->argv[0];
	if (pd_sched_check(&x->s, e) < 0 || connect_db(a, e) < 0 ||
	    pd_sched_add(&a->db, &x->s, &next, e) < 0)
		return -1;
	both(next, x->s.timezone, utc, local, sizeof(local));
	printf("created %s, next fire %s (%s)\n", x->s.name, utc, local);
	return 0;
}

/*
 * What rm, pause or resume changed: fmt with the schedule's label
 * (TENANT/NAME outside the default tenant) and, when next is not 0, ",
 * next fire UTC (LOCAL)"; or one JSON line {"name", "tenant", "state",
 * "changed", "next_fire_utc"}.
 */
static int said(struct pd_app *a, const char *tenant, const char *name, const char *state,
		int changed, long long next, const char *fmt)
{
	struct pd_buf b = PD_BUF_INIT;
	char utc[PD_INSTANT_MAX], local[96];

	if (next)
		both(next, "UTC", utc, local, sizeof(local));
	if (a->json) {
		pd_buf_puts(&b, "{\"name\":");
		pd_json_quote(&b, name, strlen(name));
		pd_buf_puts(&b, ",\"tenant\":");
		tenant = tenant ? tenant : "default";
		pd_json_quote(&b, tenant, strlen(tenant));
		pd_buf_printf(&b, ",\"state\":\"%s\",\"changed\":%s", state,
			      changed ? "true" : "false");
		if (next)
			pd_buf_printf(&b, ",\"next_fire_utc\":\"%s\"", utc);
		pd_buf_puts(&b, "}\n");
	} else {
		struct pd_buf l = PD_BUF_INIT;

		if (tenant && strcmp(tenant, "default") != 0)
			pd_buf_printf(&l, "%s/", tenant);
		pd_buf_puts(&l, name);
		pd_buf_printf(&b, fmt, l.data);
		if (next)
			pd_buf_printf(&b, ", next fire %s", utc);
		pd_buf_putc(&b, '\n');
		pd_buf_release(&l);
	}
	fputs(b.data, stdout);
	pd_buf_release(&b);
	return 0;
}

int pd_croncmd_by_name(struct pd_subcall *k, struct pd_err *e)
{
	const struct args *x = k->x;
	struct pd_app *a = k->a;
	const char *cmd = k->cmd->name, *name = k->argv[0];
	long long id, next;
	int changed = 1;

	if (connect_db(a, e) < 0)
		return -1;
	if (strcmp(cmd, "rm") == 0) {
		if (pd_sched_remove(&a->db, x->tenant, name, e) < 0)
			return -1;
		return said(a, x->tenant, name, "deleted", 1, 0,
			    "deleted schedule %s (its jobs stay)");
	}
	if (strcmp(cmd, "pause") == 0) {
		if (pd_sched_pause(&a->db, x->tenant, name, &changed, e) < 0)
			return -1;
		return said(a, x->tenant, name, "paused", changed, 0,
			    changed ? "paused schedule %s" : "%s was not active: nothing changed");
	}
	if (strcmp(cmd, "resume") == 0) {
		if (pd_sched_resume(&a->db, x->tenant, name, &next, &changed, e) < 0)
			return -1;
		return said(a, x->tenant, name, "active", changed, next,
			    changed ? "resumed schedule %s"
				    : "%s was already active: nothing changed");
	}
	if (pd_sched_trigger(&a->db, x->tenant, name, &id, e) < 0)
		return -1;
	if (a->json)
		printf("{\"name\":\"%s\",\"job_id\":%lld}\n", name, id);
	else
		printf("triggered %s: job %lld\n", name, id);
	return 0;
}

/* The characters of UTF-8 text s (its bytes that do not continue one). */
static size_t chars(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/*
 * The COMMAND of w, at most max characters (max - 3 and "..." when cut, on
 * a character's boundary) into out (n bytes): a crontab line's command, or
 * "type TYPE" for a schedule no crontab made.
 */
static void command_cell(const struct pd_sched_row *w, size_t max, char *out, size_t n)
{
	size_t k = 0, c = 0;

	if (w->command == NULL)
		snprintf(out, n, "type %s", w->type);
	else
		snprintf(out, n, "%s", w->command);
	if (max < 4 || chars(out) <= max)
		return;
	while (out[k] && c < max - 3) {
		k++;
		while (((unsigned char)out[k] & 0xC0) == 0x80)
			k++;
		c++;
	}
	snprintf(out + k, n - k, "...");
}

/* The width pd-cron list fits its table in by default (--wide: no limit). */
#define LIST_COLUMNS 120
#define LIST_NARROW  7 /* NAME CRON TIMEZONE STATE NEXT_FIRE JOB_STATE COMMAND */

/*
 * The default table of pd-cron list: the columns above, NAME as TENANT/NAME
 * outside the default tenant, COMMAND cut so that a line fits LIST_COLUMNS
 * (at least 20 characters of it). cells: n rows of LIST_NARROW, filled
 * but for COMMAND; then COMMAND's.
 */
static void narrow_commands(const struct pd_sched_row *rows, int n, const char **cells, char **cmds)
{
	static const char *heads[LIST_NARROW - 1] = {"NAME",  "CRON",	   "TIMEZONE",
						     "STATE", "NEXT_FIRE", "JOB_STATE"};
	size_t used = 0, room;

	for (int c = 0; c < LIST_NARROW - 1; c++) {
		size_t w = strlen(heads[c]);

		for (int i = 0; i < n; i++) {
			const char *v = cells[i * LIST_NARROW + c];
			size_t k = v ? chars(v) : 1;

			w = k > w ? k : w;
		}
		used += w + 2;
	}
	room = used + 20 < LIST_COLUMNS ? LIST_COLUMNS - used : 20;
	for (int i = 0; i < n; i++) {
		cmds[i] = pd_xmalloc(strlen(rows[i].command ? rows[i].command : rows[i].type) + 8);
		command_cell(&rows[i], room, cmds[i],
			     strlen(rows[i].command ? rows[i].command : rows[i].type) + 8);
		cells[i * LIST_NARROW + LIST_NARROW - 1] = cmds[i];
	}
}

int pd_croncmd_list(struct pd_subcall *k, struct pd_err *e)
{
	static const char *tnames[] = {"name",	    "tenant",	"cron",	     "timezone",
				       "type",	    "state",	"next_fire", "next_fire_utc",
				       "last_fire", "last_job", "job_state", "duration",
				       "reason",    "command"};
	static const char *nnames[LIST_NARROW] = {"name",      "cron",	    "timezone", "state",
						  "next_fire", "job_state", "command"};
	static const char *jnames[] = {"id",	    "tenant",	       "name",
				       "cron",	    "timezone",	       "type",
				       "payload",   "queue",	       "priority",
				       "misfire",   "catch_up_limit",  "enabled",
				       "state",	    "disabled_reason", "last_fired_at",
				       "next_fire", "next_fire_utc",   "overlap",
				       "jitter_ms", "max_attempts",    "timeout_ms",
				       "last_fire", "last_fire_kind",  "last_job",
				       "job_state", "duration_s",      "concurrency_key",
				       "source",    "command"};
	struct pd_app *a = k->a;
	const struct args *x = k->x;
	struct pd_sched_row *rows;
	struct pd_table t;
	const char **narrow;
	char **labels, **cmds, **locals;
	int n;

	if (connect_db(a, e) < 0 || pd_sched_list(&a->db, x->tenant, &rows, &n, e) < 0)
		return -1;
	if (a->json)
		pd_table_init(&t, 29, jnames, "nsssssjsnsnbssssssnnnssnsnsss");
	else if (x->wide)
		pd_table_init(&t, 14, tnames, NULL);
	else
		pd_table_init(&t, LIST_NARROW, nnames, NULL);
	narrow = pd_xcalloc((size_t)n * LIST_NARROW + 1, sizeof(*narrow));
	labels = pd_xcalloc((size_t)n + 1, sizeof(*labels));
	cmds = pd_xcalloc((size_t)n + 1, sizeof(*cmds));
	locals = pd_xcalloc((size_t)n + 1, sizeof(*locals));
	for (int i = 0; i < n; i++) {
		const struct pd_sched_row *w = &rows[i];
		char id[24], prio[24], limit[24], utc[PD_INSTANT_MAX], local[96],
		    last[PD_INSTANT_MAX], fire[PD_INSTANT_MAX], jitter[24], att[24], tmo[24],
		    job[24], dur[PD_DUR_MAX];
		const char *state = w->enabled		 ? "active"
				    : w->disabled_reason ? "disabled"
							 : "paused";
		const char *nu = NULL, *nl = NULL, *lf = NULL;

		if (w->has_next) {
			both(w->next_fire_at, w->timezone, utc, local, sizeof(local));
			nu = utc;
			nl = local[0] ? local : NULL;
		}
		if (w->has_fire) {
			pd_instant_format(w->fire_at_us, fire, sizeof(fire));
			lf = fire;
		}
		pd_instant_format(w->last_fired_at * 1000000LL, last, sizeof(last));
		snprintf(id, sizeof(id), "%lld", w->id);
		snprintf(prio, sizeof(prio), "%lld", w->priority);
		snprintf(limit, sizeof(limit), "%lld", w->catch_up_limit);
		snprintf(jitter, sizeof(jitter), "%lld", w->jitter_ms);
		if (a->json) {
			const char *row[29] = {id,
					       w->tenant,
					       w->name,
					       w->cron,
					       w->timezone,
					       w->type,
					       w->payload,
					       w->queue,
					       prio,
					       w->misfire,
					       limit,
					       w->enabled ? "t" : "f",
					       state,
					       w->disabled_reason,
					       last,
					       nl,
					       nu,
					       w->overlap,
					       jitter,
					       num_or_null(w->max_attempts, -1, att, sizeof(att)),
					       num_or_null(w->timeout_ms, -1, tmo, sizeof(tmo)),
					       lf,
					       w->fire_kind,
					       num_or_null(w->job_id, 0, job, sizeof(job)),
					       w->job_state,
					       duration(w->duration_ms, 1, dur, sizeof(dur)),
					       w->concurrency_key,
					       w->source,
					       w->command};

			pd_table_add(&t, row);
		} else if (x->wide) {
			const char *row[14] = {w->name,
					       w->tenant,
					       w->cron,
					       w->timezone,
					       w->type,
					       state,
					       nl,
					       nu,
					       lf,
					       num_or_null(w->job_id, 0, job, sizeof(job)),
					       w->job_state,
					       duration(w->duration_ms, 0, dur, sizeof(dur)),
					       w->disabled_reason,
					       w->command};

			pd_table_add(&t, row);
		} else {
			const char **row = narrow + (size_t)i * LIST_NARROW;
			struct pd_buf lb = PD_BUF_INIT;

			if (strcmp(w->tenant, "default") != 0)
				pd_buf_printf(&lb, "%s/", w->tenant);
			pd_buf_puts(&lb, w->name);
			labels[i] = pd_buf_detach(&lb);
			locals[i] = nl ? pd_xstrdup(nl) : NULL;
			row[0] = labels[i];
			row[1] = w->cron;
			row[2] = w->timezone;
			row[3] = state;
			row[4] = locals[i];
			row[5] = w->job_state;
		}
	}
	if (!a->json && !x->wide) {
		narrow_commands(rows, n, narrow, cmds);
		for (int i = 0; i < n; i++)
			pd_table_add(&t, narrow + (size_t)i * LIST_NARROW);
	}
	pd_table_print(&t, stdout, a->json);
	pd_table_release(&t);
	for (int i = 0; i < n; i++) {
		free(labels[i]);
		free(cmds[i]);
		free(locals[i]);
	}
	free(labels);
	free(cmds);
	free(locals);
	free(narrow);
	pd_sched_rows_free(rows, n);
	return 0;
}

int pd_croncmd_history(struct pd_subcall *k, struct pd_err *e)
{
	static const char *tnames[] = {"fire_at",  "kind", "job",      "state",
				       "attempts", "exit", "duration", "run_at"};
	static const char *jnames[] = {"fire_at",  "kind",	"job_id", "busy_job_id", "state",
				       "attempts", "exit_code", "signal", "duration_s",	 "run_at"};
	struct pd_app *a = k->a;
	const struct args *x = k->x;
	struct pd_fire_row *rows;
	struct pd_table t;
	int n;

	if (connect_db(a, e) < 0 ||
	    pd_sched_history(&a->db, x->tenant, k->argv[0], (int)x->count, &rows, &n, e) < 0)
		return -1;
	if (a->json)
		pd_table_init(&t, 10, jnames, "ssnnsnnnns");
	else
		pd_table_init(&t, 8, tnames, NULL);
	for (int i = 0; i < n; i++) {
		const struct pd_fire_row *w = &rows[i];
		char fire[PD_INSTANT_MAX], run[PD_INSTANT_MAX], job[24], busy[24], att[24],
		    code[24], sig[24], ex[48], dur[PD_DUR_MAX];
		const char *exit = NULL, *run_at = NULL;

		pd_instant_format(w->fire_at_us, fire, sizeof(fire));
		if (w->run_at_us != -1) {
			pd_instant_format(w->run_at_us, run, sizeof(run));
			run_at = run;
		}
		if (w->signal > 0) {
			snprintf(ex, sizeof(ex), "signal %lld", w->signal);
			exit = ex;
		} else if (w->exit_code >= 0) {
			exit = num_or_null(w->exit_code, -1, ex, sizeof(ex));
		}
		if (a->json) {
			const char *row[10] = {fire,
					       w->kind,
					       num_or_null(w->job_id, 0, job, sizeof(job)),
					       num_or_null(w->busy_job_id, 0, busy, sizeof(busy)),
					       w->state,
					       num_or_null(w->attempts, -1, att, sizeof(att)),
					       num_or_null(w->exit_code, -1, code, sizeof(code)),
					       num_or_null(w->signal, -1, sig, sizeof(sig)),
					       duration(w->duration_ms, 1, dur, sizeof(dur)),
					       run_at};

			pd_table_add(&t, row);
		} else {
			/* A skipped occurrence names the job it waited on. */
			if (w->busy_job_id)
				snprintf(busy, sizeof(busy), "(%lld)", w->busy_job_id);
			const char *row[8] = {fire,
					      w->kind,
					      w->job_id
						  ? num_or_null(w->job_id, 0, job, sizeof(job))
					      : w->busy_job_id ? busy
							       : NULL,
					      w->state,
					      num_or_null(w->attempts, -1, att, sizeof(att)),
					      exit,
					      duration(w->duration_ms, 0, dur, sizeof(dur)),
					      run_at};

			pd_table_add(&t, row);
		}
	}
	pd_table_print(&t, stdout, a->json);
	pd_table_release(&t);
	pd_fire_rows_free(rows, n);
	return 0;
}

int pd_croncmd_preview(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	const struct args *x = k->x;
	struct pd_cron c;
	long long t;

	if (pd_cron_parse(&c, k->argv[0], e) < 0 || pd_tz_check(x->zone, e) < 0)
		return -1;
	t = included(x->from_us);
	for (long long i = 0; i < x->count; i++) {
		char utc[PD_INSTANT_MAX], lt[96];

		if (pd_cron_next(&c, x->zone, t, &t, e) < 0)
			return -1;
		both(t, x->zone, utc, lt, sizeof(lt));
		if (a->json) {
			struct pd_buf b = PD_BUF_INIT;

			pd_buf_puts(&b, "{\"at\":");
			pd_json_quote(&b, utc, strlen(utc));
			if (x->local) {
				pd_buf_puts(&b, ",\"local\":");
				pd_json_quote(&b, lt, strlen(lt));
			}
			pd_buf_puts(&b, "}\n");
			fputs(b.data, stdout);
			pd_buf_release(&b);
		} else if (x->local) {
			printf("%s\t%s\n", utc, lt);
		} else {
			printf("%s\n", utc);
		}
	}
	return 0;
}

int pd_croncmd_apply(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	const struct args *x = k->x;
	struct loaded f;
	struct pd_apply_stats st;
	struct pd_buf out = PD_BUF_INIT;
	int rc;

	/* Everything in the file is checked before the database is touched. */
	if (load_file(&f, k->argv[0], x->crontab, x->tenant, e) < 0)
		return -1;
	rc = connect_db(a, e);
	if (rc == 0)
		rc = pd_sched_apply_types(&a->db, f.v, f.n, x->tenant, f.crontab ? f.prefix : NULL,
					  f.crontab ? f.t.source : NULL, x->prune, x->dry, &out,
					  &st, e);
	if (rc == 0 && out.len)
		fputs(out.data, stdout);
	pd_buf_release(&out);
	release_file(&f);
	return rc;
}

/* A line for each MAILTO address of t (once each): whether failures are mailed, and how. */
static void print_mailto(const struct pd_crontab *t)
{
	char sendmail[512];
	int mail = pd_sendmail_find(sendmail, sizeof(sendmail));

	for (int i = 0; i < t->n; i++) {
		const char *to = pd_crontab_mailto(&t->v[i]);
		int seen = 0;

		for (int k = 0; to && k < i && !seen; k++)
			seen = pd_crontab_mailto(&t->v[k]) &&
			       strcmp(pd_crontab_mailto(&t->v[k]), to) == 0;
		if (to == NULL || seen)
			continue;
		if (mail)
			printf("MAILTO=%s: failures mailed through %s\n", to, sendmail);
		else
			printf("MAILTO=%s: no sendmail on this machine: not mailed\n", to);
	}
}

/* What the lines of t do unlike cron: "FILE:LINE: note" a line, after a heading. */
static void print_differences(const struct pd_crontab *t)
{
	struct pd_buf d = PD_BUF_INIT;

	for (int i = 0; i < t->n; i++)
		pd_crontab_differences(&t->v[i], &d);
	if (d.len == 0) {
		pd_buf_release(&d);
		return;
	}
	printf("differs from cron:\n");
	for (char *s = d.data, *nl; (nl = strchr(s, '\n')) != NULL; s = nl + 1) {
		char *tab = strchr(s, '\t');

		*nl = '\0';
		*tab = '\0';
		printf("%s:%s: %s\n", t->path, s, tab + 1);
	}
	pd_buf_release(&d);
}

int pd_croncmd_check_file(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	const struct args *x = k->x;
	const char *path = k->argv[0];
	long long from = included(x->from_us);
	struct loaded f;
	int rc = 0;

	if (load_file(&f, path, x->crontab, NULL, e) < 0)
		return -1;
	/* The config only when a schedule starts a workflow: its workflows: are checked. */
	for (int i = 0; i < f.n && rc == 0; i++)
		if (pd_sched_workflow(f.v[i].type)) {
			rc = pd_app_load(a, e);
			break;
		}
	if (!a->json && rc == 0 && f.crontab) {
		printf("%s: %d schedule%s; host zone %s (from %s)\n", path, f.n,
		       f.n == 1 ? "" : "s", f.t.zone, f.t.zone_from);
		print_mailto(&f.t);
	} else if (!a->json && rc == 0)
		printf("%s: %d schedule%s\n", path, f.n, f.n == 1 ? "" : "s");
	for (int i = 0; i < f.n && rc == 0; i++)
		rc = check_one(a, path, &f.v[i], f.crontab ? &f.t.v[i] : NULL,
			       f.crontab ? &f.t : NULL, from, e);
	if (!a->json && rc == 0 && f.crontab)
		print_differences(&f.t);
	release_file(&f);
	return rc;
}

int pd_croncmd_run(struct pd_subcall *k, struct pd_err *e)
{
	struct pd_app *a = k->a;
	struct args *x = k->x;
	struct pd_tick_stats st;

	pd_app_source(a, &x->t.source);
	if (connect_db(a, e) < 0 || pd_ticker_run(&x->t, &a->db, &st, e) < 0)
		return -1;
	if (!x->t.once)
		return 0;
	printf("enqueued %d, already enqueued %d, disabled %d", st.enqueued, st.existing,
	       st.disabled);
	if (st.skipped)
		printf(", skipped %d (overlap)", st.skipped);
	putchar('\n');
	if (st.failed)
		return pd_errf(e, PD_EX_SOFTWARE,
			       "%d schedule%s could not be handled (see the log above)", st.failed,
			       st.failed == 1 ? "" : "s");
	return 0;
}
