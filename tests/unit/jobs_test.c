/*
 * jobs_test: lib/jobs without PostgreSQL. The JSON parameters of a round
 * trip (pd_trip_json: outcomes with their defaults left out, every kind,
 * snoozes, workflow writes, hook events, progress notes; escaping, NUL and
 * invalid UTF-8 in error text, huge values, empty batches), the arrays of
 * pd_trip_array, and what pd_jobs_sync_collect reads back from the results
 * (built with libpq's PQmakeEmptyPGresult, no server): each finish row
 * matched to its outcome by binary search (any order, duplicates, rows for
 * no outcome, none), the fenced-off count, the heartbeat's held and cancel
 * flags, and the claim's rows (NULL columns, the cursor-only row, the fair
 * cursor replaced or kept).
 *
 * With PD_PG_URL (scripts/check exports it), the same against PostgreSQL,
 * in a database of this test's own (created, migrated, dropped): one job
 * twice in a batch under two tokens, each outcome told its own fate, and
 * text with quotes, control characters and invalid UTF-8 stored as sent.
 * Without it those cases are skipped (TAP skip): make unit needs no server.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "handler.h"
#include "jobs.h"
#include "json.h"
#include "log.h"
#include "migrate.h"
#include "tap.h"

/* A trip of n items, zeroed, kind k each (changed by the caller). */
static void trip_init(struct pd_trip *t, int n)
{
	memset(t, 0, sizeof(*t));
	t->items = pd_xcalloc((size_t)n + 1, sizeof(*t->items));
	t->n = n;
	t->cap = n;
	t->fi = t->bi = t->ci = -1;
}

/* Item i: the outcome of job id under token, a plain success. */
static struct pd_outcome *outcome(struct pd_trip *t, int i, long long id, long long token)
{
	struct pd_trip_item *it = &t->items[i];

	memset(it, 0, sizeof(*it));
	it->kind = PD_TRIP_OUTCOME;
	it->id = it->out.id = id;
	it->token = it->out.token = token;
	it->out.o.kind = PD_VERDICT_DONE;
	it->out.o.outcome = "succeeded";
	it->out.o.exit_code = 0;
	it->out.o.started_ago_ms = -1;
	it->out.o.flow.wait_ms = -1;
	t->noutcomes++;
	return &it->out.o;
}

/* The outcomes array of t, as pd_jobs_sync_send sends it. */
static void outcomes_are(const struct pd_trip *t, const char *want, const char *name)
{
	struct pd_trip_json j;

	pd_trip_json(t, &j);
	is_str(j.outcomes.len ? j.outcomes.data : "", want, name);
	pd_trip_json_release(&j);
}

/* One outcome o of job 1, token 2, alone in a trip: its JSON object in an array. */
static void one_is(const struct pd_outcome *o, const char *want, const char *name)
{
	struct pd_trip t;

	trip_init(&t, 1);
	*outcome(&t, 0, 1, 2) = *o;
	outcomes_are(&t, want, name);
	free(t.items);
}

static struct pd_outcome plain(enum pd_verdict kind, const char *outcome_name)
{
	struct pd_outcome o;

	memset(&o, 0, sizeof(o));
	o.kind = kind;
	o.outcome = outcome_name;
	o.exit_code = -1;
	o.started_ago_ms = -1;
	o.flow.wait_ms = -1;
	return o;
}

