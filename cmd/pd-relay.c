/*
 * pd-relay: drain the outbox: claim messages, run a publish command for
 * each with nothing held, record the outcome fenced on the claim token.
 *
 * One thread, one poll loop, like pd-worker's: a signalfd (SIGCHLD,
 * SIGTERM, SIGINT, SIGHUP), the libpq socket (LISTEN pendulum_outbox) and
 * each publish command's pipes. The database going away stops nothing that
 * runs: outcomes wait in memory and the loop reconnects with backoff.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app.h"
#include "cli.h"
#include "clock.h"
#include "dur.h"
#include "link.h"
#include "log.h"
#include "outbox.h"
#include "proc.h"
#include "retry.h"
#include "sig.h"
#include "text.h"

#define SYNOPSIS                                                                                   \
	"usage: pd-relay [-hVv] [-c file] [-d conninfo] [options] --publish COMMAND | --exec "     \
	"PATH\n"
#define MAX_CMDS   256
#define MAX_TOPICS 64
#define OUT_LIMIT  4096 /* the publish command's stdout is read and thrown away */
#define ERR_LINE   400	/* the last stderr line kept for last_error */

extern char **environ;

static void help(void)
{
	printf(
	    SYNOPSIS
	    "\nClaim outbox messages and run a publish command for each, payload on stdin.\n\n"
	    "      --publish COMMAND       run COMMAND with /bin/sh -c for every topic\n"
	    "      --exec PATH             exec PATH (no shell) for every topic\n"
	    "  -t, --topic TOPIC           claim only this topic (repeatable)\n"
	    "      --timeout DURATION      kill a publish command after this (default 30s)\n"
	    "      --visibility DURATION   a claimed message stays hidden this long (default "
	    "60s)\n"
	    "  -n, --concurrency N         publish commands at once (default 4)\n"
	    "      --batch N               messages claimed at once (default: concurrency)\n"
	    "      --poll DURATION         poll interval when no notification comes (default 1s)\n"
	    "      --drain-timeout DUR     on SIGTERM, wait this long for commands (default 30s)\n"
	    "      --once                  claim one batch, publish it, exit\n"
	    "      --until-idle            exit once nothing is claimable and nothing runs\n"
	    "  -c, --config FILE           configuration file (relay:, retry:)\n"
	    "  -d, --database CONNINFO     libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	    "      --quiet                 log warnings and errors only\n"
	    "  -v, --verbose               log debug messages\n"
	    "  -h, --help                  show this help\n"
	    "  -V, --version               show the version\n\n"
	    "Exit 0 publishes; 64 or 65 dead-letters; anything else is retried with backoff.\n"
	    "Per message key, messages are published in the order recorded. See pd-relay(1).\n");
}

struct pubcmd {
	const char *topic;	 /* "*": every topic */
	const char *run;	 /* shell command, or NULL */
	const char *const *argv; /* exec'd, or NULL */
	long long timeout_ms;	 /* -1: the default */
	const char *exec_one[2];
};

struct slot {
	int used;
	struct pd_outbox_msg msg;
	const struct pubcmd *cmd;
	struct pd_proc proc;
	int proc_init; /* pd_proc_start was called: pd_proc_release is owed */
	int running;   /* started and not yet collected */
	int finished;  /* outcome computed, waiting to be written */
	long long timeout_ms;
	struct pd_outbox_outcome out;
	struct pd_buf error, last_line;
	char **envp;
	char prefix[400];
};

struct relay {
	struct pd_app app;
	struct pubcmd cmds[MAX_CMDS];
	int ncmds;
	const char *topics[MAX_TOPICS]; /* the claim's filter */
	int ntopics;
	int any_topic; /* no filter */
	long long concurrency, batch, visibility_ms, timeout_ms, poll_ms, drain_ms, grace_ms;
	int once, until_idle;
	char id[128], host[64];
	struct slot *slots;
	int sigfd;
	struct pd_rng rng;
	/* loop state */
	struct pd_link link;
	int wake, idle, claimed, draining, drain_killed;
	long long next_claim, drain_deadline;
};

