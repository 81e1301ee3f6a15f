#!/usr/bin/env bats
# Least privilege (sql/019, pendulum(7) ROLES AND TENANTS): the group roles
# pendulum_enqueue, pendulum_worker and pendulum_admin, row-level security
# per tenant through pendulum.tenant_members, views that run as their
# caller, a fixed search_path for every function. The login roles made here
# are cluster-wide: named after this file's database, dropped at the end.

load helpers

setup_file() {
	pd_setup_db
	pd-admin migrate >/dev/null
	R_APP="app_$PD_DB_NAME"
	R_ADM="adm_$PD_DB_NAME"
	R_WRK="wrk_$PD_DB_NAME"
	export R_APP R_ADM R_WRK
	drop_roles
	sql "CREATE ROLE $R_APP LOGIN; GRANT pendulum_enqueue TO $R_APP;
	     CREATE ROLE $R_ADM LOGIN; GRANT pendulum_admin TO $R_ADM;
	     CREATE ROLE $R_WRK LOGIN; GRANT pendulum_worker TO $R_WRK"
	pd-admin tenant grant "$R_APP" acme >/dev/null
	pd-admin tenant grant "$R_ADM" acme >/dev/null
}

drop_roles() {
	local r
	for r in "$R_APP" "$R_ADM" "$R_WRK"; do
		psql -X -q -d "$PD_PG_URL" -c "DROP ROLE IF EXISTS $r" 2>/dev/null || true
	done
}

teardown_file() {
	kill_all_bg
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $PD_DB_NAME WITH (FORCE)" || true
	for db in "${PD_DB_NAME}_b" "${PD_DB_NAME}_c"; do
		psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
	done
	drop_roles
	pd_teardown_db
}

teardown() {
	kill_all_bg
}

# url_as ROLE [DB]: this file's database (or DB) as login role ROLE.
url_as() {
	local u
	u=$(printf '%s\n' "$PD_DATABASE_URL" | sed "s/user=[^ ]*/user=$1/")
	if [ -n "${2:-}" ]; then
		u=$(printf '%s\n' "$u" | sed "s/dbname=[^ ]*/dbname=$2/")
	fi
	printf '%s\n' "$u"
}

# sql_as ROLE QUERY: sql as login role ROLE.
sql_as() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$(url_as "$1")" -c "$2"
}

# Jobs, attempts, a workflow run with a step, outbox messages, a schedule
# with a fire, for tenants acme and bank (as the owner, which bypasses).
seed() {
	sql "SET client_min_messages = warning; TRUNCATE pendulum.jobs, pendulum.outbox, pendulum.cron_schedules CASCADE"
	local t
	for t in acme bank bank; do
		sql "SELECT pendulum.enqueue('$t', 'seed', '{}')" >/dev/null
		sql "SELECT pendulum.start_workflow('$t', 'flow')" >/dev/null
		sql "SELECT pendulum.outbox_record('$t', 'topic', '{}', 'k')" >/dev/null
	done
	sql "UPDATE pendulum.jobs SET state = 'DEAD_LETTERED', finished_at = now(), attempt = 1,
	         lease_token = id, dead_reason = 'seeded'"
	sql "INSERT INTO pendulum.attempt_rows (job_id, attempt, lease_token, finished_at, outcome)
	     SELECT id, 1, id, now(), 'failed' FROM pendulum.jobs"
	sql "INSERT INTO pendulum.workflow_steps (run_id, step_index, step_name, kind)
	     SELECT id, 0, 'a', 'run' FROM pendulum.workflow_runs"
	sql "INSERT INTO pendulum.cron_schedules (tenant_id, name, cron, timezone, job_type)
	     VALUES ('acme', 's', '* * * * *', 'UTC', 'seed'), ('bank', 's', '* * * * *', 'UTC', 'seed')"
	sql "INSERT INTO pendulum.cron_fires (schedule_id, fire_at, kind, job_id)
	     SELECT s.id, now(), 'fired', (SELECT min(j.id) FROM pendulum.jobs j
	                                    WHERE j.tenant_id = s.tenant_id)
	       FROM pendulum.cron_schedules s"
}

TENANT_TABLES="jobs attempt_rows outbox outbox_heads workflow_runs workflow_steps cron_schedules cron_fires"

