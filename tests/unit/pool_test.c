/*
 * Unit tests for lib/pool: the classification of exits, and the slot state
 * machine with real children (sh, cat, sleep): FREE -> RUNNING -> DONE,
 * STOPPING on a timeout or a stop, DONE at once when a program cannot start,
 * and nothing left behind (no zombie, no running child).
 */
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "pool.h"
#include "sig.h"
#include "tap.h"

static struct pd_handler sh(const char *cmd)
{
	struct pd_handler h;

	memset(&h, 0, sizeof(h));
	h.name = (char *)"t";
	h.run = (char *)cmd;
	h.timeout_ms = -1;
	return h;
}

static char **env(void)
{
	char **e = pd_xcalloc(2, sizeof(*e));

	e[0] = pd_xstrdup("PATH=/usr/bin:/bin");
	return e;
}

static void start(struct pd_pool *p, int i, const struct pd_handler *h, const char *input,
		  long long timeout_ms)
{
	struct pd_pool_job j = {h, env(), input, input ? strlen(input) : 0, timeout_ms, "test"};

	pd_pool_start(p, i, &j);
}

/* Answers each request on slot 0's channel with "got <request>", counting them (drive). */
static int answered;

/* Drive the pool like a daemon would, until no slot is RUNNING or STOPPING, or limit ms. */
static void drive(struct pd_pool *p, int sfd, long long limit_ms)
{
	long long end = pd_now_ms() + limit_ms;

	while (pd_now_ms() < end &&
	       (pd_pool_count(p, PD_SLOT_RUNNING) > 0 || pd_pool_count(p, PD_SLOT_STOPPING) > 0)) {
		struct pollfd fds[64];
		int n = pd_pool_pollfds(p, fds + 1, 63), timeout;
		long long dl = pd_pool_deadline(p), now = pd_now_ms();

		fds[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
		timeout = dl < 0 ? 100 : dl <= now ? 0 : (int)(dl - now);
		if (timeout > 100)
			timeout = 100;
		if (poll(fds, (nfds_t)n + 1, timeout) > 0) {
			if (fds[0].revents)
				while (pd_sig_read(sfd) > 0)
					pd_pool_reap(p);
			pd_pool_io(p, fds + 1, n);
		}
		if (pd_pool_request(p, 0) != NULL) {
			char a[300];

			snprintf(a, sizeof(a), "got %s", pd_pool_request(p, 0));
			pd_pool_answer(p, 0, a);
			answered++;
		}
		pd_pool_tick(p, pd_now_ms());
	}
}

static void test_classify(void)
{
	struct pd_handler h = sh("x");
	struct pd_proc_result r = {0, 0, 0, NULL};

	h.terminal_codes[0] = 3;
	h.nterminal = 1;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_OK, "exit 0: ok");
	r.exit_code = 64;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_TERMINAL, "exit 64: terminal");
	r.exit_code = 65;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, NULL), PD_EXIT_TERMINAL, "exit 65: terminal");
	r.exit_code = 3;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_TERMINAL,
	       "a configured terminal code");
	r.exit_code = 4;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_FAILED, "another code: failed");
	r.exit_code = -1;
	r.signal = SIGKILL;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_FAILED, "a signal: failed");
	r.timed_out = 1;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_TIMEOUT, "timed out");
	r = (struct pd_proc_result){0, 0, 0, NULL};
	is_int(pd_exit_classify(&r, PD_STOP_DRAIN, &h), PD_EXIT_DRAINED,
	       "stopped by a drain, even if it exited 0");
	is_int(pd_exit_classify(&r, PD_STOP_LEASE_LOST, &h), PD_EXIT_LEASE_LOST,
	       "stopped for a lost lease, even if it exited 0");
	r.exit_code = 127;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_CANNOT_RUN,
	       "a shell command's exit 127 (not found): cannot run");
	r.exit_code = 126;
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_CANNOT_RUN,
	       "a shell command's exit 126 (not executable): cannot run");
	h.run = NULL;
	h.exec_argv = (char *[]){(char *)"/bin/prog", NULL};
	is_int(pd_exit_classify(&r, PD_STOP_NONE, &h), PD_EXIT_FAILED,
	       "an exec'd program's own exit 126: failed");
	r.exit_code = 0;
	is_int(pd_exit_verdict(PD_EXIT_CANNOT_RUN), PD_VERDICT_DEAD, "cannot run: dead-lettered");
	is_int(pd_exit_verdict(PD_EXIT_NOT_STARTED), PD_VERDICT_RETRY, "not started: retried");
	is_str(pd_exit_class_name(PD_EXIT_NOT_STARTED), "could_not_start", "outcome names");
	is_str(pd_exit_class_name(PD_EXIT_CANNOT_RUN), "could_not_start", "cannot run: the same");
	is_str(pd_exit_class_name(PD_EXIT_LEASE_LOST), "lease_lost", "lease_lost name");
}

