/*
 * pd_log_quote: a value quoted for logfmt cannot forge a field — not with
 * a quote, a backslash, a newline or "level=error msg=x" — and survives a
 * round trip through the JSON form of the line (pd_log_format_line reads
 * the logfmt fields back). Truncation keeps the quoting whole.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "tap.h"

static const char *q(const char *s)
{
	static char out[256];

	return pd_log_quote(out, sizeof(out), s);
}

/* The line pd_log writes for msg and the single field out=QUOTED(value). */
static void line_with(enum pd_log_format f, const char *value, struct pd_buf *b)
{
	char field[300];

	snprintf(field, sizeof(field), "out=%s", q(value));
	pd_log_format_line(b, f, NULL, PD_LOG_INFO, "handler output", field);
}

/* The JSON line's members: its keys in order, and member key's text (or NULL). */
static char *member(const char *s, const char *key, int *nkeys)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	char *v = NULL;
	int t;

	*nkeys = -1;
	if (pd_json_parse(&j, s, strlen(s), &e) < 0)
		return NULL;
	*nkeys = j.tok[0].size;
	t = pd_json_get(&j, 0, key);
	if (t >= 0)
		v = pd_json_str(&j, t);
	pd_json_release(&j);
	return v;
}

/* value through logfmt quoting and back: one field "out", the value intact. */
static void round_trip(const char *value, const char *name)
{
	struct pd_buf lf = PD_BUF_INIT, js = PD_BUF_INIT;
	char *out, *level, *msg;
	int n, nl = 0;

	line_with(PD_LOG_LOGFMT, value, &lf);
	for (size_t i = 0; i < lf.len; i++)
		nl += lf.data[i] == '\n';
	ok(nl == 1 && lf.data[lf.len - 1] == '\n', name);
	line_with(PD_LOG_JSON, value, &js);
	out = member(pd_buf_str(&js), "out", &n);
	level = member(pd_buf_str(&js), "level", &n);
	msg = member(pd_buf_str(&js), "msg", &n);
	is_str(out, value, name);
	is_int(n, 3, name);
	is_str(level, "info", name);
	is_str(msg, "handler output", name);
	free(out);
	free(level);
	free(msg);
	pd_buf_release(&lf);
	pd_buf_release(&js);
}

int main(void)
{
	char small[64];
	int bad = 0;

	is_str(q("plain"), "plain", "a plain word as it is");
	is_str(q("caf\xc3\xa9"), "caf\xc3\xa9", "UTF-8 as it is");
	is_str(q(""), "\"\"", "empty: two quotes, never nothing");
	is_str(q("a b"), "\"a b\"", "a space: quoted");
	is_str(q("a=b"), "\"a=b\"", "an '=': quoted");
	is_str(q("say \"hi\""), "\"say \\\"hi\\\"\"", "quotes escaped");
	is_str(q("a\\b"), "\"a\\\\b\"", "a backslash escaped");
	is_str(q("end\\"), "\"end\\\\\"", "a trailing backslash cannot escape the closing quote");
	is_str(q("a\nb"), "\"a\\nb\"", "a newline escaped, never raw");
	is_str(q("a\tb"), "\"a\\tb\"", "a tab escaped");
	is_str(q("a\rb"), "\"a?b\"", "a carriage return shown as ?");
	is_str(q("a\x01"
		 "b\x1b"),
	       "\"a?b?\"", "other control bytes shown as ?");
	is_str(q("level=error msg=x"), "\"level=error msg=x\"",
	       "'level=error msg=x': one quoted value");
	is_str(q("x\" level=error msg=\"x"), "\"x\\\" level=error msg=\\\"x\"",
	       "a quote cannot close the value early");

	round_trip("level=error msg=x", "'level=error msg=x' is one field's value");
	round_trip("ok\nlevel=error msg=forged", "a newline then a forged line: one line");
	round_trip("x\" level=error msg=\"x", "a quote then forged fields: one field");
	round_trip("end\\", "a trailing backslash: one field");
	round_trip("\\\" level=error", "an escaped-looking quote: one field");
	round_trip("", "an empty value: one field");
	round_trip("a\tb \"c\" \\d\n", "tab, quotes, backslash, newline: one field");

	/* Degenerate sizes: never past n, always a NUL, and quoting stays balanced. */
	memset(small, 'X', sizeof(small));
	pd_log_quote(small, 0, "a b");
	ok(small[0] == 'X', "n = 0: nothing written");
	is_str(pd_log_quote(small, 1, "a b"), "", "n = 1: empty");
	is_str(pd_log_quote(small, 2, "a b"), "", "n = 2, quoting needed: empty, not a lone quote");
	is_str(pd_log_quote(small, 3, "a b"), "\"\"", "n = 3: an empty quoted value");
	is_str(pd_log_quote(small, 4, "plain"), "pla", "a plain word cut to n - 1");
	for (size_t n = 3; n < sizeof(small); n++) {
		const char *nasty = "\"\\\n\"\\ level=error\tmsg=\"x\"\\";
		size_t len;
		int esc = 0;

		memset(small, 'X', sizeof(small));
		pd_log_quote(small, n, nasty);
		len = strnlen(small, sizeof(small));
		/* Balanced: opens and closes with a quote not escaped, no raw quote inside. */
		if (len >= n || len < 2 || small[0] != '"' || small[len - 1] != '"' ||
		    (n < sizeof(small) - 1 && small[n] != 'X')) {
			bad++;
			continue;
		}
		for (size_t i = 1; i < len - 1; i++) {
			if (esc)
				esc = 0;
			else if (small[i] == '\\')
				esc = 1;
			else if (small[i] == '"' || small[i] == '\n')
				bad++;
		}
		bad += esc;
	}
	is_int(bad, 0, "cut at every size from 3 to 63: balanced quotes, within n");
	return done_testing();
}
