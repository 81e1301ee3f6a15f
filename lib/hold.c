#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hold.h"
#include "jobrun.h"
#include "json.h"
#include "log.h"
#include "text.h"

/* Short names for the tables. */
enum {
	NONE = PD_HOLD_NONE,
	READY = PD_HOLD_READY,
	RELEASING = PD_HOLD_RELEASING,
	RUNNING = PD_HOLD_RUNNING,
	ABANDONED = PD_HOLD_ABANDONED,
	FINISHED = PD_HOLD_FINISHED,
	SENDING = PD_HOLD_SENDING,
	CANCELLING = PD_HOLD_CANCELLING,
	NO = -1, /* no such move */
	REC = PD_HOLD_START_RECORDED,
	TOS = PD_HOLD_START_TO_SEND,
	FLY = PD_HOLD_START_IN_FLIGHT,
	BAT = PD_HOLD_FATE_BATCHED,
	ALO = PD_HOLD_FATE_ALONE,
	FAI = PD_HOLD_FATE_FAILURE,
	DRO = PD_HOLD_FATE_DROP,
};

/* The stages' moves: stage_moves[stage][event], NO where there is none. */
static const signed char stage_moves[PD_HOLD_NSTAGES][PD_HOLD_NEVENTS] = {
    /*            CLAIMED START    NO_RUN    OVER      LOST  SEND       WRITTEN   FAILED
		  REFUSED  REFUSED_ALONE DROP CANCEL */
    [NONE] = {READY, RUNNING, FINISHED, NO, NO, NO, NONE, NONE, NO, NO, NO, NO},
    [READY] = {NO, RUNNING, NO, NO, NONE, RELEASING, READY, READY, NO, NO, NO, FINISHED},
    [RELEASING] = {NO, NO, NO, NO, NO, NO, NONE, READY, NO, NO, NO, NO},
    [RUNNING] = {NO, NO, NO, FINISHED, ABANDONED, RUNNING, RUNNING, RUNNING, NO, NO, NO,
		 CANCELLING},
    [ABANDONED] = {NO, NO, NO, FINISHED, NO, NO, ABANDONED, ABANDONED, NO, NO, NO, NO},
    [FINISHED] = {NO, NO, NO, NO, NO, SENDING, FINISHED, FINISHED, NO, NO, NONE, NO},
    [SENDING] = {NO, NO, NO, NO, NO, NO, NONE, FINISHED, SENDING, SENDING, NONE, NO},
    [CANCELLING] = {NO, NO, NO, FINISHED, ABANDONED, CANCELLING, CANCELLING, CANCELLING, NO, NO, NO,
		    CANCELLING},
};

/*
 * The start record's moves: a claim held LEASED has its start to send; the
 * batch that carries it (a start record, or the outcome that records the
 * start too) has it in flight, and once written it is recorded.
 */
static const signed char start_moves[PD_HOLD_NSTARTS][PD_HOLD_NEVENTS] = {
    /*      CLAIMED START NO_RUN OVER LOST SEND WRITTEN FAILED REFUSED REFUSED_ALONE DROP
	    CANCEL */
    [REC] = {TOS, REC, REC, REC, REC, REC, REC, REC, REC, REC, REC, REC},
    [TOS] = {TOS, TOS, TOS, TOS, TOS, FLY, TOS, TOS, TOS, TOS, TOS, TOS},
    [FLY] = {FLY, FLY, FLY, FLY, FLY, FLY, REC, TOS, FLY, FLY, FLY, FLY},
};

/*
 * The fates' moves: a batch of several outcomes refused goes again one
 * outcome per round trip; one refused alone is written as a failure; one
 * refused as a failure too is dropped.
 */
static const signed char fate_moves[PD_HOLD_NFATES][PD_HOLD_NEVENTS] = {
    /*      CLAIMED START NO_RUN OVER LOST SEND WRITTEN FAILED REFUSED REFUSED_ALONE DROP
	    CANCEL */
    [BAT] = {BAT, BAT, BAT, BAT, BAT, BAT, BAT, BAT, ALO, FAI, BAT, BAT},
    [ALO] = {ALO, ALO, ALO, ALO, ALO, ALO, ALO, ALO, ALO, FAI, ALO, ALO},
    [FAI] = {FAI, FAI, FAI, FAI, FAI, FAI, FAI, FAI, ALO, DRO, FAI, FAI},
    [DRO] = {DRO, DRO, DRO, DRO, DRO, DRO, DRO, DRO, ALO, FAI, DRO, DRO},
};