/* pd_snooze_line on text s: its return, *ms, and e's message into msg. */
static int snooze(const char *s, long long *ms, char *msg, size_t n)
{
	struct pd_err e = PD_ERR_INIT;
	int rc;

	*ms = -1;
	rc = pd_snooze_line(s, strlen(s), ms, &e);
	snprintf(msg, n, "%s", e.msg);
	return rc;
}

static void test_snooze_line(void)
{
	struct pd_pool_exit x;
	long long ms;
	char msg[512];

	is_int(snooze("snooze 30s", &ms, msg, sizeof(msg)), 1, "snooze 30s");
	is_int((int)(ms / 1000), 30, "30 s");
	is_int(snooze("working\n  snooze\t1m30s \r\n\n", &ms, msg, sizeof(msg)), 1,
	       "the last non-empty line, blanks around it");
	is_int((int)(ms / 1000), 90, "1m30s");
	is_int(snooze("{\"snooze\":\"250ms\"}\n", &ms, msg, sizeof(msg)), 1, "JSON form");
	is_int((int)ms, 250, "250 ms");
	is_int(snooze("{\"reason\": \"busy\", \"snooze\": 2}", &ms, msg, sizeof(msg)), 1,
	       "JSON form, a number of seconds, other members");
	is_int((int)ms, 2000, "2 s");
	is_int(snooze("snooze 0s", &ms, msg, sizeof(msg)), 1, "0 s is a snooze");
	is_int(snooze("snooze 365d", &ms, msg, sizeof(msg)), 1, "a year is the longest");
	is_int(snooze("", &ms, msg, sizeof(msg)), 0, "no stdout: no snooze line");
	is_int(snooze("snooze 30s\ndone\n", &ms, msg, sizeof(msg)), 0,
	       "a snooze line not last: none");
	is_int(snooze("snoozed 30s", &ms, msg, sizeof(msg)), 0, "snoozed: not the word");
	is_int(snooze("{\"wait\":\"30s\"}", &ms, msg, sizeof(msg)), 0, "JSON without snooze");
	is_int(snooze("{\"snooze\":", &ms, msg, sizeof(msg)), 0, "not JSON: no snooze line");
	is_int(snooze("[\"snooze\", \"30s\"]", &ms, msg, sizeof(msg)), 0, "not an object");
	is_int((int)ms, -1, "ms untouched when none");
	is_int(snooze("snooze 3 parsecs", &ms, msg, sizeof(msg)), -1, "a bad duration");
	is_str(msg,
	       "bad snooze line 'snooze 3 parsecs': invalid duration '3 parsecs': expected a "
	       "number with ms, s, m, h or d",
	       "the error names the line and the duration");
	is_int(snooze("snooze", &ms, msg, sizeof(msg)), -1, "no duration");
	is_str(msg, "bad snooze line 'snooze': no duration", "no duration: said so");
	is_int(snooze("{\"snooze\": null}", &ms, msg, sizeof(msg)), -1, "JSON null duration");
	is_int(snooze("{\"snooze\": \"-5s\"}", &ms, msg, sizeof(msg)), -1, "a negative one");
	is_int(snooze("snooze 366d", &ms, msg, sizeof(msg)), -1, "longer than a year");
	is_str(msg, "bad snooze line 'snooze 366d': snooze of '366d' longer than a year (365d)",
	       "too long: said so");

	memset(&x, 0, sizeof(x));
	x.cls = PD_EXIT_FAILED;
	x.exit_code = 75;
	pd_buf_puts(&x.out, "snooze 5s\n");
	pd_buf_puts(&x.error, "exit 75");
	pd_exit_snooze(&x);
	is_int(x.cls, PD_EXIT_SNOOZED, "exit 75 with a snooze line: snoozed");
	is_int((int)x.snooze_ms, 5000, "for 5 s");
	is_int(x.error.len, 0, "no error");
	is_int(pd_exit_verdict(x.cls), PD_VERDICT_SNOOZE, "verdict snooze");
	is_str(pd_exit_class_name(x.cls), "snoozed", "outcome snoozed");
	x.cls = PD_EXIT_FAILED;
	x.exit_code = 1;
	pd_exit_snooze(&x);
	is_int(x.cls, PD_EXIT_FAILED, "another exit code with a snooze line: failed");
	x.exit_code = 75;
	x.out_truncated = 1;
	pd_exit_snooze(&x);
	is_int(x.cls, PD_EXIT_FAILED, "stdout cut at the limit: no snooze");
	x.out_truncated = 0;
	pd_buf_reset(&x.out);
	pd_buf_puts(&x.out, "snooze later\n");
	pd_buf_reset(&x.error);
	pd_buf_puts(&x.error, "exit 75");
	pd_exit_snooze(&x);
	is_int(x.cls, PD_EXIT_FAILED, "a bad snooze line: failed");
	like(pd_buf_str(&x.error), "exit 75: bad snooze line 'snooze later'", "its error");
	pd_buf_reset(&x.out);
	pd_buf_reset(&x.error);
	pd_buf_puts(&x.error, "exit 75");
	pd_exit_snooze(&x);
	is_str(pd_buf_str(&x.error), "exit 75", "no snooze line: exit 75 as before");
	pd_pool_exit_release(&x);
}

