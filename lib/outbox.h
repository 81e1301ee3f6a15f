/*
 * outbox: the relay's statements on pendulum.outbox (sql/004_outbox.sql,
 * sql/006_outbox_claim.sql), and the environment of a publish command.
 *
 * A claim takes PENDING messages whose next_attempt_at has come, with SKIP
 * LOCKED, in id order, among the heads only: a keyless message, or the
 * earliest message of its (tenant, topic, key) not yet PUBLISHED (so at
 * most one message per key is ever claimed, and a DEAD_LETTERED one blocks
 * its key until it is replayed or deleted). The head flag (is_head) and
 * pendulum.outbox_heads are kept by triggers on pendulum.outbox: publishing
 * or deleting a head makes the next message of its key the head. So a
 * claim's cost follows the heads it meets, never the messages queued
 * behind a head, whether that head is dead-lettered or in flight. Each
 * claimed message gets a fresh claim token, attempts + 1, and
 * next_attempt_at = now() + visibility: it is invisible to other relays
 * until then. Each statement is one transaction; nothing is held while a
 * publish command runs.
 *
 * The outcome write is fenced: it matches id AND claim_token AND state =
 * 'PENDING', so a relay whose claim lapsed and was taken over changes
 * nothing; such a write bumps the outbox_writes_fenced counter.
 */
#ifndef PD_OUTBOX_H
#define PD_OUTBOX_H

#include "buf.h"
#include "db.h"
#include "verdict.h"

struct pd_outbox_msg {
	long long id, token;
	int attempt, max_attempts; /* attempt: 1 for the first */
	char *tenant, *topic;
	char *key;     /* NULL: no message key */
	char *payload; /* JSON text */
	char *headers; /* JSON object text, "{}" when none */
};

/*
 * Claim up to limit messages for relay (its id, stored in claimed_by), of
 * these topics (topics NULL: any topic), invisible to others for
 * visibility_ms. *out is malloc'd (pd_outbox_msg_clear each, then free), *n messages, in id
 * order. A claimable message whose attempts were already used up (its last
 * claim was abandoned: the relay died) is dead-lettered instead of claimed;
 * *dead counts those.
 */
int pd_outbox_claim(struct pd_db *db, const char *relay, const char *const *topics, int ntopics,
		    int limit, long long visibility_ms, struct pd_outbox_msg **out, int *n,
		    int *dead, struct pd_err *e);
/* Free one message's strings (the struct itself is the caller's). */
void pd_outbox_msg_clear(struct pd_outbox_msg *m);

struct pd_outbox_outcome {
	enum pd_verdict kind;
	long long backoff_ms;	 /* RETRY */
	const char *error;	 /* last_error; NULL leaves it (RELEASE) or clears it (PUBLISHED) */
	const char *dead_reason; /* DEAD */
};

/*
 * Record an outcome, fenced on (id, token). *state (at least 16 bytes)
 * gets the message's new state. Returns 1 applied, 0 fenced off
 * (counted), -1 error.
 */
int pd_outbox_finish(struct pd_db *db, long long id, long long token,
		     const struct pd_outbox_outcome *o, char *state, struct pd_err *e);

/*
 * The environment variable for header key: "PD_HEADER_" then key with
 * ASCII letters uppercased, digits kept and every other byte '_'
 * ("x-trace-id" -> "PD_HEADER_X_TRACE_ID"). Appended to out.
 */
void pd_outbox_header_var(struct pd_buf *out, const char *key);

/*
 * The publish command's environment: base (NULL-terminated, e.g. environ)
 * without any PD_TOPIC, PD_MESSAGE_KEY, PD_MESSAGE_ID, PD_TENANT,
 * PD_ATTEMPT, PD_MAX_ATTEMPTS, PD_CLAIM_TOKEN or PD_HEADER_* it holds, then
 * those for m, in that order (PD_MESSAGE_KEY only when m has a key), and
 * one PD_HEADER_<NAME>=value per header, in the order of m->headers; when
 * two names map to one variable the later wins. String values are
 * exported unescaped, other values as their JSON text. Returns a malloc'd
 * NULL-terminated vector (pd_strv_free, text.h), or NULL with e filled (code
 * 65) when m->headers is not a JSON object.
 */
char **pd_outbox_env(const char *const *base, const struct pd_outbox_msg *m, struct pd_err *e);

/*
 * Replay the DEAD_LETTERED messages among the nids ids: PENDING again, due
 * now, attempts 0, replay_count + 1, the relays of their topics woken.
 * *r: the rows replayed (id, topic, state, message_key, replay_count), by
 * id; the caller PQclear()s it.
 */
int pd_outbox_replay(struct pd_db *db, const long long *ids, int nids, PGresult **r,
		     struct pd_err *e);

#endif
