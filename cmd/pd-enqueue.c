/*
 * pd-enqueue: put one job, or many (--ndjson), on a queue; print their ids.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "cli.h"
#include "dur.h"
#include "jobspec.h"
#include "json.h"
#include "log.h"

#define SYNOPSIS                                                                                   \
	"usage: pd-enqueue [-hVv] [-c file] [-d conninfo] [options] TYPE [PAYLOAD]\n"              \
	"       pd-enqueue [-hVv] [-c file] [-d conninfo] [options] --ndjson [TYPE]\n"

#define BATCH	  5000 /* NDJSON lines per statement */
#define MAX_AFTER 64

static void help(void)
{
	printf(
	    SYNOPSIS
	    "\nEnqueue a job of type TYPE with a JSON PAYLOAD (default: read from stdin when it\n"
	    "is not a terminal; {} otherwise) and print its id.\n\n"
	    "  -t, --tenant TENANT          tenant (default 'default')\n"
	    "  -q, --queue QUEUE            queue (default 'default')\n"
	    "  -p, --priority N             integer, higher first; or high, normal, low\n"
	    "      --run-at INSTANT         not before this ISO 8601 instant\n"
	    "      --delay DURATION         not before now + DURATION (250ms 30s 5m 2h 1d)\n"
	    "  -k, --idempotency-key KEY    one job per KEY and tenant; a repeat returns its id\n"
	    "      --max-attempts N         attempts before dead-lettering (default 5)\n"
	    "      --timeout DURATION       kill the handler after DURATION\n"
	    "      --at-most-once           never re-run after a lost lease: dead-letter instead\n"
	    "      --traceparent TP         W3C trace context (default $TRACEPARENT)\n"
	    "      --after ID               run only after job ID succeeded (repeatable)\n"
	    "      --ndjson                 one job a line on stdin, all or nothing\n"
	    "      --json                   print the job rows as JSON, not the ids\n"
	    "      --wait                   wait for the job to end; print its result and exit\n"
	    "                               with the handler's status\n"
	    "  -c, --config FILE            configuration file\n"
	    "  -d, --database CONNINFO      libpq conninfo or URI (default $PD_DATABASE_URL)\n"
	    "  -v, --verbose                log more\n"
	    "  -h, --help                   show this help\n"
	    "  -V, --version                show the version\n\n"
	    "Exit status: 0 done, 2 dependency not found, 64 usage, 65 bad input (nothing\n"
	    "enqueued), 69 database unavailable. See pd-enqueue(1).\n");
}

struct opts {
	struct pd_jobspec spec; /* the flags: defaults for every job */
	long long after[MAX_AFTER];
	int ndjson, json, wait;
};

/* Read all of stdin. */
static int read_stdin(struct pd_buf *b, struct pd_err *e)
{
	for (;;) {
		char *p = pd_buf_grow(b, 65536);
		ssize_t n = read(0, p, 65536);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_errf(e, PD_EX_DATAERR, "cannot read stdin: %s", strerror(errno));
		if (n == 0)
			break;
		b->len += (size_t)n;
		b->data[b->len] = '\0';
	}
	pd_buf_grow(b, 0);
	b->data[b->len] = '\0';
	return 0;
}

/* Rewrite a json error for `where` ("stdin line 3"): "invalid JSON on stdin line 3, column 7: ..."
 */
static int json_error(struct pd_err *e, const struct pd_err *je, const char *where, int line_based)
{
	int l = 0, c = 0, off = 0;

	if (sscanf(je->msg, "invalid JSON at line %d, column %d: %n", &l, &c, &off) == 2 &&
	    off > 0) {
		if (line_based)
			return pd_errf(e, PD_EX_DATAERR, "invalid JSON on %s, column %d: %s", where,
				       c, je->msg + off);
		return pd_errf(e, PD_EX_DATAERR, "invalid JSON in %s at line %d, column %d: %s",
			       where, l, c, je->msg + off);
	}
	return pd_errf(e, PD_EX_DATAERR, "%s: %s", where, je->msg);
}

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

