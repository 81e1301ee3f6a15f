/*
 * pd-test-tool: library internals exposed to the shell tests (git's
 * t/helper/test-tool). Not installed.
 *
 *   pd-test-tool run [OPTIONS] -- PROG [ARGS...]
 *   pd-test-tool kill-after MS [OPTIONS] -- PROG [ARGS...]
 *   pd-test-tool notify-listen PATH
 *   pd-test-tool unblock-race ROUNDS
 *   pd-test-tool prepared-lost auto|on lost|taken
 *   pd-test-tool start ID TOKEN
 *
 * The child's stdout goes to stdout verbatim, each stderr line to stderr as
 * "stderr: LINE", then one summary line on stderr:
 *
 *   result exit=N signal=S timed_out=0|1 truncated=0|1 killed=REASON|- tail_len=N
 *
 * notify-listen binds a Unix datagram socket at PATH (what a service
 * manager gives as $NOTIFY_SOCKET) and prints each datagram it receives,
 * then a newline, flushed, until it is killed.
 *
 * Exit 0 when the child ran (whatever it did), 70 when it could not be
 * started, 64 on bad usage.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "db.h"
#include "err.h"
#include "jobs.h"
#include "trip.h"
#include "log.h"
#include "proc.h"
#include "sig.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
};

static int cmd_run(int argc, char **argv);
static int cmd_kill_after(int argc, char **argv);
static int cmd_notify_listen(int argc, char **argv);
static int cmd_unblock_race(int argc, char **argv);
static int cmd_prepared_lost(int argc, char **argv);
static int cmd_start(int argc, char **argv);
static int usage(void);

static const struct cmd cmds[] = {
    {"run", cmd_run,
     "run [--timeout MS] [--grace MS] [--limit BYTES] [--input STRING | --input-file FILE]\n"
     "        [--hold-fd] -- PROG [ARGS...]"},
    {"kill-after", cmd_kill_after, "kill-after MS [run options] -- PROG [ARGS...]"},
    {"notify-listen", cmd_notify_listen, "notify-listen PATH"},
    {"unblock-race", cmd_unblock_race, "unblock-race ROUNDS (on $PD_DATABASE_URL)"},
    {"prepared-lost", cmd_prepared_lost,
     "prepared-lost auto|on lost|taken (on a direct $PD_DATABASE_URL)"},
    {"start", cmd_start, "start ID TOKEN (on $PD_DATABASE_URL)"},
};

struct run_opts {
	struct pd_proc_spec spec;
	struct pd_buf input;
	int hold_fd;
};

static int usage(void)
{
	fprintf(stderr, "usage:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(stderr, "  %s %s\n", pd_progname(), cmds[i].usage);
	return PD_EX_USAGE;
}

static int parse_num(const char *s, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max) {
		fprintf(stderr, "%s: invalid number '%s'\n", pd_progname(), s);
		return -1;
	}
	*out = v;
	return 0;
}

static int read_file(const char *path, struct pd_buf *b)
{
	FILE *f = fopen(path, "rb");
	char tmp[65536];
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "%s: cannot open '%s': %s\n", pd_progname(), path, strerror(errno));
		return -1;
	}
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		pd_buf_append(b, tmp, n);
	if (ferror(f)) {
		fprintf(stderr, "%s: cannot read '%s'\n", pd_progname(), path);
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

static void print_line(void *ctx, const char *line, size_t n)
{
	(void)ctx;
	fputs("stderr: ", stderr);
	fwrite(line, 1, n, stderr);
	fputc('\n', stderr);
}

/* Parse the options shared by every subcommand; returns optind or -1. */
static int parse_run_opts(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
	    {"grace", required_argument, NULL, 'g'},
	    {"hold-fd", no_argument, NULL, 'H'},
	    {"input", required_argument, NULL, 'i'},
	    {"input-file", required_argument, NULL, 'f'},
	    {"limit", required_argument, NULL, 'l'},
	    {"timeout", required_argument, NULL, 't'},
	    {NULL, 0, NULL, 0},
	};
	long long v;
	int c;

	memset(&o->spec, 0, sizeof(o->spec));
	o->spec.kill_grace_ms = 2000;
	o->spec.on_stderr_line = print_line;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (parse_num(optarg, LLONG_MAX / 2, &v) < 0)
				return -1;
			o->spec.kill_grace_ms = v;
			break;
		case 'H':
			o->hold_fd = 1;
			break;
		case 'i':
			pd_buf_reset(&o->input);
			pd_buf_puts(&o->input, optarg);
			break;
		case 'f':
			pd_buf_reset(&o->input);
			if (read_file(optarg, &o->input) < 0)
				return -1;
			break;
		case 'l':
			if (parse_num(optarg, LLONG_MAX / 2, &v) < 0)
				return -1;
			o->spec.stdout_limit = (size_t)v;
			break;
		case 't':
			if (parse_num(optarg, LLONG_MAX / 2, &v) < 0)
				return -1;
			o->spec.timeout_ms = v;
			break;
		default:
			return -1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no program to run\n", pd_progname());
		return -1;
	}
	o->spec.argv = (const char *const *)argv + optind;
	o->spec.input = o->input.data;
	o->spec.input_len = o->input.len;
	/*
	 * Like the worker's libpq socket: an fd without O_CLOEXEC, which the
	 * child must not inherit.
	 */
	if (o->hold_fd && open("/dev/null", O_RDONLY) < 0) {
		fprintf(stderr, "%s: cannot open /dev/null: %s\n", pd_progname(), strerror(errno));
		return -1;
	}
	return optind;
}

