#!/usr/bin/env bats
# SIGHUP reloads the config file (lib/reload) in pd-worker, pd-relay,
# pd-reaper and pd-cron: new handlers, topics and intervals apply to the
# work taken after it, what runs goes on as it was, and a file that does not
# parse is logged (file:line:column) and the old config kept. An older
# binary refuses a newer schema: exit 78, both versions named.

load helpers
pd_db_hooks

setup() {
	reset_jobs
	reset_outbox
	T=$BATS_TEST_TMPDIR
	CFG=$T/pendulum.yaml
}

# put FILE: stdin into FILE, atomically (what an editor or config manager does).
put() {
	cat >"$1.tmp"
	mv "$1.tmp" "$1"
}

# handler NAME: a handler script that appends "NAME $PD_JOB_ID" to $T/ran,
# then waits for $T/gate when NAME starts with "slow"; prints its path.
handler() {
	local f=$T/$1.sh
	# shellcheck disable=SC2016 # expanded by the handler's shell
	printf 'echo "%s $PD_JOB_ID" >>"%s/ran"\ncase %s in slow*) while [ ! -e "%s/gate" ]; do sleep 0.05; done;; esac\n' \
		"$1" "$T" "$1" "$T" >"$f"
	echo "$f"
}

# pub NAME: a publish script that appends "$PD_MESSAGE_ID" to $T/NAME; prints its path.
pub() {
	# shellcheck disable=SC2016 # expanded by the publish command's shell
	printf 'echo "$PD_MESSAGE_ID" >>"%s/%s"\n' "$T" "$1" >"$T/pub-$1.sh"
	echo "$T/pub-$1.sh"
}

# ran LINE: $T/ran holds exactly LINE.
ran() {
	grep -qx -- "$1" "$T/ran"
}

logged() {
	grep -qF -- "$2" "$BATS_FILE_TMPDIR/$1.log"
}

# hup NAME: SIGHUP to it, then wait for its answer (reloaded or not).
hup() {
	local before
	before=$(grep -c 'reloaded' "$BATS_FILE_TMPDIR/$1.log" || true)
	kill -HUP "$(bg_pid "$1")"
	wait_for 10 reload_logged "$1" "$((before + 1))"
}

reload_logged() {
	[ "$(grep -c 'reloaded' "$BATS_FILE_TMPDIR/$1.log")" -ge "$2" ]
}

# known_version: the newest migration this tree has.
known_version() {
	find "$PD_ROOT/sql" -name '[0-9]*.sql' | sort | sed -n '$s#.*/0*\([0-9][0-9]*\)_[^/]*$#\1#p'
}

