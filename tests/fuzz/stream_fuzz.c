/*
 * libFuzzer target for the stream handler protocol (lib/stream): the input
 * split into lines as the worker splits a stream handler's output, each
 * line read as an answer on its stdout (pd_stream_parse) and as a line of
 * its stderr (pd_stream_stderr_job, which finds the job=ID it names).
 *
 *   make fuzz FUZZ_SECONDS=60       (or build-fuzz/fuzz/stream_fuzz DIR)
 *
 * Checks: a blank line is skipped, a bad one is code 65 in one line; an
 * answer's result is JSON lying within the line and comes only without an
 * error; a stderr line names a job exactly when it starts "job=" and 1 to
 * 19 digits of a value at most LLONG_MAX (computed here without overflow)
 * followed by a space or the end, and the prefix skipped is that.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "stream.h"
#include "fuzz.h"

static void check_answer(const char *line, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_stream_answer a;
	size_t i = 0;
	int rc = pd_stream_parse(line, n, &a, &e);

	while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	CHECK((rc == 0) == (i == n));
	if (rc < 0) {
		CHECK(e.code == PD_EX_DATAERR);
		CHECK(e.msg[0] != '\0' && strchr(e.msg, '\n') == NULL);
	} else if (rc == 1) {
		CHECK(a.failed == (a.error != NULL));
		CHECK(!a.terminal || a.failed);
		if (a.result) {
			struct pd_json j = PD_JSON_INIT;

			CHECK(!a.failed);
			CHECK(a.result >= line && a.result + a.result_len <= line + n);
			CHECK(pd_json_parse_lax(&j, a.result, a.result_len, &e) == 0);
			pd_json_release(&j);
		}
		CHECK(!a.progress || (!a.failed && !a.result));
		free(a.error);
		free(a.progress);
	}
}

static void check_stderr(const char *line, size_t n)
{
	long long id = -1;
	size_t skip = 0, i = 4;
	unsigned __int128 v = 0;
	int want;

	/* The rule, computed in 128 bits. */
	want = n >= 5 && memcmp(line, "job=", 4) == 0;
	while (want && i < n && line[i] >= '0' && line[i] <= '9' && i < 4 + 30)
		v = v * 10 + (unsigned)(line[i++] - '0');
	want = want && i > 4 && i <= 4 + 20 && v <= LLONG_MAX && (i == n || line[i] == ' ');

	CHECK(pd_stream_stderr_job(line, n, &id, &skip) == want);
	if (want) {
		CHECK(id == (long long)v);
		CHECK(skip == (i < n ? i + 1 : i));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exactly the input's bytes, so that ASan sees any read past them. */
	char *text = fuzz_text(data, size);
	const char *line = text, *end = text + size;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);

		check_answer(line, n);
		check_stderr(line, n);
		line = nl ? nl + 1 : end;
	}
	free(text);
	return 0;
}