static void test_outcome_json(void)
{
	struct pd_outcome o;
	char big[20000];

	o = plain(PD_VERDICT_DONE, "succeeded");
	o.exit_code = 0;
	one_is(&o,
	       "[{\"id\":1,\"token\":2,\"kind\":\"succeeded\",\"outcome\":\"succeeded\","
	       "\"exit_code\":0}]",
	       "a plain success: the defaults left out");

	o = plain(PD_VERDICT_DONE, "succeeded");
	o.result = "{\"a\": [1, 2]}";
	o.result_is_text = 1;
	o.result_truncated = 1;
	o.started_ago_ms = 0;
	one_is(&o,
	       "[{\"id\":1,\"token\":2,\"kind\":\"succeeded\",\"result\":{\"a\": [1, 2]},"
	       "\"result_is_text\":true,\"result_truncated\":true,\"outcome\":\"succeeded\","
	       "\"started_ago_ms\":0}]",
	       "a success with a result (as it is), its flags, and a start 0 ms ago");

	o = plain(PD_VERDICT_RETRY, "failed");
	o.backoff_ms = LLONG_MAX;
	o.exit_code = 255;
	o.signal = 9;
	o.error = "exit 255";
	o.stderr_tail = "";
	one_is(&o,
	       "[{\"id\":1,\"token\":2,\"kind\":\"retry\",\"backoff_ms\":9223372036854775807,"
	       "\"error\":\"exit 255\",\"outcome\":\"failed\",\"exit_code\":255,\"signal\":9,"
	       "\"stderr_tail\":\"\"}]",
	       "a retry: the largest backoff, a signal, an empty stderr tail kept");

	o = plain(PD_VERDICT_RETRY, "failed");
	o.backoff_ms = -5;
	one_is(
	    &o,
	    "[{\"id\":1,\"token\":2,\"kind\":\"retry\",\"backoff_ms\":-5,\"outcome\":\"failed\"}]",
	    "a negative backoff is written, not taken for the default");

	o = plain(PD_VERDICT_DEAD, "failed");
	o.dead_reason = "terminal exit code 3";
	o.exit_code = 3;
	o.signal = -1;
	one_is(&o,
	       "[{\"id\":1,\"token\":2,\"kind\":\"dead\",\"dead_reason\":\"terminal exit code "
	       "3\",\"outcome\":\"failed\",\"exit_code\":3}]",
	       "a dead letter: its reason; a negative signal is none");

	o = plain(PD_VERDICT_RELEASE, "released");
	one_is(&o, "[{\"id\":1,\"token\":2,\"kind\":\"release\",\"outcome\":\"released\"}]",
	       "a release");

	o = plain(PD_VERDICT_CANCEL, "cancelled");
	one_is(&o, "[{\"id\":1,\"token\":2,\"kind\":\"cancel\",\"outcome\":\"cancelled\"}]",
	       "a cancel");

	o = plain(PD_VERDICT_SNOOZE, "snoozed");
	o.snooze_ms = 0;
	o.snooze_cap = 0;
	o.backoff_ms = 1000;
	one_is(&o,
	       "[{\"id\":1,\"token\":2,\"kind\":\"snooze\",\"backoff_ms\":1000,"
	       "\"snooze_ms\":0,\"max_snoozes\":0,\"outcome\":\"snoozed\"}]",
	       "a snooze: its duration and cap even at 0");

	o = plain(PD_VERDICT_RETRY, NULL);
	one_is(&o, "[{\"id\":1,\"token\":2,\"kind\":\"retry\",\"outcome\":null}]",
	       "no outcome name: null, never a missing member");

	/* Text the handler wrote: escaped, NUL and invalid UTF-8 replaced. */
	o = plain(PD_VERDICT_RETRY, "failed");
	o.error = "a \"quote\", a \\ and\na newline\ttab \x01 level=error msg=x";
	o.stderr_tail = "bad \xff\xfe utf-8 \xc3\x28 and an overlong \xc0\xaf, good \xc3\xa9";
	one_is(&o,
	       "[{\"id\":1,\"token\":2,\"kind\":\"retry\",\"error\":\"a \\\"quote\\\", a \\\\ "
	       "and\\na newline\\ttab \\u0001 level=error msg=x\",\"outcome\":\"failed\","
	       "\"stderr_tail\":\"bad \xef\xbf\xbd\xef\xbf\xbd utf-8 \xef\xbf\xbd( and an "
	       "overlong \xef\xbf\xbd\xef\xbf\xbd, good \xc3\xa9\"}]",
	       "error and stderr tail: escaped, invalid UTF-8 as U+FFFD");

	/* A huge error: whole, and still one JSON text. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[100] = '"';
	o = plain(PD_VERDICT_RETRY, "failed");
	o.error = big;
	{
		struct pd_trip t;
		struct pd_trip_json j;

		trip_init(&t, 1);
		*outcome(&t, 0, 1, 2) = o;
		pd_trip_json(&t, &j);
		/* [{"id":1,"token":2,"kind":"retry","error":" then "outcome":"failed"}] */
		is_int(j.outcomes.len, 43 + sizeof(big) - 1 + 1 + 22,
		       "a 20 kB error: all of it, its quote escaped");
		ok(j.outcomes.data[43 + 100] == '\\' && j.outcomes.data[43 + 101] == '"',
		   "  the quote in it escaped");
		ok(pd_json_valid_utf8(j.outcomes.data, j.outcomes.len), "  valid UTF-8");
		pd_trip_json_release(&j);
		free(t.items);
	}
}