static int report(const struct pd_proc *p)
{
	struct pd_proc_result r;

	pd_proc_result(p, &r);
	fwrite(p->out.data ? p->out.data : "", 1, p->out.len, stdout);
	fprintf(stderr,
		"result exit=%d signal=%d timed_out=%d truncated=%d killed=%s tail_len=%zu\n",
		r.exit_code, r.signal, r.timed_out, p->truncated,
		r.killed_reason ? r.killed_reason : "-", p->err_tail.len);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: cannot write stdout: %s\n", pd_progname(), strerror(errno));
		return PD_EX_SOFTWARE;
	}
	return PD_EX_OK;
}

static int cmd_run(int argc, char **argv)
{
	struct run_opts o = {.input = PD_BUF_INIT};
	struct pd_err e = PD_ERR_INIT;
	struct pd_proc p;
	int rc;

	if (parse_run_opts(argc, argv, &o) < 0) {
		pd_buf_release(&o.input);
		return usage();
	}
	if (pd_proc_run(&p, &o.spec, &e) < 0) {
		pd_die_msg(e.msg);
		rc = e.code;
	} else {
		rc = report(&p);
	}
	pd_proc_release(&p);
	pd_buf_release(&o.input);
	return rc;
}

/*
 * The worker's way: a SIGCHLD signalfd, one poll loop, waitpid(-1) and
 * pd_proc_reap(), plus a pd_proc_kill("test") after ms.
 */
static int cmd_kill_after(int argc, char **argv)
{
	static const int sigs[] = {SIGCHLD};
	struct run_opts o = {.input = PD_BUF_INIT};
	struct pd_err e = PD_ERR_INIT;
	long long ms, kill_at;
	struct pd_proc p;
	int sfd, rc, killed = 0;

	if (argc < 2 || parse_num(argv[1], LLONG_MAX / 2, &ms) < 0 ||
	    parse_run_opts(argc - 1, argv + 1, &o) < 0) {
		pd_buf_release(&o.input);
		return usage();
	}
	sfd = pd_sig_open(sigs, 1, &e);
	if (sfd < 0 || pd_proc_start(&p, &o.spec, &e) < 0) {
		pd_die_msg(e.msg);
		if (sfd >= 0)
			close(sfd);
		pd_buf_release(&o.input);
		return e.code;
	}
	kill_at = pd_now_ms() + ms;
	while (!pd_proc_done(&p)) {
		struct pollfd fds[PD_PROC_MAX_FDS + 1];
		int n = pd_proc_pollfds(&p, fds, PD_PROC_MAX_FDS);
		long long dl = pd_proc_deadline(&p), now;
		int timeout = -1, st;
		pid_t pid;

		if (!killed && (dl < 0 || kill_at < dl))
			dl = kill_at;
		if (dl >= 0) {
			long long left = dl - pd_now_ms();

			timeout = left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
		}
		fds[n] = (struct pollfd){.fd = sfd, .events = POLLIN};
		if (poll(fds, (nfds_t)n + 1, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: poll: %s\n", pd_progname(), strerror(errno));
			break;
		}
		pd_proc_io(&p, fds, n);
		if (fds[n].revents) {
			while (pd_sig_read(sfd) > 0)
				;
			while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
				if (!pd_proc_reap(&p, pid, st))
					pd_log(PD_LOG_WARN, "reaped unknown child", "pid=%d",
					       (int)pid);
		}
		now = pd_now_ms();
		if (!killed && now >= kill_at) {
			pd_proc_kill(&p, "test");
			killed = 1;
		}
		pd_proc_tick(&p, now);
	}
	rc = report(&p);
	pd_proc_release(&p);
	close(sfd);
	pd_buf_release(&o.input);
	return rc;
}

static int cmd_notify_listen(int argc, char **argv)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char buf[4096];
	sigset_t all;
	int fd;

	if (argc != 2 || strlen(argv[1]) >= sizeof(a.sun_path))
		return usage();
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL); /* killed by the tests' SIGTERM */
	memcpy(a.sun_path, argv[1], strlen(argv[1]));
	unlink(argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "%s: bind '%s': %s\n", pd_progname(), argv[1], strerror(errno));
		return PD_EX_SOFTWARE;
	}
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: recv: %s\n", pd_progname(), strerror(errno));
			return PD_EX_SOFTWARE;
		}
		fwrite(buf, 1, (size_t)n, stdout);
		putchar('\n');
		fflush(stdout);
	}
}

