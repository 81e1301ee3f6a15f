#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "dur.h"
#include "henv.h"
#include "job.h"
#include "log.h"
#include "outbox.h"
#include "pool.h"
#include "relay.h"
#include "retry.h"
#include "text.h"

#define OUT_LIMIT 4096 /* the publish command's stdout is read and thrown away */

extern char **environ;

struct relay {
	const struct pd_relay_cfg *cfg; /* the caller's, or own after a reload */
	struct pd_relay_cfg *own;	/* the settings of the last reload, or NULL */
	struct pd_reload_keep kept;	/* the settings reloads replaced (slots point in) */
	struct pd_daemon d;
	struct pd_pool pool;
	struct pd_outbox_msg *msgs; /* msgs[i]: the message in pool slot i */
	long long next_claim;
	long long poll_ms; /* the claim poll's interval now (pd_idle_poll) */
};

void pd_relay_cfg_init(struct pd_relay_cfg *r)
{
	memset(r, 0, sizeof(*r));
	pd_engine_cfg_init(&r->engine);
	r->visibility_ms = r->timeout_ms = -1;
}

int pd_relay_settle(struct pd_relay_cfg *r, const struct pd_config *cfg, struct pd_err *e)
{
	char t[PD_DUR_MAX], g[PD_DUR_MAX], v[PD_DUR_MAX];

	pd_engine_cfg_settle(&r->engine, &cfg->relay.engine);
	r->retry = cfg->retry;
	if (r->engine.grace_ms <= 0)
		r->engine.grace_ms = 1; /* a publish command is always given a moment */
	if (r->visibility_ms < 0)
		r->visibility_ms = cfg->relay.visibility_ms;
	if (r->timeout_ms < 0)
		r->timeout_ms = cfg->relay.timeout_ms;
	/* A flag's command is "*": the file's commands for named topics still apply. */
	for (int i = 0; i < cfg->relay.ntopics && r->ncmds < PD_RELAY_MAX_CMDS; i++) {
		const struct pd_handler *tc = &cfg->relay.topics[i];

		if (strcmp(tc->name, "*") == 0 && pd_handler_find(r->cmds, r->ncmds, "*"))
			continue;
		r->cmds[r->ncmds++] = *tc;
	}
	if (r->ncmds == 0)
		return pd_errf(e, PD_EX_USAGE,
			       "no publish command: give --publish COMMAND, --exec PATH, or "
			       "relay.topics in the config file");
	if (r->ntopics > 0) {
		for (int i = 0; i < r->ntopics; i++)
			if (pd_handler_find(r->cmds, r->ncmds, r->topics[i]) == NULL)
				return pd_errf(e, PD_EX_USAGE,
					       "no publish command for topic '%s': give --publish, "
					       "--exec, or relay.topics.%s in the config file",
					       r->topics[i], r->topics[i]);
	} else if (pd_handler_find(r->cmds, r->ncmds, "*")) {
		r->any_topic = 1;
	} else {
		for (int i = 0; i < r->ncmds && r->ntopics < PD_RELAY_MAX_TOPICS; i++)
			r->topics[r->ntopics++] = r->cmds[i].name;
	}
	/* A publish command must be dead before its claim lapses. */
	for (int i = 0; i < r->ncmds; i++) {
		long long to = r->cmds[i].timeout_ms > 0 ? r->cmds[i].timeout_ms : r->timeout_ms;

		if (to + r->engine.grace_ms >= r->visibility_ms) {
			pd_dur_format(to, t, sizeof(t));
			pd_dur_format(r->engine.grace_ms, g, sizeof(g));
			pd_dur_format(r->visibility_ms, v, sizeof(v));
			return pd_errf(
			    e, PD_EX_USAGE,
			    "the publish timeout for topic '%s' (%s) plus the kill grace "
			    "(%s) must be shorter than the visibility timeout (%s)",
			    r->cmds[i].name, t, g, v);
		}
		if (pd_handler_check(&r->cmds[i], "publish command for topic", e) < 0)
			return -1;
	}
	return 0;
}

static void msg_prefix(const struct pd_outbox_msg *m, char *out, size_t n)
{
	char q[160], k[160];

	snprintf(out, n, "message=%lld topic=%s%s%s attempt=%d", m->id,
		 pd_log_quote(q, sizeof(q), m->topic), m->key ? " key=" : "",
		 m->key ? pd_log_quote(k, sizeof(k), m->key) : "", m->attempt);
}

