# Pendulum: a durable job execution engine on PostgreSQL.
#
#   make            library and binaries in build/
#   make check      deps, normal and ASan+UBSan builds, every test on a real Postgres
#                   (and through a failover of a real Patroni cluster: tests/ha)
#   make demo       the state machine moving in your terminal
#   make demo-flow  a durable workflow (examples/place-order) run step by step
#   make fuzz       every libFuzzer target in tests/fuzz/ for FUZZ_SECONDS (10) each, clang
#   make bench      performance figures beside their targets (never gates anything)
#   make bench-peers  the same figures beside graphile-worker's and pg-boss's (npm)
#   make ha-check   only the failover tests: etcd + two-node Patroni (also in check)
#   make lint       clang-format, shellcheck, man pages (mandoc, groff), the layers of lib/
#   make schema     regenerate sql/schema.sql (the schema in force) from a migrated database
#   make install    PREFIX=/usr/local DESTDIR= (SYSTEMDUNITDIR, SYSCONFDIR, DATADIR, BASHCOMPDIR)
#   make deb        the Debian package (debian/) into build/deb, lintian clean
#   make deb-check  build it, check its contents, install and purge it in a root (tests/deb)

PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DATADIR  ?= $(PREFIX)/share
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
B        ?= build
CC       ?= cc
CFLAGS   ?= -O2 -g
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
PGINC    := $(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)

PD_CFLAGS = -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	    -Wno-missing-field-initializers -D_GNU_SOURCE -DPD_VERSION='"$(VERSION)"' \
	    -Ilib -I$(B)/gen -I$(PGINC) -MMD -MP
PD_LDLIBS = -lpq -lyaml

ifeq ($(SANITIZE),1)
PD_CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
PD_LDFLAGS += -fsanitize=address,undefined
endif

# The fuzz build (make fuzz, make check): clang, the library instrumented for
# libFuzzer, ASan and UBSan; the targets link libFuzzer's main.
ifeq ($(FUZZ),1)
PD_CFLAGS += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
PD_LDFLAGS += -fsanitize=fuzzer,address,undefined
endif
FUZZ_B   ?= build-fuzz
FUZZ_SECONDS ?= 10