static void test_flow_json(void)
{
	struct pd_trip t;
	struct pd_trip_json j;
	struct pd_outcome *o;

	trip_init(&t, 3);
	o = outcome(&t, 0, 10, 11);
	o->flow.kind = PD_FLOW_WRITE_STEP;
	o->flow.run = 7;
	o->flow.step = 0;
	o->flow.attempts = 2;
	o->flow.step_name = "reserve \"stock\"";
	o->flow.step_kind = "run";
	o->flow.steps = "[\"reserve \\\"stock\\\"\",\"pay\"]";
	o->flow.output = "{\"ok\":true}";
	o->flow.ran_ms = 1500;
	o->flow.next_key = "pay-db";
	o = outcome(&t, 1, 20, 21);
	o->kind = PD_VERDICT_RETRY;
	o->flow.kind = PD_FLOW_WRITE_PARK;
	o->flow.run = 8;
	o->flow.step = 3;
	o->flow.step_name = "approval";
	o->flow.step_kind = "wait_for";
	o->flow.signal = "approved";
	o->flow.wait_ms = 0;
	o = outcome(&t, 2, 30, 31);
	o->kind = PD_VERDICT_DEAD;
	o->flow.kind = PD_FLOW_WRITE_UNPARK;
	o->flow.run = 9;
	o->flow.step = 1;
	o->flow.last = 1;
	pd_trip_json(&t, &j);
	is_str(j.flows.data,
	       "[{\"run\":7,\"step\":0,\"act\":\"step\",\"attempts\":2,\"token\":11,"
	       "\"ran_ms\":1500,\"sleep_ms\":0,\"name\":\"reserve \\\"stock\\\"\",\"kind\":\"run\","
	       "\"signal\":null,\"steps\":[\"reserve \\\"stock\\\"\",\"pay\"],"
	       "\"output\":{\"ok\":true},\"output_is_text\":false,\"output_truncated\":false},"
	       "{\"run\":8,\"step\":3,\"act\":\"park\",\"attempts\":0,\"token\":21,\"ran_ms\":0,"
	       "\"sleep_ms\":0,\"wait_ms\":0,\"name\":\"approval\",\"kind\":\"wait_for\","
	       "\"signal\":\"approved\",\"steps\":null,\"output\":null,\"output_is_text\":false,"
	       "\"output_truncated\":false},"
	       "{\"run\":9,\"step\":1,\"act\":\"unpark\",\"attempts\":0,\"token\":31,\"ran_ms\":0,"
	       "\"sleep_ms\":0,\"name\":null,\"kind\":null,\"signal\":null,\"steps\":null,"
	       "\"output\":null,\"output_is_text\":false,\"output_truncated\":false}]",
	       "flows: a step, a park (a wait of 0 kept; -1 left out), an unpark");
	is_str(j.outcomes.data,
	       "[{\"id\":10,\"token\":11,\"kind\":\"advance\",\"attempt\":2,"
	       "\"next_key\":\"pay-db\",\"outcome\":\"succeeded\",\"exit_code\":0},"
	       "{\"id\":20,\"token\":21,\"kind\":\"wait\",\"attempt\":0,\"outcome\":\"succeeded\","
	       "\"exit_code\":0},"
	       "{\"id\":30,\"token\":31,\"kind\":\"dead\",\"attempt\":0,\"outcome\":\"succeeded\","
	       "\"exit_code\":0}]",
	       "flows: a step not last advances, a park waits, an unpark is the verdict's");
	is_int(j.back, 1, "flows: an advance may give its job back");
	pd_trip_json_release(&j);

	/* The last step: the job succeeds, whatever the verdict said. */
	t.items[0].out.o.flow.last = 1;
	t.items[0].out.o.kind = PD_VERDICT_RETRY;
	t.n = 1;
	pd_trip_json(&t, &j);
	like(j.outcomes.data, "\"kind\":\"succeeded\"", "flows: the last step succeeds");
	like(j.outcomes.data, "\"next_key\":\"pay-db\"", "  its next_key written still");
	is_int(j.back, 0, "  and nothing goes back");
	pd_trip_json_release(&j);
	free(t.items);
}

static void test_hooks_json(void)
{
	static const struct {
		enum pd_verdict kind;
		enum pd_flow_write_kind flow;
		const char *events;
	} cases[] = {
	    {PD_VERDICT_DONE, PD_FLOW_WRITE_NONE, "[\"success\"]"},
	    {PD_VERDICT_RETRY, PD_FLOW_WRITE_NONE, "[\"dead_letter\",\"failure\"]"},
	    {PD_VERDICT_DEAD, PD_FLOW_WRITE_NONE, "[\"dead_letter\",\"failure\"]"},
	    {PD_VERDICT_RELEASE, PD_FLOW_WRITE_NONE, "[\"dead_letter\"]"},
	    {PD_VERDICT_SNOOZE, PD_FLOW_WRITE_NONE, NULL},
	    {PD_VERDICT_CANCEL, PD_FLOW_WRITE_NONE, NULL},
	    {PD_VERDICT_DONE, PD_FLOW_WRITE_STEP, NULL}, /* advance */
	    {PD_VERDICT_DONE, PD_FLOW_WRITE_PARK, NULL}, /* wait */
	    {PD_VERDICT_DEAD, PD_FLOW_WRITE_UNPARK, "[\"dead_letter\",\"failure\"]"},
	};
	struct pd_trip t;
	struct pd_trip_json j;
	char want[200], name[80];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct pd_outcome *o;

		trip_init(&t, 1);
		o = outcome(&t, 0, 5, 6);
		o->kind = cases[c].kind;
		o->flow.kind = cases[c].flow;
		o->hooks = (1u << PD_HOOK_NEVENTS) - 1;
		pd_trip_json(&t, &j);
		if (cases[c].events)
			snprintf(want, sizeof(want), "[{\"id\":5,\"token\":6,\"events\":%s}]",
				 cases[c].events);
		else
			want[0] = '\0';
		snprintf(name, sizeof(name),
			 "hooks: every event asked, case %zu: those it may fire", c);
		is_str(j.hooks.len ? j.hooks.data : "", want, name);
		pd_trip_json_release(&j);
		free(t.items);
	}

	/* Only the events asked; an outcome without hooks adds nothing. */
	trip_init(&t, 3);
	outcome(&t, 0, 1, 1)->hooks = 1u << PD_HOOK_SUCCESS;
	outcome(&t, 1, 2, 2)->hooks = 0;
	outcome(&t, 2, 3, 3)->hooks = 1u << PD_HOOK_FAILURE; /* a success: no failure */
	t.items[2].out.o.hooks |= 1u << 31;		     /* a bit for no event: ignored */
	pd_trip_json(&t, &j);
	is_str(j.hooks.data, "[{\"id\":1,\"token\":1,\"events\":[\"success\"]}]",
	       "hooks: only the events asked that the kind fires");
	pd_trip_json_release(&j);
	free(t.items);
}

