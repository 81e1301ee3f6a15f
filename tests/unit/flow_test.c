/* flow_test: pd_flow_plan, the decision a workflow job makes from its run's context. */
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "tap.h"

static struct pd_flow_step steps[] = {
    {.name = "reserve", .kind = PD_FLOW_STEP_RUN, .h = {.name = "reserve", .run = "true"}},
    {.name = "approval",
     .kind = PD_FLOW_STEP_WAIT,
     .signal = "approved",
     .wait_ms = 3 * 86400000LL},
    {.name = "cool-off", .kind = PD_FLOW_STEP_SLEEP, .sleep_ms = 3600000},
    {.name = "charge", .kind = PD_FLOW_STEP_RUN, .h = {.name = "charge", .run = "true"}},
};
static const struct pd_flow def = {"place-order", steps, 4};

/* Plan ctx for def (or none); returns the action, p kept for more checks. */
static enum pd_flow_action plan(const struct pd_flow *d, const char *ctx, struct pd_flow_plan *p)
{
	*p = (struct pd_flow_plan)PD_FLOW_PLAN_INIT;
	pd_flow_plan(d, "place-order", ctx, p);
	return p->action;
}

int main(void)
{
	struct pd_flow_plan p;

	is_int(plan(&def,
		    "{\"run\": 7, \"position\": 0, \"steps\": null, \"stdin\": {\"input\": 1, "
		    "\"outputs\": {}}, \"signals\": {}}",
		    &p),
	       PD_FLOW_RUN, "position 0 of a fresh run: run the first step");
	is_str(p.stdin_json.data, "{\"input\": 1, \"outputs\": {}}", "its stdin is the context's");
	is_str(p.steps.data, "[\"reserve\",\"approval\",\"cool-off\",\"charge\"]",
	       "the definition's names, for the run to record");
	is_int(p.run, 7, "the run id");
	is_int(p.last, 0, "not the last step");
	ok(p.s == &steps[0], "the step is the first");
	pd_flow_plan_release(&p);

	is_int(plan(&def,
		    "{\"run\": 7, \"position\": 1, \"steps\": [\"reserve\", \"approval\"], "
		    "\"signals\": {}, \"wait_expired\": false}",
		    &p),
	       PD_FLOW_PARK, "wait_for without its signal: park");
	pd_flow_plan_release(&p);

	is_int(plan(&def,
		    "{\"run\": 7, \"position\": 1, \"steps\": [\"reserve\", \"approval\"], "
		    "\"signals\": {\"other\": 1, \"approved\": {\"by\": \"ann\"}}}",
		    &p),
	       PD_FLOW_ADVANCE, "wait_for with its signal in the mailbox: complete it");
	is_str(p.output.data, "{\"by\": \"ann\"}", "the signal's payload is the output");
	is_int(p.consumes_signal, 1, "the signal is consumed");
	pd_flow_plan_release(&p);

	is_int(plan(&def,
		    "{\"run\": 7, \"position\": 1, \"steps\": null, \"signals\": {}, "
		    "\"wait_expired\": true}",
		    &p),
	       PD_FLOW_FAIL, "wait_for past its deadline: fail");
	is_str(p.reason.data, "step 'approval' timed out after 3d waiting for signal 'approved'",
	       "the reason names the step, the timeout and the signal");
	is_int(p.unpark, 1, "and undoes the wait, for a replay to wait anew");
	pd_flow_plan_release(&p);

	steps[1].on_timeout_continue = 1;
	is_int(plan(&def, "{\"run\": 7, \"position\": 1, \"signals\": {}, \"wait_expired\": true}",
		    &p),
	       PD_FLOW_ADVANCE, "on_timeout: continue: the step completes with null");
	is_str(p.output.data, "null", "a null output");
	steps[1].on_timeout_continue = 0;
	pd_flow_plan_release(&p);

	is_int(plan(&def, "{\"run\": 7, \"position\": 2}", &p), PD_FLOW_ADVANCE,
	       "a sleep completes at once (the job is due again after it)");
	ok(p.s == &steps[2], "the sleep step");
	pd_flow_plan_release(&p);

	is_int(plan(&def, "{\"run\": 7, \"position\": 3, \"stdin\": {}}", &p), PD_FLOW_RUN,
	       "the last step runs");
	is_int(p.last, 1, "and is the last");
	pd_flow_plan_release(&p);

	is_int(plan(&def, "{\"run\": 7, \"position\": 4, \"last_output\": {\"paid\": true}}", &p),
	       PD_FLOW_FINISH, "past the last step: finish");
	is_str(p.output.data, "{\"paid\": true}", "with the last output");
	pd_flow_plan_release(&p);

	is_int(plan(&def,
		    "{\"run\": 7, \"position\": 2, \"steps\": [\"reserve\", \"approval\", "
		    "\"cool-off\", \"charge\", \"ship\"]}",
		    &p),
	       PD_FLOW_ADVANCE, "names past the position are not compared");
	pd_flow_plan_release(&p);

	is_int(plan(&def, "{\"run\": 7, \"position\": 2, \"steps\": [\"a\", \"approval\"]}", &p),
	       PD_FLOW_FAIL, "a step removed before the position: fail");
	is_str(p.reason.data,
	       "workflow 'place-order' changed under the run: step 1 'a' is no longer in the "
	       "definition",
	       "naming the step that is gone");
	pd_flow_plan_release(&p);

	is_int(
	    plan(&def, "{\"run\": 7, \"position\": 1, \"steps\": [\"approval\", \"reserve\"]}", &p),
	    PD_FLOW_FAIL, "steps reordered: fail");
	is_str(p.reason.data,
	       "workflow 'place-order' changed under the run: step 1 is 'approval' in the run but "
	       "'reserve' in the definition (step 'approval' moved to 2)",
	       "naming both");
	pd_flow_plan_release(&p);

	is_int(
	    plan(&def, "{\"run\": 7, \"position\": 1, \"steps\": [\"reserve\", \"renamed\"]}", &p),
	    PD_FLOW_FAIL, "the step at the position renamed: fail");
	pd_flow_plan_release(&p);

	is_int(plan(NULL, "{\"run\": 7, \"position\": 0}", &p), PD_FLOW_RETRY,
	       "no definition here: retry");
	is_str(p.reason.data,
	       "workflow 'place-order' is not defined in this worker's configuration", "saying so");
	pd_flow_plan_release(&p);

	is_int(plan(&def, "{\"position\": 0}", &p), PD_FLOW_RETRY, "a context without a run");
	pd_flow_plan_release(&p);
	is_int(plan(&def, "not json", &p), PD_FLOW_RETRY, "a context that is not JSON");
	like(p.reason.data, "invalid JSON at line 1", "the parser's message");
	pd_flow_plan_release(&p);

	is_int(plan(&def, NULL, &p), PD_FLOW_FAIL, "a workflow job without a run: fail");
	is_str(p.reason.data,
	       "no workflow run drives this job: start runs of 'place-order' with pd-enqueue "
	       "--workflow or pendulum.start_workflow",
	       "saying how runs start");
	ok(p.s == NULL, "no step");
	pd_flow_plan_release(&p);

	ok(pd_flow_find(&def, 1, "place-order") == &def, "pd_flow_find: by name");
	ok(pd_flow_find(&def, 1, "place") == NULL, "pd_flow_find: exact names only");
	return done_testing();
}