/* A duration in an NDJSON line: "5m" or a number of seconds. */
static int line_dur(const struct pd_json *j, int t, long long *ms, struct pd_err *e)
{
	char *s = pd_json_str(j, t);
	int rc;

	if (j->tok[t].type != PD_JSON_STRING && j->tok[t].type != PD_JSON_NUMBER) {
		free(s);
		return pd_errf(e, PD_EX_DATAERR, "expected a duration such as \"30s\"");
	}
	rc = pd_dur_parse(s, ms, e);
	free(s);
	return rc;
}

/*
 * One NDJSON object line into spec (which starts as a copy of the flags).
 * Strings are malloc'd into keep[] for the caller to free.
 */
static int parse_line_object(const struct pd_json *j, struct pd_jobspec *spec, char **keep,
			     int *nkeep, struct pd_err *e)
{
	static const char *keys[] = {"type",	     "payload", "tenant",   "queue",
				     "priority",     "run_at",	"delay",    "idempotency_key",
				     "max_attempts", "timeout", "delivery", NULL};
	int t = 1;

	if (j->tok[0].type != PD_JSON_OBJECT)
		return pd_errf(e, PD_EX_DATAERR,
			       "expected an object {\"type\": ..., \"payload\": ...}");
	for (int k = 0; k < j->tok[0].size; k++, t = pd_json_skip(j, t + 1)) {
		char *key = pd_json_str(j, t);
		int v = t + 1, known = 0;
		enum pd_json_type vt = j->tok[v].type;
		char *s = NULL;

		for (int i = 0; keys[i]; i++)
			known |= strcmp(key, keys[i]) == 0;
		if (!known) {
			pd_errf(e, PD_EX_DATAERR, "unknown key '%s'", key);
			free(key);
			return -1;
		}
		if (vt == PD_JSON_NULL) {
			free(key);
			continue;
		}
		if (strcmp(key, "payload") == 0) {
			pd_json_span(j, v, &spec->payload, &spec->payload_len);
			free(key);
			continue;
		}
		if (strcmp(key, "max_attempts") == 0) {
			if (pd_json_int(j, v, &spec->max_attempts) < 0 || spec->max_attempts < 1 ||
			    spec->max_attempts > 1000) {
				free(key);
				return pd_errf(e, PD_EX_DATAERR,
					       "key 'max_attempts': expected an integer 1-1000");
			}
		} else if (strcmp(key, "priority") == 0) {
			s = pd_json_str(j, v);
			if (pd_priority_parse(s, &spec->priority, e) < 0)
				goto bad;
			spec->has_priority = 1;
		} else if (strcmp(key, "delay") == 0) {
			if (line_dur(j, v, &spec->delay_ms, e) < 0)
				goto bad;
		} else if (strcmp(key, "timeout") == 0) {
			if (line_dur(j, v, &spec->timeout_ms, e) < 0)
				goto bad;
			if (spec->timeout_ms == 0) {
				pd_errf(e, PD_EX_DATAERR, "must be positive");
				goto bad;
			}
		} else {
			if (vt != PD_JSON_STRING) {
				pd_errf(e, PD_EX_DATAERR, "key '%s': expected a string", key);
				goto bad;
			}
			s = pd_json_str(j, v);
			if (strcmp(key, "run_at") == 0) {
				if (pd_instant_parse(s, &spec->run_at_us, e) < 0)
					goto bad;
				spec->has_run_at = 1;
			} else if (strcmp(key, "delivery") == 0 &&
				   strcmp(s, "at-least-once") != 0 &&
				   strcmp(s, "at-most-once") != 0) {
				pd_errf(e, PD_EX_DATAERR,
					"key 'delivery': expected \"at-least-once\" or "
					"\"at-most-once\"");
				goto bad;
			} else if (*s == '\0') {
				pd_errf(e, PD_EX_DATAERR, "key '%s': must not be empty", key);
				goto bad;
			}
			if (strcmp(key, "type") == 0)
				spec->type = s;
			else if (strcmp(key, "tenant") == 0)
				spec->tenant = s;
			else if (strcmp(key, "queue") == 0)
				spec->queue = s;
			else if (strcmp(key, "idempotency_key") == 0)
				spec->idempotency_key = s;
			else if (strcmp(key, "delivery") == 0)
				spec->delivery = s;
			keep[(*nkeep)++] = s;
			s = NULL;
		}
		free(s);
		free(key);
		continue;
	bad:
		if (strncmp(e->msg, "key '", 5) != 0) {
			struct pd_err inner = *e;

			pd_err_clear(e);
			pd_errf(e, inner.code, "key '%s': %.400s", key, inner.msg);
		}
		free(s);
		free(key);
		return -1;
	}
	if (spec->type == NULL)
		return pd_errf(e, PD_EX_DATAERR,
			       "missing key 'type' (or give TYPE on the command line)");
	return 0;
}

