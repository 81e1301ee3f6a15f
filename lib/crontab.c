/*
 * crontab: crontab files as schedules and commands. See crontab.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buf.h"
#include "crontab.h"
#include "dur.h"
#include "flow.h"
#include "henv.h"
#include "jobspec.h"
#include "text.h"

#define MAX_FILE (4 << 20)

static int try_zone(const char *z, char *out, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	const char *p;

	if (z == NULL || *z == '\0')
		return 0;
	if (*z == ':')
		z++;
	if ((p = strstr(z, "zoneinfo/")) != NULL)
		z = p + strlen("zoneinfo/");
	if (strncmp(z, "posix/", 6) == 0)
		z += 6;
	if (pd_tz_check(z, &e) < 0 || strlen(z) >= n)
		return 0;
	snprintf(out, n, "%s", z);
	return 1;
}

void pd_host_zone(char *out, size_t n, char *from, size_t m)
{
	char line[256], link[512];
	FILE *f;
	ssize_t k;

	if (try_zone(getenv("TZ"), out, n)) {
		snprintf(from, m, "TZ");
		return;
	}
	if ((f = fopen("/etc/timezone", "r")) != NULL) {
		int got = fgets(line, sizeof(line), f) != NULL;

		fclose(f);
		line[strcspn(line, " \t\r\n")] = '\0';
		if (got && try_zone(line, out, n)) {
			snprintf(from, m, "/etc/timezone");
			return;
		}
	}
	if ((k = readlink("/etc/localtime", link, sizeof(link) - 1)) > 0) {
		link[k] = '\0';
		if (strstr(link, "zoneinfo/") && try_zone(link, out, n)) {
			snprintf(from, m, "/etc/localtime");
			return;
		}
	}
	snprintf(out, n, "UTC");
	snprintf(from, m, "default");
}

void pd_crontab_scope(const char *path, char *out, size_t n)
{
	const char *b = strrchr(path, '/');
	size_t i = 0;

	b = b ? b + 1 : path;
	for (; b[i] && b[i] != '.' && i + 1 < n; i++)
		out[i] = isalnum((unsigned char)b[i]) || b[i] == '_' || b[i] == '-' ? b[i] : '-';
	out[i] = '\0';
	if (i == 0 || !isalnum((unsigned char)out[0]))
		snprintf(out, n, "crontab");
}

void pd_crontab_prefix(const struct pd_crontab *t, char *out, size_t n)
{
	snprintf(out, n, PD_CRONTAB_TYPE_PREFIX "%s.", t->scope);
}

static int read_all(const char *path, struct pd_buf *b, struct pd_err *e)
{
	FILE *f = fopen(path, "r");
	char chunk[8192];
	size_t k;

	if (f == NULL)
		return pd_errf(e, PD_EX_DATAERR, "cannot read '%s': %s", path, strerror(errno));
	while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0 && b->len < MAX_FILE)
		pd_buf_append(b, chunk, k);
	if (ferror(f) || b->len >= MAX_FILE) {
		fclose(f);
		return pd_errf(e, PD_EX_DATAERR, "cannot read '%s': %s", path,
			       b->len >= MAX_FILE ? "larger than 4 MiB" : strerror(errno));
	}
	fclose(f);
	pd_buf_putc(b, '\0');
	b->len--;
	return 0;
}

/* The length of a variable name at s ([A-Za-z_][A-Za-z0-9_]*), 0 if none. */
static size_t var_len(const char *s)
{
	size_t i = 0;

	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return 0;
	while (isalnum((unsigned char)s[i]) || s[i] == '_')
		i++;
	return i;
}

/* An assignment: NAME, blanks, '='. *nl the name's length. */
static int is_assignment(const char *s, size_t *nl)
{
	size_t i = var_len(s);

	*nl = i;
	if (i == 0)
		return 0;
	while (s[i] == ' ' || s[i] == '\t')
		i++;
	return s[i] == '=';
}

/* "# pd:" (blanks allowed after '#'): the annotation's text after the colon, or NULL. */
static const char *annotation(const char *s)
{
	if (*s != '#')
		return NULL;
	s++;
	while (*s == ' ' || *s == '\t')
		s++;
	return strncmp(s, "pd:", 3) == 0 ? s + 3 : NULL;
}

