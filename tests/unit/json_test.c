/* Unit tests for lib/json: the strict grammar, exact errors, accessors, quoting. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "json.h"
#include "tap.h"

/* Parse s[0..n) expecting success; returns 0 and leaves j filled. */
static int parse_ok_n(struct pd_json *j, const char *s, size_t n, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	int r = pd_json_parse(j, s, n, &e);

	if (!ok(r == 0, name))
		printf("#   error: %s\n", e.msg);
	return r;
}

static int parse_ok(struct pd_json *j, const char *s, const char *name)
{
	return parse_ok_n(j, s, strlen(s), name);
}

/* Parse s[0..n) expecting failure with exactly message want. */
static void bad_n(const char *s, size_t n, const char *want, const char *name)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	char full[600];
	int r = pd_json_parse(&j, s, n, &e);

	snprintf(full, sizeof(full), "invalid JSON at %s", want);
	if (r == 0) {
		ok(0, name);
		diag("parsed, but should not have");
		pd_json_release(&j);
		return;
	}
	if (e.code != PD_EX_DATAERR) {
		ok(0, name);
		printf("#   code %d, want 65\n", e.code);
		return;
	}
	if (j.tok != NULL || j.ntok != 0) {
		ok(0, name);
		diag("failed parse left tokens behind");
		return;
	}
	is_str(e.msg, full, name);
}

static void bad(const char *s, const char *want, const char *name)
{
	bad_n(s, strlen(s), want, name);
}

/* The string value of token t, freed on the next call. */
static const char *str_of(const struct pd_json *j, int t)
{
	static char *last;

	free(last);
	last = t < 0 ? NULL : pd_json_str(j, t);
	return last;
}

