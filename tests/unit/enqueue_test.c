/*
 * enqueue_test: what pd-enqueue checks and writes before it reaches the
 * database: NDJSON lines into jobs (line numbers, keys, defaults), and the
 * two forms the bulk statement reads, the JSON array element and the COPY
 * row with its escapes.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "enqueue.h"
#include "tap.h"

/* Read text as NDJSON over defaults; returns pd_enqueue_ndjson's result, e filled. */
static int ndjson(struct pd_enqueue *q, const struct pd_jobspec *defaults, const char *text,
		  struct pd_err *e)
{
	pd_enqueue_release(q);
	pd_err_clear(e);
	return pd_enqueue_ndjson(q, defaults, text, strlen(text), e);
}

static void refused(const char *text, const char *want)
{
	struct pd_enqueue q;
	struct pd_jobspec d;
	struct pd_err e = PD_ERR_INIT;
	char name[160];

	pd_enqueue_init(&q);
	pd_jobspec_init(&d);
	snprintf(name, sizeof(name), "refused: %.100s", text);
	for (char *c = name; *c; c++)
		if (*c == '\n')
			*c = '|';
	ok(ndjson(&q, &d, text, &e) == -1 && e.code == PD_EX_DATAERR, name);
	is_str(e.msg, want, "  with the message");
	pd_enqueue_release(&q);
}

/*
 * The one job in text as a row of the direct COPY into pendulum.jobs: the
 * columns it gives (want_cols, the COPY's column list) and its row.
 */
static void direct(const char *text, const char *want_cols, const char *want)
{
	struct pd_enqueue q;
	struct pd_jobspec d;
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf b = PD_BUF_INIT;

	pd_enqueue_init(&q);
	pd_jobspec_init(&d);
	if (ok(ndjson(&q, &d, text, &e) == 0 && q.n == 1, "one job")) {
		unsigned cols = pd_jobspec_given(&q.jobs[0]);

		pd_jobspec_copy_cols(cols, &b);
		is_str(b.data, want_cols, "  the columns it gives");
		pd_buf_reset(&b);
		pd_jobspec_copy_job(&q.jobs[0], 7, cols, "2026-01-02T00:00:00Z", 0, &b);
		is_str(b.data, want, "  its row");
	} else {
		diag(e.msg);
	}
	pd_buf_release(&b);
	pd_enqueue_release(&q);
}

/* The one job in text as a COPY row (copy) or as a JSON array element. */
static void written(int copy, const char *text, const char *want)
{
	struct pd_enqueue q;
	struct pd_jobspec d;
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf b = PD_BUF_INIT;

	pd_enqueue_init(&q);
	pd_jobspec_init(&d);
	if (ok(ndjson(&q, &d, text, &e) == 0 && q.n == 1, "one job")) {
		if (copy)
			pd_jobspec_copy(&q.jobs[0], 7, &b);
		else
			pd_jobspec_json(&q.jobs[0], &b);
		is_str(b.data, want, copy ? "  its COPY row" : "  its JSON element");
	} else {
		diag(e.msg);
	}
	pd_buf_release(&b);
	pd_enqueue_release(&q);
}

/* An fd to read text from (a temporary file, rewound). */
static int fd_of(const char *text, size_t len)
{
	FILE *f = tmpfile();

	fwrite(text, 1, len, f);
	fflush(f);
	rewind(f);
	return dup(fileno(f)); /* the FILE leaks: a test */
}