static const struct pubcmd *find_cmd(const struct relay *r, const char *topic)
{
	const struct pubcmd *any = NULL;

	for (int i = 0; i < r->ncmds; i++) {
		if (strcmp(r->cmds[i].topic, topic) == 0)
			return &r->cmds[i];
		if (strcmp(r->cmds[i].topic, "*") == 0 && any == NULL)
			any = &r->cmds[i];
	}
	return any;
}

static int running_count(const struct relay *r)
{
	int n = 0;

	for (int i = 0; i < r->concurrency; i++)
		n += r->slots[i].used;
	return n;
}

static void slot_free(struct slot *s)
{
	if (s->proc_init)
		pd_proc_release(&s->proc);
	pd_outbox_msg_clear(&s->msg);
	pd_buf_release(&s->error);
	pd_buf_release(&s->last_line);
	pd_outbox_env_free(s->envp);
	memset(s, 0, sizeof(*s));
}

static void on_stderr(void *ctx, const char *line, size_t n)
{
	struct slot *s = ctx;
	char q[4200];

	pd_log(PD_LOG_INFO, "publish stderr", "%s line=%s", s->prefix,
	       pd_log_quote(q, sizeof(q), line));
	if (n > 0) {
		pd_buf_reset(&s->last_line);
		pd_utf8_sanitize(&s->last_line, line, n < ERR_LINE ? n : ERR_LINE);
	}
}

static void set_retry(struct relay *r, struct slot *s)
{
	s->out.kind = PD_OUTBOX_RETRY;
	s->out.backoff_ms = pd_backoff_ms(&r->rng, r->app.cfg.retry.base_ms,
					  r->app.cfg.retry.cap_ms, s->msg.attempt);
}

/* Turn a finished publish command into s->out. */
static void classify(struct relay *r, struct slot *s)
{
	struct pd_proc_result res = {-1, 0, 0, NULL};
	char dur[PD_DUR_MAX];

	pd_proc_result(&s->proc, &res);
	memset(&s->out, 0, sizeof(s->out));
	if (res.killed_reason && strcmp(res.killed_reason, "drain") == 0) {
		s->out.kind = PD_OUTBOX_RELEASE;
	} else if (res.timed_out) {
		pd_dur_format(s->timeout_ms, dur, sizeof(dur));
		pd_buf_printf(&s->error, "timeout after %s", dur);
		set_retry(r, s);
	} else if (res.exit_code == 0) {
		s->out.kind = PD_OUTBOX_PUBLISHED;
	} else {
		if (res.exit_code >= 0)
			pd_buf_printf(&s->error, "exit %d", res.exit_code);
		else
			pd_buf_printf(&s->error, "killed by signal %d (%s)", res.signal,
				      strsignal(res.signal));
		if (res.exit_code == 64 || res.exit_code == 65) {
			s->out.kind = PD_OUTBOX_DEAD;
			s->out.dead_reason = "terminal exit code";
		} else {
			set_retry(r, s);
		}
	}
	if (s->out.kind != PD_OUTBOX_PUBLISHED && s->out.kind != PD_OUTBOX_RELEASE &&
	    s->last_line.len)
		pd_buf_printf(&s->error, ": %s", s->last_line.data);
	s->out.error = s->error.len ? s->error.data : NULL;
	s->finished = 1;
	s->running = 0;
}

