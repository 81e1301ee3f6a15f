/*
 * libFuzzer target for pd-enqueue --ndjson (lib/enqueue, lib/jobspec): the
 * input split into lines and read as pd-enqueue reads it, the first byte
 * choosing the mode (odd: a type given, each line a payload; even: each line
 * an object of job keys).
 *
 *   make fuzz FUZZ_SECONDS=60       (or build-fuzz/fuzz/ndjson_fuzz DIR)
 *
 * Checks: a failure is one line, code 65, naming the stdin line; a success
 * has one job per non-blank line, in order, each with a payload that is
 * strict JSON, and writes each job as one JSON object (the bulk statement's
 * array element) and as one COPY line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "enqueue.h"
#include "err.h"
#include "json.h"
#include "jobspec.h"
#include "fuzz.h"

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

/* The 1-based numbers of the non-blank lines of text into v (malloc'd); their count. */
static int lines_of(const char *text, size_t len, int **v)
{
	const char *line = text, *end = text + len;
	int lineno = 0, n = 0;

	*v = malloc((len + 1) * sizeof(**v));
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t k = nl ? (size_t)(nl - line) : (size_t)(end - line);

		lineno++;
		if (!blank(line, k))
			(*v)[n++] = lineno;
		line = nl ? nl + 1 : end;
	}
	return n;
}

static void check_job(const struct pd_jobspec *s, int ord)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	struct pd_buf b = PD_BUF_INIT;

	CHECK(s->type != NULL && s->payload != NULL);
	CHECK(pd_json_parse(&j, s->payload, s->payload_len, &e) == 0);
	pd_json_release(&j);

	pd_jobspec_json(s, &b);
	CHECK(pd_json_parse(&j, b.data, b.len, &e) == 0);
	CHECK(j.tok[0].type == PD_JSON_OBJECT);
	pd_json_release(&j);

	pd_buf_reset(&b);
	pd_jobspec_copy(s, ord, &b);
	CHECK(b.len > 0 && b.data[b.len - 1] == '\n' &&
	      memchr(b.data, '\n', b.len) == b.data + b.len - 1);
	pd_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_enqueue q;
	struct pd_jobspec defaults;
	struct pd_err e = PD_ERR_INIT;
	const char *text;
	int *want, nwant;

	if (size < 1)
		return 0;
	pd_jobspec_init(&defaults);
	if (data[0] & 1)
		defaults.type = "fuzz";
	/* A copy of exactly the input's bytes, so that ASan sees any read past them. */
	text = size > 1 ? memcpy(malloc(size - 1), data + 1, size - 1) : NULL;
	size--;
	nwant = lines_of(text ? text : "", size, &want);

	pd_enqueue_init(&q);
	if (pd_enqueue_ndjson(&q, &defaults, text ? text : "", size, &e) < 0) {
		CHECK(e.code == PD_EX_DATAERR);
		CHECK(strchr(e.msg, '\n') == NULL);
		CHECK(strncmp(e.msg, "invalid JSON on stdin line ", 27) == 0 ||
		      strncmp(e.msg, "stdin line ", 11) == 0 ||
		      (nwant == 0 && strcmp(e.msg, "no jobs on stdin") == 0));
	} else {
		CHECK(q.n == nwant);
		for (int i = 0; i < q.n; i++) {
			CHECK(q.lines[i] == want[i]);
			check_job(&q.jobs[i], i + 1);
		}
	}
	pd_enqueue_release(&q);
	free(want);
	free((void *)text);
	return 0;
}