PROGS     := pd-enqueue pd-worker pd-reaper pd-cron pd-relay pd-admin
LIB_SRC   := $(sort $(wildcard lib/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/migrations.o
BINS      := $(PROGS:%=$(B)/bin/%)
UNIT_SRC  := $(sort $(wildcard tests/unit/*_test.c))
UNITS     := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
HELPERS   := $(B)/tests/pd-test-tool
SQL       := $(sort $(wildcard sql/[0-9]*.sql))
MANS      := $(sort $(wildcard man/*.[1-9]))
SYSD      := $(sort $(wildcard systemd/*.service systemd/*.timer))
SCRIPTS   := $(shell grep -lE '^\#!.*(sh|bash)' scripts/* examples/*/*.sh .ci/run 2>/dev/null) $(wildcard tests/*.bash)
BATS      := $(wildcard tests/*.bats)
HA_BATS   := $(wildcard tests/ha/*.bats)
FUZZ_SRC  := $(sort $(wildcard tests/fuzz/*_fuzz.c))
FUZZERS   := $(FUZZ_SRC:tests/fuzz/%.c=$(B)/fuzz/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH     := $(BENCH_SRC:bench/%.c=$(B)/bench/%)

all: $(BINS) $(UNITS) $(HELPERS)

# The programs alone (the package's build).
bins: $(BINS)

$(B)/lib/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CC) $(PD_CFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/gen/migrations.c: $(SQL) scripts/embed-sql
	@mkdir -p $(@D)
	sh scripts/embed-sql $(SQL) > $@.tmp && mv $@.tmp $@

$(B)/gen/migrations.o: $(B)/gen/migrations.c
	$(CC) $(PD_CFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/libpendulum.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/cmd/%.o: cmd/%.c
	@mkdir -p $(@D)
	$(CC) $(PD_CFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/bin/%: $(B)/cmd/%.o $(B)/libpendulum.a
	@mkdir -p $(@D)
	$(CC) $(PD_LDFLAGS) $(LDFLAGS) -o $@ $< $(B)/libpendulum.a $(PD_LDLIBS)

$(B)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(PD_CFLAGS) $(CFLAGS) -Itests/unit -c -o $@ $<

$(B)/tests/%_test: $(B)/tests/%_test.o $(B)/libpendulum.a
	$(CC) $(PD_LDFLAGS) $(LDFLAGS) -o $@ $< $(B)/libpendulum.a $(PD_LDLIBS)

$(B)/tests/pd-test-tool: tests/helper/pd-test-tool.c $(B)/libpendulum.a
	@mkdir -p $(@D)
	$(CC) $(PD_CFLAGS) $(CFLAGS) $(PD_LDFLAGS) $(LDFLAGS) -o $@ $< $(B)/libpendulum.a $(PD_LDLIBS)

$(B)/fuzz/%_fuzz: tests/fuzz/%_fuzz.c $(B)/libpendulum.a
	@mkdir -p $(@D)
	$(CC) $(PD_CFLAGS) $(CFLAGS) $(PD_LDFLAGS) $(LDFLAGS) -o $@ $< $(B)/libpendulum.a $(PD_LDLIBS)

# The benchmark's helpers (spawn ceiling, pickup latency, handler stamp): built
# by `make bench` only, with the tree's flags but without -Ilib, whose sched.h
# would hide the system's <sched.h> that <spawn.h> includes.
$(B)/bench/%: bench/%.c bench/bench.h
	@mkdir -p $(@D)
	$(CC) $(filter-out -Ilib,$(PD_CFLAGS)) $(CFLAGS) $(PD_LDFLAGS) $(LDFLAGS) -o $@ $< -lpq

deps:
	sh scripts/deps

# The libFuzzer targets only (FUZZ=1 CC=clang implied), into $(B)/fuzz.
fuzz-targets:
	$(MAKE) FUZZ=1 CC=clang $(FUZZERS)

# Each target for FUZZ_SECONDS on a copy of its corpus (tests/fuzz/corpus/NAME,
# never grown by a run), crashes into $(FUZZ_B)/fuzz/NAME.out/: fails if any
# target crashed. See scripts/fuzz.
fuzz:
	$(MAKE) -j2 B=$(FUZZ_B) fuzz-targets
	sh scripts/fuzz $(abspath $(FUZZ_B))/fuzz $(FUZZ_SECONDS)

# sql/schema.sql: the schema the migrations leave, dumped from a throwaway
# cluster (scripts/schema-snapshot); tests/schema.bats compares it. Run after
# adding a migration and commit the result. ($(SQL) leaves it out: it is no
# migration.)
schema: $(B)/bin/pd-admin
	sh scripts/schema-snapshot $(abspath $(B))/bin

# The normal build uses $(CC) (gcc on Debian), the sanitizer build clang: both
# compilers build the tree with -Werror on every check.
check: deps
	sh scripts/deps ha
	sh scripts/deps deb
	$(MAKE) lint
	$(MAKE) -j$$(nproc) all
	$(MAKE) -j$$(nproc) B=build-asan SANITIZE=1 CC=clang all
	$(MAKE) -j$$(nproc) B=$(FUZZ_B) fuzz-targets
	$(MAKE) verify-units
	sh scripts/check

# systemd-analyze verify on the units (when it is installed), ExecStart= on
# the binaries just built: see scripts/verify-units.
verify-units: $(BINS)
	sh scripts/verify-units $(abspath $(B))/bin

# Only the unit tests, no Postgres needed.
unit: all
	prove $(UNITS)

demo: deps all
	sh scripts/demo

demo-flow: deps all
	sh scripts/demo-flow

bench: deps all $(BENCH)
	PD_BIN=$(abspath $(B))/bin PD_BENCH_BIN=$(abspath $(B))/bench sh scripts/bench

# Pendulum beside graphile-worker and pg-boss (npm, into $(B)/peers): reports,
# never gates, never part of make check (README, Against the peers).
bench-peers: deps all $(BENCH)
	sh scripts/deps peers
	PD_BIN=$(abspath $(B))/bin PD_BENCH_BIN=$(abspath $(B))/bench PEERS_DIR=$(abspath $(B))/peers sh scripts/bench-peers

# Through a primary failover: etcd and a two-node Patroni cluster on this
# machine (scripts/ha), tests/ha/*.bats against the ASan build; about 2
# minutes, so not part of make check (see README, Through a primary failover).
ha-check: deps
	sh scripts/deps ha
	sh scripts/deps deb
	$(MAKE) -j$$(nproc) B=build-asan SANITIZE=1 CC=clang all
	PD_BIN=$(abspath build-asan)/bin PD_TEST_TOOL=$(abspath build-asan)/tests/pd-test-tool \
		PD_HA_REPORT=$(abspath build-asan)/ha-check.txt bats $(HA_BATS)

lint:
	clang-format --dry-run -Werror lib/*.[ch] cmd/*.c tests/unit/*.[ch] $(wildcard tests/helper/*.c tests/fuzz/*.[ch] bench/*.[ch])
	shellcheck -S warning $(SCRIPTS)
	# bats defines $$output, $$stderr, $$lines... for the tests that read them.
	shellcheck -S warning -s bash -e SC2154,SC2034 $(BATS) $(HA_BATS) $(wildcard tests/deb/*.bats)
	shellcheck -S warning -s bash completion/pendulum.bash
	# Every page renders clean: mandoc -T lint -W style, groff -ww at 80 columns,
	# and the mdoc traps neither reports (scripts/man-lint).
	sh scripts/man-lint $(MANS)
	# lib/'s includes point only down the layers of lib/README.md.
	sh scripts/layers
	# No assertion a bats test cannot fail: chains, unchecked runs, || true; no background start outside the helpers (scripts/bats-lint).
	sh scripts/bats-lint $(BATS) $(HA_BATS) $(wildcard tests/deb/*.bats)

install: $(BINS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7
	install -m 755 $(BINS) $(DESTDIR)$(BINDIR)
	for m in $(MANS); do s=$${m##*.}; install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$s; done
	# The units, ExecStart= on $(BINDIR); an example config, never over a real one.
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR)/pendulum
	for u in $(SYSD); do sed 's|@BINDIR@|$(BINDIR)|g' $$u >$(DESTDIR)$(SYSTEMDUNITDIR)/$${u##*/}.tmp && \
		chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/$${u##*/}.tmp && \
		mv $(DESTDIR)$(SYSTEMDUNITDIR)/$${u##*/}.tmp $(DESTDIR)$(SYSTEMDUNITDIR)/$${u##*/} || exit 1; done
	install -m 644 systemd/pendulum.sysusers $(DESTDIR)$(SYSUSERSDIR)/pendulum.conf
	install -m 644 systemd/pendulum.yaml.example $(DESTDIR)$(SYSCONFDIR)/pendulum/pendulum.yaml.example
	# The migrations to read (pd-admin migrate applies its embedded copy); bash
	# completion, one script under each program's name.
	install -d $(DESTDIR)$(DATADIR)/pendulum/sql $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 $(SQL) $(DESTDIR)$(DATADIR)/pendulum/sql
	install -m 644 completion/pendulum.bash $(DESTDIR)$(BASHCOMPDIR)/pendulum
	for p in $(PROGS); do ln -sf pendulum $(DESTDIR)$(BASHCOMPDIR)/$$p || exit 1; done

# dpkg-buildpackage -us -uc -b on a copy of the tree (scripts/deb), then
# lintian; the .deb lands in build/deb. About a minute; make check runs
# tests/deb, which builds its own.
deb:
	sh scripts/deps deb
	sh scripts/deb build/deb

# tests/deb builds its own package (scripts/deb into a scratch directory).
deb-check:
	sh scripts/deps deb
	bats tests/deb

clean:
	rm -rf build build-asan $(FUZZ_B)

.PHONY: all bins deb deb-check deps fuzz fuzz-targets check verify-units unit demo demo-flow bench bench-peers ha-check lint schema install clean
.SECONDARY:

-include $(shell find $(B) -name '*.d' -type f 2>/dev/null)
