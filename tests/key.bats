#!/usr/bin/env bats
# A job's concurrency_key (issue 23, item 2; sql/020, sql/021) on every path
# that makes a job: pd-enqueue --key, the NDJSON field on the JSON, staged
# and direct COPY paths, pendulum.enqueue, a handler's concurrency_key in
# the configuration, a workflow step's, a crontab annotation's, a
# schedules file's and pd-cron add --key; bad keys refused with nothing
# written; and a limit of 1 on a key that one worker with -j 4 keeps.

load helpers
pd_db_hooks

setup() {
	reset_jobs
	D=$BATS_TEST_TMPDIR
}

# key_of ID: the concurrency_key of job ID ("" for none).
key_of() {
	sql "SELECT concurrency_key FROM pendulum.jobs WHERE id = $1"
}

# keys_of TYPE: "KEY:COUNT" of TYPE's jobs, by key, one a line ("-" for none).
keys_of() {
	sql "SELECT coalesce(concurrency_key, '-') || ':' || count(*) FROM pendulum.jobs
	      WHERE job_type = '$1' GROUP BY concurrency_key
	      ORDER BY coalesce(concurrency_key, '-') COLLATE \"C\""
}

@test "pd-enqueue --key and pendulum.enqueue(..., concurrency_key) put the key on the job" {
	id=$(pd-enqueue --key vendor-x t '{}')
	[ "$(key_of "$id")" = vendor-x ]
	id=$(pd-enqueue t '{}')
	[ "$(key_of "$id")" = "" ]
	id=$(sql "SELECT pendulum.enqueue('default', 't', '{}', concurrency_key => 'sql-k')")
	[ "$(key_of "$id")" = sql-k ]
	id=$(sql "SELECT (pendulum.enqueue_ex('default', 't', '{}', concurrency_key => 'sql-ex')).id")
	[ "$(key_of "$id")" = sql-ex ]
	# the calls written before the parameter mean what they did
	id=$(sql "SELECT pendulum.enqueue('default', 't', '{}', 'default', 0, NULL, NULL, NULL, 25,
	            NULL, 'at-least-once', NULL, NULL)")
	[ "$(key_of "$id")" = "" ]
	ids=$(sql "SELECT pendulum.enqueue_many('[{\"type\": \"m\", \"concurrency_key\": \"many\"},
	             {\"type\": \"m\"}]')")
	[ "$ids" != "" ]
	[ "$(keys_of m)" = $'-:1\nmany:1' ]
}

@test "the NDJSON field concurrency_key on the JSON, staged and direct COPY paths, and --key as every line's default" {
	printf '{"type": "small", "concurrency_key": "ks"}\n{"type": "small"}\n' | pd-enqueue --ndjson >/dev/null
	[ "$(keys_of small)" = $'-:1\nks:1' ]
	# 300 lines (over PD_ENQUEUE_COPY_MIN) without idempotency keys: straight into pendulum.jobs
	for i in $(seq 300); do
		printf '{"type": "direct", "concurrency_key": "kd%s"}\n' $((i % 2))
	done | pd-enqueue -v --ndjson >/dev/null 2>"$D/direct.log"
	grep -q 'path=direct' "$D/direct.log"
	[ "$(keys_of direct)" = $'kd0:150\nkd1:150' ]
	# with idempotency keys: through the staging table and pendulum.enqueue_staged
	for i in $(seq 300); do
		printf '{"type": "staged", "idempotency_key": "i%s", "concurrency_key": "kst"}\n' "$i"
	done | pd-enqueue -v --ndjson >/dev/null 2>"$D/staged.log"
	grep -q 'path=staged' "$D/staged.log"
	[ "$(keys_of staged)" = "kst:300" ]
	# --key is the default; a line's own field wins
	printf '{"type": "dflt"}\n{"type": "dflt", "concurrency_key": "own"}\n' |
		pd-enqueue --key flag --ndjson >/dev/null
	[ "$(keys_of dflt)" = $'flag:1\nown:1' ]
	# with TYPE on the command line each line is a payload: --key for all
	printf '{}\n{}\n' | pd-enqueue --key flag2 --ndjson payloads >/dev/null
	[ "$(keys_of payloads)" = "flag2:2" ]
}

@test "bad keys: exit 65, one line naming the key and where, nothing written" {
	run --separate-stderr pd-enqueue --key queue:q t '{}'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: invalid --key 'queue:q': the prefixes queue:, tenant: and type: are reserved (they name the limits of a queue, a tenant and a job type)" ]
	run --separate-stderr pd-enqueue --key '' t '{}'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: invalid --key: must not be empty" ]
	run --separate-stderr pd-enqueue --ndjson <<<$'{"type": "t"}\n{"type": "t", "concurrency_key": "tenant:a"}'
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-enqueue: stdin line 2: key 'concurrency_key': invalid name 'tenant:a': the prefixes queue:, tenant: and type: are reserved"* ]]
	run --separate-stderr pd-enqueue --ndjson <<<'{"type": "t", "concurrency_key": 5}'
	[ "$status" -eq 65 ]
	[ "$stderr" = "pd-enqueue: stdin line 1: key 'concurrency_key': expected a string" ]
	# the SQL paths: SQLSTATE 22023
	run sql "SELECT pendulum.enqueue('default', 't', '{}', concurrency_key => 'type:t')"
	[ "$status" -ne 0 ]
	[[ "$output" == *"invalid concurrency_key 'type:t': the prefixes queue:, tenant: and type: are reserved"* ]]
	run sql "SELECT pendulum.enqueue_many('[{\"type\": \"t\"}, {\"type\": \"t\", \"concurrency_key\": \"\"}]')"
	[ "$status" -ne 0 ]
	[[ "$output" == *"job 2: key 'concurrency_key': must not be empty"* ]]
	run sql "DO \$\$ BEGIN PERFORM pendulum.enqueue('default', 't', '{}', concurrency_key => 'queue:');
	         EXCEPTION WHEN invalid_parameter_value THEN RAISE NOTICE 'sqlstate 22023'; END \$\$"
	[ "$status" -eq 0 ]
	[[ "$output" == *"sqlstate 22023"* ]]
	[ "$(sql "SELECT count(*) FROM pendulum.jobs")" = 0 ]
}

@test "a handler's concurrency_key is the default key of its type's jobs in pd-enqueue; --key and a line's field win" {
	cat >"$D/pendulum.yaml" <<-'EOF'
		handlers:
		  mail:
		    run: cat
		    concurrency_key: smtp
		  other:
		    run: cat
	EOF
	id=$(pd-enqueue -c "$D/pendulum.yaml" mail '{}')
	[ "$(key_of "$id")" = smtp ]
	id=$(pd-enqueue -c "$D/pendulum.yaml" other '{}')
	[ "$(key_of "$id")" = "" ]
	id=$(pd-enqueue -c "$D/pendulum.yaml" --key mine mail '{}')
	[ "$(key_of "$id")" = mine ]
	printf '{"type": "mail"}\n{"type": "mail", "concurrency_key": "line"}\n{"type": "other"}\n' |
		pd-enqueue -c "$D/pendulum.yaml" --ndjson >/dev/null
	[ "$(keys_of mail)" = $'line:1\nmine:1\nsmtp:2' ]
	[ "$(keys_of other)" = "-:2" ]
	# a reserved key in the file: a configuration error
	printf 'handlers:\n  mail:\n    run: cat\n    concurrency_key: "queue:x"\n' >"$D/bad.yaml"
	run --separate-stderr pd-enqueue -c "$D/bad.yaml" mail '{}'
	[ "$status" -eq 78 ]
	[[ "$stderr" == "pd-enqueue: $D/bad.yaml:4:"*"invalid concurrency_key 'queue:x'"* ]]
}

@test "a workflow run's job carries the concurrency_key of the step it is at" {
	export KEY_DB=$PD_DATABASE_URL
	# each step records the key its job has while the step runs
	cat >"$D/rec.sh" <<-EOF
		psql -X -At -d "\$KEY_DB" -c "SELECT coalesce(concurrency_key, '-') FROM pendulum.jobs
		  WHERE id = \$PD_JOB_ID" >>$D/keys
		echo 1
	EOF
	cat >"$D/pendulum.yaml" <<-EOF
		workflows:
		  three:
		    steps:
		      - name: a
		        run: sh $D/rec.sh
		        concurrency_key: ka
		      - name: b
		        run: sh $D/rec.sh
		      - name: c
		        run: sh $D/rec.sh
		        concurrency_key: kc
	EOF
	run_id=$(pd-enqueue -c "$D/pendulum.yaml" --workflow three '{}')
	job=$(sql "SELECT job_id FROM pendulum.workflow_runs WHERE id = $run_id")
	[ "$(key_of "$job")" = ka ]
	start_worker w -c "$D/pendulum.yaml" --lease 2s --poll 200ms
	wait_for 20 sql_is "SELECT state FROM pendulum.jobs WHERE id = $job" SUCCEEDED
	[ "$(cat "$D/keys")" = $'ka\n-\nkc' ]
	# --key does not apply to a run: its steps' keys do
	run --separate-stderr pd-enqueue -c "$D/pendulum.yaml" --key k --workflow three '{}'
	[ "$status" -eq 64 ]
	[[ "$stderr" == "pd-enqueue: --workflow: --key does not apply to a workflow run"* ]]
	# a reserved key on a step: a configuration error; and only run and exec steps take one
	printf 'workflows:\n  w:\n    steps:\n      - name: a\n        run: cat\n        concurrency_key: "type:x"\n' >"$D/bad.yaml"
	run --separate-stderr pd-enqueue -c "$D/bad.yaml" --workflow w '{}'
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"invalid concurrency_key 'type:x'"* ]]
	printf 'workflows:\n  w:\n    steps:\n      - name: a\n        sleep: 1s\n        concurrency_key: k\n' >"$D/bad.yaml"
	run --separate-stderr pd-enqueue -c "$D/bad.yaml" --workflow w '{}'
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"step 'a': 'concurrency_key' is only for run and exec steps"* ]]
}