int pd_crontab_sniff(const char *path, struct pd_err *e)
{
	struct pd_buf b = PD_BUF_INIT;
	const char *dot = strrchr(path, '.'), *p;
	int rc = 0;

	if (dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0))
		return 0;
	if (read_all(path, &b, e) < 0) {
		pd_buf_release(&b);
		return -1;
	}
	for (p = b.data ? b.data : ""; *p;) {
		size_t nl;

		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (*p == '#' && annotation(p) == NULL) {
			p += strcspn(p, "\n");
			continue;
		}
		rc = *p == '#' || *p == '@' || *p == '*' || isdigit((unsigned char)*p) ||
		     is_assignment(p, &nl);
		break;
	}
	pd_buf_release(&b);
	return rc;
}

/* ---- parsing ---- */

struct parser {
	struct pd_crontab *t;
	const char *tenant;
	const char *zone; /* the current CRON_TZ (owned by t) */
	char **env;	  /* the assignments so far (owned by t) */
	int nenv;
	int line;
	const char *text; /* the line being parsed, for columns */
	struct pd_err *e;
	/* the pending annotation */
	int ann_line;
	struct pd_sched ann;
	int ann_name, ann_timeout;
	long long timeout_ms;
	struct pd_strset names; /* the schedules' names, with their indexes in t->v */
};

static char *own(struct pd_crontab *t, char *s)
{
	if ((t->nowned & (t->nowned - 1)) == 0) /* 0, 1, 2, 4, ...: double the room */
		t->owned = pd_xrealloc(t->owned,
				       (size_t)(t->nowned ? 2 * t->nowned : 1) * sizeof(*t->owned));
	t->owned[t->nowned++] = s;
	return s;
}

static int lerr(struct parser *p, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "PATH:LINE:COL: what" (COL from at, a pointer into the line; NULL: none). */
static int lerr(struct parser *p, const char *at, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (at)
		return pd_errf(p->e, PD_EX_DATAERR, "%s:%d:%d: %s", p->t->path, p->line,
			       (int)(at - p->text) + 1, msg);
	return pd_errf(p->e, PD_EX_DATAERR, "%s:%d: %s", p->t->path, p->line, msg);
}

/* The value of an assignment: blanks trimmed, one pair of matching quotes removed. */
static char *assigned_value(const char *v)
{
	size_t n;

	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0])
		return pd_xstrndup(v + 1, n - 2);
	return pd_xstrndup(v, n);
}

static int assign(struct parser *p, const char *s, size_t nl)
{
	const char *eq = strchr(s, '=');
	char *name = pd_xstrndup(s, nl), *value = assigned_value(eq + 1);
	struct pd_err e2 = PD_ERR_INIT;
	struct pd_buf kv = PD_BUF_INIT;
	int i;

	if (strcmp(name, "CRON_TZ") == 0) {
		free(name);
		if (pd_tz_check(value, &e2) < 0) {
			free(value);
			return lerr(p, eq + 1, "CRON_TZ: %s", e2.msg);
		}
		p->zone = own(p->t, value);
		return 0;
	}
	pd_buf_printf(&kv, "%s=%s", name, value);
	free(value);
	/* A later assignment of a name replaces the earlier one for the lines after it. */
	for (i = 0; i < p->nenv; i++)
		if (strncmp(p->env[i], name, nl) == 0 && p->env[i][nl] == '=')
			break;
	free(name);
	if (i == p->nenv) {
		p->env = pd_xrealloc(p->env, (size_t)(p->nenv + 2) * sizeof(*p->env));
		p->nenv++;
	}
	p->env[i] = own(p->t, pd_buf_detach(&kv));
	p->env[p->nenv] = NULL;
	return 0;
}

static int ann_int(struct parser *p, const char *at, const char *key, const char *v, long long lo,
		   long long hi, long long *out)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi)
		return lerr(p, at, "annotation '%s': '%s' is not an integer from %lld to %lld", key,
			    v, lo, hi);
	*out = x;
	return 0;
}

static int ann_dur(struct parser *p, const char *at, const char *key, const char *v, long long lo,
		   long long *out)
{
	struct pd_err e2 = PD_ERR_INIT;

	if (pd_dur_parse(v, out, &e2) < 0)
		return lerr(p, at, "annotation '%s': %s", key, e2.msg);
	if (*out < lo)
		return lerr(p, at, "annotation '%s': must be %s", key,
			    lo > 0 ? "longer than 0" : "0 or more");
	return 0;
}

