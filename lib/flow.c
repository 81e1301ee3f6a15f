#include <stdlib.h>
#include <string.h>

#include "dur.h"
#include "flow.h"
#include "json.h"

const struct pd_flow *pd_flow_find(const struct pd_flow *v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

void pd_flows_free(struct pd_flow *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		for (int k = 0; k < v[i].nsteps; k++) {
			struct pd_flow_step *s = &v[i].steps[k];

			free(s->name);
			free(s->signal);
			free(s->h.run);
			free(s->h.concurrency_key);
			strv_free(s->h.exec_argv);
			/* h.name is s->name */
		}
		free(v[i].steps);
		free(v[i].name);
	}
	free(v);
}

void pd_flow_steps_json(struct pd_buf *b, const struct pd_flow *def)
{
	pd_buf_putc(b, '[');
	for (int i = 0; i < def->nsteps; i++) {
		if (i)
			pd_buf_putc(b, ',');
		pd_json_quote(b, def->steps[i].name, strlen(def->steps[i].name));
	}
	pd_buf_putc(b, ']');
}

void pd_flow_plan_release(struct pd_flow_plan *p)
{
	pd_buf_release(&p->stdin_json);
	pd_buf_release(&p->output);
	pd_buf_release(&p->reason);
	pd_buf_release(&p->steps);
}

static void span_to(struct pd_buf *b, const struct pd_json *j, int tok)
{
	const char *s;
	size_t n;

	pd_json_span(j, tok, &s, &n);
	pd_buf_append(b, s, n);
}

static void fail(struct pd_flow_plan *p, int step)
{
	p->action = PD_FLOW_FAIL;
	p->step = step;
	p->s = step < p->def->nsteps ? &p->def->steps[step] : NULL;
}

/*
 * The recorded names (array token rec, or -1: none) against def's, at every
 * index up to pos: 0 when they agree, else FAIL with the difference named.
 */
static int check_steps(const struct pd_json *j, int rec, int pos, struct pd_flow_plan *p)
{
	const struct pd_flow *def = p->def;
	int t, n;

	if (rec < 0)
		return 0;
	n = j->tok[rec].size;
	t = rec + 1;
	for (int i = 0; i < n && i <= pos; i++, t = pd_json_skip(j, t)) {
		char *name = pd_json_str(j, t);
		int found = -1;

		if (i < def->nsteps && strcmp(name, def->steps[i].name) == 0) {
			free(name);
			continue;
		}
		for (int k = 0; k < def->nsteps && found < 0; k++)
			if (strcmp(name, def->steps[k].name) == 0)
				found = k;
		if (found < 0)
			pd_buf_printf(&p->reason,
				      "workflow '%s' changed under the run: step %d '%s' is no "
				      "longer in the definition",
				      def->name, i + 1, name);
		else if (i < def->nsteps)
			pd_buf_printf(&p->reason,
				      "workflow '%s' changed under the run: step %d is '%s' in "
				      "the run but '%s' in the definition (step '%s' moved to %d)",
				      def->name, i + 1, name, def->steps[i].name, name, found + 1);
		else
			pd_buf_printf(&p->reason,
				      "workflow '%s' changed under the run: step %d '%s' is "
				      "past the end of the definition (%d steps)",
				      def->name, i + 1, name, def->nsteps);
		free(name);
		fail(p, pos);
		return 1;
	}
	return 0;
}

int pd_flow_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > PD_FLOW_NAME_MAX)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return 0;
	return 1;
}

void pd_flow_plan(const struct pd_flow *def, const char *name, const char *ctx,
		  struct pd_flow_plan *p)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	long long run = 0, pos = 0;
	int t, rec;
	const struct pd_flow_step *s;

	p->def = def;
	if (ctx == NULL) {
		p->action = PD_FLOW_FAIL;
		pd_buf_printf(&p->reason,
			      "no workflow run drives this job: start runs of '%s' with pd-enqueue "
			      "--workflow or pendulum.start_workflow",
			      name);
		return;
	}
	if (pd_json_parse(&j, ctx, strlen(ctx), &e) == 0 && j.tok[0].type == PD_JSON_OBJECT &&
	    (t = pd_json_get(&j, 0, "run")) >= 0)
		pd_json_int(&j, t, &run);
	if (j.ntok > 0 && (t = pd_json_get(&j, 0, "position")) >= 0)
		pd_json_int(&j, t, &pos);
	p->run = run;
	p->step = pos >= 0 && pos <= 1000000 ? (int)pos : 0;
	if (def == NULL || run <= 0 || pos != p->step) {
		p->action = PD_FLOW_RETRY;
		if (def == NULL)
			pd_buf_printf(&p->reason,
				      "workflow '%s' is not defined in this worker's configuration",
				      name);
		else
			pd_buf_printf(&p->reason, "the run's context is unreadable: %s",
				      e.msg[0] ? e.msg : "no run or position");
		pd_json_release(&j);
		pd_err_clear(&e);
		return;
	}
	pd_flow_steps_json(&p->steps, def);
	rec = pd_json_get(&j, 0, "steps");
	if (rec >= 0 && j.tok[rec].type != PD_JSON_ARRAY)
		rec = -1;
	if (check_steps(&j, rec, (int)pos, p)) {
		pd_json_release(&j);
		return;
	}
	if (pos >= def->nsteps) {
		p->action = PD_FLOW_FINISH;
		p->s = NULL;
		if ((t = pd_json_get(&j, 0, "last_output")) >= 0)
			span_to(&p->output, &j, t);
		else
			pd_buf_puts(&p->output, "null");
		pd_json_release(&j);
		return;
	}
	s = p->s = &def->steps[pos];
	p->last = pos == def->nsteps - 1;
	switch (s->kind) {
	case PD_FLOW_STEP_RUN:
		p->action = PD_FLOW_RUN;
		if ((t = pd_json_get(&j, 0, "stdin")) >= 0)
			span_to(&p->stdin_json, &j, t);
		else
			pd_buf_puts(&p->stdin_json, "{\"input\":null,\"outputs\":{}}");
		break;
	case PD_FLOW_STEP_SLEEP:
		p->action = PD_FLOW_ADVANCE;
		pd_buf_puts(&p->output, "null");
		break;
	case PD_FLOW_STEP_WAIT: {
		int sig = pd_json_get(&j, 0, "signals"), v = pd_json_get(&j, sig, s->signal);
		int exp = pd_json_get(&j, 0, "wait_expired");

		if (v >= 0) {
			p->action = PD_FLOW_ADVANCE;
			p->consumes_signal = 1;
			span_to(&p->output, &j, v);
		} else if (exp >= 0 && j.tok[exp].type == PD_JSON_TRUE) {
			char d[48];

			pd_dur_format(s->wait_ms, d, sizeof(d));
			if (s->on_timeout_continue) {
				p->action = PD_FLOW_ADVANCE;
				pd_buf_puts(&p->output, "null");
			} else {
				p->action = PD_FLOW_FAIL;
				p->unpark = 1;
				pd_buf_printf(
				    &p->reason,
				    "step '%s' timed out after %s waiting for signal '%s'", s->name,
				    d, s->signal);
			}
		} else {
			p->action = PD_FLOW_PARK;
		}
		break;
	}
	}
	pd_json_release(&j);
}