@test "cron: the crontab annotation key=, the schedules file's concurrency_key and pd-cron add --key reach each occurrence's job" {
	printf '# pd: name=backup key=db-main overlap=allow\n* * * * * true\n# pd: name=plain\n0 4 * * * true\n' >"$D/jobs.crontab"
	run pd-cron apply --crontab "$D/jobs.crontab"
	[ "$status" -eq 0 ]
	[ "$(sql "SELECT coalesce(concurrency_key, '-') FROM pendulum.cron_schedules WHERE name = 'backup'")" = db-main ]
	[ "$(sql "SELECT coalesce(concurrency_key, '-') FROM pendulum.cron_schedules WHERE name = 'plain'")" = - ]
	job=$(pd-cron trigger backup | sed 's/.*job //')
	[ "$(key_of "$job")" = db-main ]
	job=$(pd-cron trigger plain | sed 's/.*job //')
	[ "$(key_of "$job")" = "" ]
	# a changed key is a change apply makes
	sed -i 's/key=db-main/key=db-other/' "$D/jobs.crontab"
	run pd-cron apply --crontab "$D/jobs.crontab"
	[ "$status" -eq 0 ]
	[[ "$output" == *"concurrency_key: 'db-main' -> 'db-other'"* ]]
	# the ticker's occurrences too: due now, as if the last tick was a minute ago
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = date_trunc('minute', now()) - interval '1 minute',
	       next_fire_at = date_trunc('minute', now()) WHERE name = 'backup'"
	pd-cron run --once >/dev/null
	[ "$(sql "SELECT j.concurrency_key FROM pendulum.jobs j JOIN pendulum.cron_fires f ON f.job_id = j.id
	           WHERE f.kind = 'fired'")" = db-other ]
	printf 'schedules:\n  - name: filed\n    cron: "0 5 * * *"\n    timezone: UTC\n    type: t\n    concurrency_key: from-file\n' >"$D/s.yaml"
	pd-cron apply "$D/s.yaml" >/dev/null
	job=$(pd-cron trigger filed | sed 's/.*job //')
	[ "$(key_of "$job")" = from-file ]
	pd-cron add added --cron '0 6 * * *' --tz UTC --type t --key from-add >/dev/null
	job=$(pd-cron trigger added | sed 's/.*job //')
	[ "$(key_of "$job")" = from-add ]
	[ "$(pd-cron list --json | grep "\"name\":\"added\"" | grep -c "\"concurrency_key\":\"from-add\"")" = 1 ]
	# bad keys: 65, naming where
	printf '# pd: name=x key=queue:q\n0 3 * * * true\n' >"$D/bad.crontab"
	run --separate-stderr pd-cron check --crontab "$D/bad.crontab"
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-cron: $D/bad.crontab:1:"*"annotation 'key': invalid key 'queue:q'"* ]]
	run --separate-stderr pd-cron add y --cron '0 6 * * *' --tz UTC --type t --key tenant:z
	[ "$status" -eq 65 ]
	[[ "$stderr" == "pd-cron: invalid concurrency key 'tenant:z'"* ]]
}

@test "a limit of 1 on a key: 5 jobs with --key k and one worker with -j 4 never overlap, and all succeed" {
	sql "SELECT pendulum.limit_concurrency('k', 1)" >/dev/null
	# the handler appends "start" and "end" lines under one lock, sleeping between
	cat >"$D/pendulum.yaml" <<-EOF
		handlers:
		  slow:
		    run: 'flock $D/lock sh -c "echo start >>$D/log"; sleep 0.3; flock $D/lock sh -c "echo end >>$D/log"'
	EOF
	for i in 1 2 3 4 5; do
		pd-enqueue --key k slow '{}' >/dev/null
	done
	start_worker w -c "$D/pendulum.yaml" -j 4 --lease 2s --poll 200ms
	wait_for 30 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 5
	[ "$(grep -c start "$D/log")" -eq 5 ]
	[ "$(grep -c end "$D/log")" -eq 5 ]
	# never two running at once: the lines alternate start, end
	[ "$(awk '{ n += ($1 == "start") ? 1 : -1; if (n > max) max = n } END { print max }' "$D/log")" -eq 1 ]
}
