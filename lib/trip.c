#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "flow.h"
#include "config.h"
#include "hold.h"
#include "log.h"
#include "trip.h"

void pd_trip_release(struct pd_trip *t)
{
	free(t->fair);
	free(t->items);
	free(t->claimed);
	memset(t, 0, sizeof(*t));
}

/*
 * What workflow job f's outcome x (as outcome_of made it from the exit)
 * writes to its run, and what its plan makes of the job's own outcome.
 * Strings point into f.
 */
static void flow_outcome(const struct pd_hold *f, struct pd_job_outcome *x)
{
	static const char *const step_kinds[] = {"run", "sleep", "wait_for"};
	const struct pd_flow_plan *p = f->plan;
	struct pd_outcome *o = &x->o;
	struct pd_flow_write *fw = &o->flow;

	fw->run = p->run;
	fw->step = p->step;
	fw->attempts = f->job.attempt;
	fw->steps = p->steps.len ? p->steps.data : NULL;
	fw->wait_ms = -1;
	if (p->def && p->step + 1 < p->def->nsteps)
		fw->next_key = p->def->steps[p->step + 1].h.concurrency_key;
	if (p->s) {
		fw->step_name = p->s->name;
		fw->step_kind = step_kinds[p->s->kind];
	}
	switch (p->action) {
	case PD_FLOW_RUN:
		if (o->kind != PD_VERDICT_DONE)
			return; /* a failed step: the job's retry or dead letter alone */
		fw->kind = PD_FLOW_WRITE_STEP;
		fw->output = o->result ? o->result : "null";
		fw->output_is_text = o->result_is_text;
		fw->output_truncated = o->result_truncated;
		fw->ran_ms = f->exit.ran_us / 1000;
		fw->last = p->last;
		return;
	case PD_FLOW_ADVANCE:
		fw->kind = PD_FLOW_WRITE_STEP;
		fw->output = p->output.data;
		fw->sleep_ms = p->s->kind == PD_FLOW_STEP_SLEEP ? p->s->sleep_ms : 0;
		fw->signal = p->consumes_signal ? p->s->signal : NULL;
		fw->last = p->last && fw->sleep_ms == 0;
		o->backoff_ms = fw->sleep_ms; /* the next step is due after the sleep */
		o->result = fw->last ? fw->output : NULL;
		return;
	case PD_FLOW_PARK:
		fw->kind = PD_FLOW_WRITE_PARK;
		fw->signal = p->s->signal;
		fw->wait_ms = p->s->wait_ms;
		o->kind = PD_VERDICT_RELEASE;
		o->outcome = pd_exit_class_name(PD_EXIT_DRAINED);
		return;
	case PD_FLOW_FINISH:
		o->result = p->output.data;
		return;
	case PD_FLOW_FAIL:
		fw->kind = p->unpark ? PD_FLOW_WRITE_UNPARK : PD_FLOW_WRITE_NONE;
		o->kind = PD_VERDICT_DEAD;
		o->outcome = pd_exit_class_name(PD_EXIT_TERMINAL);
		o->error = o->dead_reason = p->reason.data;
		return;
	case PD_FLOW_RETRY:
		o->error = p->reason.data; /* the exit (PD_EXIT_FAILED) made it a retry */
		return;
	}
}

/*
 * The outcome of finished job f (DESIGN.md, the handler contract).
 * Strings point into f: valid until it is released.
 */
