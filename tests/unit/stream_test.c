/*
 * Unit tests for lib/stream: the answer line parser, and the state machine
 * with real children. cat(1) is the echo handler: each job line comes back
 * as its answer, so a line like {"id":1,"result":{"a":1}} is answered by
 * itself, and a line that is not a good answer makes a bad one.
 */
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "sig.h"
#include "stream.h"
#include "tap.h"

static int sfd;
static struct pd_rng rng;

static void test_parse(void)
{
	static const struct {
		const char *line, *why, *name;
	} bad[] = {
	    {"{\"id\":1,", "invalid JSON at line 1", "truncated JSON is a bad line"},
	    {"[1,2]", "not a JSON object", "an array is a bad line"},
	    {"{\"result\":1}", "no integer \"id\"", "no id is a bad line"},
	    {"{\"id\":\"1\"}", "no integer \"id\"", "a string id is a bad line"},
	    {"{\"id\":1.5}", "no integer \"id\"", "a fractional id is a bad line"},
	    {"{\"id\":1} {\"id\":2}", "invalid JSON", "two objects on a line are a bad line"},
	};
	struct pd_err e = PD_ERR_INIT;
	struct pd_stream_answer a;
	const char *l;

	l = "{\"id\":42,\"result\":{\"a\": [1, 2]}}";
	is_int(pd_stream_parse(l, strlen(l), &a, &e), 1, "an answer with a result parses");
	is_int(a.id, 42, "its id");
	ok(!a.failed, "it succeeded");
	ok(a.result && a.result_len == 13 && memcmp(a.result, "{\"a\": [1, 2]}", 13) == 0,
	   "the result's raw JSON text");

	l = "{\"id\":7}";
	is_int(pd_stream_parse(l, strlen(l), &a, &e), 1, "an answer without a result parses");
	ok(!a.failed && a.result == NULL, "success, no result");
	l = "{\"result\":null,\"id\":7}";
	is_int(pd_stream_parse(l, strlen(l), &a, &e), 1, "a null result parses");
	ok(!a.failed && a.result == NULL, "a null result is no result");
	l = "{\"id\":7,\"result\":\"text\"}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.result_len == 6 && memcmp(a.result, "\"text\"", 6) == 0, "a string result, quoted");

	l = "{\"id\":9,\"progress\":\"40% (4/10)\"}";
	is_int(pd_stream_parse(l, strlen(l), &a, &e), 1, "a progress line parses");
	is_str(a.progress, "40% (4/10)", "a progress line: its note");
	free(a.progress);
	l = "{\"id\":9,\"progress\":40}";
	pd_stream_parse(l, strlen(l), &a, &e);
	is_str(a.progress, "40", "a progress note that is no string: its JSON");
	free(a.progress);
	l = "{\"id\":9,\"progress\":\"x\",\"result\":1}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.progress == NULL && a.result != NULL, "a line with a result is an answer");
	l = "{\"id\":9,\"progress\":\"x\",\"error\":null}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.progress == NULL && !a.failed, "a line with an error member is an answer");

	l = "{\"id\":3,\"error\":\"no such \\\"user\\\"\",\"terminal\":true}";
	is_int(pd_stream_parse(l, strlen(l), &a, &e), 1, "a terminal error parses");
	ok(a.failed && a.terminal, "failed, terminal");
	is_str(a.error, "no such \"user\"", "the error, unescaped");
	free(a.error);
	l = "{\"id\":3,\"error\":\"busy\",\"terminal\":false}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.failed && !a.terminal, "terminal false: retryable");
	free(a.error);
	l = "{\"id\":3,\"error\":\"busy\",\"terminal\":\"yes\"}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.failed && !a.terminal, "only terminal true is terminal");
	free(a.error);
	l = "{\"id\":3,\"error\":{\"code\":5}}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.failed, "an error object fails");
	is_str(a.error, "{\"code\":5}", "its JSON text is the error");
	free(a.error);
	l = "{\"id\":3,\"error\":null,\"result\":1}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(!a.failed && a.result_len == 1, "a null error is no error");

	l = "{\"id\":9,\"snooze\":\"30s\"}";
	is_int(pd_stream_parse(l, strlen(l), &a, &e), 1, "a snooze parses");
	ok(a.snooze && !a.failed && a.snooze_ms == 30000, "snooze 30 s, not failed");
	l = "{\"id\":9,\"snooze\":1.5,\"error\":\"x\"}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.snooze && !a.failed && a.snooze_ms == 1500, "a number of seconds; wins over error");
	l = "{\"id\":9,\"snooze\":null,\"result\":1}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(!a.snooze && !a.failed && a.result_len == 1, "a null snooze is none");
	l = "{\"id\":9,\"snooze\":\"soon\"}";
	is_int(pd_stream_parse(l, strlen(l), &a, &e), 1, "a bad snooze is still an answer");
	ok(a.snooze && a.failed && !a.terminal, "a retryable failure");
	like(a.error, "bad snooze \"soon\": invalid duration 'soon'", "naming it");
	free(a.error);
	l = "{\"id\":9,\"snooze\":\"400d\"}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.failed, "more than a year fails");
	like(a.error, "longer than a year", "said so");
	free(a.error);
	l = "{\"id\":9,\"snooze\":{}}";
	pd_stream_parse(l, strlen(l), &a, &e);
	ok(a.failed, "an object is no duration");
	is_str(a.error, "bad snooze {}: no duration", "said so");
	free(a.error);

	is_int(pd_stream_parse("", 0, &a, &e), 0, "an empty line is skipped");
	is_int(pd_stream_parse(" \t\r", 3, &a, &e), 0, "a blank line is skipped");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		is_int(pd_stream_parse(bad[i].line, strlen(bad[i].line), &a, &e), -1, bad[i].name);
		like(e.msg, bad[i].why, "  with why");
		pd_err_clear(&e);
	}
}

