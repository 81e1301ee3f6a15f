#!/usr/bin/env bats
# The systemd units are hardened: `systemd-analyze security --offline=true`
# scores each at most 5.0 (issue 22; 8.7 "exposed" before), and every unit
# that runs handlers keeps what handlers need (network, /proc of its own
# processes) while dropping capabilities and privileged system calls.

load helpers

setup() {
	command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
	UNITS=$(mktemp -d "${BATS_TMPDIR:-/tmp}/pd-units.XXXXXX")
	for u in "$PD_ROOT"/systemd/*.service; do
		sed "s|@BINDIR@|/usr/bin|g" "$u" >"$UNITS/${u##*/}"
	done
}

teardown() {
	[ -z "${UNITS:-}" ] || rm -rf "$UNITS"
}

# The overall exposure systemd-analyze gives the unit file $1, times ten (an
# integer: 8.7 -> 87).
exposure() {
	(cd "$UNITS" && systemd-analyze security --offline=true "$1" 2>/dev/null) |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9]*\)\.\([0-9]\).*/\1\2/p'
}

@test "every service unit scores at most 5.0 in systemd-analyze security" {
	local n=0 u score
	for u in "$UNITS"/*.service; do
		score=$(exposure "${u##*/}")
		echo "${u##*/}: $score" >&2
		[ -n "$score" ]
		[ "$score" -le 50 ]
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "units that run handlers keep the network and drop every capability" {
	local u
	for u in pd-worker@.service pd-relay@.service; do
		grep -qx 'CapabilityBoundingSet=' "$UNITS/$u"
		grep -qx 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK' "$UNITS/$u"
		grep -qx 'SystemCallArchitectures=native' "$UNITS/$u"
		run grep -x 'PrivateNetwork=yes' "$UNITS/$u"
		[ "$status" -ne 0 ]
	done
}