static void outcome_of(const struct pd_trip_ask *a, struct pd_hold *f, struct pd_job_outcome *x)
{
	struct pd_pool_exit *ex = &f->exit;
	struct pd_outcome *o = &x->o;

	memset(x, 0, sizeof(*x));
	x->id = f->job.id;
	x->token = f->job.token;
	o->started_ago_ms = -1;
	o->exit_code = ex->exit_code;
	o->signal = ex->signal;
	o->outcome = pd_exit_class_name(ex->cls);
	o->stderr_tail = ex->tail.len && f->fate != PD_HOLD_FATE_FAILURE ? ex->tail.data : NULL;
	o->error = ex->error.len ? ex->error.data : NULL;
	o->kind = pd_exit_verdict(ex->cls);
	o->hooks = f->hooks;
	switch (o->kind) {
	case PD_VERDICT_DONE:
		o->result = ex->out.len ? ex->out.data : NULL; /* judge_result settled it */
		o->result_is_text = f->out_is_text;
		o->result_truncated = ex->out_truncated;
		break;
	case PD_VERDICT_RETRY:
		o->backoff_ms =
		    pd_backoff_ms(a->rng, a->retry->base_ms, a->retry->cap_ms, f->job.attempt);
		break;
	case PD_VERDICT_DEAD:
		o->dead_reason = ex->cls == PD_EXIT_CANNOT_RUN ? o->error
				 : f->stream >= 0	       ? "terminal error"
							       : "terminal exit code";
		break;
	case PD_VERDICT_RELEASE:
	case PD_VERDICT_CANCEL: /* finish_sql takes the reason from the job's request */
		break;
	case PD_VERDICT_SNOOZE:
		o->snooze_ms = ex->snooze_ms;
		o->snooze_cap =
		    f->h && f->h->max_snoozes > 0 ? f->h->max_snoozes : a->retry->max_snoozes;
		o->backoff_ms =
		    pd_backoff_ms(a->rng, a->retry->base_ms, a->retry->cap_ms, f->job.attempt);
		break;
	}
	if (f->plan && f->fate != PD_HOLD_FATE_FAILURE)
		flow_outcome(f, x);
}

static void log_outcome(const struct pd_claimed *j, const struct pd_job_outcome *x)
{
	const struct pd_flow_write *fw = &x->o.flow;
	char q[300], name[160], step[200] = "";

	if (fw->run > 0) /* a workflow job: which run, and the step it was at */
		snprintf(step, sizeof(step), " run=%lld step=%s", fw->run,
			 fw->step_name ? pd_log_quote(name, sizeof(name), fw->step_name) : "-");
	if (x->written_before) {
		pd_log(PD_LOG_INFO,
		       "job done: the outcome was written before the connection was lost",
		       "job=%lld attempt=%d outcome=%s%s", j->id, j->attempt, x->o.outcome, step);
		return;
	}
	if (!x->applied) {
		pd_log(PD_LOG_WARN, "fenced: the lease was taken over, outcome not written",
		       "job=%lld attempt=%d outcome=%s%s", j->id, j->attempt, x->o.outcome, step);
		return;
	}
	pd_log(PD_LOG_INFO, "job done", "job=%lld attempt=%d outcome=%s state=%s%s%s%s", j->id,
	       j->attempt, x->o.outcome, x->state, step, x->o.error ? " error=" : "",
	       x->o.error ? pd_log_quote(q, sizeof(q), x->o.error) : "");
}

/* The release of ready job j, which never started: given back, the attempt refunded. */
static void ready_release(const struct pd_claimed *j, struct pd_job_outcome *x)
{
	memset(x, 0, sizeof(*x));
	x->id = j->id;
	x->token = j->token;
	x->o.kind = PD_VERDICT_RELEASE;
	x->o.outcome = pd_exit_class_name(PD_EXIT_DRAINED);
	x->o.started_ago_ms = -1;
	x->o.exit_code = -1;
}

long long pd_trip_start_due(const struct pd_hold *x, long long rtt_us)
{
	/*
	 * A handler process's at once; a stream job's once it has been in
	 * flight for a round trip, since most are answered sooner and their
	 * outcome records the start too, in the same write.
	 */
	if (x->stage != PD_HOLD_RUNNING || x->start != PD_HOLD_START_TO_SEND)
		return -1;
	return x->stream >= 0 ? x->since_us + rtt_us : x->since_us;
}

/*
 * Run i's lease is to be heartbeat: a stream job's not known lost, a
 * process's unless it has exited or was stopped for a lost lease (a handler
 * that has exited has its outcome on its way, and that write goes through
 * the fence, counted if fenced, rather than being dropped as a lost lease).
 */
static int holds_lease(const struct pd_holdings *hs, const struct pd_trip_ask *a, int i)
{
	const struct pd_hold *r = &hs->run[i];

	if (r->stage != PD_HOLD_RUNNING && r->stage != PD_HOLD_CANCELLING)
		return 0;
	return r->stream >= 0 || a->gone == NULL || !a->gone(a->ctx, i);
}