/* The job=ID a stderr line names (found by tests/fuzz/stream_fuzz: IDs past LLONG_MAX overflowed).
 */
static void test_stderr_job(void)
{
	static const struct {
		const char *line;
		int named;
		long long id;
		size_t skip;
	} cases[] = {
	    {"job=42 working", 1, 42, 7},
	    {"job=42", 1, 42, 6},
	    {"job=9223372036854775807 max", 1, LLONG_MAX, 24},
	    {"job=9223372036854775808 over", 0, 0, 0},
	    {"job=55555555555555555555 over", 0, 0, 0},
	    {"job=18446744073709551617 wraps", 0, 0, 0},
	    {"job=000000000000000000001 long", 0, 0, 0},
	    {"job= x", 0, 0, 0},
	    {"job=1x", 0, 0, 0},
	    {"jobs=1 x", 0, 0, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long long id = -1;
		size_t skip = 0;
		int got = pd_stream_stderr_job(cases[i].line, strlen(cases[i].line), &id, &skip);

		is_int(got, cases[i].named, cases[i].line);
		if (cases[i].named) {
			ok(id == cases[i].id, "  its id");
			is_int((int)skip, (int)cases[i].skip, "  its prefix");
		}
	}
}

/* A stream handler running cmd with sh -c. */
static struct pd_handler sh(const char *cmd)
{
	return (struct pd_handler){
	    .name = (char *)"t", .run = (char *)cmd, .timeout_ms = -1, .mode = PD_HANDLER_STREAM};
}

static void init(struct pd_stream *s, const struct pd_handler *h, size_t result_limit)
{
	struct pd_stream_cfg c;

	memset(&c, 0, sizeof(c));
	c.name = "t";
	c.h = h;
	c.result_limit = result_limit;
	c.grace_ms = 500;
	c.rng = &rng;
	pd_stream_init(s, &c);
}

/* Drive s like the worker's loop does until done(s) or limit ms; 1 if done. */
static int drive(struct pd_stream *s, int (*done)(const struct pd_stream *), long long limit_ms)
{
	long long end = pd_now_ms() + limit_ms;

	for (;;) {
		struct pollfd fds[PD_PROC_MAX_FDS + 1];
		long long dl, now;
		int n, timeout;

		pd_stream_tick(s, pd_now_ms());
		pd_stream_flush(s);
		if (done(s))
			return 1;
		now = pd_now_ms();
		if (now >= end)
			return 0;
		n = pd_stream_pollfds(s, fds + 1, PD_PROC_MAX_FDS);
		dl = pd_stream_deadline(s);
		fds[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
		timeout = dl < 0 ? 50 : dl <= now ? 0 : (int)(dl - now);
		if (timeout > 50)
			timeout = 50;
		if (poll(fds, (nfds_t)n + 1, timeout) > 0) {
			if (fds[0].revents) {
				pid_t pid;
				int st;

				while (pd_sig_read(sfd) > 0)
					;
				while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
					pd_stream_reap(s, pid, st);
			}
			pd_stream_io(s, fds + 1, n);
		}
	}
}

static int none_in_flight(const struct pd_stream *s)
{
	return pd_stream_inflight(s) == 0;
}

static int idle(const struct pd_stream *s)
{
	return s->state == PD_STREAM_IDLE;
}

static int backoff(const struct pd_stream *s)
{
	return s->state == PD_STREAM_BACKOFF;
}

static int an_outcome(const struct pd_stream *s)
{
	return pd_stream_outcomes(s) > 0;
}

static int live(const struct pd_stream *s)
{
	return pd_stream_live(s);
}

/* Jobs written to the process. */
static int written(const struct pd_stream *s)
{
	int n = 0;

	for (int k = 0; k < s->njobs; k++)
		n += s->jobs[k].written;
	return n;
}

static int send(struct pd_stream *s, long long id, int tag, long long timeout_ms, const char *line)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "job=%lld attempt=1", id);
	return pd_stream_send(s, id, tag, prefix, timeout_ms, line, strlen(line));
}

