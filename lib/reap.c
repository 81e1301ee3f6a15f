#include <sys/syscall.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "config.h"
#include "elect.h"
#include "err.h"
#include "jobs.h"
#include "log.h"
#include "reap.h"

#define HOST_MAX   64	     /* as pd-worker keeps its hostname */
#define ENV_MAX	   (4 << 20) /* bytes of a process's environment read at most */
#define MAX_ROUNDS 5	     /* scans per pass while they still find something */
#define MAX_DEPTH  64	     /* ancestors looked at */
#define WORKER_EXE "pd-worker"

/* An attempt whose leftovers are to be killed. */
struct target {
	const struct pd_lease *l;
	char id[24], token[24];
};

/* One process of the scan. */
struct ent {
	pid_t pid, ppid, pgid;
	int target; /* index into the targets, -1: none */
};

static void local_host(char host[HOST_MAX])
{
	memset(host, 0, HOST_MAX);
	if (gethostname(host, HOST_MAX - 1) < 0)
		host[0] = '\0';
}

/*
 * Where the lease's worker runs: its pendulum.workers row, else its id,
 * "HOST:PID:TAG". 0, or -1 when it cannot be told.
 */
static int lease_where(const struct pd_lease *l, char host[HOST_MAX], pid_t *pid)
{
	char *own, *tag, *p, *end;
	long v;
	int rc = -1;

	if (l->host && l->pid > 0) {
		snprintf(host, HOST_MAX, "%s", l->host);
		*pid = l->pid;
		return 0;
	}
	if (l->owner == NULL)
		return -1;
	own = pd_xstrdup(l->owner);
	if ((tag = strrchr(own, ':')) != NULL) {
		*tag = '\0';
		if ((p = strrchr(own, ':')) != NULL && p > own && p[1] != '\0') {
			*p++ = '\0';
			errno = 0;
			v = strtol(p, &end, 10);
			if (errno == 0 && *end == '\0' && v > 0 && v <= 0x7fffffff &&
			    strlen(own) < HOST_MAX) {
				snprintf(host, HOST_MAX, "%s", own);
				*pid = (pid_t)v;
				rc = 0;
			}
		}
	}
	free(own);
	return rc;
}

/* State, parent and process group from /proc/PID/stat; -1 if unreadable. */
static int read_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgid)
{
	char path[64], buf[1024], *rp;
	int fd, pp, pg;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) S ppid pgrp ...": comm may hold anything, even ") " */
	if ((rp = strrchr(buf, ')')) == NULL || sscanf(rp + 1, " %c %d %d", state, &pp, &pg) != 3)
		return -1;
	if (ppid)
		*ppid = (pid_t)pp;
	if (pgid)
		*pgid = (pid_t)pg;
	return 0;
}

/* 1: pid runs a pd-worker, 0: something else, -1: we may not look. */
static int is_worker(pid_t pid)
{
	char path[64], exe[4096], *base;
	const char *deleted = " (deleted)"; /* the binary was replaced since */
	size_t dl = strlen(deleted);
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)
		return errno == ENOENT ? 0 : -1;
	exe[n] = '\0';
	if ((size_t)n > dl && strcmp(exe + n - dl, deleted) == 0)
		exe[n - dl] = '\0';
	base = strrchr(exe, '/');
	return strcmp(base ? base + 1 : exe, WORKER_EXE) == 0;
}

/*
 * The worker with this pid is gone: no such process, a zombie, or a
 * process that is not a pd-worker (the pid was reused). When unsure: not
 * gone.
 */
static int worker_gone(pid_t pid)
{
	char state;

	if (pid <= 1 || pid == getpid())
		return 0;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	if (read_stat(pid, &state, NULL, NULL) < 0)
		return 0;
	if (state == 'Z' || state == 'X')
		return 1;
	return is_worker(pid) == 0;
}

/* The environment of pid, NUL-separated, into b; -1 if it cannot be read. */
static int read_environ(pid_t pid, struct pd_buf *b)
{
	char path[64];
	int fd;

	pd_buf_reset(b);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while (b->len < ENV_MAX) {
		char *dst = pd_buf_grow(b, 65536);
		ssize_t n = read(fd, dst, 65536);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
		b->data[b->len] = '\0';
	}
	close(fd);
	return 0;
}