int pd_hold_next(enum pd_hold_stage s, enum pd_hold_event ev)
{
	if ((int)s < 0 || s >= PD_HOLD_NSTAGES || (int)ev < 0 || ev >= PD_HOLD_NEVENTS)
		return -1;
	return stage_moves[s][ev];
}

enum pd_hold_start pd_hold_next_start(enum pd_hold_start r, enum pd_hold_event ev)
{
	return (enum pd_hold_start)start_moves[r][ev];
}

enum pd_hold_fate pd_hold_next_fate(enum pd_hold_fate f, enum pd_hold_event ev)
{
	return (enum pd_hold_fate)fate_moves[f][ev];
}

int pd_hold_move(struct pd_hold *x, enum pd_hold_event ev)
{
	int s = pd_hold_next(x->stage, ev);

	if (s < 0) {
		pd_log(PD_LOG_ERROR, "a held job cannot move so", "job=%lld stage=%s event=%s",
		       x->job.id, pd_hold_stage_name(x->stage), pd_hold_event_name(ev));
		return -1;
	}
	x->stage = (enum pd_hold_stage)s;
	x->start = pd_hold_next_start(x->start, ev);
	x->fate = pd_hold_next_fate(x->fate, ev);
	return 0;
}

const char *pd_hold_stage_name(enum pd_hold_stage s)
{
	static const char *const names[] = {"none", "ready",	"releasing", "running",
					    "lost", "finished", "sending",   "cancelling"};

	return (int)s >= 0 && s < PD_HOLD_NSTAGES ? names[s] : "?";
}

const char *pd_hold_event_name(enum pd_hold_event ev)
{
	static const char *const names[] = {"claimed", "start",		"no_run",  "over",
					    "lost",    "send",		"written", "failed",
					    "refused", "refused_alone", "drop",	   "cancel"};

	return (int)ev >= 0 && ev < PD_HOLD_NEVENTS ? names[ev] : "?";
}

static void plan_free(struct pd_flow_plan **p)
{
	if (*p == NULL)
		return;
	pd_flow_plan_release(*p);
	free(*p);
	*p = NULL;
}

/* Free what x owns; x is NONE, nothing in it. */
static void hold_clear(struct pd_hold *x)
{
	pd_jobrun_clear(&x->job);
	plan_free(&x->plan);
	pd_pool_exit_release(&x->exit);
	memset(x, 0, sizeof(*x));
}

void pd_holdings_init(struct pd_holdings *hs, int size)
{
	memset(hs, 0, sizeof(*hs));
	hs->size = size;
	hs->run = pd_xcalloc((size_t)size + 1, sizeof(*hs->run));
}

void pd_holdings_release(struct pd_holdings *hs)
{
	for (int i = 0; i < hs->size; i++)
		hold_clear(&hs->run[i]);
	for (int k = 0; k < hs->nready; k++)
		hold_clear(&hs->ready[k]);
	for (int k = 0; k < hs->nfin; k++)
		hold_clear(&hs->fin[k]);
	free(hs->run);
	free(hs->ready);
	free(hs->fin);
	pd_buf_release(&hs->line);
	memset(hs, 0, sizeof(*hs));
}

int pd_holdings_free_run(const struct pd_holdings *hs)
{
	for (int i = 0; i < hs->size; i++)
		if (hs->run[i].stage == PD_HOLD_NONE)
			return i;
	return -1;
}

int pd_holdings_nfree(const struct pd_holdings *hs)
{
	int n = 0;

	for (int i = 0; i < hs->size; i++)
		n += hs->run[i].stage == PD_HOLD_NONE;
	return n;
}

int pd_holdings_unsent(const struct pd_holdings *hs)
{
	for (int k = 0; k < hs->nfin; k++)
		if (hs->fin[k].stage == PD_HOLD_FINISHED)
			return 1;
	return 0;
}

