/*
 * outbox: the relay's claim and outcome statements, and the publish
 * command's environment. See outbox.h, sql/004_outbox.sql and
 * sql/006_outbox_claim.sql.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "henv.h"
#include "jobs.h"
#include "json.h"
#include "outbox.h"

/*
 * c: the candidates, in id order, locked or skipped: PENDING heads whose
 * time has come. Only a key's earliest unpublished message is a head
 * (is_head, kept by the triggers of sql/006_outbox_claim.sql; a keyless
 * message is always one), so the messages queued behind a head are not
 * candidates, and a DEAD_LETTERED head, not being PENDING, blocks its key.
 * d: candidates whose attempts are used up: only an abandoned last claim
 * leaves a PENDING message so; dead-lettered rather than tried again.
 * u: the rest, claimed. claimed_by is set only while a claim is open (the
 * outcome clears it), so a non-null one here is a lapsed claim.
 * Rows of d come back with a null token.
 *
 * The plan (tests/outbox-plan.bats checks it):
 *   Sort (by id)
 *     CTE c: Limit -> LockRows -> Index Scan using outbox_claim_idx on outbox o
 *            (id WHERE state = 'PENDING' AND is_head; Filter: next_attempt_at,
 *            topics; no SubPlan)
 *     CTE d, CTE u: Update on outbox <- Nested Loop (CTE Scan on c,
 *            Index Scan using outbox_pkey)
 *     Append (CTE Scan on u, CTE Scan on d)
 * c visits the claimable heads, then the heads in flight or backing off it
 * passes over, and nothing per message queued behind a head. With 100,000
 * messages behind a dead-lettered head and 20,000 behind one in flight: c
 * about 10 shared buffers, the statement claiming 6 about 70-120, 0.2-0.6
 * ms (before: 462,000 buffers and 4 s, or minutes once the planner
 * preferred a Seq Scan for the NOT EXISTS).
 */
static const char claim_sql[] =
    "WITH c AS ("
    " SELECT o.id FROM pendulum.outbox o"
    " WHERE o.state = 'PENDING' AND o.is_head AND o.next_attempt_at <= now()"
    "  AND ($1::text[] IS NULL OR o.topic = ANY ($1::text[]))"
    " ORDER BY o.id LIMIT $2 FOR UPDATE OF o SKIP LOCKED"
    "), d AS ("
    " UPDATE pendulum.outbox o SET state = 'DEAD_LETTERED', dead_lettered_at = now(),"
    "  dead_reason = 'attempts exhausted (the last claim lapsed)',"
    "  last_error = 'claim lapsed: relay ' || coalesce(o.claimed_by, '?')"
    "   || ' recorded no outcome',"
    "  claimed_by = NULL"
    " FROM c WHERE o.id = c.id AND o.attempts >= o.max_attempts"
    " RETURNING o.id"
    "), u AS ("
    " UPDATE pendulum.outbox o SET attempts = o.attempts + 1,"
    "  claim_token = nextval('pendulum.outbox_claim_token_seq'), claimed_by = $3,"
    "  next_attempt_at = now() + $4::bigint * interval '1 millisecond',"
    "  last_error = CASE WHEN o.claimed_by IS NOT NULL"
    "   THEN 'claim lapsed: relay ' || o.claimed_by || ' recorded no outcome'"
    "   ELSE o.last_error END"
    " FROM c WHERE o.id = c.id AND o.attempts < o.max_attempts"
    " RETURNING o.*"
    ") "
    "SELECT id, claim_token, attempts, max_attempts, tenant_id, topic, message_key,"
    " payload::text, headers::text FROM u "
    "UNION ALL SELECT id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM d "
    "ORDER BY 1";

int pd_outbox_claim(struct pd_db *db, const char *relay, const char *const *topics, int ntopics,
		    int limit, long long visibility_ms, struct pd_outbox_msg **out, int *n,
		    int *dead, struct pd_err *e)
{
	struct pd_buf t = PD_BUF_INIT;
	char lim[16], vis[24];
	const char *params[4];
	PGresult *r;
	int rc, rows;

	*out = NULL;
	*n = *dead = 0;
	if (topics)
		pd_db_text_array(&t, topics, ntopics);
	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(vis, sizeof(vis), "%lld", visibility_ms);
	params[0] = topics ? t.data : NULL;
	params[1] = lim;
	params[2] = relay;
	params[3] = vis;
	rc = pd_db_exec(db, claim_sql, 4, params, PGRES_TUPLES_OK, &r, e);
	pd_buf_release(&t);
	if (rc < 0)
		return -1;
	if (PQnfields(r) != 9) {
		PQclear(r);
		return pd_errf(e, PD_EX_SOFTWARE, "outbox claim: expected 9 columns");
	}
	rows = PQntuples(r);
	if (rows > 0)
		*out = pd_xcalloc((size_t)rows, sizeof(**out));
	for (int i = 0; i < rows; i++) {
		struct pd_outbox_msg *m;

		if (PQgetisnull(r, i, 1)) {
			(*dead)++;
			continue;
		}
		m = &(*out)[(*n)++];
		m->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
		m->token = strtoll(PQgetvalue(r, i, 1), NULL, 10);
		m->attempt = atoi(PQgetvalue(r, i, 2));
		m->max_attempts = atoi(PQgetvalue(r, i, 3));
		m->tenant = pd_db_dup(r, i, 4);
		m->topic = pd_db_dup(r, i, 5);
		m->key = pd_db_dup(r, i, 6);
		m->payload = pd_db_dup(r, i, 7);
		m->headers = pd_db_dup(r, i, 8);
	}
	PQclear(r);
	if (*n == 0) {
		free(*out);
		*out = NULL;
	}
	return 0;
}