/* Take the next outcome; its class, or -1 when there is none. */
static int take(struct pd_stream *s, int *tag, struct pd_pool_exit *x)
{
	memset(x, 0, sizeof(*x));
	return pd_stream_take(s, tag, x) ? (int)x->cls : -1;
}

static void test_answers(void)
{
	struct pd_handler h = sh("exec cat");
	struct pd_stream s;
	struct pd_pool_exit x;
	int tag, seen = 0;
	pid_t pid;

	init(&s, &h, 0);
	is_int(s.state, PD_STREAM_IDLE, "a new stream is IDLE, no process");
	ok(pd_stream_can_take(&s, 1), "it takes a job");
	is_int(send(&s, 1, 10, 0, "{\"id\":1,\"result\":{\"a\":1}}"), 0, "the first job starts it");
	is_int(s.state, PD_STREAM_READY, "READY");
	pid = s.proc.pid;
	ok(!pd_stream_can_take(&s, 1), "a second job with the same id waits");
	send(&s, 2, 11, 0, "{\"id\":2,\"error\":\"bad input\",\"terminal\":true}");
	send(&s, 3, 12, 0, "{\"id\":3,\"error\":\"busy\"}");
	send(&s, 4, 13, 0, "{\"id\":4}");
	is_int(pd_stream_inflight(&s), 4, "four in flight");
	ok(drive(&s, none_in_flight, 5000), "all four answered");
	is_int(pd_stream_outcomes(&s), 4, "four outcomes");
	for (int k = 0; k < 4; k++) {
		int cls = take(&s, &tag, &x);

		switch (tag) {
		case 10:
			ok(cls == PD_EXIT_OK && strcmp(pd_buf_str(&x.out), "{\"a\":1}") == 0,
			   "job 1 succeeded with its result");
			break;
		case 11:
			ok(cls == PD_EXIT_TERMINAL &&
			       strcmp(pd_buf_str(&x.error), "bad input") == 0,
			   "job 2 failed terminally with its error");
			break;
		case 12:
			ok(cls == PD_EXIT_FAILED && strcmp(pd_buf_str(&x.error), "busy") == 0,
			   "job 3 failed, retryable");
			break;
		case 13:
			ok(cls == PD_EXIT_OK && x.out.len == 0, "job 4 succeeded without a result");
			break;
		}
		ok(x.exit_code == -1 && x.started_us > 0 && x.ran_us >= 0,
		   "no exit code, a run time");
		seen |= 1 << (tag - 10);
		pd_pool_exit_release(&x);
	}
	is_int(seen, 15, "each job exactly once");
	is_int(take(&s, &tag, &x), -1, "no more outcomes");
	is_int(s.state, PD_STREAM_READY, "still READY");
	is_int(s.proc.pid, pid, "the same process");
	ok(pd_stream_can_take(&s, 1), "id 1 may come again");

	/* a result longer than the limit is cut and flagged */
	pd_stream_release(&s);
	init(&s, &h, 8);
	send(&s, 5, 5, 0, "{\"id\":5,\"result\":\"0123456789abcdef\"}");
	ok(drive(&s, none_in_flight, 5000), "a long result is answered");
	take(&s, &tag, &x);
	ok(x.cls == PD_EXIT_OK && x.out_truncated && x.out.len == 8, "cut at the limit, flagged");
	pd_pool_exit_release(&x);

	/* closing: end of file, the process exits, IDLE (no backoff) */
	pd_stream_close(&s);
	is_int(s.state, PD_STREAM_CLOSING, "close with nothing in flight: CLOSING");
	ok(drive(&s, idle, 5000), "cat exits at end of file: IDLE");
	is_int(s.failures, 0, "no failure counted");
	ok(!pd_stream_live(&s), "no process");
	send(&s, 6, 6, 0, "{\"id\":6}");
	is_int(s.state, PD_STREAM_READY, "the next job starts a new process");
	ok(drive(&s, none_in_flight, 5000), "and it answers");
	take(&s, &tag, &x);
	pd_pool_exit_release(&x);
	pd_stream_release(&s);
	ok(!pd_stream_live(&s) && s.state == PD_STREAM_IDLE, "released: IDLE, nothing running");
}