/* Parse stdin as NDJSON into the canonical array; *n gets the job count. */
static int read_ndjson(const struct opts *o, struct pd_buf *in, struct pd_buf *out, int *n,
		       struct pd_err *e)
{
	char *line = in->data;
	int lineno = 0;

	*n = 0;
	pd_buf_putc(out, '[');
	while (line && line < in->data + in->len) {
		char *nl = memchr(line, '\n', (size_t)(in->data + in->len - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(in->data + in->len - line);
		struct pd_json j = PD_JSON_INIT;
		struct pd_err je = PD_ERR_INIT;
		struct pd_jobspec spec = o->spec;
		char where[64], *keep[16];
		int nkeep = 0, rc = 0;

		lineno++;
		snprintf(where, sizeof(where), "stdin line %d", lineno);
		if (!blank(line, len)) {
			if (pd_json_parse(&j, line, len, &je) < 0)
				return json_error(e, &je, where, 1);
			if (o->spec.type) {
				pd_json_span(&j, 0, &spec.payload, &spec.payload_len);
			} else {
				spec.payload = "{}";
				spec.payload_len = 2;
				rc = parse_line_object(&j, &spec, keep, &nkeep, &je);
			}
			if (rc == 0) {
				if (*n)
					pd_buf_putc(out, ',');
				pd_jobspec_json(&spec, out);
				(*n)++;
			}
			for (int i = 0; i < nkeep; i++)
				free(keep[i]);
			pd_json_release(&j);
			if (rc < 0)
				return pd_errf(e, PD_EX_DATAERR, "%s: %s", where, je.msg);
		}
		line = nl ? nl + 1 : NULL;
	}
	pd_buf_putc(out, ']');
	if (*n == 0)
		return pd_errf(e, PD_EX_DATAERR, "no jobs on stdin");
	return 0;
}

/* Split a canonical array into statements of BATCH jobs; all in one transaction. */
static int enqueue_all(struct pd_db *db, const char *array, int n, long long *ids, int *created,
		       struct pd_err *e)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_buf chunk = PD_BUF_INIT;
	struct pd_err ignore = PD_ERR_INIT;
	int t = 1, rc = -1;

	if (n <= BATCH)
		return pd_enqueue_batch(db, array, n, ids, created, e);
	if (pd_json_parse(&j, array, strlen(array), e) < 0)
		return -1;
	if (pd_db_exec_script(db, "BEGIN", e) < 0)
		goto out;
	for (int done = 0; done < n;) {
		int k = n - done < BATCH ? n - done : BATCH;

		pd_buf_reset(&chunk);
		pd_buf_putc(&chunk, '[');
		for (int i = 0; i < k; i++, t = pd_json_skip(&j, t)) {
			const char *p;
			size_t len;

			pd_json_span(&j, t, &p, &len);
			if (i)
				pd_buf_putc(&chunk, ',');
			pd_buf_append(&chunk, p, len);
		}
		pd_buf_putc(&chunk, ']');
		if (pd_enqueue_batch(db, chunk.data, k, ids + done, created + done, e) < 0) {
			pd_db_exec_script(db, "ROLLBACK", &ignore);
			goto out;
		}
		done += k;
	}
	rc = pd_db_exec_script(db, "COMMIT", e);
out:
	pd_buf_release(&chunk);
	pd_json_release(&j);
	return rc;
}

/* --wait: poll until the job ends; returns the exit status to use. */
static int wait_job(struct pd_db *db, long long id, struct pd_err *e)
{
	static const char sql[] =
	    "SELECT j.state, j.result::text, j.result_is_text, j.result #>> '{}', "
	    "COALESCE(j.dead_reason, ''), COALESCE(j.last_error, ''), a.exit_code, a.signal "
	    "FROM pendulum.jobs j LEFT JOIN LATERAL (SELECT exit_code, signal FROM "
	    "pendulum.job_attempts WHERE job_id = j.id ORDER BY started_at DESC, lease_token "
	    "DESC LIMIT 1) a ON true WHERE j.id = $1";
	char idstr[24];
	const char *params[1] = {idstr};
	long long delay_ms = 20;

	snprintf(idstr, sizeof(idstr), "%lld", id);
	for (;;) {
		PGresult *r;
		const char *state;
		struct timespec ts;

		if (pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, &r, e) < 0)
			return -1;
		if (PQntuples(r) != 1) {
			PQclear(r);
			return pd_errf(e, PD_EX_NOTFOUND, "job %lld not found", id);
		}
		state = PQgetvalue(r, 0, 0);
		if (strcmp(state, "SUCCEEDED") == 0) {
			if (!PQgetisnull(r, 0, 1)) {
				int text = PQgetvalue(r, 0, 2)[0] == 't';

				fputs(PQgetvalue(r, 0, text ? 3 : 1), stdout);
				if (!text)
					putchar('\n');
			}
			PQclear(r);
			return 0;
		}
		if (strcmp(state, "DEAD_LETTERED") == 0 || strcmp(state, "CANCELLED") == 0) {
			int code = 1;

			fprintf(stderr, "%s: job %lld %s: %s%s%s\n", pd_progname(), id,
				state[0] == 'D' ? "dead-lettered" : "cancelled",
				PQgetvalue(r, 0, 4), *PQgetvalue(r, 0, 5) ? ": " : "",
				PQgetvalue(r, 0, 5));
			if (!PQgetisnull(r, 0, 6) && atoi(PQgetvalue(r, 0, 6)) > 0)
				code = atoi(PQgetvalue(r, 0, 6));
			else if (!PQgetisnull(r, 0, 7) && atoi(PQgetvalue(r, 0, 7)) > 0)
				code = 128 + atoi(PQgetvalue(r, 0, 7));
			PQclear(r);
			return code;
		}
		PQclear(r);
		ts.tv_sec = 0;
		ts.tv_nsec = delay_ms * 1000000L;
		nanosleep(&ts, NULL);
		if (delay_ms < 250)
			delay_ms += 10;
	}
}

