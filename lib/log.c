#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "buf.h"
#include "log.h"

static const char *progname = "pendulum";
static enum pd_log_level min_level = PD_LOG_INFO;
static const char *level_names[] = {"debug", "info", "warn", "error"};

void pd_set_progname(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;

	if (argv0 && *argv0)
		progname = slash ? slash + 1 : argv0;
}

const char *pd_progname(void)
{
	return progname;
}

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

void pd_log(enum pd_log_level level, const char *msg, const char *fmt, ...)
{
	struct pd_buf line = PD_BUF_INIT;
	char q[1024];
	struct timeval tv;
	struct tm tm;
	char ts[32];

	if (level < min_level)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	pd_buf_printf(&line, "ts=%s.%03ldZ level=%s msg=%s", ts, (long)(tv.tv_usec / 1000),
		      level_names[level], pd_log_quote(q, sizeof(q), msg));
	if (fmt && *fmt) {
		va_list ap;
		int n;

		pd_buf_putc(&line, ' ');
		va_start(ap, fmt);
		n = vsnprintf(NULL, 0, fmt, ap);
		va_end(ap);
		if (n > 0) {
			pd_buf_grow(&line, (size_t)n);
			va_start(ap, fmt);
			vsnprintf(line.data + line.len, (size_t)n + 1, fmt, ap);
			va_end(ap);
			line.len += (size_t)n;
		}
	}
	pd_buf_putc(&line, '\n');
	/* One write, so lines from concurrent processes do not interleave. */
	fwrite(line.data, 1, line.len, stderr);
	fflush(stderr);
	pd_buf_release(&line);
}

void pd_die_msg(const char *msg)
{
	fprintf(stderr, "%s: %s\n", progname, msg);
}