@test "the three group roles exist NOLOGIN; migrating two more databases at once, and again, does not fail on them" {
	local b="${PD_DB_NAME}_b" c="${PD_DB_NAME}_c"
	run sql "SELECT string_agg(rolname || ':' || rolcanlogin, ',' ORDER BY rolname) FROM pg_roles
	         WHERE rolname IN ('pendulum_enqueue', 'pendulum_worker', 'pendulum_admin')"
	[ "$output" = "pendulum_admin:false,pendulum_enqueue:false,pendulum_worker:false" ]
	sql "CREATE DATABASE $b"
	sql "CREATE DATABASE $c"
	start_bg mig_b pd-admin -d "$(url_as "$(sql "SELECT current_user")" "$b")" migrate
	start_bg mig_c pd-admin -d "$(url_as "$(sql "SELECT current_user")" "$c")" migrate
	wait_for 60 test -s "$BATS_FILE_TMPDIR/mig_b.status"
	wait_for 60 test -s "$BATS_FILE_TMPDIR/mig_c.status"
	[ "$(cat "$BATS_FILE_TMPDIR/mig_b.status")" = 0 ]
	[ "$(cat "$BATS_FILE_TMPDIR/mig_c.status")" = 0 ]
	run pd-admin migrate
	[ "$status" -eq 0 ]
}

@test "every function has a fixed search_path or a SQL-standard body; SECURITY DEFINER ones are not PUBLIC's" {
	run sql "SELECT p.oid::regprocedure FROM pg_proc p
	         WHERE p.pronamespace = 'pendulum'::regnamespace AND p.prosqlbody IS NULL
	           AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	run sql "SELECT p.oid::regprocedure FROM pg_proc p
	         WHERE p.pronamespace = 'pendulum'::regnamespace AND p.prosecdef
	           AND (has_function_privilege('public', p.oid, 'EXECUTE')
	                OR NOT 'search_path=pendulum, pg_temp' = ANY (p.proconfig))"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	run sql "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'pendulum'::regnamespace
	           AND c.relkind = 'v' AND NOT coalesce('security_invoker=true' = ANY (c.reloptions), false)"
	[ "$output" = "" ]
}

@test "a role granted tenant acme only counts acme's rows in every tenant table and through every view" {
	local t v mine want n
	seed
	for t in $TENANT_TABLES; do
		want=$(sql "SELECT count(*) FROM pendulum.$t WHERE tenant_id = 'acme'")
		[ "$want" -gt 0 ] || { echo "no acme rows in $t"; return 1; }
		mine=$(sql_as "$R_APP" "SELECT count(*) FROM pendulum.$t" 2>&1) || mine="error: $mine"
		if [ "$t" = outbox_heads ]; then
			[[ "$mine" == *"permission denied"* ]] || { echo "$t: $mine"; return 1; }
			continue
		fi
		[ "$mine" = "$want" ] || { echo "$t: $mine rows, acme has $want"; return 1; }
	done
	# Through a view: what the owner counts once every other tenant's rows
	# are gone (rolled back), or permission denied.
	n=0
	for v in $(sql "SELECT table_name FROM information_schema.views WHERE table_schema = 'pendulum' ORDER BY 1"); do
		want=$(psql -X -q -At -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" <<-EOF
			BEGIN;
			DELETE FROM pendulum.jobs WHERE tenant_id <> 'acme';
			DELETE FROM pendulum.outbox WHERE tenant_id <> 'acme';
			DELETE FROM pendulum.cron_schedules WHERE tenant_id <> 'acme';
			DELETE FROM pendulum.retired_metrics;
			SELECT count(*) FROM pendulum.$v;
			ROLLBACK;
		EOF
		)
		if mine=$(sql_as "$R_APP" "SELECT count(*) FROM pendulum.$v" 2>&1); then
			[ "$mine" = "$want" ] || { echo "view $v: $mine rows, acme's are $want"; return 1; }
			n=$((n + 1))
		else
			[[ "$mine" == *"permission denied"* ]] || { echo "view $v: $mine"; return 1; }
		fi
	done
	# job_attempts, cron_history, workflow_run_states, live_workers, unserved at least
	[ "$n" -ge 5 ]
}

