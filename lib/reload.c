#include <stdlib.h>

#include "log.h"
#include "reload.h"

struct pd_config *pd_config_new(void)
{
	struct pd_config *c = pd_xmalloc(sizeof(*c));

	pd_config_init(c);
	return c;
}

void pd_config_free(struct pd_config *c)
{
	if (c == NULL)
		return;
	pd_config_release(c);
	free(c);
}

int pd_reload(const struct pd_config_source *src, const char *what, pd_reload_apply_fn apply,
	      void *arg)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf summary = PD_BUF_INIT;
	struct pd_config *c;
	char q[600], f[300];

	if (src == NULL || src->load == NULL) {
		pd_log(PD_LOG_INFO, "SIGHUP: nothing to reload", "daemon=%s", what);
		return 0;
	}
	if ((c = src->load(src->ctx, &e)) == NULL || apply(arg, c, &summary, &e) < 0) {
		if (c != NULL)
			src->drop(src->ctx, c);
		pd_log(PD_LOG_ERROR, "config not reloaded: keeping the old one",
		       "daemon=%s error=%s", what, pd_log_quote(q, sizeof(q), e.msg));
		pd_buf_release(&summary);
		return 0;
	}
	pd_log(PD_LOG_INFO, "config reloaded", "daemon=%s file=%s%s%s", what,
	       c->path ? pd_log_quote(f, sizeof(f), c->path) : "-", summary.len ? " " : "",
	       summary.len ? summary.data : "");
	src->keep(src->ctx, c);
	pd_buf_release(&summary);
	return 1;
}

void pd_reload_pin_concurrency(struct pd_engine_cfg *flags, const struct pd_engine_cfg *file,
			       long long running, const char *section)
{
	if (flags->concurrency < 0 && file->concurrency != running)
		pd_log(PD_LOG_WARN, "concurrency not reloaded: it needs a restart",
		       "section=%s running=%lld file=%lld", section, running, file->concurrency);
	flags->concurrency = running;
}

void pd_reload_keep(struct pd_reload_keep *k, void *p)
{
	k->v = pd_xrealloc(k->v, (size_t)(k->n + 1) * sizeof(*k->v));
	k->v[k->n++] = p;
}

void pd_reload_keep_release(struct pd_reload_keep *k, void (*fn)(void *))
{
	for (int i = 0; i < k->n; i++) {
		if (fn)
			fn(k->v[i]);
		free(k->v[i]);
	}
	free(k->v);
	k->v = NULL;
	k->n = 0;
}