/* One key=value of an annotation (both owned by t), at column `at`. */
static int ann_pair(struct parser *p, const char *at, const char *k, const char *v)
{
	struct pd_sched *s = &p->ann;
	struct pd_err e2 = PD_ERR_INIT;

	if (strcmp(k, "name") == 0) {
		if (pd_sched_check_name(v, &e2) < 0)
			return lerr(p, at, "annotation 'name': %s", e2.msg);
		s->name = v;
		p->ann_name = 1;
	} else if (strcmp(k, "timeout") == 0) {
		if (ann_dur(p, at, k, v, 1, &s->timeout_ms) < 0)
			return -1;
	} else if (strcmp(k, "max_attempts") == 0) {
		if (ann_int(p, at, k, v, 1, 1000000, &s->max_attempts) < 0)
			return -1;
	} else if (strcmp(k, "queue") == 0) {
		s->queue = v;
	} else if (strcmp(k, "key") == 0) {
		if (pd_concurrency_key_check("key", v, &e2) < 0)
			return lerr(p, at, "annotation 'key': %s", e2.msg);
		s->concurrency_key = v;
	} else if (strcmp(k, "misfire") == 0) {
		if (pd_misfire_parse(v, &s->misfire, &e2) < 0)
			return lerr(p, at, "annotation 'misfire': %s", e2.msg);
	} else if (strcmp(k, "overlap") == 0) {
		if (strcasecmp(v, "allow") == 0)
			s->overlap = PD_OVERLAP_ALLOW;
		else if (strcasecmp(v, "skip") == 0)
			s->overlap = PD_OVERLAP_SKIP;
		else
			return lerr(p, at, "annotation 'overlap': '%s' is not allow or skip", v);
	} else if (strcmp(k, "jitter") == 0) {
		if (ann_dur(p, at, k, v, 0, &s->jitter_ms) < 0)
			return -1;
	} else if (strcmp(k, "priority") == 0) {
		if (pd_priority_parse(v, &s->priority, &e2) < 0)
			return lerr(p, at, "annotation 'priority': %s", e2.msg);
	} else if (strcmp(k, "catch_up_limit") == 0) {
		if (ann_int(p, at, k, v, 1, PD_SCHED_CATCH_UP_MAX, &s->catch_up_limit) < 0)
			return -1;
	} else if (strcmp(k, "workflow") == 0) {
		struct pd_buf b = PD_BUF_INIT;

		if (!pd_flow_name_ok(v))
			return lerr(p, at,
				    "annotation 'workflow': '%s' is not a workflow name (1 to %d "
				    "letters, digits, '-', '_' or '.')",
				    v, PD_FLOW_NAME_MAX);
		pd_buf_printf(&b, PD_FLOW_JOB_PREFIX "%s", v);
		s->type = own(p->t, pd_buf_detach(&b)); /* the line's command must be '-' */
	} else {
		return lerr(p, at,
			    "unknown annotation key '%s' (name, timeout, max_attempts, queue, key, "
			    "misfire, overlap, jitter, priority, catch_up_limit, workflow)",
			    k);
	}
	return 0;
}

/*
 * The defaults of a crontab line: those of a schedule, overlap skip, and
 * one attempt (cron runs a line once: a failure is not retried, so the
 * next occurrence is on time; max_attempts= opts into retries).
 */
static void entry_defaults(struct parser *p, struct pd_sched *s)
{
	pd_sched_init(s);
	s->overlap = PD_OVERLAP_SKIP;
	s->max_attempts = 1;
	s->tenant = p->tenant;
	s->payload = "{}";
}

static int annotate(struct parser *p, const char *s)
{
	if (p->ann_line)
		return lerr(p, p->text,
			    "a second annotation before a schedule line (the first is at line %d)",
			    p->ann_line);
	entry_defaults(p, &p->ann);
	p->ann_name = 0;
	p->ann_line = p->line;
	for (;;) {
		const char *tok, *eq;
		size_t n;

		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			break;
		tok = s;
		n = strcspn(s, " \t");
		s += n;
		eq = memchr(tok, '=', n);
		if (eq == NULL || eq == tok || eq + 1 == tok + n)
			return lerr(p, tok, "annotation: expected KEY=VALUE, got '%.*s'", (int)n,
				    tok);
		if (ann_pair(p, tok, own(p->t, pd_xstrndup(tok, (size_t)(eq - tok))),
			     own(p->t, pd_xstrndup(eq + 1, (size_t)(tok + n - eq - 1)))) < 0)
			return -1;
	}
	return 0;
}