/* One connection of the race: the job it claimed and its outcome batch. */
struct racer {
	struct pd_db db;
	struct pd_claimed *job;
	int njob;
	struct pd_trip_item item; /* out: its outcome */
	struct pd_trip s;
};

/* Claim one race dependency on r's connection and make its success outcome. */
static int racer_claim(struct racer *r, const char *worker, struct pd_err *e)
{
	static const char *const queues[] = {"race"}, *const types[] = {"race_dep"};

	pd_claimed_free(r->job, r->njob);
	if (pd_jobs_claim(&r->db, worker, queues, 1, types, 1, 1, 60000, 1, &r->job, &r->njob, e) <
	    0)
		return -1;
	if (r->njob != 1)
		return pd_errf(e, PD_EX_SOFTWARE, "claimed %d race jobs, not 1", r->njob);
	memset(&r->item, 0, sizeof(r->item));
	r->item.kind = PD_TRIP_OUTCOME;
	r->item.id = r->item.out.id = r->job->id;
	r->item.token = r->item.out.token = r->job->token;
	r->item.out.o.kind = PD_VERDICT_DONE;
	r->item.out.o.outcome = "succeeded";
	r->item.out.o.exit_code = 0;
	r->item.out.o.started_ago_ms = -1;
	memset(&r->s, 0, sizeof(r->s));
	r->s.items = &r->item;
	r->s.n = r->s.cap = 1;
	r->s.noutcomes = 1;
	r->s.worker = worker;
	return 0;
}

static int exec_cmd(struct pd_db *db, const char *sql, struct pd_err *e)
{
	return pd_db_exec(db, sql, 0, NULL, PGRES_COMMAND_OK, NULL, e);
}

/*
 * unblock-race N: N times, jobs A1 and A2 (type race_dep, queue race) and B
 * after both; A1 and A2 claimed on two connections, and their successes
 * written by the worker's own outcome statement (pd_jobs_sync_send) on each, so
 * that neither transaction has committed when the other's statement runs:
 * on even rounds both inside explicit transactions (the second's statement
 * sent while the first's is uncommitted, then the first committed: the
 * interleaving in which each statement sees the other's success
 * uncommitted), on odd rounds both sent at once and left to race. After
 * both: B must be PENDING (no reaper runs here). Prints "N rounds, K left
 * BLOCKED"; exit 0 when K is 0, 1 otherwise, 69 or 70 on a failure.
 */