void pd_outbox_msg_clear(struct pd_outbox_msg *m)
{
	free(m->tenant);
	free(m->topic);
	free(m->key);
	free(m->payload);
	free(m->headers);
	memset(m, 0, sizeof(*m));
}

/*
 * Fenced on (id, claim_token, PENDING). claimed_by is cleared: the claim is
 * closed. A release (drain) notifies, so another relay takes the message
 * at once. Publishing a keyed message (always its key's head) makes the
 * key's next unpublished message the head, in this statement (the trigger
 * outbox_head_published, sql/006_outbox_claim.sql); a retry, release or
 * dead letter leaves the head where it is.
 */
static const char finish_sql[] =
    "WITH o AS ("
    " UPDATE pendulum.outbox SET"
    "  state = CASE WHEN $3 = 'published' THEN 'PUBLISHED'"
    "   WHEN $3 = 'dead' OR ($3 = 'retry' AND attempts >= max_attempts) THEN 'DEAD_LETTERED'"
    "   ELSE 'PENDING' END,"
    "  attempts = CASE WHEN $3 = 'release' THEN greatest(attempts - 1, 0) ELSE attempts END,"
    "  next_attempt_at = CASE WHEN $3 = 'retry' AND attempts < max_attempts"
    "   THEN now() + $4::bigint * interval '1 millisecond'"
    "   WHEN $3 = 'release' THEN now() ELSE next_attempt_at END,"
    "  published_at = CASE WHEN $3 = 'published' THEN now() END,"
    "  dead_lettered_at = CASE WHEN $3 = 'dead' OR ($3 = 'retry' AND attempts >= max_attempts)"
    "   THEN now() END,"
    "  dead_reason = CASE WHEN $3 = 'dead' THEN $6"
    "   WHEN $3 = 'retry' AND attempts >= max_attempts THEN 'attempts exhausted' END,"
    "  last_error = CASE $3 WHEN 'published' THEN NULL WHEN 'release' THEN last_error"
    "   ELSE $5 END,"
    "  claimed_by = NULL"
    " WHERE id = $1 AND claim_token = $2 AND state = 'PENDING'"
    " RETURNING state, topic"
    "), f AS ("
    " UPDATE pendulum.counters SET value = value + 1"
    " WHERE name = 'outbox_writes_fenced' AND NOT EXISTS (SELECT 1 FROM o)"
    "), n AS ("
    " SELECT pg_notify('pendulum_outbox', topic) FROM o WHERE $3 = 'release'"
    ") "
    "SELECT state, (SELECT count(*) FROM n) FROM o";

int pd_outbox_finish(struct pd_db *db, long long id, long long token,
		     const struct pd_outbox_outcome *o, char *state, struct pd_err *e)
{
	static const char *kinds[] = {"published", "retry", "dead", "release"};
	char a[24], b[24], backoff[24];
	const char *params[6];
	char *v = NULL;

	snprintf(a, sizeof(a), "%lld", id);
	snprintf(b, sizeof(b), "%lld", token);
	snprintf(backoff, sizeof(backoff), "%lld", o->backoff_ms);
	params[0] = a;
	params[1] = b;
	params[2] = kinds[o->kind];
	params[3] = backoff;
	params[4] = o->error;
	params[5] = o->dead_reason ? o->dead_reason : "terminal exit code";
	if (pd_db_value(db, finish_sql, 6, params, &v, e) < 0)
		return -1;
	snprintf(state, 16, "%s", v ? v : "");
	free(v);
	return *state != '\0';
}

void pd_outbox_header_var(struct pd_buf *out, const char *key)
{
	pd_buf_puts(out, "PD_HEADER_");
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		char c = (char)*p;

		if (*p >= 'a' && *p <= 'z')
			c = (char)(*p - 'a' + 'A');
		else if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			c = '_';
		pd_buf_putc(out, c);
	}
}

/* The variables a publish command gets from the relay, never inherited. */
static const char *const ours[] = {"PD_TOPIC",	 "PD_MESSAGE_KEY",  "PD_MESSAGE_ID",  "PD_TENANT",
				   "PD_ATTEMPT", "PD_MAX_ATTEMPTS", "PD_CLAIM_TOKEN", NULL};