static void test_batches(void)
{
	struct pd_trip t;
	struct pd_trip_json j;

	/* Nothing at all. */
	trip_init(&t, 0);
	pd_trip_json(&t, &j);
	ok(j.notes.len == 0 && j.flows.len == 0 && j.outcomes.len == 0 && j.hooks.len == 0,
	   "an empty trip: no parameter at all");
	is_int(j.back, 0, "  nothing goes back");
	pd_trip_json_release(&j);
	free(t.items);

	/* Starts and beats only: no JSON parameter. */
	trip_init(&t, 2);
	t.items[0].kind = PD_TRIP_START;
	t.items[1].kind = PD_TRIP_BEAT;
	pd_trip_json(&t, &j);
	ok(j.notes.len == 0 && j.flows.len == 0 && j.outcomes.len == 0 && j.hooks.len == 0,
	   "starts and beats: no JSON parameter");
	pd_trip_json_release(&j);
	free(t.items);

	/* Progress notes, odd text included, between other items. */
	trip_init(&t, 4);
	t.items[0].kind = PD_TRIP_PROGRESS;
	t.items[0].id = 1;
	t.items[0].token = 2;
	t.items[0].text = "50% \"done\"\n";
	t.items[1].kind = PD_TRIP_BEAT;
	t.items[2].kind = PD_TRIP_PROGRESS;
	t.items[2].id = 3;
	t.items[2].token = 4;
	t.items[2].text = "";
	t.items[3].kind = PD_TRIP_PROGRESS;
	t.items[3].id = LLONG_MAX;
	t.items[3].token = LLONG_MIN;
	t.items[3].text = NULL;
	pd_trip_json(&t, &j);
	is_str(j.notes.data,
	       "[{\"id\":1,\"token\":2,\"text\":\"50% \\\"done\\\"\\n\"},"
	       "{\"id\":3,\"token\":4,\"text\":\"\"},"
	       "{\"id\":9223372036854775807,\"token\":-9223372036854775808,\"text\":null}]",
	       "progress notes: escaped, empty, NULL, extreme ids");
	is_int(j.outcomes.len, 0, "  no outcome");
	pd_trip_json_release(&j);
	free(t.items);

	/* back: only succeeded, dead and cancel stay off it. */
	trip_init(&t, 3);
	outcome(&t, 0, 1, 1);
	outcome(&t, 1, 2, 2)->kind = PD_VERDICT_DEAD;
	outcome(&t, 2, 3, 3)->kind = PD_VERDICT_CANCEL;
	pd_trip_json(&t, &j);
	is_int(j.back, 0, "succeeded, dead, cancel: nothing goes back");
	pd_trip_json_release(&j);
	for (int k = PD_VERDICT_RETRY; k <= PD_VERDICT_SNOOZE; k++) {
		if (k == PD_VERDICT_DEAD)
			continue;
		t.items[1].out.o.kind = (enum pd_verdict)k;
		pd_trip_json(&t, &j);
		is_int(j.back, 1,
		       k == PD_VERDICT_RETRY	 ? "a retry among them: back"
		       : k == PD_VERDICT_RELEASE ? "a release among them: back"
						 : "a snooze among them: back");
		pd_trip_json_release(&j);
	}
	free(t.items);

	/* Many outcomes: one array, in the items' order. */
	trip_init(&t, 1000);
	for (int i = 0; i < 1000; i++)
		outcome(&t, i, 1000 - i, i);
	pd_trip_json(&t, &j);
	ok(strncmp(j.outcomes.data, "[{\"id\":1000,\"token\":0,", 22) == 0,
	   "1000 outcomes: the first item first");
	like(j.outcomes.data,
	     "{\"id\":1,\"token\":999,\"kind\":\"succeeded\",\"outcome\":"
	     "\"succeeded\",\"exit_code\":0}]",
	     "  the last last, the array closed");
	pd_trip_json_release(&j);
	free(t.items);
}