static int print_rows(struct pd_db *db, const long long *ids, int n, struct pd_err *e)
{
	struct pd_buf arr = PD_BUF_INIT;
	const char *params[1];
	PGresult *r;

	pd_buf_putc(&arr, '{');
	for (int i = 0; i < n; i++)
		pd_buf_printf(&arr, "%s%lld", i ? "," : "", ids[i]);
	pd_buf_putc(&arr, '}');
	params[0] = arr.data;
	if (pd_db_exec(db,
		       "SELECT row_to_json(j) FROM unnest($1::bigint[]) WITH ORDINALITY u(id, ord) "
		       "JOIN pendulum.jobs j ON j.id = u.id ORDER BY u.ord",
		       1, params, PGRES_TUPLES_OK, &r, e) < 0) {
		pd_buf_release(&arr);
		return -1;
	}
	for (int i = 0; i < PQntuples(r); i++)
		puts(PQgetvalue(r, i, 0));
	PQclear(r);
	pd_buf_release(&arr);
	return 0;
}

/* Options into o; returns -1 after printing a usage error, 1 after --help/--version, 0 to go on. */
static int parse_args(int argc, char **argv, struct pd_app *a, struct opts *o, struct pd_err *e)
{
	enum {
		O_RUN_AT = PD_APP_OPT_OWN,
		O_DELAY,
		O_MAX,
		O_TIMEOUT,
		O_AMO,
		O_TP,
		O_AFTER,
		O_NDJSON,
		O_JSON,
		O_WAIT
	};
	static const struct option opts[] = {
	    {"tenant", required_argument, NULL, 't'},
	    {"queue", required_argument, NULL, 'q'},
	    {"priority", required_argument, NULL, 'p'},
	    {"run-at", required_argument, NULL, O_RUN_AT},
	    {"delay", required_argument, NULL, O_DELAY},
	    {"idempotency-key", required_argument, NULL, 'k'},
	    {"max-attempts", required_argument, NULL, O_MAX},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"at-most-once", no_argument, NULL, O_AMO},
	    {"traceparent", required_argument, NULL, O_TP},
	    {"after", required_argument, NULL, O_AFTER},
	    {"ndjson", no_argument, NULL, O_NDJSON},
	    {"json", no_argument, NULL, O_JSON},
	    {"wait", no_argument, NULL, O_WAIT},
	    PD_APP_LONG_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct pd_jobspec *s = &o->spec;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, ":t:q:p:k:c:d:vhV", opts, NULL)) != -1) {
		switch (ch) {
		case 't':
		case 'q':
		case 'k':
			if (*optarg == '\0')
				return pd_errf(e, PD_EX_USAGE, "option -%c: must not be empty", ch);
			*(ch == 't'   ? &s->tenant
			  : ch == 'q' ? &s->queue
				      : &s->idempotency_key) = optarg;
			break;
		case 'p':
			if (pd_priority_parse(optarg, &s->priority, e) < 0)
				return e->code = PD_EX_USAGE, -1;
			s->has_priority = 1;
			break;
		case O_RUN_AT:
			if (pd_instant_parse(optarg, &s->run_at_us, e) < 0)
				return e->code = PD_EX_USAGE, -1;
			s->has_run_at = 1;
			break;
		case O_DELAY:
			if (pd_cli_dur("--delay", optarg, &s->delay_ms, e) < 0)
				return -1;
			break;
		case O_MAX:
			if (pd_cli_int("--max-attempts", optarg, 1, 1000, &s->max_attempts, e) < 0)
				return -1;
			break;
		case O_TIMEOUT:
			if (pd_cli_dur("--timeout", optarg, &s->timeout_ms, e) < 0)
				return -1;
			if (s->timeout_ms == 0)
				return pd_errf(e, PD_EX_USAGE,
					       "option --timeout: must be positive");
			break;
		case O_AMO:
			s->delivery = "at-most-once";
			break;
		case O_TP:
			s->traceparent = optarg;
			break;
		case O_AFTER:
			if (s->nafter == MAX_AFTER)
				return pd_errf(e, PD_EX_USAGE, "at most %d --after options",
					       MAX_AFTER);
			if (pd_cli_int("--after", optarg, 1, __LONG_LONG_MAX__,
				       &o->after[s->nafter], e) < 0)
				return -1;
			s->nafter++;
			break;
		case O_NDJSON:
			o->ndjson = 1;
			break;
		case O_JSON:
			o->json = 1;
			break;
		case O_WAIT:
			o->wait = 1;
			break;
		default:
			rc = pd_app_option(a, NULL, ch, optarg, help, SYNOPSIS, argv, e);
			if (rc == 2)
				return e->code = PD_EX_USAGE, -2;
			if (rc != 0)
				return rc;
			break;
		}
	}
	s->after = o->after;
	if (s->traceparent == NULL)
		s->traceparent = getenv("TRACEPARENT");
	if (s->traceparent && *s->traceparent == '\0')
		s->traceparent = NULL;
	if (s->has_run_at && s->delay_ms >= 0)
		return pd_errf(e, PD_EX_USAGE, "--run-at and --delay cannot be combined");
	if (o->ndjson) {
		if (argc - optind > 1)
			return pd_errf(e, PD_EX_USAGE,
				       "unexpected argument '%s' (with --ndjson the "
				       "jobs come from stdin)",
				       argv[optind + 1]);
		if (o->wait)
			return pd_errf(e, PD_EX_USAGE, "--wait takes a single job, not --ndjson");
		if (s->idempotency_key)
			return pd_errf(e, PD_EX_USAGE,
				       "-k applies to one job; with --ndjson give "
				       "\"idempotency_key\" on each line");
	} else {
		if (argc - optind < 1)
			return pd_errf(e, PD_EX_USAGE, "missing TYPE");
		if (argc - optind > 2)
			return pd_errf(e, PD_EX_USAGE, "unexpected argument '%s'",
				       argv[optind + 2]);
	}
	if (argc > optind && *argv[optind] == '\0')
		return pd_errf(e, PD_EX_USAGE, "TYPE must not be empty");
	s->type = argc > optind ? argv[optind] : NULL;
	return 0;
}