/* The value of name ("PD_JOB_ID=") in an environment read by read_environ. */
static const char *env_value(const struct pd_buf *b, const char *name)
{
	size_t nl = strlen(name);

	for (size_t off = 0; off < b->len;) {
		const char *s = b->data + off;
		size_t l = strnlen(s, b->len - off);

		if (l >= nl && memcmp(s, name, nl) == 0)
			return s + nl;
		off += l + 1;
	}
	return NULL;
}

/* Which target pid's environment names: its index, -1 for none or unreadable. */
static int match(pid_t pid, const struct target *t, int nt, struct pd_buf *b)
{
	const char *id, *token, *worker;

	if (read_environ(pid, b) < 0)
		return -1;
	if ((id = env_value(b, "PD_JOB_ID=")) == NULL ||
	    (token = env_value(b, "PD_LEASE_TOKEN=")) == NULL ||
	    (worker = env_value(b, "PD_WORKER_ID=")) == NULL)
		return -1;
	/* The worker id (host:pid:random) tells installations apart: ids and tokens do not. */
	for (int i = 0; i < nt; i++)
		if (strcmp(id, t[i].id) == 0 && strcmp(token, t[i].token) == 0 && t[i].l->owner &&
		    strcmp(worker, t[i].l->owner) == 0)
			return i;
	return -1;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct ent *)a)->pid, y = ((const struct ent *)b)->pid;

	return (x > y) - (x < y);
}

/* Every process we can see, sorted by pid, with the target it belongs to. */
static struct ent *scan(const struct target *t, int nt, int *n, struct pd_buf *b)
{
	DIR *d = opendir("/proc");
	struct ent *v = NULL;
	size_t cap = 0, k = 0;
	struct dirent *de;
	pid_t self = getpid();

	*n = 0;
	if (d == NULL) {
		pd_log(PD_LOG_WARN, "cannot look for leftover handlers", "error=%s",
		       pd_log_quote((char[200]){0}, 200, strerror(errno)));
		return NULL;
	}
	while ((de = readdir(d)) != NULL) {
		char *end, state;
		long pid = strtol(de->d_name, &end, 10);
		struct ent e;

		if (*end != '\0' || pid <= 1 || pid == self)
			continue;
		e.pid = (pid_t)pid;
		if (read_stat(e.pid, &state, &e.ppid, &e.pgid) < 0)
			continue;
		e.target = state == 'Z' ? -1 : match(e.pid, t, nt, b);
		if (k == cap) {
			cap = cap ? 2 * cap : 256;
			v = pd_xrealloc(v, cap * sizeof(*v));
		}
		v[k++] = e;
	}
	closedir(d);
	if (k > 0)
		qsort(v, k, sizeof(*v), by_pid);
	*n = (int)k;
	return v;
}

static const struct ent *find(const struct ent *v, int n, pid_t pid)
{
	struct ent key = {.pid = pid};

	return n > 0 ? bsearch(&key, v, (size_t)n, sizeof(*v), by_pid) : NULL;
}

/*
 * v[i] matched a target. It is a leftover unless the top of its matching
 * tree (the handler's own process, if still there) is the child of a live
 * pd-worker, or of a process we may not look at (other than init): then it
 * is some worker's running handler, maybe another installation's.
 */