static void test_bad_lines(void)
{
	struct pd_handler h = sh("exec cat");
	struct pd_stream s;
	struct pd_pool_exit x;
	int tag;

	init(&s, &h, 0);
	send(&s, 1, 1, 0, "{\"id\":1}");
	send(&s, 2, 2, 0, "{\"id\":99}");
	send(&s, 3, 3, 0, "{\"id\":3}");
	ok(drive(&s, backoff, 5000), "an answer for an unknown id: BACKOFF once it is gone");
	is_int(s.failures, 1, "one failure");
	ok(s.restart_at >= pd_now_ms() - 1000, "a restart time");
	ok(!pd_stream_can_take(&s, 4), "BACKOFF takes no job");
	/* job 1 may have been answered before the bad line came; 2 and 3 are suspects */
	ok(drive(&s, none_in_flight, 10000), "the suspects, one at a time, all get an outcome");
	{
		int n = 0, cls;

		while ((cls = take(&s, &tag, &x)) >= 0) {
			n++;
			if (tag == 2) {
				is_int(cls, PD_EXIT_FAILED, "the job with the bad answer: FAILED");
				like(x.error.data,
				     "stream handler protocol error: an answer for job 99",
				     "the error names the bad answer");
			} else {
				is_int(cls, PD_EXIT_OK, "the others: answered");
			}
			pd_pool_exit_release(&x);
		}
		is_int(n, 3, "every job got an outcome");
	}
	ok(drive(&s, idle, 5000), "IDLE again after the backoff");
	ok(pd_stream_can_take(&s, 4), "and takes jobs again");

	send(&s, 4, 4, 0, "not JSON");
	ok(drive(&s, backoff, 5000), "a line that is not JSON: BACKOFF");
	is_int(take(&s, &tag, &x), PD_EXIT_FAILED, "its job failed, retryable");
	like(x.error.data, "invalid JSON", "the error says why");
	pd_pool_exit_release(&x);
	is_int(s.failures, 2, "two failures in a row");
	pd_stream_release(&s);

	/* a line longer than the limit allows */
	init(&s, &h, 100);
	{
		size_t n = s.line_max + 100;
		char *big = malloc(n + 1);

		memset(big, 'x', n);
		big[n] = '\0';
		send(&s, 5, 5, 0, big);
		free(big);
	}
	ok(drive(&s, backoff, 10000), "a line longer than the limit: BACKOFF");
	is_int(take(&s, &tag, &x), PD_EXIT_FAILED, "its job failed");
	like(x.error.data, "a line longer than", "the error says why");
	pd_pool_exit_release(&x);
	pd_stream_release(&s);
}