int main(int argc, char **argv)
{
	struct pd_err e = PD_ERR_INIT;
	struct pd_app a;
	struct opts o;
	struct pd_buf in = PD_BUF_INIT, array = PD_BUF_INIT;
	struct pd_json j = PD_JSON_INIT;
	long long *ids = NULL;
	int *created = NULL, n = 1, rc;

	pd_cli_init(argv[0]);
	pd_app_init(&a);
	memset(&o, 0, sizeof(o));
	pd_jobspec_init(&o.spec);
	rc = parse_args(argc, argv, &a, &o, &e);
	if (rc == 1)
		return pd_cli_finish_stdout();
	if (rc == -2)
		return PD_EX_USAGE;
	if (rc < 0) {
		pd_cli_usage(SYNOPSIS, "%s", e.msg);
		return e.code;
	}
	if (pd_app_load(&a, &e) < 0)
		goto done;

	/* Read and check every input before touching the database. */
	if (o.ndjson) {
		if (read_stdin(&in, &e) < 0 || read_ndjson(&o, &in, &array, &n, &e) < 0)
			goto done;
	} else {
		const char *payload = argc - optind == 2 ? argv[optind + 1] : NULL;
		const char *where = "PAYLOAD";
		struct pd_err je = PD_ERR_INIT;

		if (payload == NULL && !isatty(0)) {
			if (read_stdin(&in, &e) < 0)
				goto done;
			payload = in.data;
			where = "stdin";
		}
		if (payload == NULL || (where[0] == 's' && blank(payload, in.len)))
			payload = "{}";
		if (pd_json_parse(&j, payload, strlen(payload), &je) < 0) {
			json_error(&e, &je, where, 0);
			goto done;
		}
		o.spec.payload = payload;
		o.spec.payload_len = strlen(payload);
		pd_buf_putc(&array, '[');
		pd_jobspec_json(&o.spec, &array);
		pd_buf_putc(&array, ']');
	}
	if (pd_app_connect(&a, 1, &e) < 0)
		goto done;
	ids = pd_xcalloc((size_t)n, sizeof(*ids));
	created = pd_xcalloc((size_t)n, sizeof(*created));
	if (enqueue_all(&a.db, array.data, n, ids, created, &e) < 0) {
		if (strcmp(e.sqlstate, "23503") == 0)
			e.code = PD_EX_NOTFOUND;
		else if (strncmp(e.sqlstate, "22", 2) == 0 || strncmp(e.sqlstate, "23", 2) == 0)
			e.code = PD_EX_DATAERR;
		goto done;
	}
	for (int i = 0; i < n; i++)
		if (!created[i])
			fprintf(
			    stderr,
			    "%s: idempotency key already used in tenant '%s': existing job %lld\n",
			    pd_progname(), o.spec.tenant ? o.spec.tenant : "default", ids[i]);
	if (o.json) {
		if (print_rows(&a.db, ids, n, &e) < 0)
			goto done;
	} else {
		for (int i = 0; i < n; i++)
			printf("%lld\n", ids[i]);
	}
	if (o.wait) {
		fflush(stdout);
		rc = wait_job(&a.db, ids[0], &e);
		if (rc >= 0)
			e.code = rc;
	}
done:
	if (e.msg[0])
		pd_die_msg(e.msg);
	pd_json_release(&j);
	pd_buf_release(&in);
	pd_buf_release(&array);
	free(ids);
	free(created);
	pd_app_release(&a);
	if (pd_cli_finish_stdout() && e.code == 0)
		e.code = PD_EX_SOFTWARE;
	return e.code;
}