static int is_ours(const char *var)
{
	size_t l;

	if (strncmp(var, "PD_HEADER_", 10) == 0)
		return 1;
	for (int i = 0; ours[i]; i++) {
		l = strlen(ours[i]);
		if (strncmp(var, ours[i], l) == 0 && var[l] == '=')
			return 1;
	}
	return 0;
}

static char *envnum(const char *k, long long v)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_buf_printf(&b, "%s=%lld", k, v);
	return pd_buf_detach(&b);
}

char **pd_outbox_env(const char *const *base, const struct pd_outbox_msg *m, struct pd_err *e)
{
	struct pd_json j = PD_JSON_INIT;
	struct pd_err je = PD_ERR_INIT;
	const char *h = m->headers ? m->headers : "{}";
	size_t nbase = 0, k = 0, first_header;
	char **env;
	int tok;

	if (pd_json_parse(&j, h, strlen(h), &je) < 0) {
		pd_errf(e, PD_EX_DATAERR, "message %lld: headers: %s", m->id, je.msg);
		return NULL;
	}
	if (j.tok[0].type != PD_JSON_OBJECT) {
		pd_json_release(&j);
		pd_errf(e, PD_EX_DATAERR, "message %lld: headers: expected a JSON object", m->id);
		return NULL;
	}
	while (base && base[nbase])
		nbase++;
	env = pd_xcalloc(nbase + 8 + (size_t)j.tok[0].size + 1, sizeof(*env));
	for (size_t i = 0; i < nbase; i++)
		if (!is_ours(base[i]))
			env[k++] = pd_xstrdup(base[i]);
	env[k++] = pd_henv_var("PD_TOPIC", m->topic ? m->topic : "");
	if (m->key)
		env[k++] = pd_henv_var("PD_MESSAGE_KEY", m->key);
	env[k++] = envnum("PD_MESSAGE_ID", m->id);
	env[k++] = pd_henv_var("PD_TENANT", m->tenant ? m->tenant : "");
	env[k++] = envnum("PD_ATTEMPT", m->attempt);
	env[k++] = envnum("PD_MAX_ATTEMPTS", m->max_attempts);
	env[k++] = envnum("PD_CLAIM_TOKEN", m->token);
	first_header = k;
	tok = 1;
	for (int i = 0; i < j.tok[0].size; i++) {
		struct pd_buf var = PD_BUF_INIT;
		char *key = pd_json_str(&j, tok), *val;
		size_t namelen, slot = k;

		if (j.tok[tok + 1].type == PD_JSON_STRING) {
			val = pd_json_str(&j, tok + 1);
		} else {
			const char *p;
			size_t n;

			pd_json_span(&j, tok + 1, &p, &n);
			val = pd_xstrndup(p, n);
		}
		pd_outbox_header_var(&var, key);
		namelen = var.len;
		pd_buf_putc(&var, '=');
		pd_buf_puts(&var, val);
		for (size_t s = first_header; s < k; s++)
			if (strncmp(env[s], var.data, namelen + 1) == 0)
				slot = s;
		if (slot < k)
			free(env[slot]);
		else
			k++;
		env[slot] = pd_buf_detach(&var);
		free(key);
		free(val);
		tok = pd_json_skip(&j, tok + 1);
	}
	env[k] = NULL;
	pd_json_release(&j);
	return env;
}

int pd_outbox_replay(struct pd_db *db, const long long *ids, int nids, PGresult **r,
		     struct pd_err *e)
{
	/* clang-format off */
	/*
	 * The claim is cleared too: a relay still holding the message's last
	 * token (its claim was abandoned and dead-lettered) is fenced off.
	 * is_head is left alone: a dead letter blocking its key is that key's
	 * head (sql/006_outbox_claim.sql), so once PENDING it is claimable at
	 * once, before the messages queued behind it. (Deleting a dead letter,
	 * with SQL, hands its key to the next message: a trigger does it.)
	 */
	static const char sql[] =
	    "WITH r AS (UPDATE pendulum.outbox o SET state = 'PENDING', attempts = 0,"
	    " replay_count = o.replay_count + 1, next_attempt_at = now(), claim_token = NULL,"
	    " claimed_by = NULL, last_error = NULL, dead_reason = NULL, dead_lettered_at = NULL"
	    " WHERE o.id = ANY ($1::bigint[]) AND o.state = 'DEAD_LETTERED'"
	    " RETURNING o.id, o.topic, o.state, o.message_key, o.replay_count),"
	    " n AS (SELECT pg_notify('pendulum_outbox', t.topic)"
	    " FROM (SELECT DISTINCT topic FROM r) t)"
	    " SELECT id, topic, state, message_key, replay_count, (SELECT count(*) FROM n) FROM r"
	    " ORDER BY id";
	/* clang-format on */
	struct pd_buf ia = PD_BUF_INIT;
	const char *params[1];
	int rc;

	pd_db_id_array(&ia, ids, nids);
	params[0] = ia.data;
	rc = pd_db_exec(db, sql, 1, params, PGRES_TUPLES_OK, r, e);
	pd_buf_release(&ia);
	return rc;
}
