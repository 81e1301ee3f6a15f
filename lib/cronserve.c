/*
 * cronserve: a crontab served by pd-worker. See cronserve.h.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cronserve.h"
#include "henv.h"
#include "log.h"

/*
 * The user's home and login name, as cron gives them: from passwd for our
 * user, else $HOME and $LOGNAME (else $USER), else "/" and the uid.
 */
static void user_of(char *home, size_t nh, char *name, size_t nn)
{
	struct passwd *pw = getpwuid(geteuid());
	const char *h = pw ? pw->pw_dir : getenv("HOME");
	const char *l = pw ? pw->pw_name : getenv("LOGNAME") ? getenv("LOGNAME") : getenv("USER");

	snprintf(home, nh, "%s", h && *h ? h : "/");
	if (l && *l)
		snprintf(name, nn, "%s", l);
	else
		snprintf(name, nn, "%u", (unsigned)geteuid());
}

/* Add version t (parsed) as the current one, with its handlers. */
static void add_version(struct pd_cronserve *c, struct pd_crontab *t)
{
	struct pd_handler *h = pd_xcalloc((size_t)t->n + 1, sizeof(*h));
	int nh = 0;
	char sendmail[512], home[512], name[256];
	int mail = pd_sendmail_find(sendmail, sizeof(sendmail));

	user_of(home, sizeof(home), name, sizeof(name));

	c->tabs = pd_xrealloc(c->tabs, (size_t)(c->n + 1) * sizeof(*c->tabs));
	c->hv = pd_xrealloc(c->hv, (size_t)(c->n + 1) * sizeof(*c->hv));
	c->tabs[c->n] = *t;
	c->hv[c->n] = h;
	c->n++;
	for (int i = 0; i < t->n; i++) {
		struct pd_crontab_entry *en = &c->tabs[c->n - 1].v[i];

		if (pd_sched_workflow(en->s.type)) /* a run's steps are the config's */
			continue;
		/* cron's environment, directory and shell: nothing of the worker's */
		en->run_env = pd_crontab_run_env(en, home, name);
		h[nh].name = (char *)en->s.type;
		h[nh].run = (char *)en->command;
		h[nh].timeout_ms = en->s.timeout_ms;
		h[nh].mode = PD_HANDLER_PROCESS;
		h[nh].env = en->run_env;
		h[nh].env_only = 1;
		h[nh].cwd = (char *)pd_henv_get(en->run_env, "HOME");
		h[nh].shell = (char *)pd_henv_get(en->run_env, "SHELL");
		if (pd_crontab_mailto(en) != NULL && mail)
			h[nh].hooks.on[PD_HOOK_FAILURE] = pd_crontab_mail_hook(t, en, sendmail);
		else if (pd_crontab_mailto(en) != NULL)
			pd_log(PD_LOG_WARN, "MAILTO: no sendmail on this machine: not mailed",
			       "file=%s line=%d", t->path, en->s.line);
		nh++;
	}
	c->ext.handlers = h;
	c->ext.nhandlers = nh;
	c->pending = 1;
}

static int reload(struct pd_worker_ext *x, struct pd_err *e)
{
	struct pd_cronserve *c = (struct pd_cronserve *)x;
	struct pd_crontab t;

	if (pd_crontab_load(&t, c->path, c->tenant, e) < 0)
		return -1;
	add_version(c, &t);
	c->ext.next_ms = 0; /* applied at the next pass */
	return 0;
}

static int period(struct pd_worker_ext *x, struct pd_db *db, struct pd_err *e)
{
	struct pd_cronserve *c = (struct pd_cronserve *)x;
	struct pd_tick_stats st;

	if (c->pending && pd_cronserve_apply(c, db, e) < 0) {
		if (e->code == PD_EX_UNAVAILABLE)
			return -1; /* again after the reconnect */
		char q[600];

		pd_log(PD_LOG_ERROR, "crontab not applied", "file=%s error=%s", c->path,
		       pd_log_quote(q, sizeof(q), e->msg));
		pd_err_clear(e);
		c->pending = 0;
	}
	if (pd_ticker_step(&c->lead, db, c->grace_ms, c->ext.period_ms, &st, &c->ext.next_ms, e) <
	    0)
		return -1;
	if (st.enqueued)
		pd_log(PD_LOG_DEBUG, "crontab tick", "enqueued=%d", st.enqueued);
	return 0;
}

static void connect_hook(struct pd_worker_ext *x)
{
	pd_ticker_lead_reset(&((struct pd_cronserve *)x)->lead);
}

int pd_cronserve_init(struct pd_cronserve *c, const char *path, const char *tenant,
		      struct pd_err *e)
{
	struct pd_ticker_cfg tc;
	char host[64] = {0}, holder[128];

	memset(c, 0, sizeof(*c));
	pd_ticker_cfg_init(&tc);
	c->path = path;
	c->tenant = tenant;
	c->grace_ms = tc.grace_ms;
	c->ext.reload = reload;
	c->ext.period = period;
	c->ext.connect = connect_hook;
	c->ext.period_ms = tc.interval_ms;
	gethostname(host, sizeof(host) - 1);
	snprintf(holder, sizeof(holder), "%s:%d:crontab", host, (int)getpid());
	pd_ticker_lead_init(&c->lead, holder, tc.lease_ms);
	return reload(&c->ext, e);
}

int pd_cronserve_apply(struct pd_cronserve *c, struct pd_db *db, struct pd_err *e)
{
	const struct pd_crontab *t = &c->tabs[c->n - 1];
	struct pd_sched *v = pd_crontab_scheds(t);
	struct pd_apply_stats st;
	struct pd_buf out = PD_BUF_INIT;
	char prefix[80];
	int rc;

	pd_crontab_prefix(t, prefix, sizeof(prefix));
	rc = pd_sched_apply_types(db, v, t->n, c->tenant, prefix, t->source, 1, 0, &out, &st, e);
	free(v);
	if (rc == 0) {
		c->pending = 0;
		pd_log(PD_LOG_INFO, "crontab applied",
		       "file=%s schedules=%d created=%d updated=%d deleted=%d host_zone=%s",
		       c->path, t->n, st.created, st.updated, st.deleted, t->zone);
		for (char *s = out.data, *nl; s && *s; s = nl + 1) {
			nl = strchr(s, '\n');
			*nl = '\0';
			char q[600];

			pd_log(PD_LOG_INFO, "crontab change", "file=%s change=%s", c->path,
			       pd_log_quote(q, sizeof(q), s));
		}
	}
	pd_buf_release(&out);
	return rc;
}

void pd_cronserve_release(struct pd_cronserve *c)
{
	for (int i = 0; i < c->n; i++) {
		for (int k = 0; k < c->tabs[i].n; k++)
			pd_hooks_release(&c->hv[i][k].hooks);
		pd_crontab_release(&c->tabs[i]);
		free(c->hv[i]);
	}
	free(c->tabs);
	free(c->hv);
	memset(c, 0, sizeof(*c));
}