static struct pd_trip_item *item_add(struct pd_trip *t, enum pd_trip_kind kind, long long id,
				     long long token)
{
	struct pd_trip_item *it = &t->items[t->n++];

	it->kind = kind;
	it->id = id;
	it->token = token;
	it->held = 0;
	it->fin = -1;
	return it;
}

/* Progress note p as an item of job j, when it is not stored yet (dirty): stored now. */
static void progress_add(struct pd_trip *t, struct pd_progress *p, const struct pd_claimed *j)
{
	struct pd_trip_item *it;

	if (p == NULL || !p->dirty || p->line.len == 0)
		return;
	it = item_add(t, PD_TRIP_PROGRESS, j->id, j->token);
	it->text = p->line.data;
	p->dirty = 0;
	t->nprogress++;
}

int pd_trip_build(struct pd_trip *t, struct pd_holdings *hs, const struct pd_trip_ask *a)
{
	int cap = 3 * hs->size + 2 * hs->nready + 2 * hs->nfin, alone = 0;
	size_t bytes = 0;

	if (cap > t->cap) {
		t->cap = cap;
		t->items = pd_xrealloc(t->items, (size_t)cap * sizeof(*t->items));
	}
	t->n = t->nstart = t->noutcomes = t->nlost = t->nbeat = t->nrel = t->nprogress = 0;
	t->claim = t->claim_start = 0;
	for (int k = 0; k < hs->nfin && !alone; k++)
		alone = hs->fin[k].fate != PD_HOLD_FATE_BATCHED;
	for (int i = 0; i < hs->size; i++) {
		long long due = pd_trip_start_due(&hs->run[i], a->rtt_us);

		if (due >= 0 && due <= a->now_us) {
			item_add(t, PD_TRIP_START, hs->run[i].job.id, hs->run[i].job.token);
			t->nstart++;
			pd_hold_move(&hs->run[i], PD_HOLD_SEND);
		}
	}
	for (int k = 0; k < hs->nfin; k++) {
		struct pd_hold *f = &hs->fin[k];
		long long ago_ms = (a->now_us - f->exit.started_us) / 1000; /* since it started */
		/* (a ready job cancelled never started: started_us 0) */
		int unrecorded = f->start == PD_HOLD_START_TO_SEND && f->exit.started_us > 0;
		struct pd_trip_item *it;

		if (bytes > PD_TRIP_MAX_BYTES || (alone && t->noutcomes + t->nlost > 0))
			break; /* the rest in the next batch */
		if (alone && f->fate == PD_HOLD_FATE_BATCHED)
			continue;
		pd_hold_move(f, PD_HOLD_SEND);
		if (f->exit.cls == PD_EXIT_LEASE_LOST) {
			/* the job row gets nothing, its start neither: lease_lost only */
			it = item_add(t, PD_TRIP_LOST, f->job.id, f->job.token);
			it->attempt = f->job.attempt;
			it->ago_ms = ago_ms;
			it->fin = k;
			t->nlost++;
			continue;
		}
		progress_add(t, &f->exit.progress, &f->job);
		it = item_add(t, PD_TRIP_OUTCOME, f->job.id, f->job.token);
		it->fin = k;
		outcome_of(a, f, &it->out);
		if (unrecorded) /* over before its start was written: the outcome records both */
			it->out.o.started_ago_ms = ago_ms;
		bytes += f->exit.out.len + f->exit.tail.len + 256;
		t->noutcomes++;
	}
	if (!a->serving && !alone) {
		for (int k = 0; k < hs->nready; k++) {
			struct pd_trip_item *it = item_add(t, PD_TRIP_OUTCOME, hs->ready[k].job.id,
							   hs->ready[k].job.token);

			ready_release(&hs->ready[k].job, &it->out);
			pd_hold_move(&hs->ready[k], PD_HOLD_SEND);
			t->noutcomes++;
			t->nrel++;
		}
	}
	t->beat = a->beat;
	if (t->beat) {
		for (int i = 0; i < hs->size; i++) {
			if (!holds_lease(hs, a, i))
				continue;
			item_add(t, PD_TRIP_BEAT, hs->run[i].job.id, hs->run[i].job.token);
			t->nbeat++;
			if (a->progress)
				progress_add(t, a->progress(a->ctx, i), &hs->run[i].job);
		}
		for (int k = 0; k < hs->nready; k++) {
			if (hs->ready[k].stage != PD_HOLD_READY)
				continue;
			item_add(t, PD_TRIP_BEAT, hs->ready[k].job.id, hs->ready[k].job.token);
			t->nbeat++;
		}
	}
	if (!alone && a->claim > 0) {
		t->claim = a->claim;
		t->claim_start = a->claim_start;
	}
	return t->nstart + t->noutcomes + t->nlost + t->nprogress > 0 || t->beat || t->claim > 0;
}