static void start_slot(struct relay *r, struct slot *s)
{
	struct pd_proc_spec spec;
	const char *sh[4] = {"/bin/sh", "-c", NULL, NULL};
	struct pd_err e = PD_ERR_INIT;
	char q[160], k[160];

	snprintf(s->prefix, sizeof(s->prefix), "message=%lld topic=%s%s%s attempt=%d", s->msg.id,
		 pd_log_quote(q, sizeof(q), s->msg.topic), s->msg.key ? " key=" : "",
		 s->msg.key ? pd_log_quote(k, sizeof(k), s->msg.key) : "", s->msg.attempt);
	if (s->cmd == NULL) {
		/* The claim asks only for topics with a command; give it back if not. */
		pd_log(PD_LOG_ERROR, "no publish command for the topic: released", "%s", s->prefix);
		memset(&s->out, 0, sizeof(s->out));
		s->out.kind = PD_OUTBOX_RELEASE;
		s->finished = 1;
		return;
	}
	s->timeout_ms = s->cmd->timeout_ms > 0 ? s->cmd->timeout_ms : r->timeout_ms;
	if ((s->envp = pd_outbox_env((const char *const *)environ, &s->msg, &e)) == NULL) {
		/* Not through pendulum.outbox_record, which checks headers: data error. */
		memset(&s->out, 0, sizeof(s->out));
		pd_buf_puts(&s->error, e.msg);
		s->out.kind = PD_OUTBOX_DEAD;
		s->out.dead_reason = "invalid headers";
		s->out.error = s->error.data;
		s->finished = 1;
		return;
	}
	memset(&spec, 0, sizeof(spec));
	if (s->cmd->run) {
		sh[2] = s->cmd->run;
		spec.argv = sh;
	} else {
		spec.argv = s->cmd->argv;
	}
	spec.envp = (const char *const *)s->envp;
	spec.input = s->msg.payload;
	spec.input_len = strlen(s->msg.payload);
	spec.stdout_limit = OUT_LIMIT;
	spec.timeout_ms = s->timeout_ms;
	spec.kill_grace_ms = r->grace_ms;
	spec.on_stderr_line = on_stderr;
	spec.ctx = s;
	pd_log(PD_LOG_DEBUG, "publishing", "%s token=%lld", s->prefix, s->msg.token);
	s->proc_init = 1;
	if (pd_proc_start(&s->proc, &spec, &e) < 0) {
		pd_log(PD_LOG_WARN, "publish command could not start", "%s error=%s", s->prefix,
		       pd_log_quote((char[600]){0}, 600, e.msg));
		memset(&s->out, 0, sizeof(s->out));
		pd_buf_puts(&s->error, e.msg);
		set_retry(r, s);
		s->out.error = s->error.data;
		s->finished = 1;
		return;
	}
	s->running = 1;
}

/*
 * Connect and LISTEN. At start-up (first) any failure is final; later an
 * unavailable database is retried with backoff.
 */
static int connect_db(struct relay *r, int first, struct pd_err *e)
{
	if (pd_app_connect(&r->app, 1, e) < 0 || pd_db_exec(&r->app.db, "LISTEN pendulum_outbox", 0,
							    NULL, PGRES_COMMAND_OK, NULL, e) < 0) {
		if (first || e->code != PD_EX_UNAVAILABLE)
			return -1;
		pd_link_retry(&r->link, e);
		pd_err_clear(e);
		return 0;
	}
	pd_link_up(&r->link);
	r->wake = 1;
	pd_log(first ? PD_LOG_DEBUG : PD_LOG_INFO, first ? "connected" : "reconnected", "relay=%s",
	       r->id);
	return 0;
}

static void log_outcome(const struct slot *s, const char *state)
{
	struct pd_buf b = PD_BUF_INIT;
	char q[600];

	if (s->out.kind == PD_OUTBOX_PUBLISHED) {
		pd_log(PD_LOG_INFO, "message published", "%s", s->prefix);
		return;
	}
	pd_buf_printf(&b, "%s state=%s", s->prefix, state);
	if (s->out.kind == PD_OUTBOX_RETRY && strcmp(state, "PENDING") == 0)
		pd_buf_printf(&b, " retry_ms=%lld", s->out.backoff_ms);
	if (s->out.error)
		pd_buf_printf(&b, " error=%s", pd_log_quote(q, sizeof(q), s->out.error));
	if (s->out.kind == PD_OUTBOX_RELEASE)
		pd_log(PD_LOG_INFO, "message released", "%s", b.data);
	else
		pd_log(PD_LOG_WARN, "publish failed", "%s", b.data);
	pd_buf_release(&b);
}

/* Write the outcomes of finished publish commands. */
static int flush_outcomes(struct relay *r)
{
	for (int i = 0; i < r->concurrency && r->link.up; i++) {
		struct slot *s = &r->slots[i];
		struct pd_err e = PD_ERR_INIT;
		char state[16];
		int rc;

		if (!s->used || !s->finished)
			continue;
		rc = pd_outbox_finish(&r->app.db, s->msg.id, s->msg.token, &s->out, state, &e);
		if (rc < 0)
			return pd_link_failed(&r->link, &e);
		if (rc == 0)
			pd_log(PD_LOG_WARN, "fenced: the claim was taken over, outcome not written",
			       "%s token=%lld", s->prefix, s->msg.token);
		else
			log_outcome(s, state);
		slot_free(s);
		r->wake = 1; /* the next message for this key may be claimable now */
	}
	return 0;
}

