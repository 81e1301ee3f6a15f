#!/usr/bin/env bats
# The Debian package (make deb-check): scripts/deb builds it from debian/
# with dpkg-buildpackage -us -uc -b, lintian finds no error or warning, it
# holds the programs, pages, units, sysusers file, example configuration,
# migrations and completion; installed into an empty root (dpkg --root,
# maintainer scripts run chrootless with $DPKG_ROOT, as Debian does for
# bootstrapping) it creates the pendulum user and puts the units in place
# without enabling or starting any; purged, it leaves no file and the
# database it migrated as it was. About 30 s, most of it the build.

PD_BIN=${PD_BIN:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build/bin}
load ../helpers
PD_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

PROGS="pd-enqueue pd-worker pd-reaper pd-cron pd-relay pd-admin"

setup_file() {
	pd_setup_db
	DEB_OUT=$BATS_FILE_TMPDIR/deb
	export DEB_OUT
	sh "$PD_ROOT/scripts/deb" "$DEB_OUT" >"$BATS_FILE_TMPDIR/deb.path" 2>"$BATS_FILE_TMPDIR/deb.log" &&
		echo 0 >"$BATS_FILE_TMPDIR/deb.status" || echo $? >"$BATS_FILE_TMPDIR/deb.status"
}

teardown_file() {
	pd_teardown_db
}

# The .deb scripts/deb built.
deb() {
	cat "$BATS_FILE_TMPDIR/deb.path"
}

# An empty root dpkg can install into: $ROOT.
new_root() {
	ROOT=$(mktemp -d "$BATS_TEST_TMPDIR/root.XXXXXX")
	mkdir -p "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates" "$ROOT/etc"
	touch "$ROOT/var/lib/dpkg/status"
}

# dpkg ARGS... on $ROOT; its dependencies (libc, libpq, systemd) are the host's.
root_dpkg() {
	dpkg --root="$ROOT" --force-script-chrootless --force-depends "$@"
}

@test "scripts/deb builds pendulum_VERSION_ARCH.deb, and lintian reports no error and no warning" {
	[ "$(cat "$BATS_FILE_TMPDIR/deb.status")" -eq 0 ] || { tail -30 "$BATS_FILE_TMPDIR/deb.log"; return 1; }
	[ "$(deb)" = "$DEB_OUT/pendulum_$(cat "$PD_ROOT/VERSION")_$(dpkg --print-architecture).deb" ]
	[ -f "$(deb)" ]
	run lintian "$DEB_OUT"/pendulum_*.changes
	[ "$status" -eq 0 ]
	[[ "$output" != *"E: "* ]]
	[[ "$output" != *"W: "* ]]
	# the build used a copy: the tree's own builds are untouched
	[ ! -e "$PD_ROOT/debian/build" ]
	[ ! -e "$PD_ROOT/debian/pendulum" ]
}

@test "dpkg -c lists the programs, man pages, units, sysusers, example, migrations, completion" {
	run dpkg -c "$(deb)"
	[ "$status" -eq 0 ]
	for p in $PROGS; do
		[[ "$output" == *" ./usr/bin/$p"$'\n'* ]] || { echo "no $p"; return 1; }
		[[ "$output" == *" ./usr/share/man/man1/$p.1.gz"$'\n'* ]] || { echo "no $p(1)"; return 1; }
		[[ "$output" == *" ./usr/share/bash-completion/completions/$p -> pendulum"* ]] || { echo "no completion of $p"; return 1; }
	done
	for u in "$PD_ROOT"/systemd/*.service "$PD_ROOT"/systemd/*.timer; do
		[[ "$output" == *"/systemd/system/${u##*/}"$'\n'* ]] || { echo "no ${u##*/}"; return 1; }
	done
	for m in "$PD_ROOT"/sql/[0-9]*.sql; do
		[[ "$output" == *" ./usr/share/pendulum/sql/${m##*/}"$'\n'* ]] || { echo "no ${m##*/}"; return 1; }
	done
	[[ "$output" == *" ./usr/share/man/man5/pendulum.yaml.5.gz"$'\n'* ]]
	[[ "$output" == *" ./usr/share/man/man7/pendulum.7.gz"$'\n'* ]]
	[[ "$output" == *" ./usr/lib/sysusers.d/pendulum.conf"$'\n'* ]]
	[[ "$output" == *" ./etc/pendulum/pendulum.yaml.example"$'\n'* ]]
	[[ "$output" == *" ./usr/share/bash-completion/completions/pendulum"$'\n'* ]]
	# the units run the packaged programs
	dpkg-deb --fsys-tarfile "$(deb)" | tar -xOf - ./lib/systemd/system/pd-worker@.service ./usr/lib/systemd/system/pd-worker@.service 2>/dev/null |
		grep -qx 'ExecStart=/usr/bin/pd-worker -c /etc/pendulum/%i.yaml'
}

