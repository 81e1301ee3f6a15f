#!/usr/bin/env bats
# Jobs nobody serves and workers that are gone (sql/013): pd-admin queues,
# jobs and metrics name the PENDING job types that no live worker serves; a
# worker killed with SIGKILL is gone once its lease has passed (its slots no
# longer busy anywhere), and the reaper removes its row retention.workers_gone
# later, so that pendulum_workers_stale goes back to 0 by itself.

# run sets $stderr.
# shellcheck disable=SC2154

load helpers
pd_db_hooks

setup() {
	reset_jobs
	CFG=$BATS_TEST_TMPDIR/pendulum.yaml
}

# metric NAME: its value in pd-admin metrics (empty when there is no such series).
metric() {
	pd-admin metrics | awk -v n="$1" '$1 == n { print $2 }'
}

# live N: pendulum.live_workers has N rows.
live() {
	sql_is "SELECT count(*) FROM pendulum.live_workers" "$1"
}

@test "a type no live worker serves: queues --json names it, jobs marks it, the metric has the series" {
	start_worker w --handler 'billing=sleep 30' --poll 200ms
	wait_for 30 live 1
	pd-enqueue biling '{}' >/dev/null
	pd-enqueue biling '{}' >/dev/null
	pd-enqueue --queue other x '{}' >/dev/null
	run --separate-stderr pd-admin --json queues
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e -s 'map(select(.queue == "default"))[0].unserved == ["biling"]'
	printf '%s\n' "$output" | jq -e -s 'map(select(.queue == "default"))[0].workers == 1'
	printf '%s\n' "$output" | jq -e -s 'map(select(.queue == "other"))[0].unserved == ["x"]'
	printf '%s\n' "$output" | jq -e -s 'map(select(.queue == "other"))[0].workers == 0'
	run --separate-stderr pd-admin queues
	printf '%s\n' "$output" | grep -E '^default .* 1 +no +biling$'
	run --separate-stderr pd-admin jobs --type biling
	printf '%s\n' "${lines[1]}" | grep -E 'PENDING .* no live worker serves type biling in queue default$'
	run --separate-stderr pd-admin --json jobs --type biling
	printf '%s\n' "$output" | jq -e -s 'length == 2 and all(.unserved == true)'
	run --separate-stderr pd-admin metrics
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | grep -Fx 'pendulum_jobs_unserved{queue="default",job_type="biling"} 2'
	printf '%s\n' "$output" | grep -Fx 'pendulum_jobs_unserved{queue="other",job_type="x"} 1'
	printf '%s\n' "$output" | grep -Fx '# TYPE pendulum_jobs_unserved gauge'
	[ "$(printf '%s\n' "$output" | grep -c '^pendulum_jobs_unserved{')" -eq 2 ]
}

@test "served types are not named: a handler for the type, a '*' handler, a workflow's job type" {
	cat >"$CFG" <<EOF
workflows:
  orders:
    steps:
      - name: a
        run: 'cat'
EOF
	start_worker w1 --handler 'billing=sleep 30' --queue default --queue other --poll 200ms
	start_worker w2 -c "$CFG" --queue flows --handler 'none=true' --poll 200ms
	start_worker w3 --queue any --handler '*=sleep 30' --poll 200ms
	wait_for 30 live 3
	pd-enqueue --delay 1h billing '{}' >/dev/null
	pd-enqueue --delay 1h --queue any whatever '{}' >/dev/null
	pd-enqueue --delay 1h -c "$CFG" --queue flows --workflow orders '{}' >/dev/null
	pd-enqueue --delay 1h --queue other --workflow orders '{}' >/dev/null
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE state = 'PENDING'")" = 4 ]
	run --separate-stderr pd-admin --json queues
	printf '%s\n' "$output" | jq -e -s 'map(select(.queue != "other")) | all(.unserved == [])'
	printf '%s\n' "$output" | jq -e -s 'map(select(.queue == "other"))[0].unserved == ["workflow:orders"]'
	[ "$(sql "SELECT string_agg(queue || '/' || job_type, ' ') FROM pendulum.unserved")" = "other/workflow:orders" ]
	# a worker that goes away takes its types with it
	stop_worker w3
	run --separate-stderr pd-admin metrics
	printf '%s\n' "$output" | grep -Fx 'pendulum_jobs_unserved{queue="any",job_type="whatever"} 1'
}