/* FNV-1a, 32 bits. */
static uint32_t fnv(uint32_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static int schedule(struct parser *p, const char *s)
{
	struct pd_crontab *t = p->t;
	struct pd_crontab_entry *en;
	struct pd_err e2 = PD_ERR_INIT;
	struct pd_buf expr = PD_BUF_INIT, b = PD_BUF_INIT;
	struct pd_cron c;
	const char *cmd = s, *first = s, *flow;
	size_t n;
	int fields = s[0] == '@' ? 1 : 5, k;

	for (int i = 0; i < fields; i++) {
		while (*cmd == ' ' || *cmd == '\t')
			cmd++;
		n = strcspn(cmd, " \t");
		if (n == 0) {
			pd_buf_release(&expr);
			return lerr(p, cmd, "expected five fields and a command");
		}
		if (i)
			pd_buf_putc(&expr, ' ');
		pd_buf_append(&expr, cmd, n);
		cmd += n;
	}
	while (*cmd == ' ' || *cmd == '\t')
		cmd++;
	n = strlen(cmd);
	while (n > 0 && (cmd[n - 1] == ' ' || cmd[n - 1] == '\t'))
		n--;
	if (strcasecmp(expr.data, "@reboot") == 0) {
		pd_buf_release(&expr);
		return lerr(p, first, "@reboot is not supported: a schedule needs a time");
	}
	if (pd_cron_parse(&c, expr.data, &e2) < 0) {
		pd_buf_release(&expr);
		return lerr(p, first, "%s", e2.msg);
	}
	if (n == 0) {
		lerr(p, cmd, "missing command after '%s'", expr.data);
		pd_buf_release(&expr);
		return -1;
	}
	if ((t->n & (t->n - 1)) == 0) /* 0, 1, 2, 4, ...: double the room */
		t->v = pd_xrealloc(t->v, (size_t)(t->n ? 2 * t->n : 1) * sizeof(*t->v));
	en = &t->v[t->n];
	memset(en, 0, sizeof(*en));
	if (p->ann_line) {
		en->s = p->ann;
		en->named = p->ann_name;
	} else {
		entry_defaults(p, &en->s);
	}
	en->s.cron = own(t, pd_buf_detach(&expr));
	en->s.timezone = p->zone;
	en->s.line = p->line;
	en->command = own(t, pd_xstrndup(cmd, n));
	en->s.source = t->source;
	flow = pd_sched_workflow(en->s.type);
	en->s.command = flow ? NULL : en->command;
	if (flow && strcmp(en->command, "-") != 0)
		return lerr(p, cmd,
			    "the command of a workflow=%s line must be '-' (the workflow's steps "
			    "are the config's workflows:)",
			    flow);
	if (!en->named) {
		char name[24];

		/* A workflow line's command is '-': its workflow tells it apart. */
		snprintf(
		    name, sizeof(name), "cron-%08x",
		    (unsigned)fnv(fnv(2166136261u, en->s.cron), flow ? en->s.type : en->command));
		en->s.name = own(t, pd_xstrdup(name));
	}
	if (flow) {
		pd_buf_printf(&b, "{\"crontab\": \"%s\"}", t->scope);
		en->s.payload = own(t, pd_buf_detach(&b));
	} else {
		pd_buf_printf(&b, PD_CRONTAB_TYPE_PREFIX "%s.%s", t->scope, en->s.name);
		en->s.type = own(t, pd_buf_detach(&b));
	}
	en->env = pd_xcalloc((size_t)p->nenv + 1, sizeof(*en->env));
	if (p->nenv)
		memcpy(en->env, p->env, (size_t)p->nenv * sizeof(*en->env));
	en->nenv = p->nenv;
	t->n++;
	p->ann_line = 0;
	if (pd_sched_check(&en->s, &e2) < 0)
		return lerr(p, first, "%s", e2.msg);
	if ((k = pd_strset_add(&p->names, en->s.name, t->n - 1)) >= 0)
		return en->named ? lerr(p, first, "schedule '%s' is already defined at line %d",
					en->s.name, t->v[k].s.line)
				 : lerr(p, first,
					"same expression and command as line %d: name one "
					"of them with '# pd: name=NAME'",
					t->v[k].s.line);
	return 0;
}

static int parse_line(struct parser *p, const char *s)
{
	const char *a;
	size_t nl;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '\0')
		return 0;
	if (*s == '#') {
		if ((a = annotation(s)) != NULL)
			return annotate(p, a);
		return 0;
	}
	if (is_assignment(s, &nl)) {
		if (p->ann_line)
			return lerr(p, s,
				    "the annotation at line %d must be followed by a schedule",
				    p->ann_line);
		return assign(p, s, nl);
	}
	return schedule(p, s);
}