@test "pd-admin as a pendulum_admin role mapped to acme: jobs shows acme's only; another tenant's job is not found and unchanged" {
	local bank acme before
	seed
	bank=$(sql "SELECT min(id) FROM pendulum.jobs WHERE tenant_id = 'bank'")
	acme=$(sql "SELECT min(id) FROM pendulum.jobs WHERE tenant_id = 'acme'")
	run --separate-stderr pd-admin -d "$(url_as "$R_ADM")" --json jobs
	[ "$status" -eq 0 ]
	[[ "$output" == *'"tenant_id":"acme"'* ]]
	[[ "$output" != *'"tenant_id":"bank"'* ]]
	before=$(sql "SELECT state, replay_count, attempt FROM pendulum.jobs WHERE id = $bank")
	run --separate-stderr pd-admin -d "$(url_as "$R_ADM")" job replay "$bank"
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: job $bank not found" ]
	[ "$(sql "SELECT state, replay_count, attempt FROM pendulum.jobs WHERE id = $bank")" = "$before" ]
	run --separate-stderr pd-admin -d "$(url_as "$R_ADM")" job cancel "$bank"
	[ "$status" -eq 2 ]
	run --separate-stderr pd-admin -d "$(url_as "$R_ADM")" job replay "$acme"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT replay_count FROM pendulum.jobs WHERE id = $acme")" = 1 ]
	# The same through plain SQL, and no way to widen its own tenants.
	[ "$(sql_as "$R_ADM" "UPDATE pendulum.jobs SET priority = 5 WHERE id = $bank RETURNING id")" = "" ]
	run --separate-stderr pd-admin -d "$(url_as "$R_ADM")" tenant grant "$R_ADM" bank
	[ "$status" -eq 77 ]
	[ "$(sql "SELECT count(*) FROM pendulum.tenant_members WHERE role::text = '$R_ADM'")" = 1 ]
}

@test "pd-admin tenant grant, list and revoke; unknown role 2, bad tenant 65" {
	run --separate-stderr pd-admin tenant grant "$R_WRK" zeta
	[ "$status" -eq 0 ]
	[ "$output" = "role $R_WRK granted tenant zeta" ]
	run --separate-stderr pd-admin tenant grant "$R_WRK" zeta
	[ "$output" = "role $R_WRK already had tenant zeta" ]
	run --separate-stderr pd-admin --json tenant list "$R_WRK"
	[ "$status" -eq 0 ]
	[[ "$output" == "{\"role\":\"$R_WRK\",\"tenant\":\"zeta\",\"granted_at\":"* ]]
	[ "${#lines[@]}" -eq 1 ]
	run --separate-stderr pd-admin tenant revoke "$R_WRK" zeta
	[ "$status" -eq 0 ]
	run --separate-stderr pd-admin tenant revoke "$R_WRK" zeta
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: role '$R_WRK' has no grant of tenant 'zeta'" ]
	run --separate-stderr pd-admin tenant grant "no_such_role_$PD_DB_NAME" zeta
	[ "$status" -eq 2 ]
	[ "$stderr" = "pd-admin: role 'no_such_role_$PD_DB_NAME' does not exist" ]
	run --separate-stderr pd-admin tenant grant "$R_WRK" "$(printf 'ze\tta')"
	[ "$status" -eq 65 ]
	[ "$(sql "SELECT count(*) FROM pendulum.tenant_members WHERE role::text = '$R_WRK'")" = 0 ]
	run --separate-stderr pd-admin tenant list
	[[ "$output" == *"$R_APP"*acme* ]]
}

@test "the enqueue role cannot UPDATE or DELETE jobs; the worker role cannot TRUNCATE or DROP any table" {
	local t out
	seed
	run sql_as "$R_APP" "UPDATE pendulum.jobs SET state = 'CANCELLED'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"permission denied for table jobs"* ]]
	run sql_as "$R_APP" "UPDATE pendulum.jobs SET payload = '{}'"
	[[ "$output" == *"permission denied for table jobs"* ]]
	run sql_as "$R_APP" "DELETE FROM pendulum.jobs"
	[[ "$output" == *"permission denied for table jobs"* ]]
	for t in $(sql "SELECT tablename FROM pg_tables WHERE schemaname = 'pendulum'"); do
		for r in "$R_WRK" "$R_ADM" "$R_APP"; do
			out=$(sql_as "$r" "TRUNCATE pendulum.$t" 2>&1) && { echo "$r truncated $t"; return 1; }
			[[ "$out" == *"permission denied"* ]] || { echo "$r TRUNCATE $t: $out"; return 1; }
			out=$(sql_as "$r" "DROP TABLE pendulum.$t CASCADE" 2>&1) && { echo "$r dropped $t"; return 1; }
			[[ "$out" == *"must be owner"* ]] || { echo "$r DROP $t: $out"; return 1; }
		done
	done
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" -gt 0 ]
}