static int claim(struct relay *r)
{
	struct pd_outbox_msg *m = NULL;
	struct pd_err e = PD_ERR_INIT;
	int free_slots = (int)r->concurrency - running_count(r), n = 0, dead = 0, want;

	want = free_slots < r->batch ? free_slots : (int)r->batch;
	if (want <= 0)
		return 0;
	if (pd_outbox_claim(&r->app.db, r->id, r->any_topic ? NULL : r->topics, r->ntopics, want,
			    r->visibility_ms, &m, &n, &dead, &e) < 0)
		return pd_link_failed(&r->link, &e);
	r->claimed = 1;
	r->idle = n == 0 && dead == 0;
	if (dead)
		pd_log(PD_LOG_WARN, "dead-lettered: attempts used up and the last claim lapsed",
		       "messages=%d", dead);
	if (n + dead == want)
		r->wake = 1; /* there may be more */
	for (int k = 0, i = 0; k < n; k++) {
		struct slot *s;

		while (r->slots[i].used)
			i++;
		s = &r->slots[i];
		s->used = 1;
		s->msg = m[k];
		s->cmd = find_cmd(r, s->msg.topic);
		start_slot(r, s);
	}
	free(m); /* the strings now belong to the slots */
	return 0;
}

static void reap_children(struct relay *r)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int mine = 0;

		for (int i = 0; i < r->concurrency && !mine; i++)
			if (r->slots[i].running)
				mine = pd_proc_reap(&r->slots[i].proc, pid, st);
		if (!mine)
			pd_log(PD_LOG_DEBUG, "reaped an unknown child", "pid=%d", (int)pid);
	}
}

static void start_drain(struct relay *r, int sig)
{
	if (r->draining) {
		pd_log(PD_LOG_WARN, "second signal: stopping publish commands now", "signal=%d",
		       sig);
		r->drain_deadline = pd_now_ms();
		return;
	}
	r->draining = 1;
	r->drain_deadline = pd_now_ms() + r->drain_ms;
	pd_log(PD_LOG_INFO, "draining: no new messages",
	       "signal=%d running=%d drain_timeout_ms=%lld", sig, running_count(r), r->drain_ms);
}

static void drain_notifies(struct relay *r)
{
	if (pd_link_notifies(&r->link))
		r->wake = 1;
}