void pd_trip_written(struct pd_trip *t, struct pd_holdings *hs, long long *next_due)
{
	for (int k = 0; k < t->n; k++) {
		const struct pd_trip_item *it = &t->items[k];

		if (it->kind != PD_TRIP_OUTCOME || it->fin < 0)
			continue; /* a ready job released has nothing to log */
		log_outcome(&hs->fin[it->fin].job, &it->out);
		if (it->out.applied && it->out.due_in_ms >= 0) {
			long long due = pd_now_ms() + it->out.due_in_ms;

			*next_due = *next_due < 0 || due < *next_due ? due : *next_due;
		}
	}
	for (int k = 0; k < t->n; k++) {
		const struct pd_hold *f;

		if (t->items[k].kind != PD_TRIP_LOST)
			continue;
		f = &hs->fin[t->items[k].fin];
		pd_log(PD_LOG_WARN,
		       f->stream >= 0 ? "lease lost: the answer dropped, nothing written"
				      : "lease lost: handler stopped, nothing written",
		       "job=%lld attempt=%d", f->job.id, f->job.attempt);
	}
	pd_holdings_apply(hs, PD_HOLD_WRITTEN);
}

int pd_trip_refused(struct pd_trip *t, struct pd_holdings *hs, const struct pd_err *e)
{
	static const char prefix[] = "database error: ";
	const char *why = e->msg;
	int nout = 0, last = -1;
	struct pd_hold *f;
	char q[600];

	if (e->code == PD_EX_UNAVAILABLE || !pd_db_data_error(e->sqlstate))
		return 0;
	for (int k = 0; k < t->n; k++) {
		if (t->items[k].kind == PD_TRIP_OUTCOME && t->items[k].fin >= 0) {
			nout++;
			last = t->items[k].fin;
		}
	}
	if (nout == 0)
		return 0;
	if (strncmp(why, prefix, sizeof(prefix) - 1) == 0)
		why += sizeof(prefix) - 1;
	pd_log_quote(q, sizeof(q), why);
	f = &hs->fin[last];
	if (nout > 1) {
		pd_log(PD_LOG_WARN,
		       "the database refused a batch: its outcomes go again one at a time",
		       "outcomes=%d sqlstate=%s error=%s", nout, e->sqlstate, q);
		for (int k = 0; k < t->n; k++)
			if (t->items[k].kind == PD_TRIP_OUTCOME && t->items[k].fin >= 0)
				pd_hold_move(&hs->fin[t->items[k].fin], PD_HOLD_REFUSED);
	} else if (pd_hold_move(f, PD_HOLD_REFUSED_ALONE) == 0 && f->fate == PD_HOLD_FATE_DROP) {
		pd_log(PD_LOG_ERROR,
		       "the database refused a job's outcome even as a failure: not written, "
		       "the lease will expire",
		       "job=%lld attempt=%d sqlstate=%s error=%s", f->job.id, f->job.attempt,
		       e->sqlstate, q);
	} else {
		pd_log(PD_LOG_WARN, "the database refused a job's outcome: written as a failure",
		       "job=%lld attempt=%d sqlstate=%s error=%s", f->job.id, f->job.attempt,
		       e->sqlstate, q);
		f->exit.cls = PD_EXIT_FAILED;
		pd_buf_reset(&f->exit.error);
		pd_buf_printf(&f->exit.error, "outcome cannot be stored: %s", why);
	}
	pd_holdings_apply(hs, PD_HOLD_FAILED);
	if (nout == 1 && hs->fin[last].fate == PD_HOLD_FATE_DROP)
		pd_holdings_fin_drop(hs, last);
	return 1;
}
