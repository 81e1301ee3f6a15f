/*
 * pickup: pickup latency for scripts/bench, from the commit of
 * pendulum.enqueue to the handler running, with no process start-up of our
 * own in the figure (one libpq connection for the whole run).
 *
 *   pickup [-n JOBS] [-w WARMUP] [-T TYPE] [-d CONNINFO]
 *
 * A pd-worker must be serving TYPE (default "lat") with bench/stamp as its
 * handler (--exec lat=.../stamp). For each job, one at a time:
 *
 *   BEGIN                                        (its own round trip)
 *   t = CLOCK_REALTIME
 *   SELECT pendulum.enqueue('default', TYPE, '{"t": t}'); COMMIT
 *                                                (one message, one round trip)
 *   c = CLOCK_REALTIME as soon as COMMIT's result is in
 *
 * then it waits for the job to succeed (first look 10 ms after the commit,
 * then every 5 ms, so the polling stays out of the way of a quick pickup),
 * reads the handler's start time h from the job's result, and lets the worker
 * settle for 20 ms before the next job. The first WARMUP jobs (default 5) are
 * not counted.
 *
 * The figure is h - c: from COMMIT acknowledged to the handler's first
 * instruction. The notification goes out when the commit is done, at the
 * same moment as the acknowledgement to us, so c can only be late by the
 * time our own process takes to see the reply (microseconds on a local
 * socket). h - t (t is in the payload: what the handler itself computes) is
 * also printed: it adds the enqueue statement and the commit's WAL flush, an
 * upper bound.
 *
 * Prints key=value lines: n, p50_us p90_us p99_us max_us (h - c),
 * sent_p50_us sent_p90_us sent_p99_us (h - t), commit_p50_us (c - t).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "bench.h"

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* nearest rank: the smallest value with at least q of the sample at or below it */
static long long pct(const long long *v, int n, double q)
{
	int k = (int)((double)n * q + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static int fail(PGconn *conn, const char *what, PGresult *r)
{
	fprintf(stderr, "pickup: %s: %s", what, r ? PQresultErrorMessage(r) : PQerrorMessage(conn));
	PQclear(r);
	PQfinish(conn);
	return 70;
}

/* Run one job; 0 and *h_out, *t_out, *c_out on success. */
static int one(PGconn *conn, const char *type, long long *h_out, long long *t_out, long long *c_out)
{
	char sql[256], idstr[32];
	const char *params[1] = {idstr};
	PGresult *r;
	long long t, c, deadline;
	int got_id = 0;

	r = PQexec(conn, "BEGIN");
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		return fail(conn, "BEGIN", r);
	PQclear(r);

	t = realtime_us();
	snprintf(sql, sizeof(sql),
		 "SELECT pendulum.enqueue('default', '%s', '{\"t\": %lld}'::jsonb); COMMIT", type,
		 t);
	if (!PQsendQuery(conn, sql))
		return fail(conn, "enqueue", NULL);
	c = 0;
	while ((r = PQgetResult(conn)) != NULL) {
		ExecStatusType st = PQresultStatus(r);

		if (st == PGRES_TUPLES_OK && PQntuples(r) == 1) {
			snprintf(idstr, sizeof(idstr), "%s", PQgetvalue(r, 0, 0));
			got_id = 1;
		} else if (st == PGRES_COMMAND_OK) {
			c = realtime_us(); /* COMMIT's result */
		} else {
			return fail(conn, "enqueue", r);
		}
		PQclear(r);
	}
	if (!got_id || c == 0) {
		fprintf(stderr, "pickup: enqueue returned no id or no commit\n");
		PQfinish(conn);
		return 70;
	}

	sleep_ms(10);
	deadline = c + 30 * 1000000LL;
	for (;;) {
		const char *state;

		r = PQexecParams(
		    conn, "SELECT state, result->>'h' FROM pendulum.jobs WHERE id = $1::bigint", 1,
		    NULL, params, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
			return fail(conn, "job state", r);
		state = PQgetvalue(r, 0, 0);
		if (strcmp(state, "SUCCEEDED") == 0) {
			if (PQgetisnull(r, 0, 1)) {
				fprintf(stderr,
					"pickup: job %s has no \"h\" in its result: is the "
					"handler bench/stamp?\n",
					idstr);
				PQclear(r);
				PQfinish(conn);
				return 70;
			}
			*h_out = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
			PQclear(r);
			break;
		}
		if (strcmp(state, "DEAD_LETTERED") == 0 || strcmp(state, "CANCELLED") == 0) {
			fprintf(stderr, "pickup: job %s ended %s\n", idstr, state);
			PQclear(r);
			PQfinish(conn);
			return 70;
		}
		PQclear(r);
		if (realtime_us() > deadline) {
			fprintf(stderr,
				"pickup: job %s not done after 30 s: is a worker serving it?\n",
				idstr);
			PQfinish(conn);
			return 70;
		}
		sleep_ms(5);
	}
	*t_out = t;
	*c_out = c;
	sleep_ms(20);
	return 0;
}

int main(int argc, char **argv)
{
	const char *conninfo = getenv("PD_DATABASE_URL"), *type = "lat";
	int jobs = 200, warmup = 5, opt;
	long long *lat, *sent, *commit;
	PGconn *conn;

	while ((opt = getopt(argc, argv, "n:w:T:d:")) != -1) {
		switch (opt) {
		case 'n':
			jobs = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 'T':
			type = optarg;
			break;
		case 'd':
			conninfo = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: pickup [-n JOBS] [-w WARMUP] [-T TYPE] [-d CONNINFO]\n");
			return 64;
		}
	}
	if (jobs < 1 || warmup < 0 ||
	    strspn(type, "abcdefghijklmnopqrstuvwxyz_-") != strlen(type)) {
		fprintf(stderr, "pickup: bad -n, -w or -T\n");
		return 64;
	}
	conn = PQconnectdb(conninfo ? conninfo : "");
	if (PQstatus(conn) != CONNECTION_OK)
		return fail(conn, "connect", NULL);

	lat = calloc((size_t)jobs, sizeof(*lat));
	sent = calloc((size_t)jobs, sizeof(*sent));
	commit = calloc((size_t)jobs, sizeof(*commit));
	if (!lat || !sent || !commit) {
		fprintf(stderr, "pickup: out of memory\n");
		return 70;
	}
	for (int i = -warmup; i < jobs; i++) {
		long long h, t, c;
		int rc = one(conn, type, &h, &t, &c);

		if (rc != 0)
			return rc;
		if (i < 0)
			continue;
		lat[i] = h - c;
		sent[i] = h - t;
		commit[i] = c - t;
	}
	PQfinish(conn);

	qsort(lat, (size_t)jobs, sizeof(*lat), cmp_ll);
	qsort(sent, (size_t)jobs, sizeof(*sent), cmp_ll);
	qsort(commit, (size_t)jobs, sizeof(*commit), cmp_ll);
	printf("n=%d\n", jobs);
	printf("p50_us=%lld\np90_us=%lld\np99_us=%lld\nmax_us=%lld\n", pct(lat, jobs, 0.50),
	       pct(lat, jobs, 0.90), pct(lat, jobs, 0.99), lat[jobs - 1]);
	printf("sent_p50_us=%lld\nsent_p90_us=%lld\nsent_p99_us=%lld\n", pct(sent, jobs, 0.50),
	       pct(sent, jobs, 0.90), pct(sent, jobs, 0.99));
	printf("commit_p50_us=%lld\n", pct(commit, jobs, 0.50));
	free(lat);
	free(sent);
	free(commit);
	return 0;
}
