-- 006_outbox_claim: only the head of each key is claimable, so a claim
-- costs nothing per message queued behind a key's head, whether that head
-- is dead-lettered (the key is blocked) or merely in flight.
--
-- Before this, the claim walked every PENDING message in id order and
-- dropped those with an earlier unpublished message of their key: a key
-- blocked with 100,000 messages behind its head made every claim visit
-- all of them.
--
-- Now:
-- - outbox.is_head is set once a message reaches the front of its
--   (tenant, topic, key): at once for a keyless message or the first
--   unpublished one of its key, otherwise when the message before it is
--   published or deleted. It is never cleared, and means nothing once the
--   message is PUBLISHED. Among a key's unpublished messages exactly one,
--   the earliest, has it.
-- - The claim index holds PENDING heads only. A DEAD_LETTERED head is not
--   PENDING, and the messages behind a head are not heads: neither is in
--   the index, so a blocked key costs the claim nothing, and a key whose
--   head is in flight costs it that one head.
-- - pendulum.outbox_heads has a row per key with unpublished messages,
--   naming the head. It is where recorders and publishers of one key meet:
--   each locks the key's row, so a recorder never misses a head being
--   published, and a publisher never misses a message being recorded.
-- - Triggers on pendulum.outbox keep both, whoever writes: outbox_record,
--   pd-relay's outcome, pd-admin outbox replay, or an application's own
--   INSERT, UPDATE, DELETE or TRUNCATE. Changing a message's tenant_id,
--   topic or message_key is not supported.
--
-- A recorder in a REPEATABLE READ or SERIALIZABLE transaction may now get
-- serialization_failure (40001) from outbox_record when a relay published
-- or promoted its key's head since the transaction's snapshot was taken:
-- retry the transaction, as for any 40001. The relay's statements must run
-- READ COMMITTED (the default).

CREATE TABLE pendulum.outbox_heads (
    tenant_id   text NOT NULL,
    topic       text NOT NULL,
    message_key text NOT NULL,
    head_id     bigint NOT NULL, -- the key's earliest unpublished message
    PRIMARY KEY (tenant_id, topic, message_key)
);

-- Takes ACCESS EXCLUSIVE on the outbox until this migration commits: no
-- message is recorded or claimed while the heads are filled in.
ALTER TABLE pendulum.outbox ADD COLUMN is_head boolean NOT NULL DEFAULT false;

INSERT INTO pendulum.outbox_heads (tenant_id, topic, message_key, head_id)
SELECT tenant_id, topic, message_key, min(id) FROM pendulum.outbox
 WHERE state <> 'PUBLISHED' AND message_key IS NOT NULL
 GROUP BY tenant_id, topic, message_key;

UPDATE pendulum.outbox o SET is_head = true
 WHERE o.state <> 'PUBLISHED'
   AND (o.message_key IS NULL OR o.id IN (SELECT head_id FROM pendulum.outbox_heads));

-- The claim walks this index in id order: PENDING heads only.
DROP INDEX pendulum.outbox_claim_idx;
CREATE INDEX outbox_claim_idx ON pendulum.outbox (id) WHERE state = 'PENDING' AND is_head;

-- A message being inserted: keyless, it is a head; keyed, it is one if its
-- key has no unpublished message, and then becomes the key's head. Either
-- way the key's row stays locked until the transaction ends, so a relay
-- publishing the current head waits for this message to commit (or roll
-- back) before it looks for the next head. A PUBLISHED message inserted as
-- such is left alone.
CREATE FUNCTION pendulum.outbox_head_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_head bigint;
BEGIN
    NEW.is_head := false;
    IF NEW.state = 'PUBLISHED' THEN
        RETURN NEW;
    END IF;
    IF NEW.message_key IS NULL THEN
        NEW.is_head := true;
        RETURN NEW;
    END IF;
    -- FOR UPDATE, not an upsert: 100,000 messages for one key in one
    -- transaction lock the row once rather than make 100,000 versions of it.
    SELECT h.head_id INTO v_head FROM pendulum.outbox_heads h
     WHERE h.tenant_id = NEW.tenant_id AND h.topic = NEW.topic AND h.message_key = NEW.message_key
       FOR UPDATE;
    IF NOT FOUND THEN
        -- The key's first unpublished message. (A concurrent first insert
        -- for the key, possible only without outbox_record's advisory lock,
        -- lands in DO UPDATE, which also locks the row.)
        INSERT INTO pendulum.outbox_heads AS h (tenant_id, topic, message_key, head_id)
        VALUES (NEW.tenant_id, NEW.topic, NEW.message_key, NEW.id)
        ON CONFLICT (tenant_id, topic, message_key) DO UPDATE SET head_id = h.head_id
        RETURNING h.head_id INTO v_head;
    END IF;
    NEW.is_head := v_head = NEW.id;
    RETURN NEW;
END
$$;

-- A key's head left the unpublished messages (published or deleted): the
-- key's next unpublished message, if any, becomes its head. Trigger
-- functions are volatile, so in READ COMMITTED each statement below takes
-- a fresh snapshot: the second one, after the key's row is locked, sees
-- every message recorded for the key by transactions that have committed.
CREATE FUNCTION pendulum.outbox_head_promote() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_next bigint;
BEGIN
    PERFORM 1 FROM pendulum.outbox_heads h
     WHERE h.tenant_id = OLD.tenant_id AND h.topic = OLD.topic AND h.message_key = OLD.message_key
       FOR UPDATE;
    SELECT o.id INTO v_next FROM pendulum.outbox o
     WHERE o.tenant_id = OLD.tenant_id AND o.topic = OLD.topic AND o.message_key = OLD.message_key
       AND o.state <> 'PUBLISHED'
     ORDER BY o.id LIMIT 1;
    IF v_next IS NULL THEN
        DELETE FROM pendulum.outbox_heads h
         WHERE h.tenant_id = OLD.tenant_id AND h.topic = OLD.topic
           AND h.message_key = OLD.message_key;
    ELSE
        INSERT INTO pendulum.outbox_heads AS h (tenant_id, topic, message_key, head_id)
        VALUES (OLD.tenant_id, OLD.topic, OLD.message_key, v_next)
        ON CONFLICT (tenant_id, topic, message_key) DO UPDATE SET head_id = EXCLUDED.head_id;
        UPDATE pendulum.outbox o SET is_head = true WHERE o.id = v_next AND NOT o.is_head;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION pendulum.outbox_heads_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE pendulum.outbox_heads;
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_head_insert BEFORE INSERT ON pendulum.outbox
    FOR EACH ROW EXECUTE FUNCTION pendulum.outbox_head_insert();

-- Only when a keyed head is published or deleted: the claim, a retry, a
-- dead letter and a replay do not move a key's head.
CREATE TRIGGER outbox_head_published AFTER UPDATE OF state ON pendulum.outbox
    FOR EACH ROW
    WHEN (OLD.is_head AND OLD.message_key IS NOT NULL AND OLD.state <> 'PUBLISHED'
          AND NEW.state = 'PUBLISHED')
    EXECUTE FUNCTION pendulum.outbox_head_promote();

CREATE TRIGGER outbox_head_deleted AFTER DELETE ON pendulum.outbox
    FOR EACH ROW
    WHEN (OLD.is_head AND OLD.message_key IS NOT NULL AND OLD.state <> 'PUBLISHED')
    EXECUTE FUNCTION pendulum.outbox_head_promote();

CREATE TRIGGER outbox_heads_truncate AFTER TRUNCATE ON pendulum.outbox
    FOR EACH STATEMENT EXECUTE FUNCTION pendulum.outbox_heads_truncate();
