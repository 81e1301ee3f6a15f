/*
 * top: the frames of `pd-admin top`, a live view of queue depth by state
 * (and which queues, types or other limit keys are paused), worker
 * occupancy and the newest dead letters, and the terminal handling
 * it needs (raw keys with termios; no curses).
 */
#ifndef PD_TOP_H
#define PD_TOP_H

#include <termios.h>

#include "buf.h"
#include "db.h"

struct pd_top_opts {
	long long stale_ms;    /* a worker not seen for this long is gone; -1: its lease */
	long long interval_ms; /* shown in the title; 0 for a single snapshot */
	int ndead;	       /* newest dead letters shown */
	int color;	       /* ANSI colours */
	int width;	       /* the terminal's columns, 0: no limit (see pd_top_frame) */
};

/*
 * Append one frame (lines ending in '\n', no cursor movement) to out. Each
 * table fits o->width by leaving out its last columns; the queues' table
 * shows QUEUE, RUNNABLE, OLDEST_RUNNABLE, WORKERS and UNSERVED first, then
 * the states, so that the columns to act on are the last to go.
 */
int pd_top_frame(struct pd_db *db, const struct pd_top_opts *o, struct pd_buf *out,
		 struct pd_err *e);

/*
 * Append frame to out for a terminal of width x height (0: unlimited): each
 * line cut to width characters (ANSI sequences take no room; a cut line
 * gets a colour reset), at most height lines, and with erase each line
 * followed by "erase to end of line".
 */
void pd_top_clip(const char *frame, int width, int height, int erase, struct pd_buf *out);

/* A terminal in raw mode (no echo, no line buffering; signals still work). */
struct pd_tty {
	int fd;
	int raw; /* 1 while raw */
	struct termios saved;
};

/* Put fd into raw mode; -1 (and nothing changed) when fd is not a terminal. */
int pd_tty_raw(struct pd_tty *t, int fd);
/* Restore the saved mode; harmless when not raw. */
void pd_tty_restore(struct pd_tty *t);

#endif