static int leftover(const struct ent *v, int n, int i)
{
	const struct ent *top = &v[i];
	int w;

	for (int depth = 0; depth < MAX_DEPTH; depth++) {
		const struct ent *up = find(v, n, top->ppid);

		if (up == NULL || up->target != v[i].target)
			break;
		top = up;
	}
	if (top->ppid <= 0)
		return 0;
	w = is_worker(top->ppid);
	return w == 0 || (w < 0 && top->ppid == 1);
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* Signal the process the pidfd holds, or without one, pid. */
static int signal_(int pfd, pid_t pid, int sig)
{
#ifdef SYS_pidfd_send_signal
	if (pfd >= 0)
		return (int)syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
#else
	(void)pfd;
#endif
	return kill(pid, sig);
}

/*
 * The group pgid is the handler's: its leader is gone (the group id stays
 * pinned while a member lives), or is a match for the same target.
 */
static int handler_group(pid_t pgid, const struct target *t, int nt, int ti, struct pd_buf *b)
{
	char state;

	if (read_stat(pgid, &state, NULL, NULL) < 0)
		return kill(pgid, 0) < 0 && errno == ESRCH;
	return state == 'Z' || match(pgid, t, nt, b) == ti;
}

/*
 * Kill e (which matched target ti) and, if it is the handler's, its group.
 * Returns 1 if e was killed.
 */
static int kill_leftover(const struct ent *e, const struct target *t, int nt, int ti,
			 struct pd_buf *b)
{
	const struct target *tg = &t[ti];
	int pfd, group = 0, killed = 0;
	pid_t pgid = 0;
	char state;

	pfd = pidfd_open_(e->pid);
	if (pfd < 0 && errno == ESRCH)
		return 0;
	/*
	 * From here the pidfd is that process for good: what we read now is
	 * its own, if it is still there when signalled below.
	 */
	if (match(e->pid, t, nt, b) != ti || read_stat(e->pid, &state, NULL, &pgid) < 0 ||
	    state == 'Z')
		goto out;
	/* Stopped, it stays in its group: the group id cannot be reused. */
	if (signal_(pfd, e->pid, SIGSTOP) < 0) {
		if (errno != ESRCH)
			pd_log(PD_LOG_WARN, "cannot kill a leftover handler process",
			       "job=%lld token=%lld pid=%d error=%s", tg->l->id, tg->l->token,
			       (int)e->pid, pd_log_quote((char[200]){0}, 200, strerror(errno)));
		goto out;
	}
	if (pgid > 1 && pgid != getpgrp() && handler_group(pgid, t, nt, ti, b))
		group = kill(-pgid, SIGKILL) == 0;
	killed = signal_(pfd, e->pid, SIGKILL) == 0 || group;
	if (killed)
		pd_log(PD_LOG_INFO, "killed a leftover handler process",
		       "job=%lld token=%lld worker=%s pid=%d pgid=%d group=%s", tg->l->id,
		       tg->l->token, pd_log_quote((char[300]){0}, 300, tg->l->owner), (int)e->pid,
		       (int)pgid, group ? "killed" : "kept");
out:
	if (pfd >= 0)
		close(pfd);
	return killed;
}

/*
 * Kill what is left on this host of the attempts l[0..n) whose workers ran
 * on this host and are gone; the others are left alone. Returns how many
 * processes were killed.
 */
static int pd_reap_leftovers(const struct pd_lease *l, int n)
{
	char here[HOST_MAX];
	struct pd_buf b = PD_BUF_INIT;
	struct target *t;
	int nt = 0, total = 0;

	if (n <= 0)
		return 0;
	local_host(here);
	t = pd_xcalloc((size_t)n, sizeof(*t));
	for (int i = 0; i < n; i++) {
		char host[HOST_MAX];
		pid_t pid;

		if (lease_where(&l[i], host, &pid) < 0 || here[0] == '\0' ||
		    strcmp(host, here) != 0 || !worker_gone(pid))
			continue;
		t[nt].l = &l[i];
		snprintf(t[nt].id, sizeof(t[nt].id), "%lld", l[i].id);
		snprintf(t[nt].token, sizeof(t[nt].token), "%lld", l[i].token);
		nt++;
	}
	/* Again while a scan finds something: a leftover may have forked meanwhile. */
	for (int round = 0; nt > 0 && round < MAX_ROUNDS; round++) {
		int nv, killed = 0;
		struct ent *v = scan(t, nt, &nv, &b);

		for (int i = 0; i < nv; i++)
			if (v[i].target >= 0 && leftover(v, nv, i))
				killed += kill_leftover(&v[i], t, nt, v[i].target, &b);
		free(v);
		total += killed;
		if (killed == 0)
			break;
	}
	pd_buf_release(&b);
	free(t);
	return total;
}

static int same_lease(const struct pd_lease *a, const struct pd_lease *b)
{
	return a->id == b->id && a->token == b->token;
}

/*
 * pd_jobs_reap_leases, and with hooks (not empty) the hook jobs of what it
 * gave back, in one transaction.
 */
static int reap_with_hooks(struct pd_db *db, const char *hooks, const struct pd_lease *now,
			   int nnow, long long grace_ms, int *requeued, int *dead,
			   struct pd_lease **out, int *n, struct pd_err *e)
{
	struct pd_err ignored = PD_ERR_INIT;
	int made = 0;

	if (hooks == NULL || *hooks == '\0')
		return pd_jobs_reap_leases(db, now, nnow, grace_ms, requeued, dead, out, n, e);
	if (pd_db_exec(db, "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL, e) < 0)
		return -1;
	if (pd_jobs_reap_leases(db, now, nnow, grace_ms, requeued, dead, out, n, e) < 0 ||
	    (*n > 0 && pd_jobs_reap_hooks(db, *out, *n, hooks, &made, e) < 0) ||
	    pd_db_exec(db, "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL, e) < 0) {
		pd_db_exec(db, "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL, &ignored);
		pd_leases_free(*out, *n);
		*out = NULL;
		*n = *requeued = *dead = 0;
		return -1;
	}
	if (made > 0)
		pd_log(PD_LOG_INFO, "hook jobs of expired leases", "made=%d", made);
	return 0;
}

/* The lease's worker ran on the host here (its row's host, else its id's). */
static int on_host(const struct pd_lease *l, const char *here)
{
	char host[HOST_MAX];
	pid_t pid;

	return here[0] != '\0' && lease_where(l, host, &pid) == 0 && strcmp(host, here) == 0;
}

/*
 * The sweep, and when a lease has expired, the leftovers and the reap: the
 * leases of this host's workers at once, the others once expired for
 * grace_ms. *next_ms: when the next pass is due for the leases
 * (pd_jobs_sweep's; after a reap 0, what is left is known at the next
 * pass, or when the first lease kept for its grace is due).
 */
static int reap_leases(struct pd_db *db, const char *hooks, long long grace_ms, long long *next_ms,
		       int *requeued, int *dead, struct pd_err *e)
{
	struct pd_lease *before = NULL, *after = NULL, *late, *mine;
	int nb = 0, na = 0, nl = 0, nm = 0, rc;
	char here[HOST_MAX];

	*requeued = *dead = 0;
	if (pd_jobs_sweep(db, next_ms, NULL, e) < 0)
		return -1;
	if (*next_ms != 0)
		return 0; /* nothing has expired: an idle pass is this one statement */
	/* Leftovers first, so that a job is never given back while they run. */
	if (pd_jobs_expired(db, &before, &nb, e) < 0)
		return -1;
	pd_reap_leftovers(before, nb);
	local_host(here);
	mine = pd_xcalloc((size_t)(nb > 0 ? nb : 1), sizeof(*mine));
	for (int i = 0; i < nb; i++)
		if (grace_ms <= 0 || on_host(&before[i], here))
			mine[nm++] = before[i]; /* shallow: before owns the strings */
	rc = reap_with_hooks(db, hooks, mine, nm, grace_ms, requeued, dead, &after, &na, e);
	free(mine);
	/*
	 * Nothing given back, some kept for their grace: the next pass when the
	 * first of them is due (not at once again).
	 */
	for (int i = 0; rc == 0 && grace_ms > 0 && na == 0 && i < nb; i++) {
		long long due = grace_ms - before[i].over_ms + 10;

		due = due < 10 ? 10 : due;
		if (!on_host(&before[i], here) && (*next_ms == 0 || due < *next_ms))
			*next_ms = due;
	}
	/* Leases that expired between the two statements. */
	late = pd_xcalloc((size_t)(na > 0 ? na : 1), sizeof(*late));
	for (int i = 0; i < na; i++) {
		int seen = 0;

		for (int k = 0; k < nb && !seen; k++)
			seen = same_lease(&after[i], &before[k]);
		if (!seen)
			late[nl++] = after[i]; /* shallow: after owns the strings */
	}
	pd_reap_leftovers(late, nl);
	free(late);
	pd_leases_free(before, nb);
	pd_leases_free(after, na);
	return rc;
}

/* Log what a prune deleted, if anything. */
static void log_pruned(const struct pd_prune_report *p)
{
	long long total = 0, batches = 0;

	for (int k = 0; k < PD_PRUNE_NKINDS; k++) {
		total += p->rows[k];
		batches += p->batches[k];
	}
	if (total > 0)
		pd_log(PD_LOG_INFO, "finished history pruned",
		       "succeeded=%lld cancelled=%lld dead_lettered=%lld outbox_published=%lld "
		       "workers_gone=%lld batches=%lld more=%d",
		       p->rows[PD_PRUNE_SUCCEEDED], p->rows[PD_PRUNE_CANCELLED],
		       p->rows[PD_PRUNE_DEAD_LETTERED], p->rows[PD_PRUNE_OUTBOX_PUBLISHED],
		       p->rows[PD_PRUNE_WORKERS_GONE], batches, p->more);
}

/*
 * The start deadlines (sql/026): cancel the never-claimed PENDING jobs whose
 * start_by has passed (logged when any was); *next_ms becomes the sooner of
 * itself and the time until the next such deadline (-1 stays -1 when no job
 * has one).
 */
static int late_starts(struct pd_db *db, long long *next_ms, struct pd_err *e)
{
	PGresult *r;
	int n;

	if (pd_db_exec(db, "SELECT cancelled, next_ms FROM pendulum.cancel_late_starts()", 0, NULL,
		       PGRES_TUPLES_OK, &r, e) < 0)
		return -1;
	n = atoi(PQgetvalue(r, 0, 0));
	if (!PQgetisnull(r, 0, 1)) {
		long long ms = strtoll(PQgetvalue(r, 0, 1), NULL, 10);

		if (*next_ms < 0 || ms < *next_ms)
			*next_ms = ms;
	}
	PQclear(r);
	if (n > 0)
		pd_log(PD_LOG_INFO, "jobs not started by their deadline cancelled",
		       "cancelled=%d reason=\"start deadline passed\"", n);
	return 0;
}

int pd_reap_pass_prune(struct pd_db *db, const struct pd_retention *ret, const char *hooks,
		       long long grace_ms, int prune_batches, int batch, long long *next_ms,
		       int *requeued, int *dead, struct pd_prune_report *pruned, struct pd_err *e)
{
	struct pd_prune_opts o = {.batch = batch, .max_batches = prune_batches};

	memset(pruned, 0, sizeof(*pruned));
	if (reap_leases(db, hooks, grace_ms, next_ms, requeued, dead, e) < 0)
		return -1;
	if (late_starts(db, next_ms, e) < 0)
		return -1;
	if (prune_batches <= 0)
		return 0;
	if (pd_prune(db, ret, &o, pruned, e) < 0)
		return -1;
	log_pruned(pruned);
	return 0;
}

int pd_reap_pass(struct pd_db *db, const struct pd_retention *ret, const char *hooks,
		 long long grace_ms, long long *next_prune, long long *next_ms, int *requeued,
		 int *dead, struct pd_err *e)
{
	long long now = pd_now_ms();
	struct pd_prune_report p;
	int due = now >= *next_prune;

	if (pd_reap_pass_prune(db, ret, hooks, grace_ms, due ? PD_REAP_WORKER_BATCHES : 0,
			       PD_PRUNE_BATCH, next_ms, requeued, dead, &p, e) < 0)
		return -1;
	if (due)
		*next_prune = now + (p.more ? 0 : PD_REAP_PRUNE_EVERY_MS);
	return 0;
}

void pd_reap_lead_init(struct pd_reap_lead *l, const char *holder, long long lease_ms)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->holder, sizeof(l->holder), "%s", holder);
	l->lease_ms = lease_ms > 0 ? lease_ms : 1;
	l->stand = PD_REAP_NONE;
}

void pd_reap_lead_reset(struct pd_reap_lead *l)
{
	l->stand = PD_REAP_NONE;
	l->pass_at = 0;
}

long long pd_reap_grace(const struct pd_reap_lead *l)
{
	return l->lease_ms / 3 < PD_REAP_GRACE_MAX_MS ? l->lease_ms / 3 : PD_REAP_GRACE_MAX_MS;
}

/*
 * What a candidate reads in the election's statement (pd_elect_hold's
 * also): "ROLE_MS LEASE_MS HOLDER", the ms until the role expires (as the
 * statement found it before electing: for a standby, the holder's), until
 * the earliest job lease expires (the first entry of jobs_lease_idx), '-'
 * for none, and who held the role.
 */
#define STAND_SQL                                                                                  \
	"coalesce((SELECT ceil(extract(epoch FROM l.expires_at - now()) * 1000)::bigint"           \
	" FROM pendulum.leaders l WHERE l.role = '" PD_REAP_ROLE "')::text, '-') || ' ' ||"        \
	" coalesce(ceil(extract(epoch FROM (SELECT min(j.lease_expires_at) FROM pendulum.jobs j"   \
	" WHERE j.state IN ('LEASED', 'RUNNING')) - now()) * 1000)::bigint::text, '-') || ' ' ||"  \
	" coalesce((SELECT l.holder FROM pendulum.leaders l WHERE l.role = '" PD_REAP_ROLE "'),"   \
	" '')"

/* "123" into *ms: 1, or "-": 0 (none). */
static int ms_field(const char *s, long long *ms)
{
	*ms = strcmp(s, "-") == 0 ? 0 : strtoll(s, NULL, 10);
	return strcmp(s, "-") != 0;
}

/* A standby's look: kill this host's leftovers of the expired leases of dead workers. */
static int standby_look(struct pd_db *db, struct pd_err *e)
{
	struct pd_lease *l = NULL;
	int n = 0;

	if (pd_jobs_expired(db, &l, &n, e) < 0)
		return -1;
	pd_reap_leftovers(l, n);
	pd_leases_free(l, n);
	return 0;
}

int pd_reap_turn(struct pd_reap_lead *l, struct pd_db *db, pd_reap_pass_fn pass, void *ctx,
		 long long *next_ms, struct pd_err *e)
{
	char *also = NULL, role[24] = "-", lease[24] = "-", holder[128] = "";
	long long role_ms, lease_ms, now = pd_now_ms(), third = l->lease_ms / 3;
	int held, has_role, has_lease;

	if (third < 1)
		third = 1;
	if (pd_elect_hold(db, PD_REAP_ROLE, l->holder, l->lease_ms, STAND_SQL, &held, &also, e) < 0)
		return -1;
	if (also)
		sscanf(also, "%23s %23s %127[^\n]", role, lease, holder);
	free(also);
	has_role = ms_field(role, &role_ms);
	has_lease = ms_field(lease, &lease_ms);
	if (held && l->stand != PD_REAP_ACTIVE) {
		pd_log(PD_LOG_INFO, "reaper role taken: this process reaps for the fleet",
		       "lease_ms=%lld", l->lease_ms);
		l->pass_at = 0; /* leases may have expired meanwhile */
	} else if (!held && l->stand == PD_REAP_ACTIVE) {
		pd_log(PD_LOG_WARN, "reaper role lost: another holds it, on standby", "holder=%s",
		       pd_log_quote((char[200]){0}, 200, holder));
	} else if (!held && l->stand == PD_REAP_NONE) {
		pd_log(PD_LOG_INFO, "reaper on standby: another holds the reaper role", "holder=%s",
		       pd_log_quote((char[200]){0}, 200, holder));
	}
	l->stand = held ? PD_REAP_ACTIVE : PD_REAP_STANDBY;
	if (held) {
		*next_ms = third; /* renew */
		if (now >= l->pass_at) {
			long long due;

			if (pass(ctx, pd_reap_grace(l), &due, e) < 0)
				return -1;
			l->pass_at = now + (due > 0 ? due : 0);
		}
		if (l->pass_at - now < *next_ms)
			*next_ms = l->pass_at > now ? l->pass_at - now : 0;
		return 0;
	}
	/*
	 * Standing by: again a little after the holder's role would expire (a
	 * third of a lease when it could not be read, or was taken meanwhile),
	 * or a job lease does.
	 */
	*next_ms = has_role && role_ms > 0 ? role_ms + 10 : third;
	if (has_lease && lease_ms > 0 && lease_ms + 10 < *next_ms)
		*next_ms = lease_ms + 10;
	if (has_lease && lease_ms <= 0) {
		/* Expired: look now, then again once its grace has passed at the latest. */
		if (standby_look(db, e) < 0)
			return -1;
		if (pd_reap_grace(l) > 0 && pd_reap_grace(l) < *next_ms)
			*next_ms = pd_reap_grace(l);
	}
	return 0;
}

void pd_reap_lead_release(struct pd_reap_lead *l, struct pd_db *db)
{
	struct pd_err e = PD_ERR_INIT;

	if (l->stand == PD_REAP_ACTIVE && pd_elect_release(db, PD_REAP_ROLE, l->holder, &e) == 0)
		pd_log(PD_LOG_INFO, "reaper role released", NULL);
	l->stand = PD_REAP_NONE;
	pd_err_clear(&e);
}
