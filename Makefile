# agrigps: build, install and package.
#
#   make            release build of agrigps, with the Swift runtime linked in
#   make install    installs binaries, units (daemon, cab view, CAN interface), udev rule and example configuration (PREFIX=/usr/local, DESTDIR=)
#   make deb        builds dist/agrigps_VERSION_ARCH.deb with dpkg-deb
#   make bench      builds agrigps and its benchmarks as shipped, then runs them (BENCH_ARGS=)
#   make field-test the package in a Debian 12 virtual machine under systemd, with an emulated USB
#                   receiver, unplug and replug, a watchdog stall and power cuts (FIELD_TEST_ARGS=--power-cuts 50)
#
# BIN=path packages an agrigps built elsewhere (the tests use the debug build); WEB_BIN=path its agrigps-web.
# RUNTIME_LIBS and DPKG_DEB_FLAGS are for script/field-test --debug-build; the package as shipped has neither.

PREFIX ?= /usr/local
DESTDIR ?=
CONFIGURATION ?= release
BUILT := .build/$(CONFIGURATION)/agrigps
BIN ?= $(BUILT)
# The cab view's server, a program of its own that `agrigps web` runs: beside BIN unless given.
WEB_BIN ?= $(dir $(BIN))agrigps-web
# Symbols and debug information stay out of the installed binary (STRIP= keeps them).
STRIP ?= -s
# Shared libraries installed beside the binaries, where their RUNPATH's $ORIGIN finds them: none for
# a build with the Swift runtime linked in; the Swift runtime for a debug build (script/field-test).
RUNTIME_LIBS ?=
# Options for dpkg-deb --build: its default compression (xz) unless given.
DPKG_DEB_FLAGS ?=
VERSION := $(shell sed -n 's/^ *public static let current = "\(.*\)"$$/\1/p' Sources/CommandSupport/Version.swift)
ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DIST ?= dist
DEB := $(DIST)/agrigps_$(VERSION)_$(ARCH).deb
STAGE := $(DIST)/stage

# Linked by lld with packed relative relocations (glibc 2.36+), unused sections dropped and no
# symbol table for dynamic linking: the loader then touches about 3.5 MB less of the binary at start.
LINK := -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --gc-sections -Xlinker --no-export-dynamic
# Optimised for size: the daemon's code pages are most of its resident set, and -Osize cut the peak
# of a sampling-only daemon from 26.9 to 25.6 MiB with no measurable cost in CPU.
OPTIMISE := $(if $(filter release,$(CONFIGURATION)),-Xswiftc -Osize)
SWIFT_BUILD := swift build -c $(CONFIGURATION) --static-swift-stdlib $(OPTIMISE) $(LINK)

.PHONY: all build install deb bench field-test clean-dist

all: build

# Always asks swift build (which does nothing when nothing changed), so a stale binary is never packaged.
build:
	@if [ "$(BIN)" = "$(BUILT)" ]; then $(SWIFT_BUILD) --product agrigps && $(SWIFT_BUILD) --product agrigps-web; fi

# The benchmarks measure the binary that make deb ships.
bench:
	$(SWIFT_BUILD) --product agrigps
	$(SWIFT_BUILD) --product agrigps-web
	$(SWIFT_BUILD) --product agrigps-bench
	.build/$(CONFIGURATION)/agrigps-bench $(BENCH_ARGS)

# script/field-test builds the package itself (make deb), or packages BIN when one was given here.
field-test:
	@if [ "$(BIN)" = "$(BUILT)" ]; then script/field-test $(FIELD_TEST_ARGS); else BIN="$(BIN)" script/field-test $(FIELD_TEST_ARGS); fi

# Files in place under $(DESTDIR); the unit's ExecStart follows $(PREFIX).
install: build
	install -D -m 0755 $(STRIP) $(BIN) $(DESTDIR)$(PREFIX)/bin/agrigps
	install -D -m 0755 $(STRIP) $(WEB_BIN) $(DESTDIR)$(PREFIX)/bin/agrigps-web
	$(if $(RUNTIME_LIBS),install -m 0644 $(STRIP) $(RUNTIME_LIBS) $(DESTDIR)$(PREFIX)/bin/)
	install -d $(DESTDIR)/lib/systemd/system $(DESTDIR)/lib/udev/rules.d
	for unit in agrigps.service agrigps-web.service; do \
		sed 's|^ExecStart=/usr/bin/agrigps|ExecStart=$(PREFIX)/bin/agrigps|' systemd/$$unit > $(DESTDIR)/lib/systemd/system/$$unit && \
		chmod 0644 $(DESTDIR)/lib/systemd/system/$$unit || exit 1; \
	done
	sed 's|^ExecStart=/usr/lib/agrigps/|ExecStart=$(PREFIX)/lib/agrigps/|' systemd/agrigps-can@.service > $(DESTDIR)/lib/systemd/system/agrigps-can@.service
	chmod 0644 $(DESTDIR)/lib/systemd/system/agrigps-can@.service
	install -D -m 0755 systemd/agrigps-can-up $(DESTDIR)$(PREFIX)/lib/agrigps/agrigps-can-up
	install -m 0644 udev/61-agrigps.rules $(DESTDIR)/lib/udev/rules.d/61-agrigps.rules
	install -D -m 0644 config/agrigps.conf $(DESTDIR)/etc/agrigps/agrigps.conf

deb: build
	rm -rf $(STAGE)
	$(MAKE) --no-print-directory install DESTDIR=$(STAGE) PREFIX=/usr BIN=$(BIN)
	install -d $(STAGE)/DEBIAN
	sed -e 's/@VERSION@/$(VERSION)/' -e 's/@ARCH@/$(ARCH)/' packaging/debian/control > $(STAGE)/DEBIAN/control
	install -m 0644 packaging/debian/conffiles $(STAGE)/DEBIAN/conffiles
	install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm $(STAGE)/DEBIAN/
	dpkg-deb --root-owner-group $(DPKG_DEB_FLAGS) --build $(STAGE) $(DEB)
	rm -rf $(STAGE)

clean-dist:
	rm -rf $(DIST)