void pd_hold_claimed(struct pd_hold *x, const struct pd_claimed *c,
		     const struct pd_handler *handlers, int nhandlers, const int *stream_of,
		     const struct pd_flow *flows, int nflows)
{
	int hi;

	memset(x, 0, sizeof(*x));
	x->job = *c;
	x->stream = -1;
	if (strncmp(c->type, PD_FLOW_JOB_PREFIX, strlen(PD_FLOW_JOB_PREFIX)) == 0) {
		const char *name = c->type + strlen(PD_FLOW_JOB_PREFIX);

		x->plan = pd_xcalloc(1, sizeof(*x->plan));
		*x->plan = (struct pd_flow_plan)PD_FLOW_PLAN_INIT;
		pd_flow_plan(pd_flow_find(flows, nflows, name), name, c->flow, x->plan);
		x->h = x->plan->action == PD_FLOW_RUN ? &x->plan->s->h : NULL;
		return;
	}
	x->h = pd_handler_find(handlers, nhandlers, c->type);
	hi = x->h ? (int)(x->h - handlers) : -1;
	x->stream = hi >= 0 && stream_of ? stream_of[hi] : -1;
}

/* A hook job's handler where the worker has no command for it: fails, retryable, saying so. */
static const struct pd_handler no_hook = {
    (char *)"pd:hook",
    (char *)"echo \"no hook command for this event and job type on this worker\" >&2; exit 1",
    NULL,
    -1,
    {0},
    0};

void pd_hold_hooks(struct pd_hold *x, const struct pd_handler *handlers, int nhandlers,
		   const struct pd_hooks *global)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	char *event = NULL, *type = NULL;
	int ev = -1;

	x->hooks = pd_hook_mask(handlers, nhandlers, global, x->job.type);
	if (strcmp(x->job.type, PD_HOOK_TYPE) != 0)
		return;
	x->stream = -1;
	x->h = &no_hook;
	if (pd_json_parse(&j, x->job.payload, strlen(x->job.payload), &e) < 0)
		return;
	if (j.ntok > 0 && j.tok[0].type == PD_JSON_OBJECT) {
		int te = pd_json_get(&j, 0, "event"), tt = pd_json_get(&j, 0, "type");

		event = te >= 0 ? pd_json_str(&j, te) : NULL;
		type = tt >= 0 ? pd_json_str(&j, tt) : NULL;
	}
	if (event && type && (ev = pd_hook_event_parse(event)) >= 0) {
		const struct pd_handler *h =
		    pd_hook_find(handlers, nhandlers, global, type, (enum pd_hook_event)ev);

		if (h != NULL)
			x->h = h;
	}
	free(event);
	free(type);
	pd_json_release(&j);
}

struct pd_hold *pd_holdings_ready_add(struct pd_holdings *hs, struct pd_hold *x)
{
	struct pd_hold *r;

	if (hs->nready == hs->capready) {
		hs->capready = hs->capready ? 2 * hs->capready : 64;
		hs->ready = pd_xrealloc(hs->ready, (size_t)hs->capready * sizeof(*hs->ready));
	}
	r = &hs->ready[hs->nready++];
	*r = *x;
	memset(x, 0, sizeof(*x));
	pd_hold_move(r, PD_HOLD_CLAIMED);
	return r;
}

void pd_holdings_ready_drop(struct pd_holdings *hs, int k)
{
	hold_clear(&hs->ready[k]);
	memmove(hs->ready + k, hs->ready + k + 1,
		(size_t)(hs->nready - k - 1) * sizeof(*hs->ready));
	hs->nready--;
}

/* A new entry at the end of the finished list, x's (taken). */
static struct pd_hold *fin_add(struct pd_holdings *hs, struct pd_hold *x)
{
	struct pd_hold *f;

	if (hs->nfin == hs->capfin) {
		hs->capfin = hs->capfin ? 2 * hs->capfin : 2 * hs->size;
		hs->fin = pd_xrealloc(hs->fin, (size_t)hs->capfin * sizeof(*hs->fin));
	}
	f = &hs->fin[hs->nfin++];
	*f = *x;
	memset(x, 0, sizeof(*x));
	return f;
}

/* The handler for a process with no handler (cannot happen: the claim filters on types). */
static const struct pd_handler no_handler = {(char *)"?", (char *)"exit 70", NULL, -1, {0}, 0};

