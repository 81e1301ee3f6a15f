/*
 * log: logfmt lines on stderr.
 *
 *   ts=2026-11-30T00:42:39.123Z level=info msg="job done" job=42 outcome=ok
 *
 * The only process-wide state besides the program name (err.h). Values that may hold spaces,
 * quotes or newlines go through pd_log_quote(), which adds quotes only when
 * needed.
 *
 * Or, with pd_log_set_format(PD_LOG_JSON), one JSON object a line, the
 * key=value fields as members (a value that is a JSON number as a number,
 * any other as a string):
 *
 *   {"ts":"2026-11-30T00:42:39.123Z","level":"info","msg":"job done","job":42,"outcome":"ok"}
 *
 * When stderr is the journal ($JOURNAL_STREAM names stderr's device and
 * inode, as systemd sets it), the journal stamps each line itself: no ts,
 * and each line starts with its syslog priority ("<6>"), which the journal
 * takes off and keeps as the entry's priority.
 */
#ifndef PD_LOG_H
#define PD_LOG_H

#include <stddef.h>
#include <sys/time.h>

#include "buf.h"
#include "err.h"

enum pd_log_level { PD_LOG_DEBUG, PD_LOG_INFO, PD_LOG_WARN, PD_LOG_ERROR };
enum pd_log_format { PD_LOG_LOGFMT, PD_LOG_JSON };

void pd_log_set_level(enum pd_log_level level);
enum pd_log_level pd_log_get_level(void);
/* Parse "debug", "info", "warn", "error"; -1 if unknown. */
int pd_log_level_parse(const char *s);

void pd_log_set_format(enum pd_log_format format);
/* Parse "logfmt" or "json"; -1 if unknown. */
int pd_log_format_parse(const char *s);

/*
 * Append one line (newline included) to b as pd_log writes it in format:
 * stamped tv (NULL: no ts), level, msg, then fields, the key=value text of
 * pd_log's fmt (NULL or "": none). For pd_log and its tests.
 */
void pd_log_format_line(struct pd_buf *b, enum pd_log_format format, const struct timeval *tv,
			enum pd_log_level level, const char *msg, const char *fields);

/*
 * Log msg at level, followed by the key=value pairs that fmt produces
 * (fmt may be NULL). Nothing is written below the current level.
 */
void pd_log(enum pd_log_level level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Quote s for a logfmt value into out (size n), truncating if needed.
 * Returns out. Strings without spaces, quotes, '=' or control characters
 * are copied as they are.
 */
const char *pd_log_quote(char *out, size_t n, const char *s);

/* Print "progname: msg" as one line on stderr (for the final error). */
void pd_die_msg(const char *msg);

#endif