static int loop(struct relay *r)
{
	struct pollfd *fds = pd_xcalloc((size_t)(2 + 3 * r->concurrency), sizeof(*fds));
	int rc = 0;

	for (;;) {
		long long now = pd_now_ms(), deadline = -1;
		int nfds = 0, n, may_claim;

		if (!r->link.up && now >= r->link.next_connect) {
			struct pd_err e = PD_ERR_INIT;

			if (connect_db(r, 0, &e) < 0) {
				pd_log(PD_LOG_ERROR, "cannot reconnect", "error=%s",
				       pd_log_quote((char[600]){0}, 600, e.msg));
				rc = e.code;
				break;
			}
		}
		if (r->link.up && flush_outcomes(r) < 0) {
			rc = PD_EX_SOFTWARE;
			break;
		}
		if (r->link.up)
			drain_notifies(r);
		now = pd_now_ms();
		may_claim = r->link.up && !r->draining && !(r->once && r->claimed);
		if (may_claim && (r->wake || now >= r->next_claim) &&
		    running_count(r) < r->concurrency) {
			r->wake = 0;
			r->next_claim = now + r->poll_ms;
			if (claim(r) < 0) {
				rc = PD_EX_SOFTWARE;
				break;
			}
			continue; /* start the new children's I/O at once */
		}
		if (r->draining || (r->once && r->claimed)) {
			if (running_count(r) == 0)
				break;
		}
		if (r->draining && now >= r->drain_deadline && !r->drain_killed) {
			r->drain_killed = 1;
			for (int i = 0; i < r->concurrency; i++)
				if (r->slots[i].running)
					pd_proc_kill(&r->slots[i].proc, "drain");
		}
		if (r->until_idle && r->idle && running_count(r) == 0 && r->link.up)
			break;

		fds[nfds++] = (struct pollfd){.fd = r->sigfd, .events = POLLIN};
		if (r->link.up)
			fds[nfds++] =
			    (struct pollfd){.fd = PQsocket(r->app.db.conn), .events = POLLIN};
		for (int i = 0; i < r->concurrency; i++) {
			struct slot *s = &r->slots[i];

			if (!s->running)
				continue;
			nfds += pd_proc_pollfds(&s->proc, fds + nfds, 3);
			deadline = pd_deadline_min(deadline, pd_proc_deadline(&s->proc));
		}
		if (may_claim)
			deadline = pd_deadline_min(deadline, r->next_claim);
		if (!r->link.up)
			deadline = pd_deadline_min(deadline, r->link.next_connect);
		if (r->draining && !r->drain_killed)
			deadline = pd_deadline_min(deadline, r->drain_deadline);
		now = pd_now_ms();
		n = poll(fds, (nfds_t)nfds,
			 deadline < 0	   ? -1
			 : deadline <= now ? 0
					   : (int)(deadline - now));
		if (n < 0 && errno != EINTR) {
			pd_log(PD_LOG_ERROR, "poll failed", "error=%s", strerror(errno));
			rc = PD_EX_SOFTWARE;
			break;
		}
		if (n > 0 && (fds[0].revents & POLLIN)) {
			int sig;

			while ((sig = pd_sig_read(r->sigfd)) > 0) {
				if (sig == SIGCHLD)
					reap_children(r);
				else
					start_drain(r, sig);
			}
		}
		if (n > 0 && r->link.up && fds[1].revents) {
			pd_link_read(&r->link);
			drain_notifies(r);
		}
		now = pd_now_ms();
		for (int i = 0; i < r->concurrency; i++) {
			struct slot *s = &r->slots[i];

			if (!s->running)
				continue;
			if (n > 0)
				pd_proc_io(&s->proc, fds, nfds);
			pd_proc_tick(&s->proc, now);
			if (pd_proc_done(&s->proc))
				classify(r, s);
		}
	}
	/* Write what the drain stopped (or what is left after a fatal error). */
	if (r->link.up)
		flush_outcomes(r);
	free(fds);
	return rc;
}

static int set_cmd(struct relay *r, const char *arg, int exec, struct pd_err *e)
{
	struct pubcmd *c = &r->cmds[0];

	if (r->ncmds > 0)
		return pd_errf(e, PD_EX_USAGE, "give --publish or --exec once");
	if (*arg == '\0')
		return pd_errf(e, PD_EX_USAGE, "option --%s: must not be empty",
			       exec ? "exec" : "publish");
	c->topic = "*";
	c->timeout_ms = -1;
	if (exec) {
		c->exec_one[0] = arg;
		c->argv = c->exec_one;
	} else {
		c->run = arg;
	}
	r->ncmds = 1;
	return 0;
}

