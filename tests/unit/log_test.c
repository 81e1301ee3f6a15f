/* log: a line in logfmt and in JSON, with and without a timestamp (the journal's case). */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "tap.h"

/* The line pd_log would write, without its newline, into a static buffer. */
static const char *line(enum pd_log_format f, const struct timeval *tv, enum pd_log_level level,
			const char *msg, const char *fields)
{
	static char out[1024];
	struct pd_buf b = PD_BUF_INIT;

	pd_log_format_line(&b, f, tv, level, msg, fields);
	snprintf(out, sizeof(out), "%s", pd_buf_str(&b));
	if (b.len && out[strlen(out) - 1] == '\n')
		out[strlen(out) - 1] = '\0';
	else
		snprintf(out, sizeof(out), "(no newline)");
	pd_buf_release(&b);
	return out;
}

/* The member key of the JSON object s, as text (a string unescaped), or "(none)". */
static const char *member(const char *s, const char *key)
{
	static char out[256];
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	int t;

	snprintf(out, sizeof(out), "(invalid)");
	if (pd_json_parse(&j, s, strlen(s), &e) < 0)
		return out;
	t = pd_json_get(&j, 0, key);
	if (t < 0) {
		snprintf(out, sizeof(out), "(none)");
	} else {
		char *v = pd_json_str(&j, t);

		snprintf(out, sizeof(out), "%s", v);
		free(v);
	}
	pd_json_release(&j);
	return out;
}

int main(void)
{
	struct timeval tv = {.tv_sec = 1795999359, .tv_usec = 123456};
	const char *fields = "job=42 outcome=ok reason=\"exit 3: \\\"no\\\"\\n\" code=-1.5e3 "
			     "worker=h:1:ab empty=\"\" id=007 flag";
	const char *s;

	is_str(line(PD_LOG_LOGFMT, &tv, PD_LOG_INFO, "job done", "job=42 outcome=ok"),
	       "ts=2026-11-30T00:42:39.123Z level=info msg=\"job done\" job=42 outcome=ok",
	       "logfmt: ts, level, msg quoted, the fields as they are");
	is_str(line(PD_LOG_LOGFMT, NULL, PD_LOG_WARN, "lost", NULL), "level=warn msg=lost",
	       "logfmt without a timestamp (the journal stamps it)");
	is_str(line(PD_LOG_JSON, &tv, PD_LOG_ERROR, "gone", NULL),
	       "{\"ts\":\"2026-11-30T00:42:39.123Z\",\"level\":\"error\",\"msg\":\"gone\"}",
	       "json: ts, level, msg");
	is_str(line(PD_LOG_JSON, NULL, PD_LOG_DEBUG, "a \"quoted\"\tmsg", ""),
	       "{\"level\":\"debug\",\"msg\":\"a \\\"quoted\\\"\\tmsg\"}",
	       "json without a timestamp; msg escaped; empty fields add nothing");

	s = line(PD_LOG_JSON, &tv, PD_LOG_INFO, "job done", fields);
	ok(strstr(s, "\"job\":42,") != NULL, "an integer is a JSON number");
	ok(strstr(s, "\"code\":-1.5e3,") != NULL, "so is any JSON number");
	ok(strstr(s, "\"id\":\"007\"") != NULL, "a leading zero is not a number: a string");
	is_str(member(s, "outcome"), "ok", "a bare value is a string");
	is_str(member(s, "reason"), "exit 3: \"no\"\n", "a quoted value is unquoted and unescaped");
	is_str(member(s, "worker"), "h:1:ab", "a value with colons");
	is_str(member(s, "empty"), "", "an empty quoted value");
	is_str(member(s, "flag"), "", "a word without '=': a key with an empty value");
	is_str(member(s, "msg"), "job done", "msg");
	is_str(member(s, "level"), "info", "level");
	is_str(member(s, "ts"), "2026-11-30T00:42:39.123Z", "ts");

	s = line(PD_LOG_JSON, NULL, PD_LOG_INFO, "odd", "bad\x01key=\"unterminated");
	is_str(member(s, "bad\x01key"), "unterminated",
	       "an odd key is escaped, an open quote ends");

	is_int(pd_log_format_parse("logfmt"), PD_LOG_LOGFMT, "parse logfmt");
	is_int(pd_log_format_parse("json"), PD_LOG_JSON, "parse json");
	is_int(pd_log_format_parse("yaml"), -1, "parse anything else: -1");
	return done_testing();
}
