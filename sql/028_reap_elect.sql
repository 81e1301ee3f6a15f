-- 028_reap_elect: one reaper for the fleet (lib/reap.h). The reap pass is
-- the elected role 'reaper' in pendulum.leaders (sql/016), for which every
-- pd-worker that reaps and every pd-reaper stand: with hundreds of
-- candidates, most turns are a standby's while another holds the role.
--
-- pendulum.elect took a row lock on every turn (INSERT ... ON CONFLICT DO
-- UPDATE locks the conflicting row even when its WHERE is false): a write,
-- a transaction id and WAL for a turn that changes nothing. Now a turn
-- that changes nothing reads first and stops there: another holds the role
-- and its lease has not expired (NULL), or the holder's own turn before a
-- third of its lease has passed (its token). What it returns is what the
-- statement below would: the row is read after any committed change, and
-- a change committed meanwhile (a resign, notified on pendulum_leaders; a
-- renewal) is seen at the next turn, as a turn one moment earlier would
-- have. Taking, renewing and the two-candidate race are unchanged.
CREATE OR REPLACE FUNCTION pendulum.elect(role text, holder text, lease_ms bigint)
RETURNS bigint
-- (CREATE OR REPLACE drops the SET that 019 gave every function: given again)
LANGUAGE plpgsql SET search_path = pendulum, pg_temp AS $$
DECLARE
    v_lease interval := lease_ms * interval '1 millisecond';
    v_token bigint;
    v_holder text;
    v_expires timestamptz;
BEGIN
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION 'elect: the lease must be longer than 0, not %', lease_ms
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT l.holder, l.token, l.expires_at INTO v_holder, v_token, v_expires
      FROM pendulum.leaders l WHERE l.role = elect.role;
    IF FOUND AND v_expires > now() THEN
        IF v_holder <> elect.holder THEN
            RETURN NULL; -- held by another: nothing to write
        END IF;
        IF v_expires >= now() + v_lease * 2 / 3 THEN
            RETURN v_token; -- held, not due for renewal yet
        END IF;
    END IF;
    v_token := NULL;
    INSERT INTO pendulum.leaders AS l (role, holder, token, expires_at)
    VALUES (elect.role, elect.holder, 1, now() + v_lease)
    ON CONFLICT ON CONSTRAINT leaders_pkey DO UPDATE
       SET holder = EXCLUDED.holder,
           token = CASE WHEN l.holder = EXCLUDED.holder THEN l.token ELSE l.token + 1 END,
           expires_at = EXCLUDED.expires_at
     WHERE l.expires_at <= now()
        OR (l.holder = EXCLUDED.holder AND l.expires_at < now() + v_lease * 2 / 3)
    RETURNING l.token INTO v_token;
    IF v_token IS NULL THEN
        SELECT l.token INTO v_token FROM pendulum.leaders l
         WHERE l.role = elect.role AND l.holder = elect.holder AND l.expires_at > now();
    END IF;
    RETURN v_token;
END
$$;