@test "a worker killed with SIGKILL: gone within its lease, no busy slots, its row pruned, stale back to 0" {
	cat >"$CFG" <<EOF
retention:
  workers_gone: 1s
EOF
	start_worker w -c "$CFG" --concurrency 2 --lease 2s --heartbeat 200ms --handler 't=sleep 60' --poll 200ms
	pd-enqueue t '{}' >/dev/null
	wait_for 30 eval '[ "$(pd-admin --json workers | jq .in_flight)" = 1 ]'
	[ "$(sql "SELECT lease_ms FROM pendulum.workers")" = 2000 ]
	run --separate-stderr pd-admin workers
	printf '%s\n' "${lines[1]}" | grep -E " $(bg_pid w) +default +1/2 .* live$"
	[ "$(metric pendulum_worker_in_flight)" = 1 ]
	kill -KILL "$(bg_pid w)"
	# no statement of the dead worker's left to run (a heartbeat would renew last_seen_at)
	wait_for 30 sql_is "SELECT count(*) FROM pg_stat_activity
	                    WHERE datname = current_database() AND application_name = 'pd-worker'" 0
	# last seen 10 s ago: gone, since its lease (2 s) is the window, not the old 60 s
	sql "UPDATE pendulum.workers SET last_seen_at = now() - interval '10 s'"
	pd-admin --json workers | jq -e '.gone'
	run --separate-stderr pd-admin workers
	printf '%s\n' "${lines[1]}" | grep -E " $(bg_pid w) +default +-/2 .* gone$"
	run --separate-stderr pd-admin --json workers
	printf '%s\n' "$output" | jq -e '.in_flight == 0 and .stale == true'
	[ "$(metric pendulum_worker_in_flight)" = 0 ]
	[ "$(metric pendulum_worker_concurrency)" = 0 ]
	[ "$(metric pendulum_workers)" = 0 ]
	[ "$(metric pendulum_workers_stale)" = 1 ]
	run --separate-stderr pd-admin top
	[[ "$output" == *"0 live, 1 gone; 0 of 0 slots busy"* ]]
	# the reaper removes the row workers_gone (1 s) after the worker went
	wait_for 20 eval 'pd-reaper -c "$CFG" --once && sql_is "SELECT count(*) FROM pendulum.workers" 0'
	[ "$(metric pendulum_workers_stale)" = 0 ]
	run --separate-stderr pd-admin workers
	[ "${#lines[@]}" -eq 1 ]
}

@test "workers_gone counts from when a worker went, not from when it was last seen" {
	# seen 50 s ago with a 60 s lease: live; a 10 s workers_gone must not remove it
	sql "INSERT INTO pendulum.workers (id, host, pid, queues, job_types, concurrency, lease_ms, last_seen_at)
	     VALUES ('live', 'h', 1, '{default}', '{t}', 1, 60000, now() - interval '50 s'),
	            ('gone', 'h', 2, '{default}', '{t}', 1, 10000, now() - interval '30 s'),
	            ('just', 'h', 3, '{default}', '{t}', 1, 25000, now() - interval '30 s')"
	[ "$(sql "SELECT pendulum.prune_count('workers_gone', 10000)")" = 1 ]
	[ "$(sql "SELECT pendulum.prune('workers_gone', 10000, 100)")" = 1 ]
	[ "$(sql "SELECT string_agg(id, ' ' ORDER BY id) FROM pendulum.workers")" = "just live" ]
	[ "$(sql "SELECT string_agg(id, ' ' ORDER BY id) FROM pendulum.live_workers")" = "live" ]
}