static int cmd_unblock_race(int argc, char **argv)
{
	static const char enq[] =
	    "SELECT a1, a2, pendulum.enqueue('default', 'race_after', '{}', 'race',"
	    " depends_on => ARRAY[a1, a2])"
	    " FROM (SELECT pendulum.enqueue('default', 'race_dep', '{}', 'race') AS a1,"
	    " pendulum.enqueue('default', 'race_dep', '{}', 'race') AS a2) x";
	struct racer r[2];
	struct pd_db db = PD_DB_INIT;
	struct pd_err e = PD_ERR_INIT;
	const char *url = getenv("PD_DATABASE_URL");
	long long rounds, left = 0;
	int rc = PD_EX_OK;

	if (argc != 2 || parse_num(argv[1], 1000000, &rounds) < 0 || url == NULL)
		return usage();
	memset(r, 0, sizeof(r));
	r[0].db = (struct pd_db)PD_DB_INIT;
	r[1].db = (struct pd_db)PD_DB_INIT;
	if (pd_db_connect(&db, url, "race", &e) < 0 ||
	    pd_db_connect(&r[0].db, url, "race1", &e) < 0 ||
	    pd_db_connect(&r[1].db, url, "race2", &e) < 0)
		goto fail;
	for (long long i = 0; i < rounds; i++) {
		PGresult *res;
		const char *b[1];
		char *state = NULL;

		if (pd_db_exec(&db, enq, 0, NULL, PGRES_TUPLES_OK, &res, &e) < 0)
			goto fail;
		b[0] = PQgetvalue(res, 0, 2);
		if (racer_claim(&r[0], "race:1", &e) < 0 || racer_claim(&r[1], "race:2", &e) < 0) {
			PQclear(res);
			goto fail;
		}
		if (i % 2 == 0) {
			if (exec_cmd(&r[0].db, "BEGIN", &e) < 0 ||
			    exec_cmd(&r[1].db, "BEGIN", &e) < 0 ||
			    pd_jobs_sync_send(&r[0].db, &r[0].s, &e) < 0 ||
			    pd_jobs_sync_wait(&r[0].db, &r[0].s, &e) < 0 ||
			    pd_jobs_sync_send(&r[1].db, &r[1].s, &e) < 0)
				goto round_fail;
			/* let the second statement reach B (with the fix: wait for its lock) */
			poll(NULL, 0, 5);
			if (exec_cmd(&r[0].db, "COMMIT", &e) < 0 ||
			    pd_jobs_sync_wait(&r[1].db, &r[1].s, &e) < 0 ||
			    exec_cmd(&r[1].db, "COMMIT", &e) < 0)
				goto round_fail;
		} else {
			if (pd_jobs_sync_send(&r[0].db, &r[0].s, &e) < 0 ||
			    pd_jobs_sync_send(&r[1].db, &r[1].s, &e) < 0 ||
			    pd_jobs_sync_wait(&r[0].db, &r[0].s, &e) < 0 ||
			    pd_jobs_sync_wait(&r[1].db, &r[1].s, &e) < 0)
				goto round_fail;
		}
		if (!r[0].item.out.applied || !r[1].item.out.applied) {
			pd_errf(&e, PD_EX_SOFTWARE, "round %lld: an outcome was fenced off", i);
			goto round_fail;
		}
		if (pd_db_value(&db, "SELECT state FROM pendulum.jobs WHERE id = $1", 1, b, &state,
				&e) < 0)
			goto round_fail;
		if (state == NULL || strcmp(state, "BLOCKED") == 0) {
			left++;
			fprintf(stderr, "%s: round %lld: job %s left %s\n", pd_progname(), i, b[0],
				state ? state : "missing");
		}
		free(state);
		PQclear(res);
		continue;
	round_fail:
		PQclear(res);
		goto fail;
	}
	printf("%lld rounds, %lld left BLOCKED\n", rounds, left);
	rc = left ? 1 : PD_EX_OK;
	goto done;
fail:
	fprintf(stderr, "%s: unblock-race: %s\n", pd_progname(), e.msg);
	rc = e.code ? e.code : PD_EX_SOFTWARE;
done:
	for (int k = 0; k < 2; k++) {
		pd_claimed_free(r[k].job, r[k].njob);
		pd_db_close(&r[k].db);
	}
	pd_db_close(&db);
	return rc;
}

/* Send v[0..n) as one pipeline and wait for it: 0, or -1 with e filled. */
static int pipeline_run(struct pd_db *db, struct pd_db_stmt *v, int n, struct pd_err *e)
{
	int rc;

	if (pd_db_pipeline_send(db, v, n, e) < 0)
		return -1;
	while ((rc = pd_db_pipeline_collect(db, e)) == 0)
		if (pd_db_await(db, e) < 0)
			return -1;
	return rc < 0 ? -1 : 0;
}

/*
 * prepared-lost MODE HOW: what a pooler that keeps the real backend key
 * (undetected: the connection looks direct) does to named statements,
 * played on a direct connection with prepared_statements MODE. A pipeline
 * of an INSERT into a temporary table and a named SELECT runs twice; HOW
 * lost: between the two, the named statement is deallocated behind lib/db's
 * back (the next server connection does not have it: 26000); taken: before
 * the first, a statement of that name is prepared behind its back (the
 * server connection has another client's: 42P05). Prints "rows=N named=0|1
 * result=R" (rows inserted, whether the connection still uses named
 * statements, the last SELECT's value) and exits 0; or the error and its
 * SQLSTATE on stderr and exits with its code.
 */