static void test_trip_array(void)
{
	struct pd_trip t;
	struct pd_buf b = PD_BUF_INIT;

	trip_init(&t, 0);
	pd_trip_array(&b, &t, PD_TRIP_LOST, PD_TRIP_ID);
	is_str(b.data, "{}", "array: an empty trip");
	free(t.items);

	trip_init(&t, 5);
	for (int i = 0; i < 5; i++) {
		t.items[i].kind = i % 2 ? PD_TRIP_BEAT : PD_TRIP_LOST;
		t.items[i].id = i + 1;
		t.items[i].token = -(i + 1);
		t.items[i].attempt = i == 4 ? INT_MAX : i;
		t.items[i].ago_ms = i == 4 ? LLONG_MIN : 0;
	}
	pd_buf_reset(&b);
	pd_trip_array(&b, &t, PD_TRIP_LOST, PD_TRIP_ID);
	is_str(b.data, "{1,3,5}", "array: the ids of one kind only");
	pd_buf_reset(&b);
	pd_trip_array(&b, &t, PD_TRIP_LOST, PD_TRIP_TOKEN);
	is_str(b.data, "{-1,-3,-5}", "array: negative tokens");
	pd_buf_reset(&b);
	pd_trip_array(&b, &t, PD_TRIP_LOST, PD_TRIP_ATTEMPT);
	is_str(b.data, "{0,2,2147483647}", "array: the attempts");
	pd_buf_reset(&b);
	pd_trip_array(&b, &t, PD_TRIP_LOST, PD_TRIP_AGO);
	is_str(b.data, "{0,0,-9223372036854775808}", "array: ago, the smallest");
	pd_buf_reset(&b);
	pd_trip_array(&b, &t, PD_TRIP_START, PD_TRIP_ID);
	is_str(b.data, "{}", "array: a kind with no item");
	pd_buf_reset(&b);
	pd_buf_puts(&b, "x");
	pd_trip_array(&b, &t, PD_TRIP_BEAT, PD_TRIP_ID);
	is_str(b.data, "x{2,4}", "array: appended to what b holds");
	pd_buf_release(&b);
	free(t.items);
}

/* A result of ncols text columns named c0, c1...: no server, no connection. */
static PGresult *result(int ncols)
{
	PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	PGresAttDesc a[16];
	char names[16][8];

	memset(a, 0, sizeof(a));
	for (int i = 0; i < ncols; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d", i);
		a[i].name = names[i];
		a[i].typid = 25;
		a[i].typlen = -1;
		a[i].atttypmod = -1;
	}
	if (r == NULL || !PQsetResultAttrs(r, ncols, a)) {
		printf("Bail out! PQsetResultAttrs\n");
		exit(1);
	}
	return r;
}

/* Row row, column col: v, or NULL (v NULL). */
static void set(PGresult *r, int row, int col, const char *v)
{
	if (!PQsetvalue(r, row, col, (char *)v, v ? (int)strlen(v) : -1)) {
		printf("Bail out! PQsetvalue\n");
		exit(1);
	}
}

/*
 * A finish row (finish_sql's columns): job id, its new state (NULL: not
 * written now), the ms until its run_at (NULL: none), three counts,
 * written before, the token.
 */
static void finish_row(PGresult *r, int row, long long id, const char *state, const char *due,
		       int before, long long token)
{
	char a[24], t[24];

	snprintf(a, sizeof(a), "%lld", id);
	snprintf(t, sizeof(t), "%lld", token);
	set(r, row, 0, a);
	set(r, row, 1, state);
	set(r, row, 2, due);
	set(r, row, 3, "0");
	set(r, row, 4, NULL);
	set(r, row, 5, NULL);
	set(r, row, 6, before ? "t" : "f");
	set(r, row, 7, t);
}

/*
 * Collect t's results, placed where the pipeline would have put them
 * (st[fi], st[bi], st[ci]), without a connection: with nothing in the
 * pipeline (nst 0), pd_jobs_sync_collect reads the results it is given.
 */
static int collect(struct pd_trip *t, PGresult *fin, PGresult *beat, PGresult *claim)
{
	struct pd_err e = PD_ERR_INIT;
	int n = 0, rc;

	t->fi = t->bi = t->ci = -1;
	if (fin)
		t->st[t->fi = n++].res = fin;
	if (beat)
		t->st[t->bi = n++].res = beat;
	if (claim)
		t->st[t->ci = n++].res = claim;
	t->nst = 0;
	t->fenced = 0;
	rc = pd_jobs_sync_collect(NULL, t, &e);
	PQclear(fin);
	PQclear(beat);
	PQclear(claim);
	return rc;
}