static void test_exit_and_timeout(void)
{
	struct pd_handler quits = sh("read l; echo 'dying' >&2; exit 3");
	struct pd_handler hangs = sh("exec sleep 30");
	struct pd_handler missing;
	char *argv[] = {(char *)"/nonexistent/handler", NULL};
	struct pd_stream s;
	struct pd_pool_exit x;
	int tag, cls;

	init(&s, &quits, 0);
	send(&s, 1, 1, 0, "{\"id\":1}");
	ok(drive(&s, backoff, 5000), "a handler that exits: BACKOFF");
	cls = take(&s, &tag, &x);
	ok(cls == PD_EXIT_FAILED && x.exit_code == 3, "the job alone in flight failed, its status");
	is_str(x.error.data, "stream handler exited with status 3 while running this job",
	       "the error");
	like(x.tail.data, "dying", "the handler's stderr tail");
	pd_pool_exit_release(&x);
	pd_stream_release(&s);

	/* dies with two in flight: neither is charged; re-sent alone, each is */
	init(&s, &quits, 0);
	send(&s, 1, 1, 0, "{\"id\":1}");
	send(&s, 2, 2, 0, "{\"id\":2}");
	ok(drive(&s, backoff, 5000), "a handler that exits with two in flight: BACKOFF");
	is_int(pd_stream_outcomes(&s), 0, "no outcome: no job charged");
	is_int(pd_stream_inflight(&s), 2, "both still in flight, as suspects");
	ok(!pd_stream_can_take(&s, 3), "no new job while suspects wait");
	ok(drive(&s, live, 5000), "restarted by itself");
	is_int(written(&s), 1, "one suspect written");
	ok(drive(&s, none_in_flight, 10000), "each suspect dies alone");
	for (int k = 0; k < 2; k++) {
		cls = take(&s, &tag, &x);
		ok(cls == PD_EXIT_FAILED && x.exit_code == 3, "charged alone");
		is_str(x.error.data, "stream handler exited with status 3 while running this job",
		       "the error");
		pd_pool_exit_release(&x);
	}
	is_int(s.failures, 3, "three failures in a row");
	pd_stream_release(&s);

	init(&s, &hangs, 0);
	send(&s, 1, 1, 200, "{\"id\":1}");
	send(&s, 2, 2, 0, "{\"id\":2}");
	ok(pd_stream_deadline(&s) > 0, "a deadline: the job's timeout");
	ok(drive(&s, an_outcome, 5000), "the timeout fires");
	is_int(s.state, PD_STREAM_STOPPING, "the process is being stopped");
	is_int(take(&s, &tag, &x), PD_EXIT_TIMEOUT, "the job over its timeout: TIMEOUT");
	is_int(tag, 1, "job 1");
	is_str(x.error.data, "timeout after 200ms", "its error");
	pd_pool_exit_release(&x);
	is_int(take(&s, &tag, &x), -1, "the other job: no outcome");
	is_int(pd_stream_inflight(&s), 1, "still in flight, to be re-sent");
	ok(drive(&s, backoff, 5000), "then BACKOFF");
	ok(drive(&s, live, 5000), "then restarted for the job to re-send");
	is_int(written(&s), 1, "which is written to the new process");
	pd_stream_stop(&s, PD_STOP_DRAIN);
	is_int(take(&s, &tag, &x), PD_EXIT_DRAINED, "and released by a drain");
	pd_pool_exit_release(&x);
	ok(drive(&s, idle, 5000), "then IDLE");
	pd_stream_release(&s);

	/* drain: jobs in flight are released, the process stopped, IDLE after */
	init(&s, &hangs, 0);
	send(&s, 1, 1, 0, "{\"id\":1}");
	pd_stream_stop(&s, PD_STOP_DRAIN);
	is_int(take(&s, &tag, &x), PD_EXIT_DRAINED, "a drain stop: DRAINED");
	pd_pool_exit_release(&x);
	ok(drive(&s, idle, 5000), "IDLE once it is gone, no backoff");
	is_int(s.failures, 0, "no failure");
	pd_stream_release(&s);

	/* a program that cannot start */
	missing = sh(NULL);
	missing.run = NULL;
	missing.exec_argv = argv;
	init(&s, &missing, 0);
	is_int(send(&s, 1, 1, 0, "{\"id\":1}"), -1, "a missing program: send fails");
	is_int(s.state, PD_STREAM_BACKOFF, "BACKOFF");
	is_int(take(&s, &tag, &x), PD_EXIT_CANNOT_RUN, "the job: CANNOT_RUN (terminal)");
	like(x.error.data, "cannot run /nonexistent/handler: No such file",
	     "with the reason naming the path");
	pd_pool_exit_release(&x);
	pd_stream_release(&s);
}