@test "pd-enqueue and --ndjson as an RLS-bound role: into its tenant (the staged COPY path for a large batch), refused into another with 77" {
	local big
	sql "SET client_min_messages = warning; TRUNCATE pendulum.jobs CASCADE"
	run --separate-stderr pd-enqueue -d "$(url_as "$R_APP")" -t acme one '{"a":1}'
	[ "$status" -eq 0 ]
	run --separate-stderr pd-enqueue -d "$(url_as "$R_APP")" -t bank one '{"a":1}'
	[ "$status" -eq 77 ]
	[ "$stderr" = 'pd-enqueue: database error: new row violates row-level security policy for table "jobs"' ]
	big="$BATS_TEST_TMPDIR/big.ndjson"
	seq 1 500 | sed 's/.*/{"i":&}/' >"$big"
	run --separate-stderr pd-enqueue -v -d "$(url_as "$R_APP")" -t acme --ndjson many <"$big"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 500 ]
	[[ "$stderr" == *"path=staged jobs=500"* ]]
	run --separate-stderr pd-enqueue -d "$(url_as "$R_APP")" -t bank --ndjson many <"$big"
	[ "$status" -eq 77 ]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	printf '{"type":"few","tenant":"acme"}\n{"type":"few","tenant":"bank"}\n' >"$big"
	run --separate-stderr pd-enqueue -d "$(url_as "$R_APP")" --ndjson <"$big"
	[ "$status" -eq 77 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE tenant_id = 'acme'")" = 501 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE tenant_id <> 'acme'")" = 0 ]
	# The owner bypasses row-level security: the direct COPY.
	seq 1 500 | sed 's/.*/{"i":&}/' >"$big"
	run --separate-stderr pd-enqueue -v -t bank --ndjson many <"$big"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"path=direct jobs=500"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE tenant_id = 'bank'")" = 500 ]
}

@test "pd-worker, pd-reaper and pd-relay as pendulum_worker login roles: claim, finish, failures with attempts, dependents, prune, publish" {
	local w ok bad dep out
	sql "SET client_min_messages = warning; TRUNCATE pendulum.jobs, pendulum.outbox, pendulum.workers CASCADE"
	w=$(url_as "$R_WRK")
	ok=$(pd-enqueue -t acme ok '{}')
	bad=$(pd-enqueue -t bank --max-attempts 1 bad '{}')
	dep=$(pd-enqueue -t bank --after "$ok" ok '{}')
	sql "SELECT pendulum.outbox_record('bank', 'topic', '{\"m\":1}')" >/dev/null
	run --separate-stderr timeout 60 pd-worker -d "$w" -j 2 --until-idle --poll 100ms \
		--handler ok=true --handler bad=false
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $ok")" = SUCCEEDED ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $dep")" = SUCCEEDED ]
	[ "$(sql "SELECT state FROM pendulum.jobs WHERE id = $bad")" = DEAD_LETTERED ]
	[ "$(sql "SELECT count(*) FROM pendulum.attempt_rows WHERE job_id = $bad AND tenant_id = 'bank'")" = 1 ]
	[ "$(sql "SELECT count(*) FROM pendulum.job_attempts WHERE job_id = $ok")" = 1 ]
	out="$BATS_TEST_TMPDIR/published"
	run --separate-stderr timeout 60 pd-relay -d "$w" --until-idle --poll 100ms --publish "cat >>$out"
	[ "$status" -eq 0 ]
	[ "$(cat "$out")" = '{"m": 1}' ]
	[ "$(sql "SELECT state FROM pendulum.outbox")" = PUBLISHED ]
	sql "UPDATE pendulum.jobs SET finished_at = now() - interval '1 hour'"
	sql "UPDATE pendulum.outbox SET published_at = now() - interval '1 hour'"
	printf 'retention:\n  succeeded: 1s\n  dead_lettered: 1s\n  outbox_published: 1s\n' \
		>"$BATS_TEST_TMPDIR/p.yaml"
	run --separate-stderr pd-reaper -d "$w" -c "$BATS_TEST_TMPDIR/p.yaml" --once
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" = 0 ]
	[ "$(sql "SELECT count(*) FROM pendulum.outbox")" = 0 ]
}