static void test_collect_finish(void)
{
	struct pd_trip t;
	PGresult *r;
	int bad = 0;

	/* Rows in another order than the items, one fenced, one written before. */
	trip_init(&t, 5);
	outcome(&t, 0, 30, 300);
	t.items[1].kind = PD_TRIP_BEAT; /* not an outcome: never matched */
	t.items[1].id = 10;
	outcome(&t, 2, 10, 100);
	outcome(&t, 3, 20, 200);
	outcome(&t, 4, 40, 400);
	r = result(8);
	finish_row(r, 0, 40, "PENDING", "1500", 0, 400);
	finish_row(r, 1, 10, "SUCCEEDED", NULL, 0, 100);
	finish_row(r, 2, 20, NULL, NULL, 0, 200);
	finish_row(r, 3, 30, NULL, NULL, 1, 300);
	finish_row(r, 4, 99, "SUCCEEDED", NULL, 0, 990); /* no such outcome */
	is_int(collect(&t, r, NULL, NULL), 1, "collect: results read");
	is_int(t.items[2].out.applied, 1, "job 10: applied");
	is_str(t.items[2].out.state, "SUCCEEDED", "  SUCCEEDED");
	is_int(t.items[2].out.due_in_ms, -1, "  not due again");
	is_int(t.items[4].out.applied, 1, "job 40: applied");
	is_str(t.items[4].out.state, "PENDING", "  PENDING");
	is_int(t.items[4].out.due_in_ms, 1500, "  due in 1.5 s");
	is_int(t.items[3].out.applied, 0, "job 20: not applied");
	is_str(t.items[3].out.state, "", "  no state");
	is_int(t.items[3].out.written_before, 0, "  not written before: fenced off");
	is_int(t.items[0].out.applied, 0, "job 30: not applied");
	is_int(t.items[0].out.written_before, 1, "  written before");
	is_int(t.fenced, 1, "one fenced off: job 20's (job 30's was written before)");
	is_int(t.items[1].out.applied, 0, "the beat of job 10 untouched");
	free(t.items);

	/* No row at all: nothing applied, nothing fenced. */
	trip_init(&t, 2);
	outcome(&t, 0, 1, 1);
	outcome(&t, 1, 2, 2);
	is_int(collect(&t, result(8), NULL, NULL), 1, "collect: no finish row");
	ok(!t.items[0].out.applied && !t.items[1].out.applied, "  nothing applied");
	is_int(t.fenced, 0, "  nothing counted fenced");
	free(t.items);

	/* A trip of no outcome with a finish result of rows: nothing to match. */
	trip_init(&t, 0);
	r = result(8);
	finish_row(r, 0, 1, "SUCCEEDED", NULL, 0, 1);
	is_int(collect(&t, r, NULL, NULL), 1, "collect: rows for no outcome at all");
	is_int(t.fenced, 0, "  nothing counted");
	free(t.items);

	/*
	 * The same job twice in a batch, under two tokens (its lease lost,
	 * the job claimed again by this worker, both runs over before the
	 * batch): each outcome gets its own row, found by id and token.
	 */
	trip_init(&t, 3);
	outcome(&t, 0, 7, 71);
	outcome(&t, 1, 8, 80);
	outcome(&t, 2, 7, 72);
	r = result(8);
	finish_row(r, 0, 7, "SUCCEEDED", NULL, 0, 72);
	finish_row(r, 1, 8, "DEAD_LETTERED", NULL, 0, 80);
	finish_row(r, 2, 7, NULL, NULL, 0, 71);
	is_int(collect(&t, r, NULL, NULL), 1, "collect: one job twice");
	is_int(t.items[0].out.applied, 0, "  token 71's outcome: fenced off");
	is_str(t.items[0].out.state, "", "  no state");
	is_int(t.items[2].out.applied, 1, "  token 72's: applied");
	is_str(t.items[2].out.state, "SUCCEEDED", "  SUCCEEDED");
	is_str(t.items[1].out.state, "DEAD_LETTERED", "  the other job's its own");
	is_int(t.fenced, 1, "  one fenced off");
	free(t.items);

	/* 1000 outcomes, rows in a shuffled order: each finds its own. */
	trip_init(&t, 1000);
	r = result(8);
	for (int i = 0; i < 1000; i++)
		outcome(&t, i, (i * 7919) % 1000 + 1, i + 5000);
	for (int k = 0; k < 1000; k++) {
		int i = (k * 331) % 1000; /* 331 is prime to 1000: a permutation */
		char due[24];

		snprintf(due, sizeof(due), "%d", i);
		finish_row(r, k, t.items[i].out.id, i % 3 ? "PENDING" : NULL, due, 0,
			   t.items[i].out.token);
	}
	is_int(collect(&t, r, NULL, NULL), 1, "collect: 1000 outcomes");
	for (int i = 0; i < 1000; i++)
		bad += t.items[i].out.applied != (i % 3 != 0) ||
		       (i % 3 && t.items[i].out.due_in_ms != i);
	is_int(bad, 0, "  each matched to its row");
	is_int(t.fenced, 334, "  the fenced ones counted");
	free(t.items);
}

static void test_collect_beat(void)
{
	struct pd_trip t;
	PGresult *r;

	trip_init(&t, 4);
	for (int i = 0; i < 4; i++) {
		t.items[i].kind = PD_TRIP_BEAT;
		t.items[i].id = i + 1;
		t.items[i].token = 10 * (i + 1);
		t.items[i].held = t.items[i].cancel = 1; /* from the last heartbeat */
	}
	t.items[3].kind = PD_TRIP_OUTCOME; /* token 40, not a beat */
	r = result(2);
	set(r, 0, 0, "30");
	set(r, 0, 1, "t");
	set(r, 1, 0, "10");
	set(r, 1, 1, "f");
	set(r, 2, 0, "40");
	set(r, 2, 1, "t");
	is_int(collect(&t, NULL, r, NULL), 1, "beat: collected");
	ok(t.items[0].held && !t.items[0].cancel, "beat: token 10 held");
	ok(!t.items[1].held && !t.items[1].cancel, "beat: token 20 lost (no row): reset");
	ok(t.items[2].held && t.items[2].cancel, "beat: token 30 held, a cancel asked");
	ok(!t.items[3].held, "beat: a row for a token of no beat sets nothing");
	is_int(collect(&t, NULL, result(2), NULL), 1, "beat: no row");
	ok(!t.items[0].held && !t.items[2].held, "beat: every lease lost");
	free(t.items);
}

/*
 * A claim row (claim_sql's 15 columns): job id (NULL: a cursor-only
 * row), then the fair cursor in column 14.
 */
