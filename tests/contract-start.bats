#!/usr/bin/env bats
# DESIGN's state table: LEASED -> RUNNING (the start) is fenced. A start sent
# with a token that no longer holds the lease changes nothing. (A job claimed
# for a free slot is claimed RUNNING; the separate start, lib/jobs.c's
# start_sql, is for jobs claimed ahead, LEASED until a slot frees.)

load helpers
pd_db_hooks

setup() {
	reset_jobs
	# The claim's token goes stale at once: right after the claim statement
	# (an AFTER trigger, so the worker is answered with the old token), the
	# row gets a new one. Every UPDATE statement of a start is logged, even
	# one that matches no row (a statement trigger).
	sql "CREATE TABLE IF NOT EXISTS public.t_starts (q text);
	     CREATE TABLE IF NOT EXISTS public.t_stale_ids (id bigint);
	     TRUNCATE public.t_starts, public.t_stale_ids;
	     CREATE OR REPLACE FUNCTION public.t_stale() RETURNS trigger LANGUAGE plpgsql AS
	     \$\$BEGIN UPDATE pendulum.jobs SET lease_token = NEW.lease_token + 1000000
	               WHERE id = NEW.id;
	               INSERT INTO public.t_stale_ids VALUES (NEW.id); RETURN NULL; END\$\$;
	     CREATE OR REPLACE FUNCTION public.t_log() RETURNS trigger LANGUAGE plpgsql AS
	     \$\$BEGIN INSERT INTO public.t_starts VALUES (current_query()); RETURN NULL; END\$\$;
	     DROP TRIGGER IF EXISTS t_stale ON pendulum.jobs;
	     CREATE TRIGGER t_stale AFTER UPDATE ON pendulum.jobs FOR EACH ROW
	       WHEN (OLD.state = 'PENDING' AND NEW.state = 'LEASED') EXECUTE FUNCTION public.t_stale();
	     DROP TRIGGER IF EXISTS t_log ON pendulum.jobs;
	     CREATE TRIGGER t_log AFTER UPDATE ON pendulum.jobs FOR EACH STATEMENT
	       EXECUTE FUNCTION public.t_log()"
}

teardown() {
	kill_all_bg
	sql "DROP TRIGGER IF EXISTS t_stale ON pendulum.jobs; DROP TRIGGER IF EXISTS t_log ON pendulum.jobs"
}

start_tried() {
	sql_is "SELECT count(*) > 0 FROM public.t_starts WHERE q LIKE '%SET state = ''RUNNING''%'" t
}

@test "jobs claimed ahead (LEASED): a start with a stale lease token leaves each LEASED, started_at unset" {
	for _ in $(seq 300); do echo '{"type": "t"}'; done | pd-enqueue --ndjson >/dev/null
	# handlers quicker than a few round trips: the worker claims ahead of its
	# free slot (prefetch, lib/batch.c), those jobs come LEASED and are
	# started by a start of their own, sent with the token they were given
	start_worker w -j 1 --lease 2s --poll 100ms --no-reap --exec 't=/bin/true'
	wait_for 60 start_tried
	stop_worker w
	[ "$(sql "SELECT count(*) > 0 FROM public.t_stale_ids")" = t ]
	# every job whose token went stale: still LEASED, never started
	[ "$(sql "SELECT count(*) FROM pendulum.jobs j JOIN public.t_stale_ids s USING (id)
	          WHERE j.state <> 'LEASED' OR j.started_at IS NOT NULL")" -eq 0 ]
	[ "$(bg_status w)" -eq 0 ]
}