static void test_abandon_and_stderr(void)
{
	/* 18446744073709551617 is 2^64 + 1: an id that overflows, not job 1. */
	struct pd_handler h =
	    sh("while IFS= read -r l; do echo 'job=18446744073709551617 wraps' >&2; "
	       "echo 'job=99999999999999999999 too big' >&2; "
	       "echo \"job=1 working on it\" >&2; "
	       "echo 'unnamed line' >&2; printf '%s\\n' \"$l\"; done");
	struct pd_stream s;
	struct pd_pool_exit x;
	int tag;

	init(&s, &h, 0);
	send(&s, 1, 1, 0, "{\"id\":1,\"result\":true}");
	ok(drive(&s, none_in_flight, 5000), "answered");
	is_int(take(&s, &tag, &x), PD_EXIT_OK, "succeeded");
	is_str(x.tail.data, "working on it\n",
	       "the stderr line naming the job is its tail; an id beyond 64 bits names none");
	pd_pool_exit_release(&x);

	send(&s, 2, 2, 0, "{\"id\":2}");
	pd_stream_abandon(&s, 2);
	ok(!pd_stream_can_take(&s, 2), "an abandoned job is still in flight");
	ok(drive(&s, none_in_flight, 5000), "its answer comes");
	is_int(take(&s, &tag, &x), PD_EXIT_LEASE_LOST, "reported as LEASE_LOST");
	pd_pool_exit_release(&x);
	is_int(s.state, PD_STREAM_READY, "the process goes on");
	pd_stream_release(&s);
}

static int two_written(const struct pd_stream *s)
{
	return written(s) == 2;
}

/*
 * An operator's cancel: the process gets {"cancel":ID}. Job 1's cancel is
 * answered (with an error): CANCELLED. Job 2's is not (the handler answers
 * it only with the next job): CANCELLED after the grace, its late answer
 * dropped, not a bad line; the process goes on.
 */
static void test_cancel(void)
{
	struct pd_handler h = sh("late=; while IFS= read -r l; do case \"$l\" in "
				 "'{\"cancel\":1}') echo '{\"id\":1,\"error\":\"stopped\"}';; "
				 "'{\"cancel\":2}') late=2;; "
				 "*) [ -n \"$late\" ] && echo \"{\\\"id\\\":$late}\"; late=; "
				 "case \"$l\" in *quick*) printf '%s\\n' \"$l\";; esac;; "
				 "esac; done");
	struct pd_stream s;
	struct pd_pool_exit x;
	long long t0;
	int tag;

	init(&s, &h, 0);
	send(&s, 1, 1, 0, "{\"id\":1}");
	send(&s, 2, 2, 0, "{\"id\":2}");
	ok(drive(&s, two_written, 5000), "two jobs in flight");
	pd_stream_cancel(&s, 1);
	ok(drive(&s, an_outcome, 5000), "job 1's cancel answered");
	is_int(take(&s, &tag, &x), PD_EXIT_CANCELLED, "CANCELLED, whatever the answer said");
	is_int(tag, 1, "job 1");
	pd_pool_exit_release(&x);

	t0 = pd_now_ms();
	pd_stream_cancel(&s, 2);
	ok(drive(&s, an_outcome, 5000), "job 2's cancel not answered: over anyway");
	ok(pd_now_ms() - t0 >= 450, "after the grace (500 ms)");
	is_int(take(&s, &tag, &x), PD_EXIT_CANCELLED, "CANCELLED");
	is_int(tag, 2, "job 2");
	like(x.error.data, "no answer within the kill grace", "saying so");
	pd_pool_exit_release(&x);
	is_int(pd_stream_inflight(&s), 0, "nothing in flight: job 2 is a ghost");
	ok(!pd_stream_can_take(&s, 2), "its id is not taken until its answer comes");

	send(&s, 3, 2, 0, "{\"id\":3,\"quick\":1}");
	ok(drive(&s, an_outcome, 5000), "the next job is answered");
	is_int(take(&s, &tag, &x), PD_EXIT_OK, "succeeded: the late answer was dropped");
	is_int(tag, 2, "the run's tag reused");
	pd_pool_exit_release(&x);
	is_int(s.state, PD_STREAM_READY, "the process goes on: no protocol error");
	is_int(s.njobs, 0, "the ghost gone with its answer");
	pd_stream_release(&s);
}