static void log_outcome(const char *prefix, const struct pd_outbox_outcome *o, const char *state)
{
	struct pd_buf b = PD_BUF_INIT;
	char q[600];

	if (o->kind == PD_VERDICT_DONE) {
		pd_log(PD_LOG_INFO, "message published", "%s", prefix);
		return;
	}
	pd_buf_printf(&b, "%s state=%s", prefix, state);
	if (o->kind == PD_VERDICT_RETRY && strcmp(state, pd_outbox_states[PD_OUTBOX_PENDING]) == 0)
		pd_buf_printf(&b, " retry_ms=%lld", o->backoff_ms);
	if (o->error)
		pd_buf_printf(&b, " error=%s", pd_log_quote(q, sizeof(q), o->error));
	if (o->kind == PD_VERDICT_RELEASE)
		pd_log(PD_LOG_INFO, "message released", "%s", b.data);
	else
		pd_log(PD_LOG_WARN, "publish failed", "%s", b.data);
	pd_buf_release(&b);
}

/*
 * Write o for m, fenced on its claim token. Returns 0 (written or fenced),
 * or what pd_daemon_db_failed says: the caller keeps the outcome to retry.
 */
static int write_outcome(struct relay *r, const struct pd_outbox_msg *m,
			 const struct pd_outbox_outcome *o, struct pd_err *e)
{
	char state[16], prefix[400];
	int rc = pd_outbox_finish(r->d.db, m->id, m->token, o, state, e);

	if (rc < 0)
		return pd_daemon_db_failed(&r->d, e) < 0 ? -1 : 1;
	msg_prefix(m, prefix, sizeof(prefix));
	if (rc == 0)
		pd_log(PD_LOG_WARN, "fenced: the claim was taken over, outcome not written",
		       "%s token=%lld", prefix, m->token);
	else
		log_outcome(prefix, o, state);
	r->d.wake = 1; /* the next message for this key may be claimable now */
	return 0;
}

/* The outcome of slot i's exit; error text goes to err. */
static void outcome_of(struct relay *r, int i, struct pd_outbox_outcome *o, struct pd_buf *err)
{
	struct pd_pool_exit *ex = &r->pool.slots[i].exit;

	memset(o, 0, sizeof(*o));
	o->kind = pd_exit_verdict(ex->cls);
	if (ex->cls == PD_EXIT_CANNOT_RUN) { /* the error names the program already */
		pd_buf_append(err, pd_buf_str(&ex->error), ex->error.len);
		o->error = o->dead_reason = err->data;
		return;
	}
	if (o->kind == PD_VERDICT_DEAD)
		o->dead_reason = "terminal exit code";
	else if (o->kind == PD_VERDICT_RETRY)
		o->backoff_ms = pd_backoff_ms(&r->d.rng, r->cfg->retry.base_ms,
					      r->cfg->retry.cap_ms, r->msgs[i].attempt);
	pd_buf_append(err, pd_buf_str(&ex->error), ex->error.len);
	if ((o->kind == PD_VERDICT_DEAD || o->kind == PD_VERDICT_RETRY) && ex->last_line.len)
		pd_buf_printf(err, ": %s", ex->last_line.data);
	o->error = err->len ? err->data : NULL;
}

