#!/usr/bin/env bats
# The ticker role is held like a lease (lib/elect, pendulum.leaders): a
# frozen (SIGSTOPped) leader loses it, a standby takes it within about the
# lease and fires the schedules; the old leader, woken, does not act as
# leader; each occurrence is still one job.
#
# A minute's occurrence is made due by moving the schedule's progress to the
# current whole minute (as tests/cron.bats does), never by sleeping.

load helpers
pd_db_hooks

setup() {
	reset_jobs
	sql "TRUNCATE pendulum.cron_schedules CASCADE"
	sql "TRUNCATE pendulum.leaders"
}

# holder_pid: the pid in the ticker role's holder ("host:pid:xxxx"), if held.
holder_pid() {
	sql "SELECT split_part(holder, ':', 2) FROM pendulum.leaders
	     WHERE role = 'ticker' AND expires_at > now()"
}

# two_tickers: t1 leads, t2 stands by, both with a 2 s lease.
two_tickers() {
	start_bg t1 pd-cron run --lease 2s
	wait_for 10 grep -q 'msg="ticker active' "$BATS_FILE_TMPDIR/t1.log"
	start_bg t2 pd-cron run --lease 2s
	wait_for 10 grep -q 'msg="ticker on standby' "$BATS_FILE_TMPDIR/t2.log"
	[ "$(holder_pid)" = "$(bg_pid t1)" ]
}

@test "a SIGSTOPped leader loses the role within about the lease; woken, it stands by and does not tick" {
	two_tickers
	kill -STOP "$(bg_pid t1)"
	# t1's lease as it left it (a renewal in flight at the stop lands within the lease)
	expired=$(sql "SELECT expires_at FROM pendulum.leaders WHERE role = 'ticker'")
	wait_for 30 sql_is "SELECT split_part(holder, ':', 2) FROM pendulum.leaders
	                    WHERE role = 'ticker'" "$(bg_pid t2)"
	# when t2 took it, on the database's clock: its lease's end less the lease
	took=$(sql "SELECT (extract(epoch FROM expires_at - interval '2 s' - '$expired'::timestamptz) * 1000)::int
	            FROM pendulum.leaders WHERE role = 'ticker'")
	echo "taken ${took} ms after t1's lease ended (or renewed since)" >&3
	# the standby's turn comes every third of the lease (667 ms); a renewal
	# since it took the role moves this later: 10 s is slack for a loaded
	# machine, and far below a standby that waited for anything but its turn
	[ "$took" -lt 10000 ]
	grep -q 'msg="ticker active' "$BATS_FILE_TMPDIR/t2.log"
	kill -CONT "$(bg_pid t1)"
	wait_for 10 grep -q 'msg="ticker role lost' "$BATS_FILE_TMPDIR/t1.log"
	[ "$(holder_pid)" = "$(bg_pid t2)" ]
	# t2 frozen in turn: t1 fires nothing while t2's lease lasts, then takes over
	kill -STOP "$(bg_pid t2)"
	expires=$(sql "SELECT expires_at FROM pendulum.leaders WHERE role = 'ticker'")
	pd-cron add every --cron '* * * * *' --tz UTC --type t >/dev/null
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = date_trunc('minute', now()) - interval '1 minute',
	     next_fire_at = date_trunc('minute', now())" >/dev/null
	wait_for 10 sql_is "SELECT count(*) > 0 FROM pendulum.jobs" t
	[ "$(sql "SELECT bool_and(created_at >= '$expires') FROM pendulum.jobs")" = t ]
	[ "$(holder_pid)" = "$(bg_pid t1)" ]
	kill -CONT "$(bg_pid t2)"
	wait_for 10 grep -q 'msg="ticker role lost' "$BATS_FILE_TMPDIR/t2.log"
	# a clean stop resigns: the standby takes over at once, not a lease later
	stop_bg t1
	[ "$(bg_status t1)" -eq 0 ]
	grep -q 'msg="ticker role released"' "$BATS_FILE_TMPDIR/t1.log"
	wait_for 30 sql_is "SELECT split_part(holder, ':', 2) FROM pendulum.leaders
	                   WHERE role = 'ticker' AND expires_at > now()" "$(bg_pid t2)"
}

@test "two tickers, the leader SIGSTOPped: a * * * * * schedule fires its minute, once" {
	# FIRE_ALL: a takeover that comes after the next minute has begun fires
	# this minute too (FIRE_ONCE would fire only the newest: one CI run)
	pd-cron add every --cron '* * * * *' --tz UTC --type t --misfire FIRE_ALL >/dev/null
	two_tickers
	kill -STOP "$(bg_pid t1)"
	# the current minute's occurrence is due now; the minute before fired
	minute=$(sql "SELECT date_trunc('minute', now())")
	sql "UPDATE pendulum.cron_schedules SET last_fired_at = '$minute'::timestamptz - interval '1 minute',
	     next_fire_at = '$minute'" >/dev/null
	wait_for 15 sql_is "SELECT count(*) FROM pendulum.jobs WHERE run_at = '$minute'" 1
	wait_for 10 grep -q 'msg="schedule fired"' "$BATS_FILE_TMPDIR/t2.log"
	kill -CONT "$(bg_pid t1)"
	wait_for 10 grep -q 'msg="ticker role lost' "$BATS_FILE_TMPDIR/t1.log"
	# the old leader, woken, fired nothing: one job, one fire record, for that minute
	[ "$(sql "SELECT count(*) FROM pendulum.jobs WHERE run_at = '$minute'")" -eq 1 ]
	[ "$(sql "SELECT count(*) FROM pendulum.cron_fires WHERE fire_at = '$minute'")" -eq 1 ]
	run grep -c 'msg="schedule fired"' "$BATS_FILE_TMPDIR/t1.log"
	[ "$output" = 0 ]
}

@test "pd-cron run --lease must be positive" {
	run --separate-stderr pd-cron run --lease 0s
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"option --lease: must be positive"* ]]
}