static void test_valid_types(void)
{
	static const struct {
		const char *src;
		enum pd_json_type type;
		const char *str;
	} cases[] = {
	    {"{}", PD_JSON_OBJECT, "{}"},
	    {"[]", PD_JSON_ARRAY, "[]"},
	    {"\"\"", PD_JSON_STRING, ""},
	    {"\"abc\"", PD_JSON_STRING, "abc"},
	    {"0", PD_JSON_NUMBER, "0"},
	    {"-0", PD_JSON_NUMBER, "-0"},
	    {"1e5", PD_JSON_NUMBER, "1e5"},
	    {"1.5E-3", PD_JSON_NUMBER, "1.5E-3"},
	    {"-1.25e+10", PD_JSON_NUMBER, "-1.25e+10"},
	    {"0.0", PD_JSON_NUMBER, "0.0"},
	    {"123456789012345678901234567890", PD_JSON_NUMBER, "123456789012345678901234567890"},
	    {"true", PD_JSON_TRUE, "true"},
	    {"false", PD_JSON_FALSE, "false"},
	    {"null", PD_JSON_NULL, "null"},
	    {" \t\r\n true \n", PD_JSON_TRUE, "true"},
	    {"\n[ ]\n", PD_JSON_ARRAY, "[ ]"},
	    {"{ \"a\" : { } }", PD_JSON_OBJECT, "{ \"a\" : { } }"},
	    {"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", PD_JSON_STRING,
	     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
	    {"\"\x7f\"", PD_JSON_STRING, "\x7f"},
	};
	char name[200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_json j = PD_JSON_INIT;

		snprintf(name, sizeof(name), "valid: %s", cases[i].src);
		for (char *p = name; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
		if (parse_ok(&j, cases[i].src, name) < 0)
			continue;
		is_int(j.tok[0].type, cases[i].type, "  root type");
		is_int(j.tok[0].parent, -1, "  root has no parent");
		is_str(str_of(&j, 0), cases[i].str, "  root text");
		ok(j.src == cases[i].src && j.len == strlen(cases[i].src), "  keeps the source");
		pd_json_release(&j);
	}
}

static void test_escapes(void)
{
	struct pd_json j = PD_JSON_INIT;
	const char *src =
	    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\\ud83d\\ude00\\u0001\","
	    " \"a\\u0041b\\uFFFF\"]";

	if (parse_ok(&j, src, "every escape") < 0)
		return;
	is_int(j.ntok, 4, "  4 tokens");
	is_str(str_of(&j, 1), "\"\\/\b\f\n\r\t", "  simple escapes unescaped");
	is_str(str_of(&j, 2), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x01",
	       "  \\u escapes and a surrogate pair become UTF-8");
	is_str(str_of(&j, 3), "aAb\xef\xbf\xbf", "  \\u0041 and \\uFFFF");
	pd_json_release(&j);
}

static void test_structure(void)
{
	struct pd_json j = PD_JSON_INIT;
	const char *src = "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\"}";
	static const struct {
		enum pd_json_type type;
		int size, parent;
		const char *str;
	} want[] = {
	    {PD_JSON_OBJECT, 2, -1, NULL}, {PD_JSON_STRING, 1, 0, "a"},
	    {PD_JSON_ARRAY, 3, 1, NULL},   {PD_JSON_NUMBER, 0, 2, "1"},
	    {PD_JSON_NUMBER, 0, 2, "2"},   {PD_JSON_OBJECT, 1, 2, "{\"b\":null}"},
	    {PD_JSON_STRING, 1, 5, "b"},   {PD_JSON_NULL, 0, 6, "null"},
	    {PD_JSON_STRING, 1, 0, "c"},   {PD_JSON_STRING, 0, 8, "x"},
	};
	int bad_tok = 0;

	if (parse_ok(&j, src, "nested document") < 0)
		return;
	is_int(j.ntok, 10, "  10 tokens");
	for (int i = 0; i < 10 && i < j.ntok; i++) {
		if (j.tok[i].type != want[i].type || j.tok[i].size != want[i].size ||
		    j.tok[i].parent != want[i].parent ||
		    (want[i].str && strcmp(str_of(&j, i), want[i].str) != 0)) {
			printf("# token %d: type %d size %d parent %d\n", i, j.tok[i].type,
			       j.tok[i].size, j.tok[i].parent);
			bad_tok++;
		}
	}
	is_int(bad_tok, 0, "  types, sizes, parents and texts of every token");
	is_int(j.tok[1].start, 2, "  key span excludes the quotes (start)");
	is_int(j.tok[1].end, 3, "  key span excludes the quotes (end)");
	is_int(j.tok[2].start, 5, "  array starts at '['");
	is_int(j.tok[2].end, 21, "  array ends after ']'");
	pd_json_release(&j);
	pd_json_release(&j);
	ok(j.tok == NULL && j.ntok == 0 && j.src == NULL, "release twice leaves j empty");
}

static void test_malformed(void)
{
	bad("", "line 1, column 1: empty input", "empty input");
	bad(" \n\t ", "line 2, column 3: empty input", "whitespace only");
	bad_n(NULL, 0, "line 1, column 1: empty input", "NULL, 0");

	/* Structure. */
	bad("{\"a\" 1}", "line 1, column 6: expected ':'", "missing colon");
	bad("{\"a\":1 \"b\":2}", "line 1, column 8: expected ',' or '}'",
	    "missing comma in object");
	bad("{\"a\": 1 2}", "line 1, column 9: expected ',' or '}'", "two values for one key");
	bad("[1 2]", "line 1, column 4: expected ',' or ']'", "missing comma in array");
	bad("[1,]", "line 1, column 4: expected a value", "trailing comma in array");
	bad("{\"a\":1,}", "line 1, column 8: expected a string key", "trailing comma in object");
	bad("{,}", "line 1, column 2: expected a string key or '}'", "comma after {");
	bad("{a:1}", "line 1, column 2: expected a string key or '}'", "unquoted key");
	bad("{1:1}", "line 1, column 2: expected a string key or '}'", "number key");
	bad("{\"a\":}", "line 1, column 6: expected a value", "missing value");
	bad("[1}", "line 1, column 3: expected ',' or ']'", "array closed by }");
	bad("{\"a\":1]", "line 1, column 7: expected ',' or '}'", "object closed by ]");
	bad("}", "line 1, column 1: expected a value", "lone }");
	bad("['a']", "line 1, column 2: expected a value", "single quotes");
	bad("\xef\xbb\xbf{}", "line 1, column 1: expected a value", "byte order mark");
	bad("[,1]", "line 1, column 2: expected a value", "leading comma");
	bad("{\"a\"::1}", "line 1, column 6: expected a value", "double colon");

	/* End of input. */
	bad("[", "line 1, column 2: unexpected end of input", "open array");
	bad("{\"a\":1", "line 1, column 7: unexpected end of input", "open object");
	bad("{\"a\"", "line 1, column 5: unexpected end of input", "key then end");
	bad("{\"a\":", "line 1, column 6: unexpected end of input", "colon then end");
	bad("[1,", "line 1, column 4: unexpected end of input", "comma then end");
	bad("{\"a\":1,", "line 1, column 8: unexpected end of input", "object comma then end");
	bad("\"abc", "line 1, column 5: unexpected end of input", "unterminated string");
	bad("\"ab\\", "line 1, column 5: unexpected end of input", "backslash then end");
	bad("\"\\u12", "line 1, column 6: unexpected end of input", "short \\u then end");
	bad("\"\\ud83d", "line 1, column 8: unexpected end of input", "high surrogate then end");
	bad("[[[\n", "line 2, column 1: unexpected end of input", "end on the next line");

	/* Literals. */
	bad("tru", "line 1, column 4: invalid literal", "tru");
	bad("trUe", "line 1, column 3: invalid literal", "trUe");
	bad("True", "line 1, column 1: invalid literal", "True");
	bad("nul", "line 1, column 4: invalid literal", "nul");
	bad("[fals]", "line 1, column 6: invalid literal", "fals in array");
	bad("truex", "line 1, column 5: invalid literal", "truex");
	bad("[null1]", "line 1, column 6: invalid literal", "null1");
	bad("NaN", "line 1, column 1: invalid literal", "NaN");
	bad("nan", "line 1, column 2: invalid literal", "nan");
	bad("Infinity", "line 1, column 1: invalid literal", "Infinity");
	bad("undefined", "line 1, column 1: invalid literal", "undefined");

	/* Numbers. */
	bad("01", "line 1, column 2: invalid number", "leading zero");
	bad("-01", "line 1, column 3: invalid number", "negative leading zero");
	bad("00", "line 1, column 2: invalid number", "00");
	bad("-", "line 1, column 2: invalid number", "lone minus");
	bad("[-]", "line 1, column 3: invalid number", "lone minus in array");
	bad("1.", "line 1, column 3: invalid number", "1.");
	bad("[1.e5]", "line 1, column 4: invalid number", "1.e5");
	bad("1e", "line 1, column 3: invalid number", "1e");
	bad("1e+", "line 1, column 4: invalid number", "1e+");
	bad("1E-x", "line 1, column 4: invalid number", "1E-x");
	bad("1.5.3", "line 1, column 4: invalid number", "1.5.3");
	bad("0x10", "line 1, column 2: invalid number", "hex");
	bad("-Infinity", "line 1, column 2: invalid number", "-Infinity");
	bad("--1", "line 1, column 2: invalid number", "--1");
	bad(".5", "line 1, column 1: expected a value", ".5");
	bad("+1", "line 1, column 1: expected a value", "+1");
	bad("[1-2]", "line 1, column 3: invalid number", "1-2");

	/* Escapes. */
	bad("\"\\x\"", "line 1, column 2: invalid escape", "\\x");
	bad("\"ab\\'\"", "line 1, column 4: invalid escape", "\\'");
	bad("\"\\U0041\"", "line 1, column 2: invalid escape", "\\U");
	bad("\"\\u12G4\"", "line 1, column 2: invalid escape", "bad hex digit");
	bad("\"\\u00\"", "line 1, column 2: invalid escape", "short \\u");
	bad("\"\\u0000\"",
	    "line 1, column 2: \\u0000 (NUL) is not allowed (PostgreSQL jsonb cannot store it)",
	    "\\u0000");
	bad("{\"k\\u0000\":1}",
	    "line 1, column 4: \\u0000 (NUL) is not allowed (PostgreSQL jsonb cannot store it)",
	    "\\u0000 in a key");
	bad("\"\\ud83d\"", "line 1, column 2: unpaired surrogate in \\u escape",
	    "lone high surrogate");
	bad("\"\\ude00\"", "line 1, column 2: unpaired surrogate in \\u escape",
	    "lone low surrogate");
	bad("\"x\\ud83d\\u0041\"", "line 1, column 3: unpaired surrogate in \\u escape",
	    "high surrogate then a non-surrogate");
	bad("\"\\ud83d\\ud83d\"", "line 1, column 2: unpaired surrogate in \\u escape",
	    "two high surrogates");
	bad("\"\\ud83dx\"", "line 1, column 2: unpaired surrogate in \\u escape",
	    "high surrogate then text");
	bad("\"\\ud83d\\n\"", "line 1, column 2: unpaired surrogate in \\u escape",
	    "high surrogate then \\n");
	bad("\"\\ud83d\\uzzzz\"", "line 1, column 8: invalid escape", "bad hex in the low half");

	/* Control characters. */
	bad("\"a\tb\"", "line 1, column 3: control character in string", "raw tab");
	bad("[\"a\nb\"]", "line 1, column 4: control character in string", "raw newline");
	bad("\"\x1f\"", "line 1, column 2: control character in string", "raw 0x1f");
	bad_n("\"a\0\"", 4, "line 1, column 3: control character in string", "raw NUL in string");

	/* UTF-8. */
	bad("\"\xff\"", "line 1, column 2: invalid UTF-8", "0xff");
	bad("\"a\x80\"", "line 1, column 3: invalid UTF-8", "stray continuation byte");
	bad("\"\xc0\xaf\"", "line 1, column 2: invalid UTF-8", "overlong 2-byte");
	bad("\"\xe0\x80\xaf\"", "line 1, column 2: invalid UTF-8", "overlong 3-byte");
	bad("\"\xf0\x80\x80\xaf\"", "line 1, column 2: invalid UTF-8", "overlong 4-byte");
	bad("\"\xed\xa0\x80\"", "line 1, column 2: invalid UTF-8", "encoded surrogate");
	bad("\"\xf4\x90\x80\x80\"", "line 1, column 2: invalid UTF-8", "above U+10FFFF");
	bad("\"\xe2\x82\"", "line 1, column 2: invalid UTF-8", "truncated sequence");
	bad("\"\xe2\x82", "line 1, column 2: invalid UTF-8", "truncated at the end");
	bad("{\"\xc3\":1}", "line 1, column 3: invalid UTF-8", "bad key");

	/* Trailing data. */
	bad("1 2", "line 1, column 3: trailing data after the value", "two numbers");
	bad("{} {}", "line 1, column 4: trailing data after the value", "two objects");
	bad("[]]", "line 1, column 3: trailing data after the value", "extra ]");
	bad("\"a\"\"b\"", "line 1, column 4: trailing data after the value", "two strings");
	bad("[1]//x", "line 1, column 4: trailing data after the value", "comment");
	bad("true,", "line 1, column 5: trailing data after the value", "trailing comma");
	bad_n("1\0", 2, "line 1, column 2: trailing data after the value", "trailing NUL");
	bad("{}\n\n  x", "line 3, column 3: trailing data after the value", "trailing line 3");

	/* Multi-line positions. */
	bad("{\n  \"a\": 1,\n  \"b\" 2\n}", "line 3, column 7: expected ':'", "error on line 3");
	bad("[1,\r\n2 x]", "line 2, column 3: expected ',' or ']'", "CRLF line ends");
	bad("[\n\"ok\",\n\"bad\\q\"]", "line 3, column 5: invalid escape", "escape on line 3");
}

static void test_depth(void)
{
	struct pd_json j = PD_JSON_INIT;
	char *s = malloc(2 * 600 + 1);
	struct pd_buf b = PD_BUF_INIT;
	char want[80];

	for (int depth = 511; depth <= 513; depth++) {
		memset(s, '[', (size_t)depth);
		memset(s + depth, ']', (size_t)depth);
		s[2 * depth] = '\0';
		if (depth <= PD_JSON_MAX_DEPTH) {
			if (parse_ok(&j, s, depth == 512 ? "512 levels" : "511 levels") == 0) {
				is_int(j.ntok, depth, "  one token a level");
				is_int(j.tok[depth - 1].parent, depth - 2, "  innermost parent");
				is_int(pd_json_skip(&j, 0), depth, "  skip the root");
				pd_json_release(&j);
			}
		} else {
			snprintf(want, sizeof(want),
				 "line 1, column %d: nesting deeper than 512 levels", depth);
			bad(s, want, "513 levels");
		}
	}
	/* Objects count too. */
	for (int i = 0; i < 513; i++)
		pd_buf_puts(&b, "{\"a\":");
	pd_buf_puts(&b, "1");
	for (int i = 0; i < 513; i++)
		pd_buf_putc(&b, '}');
	bad(b.data, "line 1, column 2561: nesting deeper than 512 levels", "513 nested objects");
	pd_buf_reset(&b);
	for (int i = 0; i < 512; i++)
		pd_buf_puts(&b, "{\"a\":");
	pd_buf_puts(&b, "1");
	for (int i = 0; i < 512; i++)
		pd_buf_putc(&b, '}');
	if (parse_ok(&j, b.data, "512 nested objects") == 0) {
		is_int(j.ntok, 1025, "  a key and an object a level, and the 1");
		pd_json_release(&j);
	}
	pd_buf_release(&b);
	free(s);
}

static void test_accessors(void)
{
	struct pd_json j = PD_JSON_INIT;
	const char *src = "{\"name\": \"job\", \"n\": 42, \"neg\": -7, \"zero\": -0,\n"
			  " \"max\": 9223372036854775807, \"min\": -9223372036854775808,\n"
			  " \"over\": 9223372036854775808, \"under\": -9223372036854775809,\n"
			  " \"f\": 1.5, \"e\": 1e3, \"t\": true, \"s\": \"42\",\n"
			  " \"obj\": {\"k\": [1, {\"x\": \"y\"}], \"z\": null},\n"
			  " \"esc\\u0041\": \"v\", \"dup\": 1, \"dup\": 2, \"last\": []}";
	long long v = 12345;
	const char *p;
	size_t n;
	int obj, k, x, t;

	if (parse_ok(&j, src, "accessor document") < 0)
		return;
	is_str(str_of(&j, pd_json_get(&j, 0, "name")), "job", "get name");
	is_int(pd_json_get(&j, 0, "nope"), -1, "get of a missing key");
	is_int(pd_json_get(&j, 0, ""), -1, "get of the empty key");
	is_int(pd_json_get(&j, 0, "nam"), -1, "get of a key's prefix");
	is_int(pd_json_get(&j, pd_json_get(&j, 0, "n"), "n"), -1, "get on a number");
	is_int(pd_json_get(&j, -1, "n"), -1, "get on token -1");
	is_int(pd_json_get(&j, j.ntok, "n"), -1, "get past the end");
	is_str(str_of(&j, pd_json_get(&j, 0, "escA")), "v", "get matches an escaped key");
	is_int(pd_json_get(&j, 0, "esc\\u0041"), -1, "get does not match the raw key");

	ok(pd_json_int(&j, pd_json_get(&j, 0, "n"), &v) == 0 && v == 42, "int 42");
	ok(pd_json_int(&j, pd_json_get(&j, 0, "neg"), &v) == 0 && v == -7, "int -7");
	ok(pd_json_int(&j, pd_json_get(&j, 0, "zero"), &v) == 0 && v == 0, "int -0");
	ok(pd_json_int(&j, pd_json_get(&j, 0, "max"), &v) == 0 && v == LLONG_MAX, "int LLONG_MAX");
	ok(pd_json_int(&j, pd_json_get(&j, 0, "min"), &v) == 0 && v == LLONG_MIN, "int LLONG_MIN");
	v = 99;
	is_int(pd_json_int(&j, pd_json_get(&j, 0, "over"), &v), -1, "int overflow");
	is_int(pd_json_int(&j, pd_json_get(&j, 0, "under"), &v), -1, "int underflow");
	is_int(pd_json_int(&j, pd_json_get(&j, 0, "f"), &v), -1, "int of 1.5");
	is_int(pd_json_int(&j, pd_json_get(&j, 0, "e"), &v), -1, "int of 1e3");
	is_int(pd_json_int(&j, pd_json_get(&j, 0, "t"), &v), -1, "int of true");
	is_int(pd_json_int(&j, pd_json_get(&j, 0, "s"), &v), -1, "int of the string \"42\"");
	is_int(pd_json_int(&j, -1, &v), -1, "int of token -1");
	is_int(v, 99, "failed int leaves *out alone");
	ok(pd_json_int(&j, pd_json_get(&j, 0, "dup"), &v) == 0 && v == 2,
	   "duplicate key: last wins");

	obj = pd_json_get(&j, 0, "obj");
	ok(obj > 0 && j.tok[obj].type == PD_JSON_OBJECT, "get obj");
	is_str(str_of(&j, obj), "{\"k\": [1, {\"x\": \"y\"}], \"z\": null}",
	       "str of an object is its JSON");
	k = pd_json_get(&j, obj, "k");
	ok(k > 0 && j.tok[k].type == PD_JSON_ARRAY && j.tok[k].size == 2, "nested array");
	is_str(str_of(&j, k), "[1, {\"x\": \"y\"}]", "str of an array is its JSON");
	x = pd_json_get(&j, k + 2, "x");
	is_str(str_of(&j, x), "y", "get in an object inside an array");
	is_int(pd_json_get(&j, k, "x"), -1, "get on an array");
	is_int(j.tok[pd_json_get(&j, obj, "z")].type, PD_JSON_NULL, "null member");
	is_str(str_of(&j, pd_json_get(&j, obj, "z")), "null", "str of null");
	is_str(str_of(&j, pd_json_get(&j, 0, "t")), "true", "str of true");
	is_str(str_of(&j, pd_json_get(&j, 0, "f")), "1.5", "str of a number");
	ok(str_of(&j, -1) == NULL && str_of(&j, j.ntok) == NULL, "str of a bad index is NULL");

	/* skip */
	is_int(pd_json_skip(&j, 0), j.ntok, "skip the root");
	t = pd_json_skip(&j, obj);
	is_str(str_of(&j, t), "escA", "skip an object lands on the next key");
	is_int(pd_json_skip(&j, k), pd_json_get(&j, obj, "z") - 1,
	       "skip an array lands on the next key");
	is_int(pd_json_skip(&j, x), x + 1, "skip a scalar");
	is_int(pd_json_skip(&j, obj - 1), t, "skip a key skips its value too");
	is_int(pd_json_skip(&j, pd_json_get(&j, 0, "last")), j.ntok, "skip the last, empty array");
	is_int(pd_json_skip(&j, -5), j.ntok, "skip a bad index");

	/* span */
	pd_json_span(&j, pd_json_get(&j, 0, "name"), &p, &n);
	ok(n == 5 && memcmp(p, "\"job\"", 5) == 0, "span of a string includes the quotes");
	pd_json_span(&j, pd_json_get(&j, 0, "escA") - 1, &p, &n);
	ok(n == 11 && memcmp(p, "\"esc\\u0041\"", 11) == 0, "span of a key is raw");
	pd_json_span(&j, pd_json_get(&j, 0, "neg"), &p, &n);
	ok(n == 2 && memcmp(p, "-7", 2) == 0, "span of a number");
	pd_json_span(&j, obj, &p, &n);
	ok(n == strlen(str_of(&j, obj)) && memcmp(p, str_of(&j, obj), n) == 0, "span of an object");
	pd_json_span(&j, 0, &p, &n);
	ok(p == src && n == strlen(src), "span of the root is the document");
	pd_json_span(&j, j.ntok, &p, &n);
	ok(p == NULL && n == 0, "span of a bad index");
	pd_json_release(&j);

	/* A top-level string's span. */
	if (parse_ok(&j, "  \"a\\nb\"  ", "top-level string") == 0) {
		pd_json_span(&j, 0, &p, &n);
		ok(n == 6 && memcmp(p, "\"a\\nb\"", 6) == 0, "  span with quotes");
		is_str(str_of(&j, 0), "a\nb", "  unescaped");
		pd_json_release(&j);
	}
	if (parse_ok(&j, " -12 ", "top-level number") == 0) {
		ok(pd_json_int(&j, 0, &v) == 0 && v == -12, "  int -12");
		pd_json_span(&j, 0, &p, &n);
		ok(n == 3 && memcmp(p, "-12", 3) == 0, "  span without the blanks");
		pd_json_release(&j);
	}
}

/* quote(s) must parse, and str() must give back want. */
static void roundtrip(const char *s, size_t n, const char *want, const char *name)
{
	struct pd_buf b = PD_BUF_INIT;
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	char *back;

	pd_json_quote(&b, s, n);
	if (pd_json_parse(&j, b.data, b.len, &e) < 0) {
		ok(0, name);
		printf("#   %s\n", e.msg);
		pd_buf_release(&b);
		return;
	}
	back = pd_json_str(&j, 0);
	ok(j.ntok == 1 && j.tok[0].type == PD_JSON_STRING && strcmp(back, want) == 0, name);
	free(back);
	pd_json_release(&j);
	pd_buf_release(&b);
}

static void quote_is(const char *s, size_t n, const char *want, const char *name)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_json_quote(&b, s, n);
	is_str(pd_buf_str(&b), want, name);
	pd_buf_release(&b);
}

static void test_quote(void)
{
	char ctl[64];
	size_t n = 0;
	uint32_t seed = 12345;
	int fails = 0;

	quote_is("", 0, "\"\"", "quote empty");
	quote_is(NULL, 0, "\"\"", "quote NULL, 0");
	quote_is("plain", 5, "\"plain\"", "quote plain");
	quote_is("a\"b\\c/d", 7, "\"a\\\"b\\\\c/d\"", "quote \" and \\, not /");
	quote_is("\n\t\r\b\f\x01\x1f\x7f", 8, "\"\\n\\t\\r\\b\\f\\u0001\\u001f\x7f\"",
		 "quote control characters");
	quote_is("a\0b", 3,
		 "\"a\xef\xbf\xbd"
		 "b\"",
		 "quote NUL as U+FFFD");
	quote_is("\xff\xfe", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"", "quote invalid bytes as U+FFFD");
	quote_is("\xe2\x82"
		 "x",
		 3, "\"\xef\xbf\xbd\xef\xbf\xbdx\"", "quote a cut sequence");
	quote_is("\xc3\xa9\xf0\x9f\x98\x80", 6, "\"\xc3\xa9\xf0\x9f\x98\x80\"",
		 "quote keeps UTF-8");

	for (int c = 1; c < 0x20; c++)
		ctl[n++] = (char)c;
	ctl[n++] = '"';
	ctl[n++] = '\\';
	ctl[n++] = 0x7f;
	ctl[n] = '\0';
	roundtrip(ctl, n, ctl, "round trip: every control character, \" and \\");
	roundtrip("", 0, "", "round trip: empty");
	roundtrip("caf\xc3\xa9 \xf4\x8f\xbf\xbf", 10, "caf\xc3\xa9 \xf4\x8f\xbf\xbf",
		  "round trip: UTF-8");
	roundtrip("a\xc0\xaf"
		  "b\xed\xa0\x80"
		  "c",
		  8,
		  "a\xef\xbf\xbd\xef\xbf\xbd"
		  "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		  "c",
		  "round trip: overlong and surrogate bytes become U+FFFD each");
	roundtrip("x\0y", 3, "x\xef\xbf\xbdy", "round trip: NUL");

	/* Random bytes: always parses; exact when the input was valid UTF-8 without NUL. */
	for (int i = 0; i < 20000; i++) {
		unsigned char s[24];
		size_t len = (size_t)(i % 24);
		struct pd_buf b = PD_BUF_INIT;
		struct pd_json j = PD_JSON_INIT;
		struct pd_err e = PD_ERR_INIT;
		char *back;

		for (size_t k = 0; k < len; k++) {
			seed = seed * 1103515245u + 12345u;
			/* Bias towards interesting bytes. */
			s[k] = (unsigned char)(seed >> 16);
			if ((seed >> 8) % 4 == 0)
				s[k] = (unsigned char)"\x00\x1f\"\\\x80\xbf\xc2\xe0\xed\xf0\xf4"
				    [(seed >> 24) % 11];
		}
		pd_json_quote(&b, (char *)s, len);
		if (pd_json_parse(&j, b.data, b.len, &e) < 0 ||
		    !pd_json_valid_utf8(b.data, b.len)) {
			fails++;
		} else {
			back = pd_json_str(&j, 0);
			if (pd_json_valid_utf8((char *)s, len) && memchr(s, 0, len) == NULL &&
			    (strlen(back) != len || memcmp(back, s, len) != 0))
				fails++;
			free(back);
			pd_json_release(&j);
		}
		pd_buf_release(&b);
	}
	is_int(fails, 0, "20000 random byte strings quote, parse and round-trip");
}

static void test_utf8(void)
{
	static const struct {
		const char *s;
		size_t n;
		int want;
		const char *name;
	} cases[] = {
	    {"", 0, 1, "empty"},
	    {"abc", 3, 1, "ASCII"},
	    {"a\0b", 3, 1, "NUL is valid UTF-8"},
	    {"\xc2\x80", 2, 1, "U+0080"},
	    {"\xdf\xbf", 2, 1, "U+07FF"},
	    {"\xe0\xa0\x80", 3, 1, "U+0800"},
	    {"\xed\x9f\xbf", 3, 1, "U+D7FF"},
	    {"\xee\x80\x80", 3, 1, "U+E000"},
	    {"\xef\xbf\xbf", 3, 1, "U+FFFF"},
	    {"\xf0\x90\x80\x80", 4, 1, "U+10000"},
	    {"\xf4\x8f\xbf\xbf", 4, 1, "U+10FFFF"},
	    {"\x80", 1, 0, "lone continuation"},
	    {"\xc0\x80", 2, 0, "overlong NUL"},
	    {"\xc1\xbf", 2, 0, "overlong U+007F"},
	    {"\xe0\x9f\xbf", 3, 0, "overlong U+07FF"},
	    {"\xf0\x8f\xbf\xbf", 4, 0, "overlong U+FFFF"},
	    {"\xed\xa0\x80", 3, 0, "U+D800"},
	    {"\xed\xbf\xbf", 3, 0, "U+DFFF"},
	    {"\xf4\x90\x80\x80", 4, 0, "U+110000"},
	    {"\xf5\x80\x80\x80", 4, 0, "0xf5 lead"},
	    {"\xff", 1, 0, "0xff"},
	    {"\xc2", 1, 0, "cut 2-byte"},
	    {"\xe2\x82", 2, 0, "cut 3-byte"},
	    {"\xf0\x9f\x98", 3, 0, "cut 4-byte"},
	    {"\xe2\x28\xa1", 3, 0, "bad second byte"},
	    {"\xf0\x9f\x28\x80", 4, 0, "bad third byte"},
	    {"\xc3\xa9\xc3", 3, 0, "good then cut"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_int(pd_json_valid_utf8(cases[i].s, cases[i].n), cases[i].want, cases[i].name);
}

static void test_linecol(void)
{
	const char *s = "ab\ncd\r\n\nx";
	int line = 0, col = 0;

	pd_json_linecol(s, 0, &line, &col);
	ok(line == 1 && col == 1, "linecol at 0");
	pd_json_linecol(s, 2, &line, &col);
	ok(line == 1 && col == 3, "linecol at the first newline");
	pd_json_linecol(s, 3, &line, &col);
	ok(line == 2 && col == 1, "linecol after the newline");
	pd_json_linecol(s, 5, &line, &col);
	ok(line == 2 && col == 3, "linecol at \\r");
	pd_json_linecol(s, 8, &line, &col);
	ok(line == 4 && col == 1, "linecol after an empty line");
	pd_json_linecol(s, strlen(s), &line, &col);
	ok(line == 4 && col == 2, "linecol at the end");
	pd_json_linecol(NULL, 0, &line, &col);
	ok(line == 1 && col == 1, "linecol of NULL at 0");
}

static void test_large(void)
{
	struct pd_buf b = PD_BUF_INIT;
	struct pd_json j = PD_JSON_INIT;
	long long v = -1, sum = 0;
	int bad_parent = 0, t;

	pd_buf_putc(&b, '[');
	for (int i = 0; i < 100000; i++)
		pd_buf_printf(&b, "%s%d", i ? "," : "", i);
	pd_buf_putc(&b, ']');
	if (parse_ok_n(&j, b.data, b.len, "100000-element array") == 0) {
		is_int(j.ntok, 100001, "  100001 tokens");
		is_int(j.tok[0].size, 100000, "  root size");
		for (int i = 1; i < j.ntok; i++) {
			if (j.tok[i].parent != 0)
				bad_parent++;
			if (pd_json_int(&j, i, &v) == 0)
				sum += v;
		}
		is_int(bad_parent, 0, "  every item's parent is the root");
		is_int(sum, 4999950000LL, "  every item read back");
		is_int(pd_json_skip(&j, 0), 100001, "  skip the root");
		pd_json_release(&j);
	}

	pd_buf_reset(&b);
	pd_buf_putc(&b, '{');
	for (int i = 0; i < 100000; i++)
		pd_buf_printf(&b, "%s\"k%d\":{\"v\":[%d,\"s\"]}", i ? "," : "", i, i);
	pd_buf_putc(&b, '}');
	if (parse_ok_n(&j, b.data, b.len, "100000-key object") == 0) {
		is_int(j.ntok, 1 + 100000 * 6, "  600001 tokens");
		t = pd_json_get(&j, pd_json_get(&j, 0, "k99999"), "v");
		ok(t > 0 && j.tok[t].size == 2 && pd_json_int(&j, t + 1, &v) == 0 && v == 99999,
		   "  the last key's nested value");
		is_str(str_of(&j, t + 2), "s", "  and the string after it");
		pd_json_release(&j);
	}
	pd_buf_release(&b);
}

static void test_is_number(void)
{
	static const char *yes[] = {"0",   "-0",     "42",	  "-17", "1.5",
				    "1e5", "1.5E-3", "-1.25e+10", NULL};
	static const char *no[] = {"",	   "-",	 "01", "1.",  ".5",    "+1",  "1e", "1e+",
				   "0x1F", "1 ", " 1", "NaN", "1.2.3", "--1", NULL};

	for (int i = 0; yes[i]; i++) {
		char name[64];

		snprintf(name, sizeof(name), "is_number '%s'", yes[i]);
		ok(pd_json_is_number(yes[i]) == 1, name);
	}
	for (int i = 0; no[i]; i++) {
		char name[64];

		snprintf(name, sizeof(name), "is_number refuses '%s'", no[i]);
		ok(pd_json_is_number(no[i]) == 0, name);
	}
}

static void test_compact(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"{\"a\": 1}", "{\"a\":1}"},
	    {" {\"x\": [1, \"a\"], \"y\": null} \n", "{\"x\":[1,\"a\"],\"y\":null}"},
	    {"\"a b\"", "\"a b\""},
	    {"[\"\\\" , \", \"\\\\\", 2]", "[\"\\\" , \",\"\\\\\",2]"},
	    {"{\"k\\\\\": \" : \"}", "{\"k\\\\\":\" : \"}"},
	    {"\t[\r\n]", "[]"},
	    {"", ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[128], name[160];

		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		snprintf(name, sizeof(name), "compact '%s'", cases[i].in);
		pd_json_compact(buf);
		is_str(buf, cases[i].want, name);
	}
}

/* pd_json_storable on s[0..n): want 1, 0 or -1, and for 0 and -1 the message. */
static void storable_n(const char *s, size_t n, int want, const char *msg, const char *name)
{
	struct pd_err e = PD_ERR_INIT;
	int r = pd_json_storable(s, n, &e);

	if (!ok(r == want && (want == 1 || (e.code == PD_EX_DATAERR && strcmp(e.msg, msg) == 0)),
		name))
		printf("#   got %d '%s', want %d '%s'\n", r, e.msg, want, msg ? msg : "");
}

static void storable(const char *s, int want, const char *msg, const char *name)
{
	storable_n(s, strlen(s), want, msg, name);
}

#define OUT_OF_RANGE "number out of range (PostgreSQL numeric cannot store it)"

/*
 * PostgreSQL 15 numeric's limits as jsonb reads them (checked against the
 * server with psql: '1e131071'::jsonb stores, '1e131072'::jsonb is "value
 * overflows numeric format", and so on): numbers are refused by
 * pd_json_parse, and found by pd_json_storable.
 */
static void test_numeric_range(void)
{
	static const struct {
		const char *n;
		int fits;
	} cases[] = {
	    {"1e131071", 1},
	    {"1e131072", 0},
	    {"-1e131072", 0},
	    {"9.9999e131071", 1},
	    {"0.001e131074", 1},
	    {"0.001e131075", 0},
	    {"1e-16383", 1},
	    {"1e-16384", 0},
	    {"1.0e-16383", 0},
	    {"0e-16383", 1},
	    {"0e-16384", 0},
	    {"0e-20000", 0},
	    {"0.0000e131072", 1},
	    {"0e1073741822", 1},
	    {"0e1073741823", 0},
	    {"0e-1073741822", 0},
	    {"1e999999", 0},
	    {"1e999999999999999999999", 0},
	    {"-0", 1},
	    {"1E+5", 1},
	    {"123456789.123456789e-3", 1},
	    {"12e131071", 0},
	    {"12e131070", 1},
	    {"0.5e131072", 1},
	};
	char name[160], buf[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_json j = PD_JSON_INIT;
		struct pd_err e = PD_ERR_INIT;

		snprintf(name, sizeof(name), "numeric range: %s %s", cases[i].n,
			 cases[i].fits ? "fits" : "does not");
		ok((pd_json_parse(&j, cases[i].n, strlen(cases[i].n), &e) == 0) == cases[i].fits,
		   name);
		pd_json_release(&j);
		snprintf(buf, sizeof(buf), "[%s]", cases[i].n);
		snprintf(name, sizeof(name), "storable: [%s]", cases[i].n);
		storable(buf, cases[i].fits,
			 "number out of range (PostgreSQL numeric cannot store "
			 "it) at line 1, column 2",
			 name);
	}
	bad("{\"n\":1e999999}", "line 1, column 6: " OUT_OF_RANGE, "parse: 1e999999");
	ok(!pd_json_is_number("1e999999"), "is_number: 1e999999 is not one jsonb stores");

	/* Digits: 16383 after the point fit, 16384 do not; 131072 before it fit, 131073 not. */
	{
		size_t n = 200000;
		char *b = malloc(n);

		memset(b, '0', n);
		b[0] = '0';
		b[1] = '.';
		b[16384] = '1'; /* the 16383rd digit after the point */
		storable_n(b, 16385, 1, NULL, "16383 digits after the point");
		b[16384] = '0';
		b[16385] = '1';
		storable_n(b, 16386, 0, OUT_OF_RANGE " at line 1, column 1",
			   "16384 digits after the point");
		memset(b, '0', n);
		b[0] = '1';
		storable_n(b, 131072, 1, NULL, "131072 digits before the point");
		storable_n(b, 131073, 0, OUT_OF_RANGE " at line 1, column 1",
			   "131073 digits before the point");
		free(b);
	}
}

static void test_storable(void)
{
	storable("{\"a\":[1,\"x\",null,true,{\"b\":2.5e3}]}", 1, NULL, "plain JSON is storable");
	storable(" \"\\ud83d\\ude00 \xc3\xa9\" ", 1, NULL, "a surrogate pair and UTF-8");
	storable("{\"s\":\"a\\u0000b\"}", 0,
		 "\\u0000 (NUL) is not allowed (PostgreSQL jsonb cannot store it) at line 1, "
		 "column 8",
		 "a \\u0000 escape: JSON jsonb cannot store");
	storable("{\"s\":\"\xff\"}", 0, "invalid UTF-8 at line 1, column 7",
		 "invalid UTF-8 in a string");
	storable("[\"\\ud800\"]", 0, "unpaired surrogate in \\u escape at line 1, column 3",
		 "a lone high surrogate");
	storable("[\"\\udc00x\"]", 0, "unpaired surrogate in \\u escape at line 1, column 3",
		 "a lone low surrogate");
	storable("[\"\\ud800\\u0041\"]", 0, "unpaired surrogate in \\u escape at line 1, column 3",
		 "a high surrogate then another escape");
	storable("{\"n\":1e999999}", 0, OUT_OF_RANGE " at line 1, column 6",
		 "a number out of numeric's range");
	storable("[1,\n \"\\u0000\", 1e999999]", 0,
		 "\\u0000 (NUL) is not allowed (PostgreSQL jsonb cannot store it) at line 2, "
		 "column 3",
		 "the first problem is the one named");
	/* Not JSON at all: -1, the parse error (the caller stores it as text). */
	storable("{\"s\":\"\\u0000\"", -1,
		 "invalid JSON at line 1, column 14: unexpected end of input",
		 "unstorable but cut short: not JSON");
	storable("hello", -1, "invalid JSON at line 1, column 1: invalid literal", "text");
	storable("{\"s\":\"a\tb\"}", -1,
		 "invalid JSON at line 1, column 8: control character in string",
		 "a raw control character: not JSON");
	storable_n("{\"s\":\"a\0b\"}", 11, -1,
		   "invalid JSON at line 1, column 8: control character in string",
		   "a raw NUL byte: not JSON");
	storable("{\"s\":\"\xff\" x}", -1, "invalid JSON at line 1, column 10: expected ',' or '}'",
		 "invalid UTF-8 then a grammar error: not JSON");
	storable("\xff", -1, "invalid JSON at line 1, column 1: expected a value",
		 "invalid UTF-8 outside a string: not JSON");
	storable("", -1, "invalid JSON at line 1, column 1: empty input", "empty");
}

/* pd_json_parse_lax reads what jsonb refuses; pd_json_str makes it safe. */
static void test_lax(void)
{
	static const char line[] =
	    "{\"id\":7,\"error\":\"a\\u0000b\\ud800c\\udc00\",\"result\":{\"n\":1e999999,"
	    "\"s\":\"\xff\"}}";
	struct pd_json j = PD_JSON_INIT;
	struct pd_err e = PD_ERR_INIT;
	long long id = 0;
	const char *p;
	size_t n;
	char *s;
	int t;

	ok(pd_json_parse(&j, line, strlen(line), &e) < 0, "strict parse refuses the line");
	pd_err_clear(&e);
	if (!ok(pd_json_parse_lax(&j, line, strlen(line), &e) == 0, "lax parse reads it")) {
		printf("#   error: %s\n", e.msg);
		return;
	}
	t = pd_json_get(&j, 0, "id");
	ok(pd_json_int(&j, t, &id) == 0 && id == 7, "lax: the id");
	s = pd_json_str(&j, pd_json_get(&j, 0, "error"));
	is_str(s,
	       "a\xef\xbf\xbd"
	       "b\xef\xbf\xbd"
	       "c\xef\xbf\xbd",
	       "lax: NUL and unpaired surrogates become U+FFFD");
	free(s);
	pd_json_span(&j, pd_json_get(&j, 0, "result"), &p, &n);
	storable_n(p, n, 0, OUT_OF_RANGE " at line 1, column 6", "lax: the result's span");
	pd_json_release(&j);
	pd_err_clear(&e);
	ok(pd_json_parse_lax(&j, "{\"id\":", 6, &e) < 0, "lax parse still refuses bad grammar");
	pd_json_release(&j);
}

int main(void)
{
	test_valid_types();
	test_escapes();
	test_structure();
	test_malformed();
	test_depth();
	test_accessors();
	test_quote();
	test_utf8();
	test_linecol();
	test_large();
	test_is_number();
	test_compact();
	test_numeric_range();
	test_storable();
	test_lax();
	str_of(NULL, -1);
	return done_testing();
}