static void test_not_started(void)
{
	static const int permanent[] = {ENOENT, EACCES, ENOEXEC, ENOTDIR, ELOOP, ENAMETOOLONG};
	static const int transient[] = {EAGAIN, ENOMEM, EMFILE, ENFILE, ETXTBSY};
	struct pd_pool_exit x;

	for (size_t i = 0; i < sizeof(permanent) / sizeof(*permanent); i++) {
		memset(&x, 0, sizeof(x));
		pd_exit_not_started(&x, "/usr/bin/nope", permanent[i], "could not start");
		is_int(x.cls, PD_EXIT_CANNOT_RUN, "a missing or bad program cannot run");
		like(pd_buf_str(&x.error), "cannot run /usr/bin/nope: ", "... naming the path");
		pd_pool_exit_release(&x);
	}
	for (size_t i = 0; i < sizeof(transient) / sizeof(*transient); i++) {
		memset(&x, 0, sizeof(x));
		pd_exit_not_started(&x, "/usr/bin/nope", transient[i], "could not start: busy");
		is_int(x.cls, PD_EXIT_NOT_STARTED, "a resource failure is retryable");
		is_str(pd_buf_str(&x.error), "could not start: busy", "... with the start error");
		pd_pool_exit_release(&x);
	}
}

static void test_lifecycle(int sfd)
{
	struct pd_pool p;
	struct pd_handler cat = sh("cat; echo 'last words' >&2"),
			  fail = sh("echo oops >&2; exit 3");
	struct pd_handler slow = sh("exec sleep 5"), missing;
	const char *input = "{\"hello\": \"world\"}";
	pid_t pid;

	memset(&missing, 0, sizeof(missing));
	missing.name = (char *)"m";
	missing.exec_argv = (char *[]){(char *)"/nonexistent/prog", NULL};
	pd_pool_init(&p, 4, 0, 200, "handler stderr");
	is_int(pd_pool_count(&p, PD_SLOT_FREE), 4, "a new pool: every slot FREE");
	is_int(pd_pool_free_slot(&p), 0, "the first free slot");

	start(&p, 0, &cat, input, 0);
	start(&p, 1, &fail, NULL, 0);
	start(&p, 2, &slow, NULL, 150);
	is_int(pd_pool_count(&p, PD_SLOT_RUNNING), 3, "three RUNNING");
	is_int(pd_pool_busy(&p), 3, "three busy");
	is_int(pd_pool_free_slot(&p), 3, "slot 3 is free");
	ok(pd_pool_start(&p, 3, &(struct pd_pool_job){&missing, env(), NULL, 0, 0, "m"}) < 0,
	   "a missing program does not start");
	is_int(p.slots[3].state, PD_SLOT_DONE, "... its slot is DONE at once");
	is_int(p.slots[3].exit.cls, PD_EXIT_CANNOT_RUN, "... cannot run: terminal");
	is_str(pd_buf_str(&p.slots[3].exit.error),
	       "cannot run /nonexistent/prog: No such file or directory",
	       "... and says why, naming the path");
	is_int(pd_pool_free_slot(&p), -1, "no free slot left");

	drive(&p, sfd, 5000);
	is_int(p.slots[0].state, PD_SLOT_DONE, "cat: DONE");
	is_int(p.slots[0].exit.cls, PD_EXIT_OK, "cat: ok");
	is_str(pd_buf_str(&p.slots[0].exit.out), input, "cat: stdout is the input");
	is_str(pd_buf_str(&p.slots[0].exit.last_line), "last words", "cat: the last stderr line");
	is_int(p.slots[1].exit.cls, PD_EXIT_FAILED, "exit 3: failed");
	is_str(pd_buf_str(&p.slots[1].exit.error), "exit 3", "exit 3: the error line");
	like(pd_buf_str(&p.slots[1].exit.tail), "oops", "exit 3: the stderr tail");
	is_int(p.slots[2].exit.cls, PD_EXIT_TIMEOUT, "sleep past its timeout: timeout");
	is_str(pd_buf_str(&p.slots[2].exit.error), "timeout after 150ms", "the timeout's error");
	ok(p.slots[2].exit.ran_ms >= 150, "it ran at least its timeout");

	pd_pool_clear(&p, 1);
	is_int(p.slots[1].state, PD_SLOT_FREE, "clear: DONE -> FREE");
	ok(pd_buf_str(&p.slots[1].exit.error)[0] == '\0', "clear: the exit is gone");

	/* Stops: a lost lease and a drain, whatever the child then does. */
	start(&p, 1, &slow, NULL, 0);
	pd_pool_clear(&p, 2);
	start(&p, 2, &slow, NULL, 0);
	pd_pool_stop(&p, 1, PD_STOP_LEASE_LOST);
	pd_pool_stop(&p, 2, PD_STOP_DRAIN);
	is_int(p.slots[1].state, PD_SLOT_STOPPING, "stop: RUNNING -> STOPPING");
	pd_pool_stop(&p, 0, PD_STOP_DRAIN);
	is_int(p.slots[0].state, PD_SLOT_DONE, "stop on a DONE slot changes nothing");
	drive(&p, sfd, 5000);
	is_int(p.slots[1].exit.cls, PD_EXIT_LEASE_LOST, "stopped for a lost lease");
	is_int(p.slots[2].exit.cls, PD_EXIT_DRAINED, "stopped by a drain");
	is_int(p.slots[2].exit.signal, SIGTERM, "... by SIGTERM");

	/* Release kills what still runs. */
	pd_pool_clear(&p, 1);
	start(&p, 1, &slow, NULL, 0);
	pid = p.slots[1].proc.pid;
	pd_pool_release(&p);
	ok(kill(pid, 0) < 0 && errno == ESRCH, "release: a running child is killed and reaped");
	ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "no child left, no zombie");
}