static int parse_args(struct relay *r, int argc, char **argv, struct pd_err *e)
{
	enum {
		O_PUBLISH = 256,
		O_EXEC,
		O_TIMEOUT,
		O_VISIBILITY,
		O_BATCH,
		O_POLL,
		O_DRAIN,
		O_ONCE,
		O_IDLE,
		O_QUIET
	};
	static const struct option opts[] = {
	    {"publish", required_argument, NULL, O_PUBLISH},
	    {"exec", required_argument, NULL, O_EXEC},
	    {"topic", required_argument, NULL, 't'},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"visibility", required_argument, NULL, O_VISIBILITY},
	    {"concurrency", required_argument, NULL, 'n'},
	    {"batch", required_argument, NULL, O_BATCH},
	    {"poll", required_argument, NULL, O_POLL},
	    {"drain-timeout", required_argument, NULL, O_DRAIN},
	    {"once", no_argument, NULL, O_ONCE},
	    {"until-idle", no_argument, NULL, O_IDLE},
	    {"config", required_argument, NULL, 'c'},
	    {"database", required_argument, NULL, 'd'},
	    {"quiet", no_argument, NULL, O_QUIET},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "+:t:n:c:d:vhV", opts, NULL)) != -1) {
		switch (ch) {
		case O_PUBLISH:
		case O_EXEC:
			if (set_cmd(r, optarg, ch == O_EXEC, e) < 0)
				return -1;
			break;
		case 't':
			if (r->ntopics == MAX_TOPICS)
				return pd_errf(e, PD_EX_USAGE, "too many topics (at most %d)",
					       MAX_TOPICS);
			if (*optarg == '\0')
				return pd_errf(e, PD_EX_USAGE, "option --topic: must not be empty");
			r->topics[r->ntopics++] = optarg;
			break;
		case O_TIMEOUT:
			if (pd_cli_dur("--timeout", optarg, &r->timeout_ms, e) < 0)
				return -1;
			if (r->timeout_ms <= 0)
				return pd_errf(e, PD_EX_USAGE,
					       "option --timeout: must be positive");
			break;
		case O_VISIBILITY:
			if (pd_cli_dur("--visibility", optarg, &r->visibility_ms, e) < 0)
				return -1;
			if (r->visibility_ms <= 0)
				return pd_errf(e, PD_EX_USAGE,
					       "option --visibility: must be positive");
			break;
		case 'n':
			if (pd_cli_int("--concurrency", optarg, 1, 1024, &r->concurrency, e) < 0)
				return -1;
			break;
		case O_BATCH:
			if (pd_cli_int("--batch", optarg, 1, 1000, &r->batch, e) < 0)
				return -1;
			break;
		case O_POLL:
			if (pd_cli_dur("--poll", optarg, &r->poll_ms, e) < 0)
				return -1;
			break;
		case O_DRAIN:
			if (pd_cli_dur("--drain-timeout", optarg, &r->drain_ms, e) < 0)
				return -1;
			break;
		case O_ONCE:
			r->once = 1;
			break;
		case O_IDLE:
			r->until_idle = 1;
			break;
		case 'c':
			r->app.config_path = optarg;
			break;
		case 'd':
			r->app.database = optarg;
			break;
		case O_QUIET:
			r->app.verbosity--;
			break;
		case 'v':
			r->app.verbosity++;
			break;
		case 'h':
			help();
			return 1;
		case 'V':
			pd_cli_version();
			return 1;
		default:
			pd_cli_bad_option(SYNOPSIS, ch, argv);
			return 2;
		}
	}
	if (optind < argc)
		return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'", argv[optind]);
	if (r->once && r->until_idle)
		return pd_errf(e, PD_EX_USAGE, "give --once or --until-idle, not both");
	return 0;
}

