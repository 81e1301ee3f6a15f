#!/usr/bin/env bats
# README.md's "Running it in production", run as written (issue 27): the
# blocks of "### Install", "### Database roles" and "### Units" are read
# from README.md itself, in order, so that they cannot drift from what runs.
#
# They run in a root of their own, $ROOT, the way a package stages a tree:
# - `make install PREFIX=/usr` copies into DESTDIR=$ROOT (with the build of
#   PD_BIN: B= its directory, and the ASan flags for build-asan);
# - every /etc/pendulum path of a block is $ROOT/etc/pendulum, and $ROOT's
#   /usr/bin comes first on PATH: the blocks run the installed binaries;
# - `sudo CMD` runs CMD as this user; systemd-sysusers gets --root=$ROOT
#   (the pendulum user lands in $ROOT/etc/passwd); `install -o NAME` takes
#   NAME's uid from there (and drops -o when not root);
# - `systemctl enable --now UNIT...` starts each service the way systemd
#   would: the installed unit's EnvironmentFile= (%i the instance, `-` for
#   optional) and ExecStart=, with a clean environment; timers are skipped;
# - the URL postgresql://ROLE@db/pendulum is this file's database as ROLE
#   ("owner" is the cluster's superuser), and the login roles app_acme,
#   pd_worker and ops are suffixed with the database's name (roles are
#   cluster-wide; they are dropped at the end).
# The blocks run with no PD_DATABASE_URL or PG* variable in their environment.
# An sql block runs in psql as the owner; a console block's `$ ` lines run
# and each must print the lines shown under it.

load helpers

setup_file() {
	pd_setup_db
	PD_B=$(cd "$PD_BIN/.." && pwd)
	R_APP="app_acme_$PD_DB_NAME"
	R_WRK="pd_worker_$PD_DB_NAME"
	R_OPS="ops_$PD_DB_NAME"
	export PD_B R_APP R_WRK R_OPS
	drop_roles
}

drop_roles() {
	local r
	for r in "$R_APP" "$R_WRK" "$R_OPS"; do
		psql -X -q -d "$PD_PG_URL" -c "DROP OWNED BY $r; DROP ROLE $r" >/dev/null 2>&1 || true
	done
}

teardown_file() {
	kill_all_bg
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE IF EXISTS $PD_DB_NAME WITH (FORCE)" || true
	drop_roles
	pd_teardown_db
}

setup() {
	ROOT=$(mktemp -d "${BATS_TMPDIR:-/tmp}/pd-root.XXXXXX")
}

teardown() {
	kill_all_bg
	[ -z "${ROOT:-}" ] || rm -rf "$ROOT"
}