static void claim_row(PGresult *r, int row, const char *id, const char *fair)
{
	static const char *const cols[] = {NULL,
					   "5001",
					   "3",
					   "25",
					   "1",
					   "-1",
					   "email",
					   "default",
					   "acme",
					   "{\"to\":\"a\"}",
					   "2026-12-01T00:00:00.000000Z",
					   "key-1",
					   "00-abc-def-01",
					   NULL};

	set(r, row, 0, id);
	if (id)
		for (int c = 1; c < 14; c++)
			set(r, row, c, cols[c]);
	set(r, row, 14, fair);
}

static void test_collect_claim(void)
{
	struct pd_trip t;
	PGresult *r;

	trip_init(&t, 0);
	t.fair = pd_xstrdup("old");

	r = result(15);
	claim_row(r, 0, "42", "{\"q\":1}");
	claim_row(r, 1, "43", "{\"q\":2}");
	is_int(collect(&t, NULL, NULL, r), 1, "claim: collected");
	is_int(t.nclaimed, 2, "claim: two jobs");
	is_int(t.claimed[0].id, 42, "claim: the first's id");
	is_int(t.claimed[0].token, 5001, "  its token");
	is_int(t.claimed[0].attempt, 3, "  attempt");
	is_int(t.claimed[0].max_attempts, 25, "  max attempts");
	is_int(t.claimed[0].replay_count, 1, "  replay count");
	is_int(t.claimed[0].timeout_ms, -1, "  no timeout");
	is_str(t.claimed[0].type, "email", "  type");
	is_str(t.claimed[0].queue, "default", "  queue");
	is_str(t.claimed[0].tenant, "acme", "  tenant");
	is_str(t.claimed[0].payload, "{\"to\":\"a\"}", "  payload");
	is_str(t.claimed[0].run_at, "2026-12-01T00:00:00.000000Z", "  run_at");
	is_str(t.claimed[0].idempotency_key, "key-1", "  idempotency key");
	is_str(t.claimed[0].traceparent, "00-abc-def-01", "  traceparent");
	ok(t.claimed[0].flow == NULL, "  no workflow context: NULL");
	is_str(t.fair, "{\"q\":1}", "claim: the cursor of the first row replaces the old");
	pd_claimed_free(t.claimed, t.nclaimed);

	/* Only a cursor: no job, the cursor moves. */
	r = result(15);
	claim_row(r, 0, NULL, "{\"q\":3}");
	is_int(collect(&t, NULL, NULL, r), 1, "claim: a cursor-only row");
	is_int(t.nclaimed, 0, "  no job");
	ok(t.claimed == NULL, "  no array");
	is_str(t.fair, "{\"q\":3}", "  the cursor replaced");

	/* A NULL cursor keeps the old one; a NULL id row among jobs is skipped. */
	r = result(15);
	claim_row(r, 0, "50", NULL);
	claim_row(r, 1, NULL, NULL);
	claim_row(r, 2, "51", "{\"q\":9}");
	set(r, 2, 8, NULL); /* no tenant */
	set(r, 2, 13, "{\"run\":1}");
	is_int(collect(&t, NULL, NULL, r), 1, "claim: a NULL cursor, a NULL id row");
	is_int(t.nclaimed, 2, "  two jobs, the NULL id skipped");
	is_int(t.claimed[1].id, 51, "  the second job after it");
	ok(t.claimed[1].tenant == NULL, "  a NULL tenant stays NULL");
	is_str(t.claimed[1].flow, "{\"run\":1}", "  its workflow context");
	is_str(t.fair, "{\"q\":3}", "  the cursor kept: the first row has none");
	pd_claimed_free(t.claimed, t.nclaimed);

	/* No row: nothing claimed, the cursor kept. */
	is_int(collect(&t, NULL, NULL, result(15)), 1, "claim: no row");
	is_int(t.nclaimed, 0, "  nothing");
	ok(t.claimed == NULL, "  no array");
	is_str(t.fair, "{\"q\":3}", "  the cursor kept");
	free(t.fair);
	free(t.items);
}

static void skip(int n, const char *why)
{
	for (int i = 0; i < n; i++)
		printf("ok %d # skip %s\n", ++tap_n, why);
}

/* One value of sql (no parameter), or the test stops. */
static char *value(struct pd_db *db, const char *sql)
{
	struct pd_err e = PD_ERR_INIT;
	char *v = NULL;

	if (pd_db_value(db, sql, 0, NULL, &v, &e) < 0) {
		printf("Bail out! %s: %s\n", sql, e.msg);
		exit(1);
	}
	return v;
}

static long long claim_one(struct pd_db *db)
{
	static const char *const queues[] = {"default"};
	struct pd_claimed *c = NULL;
	struct pd_err e = PD_ERR_INIT;
	long long token = 0;
	int n = 0;

	if (pd_jobs_claim(db, "jobs-test", queues, 1, NULL, 0, 1, 60000, 1, &c, &n, &e) < 0) {
		printf("Bail out! claim: %s\n", e.msg);
		exit(1);
	}
	if (n == 1)
		token = c[0].token;
	pd_claimed_free(c, n);
	return token;
}