struct pd_hold *pd_holdings_start(struct pd_holdings *hs, struct pd_hold *x, int i)
{
	struct pd_hold *r = &hs->run[i];
	const struct pd_claimed *j;
	struct pd_pool_job pj;
	long long timeout;
	char prefix[64];

	*r = *x;
	memset(x, 0, sizeof(*x));
	pd_hold_move(r, PD_HOLD_START);
	r->since_us = pd_now_us();
	if (hs->pool == NULL)
		return r;
	j = &r->job;
	timeout = j->timeout_ms >= 0 ? j->timeout_ms : r->h ? r->h->timeout_ms : 0;
	snprintf(prefix, sizeof(prefix), "job=%lld attempt=%d", j->id, j->attempt);
	pd_log(PD_LOG_DEBUG, "job started", "%s type=%s token=%lld", prefix, j->type, j->token);
	if (r->stream >= 0) {
		pd_jobrun_line(&hs->line, j);
		pd_stream_send(&hs->streams[r->stream], j->id, i, prefix, timeout, hs->line.data,
			       hs->line.len);
		return r;
	}
	memset(&pj, 0, sizeof(pj));
	pj.h = r->h ? r->h : &no_handler;
	pj.envp = pd_jobrun_env(j, hs->worker, r->plan, r->h);
	pj.input = r->plan ? r->plan->stdin_json.data : j->payload;
	pj.input_len = strlen(pj.input);
	pj.timeout_ms = timeout;
	pj.prefix = prefix;
	pd_pool_start(hs->pool, i, &pj);
	return r;
}

/*
 * Settle once what a handler that exited 0 printed (DESIGN.md, the handler
 * contract): JSON that jsonb can store is the result as it is; text that is
 * not JSON, or was cut at the limit, becomes a JSON string (invalid UTF-8 as
 * U+FFFD); JSON that jsonb cannot store (a number out of numeric's range, a
 * \u0000, invalid UTF-8 in a string), or more than jsonb holds in one value
 * (a worker.result_limit set above PD_JSON_JSONB_MAX), fails the attempt,
 * retryable, with the reason, and nothing of it is written.
 */
static void judge_result(struct pd_hold *f)
{
	struct pd_pool_exit *ex = &f->exit;
	struct pd_err e = PD_ERR_INIT;
	int rc;

	if (ex->cls != PD_EXIT_OK || ex->out.len == 0)
		return;
	rc = ex->out_truncated ? -1 : pd_json_storable(ex->out.data, ex->out.len, &e);
	if (rc < 0) {
		struct pd_buf clean = PD_BUF_INIT, quoted = PD_BUF_INIT;

		pd_utf8_sanitize(&clean, pd_buf_str(&ex->out), ex->out.len);
		pd_json_quote(&quoted, pd_buf_str(&clean), clean.len);
		pd_buf_release(&clean);
		pd_buf_release(&ex->out);
		ex->out = quoted;
		f->out_is_text = 1;
	}
	if (rc != 0 && ex->out.len <= PD_JSON_JSONB_MAX)
		return;
	if (rc != 0) { /* a worker.result_limit above what jsonb holds */
		pd_err_clear(&e);
		pd_errf(&e, PD_EX_DATAERR, "%zu bytes, more than jsonb holds (%d)", ex->out.len,
			PD_JSON_JSONB_MAX);
	}
	ex->cls = PD_EXIT_FAILED;
	pd_buf_reset(&ex->error);
	pd_buf_printf(&ex->error, "result cannot be stored: %s", e.msg);
	pd_buf_release(&ex->out);
	ex->out_truncated = 0;
	f->out_is_text = 0;
}

struct pd_hold *pd_holdings_over(struct pd_holdings *hs, int i, const struct pd_pool_exit *ex)
{
	struct pd_hold *f = fin_add(hs, &hs->run[i]);

	f->exit = *ex;
	f->out_is_text = 0;
	pd_hold_move(f, PD_HOLD_OVER);
	pd_exit_snooze(&f->exit);
	judge_result(f);
	return f;
}

struct pd_hold *pd_holdings_no_run(struct pd_holdings *hs, struct pd_hold *x, long long now_us)
{
	struct pd_hold *f = fin_add(hs, x);

	pd_hold_move(f, PD_HOLD_NO_RUN);
	f->exit.started_us = now_us;
	f->exit.exit_code = -1;
	f->exit.cls = f->plan->action == PD_FLOW_RETRY ? PD_EXIT_FAILED : PD_EXIT_OK;
	return f;
}

