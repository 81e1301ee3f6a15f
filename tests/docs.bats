#!/usr/bin/env bats
# The documentation agrees with the binaries and the schema:
# - every table, view and function of the schema "pendulum" is named in
#   pendulum(7)'s SQL reference;
# - pd-admin migrate prints what README.md and pd-admin(1) say it prints.
#
# "The SQL reference" is the text of pendulum(7) from ".Ss The SQL interface"
# to the end of its DESCRIPTION (the next .Sh): that subsection and the ones
# after it (Workflows ...). An object "appears" there when a line of that text
# is one of the macros .Sy, .Fn or .Nm, or a list item .It of one of them,
# followed by pendulum.NAME (and perhaps arguments or punctuation): an entry
# of the reference, not a passing mention in a literal display or a .Ql.

load helpers
pd_db_hooks

# The schema's tables (r, p), views (v, m) and functions, one name a line.
schema_objects() {
	sql "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	      WHERE n.nspname = 'pendulum' AND c.relkind IN ('r', 'p', 'v', 'm')
	     UNION
	     SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
	      WHERE n.nspname = 'pendulum'
	     ORDER BY 1"
}

# The names pendulum(7)'s SQL reference documents, one a line.
documented() {
	sed -n '/^\.Ss The SQL interface$/,/^\.Sh /p' "$PD_ROOT/man/pendulum.7" |
		sed -n 's/^\.\(It \)\{0,1\}\(Sy\|Fn\|Nm\) pendulum\.\([a-z_0-9]*\).*/\3/p' | sort -u
}

@test "every table, view and function of the schema is in pendulum(7)'s SQL reference" {
	local objects docs missing
	objects=$(schema_objects)
	docs=$(documented)
	# The check itself: it sees the objects and the section.
	[ "$(printf '%s\n' "$objects" | grep -c .)" -ge 30 ]
	printf '%s\n' "$objects" | grep -qx cron_schedules
	printf '%s\n' "$docs" | grep -qx jobs
	missing=$(comm -23 <(printf '%s\n' "$objects") <(printf '%s\n' "$docs") | tr '\n' ' ')
	[ -z "$missing" ] || {
		echo "not in pendulum(7)'s SQL reference (.Sy/.Fn/.Nm pendulum.NAME): $missing"
		return 1
	}
}

@test "the SQL reference names no object the schema does not have" {
	local objects extra
	objects=$(schema_objects)
	extra=$(comm -13 <(printf '%s\n' "$objects") <(documented) | tr '\n' ' ')
	[ -z "$extra" ] || {
		echo "in pendulum(7)'s SQL reference but not in the schema: $extra"
		return 1
	}
}

@test "pd-admin migrate prints what README.md and pd-admin(1) show" {
	local n
	n=$(find "$PD_ROOT/sql" -name '[0-9][0-9][0-9]_*.sql' | wc -l)
	psql -X -q -d "$PD_PG_URL" -c "CREATE DATABASE ${PD_DB_NAME}_m"
	local url=${PD_DATABASE_URL/dbname=$PD_DB_NAME/dbname=${PD_DB_NAME}_m}
	run --separate-stderr pd-admin -d "$url" migrate
	[ "$status" -eq 0 ]
	[ "$output" = "applied $n migrations; schema at version $n" ]
	run --separate-stderr pd-admin -d "$url" migrate
	[ "$output" = "schema up to date at version $n; nothing applied" ]
	psql -X -q -d "$PD_PG_URL" -c "DROP DATABASE ${PD_DB_NAME}_m WITH (FORCE)"
	# The docs show the lines with N, or with the current count: never a stale one.
	local bad
	bad=$(grep -hE 'migrations; schema at version|up to date at version' \
		"$PD_ROOT/README.md" "$PD_ROOT"/man/*.[1-8] | grep -E '[0-9]' | grep -vE "\b$n\b" || true)
	[ -z "$bad" ] || {
		echo "stale migrate output in the docs: $bad"
		return 1
	}
}