/*
 * A handler that answers every job but exits when it reads job 3: among
 * jobs 1 to 6 all written at once, only job 3 is charged; the others are
 * answered, none charged. While suspects wait, nothing new is written.
 */
static void test_isolation(void)
{
	struct pd_handler h = sh("while IFS= read -r l; do case $l in *'\"id\":3'*) exit 5;; esac; "
				 "printf '%s\\n' \"$l\"; sleep 0.01; done");
	struct pd_stream s;
	struct pd_pool_exit x;
	int tag, cls, ok_n = 0, charged = 0;
	char line[64];

	init(&s, &h, 0);
	for (int id = 1; id <= 6; id++) {
		snprintf(line, sizeof(line), "{\"id\":%d}", id);
		send(&s, id, id, 0, line);
	}
	ok(drive(&s, none_in_flight, 20000), "every job gets an outcome");
	while ((cls = take(&s, &tag, &x)) >= 0) {
		if (tag == 3) {
			charged++;
			is_int(cls, PD_EXIT_FAILED, "the poison job: FAILED");
			is_str(x.error.data,
			       "stream handler exited with status 5 while running this job",
			       "  with its reason");
		} else {
			ok_n += cls == PD_EXIT_OK;
		}
		pd_pool_exit_release(&x);
	}
	is_int(charged, 1, "the poison job charged once");
	is_int(ok_n, 5, "the five others answered");
	ok(pd_stream_can_take(&s, 7), "new jobs taken again");
	pd_stream_release(&s);

	/* suspects waiting: a drain gives them back; a lost lease drops one */
	init(&s, &h, 0);
	for (int id = 3; id <= 5; id++) {
		snprintf(line, sizeof(line), "{\"id\":%d}", id);
		send(&s, id, id, 0, line);
	}
	ok(drive(&s, backoff, 5000), "died with three in flight");
	is_int(pd_stream_inflight(&s), 3, "three suspects");
	pd_stream_abandon(&s, 4);
	is_int(take(&s, &tag, &x), PD_EXIT_LEASE_LOST, "a suspect whose lease is lost: over now");
	is_int(tag, 4, "job 4");
	pd_pool_exit_release(&x);
	pd_stream_give_back(&s);
	for (int k = 0; k < 2; k++) {
		is_int(take(&s, &tag, &x), PD_EXIT_DRAINED, "given back: DRAINED");
		pd_pool_exit_release(&x);
	}
	is_int(pd_stream_inflight(&s), 0, "none left");
	pd_stream_release(&s);
}

int main(void)
{
	struct pd_err e = PD_ERR_INIT;

	pd_log_set_level(PD_LOG_ERROR);
	pd_sig_ignore_pipe();
	pd_rng_seed(&rng, 1);
	sfd = pd_sig_open((int[]){SIGCHLD}, 1, &e);
	ok(sfd >= 0, "signalfd for SIGCHLD");
	test_parse();
	test_stderr_job();
	test_answers();
	test_bad_lines();
	test_exit_and_timeout();
	test_abandon_and_stderr();
	test_isolation();
	test_cancel();
	ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "no child left");
	close(sfd);
	return done_testing();
}