void pd_holdings_lost(struct pd_holdings *hs, long long id, long long t)
{
	for (int i = 0; i < hs->size; i++) {
		struct pd_hold *r = &hs->run[i];

		if (r->stage == PD_HOLD_NONE || r->job.token != t)
			continue;
		if (r->stream >= 0) {
			pd_log(PD_LOG_WARN,
			       "lease lost: the stream handler's answer will be dropped",
			       "job=%lld attempt=%d", id, r->job.attempt);
			pd_hold_move(r, PD_HOLD_LOST);
			if (hs->streams)
				pd_stream_abandon(&hs->streams[r->stream], i);
			return;
		}
		pd_log(PD_LOG_WARN, "lease lost: stopping the handler", "job=%lld attempt=%d", id,
		       r->job.attempt);
		if (hs->pool)
			pd_pool_stop(hs->pool, i, PD_STOP_LEASE_LOST);
		return;
	}
	for (int k = 0; k < hs->nready; k++) {
		if (hs->ready[k].job.token != t)
			continue;
		pd_log(PD_LOG_WARN, "lease lost: a ready job dropped before it started",
		       "job=%lld attempt=%d", id, hs->ready[k].job.attempt);
		pd_hold_move(&hs->ready[k], PD_HOLD_LOST);
		pd_holdings_ready_drop(hs, k);
		return;
	}
}

void pd_holdings_cancel(struct pd_holdings *hs, long long id, long long t)
{
	for (int i = 0; i < hs->size; i++) {
		struct pd_hold *r = &hs->run[i];

		if (r->stage == PD_HOLD_NONE || r->job.token != t)
			continue;
		if (r->stage != PD_HOLD_RUNNING)
			return; /* being cancelled already, or abandoned */
		pd_log(PD_LOG_INFO, "cancel asked: stopping the handler", "job=%lld attempt=%d", id,
		       r->job.attempt);
		pd_hold_move(r, PD_HOLD_CANCEL);
		if (r->stream >= 0 && hs->streams)
			pd_stream_cancel(&hs->streams[r->stream], i);
		else if (r->stream < 0 && hs->pool)
			pd_pool_stop(hs->pool, i, PD_STOP_CANCEL);
		return;
	}
	for (int k = 0; k < hs->nready; k++) {
		struct pd_hold *f;

		if (hs->ready[k].job.token != t || hs->ready[k].stage != PD_HOLD_READY)
			continue;
		pd_log(PD_LOG_INFO, "cancel asked: a ready job cancelled before it started",
		       "job=%lld attempt=%d", id, hs->ready[k].job.attempt);
		f = fin_add(hs, &hs->ready[k]);
		memmove(hs->ready + k, hs->ready + k + 1,
			(size_t)(hs->nready - k - 1) * sizeof(*hs->ready));
		hs->nready--;
		pd_hold_move(f, PD_HOLD_CANCEL);
		f->exit.cls = PD_EXIT_CANCELLED;
		f->exit.exit_code = -1; /* started_us 0: never started */
		pd_buf_puts(&f->exit.error, "cancelled");
		return;
	}
}

/* Move every entry of v[0..*n) by ev, and take out those it takes to NONE. */
static void list_apply(struct pd_hold *v, int *n, enum pd_hold_event ev)
{
	int k = 0;

	for (int i = 0; i < *n; i++) {
		pd_hold_move(&v[i], ev);
		if (v[i].stage == PD_HOLD_NONE) {
			hold_clear(&v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	*n = k;
}

void pd_holdings_apply(struct pd_holdings *hs, enum pd_hold_event ev)
{
	for (int i = 0; i < hs->size; i++)
		pd_hold_move(&hs->run[i], ev);
	list_apply(hs->ready, &hs->nready, ev);
	list_apply(hs->fin, &hs->nfin, ev);
}

void pd_holdings_fin_drop(struct pd_holdings *hs, int k)
{
	pd_hold_move(&hs->fin[k], PD_HOLD_DROP);
	hold_clear(&hs->fin[k]);
	memmove(hs->fin + k, hs->fin + k + 1, (size_t)(hs->nfin - k - 1) * sizeof(*hs->fin));
	hs->nfin--;
}