/* A pool with channels: fd 3 and PD_WORKER_FD in the child, a line each way, one at a time. */
static void test_chan(int sfd)
{
	struct pd_pool p;
	struct pd_handler h = sh("printf 'lease 7 9\\n' >&3; read a <&3; printf 'two\\n' >&3; "
				 "read b <&3; printf '%s|%s|%s' \"$PD_WORKER_FD\" \"$a\" \"$b\"");
	struct pd_handler big = sh("head -c 300 /dev/zero | tr '\\0' a >&3; read r <&3; "
				   "printf '%s' \"$r\"");
	struct pd_handler none =
	    sh("printf '%s' \"${PD_WORKER_FD-unset}\"; true >&3 2>/dev/null || exit 9");

	pd_pool_init(&p, 1, 0, 0, NULL);
	p.chan = 1;
	answered = 0;
	start(&p, 0, &h, NULL, 5000);
	drive(&p, sfd, 5000);
	is_str(pd_buf_str(&p.slots[0].exit.out), "3|got lease 7 9|got two",
	       "chan: requests reach the owner, answers reach the child, on fd 3");
	is_int(answered, 2, "chan: two requests, one at a time");
	pd_pool_clear(&p, 0);
	start(&p, 0, &big, NULL, 5000);
	drive(&p, sfd, 5000);
	is_str(pd_buf_str(&p.slots[0].exit.out), "error request too long",
	       "chan: a request over PD_CHAN_REQUEST_MAX is refused");
	pd_pool_clear(&p, 0);
	pd_pool_release(&p);

	pd_pool_init(&p, 1, 0, 0, NULL);
	start(&p, 0, &none, NULL, 5000);
	drive(&p, sfd, 5000);
	is_str(pd_buf_str(&p.slots[0].exit.out), "unset", "no chan: no PD_WORKER_FD");
	is_int(p.slots[0].exit.exit_code, 9, "no chan: fd 3 is closed in the child");
	pd_pool_release(&p);
}