/* The cases against PostgreSQL, in database name (created: dropped here). */
static void server_cases(struct pd_db *db)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_trip t;
	char *id, *v;
	long long job, a, b, other;
	int requeued, dead, applied;

	pd_log_set_level(PD_LOG_WARN); /* not a line a migration */
	if (pd_migrate_apply(db, &applied, &e) < 0) {
		printf("Bail out! migrate: %s\n", e.msg);
		exit(1);
	}
	/* Job J claimed (token a), its lease expired and reaped, claimed again (b). */
	id = value(db, "INSERT INTO pendulum.jobs (queue, job_type) VALUES ('default', 't')"
		       " RETURNING id");
	job = strtoll(id, NULL, 10);
	free(id);
	a = claim_one(db);
	free(value(db, "UPDATE pendulum.jobs SET lease_expires_at = now() - interval '1 second'"
		       " RETURNING id"));
	if (pd_jobs_reap_leases(db, NULL, 0, 0, &requeued, &dead, NULL, NULL, &e) < 0) {
		printf("Bail out! reap: %s\n", e.msg);
		exit(1);
	}
	b = claim_one(db);
	ok(a > 0 && b > a && requeued == 1, "server: one job claimed twice, reaped between");
	id = value(db, "INSERT INTO pendulum.jobs (queue, job_type) VALUES ('default', 't')"
		       " RETURNING id");
	other = strtoll(id, NULL, 10);
	free(id);
	claim_one(db);

	/* Both outcomes in one batch, the live token's second; and a retry of odd text. */
	trip_init(&t, 3);
	t.worker = "jobs-test";
	t.lease_ms = 60000;
	outcome(&t, 0, job, a)->kind = PD_VERDICT_RETRY;
	t.items[0].out.o.error = "stale";
	outcome(&t, 1, job, b)->result = "{\"n\":1}";
	outcome(&t, 2, other, b + 1)->kind = PD_VERDICT_RETRY;
	t.items[2].out.o.error =
	    "a \"quote\"\n\ttab \x01 \xff\xfe \xc0\xaf level=error msg=x \xc3\xa9";
	t.items[2].out.o.backoff_ms = 3600000;
	if (pd_jobs_sync_send(db, &t, &e) < 0 || pd_jobs_sync_wait(db, &t, &e) < 0) {
		printf("Bail out! sync: %s\n", e.msg);
		exit(1);
	}
	is_int(t.items[0].out.applied, 0, "server: the stale token's outcome not applied");
	is_int(t.items[1].out.applied, 1, "server: the live token's applied");
	is_str(t.items[1].out.state, "SUCCEEDED", "  SUCCEEDED");
	is_int(t.fenced, 1, "server: one fenced off");
	v = value(db, "SELECT state || ' ' || result::text FROM pendulum.jobs WHERE id = "
		      "(SELECT min(id) FROM pendulum.jobs)");
	is_str(v, "SUCCEEDED {\"n\": 1}", "server: the job stored as the live token wrote it");
	free(v);
	is_int(t.items[2].out.applied, 1, "server: the odd text's retry applied");
	is_str(t.items[2].out.state, "PENDING", "  PENDING");
	ok(t.items[2].out.due_in_ms > 3500000, "  due in about an hour");
	v = value(db, "SELECT last_error FROM pendulum.jobs WHERE id = "
		      "(SELECT max(id) FROM pendulum.jobs)");
	is_str(v,
	       "a \"quote\"\n\ttab \x01 \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
	       "level=error msg=x \xc3\xa9",
	       "server: the text stored as sent, invalid UTF-8 as U+FFFD");
	free(v);
	free(t.items);
}

static void test_server(void)
{
	const char *url = getenv("PD_PG_URL");
	struct pd_db base = PD_DB_INIT, db = PD_DB_INIT;
	struct pd_err e = PD_ERR_INIT;
	char name[64], sql[128], conninfo[2048];

	if (url == NULL || *url == '\0') {
		skip(10, "PD_PG_URL not set: no PostgreSQL");
		return;
	}
	snprintf(name, sizeof(name), "jobs_test_%d", (int)getpid());
	snprintf(conninfo, sizeof(conninfo), "%s dbname=%s", url, name);
	if (pd_db_connect(&base, url, "jobs_test", &e) < 0) {
		printf("Bail out! %s\n", e.msg);
		exit(1);
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	if (pd_db_exec(&base, sql, 0, NULL, PGRES_COMMAND_OK, NULL, &e) < 0 ||
	    pd_db_connect(&db, conninfo, "jobs_test", &e) < 0) {
		printf("Bail out! %s\n", e.msg);
		exit(1);
	}
	server_cases(&db);
	pd_db_close(&db);
	snprintf(sql, sizeof(sql), "DROP DATABASE %s", name);
	if (pd_db_exec(&base, sql, 0, NULL, PGRES_COMMAND_OK, NULL, &e) < 0)
		printf("# %s\n", e.msg);
	pd_db_close(&base);
}

int main(void)
{
	test_outcome_json();
	test_flow_json();
	test_hooks_json();
	test_batches();
	test_trip_array();
	test_collect_finish();
	test_collect_beat();
	test_collect_claim();
	test_server();
	return done_testing();
}