@test "worker: a handler added on SIGHUP runs without a restart; a job started before finishes on its old handler" {
	put "$CFG" <<-EOF
		handlers:
		  slow: {run: sh $(handler slow-old)}
	EOF
	start_worker w -c "$CFG" --poll 100ms
	wait_for 10 logged w 'msg="worker started"'
	old=$(pd-enqueue slow '{}')
	wait_for 10 ran "slow-old $old"
	put "$CFG" <<-EOF
		handlers:
		  slow: {run: sh $(handler slow-new)}
		  fresh: {run: sh $(handler fresh)}
	EOF
	hup w
	logged w 'msg="config reloaded" daemon=worker'
	logged w 'handlers=2 workflows=0'
	fresh=$(pd-enqueue fresh '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $fresh" SUCCEEDED
	ran "fresh $fresh"
	[ "$(job_state "$old")" = RUNNING ]
	touch "$T/gate"
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $old" SUCCEEDED
	ran "slow-old $old"
	run ! grep -q "slow-new $old" "$T/ran"
	again=$(pd-enqueue slow '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $again" SUCCEEDED
	ran "slow-new $again"
	sql_is "SELECT job_types::text FROM pendulum.workers WHERE pid = $(bg_pid w)" '{slow,fresh}'
	alive "$(bg_pid w)"
}

@test "worker: a broken config on SIGHUP is logged with file:line:col and the old one kept" {
	put "$CFG" <<-EOF
		handlers:
		  t: {run: sh $(handler t)}
	EOF
	start_worker w -c "$CFG" --poll 100ms
	wait_for 10 logged w 'msg="worker started"'
	printf 'handlers:\n  t:\n    rum: true\n' | put "$CFG"
	hup w
	logged w 'msg="config not reloaded: keeping the old one" daemon=worker'
	logged w "$CFG:3:5: unknown key 'rum'"
	alive "$(bg_pid w)"
	id=$(pd-enqueue t '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" SUCCEEDED
	ran "t $id"
}

@test "worker: flags still override the reloaded file; a changed concurrency is a warning" {
	put "$CFG" <<-EOF
		handlers:
		  t: {run: sh $(handler file-t)}
	EOF
	start_worker w -c "$CFG" --poll 100ms -j 2 --handler "t=sh $(handler flag-t)"
	wait_for 10 logged w 'msg="worker started"'
	put "$CFG" <<-EOF
		worker: {concurrency: 8}
		handlers:
		  t: {run: sh $(handler file-t2)}
		  u: {run: sh $(handler file-u)}
	EOF
	hup w
	logged w 'msg="config reloaded" daemon=worker'
	run ! logged w 'concurrency not reloaded'
	t=$(pd-enqueue t '{}')
	u=$(pd-enqueue u '{}')
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.jobs WHERE state = 'SUCCEEDED'" 2
	ran "flag-t $t"
	ran "file-u $u"
	stop_worker w
	start_worker w2 -c "$CFG" --poll 100ms
	wait_for 10 logged w2 'msg="worker started"'
	echo 'handlers: {t: {run: "true"}}' | put "$CFG"
	hup w2
	logged w2 'msg="concurrency not reloaded: it needs a restart"'
	logged w2 'running=8 file=4'
}

@test "worker: a stream handler whose command changed serves new jobs from a new process" {
	printf '#!/bin/sh\nwhile read -r l; do id=${l#*\\"id\\":}; id=${id%%%%,*}; echo "%s $id" >>"%s/ran"; echo "{\\"id\\":$id}"; done\n' \
		one "$T" >"$T/s1.sh"
	sed 's/"one /"two /' "$T/s1.sh" >"$T/s2.sh"
	echo "handlers: {s: {run: sh $T/s1.sh, mode: stream}}" | put "$CFG"
	start_worker w -c "$CFG" --poll 100ms
	a=$(pd-enqueue s '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $a" SUCCEEDED
	ran "one $a"
	echo "handlers: {s: {run: sh $T/s2.sh, mode: stream}}" | put "$CFG"
	hup w
	b=$(pd-enqueue s '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $b" SUCCEEDED
	ran "two $b"
	run ! grep -q "one $b" "$T/ran"
}

@test "relay: a topic added on SIGHUP is published without a restart; a broken file keeps the old topics" {
	printf 'relay:\n  poll: 100ms\n  topics:\n    a: {run: sh %s}\n' "$(pub a)" | put "$CFG"
	start_relay r -c "$CFG"
	wait_for 10 logged r 'msg="relay started"'
	b=$(record b '{}')
	printf 'relay:\n  poll: 100ms\n  topics:\n    a: {run: sh %s}\n    b: {run: sh %s}\n' \
		"$(pub a)" "$(pub b)" | put "$CFG"
	hup r
	logged r 'msg="config reloaded" daemon=relay'
	logged r 'commands=2 topics=2'
	wait_for 10 sql_is "SELECT state FROM pendulum.outbox WHERE id = $b" PUBLISHED
	lines_at_least "$T/b" 1
	printf 'relay:\n  topics: [\n' | put "$CFG"
	hup r
	logged r 'msg="config not reloaded: keeping the old one" daemon=relay'
	logged r "$CFG:3:1"
	# the old topics, both of them, still publish with their old commands
	a=$(record a '{}')
	b2=$(record b '{}')
	wait_for 10 sql_is "SELECT state FROM pendulum.outbox WHERE id = $a" PUBLISHED
	wait_for 10 sql_is "SELECT state FROM pendulum.outbox WHERE id = $b2" PUBLISHED
	grep -qx "$a" "$T/a"
	grep -qx "$b2" "$T/b"
	alive "$(bg_pid r)"
}

@test "reaper and cron: SIGHUP with a good file reloads (the reaper's interval too), with a bad one keeps the old" {
	echo 'reaper: {interval: 1h}' | put "$CFG"
	start_bg reaper pd-reaper -c "$CFG"
	start_bg ticker pd-cron -c "$CFG" run --interval 1h
	wait_for 10 logged reaper 'msg="reaper started"'
	wait_for 10 logged ticker 'msg="ticker started"'
	id=$(expired_lease)
	printf 'log_level: info\nreaper: {interval: 100ms}\nhooks: {on_dead_letter: {run: "true"}}\n' | put "$CFG"
	hup reaper
	hup ticker
	logged reaper 'msg="config reloaded" daemon=reaper'
	logged reaper 'interval_ms=100'
	logged ticker 'msg="config reloaded" daemon=ticker'
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id" PENDING
	printf 'reaper:\n  interval: soon\n' | put "$CFG"
	hup reaper
	hup ticker
	logged reaper 'msg="config not reloaded: keeping the old one" daemon=reaper'
	logged reaper "$CFG:2:13"
	logged ticker 'msg="config not reloaded: keeping the old one" daemon=ticker'
	logged ticker "$CFG:2:13"
	# the old file's 100 ms still rules the reaper (not the first file's 1 h)
	id2=$(expired_lease)
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id2" PENDING
	# the old file as a whole, not the defaults: a lease that expired on the
	# last attempt is dead-lettered with the old file's on_dead_letter hook
	id3=$(expired_lease --max-attempts 1)
	wait_for 10 sql_is "SELECT state FROM pendulum.jobs WHERE id = $id3" DEAD_LETTERED
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'pd:hook' AND payload->>'id' = '$id3'" 1
	# and the ticker still fires the schedules (from the database) when due
	pd-cron add every --cron '* * * * *' --tz UTC --type fired >/dev/null
	wait_for 25 utc_second_below 40
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = date_trunc('minute', now()) - interval '1 minute',
	       next_fire_at = date_trunc('minute', now()) WHERE name = 'every'"
	wait_for 10 sql_is "SELECT count(*) FROM pendulum.cron_fires WHERE kind = 'fired'" 1
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE job_type = 'fired'")" -eq 1 ]
	alive "$(bg_pid reaper)"
	alive "$(bg_pid ticker)"
	stop_bg reaper TERM 5
	[ "$(bg_status reaper)" -eq 0 ]
	stop_bg ticker TERM 5
	[ "$(bg_status ticker)" -eq 0 ]
}

@test "an older binary against a newer schema exits 78 naming both versions; pd-admin migrate refuses it too" {
	known=$(known_version)
	newer=$((known + 2))
	sql "INSERT INTO pendulum.schema_migrations (version, name) VALUES ($newer, 'from_the_future')"
	run -78 pd-worker --handler t=true --until-idle
	[[ "$output" == *"database schema is at version $newer, newer than this pd-worker knows ($known): upgrade the binaries"* ]]
	run -78 pd-enqueue t '{}'
	[[ "$output" == *"database schema is at version $newer, newer than this pd-enqueue knows ($known)"* ]]
	run -78 pd-admin migrate
	[[ "$output" == *"newer than this pd-admin knows ($known)"* ]]
	sql "DELETE FROM pendulum.schema_migrations WHERE version = $newer"
	run -0 pd-enqueue t '{}'
}