static int cmd_prepared_lost(int argc, char **argv)
{
	const char *url = getenv("PD_DATABASE_URL");
	struct pd_db db = PD_DB_INIT;
	struct pd_err e = PD_ERR_INIT;
	const char *p1[1] = {"1"}, *p2[1] = {"41"};
	struct pd_db_stmt v[2] = {
	    {NULL, "INSERT INTO probe VALUES ($1::int)", 1, p1, PGRES_COMMAND_OK, NULL},
	    {"pd_test_probe", "SELECT $1::int + 1", 1, p2, PGRES_TUPLES_OK, NULL},
	};
	char *rows = NULL;
	int lost, rc = PD_EX_OK;

	if (argc != 3 || url == NULL ||
	    (strcmp(argv[1], "auto") != 0 && strcmp(argv[1], "on") != 0) ||
	    (strcmp(argv[2], "lost") != 0 && strcmp(argv[2], "taken") != 0))
		return usage();
	lost = strcmp(argv[2], "lost") == 0;
	db.prepare = strcmp(argv[1], "on") == 0 ? PD_PREPARE_ON : PD_PREPARE_AUTO;
	if (pd_db_connect(&db, url, "prepared-lost", &e) < 0 ||
	    exec_cmd(&db, "CREATE TEMP TABLE probe (n integer)", &e) < 0 ||
	    (!lost && exec_cmd(&db, "PREPARE pd_test_probe AS SELECT 1", &e) < 0))
		goto fail;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 2; i++)
			if (v[i].res)
				PQclear(v[i].res);
		if (pipeline_run(&db, v, 2, &e) < 0)
			goto fail;
		if (round == 0 && lost && exec_cmd(&db, "DEALLOCATE pd_test_probe", &e) < 0)
			goto fail;
	}
	if (pd_db_value(&db, "SELECT count(*) FROM probe", 0, NULL, &rows, &e) < 0)
		goto fail;
	printf("rows=%s named=%d result=%s\n", rows, db.named, PQgetvalue(v[1].res, 0, 0));
	goto done;
fail:
	fprintf(stderr, "%s: prepared-lost: %s (sqlstate %s)\n", pd_progname(), e.msg,
		e.sqlstate[0] ? e.sqlstate : "-");
	rc = e.code ? e.code : PD_EX_SOFTWARE;
done:
	for (int i = 0; i < 2; i++)
		if (v[i].res)
			PQclear(v[i].res);
	free(rows);
	pd_db_close(&db);
	return rc;
}

int main(int argc, char **argv)
{
	sigset_t block;

	pd_set_progname(argv[0]);
	pd_sig_ignore_pipe();
	/*
	 * Block what the worker blocks, so the tests can see that a child
	 * starts with an empty mask and default dispositions anyway.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, NULL);

	if (argc < 2)
		return usage();
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n", pd_progname(), argv[1]);
	return usage();
}

/*
 * start ID TOKEN: the worker's start record for a LEASED job (lib/jobs.c's
 * start_sql, sent as a round trip of pd_jobs_sync_send with one
 * PD_TRIP_START item), with the token given; whether it matched is for the
 * caller to read in the table. Exit 0 when the round trip ran, 69 or 70
 * when it failed, 64 on bad usage.
 */
static int cmd_start(int argc, char **argv)
{
	const char *url = getenv("PD_DATABASE_URL");
	struct pd_db db = PD_DB_INIT;
	struct pd_err e = PD_ERR_INIT;
	struct pd_trip_item item;
	struct pd_trip s;
	long long id, token;

	if (argc != 3 || url == NULL || parse_num(argv[1], LLONG_MAX, &id) < 0 ||
	    parse_num(argv[2], LLONG_MAX, &token) < 0)
		return usage();
	memset(&item, 0, sizeof(item));
	item.kind = PD_TRIP_START;
	item.id = id;
	item.token = token;
	memset(&s, 0, sizeof(s));
	s.items = &item;
	s.n = s.cap = 1;
	s.nstart = 1;
	s.worker = "pd-test-tool";
	if (pd_db_connect(&db, url, "pd-test-tool", &e) < 0 || pd_jobs_sync_send(&db, &s, &e) < 0 ||
	    pd_jobs_sync_wait(&db, &s, &e) < 0) {
		fprintf(stderr, "%s: start: %s\n", pd_progname(), e.msg);
		pd_db_close(&db);
		return e.code ? e.code : PD_EX_SOFTWARE;
	}
	pd_db_close(&db);
	return PD_EX_OK;
}
