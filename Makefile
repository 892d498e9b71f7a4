# SPDX-License-Identifier: GPL-2.0
# ena-tcp-tailfix: build, lint, install, test and benchmark.
#
#   make                 build every module for KVER (see below) into out/KVER/
#   make KVER=6.1.0-57-cloud-amd64
#   make lint            checkpatch --strict --no-tree, W=1 and sparse builds
#   sudo make install    DKMS add/build/install for every kernel with headers
#   sudo make uninstall  remove everything install put in place
#   make check           install test dependencies, run host checks and the
#                        kselftest suite in QEMU guests of the kernel matrix
#   make check-harness   the test harness's own test (no guest, no root)
#   make check-kernels   every module for 5.10, 6.1, 6.12 and 7.x (chroots)
#   make demo            the TSQ lost-wake-up demo in a guest (before/after)
#   make bench           benchmarks in guests; results under bench/results/
#   make deb             ena-tcp-tailfix-dkms_VERSION_all.deb (debhelper,
#                        dh-sequence-dkms) into PKG_OUT (default: here)
#   make rpm             ena-tcp-tailfix-dkms-VERSION-1.noarch.rpm (rpmbuild)
#
# KVER defaults to the running kernel when its headers are installed, else
# to every kernel under /lib/modules that has headers.
#
#   make ARCH=arm64      cross-build every module for the arm64 cloud kernels
#                        of the matrix (6.1, 6.12) into out/KVER/, with
#                        CROSS_COMPILE=aarch64-linux-gnu- (gcc-aarch64-linux-gnu)
#                        against their Debian headers unpacked under
#                        $(CACHE)/arm64/headers (fetched by scripts/deps.sh
#                        arm64-headers on first use).  On an arm64 host ARCH=arm64
#                        is a native build and changes nothing.

PACKAGE := ena-tcp-tailfix
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(CURDIR)/dkms.conf)
MODULE_DIRS := $(patsubst %/Kbuild,%,$(wildcard tsq_probe/Kbuild tcp_dctcp_fixed/Kbuild))
CACHE ?= /var/cache/$(PACKAGE)
PREFIX ?= /usr/local

RUNNING := $(shell uname -r)
# Cross build for arm64: headers from the cache, one KDIR per kernel.
ifeq ($(ARCH)-$(filter aarch64 arm64,$(shell uname -m)),arm64-)
CROSS_COMPILE ?= aarch64-linux-gnu-
XHEADERS := $(CACHE)/arm64/headers/usr/src
ifeq ($(origin KVER),undefined)
KVER := $(patsubst $(XHEADERS)/linux-headers-%/.tailfix-ready,%,$(wildcard $(XHEADERS)/linux-headers-*-arm64/.tailfix-ready))
KVER_WHY := the arm64 kernels with headers under $(XHEADERS)
endif
BUILD_FLAGS += ARCH=arm64 CROSS_COMPILE=$(CROSS_COMPILE)
BUILD_KDIR = KDIR=$(XHEADERS)/linux-headers-$(1)
XFETCH := scripts/deps.sh arm64-headers
endif
ifeq ($(origin KVER),undefined)
ifneq ($(wildcard /lib/modules/$(RUNNING)/build),)
KVER := $(RUNNING)
KVER_WHY := the running kernel
else
KVER := $(patsubst /lib/modules/%/build,%,$(wildcard /lib/modules/*/build))
KVER_WHY := every kernel with headers (the running $(RUNNING) has none)
endif
else
KVER_WHY ?= as given
endif

all: modules

modules:
ifneq ($(XFETCH),)
	@[ -n "$(strip $(KVER))" ] || { $(XFETCH) && $(MAKE) --no-print-directory modules; }
endif
	@[ -n "$(strip $(KVER))" ] || [ -n "$(XFETCH)" ] || { echo "no kernel headers found: install linux-headers-\$$(uname -r)"; exit 1; }
	@[ -z "$(strip $(KVER))" ] || echo "building $(PACKAGE) $(VERSION) for: $(KVER) ($(KVER_WHY))"
	@set -e; for k in $(KVER); do \
		$(call BUILD_KDIR,$$k) scripts/build-modules.sh "$$k" "$(CURDIR)/out/$$k" $(BUILD_FLAGS); \
	done

# Called by DKMS (dkms.conf MAKE[0]) inside its own copy of the source: puts
# in place each module that builds for KVER (built once by dkms.conf's probe,
# kept in TAILFIX_PROBE_DIR) and says in one line why any other was skipped.
dkms-build:
	+@KDIR='$(or $(KDIR),/lib/modules/$(KVER)/build)' scripts/build-modules.sh --dkms '$(KVER)' \
		'$(or $(TAILFIX_PROBE_DIR),$(CURDIR)/.tailfix-probe)' '$(CURDIR)'

# (dkms-build builds nothing in the module directories, it copies .ko files.)
dkms-clean:
	@for d in $(MODULE_DIRS); do rm -f $$d/*.ko; done
	@rm -rf 'ena/build-$(KVER)' ena/ena.ko '$(CURDIR)/.tailfix-probe'

lint:
	@scripts/lint.sh $(KVER)

install:
	@scripts/install.sh install "$(VERSION)" "$(PREFIX)"

uninstall:
	@scripts/install.sh uninstall "$(VERSION)" "$(PREFIX)"

# Packages of the DKMS source, built in a temporary tree (scripts/package.sh).
PKG_OUT ?= $(CURDIR)

deb:
	@scripts/package.sh deb '$(PKG_OUT)'

rpm:
	@scripts/package.sh rpm '$(PKG_OUT)'

# The README's test command, and what .ci/run calls.
check:
	@tests/vm/check.sh quick

check-full:
	@tests/vm/check.sh full

# The debug guest kernel (lockdep, KASAN, kmemleak; tests/vm/debug-kernel.sh),
# built once and cached: make check runs the debug guest when it is there.
debug-kernel:
	@scripts/deps.sh debug-kernel
	@tests/vm/debug-kernel.sh >/dev/null

# The harness's own test: fixtures of broken runs must each fail.
check-harness:
	@tests/run_tests.sh host/harness_selftest.sh

# The build matrix: 5.10 and 7.x in their Debian releases' chroots (made or
# refreshed here, under /var/cache/ena-tcp-tailfix/chroots), 6.1 and 6.12 on this host.
check-kernels:
	@nice -n 19 scripts/kernel-chroot.sh setup
	@nice -n 19 tests/run_tests.sh host/kernel_matrix_build.sh

demo:
	@tests/vm/check.sh demo

bench:
	@tests/vm/check.sh bench

clean:
	rm -rf out
	rm -f $(PACKAGE)-dkms_*_all.deb $(PACKAGE)-dkms-*.noarch.rpm
	@for d in $(MODULE_DIRS); do rm -f $$d/*.o $$d/*.ko $$d/*.mod* $$d/.*.cmd $$d/modules.order $$d/Module.symvers; done
	@[ ! -d tests ] || $(MAKE) -s -C tests clean

.PHONY: all modules dkms-build dkms-clean lint install uninstall deb rpm check check-full \
	debug-kernel check-harness check-kernels demo bench clean
