#include <sys/stat.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "json.h"
#include "log.h"

static enum pd_log_level min_level = PD_LOG_INFO;
static enum pd_log_format log_format = PD_LOG_LOGFMT;
static int journal = -1; /* stderr is the journal: 1, no: 0, not looked yet: -1 */
static const char *level_names[] = {"debug", "info", "warn", "error"};
static const int syslog_priority[] = {7, 6, 4, 3};

void pd_log_set_level(enum pd_log_level level)
{
	min_level = level;
}

enum pd_log_level pd_log_get_level(void)
{
	return min_level;
}

int pd_log_level_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	if (strcmp(s, "warning") == 0)
		return PD_LOG_WARN;
	return -1;
}

void pd_log_set_format(enum pd_log_format format)
{
	log_format = format;
}

int pd_log_format_parse(const char *s)
{
	if (strcmp(s, "logfmt") == 0)
		return PD_LOG_LOGFMT;
	if (strcmp(s, "json") == 0)
		return PD_LOG_JSON;
	return -1;
}

/* $JOURNAL_STREAM is "DEVICE:INODE" of stderr: systemd connected it to the journal. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	if (js == NULL || sscanf(js, "%llu:%llu%c", &dev, &ino, &end) != 2)
		return 0;
	return fstat(2, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

const char *pd_log_quote(char *out, size_t n, const char *s)
{
	size_t o = 0;
	int need = (*s == '\0');

	for (const char *p = s; *p && !need; p++)
		if (*p == ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p < 0x20)
			need = 1;
	if (!need) {
		snprintf(out, n, "%s", s);
		return out;
	}
	if (n < 3) {
		if (n)
			out[0] = '\0';
		return out;
	}
	out[o++] = '"';
	for (const char *p = s; *p && o + 3 < n; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c == '\t') {
			out[o++] = '\\';
			out[o++] = 't';
		} else if (c < 0x20) {
			out[o++] = '?';
		} else {
			out[o++] = (char)c;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
	return out;
}

/*
 * The next key=value pair of logfmt text at *p into key and value (unquoted,
 * the escapes of pd_log_quote undone); 0 at the end. A word without '=' is
 * a key with an empty value.
 */
static int next_field(const char **p, struct pd_buf *key, struct pd_buf *value)
{
	const char *s = *p;

	pd_buf_reset(key);
	pd_buf_reset(value);
	while (*s == ' ')
		s++;
	if (*s == '\0')
		return 0;
	while (*s && *s != '=' && *s != ' ')
		pd_buf_putc(key, *s++);
	if (*s == '=' && *++s == '"') {
		for (s++; *s && *s != '"'; s++) {
			if (*s == '\\' && s[1]) {
				s++;
				pd_buf_putc(value, *s == 'n' ? '\n' : *s == 't' ? '\t' : *s);
			} else {
				pd_buf_putc(value, *s);
			}
		}
		if (*s == '"')
			s++;
	} else {
		while (*s && *s != ' ')
			pd_buf_putc(value, *s++);
	}
	*p = s;
	return 1;
}

/* The fields (logfmt) as JSON members, each ,"key":value. */
static void json_fields(struct pd_buf *b, const char *fields)
{
	struct pd_buf key = PD_BUF_INIT, value = PD_BUF_INIT;

	while (next_field(&fields, &key, &value)) {
		pd_buf_putc(b, ',');
		pd_json_quote(b, pd_buf_str(&key), key.len);
		pd_buf_putc(b, ':');
		if (value.len > 0 && pd_json_is_number(pd_buf_str(&value)))
			pd_buf_puts(b, pd_buf_str(&value));
		else
			pd_json_quote(b, pd_buf_str(&value), value.len);
	}
	pd_buf_release(&key);
	pd_buf_release(&value);
}

void pd_log_format_line(struct pd_buf *b, enum pd_log_format format, const struct timeval *tv,
			enum pd_log_level level, const char *msg, const char *fields)
{
	char ts[64] = "";
	char q[1024];

	if (tv) {
		struct tm tm;
		char day[32];

		gmtime_r(&tv->tv_sec, &tm);
		strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(ts, sizeof(ts), "%s.%03dZ", day, (int)(tv->tv_usec / 1000 % 1000));
	}
	if (format == PD_LOG_JSON) {
		pd_buf_putc(b, '{');
		if (tv)
			pd_buf_printf(b, "\"ts\":\"%s\",", ts);
		pd_buf_printf(b, "\"level\":\"%s\",\"msg\":", level_names[level]);
		pd_json_quote(b, msg, strlen(msg));
		if (fields)
			json_fields(b, fields);
		pd_buf_puts(b, "}\n");
		return;
	}
	if (tv)
		pd_buf_printf(b, "ts=%s ", ts);
	pd_buf_printf(b, "level=%s msg=%s", level_names[level], pd_log_quote(q, sizeof(q), msg));
	if (fields && *fields)
		pd_buf_printf(b, " %s", fields);
	pd_buf_putc(b, '\n');
}

void pd_log(enum pd_log_level level, const char *msg, const char *fmt, ...)
{
	struct pd_buf line = PD_BUF_INIT, fields = PD_BUF_INIT;
	struct timeval tv;

	if (level < min_level)
		return;
	if (journal < 0)
		journal = stderr_is_journal();
	gettimeofday(&tv, NULL);
	if (fmt && *fmt) {
		va_list ap;
		int n;

		va_start(ap, fmt);
		n = vsnprintf(NULL, 0, fmt, ap);
		va_end(ap);
		if (n > 0) {
			pd_buf_grow(&fields, (size_t)n);
			va_start(ap, fmt);
			vsnprintf(fields.data + fields.len, (size_t)n + 1, fmt, ap);
			va_end(ap);
			fields.len += (size_t)n;
		}
	}
	if (journal)
		pd_buf_printf(&line, "<%d>", syslog_priority[level]);
	pd_log_format_line(&line, log_format, journal ? NULL : &tv, level, msg,
			   fields.len ? pd_buf_str(&fields) : NULL);
	/* One write, so lines from concurrent processes do not interleave. */
	fwrite(line.data, 1, line.len, stderr);
	fflush(stderr);
	pd_buf_release(&line);
	pd_buf_release(&fields);
}

void pd_die_msg(const char *msg)
{
	fprintf(stderr, "%s: %s\n", pd_progname(), msg);
}