/* pd_progress: whole lines, the latest kept, cut and cleaned. */
static void test_progress_note(void)
{
	struct pd_progress pr;
	char line[300];

	memset(&pr, 0, sizeof(pr));
	pd_progress_feed(&pr, "10%\n20", 6);
	is_str(pd_buf_str(&pr.line), "10%", "progress: a whole line is a note");
	ok(pr.dirty, "progress: a new note is dirty");
	pr.dirty = 0;
	pd_progress_feed(&pr, "%\r\n\n", 4);
	is_str(pd_buf_str(&pr.line), "20%",
	       "progress: pieces join, CR dropped, blank lines skipped");
	ok(pr.dirty, "progress: dirty again");
	pd_progress_feed(&pr,
			 "a\tb\x01"
			 "c\xc2\x85"
			 "d\n",
			 9);
	is_str(pd_buf_str(&pr.line), "a b c  d", "progress: control characters become spaces");
	memset(line, 'x', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	pd_progress_feed(&pr, line, sizeof(line));
	is_int((long long)pr.line.len, PD_PROGRESS_MAX, "progress: a long line is cut");
	pd_progress_feed(&pr, "last", 4);
	is_int((long long)pr.line.len, PD_PROGRESS_MAX, "progress: no note before the newline");
	pd_progress_eof(&pr);
	is_str(pd_buf_str(&pr.line), "last", "progress: the end makes the rest a note");
	pd_progress_set(&pr, "\xff ok", 4);
	is_str(pd_buf_str(&pr.line), "\xef\xbf\xbd ok", "progress: invalid UTF-8 replaced");
	pd_progress_release(&pr);
}

/* The progress pipe: PD_PROGRESS_FD=4, the latest note moved to the exit. */
static void test_progress_pipe(int sfd)
{
	struct pd_pool p;
	struct pd_handler h = sh("printf 'one\\ntwo\\nthree' >&4; printf '%s' \"$PD_PROGRESS_FD\"");
	struct pd_handler flood = sh("yes 0123456789 | head -c 999999 >&4; echo end >&4");
	struct pd_handler none = sh("printf '%s' \"${PD_PROGRESS_FD-unset}\"; true >&4 2>/dev/null "
				    "|| exit 9");

	pd_pool_init(&p, 1, 0, 0, NULL);
	p.chan = 1;
	p.progress = 1;
	start(&p, 0, &h, NULL, 5000);
	drive(&p, sfd, 5000);
	is_str(pd_buf_str(&p.slots[0].exit.out), "4", "progress pipe: PD_PROGRESS_FD=4");
	is_str(pd_buf_str(&p.slots[0].exit.progress.line), "three",
	       "progress pipe: the last note, moved to the exit");
	pd_pool_clear(&p, 0);
	start(&p, 0, &flood, NULL, 10000);
	drive(&p, sfd, 10000);
	is_int(p.slots[0].exit.exit_code, 0, "progress pipe: a flood is read to the end");
	is_str(pd_buf_str(&p.slots[0].exit.progress.line), "end", "progress pipe: the last note");
	pd_pool_clear(&p, 0);
	pd_pool_release(&p);

	pd_pool_init(&p, 1, 0, 0, NULL);
	p.progress = 1; /* without a channel: fd 4 alone, fd 3 closed */
	start(&p, 0, &h, NULL, 5000);
	drive(&p, sfd, 5000);
	is_str(pd_buf_str(&p.slots[0].exit.progress.line), "three",
	       "progress pipe without a channel");
	pd_pool_release(&p);

	pd_pool_init(&p, 1, 0, 0, NULL);
	start(&p, 0, &none, NULL, 5000);
	drive(&p, sfd, 5000);
	is_str(pd_buf_str(&p.slots[0].exit.out), "unset", "no progress pipe: no PD_PROGRESS_FD");
	is_int(p.slots[0].exit.exit_code, 9, "no progress pipe: fd 4 is closed in the child");
	pd_pool_release(&p);
}

int main(void)
{
	struct pd_err e = PD_ERR_INIT;
	int sfd;

	pd_sig_ignore_pipe();
	sfd = pd_sig_open((int[]){SIGCHLD}, 1, &e);
	ok(sfd >= 0, "signalfd for SIGCHLD");
	test_classify();
	test_snooze_line();
	test_not_started();
	test_lifecycle(sfd);
	test_chan(sfd);
	test_progress_note();
	test_progress_pipe(sfd);
	close(sfd);
	return done_testing();
}