# blocks SECTION: the fenced blocks of README.md's "### SECTION", each as a
# line "@@ INFO" (the fence's info string) followed by its lines.
blocks() {
	awk -v want="### $1" '
		/^#+ / && !fence { on = ($0 == want) }
		on && /^```/ {
			if (!fence) { fence = 1; print "@@ " substr($0, 4) } else fence = 0
			next
		}
		on && fence' "$PD_ROOT/README.md"
}

# block SECTION N: the lines of the Nth block (from 1) of SECTION.
block() {
	blocks "$1" | awk -v n="$2" '/^@@ / { i++; next } i == n'
}

# infos SECTION: the info strings of its blocks, space-separated.
infos() {
	blocks "$1" | sed -n 's/^@@ //p' | tr '\n' ' '
}

# uri ROLE: this file's database as login role ROLE, as a URL (the socket
# directory percent-encoded as its host: no & or ? for a shell to trip on).
uri() {
	local port
	port=$(printf '%s\n' "$PD_PG_URL" | sed -n 's/.* port=\([0-9]*\).*/\1/p')
	printf 'postgresql://%s@%s:%s/%s' "$1" "$(printf '%s' "$PD_PG_DIR" | sed 's|/|%2F|g')" "$port" "$PD_DB_NAME"
}

# here: README text rewritten for this root and this database (see the top).
here() {
	local owner
	owner=$(printf '%s\n' "$PD_PG_URL" | sed -n 's/.* user=\([^ ]*\).*/\1/p')
	sed -e "s|/etc/pendulum|$ROOT/etc/pendulum|g" \
		-e "s/\bapp_acme\b/$R_APP/g; s/\bpd_worker\b/$R_WRK/g; s/\bops\b/$R_OPS/g" \
		-e "s|postgresql://owner@db/pendulum|$(uri "$owner")|g" \
		-e "s|postgresql://\([a-z_0-9]*\)@db/pendulum|$(uri '\1')|g"
}

# pd_make ARGS...: make in the tree, with PD_BIN's build and DESTDIR=$ROOT.
pd_make() {
	local flags=()
	[ "${PD_B##*/}" != build-asan ] || flags=(SANITIZE=1 CC=clang)
	command make -s -C "$PD_ROOT" B="$PD_B" DESTDIR="$ROOT" "${flags[@]}" "$@" >&2
}

# The stand-ins the blocks call (see the top); defined for one test's shell.
stand_ins() {
	sudo() { "$@"; }
	make() { pd_make "$@"; }
	systemd-sysusers() { command systemd-sysusers --root="$ROOT" "$@"; }
	install() {
		local args=() uid
		while [ $# -gt 0 ]; do
			if [ "$1" = -o ]; then
				uid=$(awk -F: -v u="$2" '$1 == u { print $3 }' "$ROOT/etc/passwd")
				[ -n "$uid" ] || { echo "install: no user $2 in $ROOT/etc/passwd" >&2; return 1; }
				[ "$(id -u)" != 0 ] || args+=(-o "$uid")
				shift 2
				continue
			fi
			args+=("$1")
			shift
		done
		command install "${args[@]}"
	}
	systemctl() {
		[ "$1" = enable ] && [ "$2" = --now ] || { echo "systemctl: only enable --now here" >&2; return 1; }
		shift 2
		local u
		for u in "$@"; do
			case $u in
			*.timer) continue ;;
			esac
			start_unit "${u%.service}"
		done
	}
	export PATH="$ROOT/usr/bin:$PATH"
}

# start_unit NAME[@INSTANCE]: the installed unit's ExecStart= in the
# background (start_bg NAME), its environment only what its
# EnvironmentFile= lines give (and PATH).
start_unit() {
	local name=$1 inst="" unit f line key opt envs=(PATH=/usr/bin:/bin) cmd
	case $name in
	*@*)
		inst=${name#*@}
		unit=$ROOT/usr/lib/systemd/system/${name%%@*}@.service
		;;
	*) unit=$ROOT/usr/lib/systemd/system/$name.service ;;
	esac
	[ -f "$unit" ] || { echo "no unit $unit" >&2; return 1; }
	while IFS= read -r line; do
		case $line in
		EnvironmentFile=*)
			f=${line#EnvironmentFile=}
			opt=
			[ "${f#-}" = "$f" ] || { opt=1; f=${f#-}; }
			f=$(printf '%s\n' "${f//%i/$inst}" | here)
			if [ ! -f "$f" ]; then
				[ -n "$opt" ] || { echo "$unit: no $f" >&2; return 1; }
				continue
			fi
			while IFS= read -r key; do
				case $key in '' | '#'*) continue ;; esac
				envs+=("$key")
			done <"$f"
			;;
		ExecStart=*)
			cmd=${line#ExecStart=}
			cmd=$(printf '%s\n' "${cmd//%i/$inst}" | here | sed "s|^/usr/bin/|$ROOT/usr/bin/|")
			;;
		esac
	done <"$unit"
	[ -n "$cmd" ] || { echo "$unit: no ExecStart=" >&2; return 1; }
	# shellcheck disable=SC2086 # ExecStart= is split on blanks, as systemd does
	start_bg "$name" env -i "${envs[@]}" $cmd
}

# shell TEXT: TEXT run in a subshell of this one (the stand-ins defined)
# with no database in its environment, as an administrator's shell has none:
# what a block connects to, it must say.
shell() {
	(
		unset PD_DATABASE_URL PGHOST PGPORT PGDATABASE PGUSER PGSERVICE
		eval "$1"
	)
}

# up_or_gone UNIT: the worker started as UNIT has registered, or has exited.
up_or_gone() {
	local pid
	pid=$(bg_pid "$1")
	! alive "$pid" || sql_is "SELECT count(*) FROM pendulum.workers WHERE pid = $pid" 1
}

# console TEXT: each `$ ` line runs (in this shell); what it prints must be
# the lines under it, up to the next `$ ` line.
console() {
	local cmd="" want="" line
	while IFS= read -r line; do
		if [ "${line#\$ }" != "$line" ]; then
			[ -z "$cmd" ] || console_one "$cmd" "$want"
			cmd=${line#\$ }
			want=""
		else
			want=${want:+$want$'\n'}$line
		fi
	done <<<"$1"
	[ -z "$cmd" ] || console_one "$cmd" "$want"
}

console_one() {
	local got
	got=$(shell "$1")
	[ "$got" = "$2" ] || {
		printf 'README: $ %s\nprinted: %s\nREADME shows: %s\n' "$1" "$got" "$2" >&2
		return 1
	}
}

@test "the README's production section runs as written: install, env file, migrate, roles, the worker unit serves a job" {
	# The blocks are where this test expects them.
	[ "$(infos Install)" = "sh sh " ]
	[ "$(infos 'Database roles')" = "sh sql sh " ]
	[[ "$(infos Units)" == "sh console "* ]]
	stand_ins

	# Install: the copy into the root, the user, the units' env file.
	shell "$(block Install 1 | here)"
	[ -x "$ROOT/usr/bin/pd-worker" ]
	[ -f "$ROOT/usr/lib/systemd/system/pd-worker@.service" ]
	[ -f "$ROOT/etc/pendulum/pendulum.yaml.example" ]
	shell "$(block Install 2 | here)"
	grep -q '^pendulum:' "$ROOT/etc/passwd"
	[ "$(stat -c %a "$ROOT/etc/pendulum/pendulum.env")" = 600 ]
	if [ "$(id -u)" = 0 ]; then
		[ "$(stat -c %u "$ROOT/etc/pendulum/pendulum.env")" = "$(awk -F: '$1 == "pendulum" { print $3 }' "$ROOT/etc/passwd")" ]
	fi
	grep -qx "PD_DATABASE_URL=$(uri "$R_WRK")" "$ROOT/etc/pendulum/pendulum.env"

	# Database roles: migrate with the owner's URL from its env file, the
	# login roles and their groups, the application's tenant.
	run --separate-stderr shell "$(block 'Database roles' 1 | here)"
	[ "$status" -eq 0 ]
	[[ "$output" == "applied "*" migrations; schema at version "* ]]
	[ "$(stat -c %a "$ROOT/etc/pendulum/owner.env")" = 600 ]
	block 'Database roles' 2 | here | psql -X -q -v ON_ERROR_STOP=1 -d "$PD_DATABASE_URL" -f -
	sql_is "SELECT pg_has_role('$R_APP', 'pendulum_enqueue', 'MEMBER')" t
	sql_is "SELECT pg_has_role('$R_WRK', 'pendulum_worker', 'MEMBER')" t
	sql_is "SELECT pg_has_role('$R_OPS', 'pendulum_admin', 'MEMBER')" t
	shell "$(block 'Database roles' 3 | here)"
	sql_is "SELECT count(*) FROM pendulum.tenant_members WHERE role = '$R_APP'::regrole AND tenant_id = 'acme'" 1

	# Units: the example config as billing.yaml; the services' command lines
	# with their env files; the application's job served by the worker unit.
	shell "$(block Units 1 | here)"
	wait_for 20 up_or_gone pd-worker@billing
	alive "$(bg_pid pd-worker@billing)" || {
		echo "pd-worker@billing exited $(bg_status pd-worker@billing): $(bg_log pd-worker@billing)" >&2
		return 1
	}
	console "$(block Units 2 | here)"
	sql_is "SELECT tenant_id || ' ' || state FROM pendulum.jobs" "acme SUCCEEDED"
	# The services run as the units' role, and are up.
	sql_is "SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = '$R_WRK' AND datname = '$PD_DB_NAME'" t
	alive "$(bg_pid pd-worker@billing)"
	alive "$(bg_pid pd-reaper)"
	alive "$(bg_pid pd-cron)"
	# The application's role writes its tenant's jobs and no other tenant's.
	run pd-enqueue -d "$(uri "$R_APP")" --tenant default echo '{}'
	[ "$status" -eq 77 ]
}

@test "the example config's handlers and publish commands exist once installed" {
	pd_make PREFIX=/usr install 2>/dev/null
	pd-admin migrate >/dev/null
	local f=$ROOT/etc/pendulum/pendulum.yaml.example paths p n=0
	paths=$(sed -n 's/^ *exec: \[\([^],]*\).*/\1/p' "$f")
	[ -n "$paths" ]
	for p in $paths; do
		[ -x "$p" ] || {
			echo "$f names $p, which is not an executable here" >&2
			return 1
		}
		n=$((n + 1))
	done
	[ "$n" -ge 2 ]
	# And pd-worker accepts it as it is.
	run env -u PD_DATABASE_URL "$ROOT/usr/bin/pd-worker" -c "$f" -d "$PD_DATABASE_URL" --until-idle
	[ "$status" -eq 0 ]
}