@test "installed into an empty root: the pendulum user, the units in place, none enabled or started" {
	new_root
	local host_passwd
	host_passwd=$(md5sum </etc/passwd)
	run root_dpkg -i "$(deb)"
	[ "$status" -eq 0 ]
	grep -q '^pendulum:x:[0-9]*:[0-9]*:Pendulum job engine:/var/lib/pendulum:' "$ROOT/etc/passwd"
	grep -q '^pendulum:' "$ROOT/etc/group"
	# the user went into the root, not the host
	[ "$(md5sum </etc/passwd)" = "$host_passwd" ]
	unitdir=$(pkg-config --variable=systemdsystemunitdir systemd)
	for u in pd-worker@.service pd-relay@.service pd-reaper.service pd-cron.service pendulum-metrics.timer; do
		[ -f "$ROOT$unitdir/$u" ] || { echo "no $u"; return 1; }
	done
	[ -x "$ROOT/usr/bin/pd-worker" ]
	[ -f "$ROOT/etc/pendulum/pendulum.yaml.example" ]
	# nothing enabled: no .wants links, in the root or its /lib
	[ -z "$(find "$ROOT" -path '*.wants*' -print)" ]
	# nothing started, nor stopped on an upgrade: no maintainer script
	# starts, stops or restarts a unit
	dpkg-deb -e "$(deb)" "$BATS_TEST_TMPDIR/control"
	[ -f "$BATS_TEST_TMPDIR/control/postinst" ]
	run grep -E 'deb-systemd-invoke|systemctl.*(start|stop)' "$BATS_TEST_TMPDIR"/control/*
	[ "$status" -eq 1 ]
	# the installed programs run, and their completion is found under their names
	run "$ROOT/usr/bin/pd-admin" --version
	[ "$status" -eq 0 ]
	[ "$output" = "pd-admin (Pendulum) $(cat "$PD_ROOT/VERSION")" ]
	run bash -c ". '$ROOT/usr/share/bash-completion/completions/pd-admin' && complete -p pd-admin"
	[ "$output" = "complete -F _pendulum pd-admin" ]
	# installed again (dpkg's upgrade path): one user still, nothing enabled
	run root_dpkg -i "$(deb)"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^pendulum:' "$ROOT/etc/passwd")" -eq 1 ]
	[ -z "$(find "$ROOT" -path '*.wants*' -print)" ]
}

@test "purged, it leaves no file of its own behind, and the database it migrated as it was" {
	new_root
	run root_dpkg -i "$(deb)"
	[ "$status" -eq 0 ]
	run "$ROOT/usr/bin/pd-admin" migrate
	[ "$status" -eq 0 ]
	before=$(sql "SELECT count(*), max(version) FROM pendulum.schema_migrations")
	[ -n "$before" ]
	run "$ROOT/usr/bin/pd-enqueue" kept '{}'
	[ "$status" -eq 0 ]
	jobs=$(sql "SELECT count(*), max(id) FROM pendulum.jobs")
	run root_dpkg -P pendulum
	[ "$status" -eq 0 ]
	# what is left: dpkg's own records, the user database (the user stays:
	# files it owns may outlive the package) and empty directories
	left=$(cd "$ROOT" && find . -type f -o -type l | grep -vE '^\./var/lib/dpkg/|^\./etc/(passwd|group|shadow|gshadow|\.pwd\.lock)-?$' || true)
	[ -z "$left" ] || { echo "left: $left"; return 1; }
	[ ! -e "$ROOT/etc/pendulum" ]
	[ "$(sql "SELECT count(*), max(version) FROM pendulum.schema_migrations")" = "$before" ]
	[ "$(sql "SELECT count(*), max(id) FROM pendulum.jobs")" = "$jobs" ]
}