int pd_crontab_parse(struct pd_crontab *t, const char *path, const char *text, size_t len,
		     const char *host_zone, const char *tenant, struct pd_err *e)
{
	struct parser p;
	const char *s = text, *end = text + len;
	char from[64];
	int rc = 0;

	memset(t, 0, sizeof(*t));
	memset(&p, 0, sizeof(p));
	t->path = path;
	pd_crontab_scope(path, t->scope, sizeof(t->scope));
	if (host_zone) {
		snprintf(t->zone, sizeof(t->zone), "%s", host_zone);
		snprintf(t->zone_from, sizeof(t->zone_from), "given");
	} else {
		pd_host_zone(t->zone, sizeof(t->zone), from, sizeof(from));
		snprintf(t->zone_from, sizeof(t->zone_from), "%s", from);
	}
	p.t = t;
	{
		char *abs = realpath(path, NULL);

		t->source = own(t, abs ? abs : pd_xstrdup(path));
	}
	p.tenant = tenant ? tenant : "default";
	p.zone = own(t, pd_xstrdup(t->zone)); /* t may be moved: nothing points into it */
	p.e = e;
	while (rc == 0 && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		char *line;

		if (n > 0 && s[n - 1] == '\r')
			n--;
		line = pd_xstrndup(s, n);
		p.line++;
		p.text = line;
		if (strlen(line) != n)
			rc = lerr(&p, NULL, "a NUL byte in the line");
		else
			rc = parse_line(&p, line);
		free(line);
		s = nl ? nl + 1 : end;
	}
	if (rc == 0 && p.ann_line) {
		p.line = p.ann_line;
		rc = lerr(&p, NULL, "the annotation is followed by no schedule");
	}
	free(p.env);
	pd_strset_release(&p.names);
	if (rc < 0)
		pd_crontab_release(t);
	return rc;
}

int pd_crontab_load(struct pd_crontab *t, const char *path, const char *tenant, struct pd_err *e)
{
	struct pd_buf b = PD_BUF_INIT;
	int rc;

	memset(t, 0, sizeof(*t));
	if (read_all(path, &b, e) < 0) {
		pd_buf_release(&b);
		return -1;
	}
	rc = pd_crontab_parse(t, path, b.data ? b.data : "", b.len, NULL, tenant, e);
	pd_buf_release(&b);
	return rc;
}