/* pd_ndjson_read: batches of the limit, line numbers across them, the bounds. */
static void test_stream(void)
{
	struct pd_enqueue q;
	struct pd_jobspec d;
	struct pd_ndjson nd;
	struct pd_err e = PD_ERR_INIT;
	const char text[] = "1\n\n2\n3\n\n4\n5";
	char big[300];
	int fd = fd_of(text, sizeof(text) - 1), total = 0, last = 0, batches = 0, rc;

	pd_enqueue_init(&q);
	pd_jobspec_init(&d);
	d.type = "t";
	pd_ndjson_init(&nd, fd, &d, 100);
	while ((rc = pd_ndjson_read(&nd, &q, 2, &e)) == 0 && q.n > 0) {
		batches++;
		total += q.n;
		for (int i = 0; i < q.n; i++) {
			last = q.lines[i];
			ok(q.jobs[i].payload_len == 1 &&
			       q.jobs[i].payload[0] - '0' == total - q.n + i + 1,
			   "  a payload in input order, pointing into the buffer");
		}
		if (nd.done)
			break;
	}
	is_int(rc, 0, "streamed NDJSON read to its end");
	is_int(total, 5, "  five jobs");
	is_int(batches, 3, "  in batches of two");
	is_int(last, 7, "  the last on line 7, without a newline");
	ok(nd.done, "  done");
	pd_ndjson_release(&nd);
	close(fd);

	/* a payload over max_payload, then a line with no end within the bound */
	fd = fd_of("1\n\"abcdef\"\n", 12);
	pd_ndjson_init(&nd, fd, &d, 5);
	ok(pd_ndjson_read(&nd, &q, 10, &e) == -1 && e.code == PD_EX_DATAERR, "over max_payload");
	is_str(e.msg, "stdin line 2: payload of 8 bytes, over max_payload 5", "  names the line");
	pd_ndjson_release(&nd);
	close(fd);
	memset(big, ' ', sizeof(big));
	pd_err_clear(&e);
	fd = fd_of(big, sizeof(big));
	pd_ndjson_init(&nd, fd, &d, 5);
	nd.line_max = 200; /* as if the slack were smaller */
	ok(pd_ndjson_read(&nd, &q, 10, &e) == -1, "a line past the bound");
	is_str(e.msg, "stdin line 1: more than 200 bytes, over max_payload 5", "  names it");
	pd_ndjson_release(&nd);
	close(fd);
	pd_err_clear(&e);
	fd = fd_of("\n \n", 3);
	pd_ndjson_init(&nd, fd, &d, 5);
	ok(pd_ndjson_read(&nd, &q, 10, &e) == -1, "blank lines only");
	is_str(e.msg, "no jobs on stdin", "  no jobs on stdin");
	pd_ndjson_release(&nd);
	close(fd);
	pd_enqueue_release(&q);
}

