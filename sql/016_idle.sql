-- 016_idle: idle costs nothing, and an elected role is held like a lease.
--
-- The reap pass's sweep of BLOCKED jobs whose dependencies have all
-- succeeded (lib/jobs.c, pd_jobs_sweep) filtered state = 'BLOCKED' over a
-- sequential scan of pendulum.jobs: an idle daemon's cost grew with the
-- finished history kept. jobs_blocked_idx (sql/002) is a GIN index on
-- depends_on, which that filter cannot use; this index holds the BLOCKED
-- rows only, so the sweep reads as many rows as are blocked.
CREATE INDEX jobs_blocked_id_idx ON pendulum.jobs (id) WHERE state = 'BLOCKED';

-- Elected roles (the cron ticker; later the reaper). A role is held by one
-- process at a time until expires_at, on the database's clock: the holder
-- renews it while it runs; a holder that stops renewing (killed, frozen,
-- cut off) loses it once it expires, and another candidate takes it. token
-- goes up by one each time the role changes hands.
CREATE TABLE pendulum.leaders (
    role       text PRIMARY KEY,
    holder     text NOT NULL,
    token      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

COMMENT ON TABLE pendulum.leaders IS
    'Elected roles held like leases (pendulum.elect): who holds each, until when';

-- elect(role, holder, lease_ms): one candidate's turn, one statement. Take
-- the role when nobody holds it or its lease has expired; when holder holds
-- it, renew it once a third of the lease has passed (a write every
-- lease/3, however often this is called). Returns the token while holder
-- holds the role after the call, NULL when another does: a holder that
-- finds NULL has lost the role and must not act on it. Two candidates
-- taking an expired role at once: the second waits for the first's row
-- lock and then finds the role held (ON CONFLICT rechecks the updated row).
CREATE FUNCTION pendulum.elect(role text, holder text, lease_ms bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_lease interval := lease_ms * interval '1 millisecond';
    v_token bigint;
BEGIN
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION 'elect: the lease must be longer than 0, not %', lease_ms
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
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

-- resign(role, holder): give the role up at once if holder holds it (a
-- clean stop), and notify pendulum_leaders (payload: the role) on commit,
-- so that a listening standby takes it without waiting for its next turn.
CREATE FUNCTION pendulum.resign(role text, holder text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pendulum.leaders l SET expires_at = now()
     WHERE l.role = resign.role AND l.holder = resign.holder AND l.expires_at > now();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('pendulum_leaders', resign.role);
    RETURN true;
END
$$;

-- A ticker steps at the next fire it knows of (lib/ticker.c), not every
-- second: a schedule created, changed, resumed or fired notifies
-- pendulum_cron on commit, so that a listening ticker looks again at once.
-- One notification per transaction (equal ones are folded).
CREATE FUNCTION pendulum.cron_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pendulum_cron', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER cron_schedules_changed
    AFTER INSERT OR UPDATE OF next_fire_at, enabled ON pendulum.cron_schedules
    FOR EACH ROW WHEN (NEW.enabled AND NEW.next_fire_at IS NOT NULL)
    EXECUTE FUNCTION pendulum.cron_changed();