void pd_crontab_release(struct pd_crontab *t)
{
	for (int i = 0; i < t->n; i++) {
		free(t->v[i].env);
		pd_strv_free(t->v[i].run_env);
	}
	free(t->v);
	for (int i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	memset(t, 0, sizeof(*t));
}

struct pd_sched *pd_crontab_scheds(const struct pd_crontab *t)
{
	struct pd_sched *v = pd_xcalloc((size_t)t->n + 1, sizeof(*v));

	for (int i = 0; i < t->n; i++)
		v[i] = t->v[i].s;
	return v;
}

const char *pd_crontab_mailto(const struct pd_crontab_entry *en)
{
	const char *v = NULL;

	for (int i = 0; i < en->nenv; i++)
		if (strncmp(en->env[i], "MAILTO=", 7) == 0)
			v = en->env[i] + 7;
	return v && *v ? v : NULL;
}

int pd_sendmail_find(char *out, size_t n)
{
	static const char *const fixed[] = {"/usr/sbin/sendmail", "/usr/lib/sendmail"};
	const char *path = getenv("PATH");

	while (path && *path) {
		size_t len = strcspn(path, ":");

		if (len > 0 && (size_t)snprintf(out, n, "%.*s/sendmail", (int)len, path) < n &&
		    access(out, X_OK) == 0)
			return 1;
		path += len + (path[len] == ':');
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (access(fixed[i], X_OK) == 0) {
			snprintf(out, n, "%s", fixed[i]);
			return 1;
		}
	return 0;
}

/*
 * The mail hook's script: $1 sendmail, $2 the address, $3 what the job is.
 * The job's JSON comes on stdin (jsonb's text: "id" is its first key).
 */
static const char mail_script[] =
    "j=$(cat); id=$(printf '%s\\n' \"$j\" | sed -n 's/^{\"id\": \\([0-9]*\\).*/\\1/p');"
    " { printf 'To: %s\\nSubject: pendulum: job %s %s failed\\n\\n%s\\n' \"$2\" \"$id\" \"$3\""
    " \"$j\"; } | \"$1\" -t";

struct pd_handler *pd_crontab_mail_hook(const struct pd_crontab *t,
					const struct pd_crontab_entry *en, const char *sendmail)
{
	const char *to = pd_crontab_mailto(en);
	struct pd_buf what = PD_BUF_INIT;
	struct pd_handler *h;
	char **argv;

	if (to == NULL)
		return NULL;
	pd_buf_printf(&what, "%s (%s line %d)", en->s.type, t->path, en->s.line);
	argv = pd_xcalloc(8, sizeof(*argv));
	argv[0] = pd_xstrdup("/bin/sh");
	argv[1] = pd_xstrdup("-c");
	argv[2] = pd_xstrdup(mail_script);
	argv[3] = pd_xstrdup("sh");
	argv[4] = pd_xstrdup(sendmail);
	argv[5] = pd_xstrdup(to);
	argv[6] = pd_buf_detach(&what);
	h = pd_xcalloc(1, sizeof(*h));
	h->name = pd_xstrdup("MAILTO");
	h->exec_argv = argv;
	h->timeout_ms = -1;
	return h;
}

char **pd_crontab_run_env(const struct pd_crontab_entry *en, const char *home, const char *logname)
{
	char **env = pd_xcalloc((size_t)en->nenv + 6, sizeof(*env));
	size_t k = 0;

	pd_henv_put(env, &k, pd_xstrdup("SHELL=" PD_CRONTAB_SHELL));
	pd_henv_put(env, &k, pd_xstrdup("PATH=" PD_CRONTAB_PATH));
	pd_henv_put(env, &k, pd_henv_var("HOME", home));
	pd_henv_put(env, &k, pd_henv_var("LOGNAME", logname));
	for (int i = 0; i < en->nenv; i++)
		pd_henv_put(env, &k, pd_xstrdup(en->env[i]));
	env[k] = NULL;
	return env;
}

/* Append one note of pd_crontab_differences. */
static void note(struct pd_buf *b, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void note(struct pd_buf *b, int line, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pd_buf_printf(b, "%d\t%s\n", line, msg);
}

void pd_crontab_differences(const struct pd_crontab_entry *en, struct pd_buf *out)
{
	const struct pd_sched *s = &en->s;
	const char *flow = pd_sched_workflow(s->type), *to = pd_crontab_mailto(en);
	char d[PD_DUR_MAX];
	int line = s->line;

	if (flow)
		note(out, line, "starts a run of workflow '%s' (workflow=), not a command", flow);
	if (s->overlap == PD_OVERLAP_SKIP)
		note(out, line,
		     "skipped while its previous job waits or runs (overlap=skip); cron starts "
		     "another (overlap=allow)");
	if (s->misfire != PD_MISFIRE_SKIP)
		note(out, line,
		     "fires late once when no ticker ran at its time (misfire=%s); cron skips it "
		     "(misfire=skip)",
		     s->misfire == PD_MISFIRE_FIRE_ALL ? "fire_all" : "fire_once");
	if (s->max_attempts > 1)
		note(out, line,
		     "a failure is retried, up to %lld attempts (max_attempts=); cron "
		     "runs it once",
		     s->max_attempts);
	if (s->timeout_ms > 0) {
		pd_dur_format(s->timeout_ms, d, sizeof(d));
		note(out, line, "killed after %s (timeout=); cron lets it run", d);
	}
	if (s->jitter_ms > 0) {
		pd_dur_format(s->jitter_ms, d, sizeof(d));
		note(out, line, "starts a fixed offset below %s late (jitter=)", d);
	}
	if (s->concurrency_key)
		note(out, line, "waits for its concurrency key '%s' (key=)", s->concurrency_key);
	if (!flow && strchr(en->command, '%'))
		note(out, line,
		     "'%%' is an ordinary character; cron makes the first a newline and what "
		     "follows the command's stdin");
	if (to)
		note(out, line,
		     "MAILTO=%s: failures are mailed (an on_failure hook), never the output", to);
	else if (!flow)
		note(out, line, "output is the job's result and the worker's log, never mailed");
}