/* Flags over the file over the defaults; then the commands and the topics to claim. */
static int configure(struct relay *r, struct pd_err *e)
{
	const struct pd_config *cfg = &r->app.cfg;
	char t[PD_DUR_MAX], g[PD_DUR_MAX], v[PD_DUR_MAX];

	if (r->concurrency < 0)
		r->concurrency = cfg->relay.concurrency;
	if (r->batch < 0)
		r->batch = cfg->relay.batch > 0 ? cfg->relay.batch : r->concurrency;
	if (r->visibility_ms < 0)
		r->visibility_ms = cfg->relay.visibility_ms;
	if (r->timeout_ms < 0)
		r->timeout_ms = cfg->relay.timeout_ms;
	if (r->poll_ms < 0)
		r->poll_ms = cfg->relay.poll_ms;
	if (r->drain_ms < 0)
		r->drain_ms = cfg->relay.drain_timeout_ms;
	r->grace_ms = cfg->relay.kill_grace_ms > 0 ? cfg->relay.kill_grace_ms : 1;
	/* A flag's command is "*": the file's commands for named topics still apply. */
	for (int i = 0; i < cfg->relay.ntopics && r->ncmds < MAX_CMDS; i++) {
		const struct pd_topic_cfg *tc = &cfg->relay.topics[i];
		struct pubcmd *c = &r->cmds[r->ncmds];

		if (strcmp(tc->topic, "*") == 0 && find_cmd(r, "*"))
			continue;
		c->topic = tc->topic;
		c->run = tc->run;
		c->argv = (const char *const *)tc->exec_argv;
		c->timeout_ms = tc->timeout_ms;
		r->ncmds++;
	}
	if (r->ncmds == 0)
		return pd_errf(e, PD_EX_USAGE,
			       "no publish command: give --publish COMMAND, --exec PATH, or "
			       "relay.topics in the config file");
	if (r->ntopics > 0) {
		for (int i = 0; i < r->ntopics; i++)
			if (find_cmd(r, r->topics[i]) == NULL)
				return pd_errf(e, PD_EX_USAGE,
					       "no publish command for topic '%s': give --publish, "
					       "--exec, or relay.topics.%s in the config file",
					       r->topics[i], r->topics[i]);
	} else if (find_cmd(r, "*")) {
		r->any_topic = 1;
	} else {
		for (int i = 0; i < r->ncmds && r->ntopics < MAX_TOPICS; i++)
			r->topics[r->ntopics++] = r->cmds[i].topic;
	}
	/* A publish command must be dead before its claim lapses. */
	for (int i = 0; i < r->ncmds; i++) {
		long long to = r->cmds[i].timeout_ms > 0 ? r->cmds[i].timeout_ms : r->timeout_ms;

		if (to + r->grace_ms >= r->visibility_ms) {
			pd_dur_format(to, t, sizeof(t));
			pd_dur_format(r->grace_ms, g, sizeof(g));
			pd_dur_format(r->visibility_ms, v, sizeof(v));
			return pd_errf(
			    e, PD_EX_USAGE,
			    "the publish timeout for topic '%s' (%s) plus the kill grace "
			    "(%s) must be shorter than the visibility timeout (%s)",
			    r->cmds[i].topic, t, g, v);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct relay r;
	struct pd_err e = PD_ERR_INIT;
	int rc, signals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};

	pd_cli_init(argv[0]);
	pd_app_init(&r.app);
	r.concurrency = r.batch = r.visibility_ms = r.timeout_ms = r.poll_ms = r.drain_ms = -1;
	r.sigfd = -1;
	rc = parse_args(&r, argc, argv, &e);
	if (rc == 1)
		return pd_cli_finish_stdout();
	if (rc == 2)
		return PD_EX_USAGE;
	if (rc < 0)
		return pd_cli_usage(SYNOPSIS, "%s", e.msg);
	if (pd_app_load(&r.app, &e) < 0 || configure(&r, &e) < 0)
		goto fail;
	r.slots = pd_xcalloc((size_t)r.concurrency, sizeof(*r.slots));
	gethostname(r.host, sizeof(r.host) - 1);
	pd_rng_seed(&r.rng, 0);
	snprintf(r.id, sizeof(r.id), "%s:%d:%04x", r.host, (int)getpid(),
		 (unsigned)(pd_rng_next(&r.rng) & 0xffff));
	if ((r.sigfd = pd_sig_open(signals, 4, &e)) < 0)
		goto fail;
	pd_link_init(&r.link, &r.app.db);
	if (connect_db(&r, 1, &e) < 0)
		goto fail;
	{
		struct pd_buf t = PD_BUF_INIT;

		for (int i = 0; i < r.ntopics; i++)
			pd_buf_printf(&t, "%s%s", i ? "," : "", r.topics[i]);
		pd_log(PD_LOG_INFO, "relay started",
		       "relay=%s concurrency=%lld visibility_ms=%lld topics=%s", r.id,
		       r.concurrency, r.visibility_ms,
		       r.any_topic ? "*" : pd_log_quote((char[600]){0}, 600, t.data));
		pd_buf_release(&t);
	}
	rc = loop(&r);
	pd_log(PD_LOG_INFO, "relay stopped", "relay=%s", r.id);
	goto out;
fail:
	pd_die_msg(e.msg);
	rc = e.code;
out:
	for (int i = 0; r.slots && i < r.concurrency; i++)
		if (r.slots[i].used)
			slot_free(&r.slots[i]);
	free(r.slots);
	if (r.sigfd >= 0)
		close(r.sigfd);
	pd_app_release(&r.app);
	return rc;
}
