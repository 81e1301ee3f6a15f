#!/usr/bin/env bats
# pd-admin lease check: a handler asks whether it still holds its lease.

load helpers
pd_db_hooks

# every test on empty job tables, so that each passes run alone
setup() {
	reset_jobs
}

@test "inside a handler, lease check exits 0 while the lease is held" {
	id=$(pd-enqueue lc '{}')
	pd-worker --until-idle --poll 200ms --handler 'lc=pd-admin lease check; echo "{\"rc\": $?}"' 2>/dev/null
	[ "$(sql "SELECT state || ' ' || result::text FROM pendulum.jobs WHERE id = $id")" = 'SUCCEEDED {"rc": 0}' ]
}

@test "with a token that no longer holds the lease, lease check exits 1" {
	id=$(pd-enqueue lc2 '{}')
	# a finished job holds no lease under any token
	pd-worker --until-idle --poll 200ms --handler 'lc2=true' 2>/dev/null
	token=$(sql "SELECT lease_token FROM pendulum.jobs WHERE id = $id")
	run --separate-stderr env PD_JOB_ID="$id" PD_LEASE_TOKEN="$token" pd-admin lease check
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"lease lost: job $id"* ]]
	# a live lease under another token is not ours either
	sql "UPDATE pendulum.jobs SET state = 'RUNNING', lease_token = $token + 1000,
	     lease_expires_at = now() + interval '1 hour' WHERE id = $id"
	run --separate-stderr env PD_JOB_ID="$id" PD_LEASE_TOKEN="$token" pd-admin lease check
	[ "$status" -eq 1 ]
	run --separate-stderr env PD_JOB_ID="$id" PD_LEASE_TOKEN="$((token + 1000))" pd-admin lease check
	[ "$status" -eq 0 ]
	# an expired lease is lost even before the reaper runs
	sql "UPDATE pendulum.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $id"
	run --separate-stderr env PD_JOB_ID="$id" PD_LEASE_TOKEN="$((token + 1000))" pd-admin lease check
	[ "$status" -eq 1 ]
}

@test "outside a handler, lease check is a usage error" {
	run --separate-stderr env -u PD_JOB_ID -u PD_LEASE_TOKEN pd-admin lease check
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"PD_JOB_ID and PD_LEASE_TOKEN are not set"* ]]
	run --separate-stderr env PD_JOB_ID=x PD_LEASE_TOKEN=1 pd-admin lease check
	[ "$status" -eq 64 ]
}