static int flush_outcomes(struct relay *r, struct pd_err *e)
{
	for (int i = 0; i < r->pool.size && pd_daemon_up(&r->d); i++) {
		struct pd_outbox_outcome o;
		struct pd_buf err = PD_BUF_INIT;
		int rc;

		if (r->pool.slots[i].state != PD_SLOT_DONE)
			continue;
		outcome_of(r, i, &o, &err);
		rc = write_outcome(r, &r->msgs[i], &o, e);
		pd_buf_release(&err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			return 0; /* the link is down: keep it for later */
		pd_pool_clear(&r->pool, i);
		pd_outbox_msg_clear(&r->msgs[i]);
	}
	return 0;
}

/*
 * m's publish command h's environment: the relay's own as lib/henv passes
 * it to a child (no database credential, no secret_env: name unless h's
 * pass_env: names it), and the message's (pd_outbox_env). NULL: e filled.
 */
static char **command_env(const struct pd_handler *h, const struct pd_outbox_msg *m,
			  struct pd_err *e)
{
	size_t k;
	char **base = pd_henv_build((const char *const *)environ, pd_henv_secret(),
				    (const char *const *)h->pass_env, NULL, 0, &k);
	char **envp = pd_outbox_env((const char *const *)base, m, e);

	pd_strv_free(base);
	return envp;
}

/* Start m in a free slot, or settle it at once when it cannot run. */
static int start_msg(struct relay *r, struct pd_outbox_msg *m, struct pd_err *e)
{
	const struct pd_handler *h = pd_handler_find(r->cfg->cmds, r->cfg->ncmds, m->topic);
	int i = pd_pool_free_slot(&r->pool), rc = 0;
	struct pd_outbox_outcome o;
	struct pd_pool_job pj;
	struct pd_err he = PD_ERR_INIT;
	char prefix[400];
	char **envp = NULL;

	msg_prefix(m, prefix, sizeof(prefix));
	memset(&o, 0, sizeof(o));
	if (h == NULL) {
		/* The claim asks only for topics with a command; give it back if not. */
		pd_log(PD_LOG_ERROR, "no publish command for the topic: released", "%s", prefix);
		o.kind = PD_VERDICT_RELEASE;
	} else if ((envp = command_env(h, m, &he)) == NULL) {
		/* Not through pendulum.outbox_record, which checks headers: data error. */
		o.kind = PD_VERDICT_DEAD;
		o.dead_reason = "invalid headers";
		o.error = he.msg;
	} else if (i < 0) {
		pd_log(PD_LOG_ERROR, "no free slot for a claimed message: released", "%s", prefix);
		pd_strv_free(envp);
		o.kind = PD_VERDICT_RELEASE;
		h = NULL;
	}
	if (h == NULL || envp == NULL) {
		rc = write_outcome(r, m, &o, e);
		pd_outbox_msg_clear(m);
		return rc < 0 ? -1 : 0;
	}
	r->msgs[i] = *m;
	memset(&pj, 0, sizeof(pj));
	pj.h = h;
	pj.envp = envp;
	pj.input = r->msgs[i].payload;
	pj.input_len = strlen(r->msgs[i].payload);
	pj.timeout_ms = h->timeout_ms > 0 ? h->timeout_ms : r->cfg->timeout_ms;
	pj.prefix = prefix;
	pd_log(PD_LOG_DEBUG, "publishing", "%s token=%lld", prefix, m->token);
	pd_pool_start(&r->pool, i, &pj);
	return 0;
}

static int claim(struct relay *r, long long now, struct pd_err *e)
{
	struct pd_outbox_msg *m = NULL;
	int free_slots = pd_pool_count(&r->pool, PD_SLOT_FREE), n = 0, dead = 0, want;

	want = free_slots < r->cfg->engine.batch ? free_slots : (int)r->cfg->engine.batch;
	r->d.wake = 0;
	r->next_claim = now + r->cfg->engine.poll_ms;
	if (want <= 0)
		return 0;
	if (pd_outbox_claim(r->d.db, r->d.id, r->cfg->any_topic ? NULL : r->cfg->topics,
			    r->cfg->ntopics, want, r->cfg->visibility_ms, &m, &n, &dead, e) < 0)
		return pd_daemon_db_failed(&r->d, e);
	if (r->cfg->once)
		pd_daemon_drain(&r->d);
	r->d.idle = n == 0 && dead == 0;
	/* with nothing publishing either, poll less often (woken by notifications) */
	r->poll_ms =
	    pd_idle_poll(r->poll_ms, r->cfg->engine.poll_ms,
			 r->d.idle && pd_pool_count(&r->pool, PD_SLOT_FREE) == r->pool.size);
	r->next_claim = now + r->poll_ms;
	if (dead)
		pd_log(PD_LOG_WARN, "dead-lettered: attempts used up and the last claim lapsed",
		       "messages=%d", dead);
	if (n + dead == want)
		r->d.wake = 1; /* there may be more */
	for (int k = 0; k < n; k++)
		if (start_msg(r, &m[k], e) < 0) {
			for (int j = k + 1; j < n; j++)
				pd_outbox_msg_clear(&m[j]);
			free(m);
			return -1;
		}
	free(m); /* the strings now belong to the slots */
	return 0;
}

static int on_tick(struct pd_daemon *d, long long now, struct pd_err *e)
{
	struct relay *r = d->ctx;

	if (!pd_daemon_up(d))
		return 0;
	if (flush_outcomes(r, e) < 0)
		return -1;
	if (pd_daemon_up(d) && r->d.phase == PD_DAEMON_SERVING &&
	    (r->d.wake || now >= r->next_claim) && pd_pool_free_slot(&r->pool) >= 0 &&
	    claim(r, now, e) < 0)
		return -1;
	return 0;
}

static long long deadline(struct pd_daemon *d)
{
	struct relay *r = d->ctx;
	long long t = pd_pool_deadline(&r->pool);

	if (pd_daemon_up(d)) {
		if (pd_pool_count(&r->pool, PD_SLOT_DONE) > 0 ||
		    (r->d.wake && r->d.phase == PD_DAEMON_SERVING &&
		     pd_pool_free_slot(&r->pool) >= 0))
			return pd_now_ms();
		if (r->d.phase == PD_DAEMON_SERVING)
			t = pd_deadline_min(t, r->next_claim);
	}
	return t;
}

/* The status line for the service manager: "idle", or "publishing 2 of 4". */
static void status(struct pd_daemon *d, struct pd_buf *b)
{
	struct relay *r = d->ctx;
	int busy = pd_pool_busy(&r->pool);

	if (busy == 0)
		pd_buf_puts(b, "idle");
	else
		pd_buf_printf(b, "publishing %d of %d", busy, r->pool.size);
}

/* SIGHUP's apply step (lib/reload): the flags over the new file, then move onto them. */
static int reload_apply(void *arg, const struct pd_config *c, struct pd_buf *summary,
			struct pd_err *e)
{
	struct relay *r = arg;
	struct pd_relay_cfg *next = pd_xmalloc(sizeof(*next));

	*next = *r->cfg->flags;
	next->flags = r->cfg->flags;
	next->source = r->cfg->source;
	pd_reload_pin_concurrency(&next->engine, &c->relay.engine, r->pool.size, "relay");
	if (pd_relay_settle(next, c, e) < 0) {
		free(next);
		return -1;
	}
	if (r->own)
		pd_reload_keep(&r->kept, r->own);
	r->own = next;
	r->cfg = next;
	r->pool.grace_ms = next->engine.grace_ms;
	r->d.drain_ms = next->engine.drain_ms;
	r->next_claim = pd_deadline_min(r->next_claim, pd_now_ms() + next->engine.poll_ms);
	r->d.wake = 1; /* claim at once: there may be messages of new topics */
	r->d.idle = 0;
	if (next->any_topic)
		pd_buf_printf(summary, "commands=%d topics=*", next->ncmds);
	else
		pd_buf_printf(summary, "commands=%d topics=%d", next->ncmds, next->ntopics);
	return 0;
}

static void on_reload(struct pd_daemon *d)
{
	struct relay *r = d->ctx;

	/* an engine started without its flags kept has nothing to settle a file over */
	pd_reload(r->cfg->flags ? &r->cfg->source : NULL, "relay", reload_apply, r);
}

static const char *const relay_channels[] = {"pendulum_outbox", NULL};

static const struct pd_daemon_ops relay_ops = {
    .kind = {"relay", relay_channels, "messages", "publish commands"},
    .on_tick = on_tick,
    .deadline = deadline,
    .status = status,
    .on_reload = on_reload,
};

int pd_relay_run(const struct pd_relay_cfg *cfg, struct pd_db *db, struct pd_err *e)
{
	struct relay r = {.cfg = cfg};
	int rc;

	pd_pool_init(&r.pool, (int)cfg->engine.concurrency, OUT_LIMIT, cfg->engine.grace_ms,
		     "publish stderr");
	r.msgs = pd_xcalloc((size_t)cfg->engine.concurrency, sizeof(*r.msgs));
	pd_daemon_init(&r.d, &relay_ops, db, &r, &r.pool, &cfg->engine);
	rc = pd_daemon_open(&r.d, e);
	if (rc == 0) {
		struct pd_buf t = PD_BUF_INIT;

		for (int i = 0; i < cfg->ntopics; i++)
			pd_buf_printf(&t, "%s%s", i ? "," : "", cfg->topics[i]);
		pd_log(PD_LOG_INFO, "relay started",
		       "relay=%s concurrency=%lld visibility_ms=%lld topics=%s", r.d.id,
		       cfg->engine.concurrency, cfg->visibility_ms,
		       cfg->any_topic ? "*" : pd_log_quote((char[600]){0}, 600, t.data));
		pd_buf_release(&t);
		rc = pd_daemon_run(&r.d, e);
		/* Write what the drain stopped (or what is left after an error). */
		if (pd_daemon_up(&r.d)) {
			struct pd_err ue = PD_ERR_INIT;

			pd_pool_tick(&r.pool, pd_now_ms());
			flush_outcomes(&r, &ue);
		}
		pd_log(PD_LOG_INFO, "relay stopped", "relay=%s", r.d.id);
	}
	pd_daemon_close(&r.d);
	for (int i = 0; i < r.pool.size; i++)
		pd_outbox_msg_clear(&r.msgs[i]);
	pd_pool_release(&r.pool);
	free(r.msgs);
	free(r.own);
	pd_reload_keep_release(&r.kept, NULL);
	return rc;
}