int main(void)
{
	struct pd_enqueue q;
	struct pd_jobspec d;
	struct pd_err e = PD_ERR_INIT;
	static const long long after[] = {4, 5};

	pd_enqueue_init(&q);
	pd_jobspec_init(&d);

	test_stream();

	/* Lines, blank lines, line numbers. */
	ok(ndjson(&q, &d, "{\"type\":\"a\"}\n\n  \r\n{\"type\":\"b\"}\r\n{\"type\":\"c\"}", &e) ==
	       0,
	   "three jobs among blank lines, CRLF and no final newline");
	is_int(q.n, 3, "  three jobs");
	is_int(q.lines[1], 4, "  the second on line 4");
	is_int(q.lines[2], 5, "  the third on line 5");
	is_str(q.jobs[2].type, "c", "  in input order");
	ok(q.jobs[0].payload_len == 2 && memcmp(q.jobs[0].payload, "{}", 2) == 0,
	   "  payload {} by default");
	ok(ndjson(&q, &d, "\n \n", &e) == -1, "only blank lines: refused");
	is_str(e.msg, "no jobs on stdin", "  no jobs on stdin");

	/* The defaults (the flags), and a line's keys over them. */
	d.queue = "flagq";
	d.after = after;
	d.nafter = 2;
	d.delay_ms = 5000;
	ok(ndjson(&q, &d, "{\"type\":\"a\",\"queue\":\"own\",\"delay\":null}\n{\"type\":\"b\"}",
		  &e) == 0,
	   "a line's keys over the flags");
	is_str(q.jobs[0].queue, "own", "  its own queue");
	is_str(q.jobs[1].queue, "flagq", "  the flag's queue");
	is_int(q.jobs[0].delay_ms, 5000, "  null is absent: the flag's delay");
	is_int(q.jobs[1].nafter, 2, "  --after for every line");
	d.type = "t";
	ok(ndjson(&q, &d, "[1, {\"a\": 2}]\n\"x\"", &e) == 0 && q.n == 2,
	   "with TYPE each line is a payload");
	ok(q.jobs[0].payload_len == 13 && memcmp(q.jobs[0].payload, "[1, {\"a\": 2}]", 13) == 0,
	   "  kept as written");
	pd_jobspec_init(&d);

	/* Refused lines name their line and the key. */
	refused("{\"type\":\"a\"}\n{\"type\":\"b\", \"x\": null}", "stdin line 2: unknown key 'x'");
	/* Found by tests/fuzz/ndjson_fuzz: the key was quoted raw, the message two lines. */
	refused("{\"type\":\"a\", \"x\\ny\\u0001\": 1}", "stdin line 1: unknown key 'x y?'");
	refused("{\"type\":\"a\", \"priority\": \"high\\nlow\"}",
		"stdin line 1: key 'priority': invalid priority 'high low': expected an integer "
		"(higher runs first) or high, normal, low");
	refused("{\"type\":\"a\"}\n\n{\"type\":\"b\",}",
		"invalid JSON on stdin line 3, column 13: expected a string key");
	refused("[]", "stdin line 1: expected an object {\"type\": ..., \"payload\": ...}");
	refused("{\"payload\":{}}",
		"stdin line 1: missing key 'type' (or give TYPE on the command line)");
	refused("{\"type\":\"\"}", "stdin line 1: key 'type': must not be empty");
	refused("{\"type\":1}", "stdin line 1: key 'type': expected a string");
	refused("{\"type\":\"a\",\"depends_on\":[1,0]}",
		"stdin line 1: key 'depends_on': expected an array of job ids (positive integers)");
	refused("{\"type\":\"a\",\"depends_on\":3}",
		"stdin line 1: key 'depends_on': expected an array of job ids");
	refused("{\"type\":\"a\",\"delivery\":\"twice\"}",
		"stdin line 1: key 'delivery': expected \"at-least-once\" or \"at-most-once\"");
	refused("{\"type\":\"a\",\"timeout\":0}", "stdin line 1: key 'timeout': must be positive");
	refused("{\"type\":\"a\",\"max_attempts\":1001}",
		"stdin line 1: key 'max_attempts': expected an integer 1-1000");
	refused("{\"type\":\"a\",\"traceparent\":\"\"}",
		"stdin line 1: key 'traceparent': must not be empty");
	/* A concurrency key: a name, not empty, none of the reserved prefixes. */
	refused("{\"type\":\"a\",\"concurrency_key\":\"\"}",
		"stdin line 1: key 'concurrency_key': must not be empty");
	refused("{\"type\":\"a\",\"concurrency_key\":[\"k\"]}",
		"stdin line 1: key 'concurrency_key': expected a string");
	refused("{\"type\":\"a\",\"concurrency_key\":\"k\\u0001\"}",
		"stdin line 1: key 'concurrency_key': invalid name: control character U+0001 at "
		"byte 2");
	refused("{\"type\":\"a\"}\n{\"type\":\"a\",\"concurrency_key\":\"queue:q\"}",
		"stdin line 2: key 'concurrency_key': invalid name 'queue:q': the prefixes queue:, "
		"tenant: and type: are reserved (they name the limits of a queue, a tenant and a "
		"job type)");
	refused("{\"type\":\"a\",\"concurrency_key\":\"tenant:\"}",
		"stdin line 1: key 'concurrency_key': invalid name 'tenant:': the prefixes queue:, "
		"tenant: and type: are reserved (they name the limits of a queue, a tenant and a "
		"job type)");
	ok(ndjson(&q, &d, "{\"type\":\"a\",\"concurrency_key\":\"types:x\"}", &e) == 0 &&
	       strcmp(q.jobs[0].concurrency_key, "types:x") == 0,
	   "a key that only looks like a reserved one is fine");

	/* The COPY row: ord, tenant, queue, type, payload, priority, run_at, delay, key,
	 * max_attempts, timeout, delivery, traceparent, depends_on, concurrency_key, start_by,
	 * start_within; NULL is \N. */
	written(1, "{\"type\":\"a\"}",
		"7\t\\N\t\\N\ta\t{}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n");
	/* Names hold no control character (pd_name_check); a traceparent may. */
	refused("{\"type\":\"a\\tb\"}",
		"stdin line 1: key 'type': invalid name: control character U+0009 at byte 2");
	refused("{\"type\":\"a\",\"queue\":\"l1\\nl2\"}",
		"stdin line 1: key 'queue': invalid name: control character U+000A at byte 3");
	written(1,
		"{\"type\":\"a\",\"tenant\":\"x\\\\y\",\"queue\":\"q\",\"traceparent\":"
		"\"l1\\nl2\\r\\tb\","
		"\"payload\":{\"s\":\"a\\\\b\",\t\"t\":1}}",
		"7\tx\\\\y\tq\ta\t{\"s\":\"a\\\\\\\\b\",\\t\"t\":1}\t\\N\t\\N\t\\N\t\\N\t"
		"\\N\t\\N\t\\N\tl1\\nl2\\r\\tb\t\\N\t\\N\t\\N\t\\N\n");
	written(
	    1,
	    "{\"type\":\"a\",\"priority\":\"high\",\"run_at\":\"2026-03-29T03:30:00+02:00\","
	    "\"delay\":\"1m30s250ms\",\"idempotency_key\":\"k\",\"max_attempts\":3,"
	    "\"timeout\":2,\"delivery\":\"at-most-once\",\"traceparent\":\"tp\","
	    "\"depends_on\":[4,5],\"concurrency_key\":\"vendor\"}",
	    "7\t\\N\t\\N\ta\t{}\t10\t2026-03-29T01:30:00Z\t90.250\tk\t3\t2.000\tat-most-once\ttp"
	    "\t{4,5}\tvendor\t\\N\t\\N\n");
	/* start_by: an instant, or a duration from now (start_within). */
	written(1, "{\"type\":\"a\",\"start_by\":\"2099-03-29T03:30:00+02:00\"}",
		"7\t\\N\t\\N\ta\t{}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N"
		"\t2099-03-29T01:30:00Z\t\\N\n");
	written(1, "{\"type\":\"a\",\"start_by\":\"10m\"}",
		"7\t\\N\t\\N\ta\t{}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N"
		"\t\\N\t600.000\n");
	refused("{\"type\":\"a\",\"start_by\":\"soon\"}",
		"stdin line 1: key 'start_by': invalid start deadline 'soon': expected a duration "
		"(a number with ms, s, m, h or d) or an ISO 8601 time with Z or an offset");
	refused("{\"type\":\"a\",\"start_by\":[1]}",
		"stdin line 1: key 'start_by': expected a duration such as \"10m\" or an instant");
	ok(ndjson(&q, &d, "{\"type\":\"a\",\"delay\":\"1h\",\"start_by\":\"10m\"}", &e) == -1 &&
	       strstr(e.msg, "stdin line 1: key 'start_by': start deadline ") == e.msg,
	   "a start_by 10m with a delay of 1h: refused");
	refused(
	    "{\"type\":\"a\",\"run_at\":\"2099-01-01T01:00:00Z\",\"start_by\":"
	    "\"2099-01-01T01:00:00Z\"}",
	    "stdin line 1: key 'start_by': start deadline 2099-01-01T01:00:00Z is not after the "
	    "job's run_at 2099-01-01T01:00:00Z (it could never start)");

	/* The direct COPY: only what the job gives; the table's defaults fill the rest. */
	direct("{\"type\":\"a\",\"payload\":[1]}",
	       "(id, job_type, payload, timeout, traceparent, concurrency_key, start_by)",
	       "7\ta\t[1]\t\\N\t\\N\t\\N\t\\N\n");
	direct("{\"type\":\"a\",\"start_by\":\"1m\"}",
	       "(id, job_type, payload, timeout, traceparent, concurrency_key, start_by)",
	       "7\ta\t{}\t\\N\t\\N\t\\N\t1970-01-01T00:01:00Z\n");
	direct(
	    "{\"type\":\"a\",\"tenant\":\"t\",\"queue\":\"q\",\"priority\":0,\"delay\":\"1s\","
	    "\"max_attempts\":3,\"timeout\":2,\"delivery\":\"at-most-once\",\"traceparent\":"
	    "\"tp\",\"concurrency_key\":\"k\\\\1\"}",
	    "(id, tenant_id, queue, job_type, payload, priority, run_at, max_attempts, timeout,"
	    " delivery, traceparent, concurrency_key, start_by)",
	    "7\tt\tq\ta\t{}\t0\t2026-01-02T00:00:00Z\t3\t2.000\tat-most-once\ttp\tk\\\\1\t\\N\n");
	direct("{\"type\":\"a\",\"delay\":\"0s\"}",
	       "(id, job_type, payload, timeout, traceparent, concurrency_key, start_by)",
	       "7\ta\t{}\t\\N\t\\N\t\\N\t\\N\n");

	/* The JSON element pendulum.enqueue_many reads: durations as seconds. */
	written(0,
		"{\"type\":\"a\",\"payload\":[1],\"delay\":\"250ms\",\"timeout\":\"1h\","
		"\"priority\":-3,\"depends_on\":[9]}",
		"{\"type\":\"a\",\"payload\":[1],\"priority\":-3,\"delay\":0.250,"
		"\"timeout\":3600.000,\"depends_on\":[9]}");
	written(0, "{\"type\":\"a\",\"concurrency_key\":\"k\\\"x\"}",
		"{\"type\":\"a\",\"payload\":{},\"concurrency_key\":\"k\\\"x\"}");
	written(0, "{\"type\":\"a\",\"start_by\":\"1m30s\"}",
		"{\"type\":\"a\",\"payload\":{},\"start_by\":90.000}");
	written(0, "{\"type\":\"a\",\"start_by\":\"2099-01-02T00:00:00+01:00\"}",
		"{\"type\":\"a\",\"payload\":{},\"start_by\":\"2099-01-01T23:00:00Z\"}");
	written(0, "{\"type\":\"a\\u00e9\",\"tenant\":\"t\\\"q\",\"run_at\":\"2026-01-02\"}",
		"{\"type\":\"a\xc3\xa9\",\"payload\":{},\"tenant\":\"t\\\"q\","
		"\"run_at\":\"2026-01-02T00:00:00Z\"}");

	/* One job from a payload. */
	pd_enqueue_release(&q);
	d.type = "t";
	ok(pd_enqueue_one(&q, &d, "  \n", 3, "stdin", 1, &e) == 0 && q.n == 1 &&
	       memcmp(q.jobs[0].payload, "{}", 2) == 0,
	   "a blank stdin is {}");
	pd_err_clear(&e);
	ok(pd_enqueue_one(&q, &d, "{\"a\" 1}", 7, "PAYLOAD", 0, &e) == -1, "bad JSON is refused");
	is_str(e.msg, "invalid JSON in PAYLOAD at line 1, column 6: expected ':'",
	       "  naming where, line and column");
	pd_enqueue_release(&q);
	return done_testing();
}
