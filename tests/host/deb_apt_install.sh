#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian package as an operator installs and removes it, in a root like
# the guests' (tests/vm/image.sh amd64: Debian 12 with the 6.1 and 6.12
# cloud kernels, their headers and dkms), entered with chroot on a
# throw-away overlay (or copy) of that root; the kernel sources are visible,
# as on a host with linux-source installed, so ena is built too:
#   1. `apt-get install ./ena-tcp-tailfix-dkms_VERSION_all.deb` (make deb)
#      builds and installs the package for every kernel with headers during
#      the apt run (dh-dkms's postinst): `dkms status` says installed for
#      each, each kernel's updates/dkms holds tsq_probe, tcp_dctcp_fixed and
#      ena, each with the version of dkms.conf, and tsq-probe-stat runs;
#   2. `apt-get remove`: no module of ours in any /lib/modules, nothing of
#      ours in /var/lib/dkms or /usr; only the conffile stays;
#   3. `apt-get purge`: the root's file list equals the one before step 1
#      (apart from apt's and dpkg's own state, logs, and the DKMS signing
#      key dkms makes on its first build, which is dkms's, not ours);
#   4. Debian's own check, dkms-autopkgtest (what autopkgtest-pkg-dkms
#      runs), against a local apt repository holding the deb: PASS for
#      every kernel; then purged again, and the file list checked again.
# Changes nothing on the build host: everything happens in the overlay.
# Slow (DKMS builds three modules for two kernels, twice): make check-full.

. "$(dirname "$0")/../lib.sh"

require_root
require_cmd chroot dpkg-scanpackages
TOP=$TAILFIX_ROOT
VM=$TOP/tests/vm
NAME=ena-tcp-tailfix
PKG=$NAME-dkms
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TOP/dkms.conf")
[ -n "$VER" ] || fail "no PACKAGE_VERSION in dkms.conf"

TMP=$(mktemp -d /var/tmp/tailfix-deb.XXXXXX)
on_exit rm -rf --one-file-system "$TMP"
. "$VM/vm-lib.sh"
base=$("$VM/image.sh" amd64 2>"$TMP/image.log") ||
	{ sed 's/^/# /' "$TMP/image.log" | tail -5; skip "no amd64 guest root (tests/vm/image.sh amd64 failed: debootstrap, network)"; }
vm_lock "$base.lock" -s "base root $base" || fail "cannot lock $base"

"$TOP/scripts/package.sh" deb "$TMP/deb" >"$TMP/deb.log" 2>&1 ||
	{ sed 's/^/# /' "$TMP/deb.log" | tail -20; fail "make deb failed"; }
DEB=$(ls "$TMP"/deb/${PKG}_"$VER"_all.deb)

# The root: an overlay over the cached one (a copy where overlayfs is not
# available); the test's mounts are undone by the exit handler.
R=$TMP/root
mkdir -p "$R" "$TMP/upper" "$TMP/work"
mounts=()
umount_all() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null; done
}
on_exit umount_all
if mount -t overlay overlay -o "lowerdir=$base,upperdir=$TMP/upper,workdir=$TMP/work" "$R" 2>/dev/null; then
	mounts+=("$R")
	log "root: overlay over $base"
else
	cp -a --reflink=auto "$base/." "$R/"
	log "root: a copy of $base (no overlayfs here)"
fi
for m in proc sys dev; do
	mount --bind "/$m" "$R/$m" && mounts+=("$R/$m") || fail "cannot bind /$m into the root"
done
in_root() { chroot "$R" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
mkdir -p "$R/tmp/tailfix"
cp "$DEB" "$R/tmp/tailfix/"
# the kernel sources, for ena (linked as stage.sh does; removed after)
for t in /usr/src/linux-source-*.tar.xz; do
	[ -f "$t" ] || continue
	ln "$t" "$R/usr/src/" 2>/dev/null || cp "$t" "$R/usr/src/"
	on_exit rm -f "$R/usr/src/${t##*/}"
done

KERNELS=$(cd "$R/lib/modules" && ls -d */build 2>/dev/null | sed 's,/build,,')
[ -n "$KERNELS" ] || fail "the root has no kernel headers"
log "kernels with headers: $(echo $KERNELS)"

# file_list: every path of the root but the state apt, dpkg and dkms keep
# for themselves, logs, caches and what this test put there.
file_list() {
	(cd "$R" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp \
		-o -path ./var/log -o -path ./var/cache -o -path ./var/lib/apt -o -path ./var/lib/dpkg \
		-o -path ./run -o -path ./var/tmp \) -prune -o -print |
		grep -v -e '^\./var/lib/dkms/mok\.\(key\|pub\)$' -e '^\./usr/src/linux-source-' | sort)
}
file_list >"$TMP/files.before"

# ours_left: the paths of ours anywhere in the root.
ours_left() {
	local k
	for k in $KERNELS; do
		find "$R/lib/modules/$k" \( -name 'tsq_probe.ko*' -o -name 'tcp_dctcp_fixed.ko*' \
			-o \( -path '*/updates/*' -name 'ena.ko*' \) \) 2>/dev/null
	done
	ls -d "$R/var/lib/dkms/$NAME" "$R/usr/src/$NAME-$VER" "$R/usr/sbin/tsq-probe-stat" \
		"$R/usr/share/doc/$PKG" 2>/dev/null
}

# 1. install
log "apt-get install ./$(basename "$DEB")"
in_root apt-get install -y -q --no-install-recommends "/tmp/tailfix/$(basename "$DEB")" >"$TMP/install.log" 2>&1
rc=$?
sed 's/^/#   /' "$TMP/install.log" | grep -E 'dkms|Building|Installing|Setting up|rror' | tail -25
check "apt-get install of the deb succeeded" [ "$rc" -eq 0 ]
for k in $KERNELS; do
	st=$(in_root dkms status "$NAME/$VER" -k "$k" 2>&1)
	log "dkms status ($k): $st"
	check "$k: the package was built and installed during the apt run" \
		grep -q ': installed' <<<"$st"
	for m in tsq_probe tcp_dctcp_fixed ena; do
		ko=$(ls "$R/lib/modules/$k/updates/dkms/$m.ko"* 2>/dev/null | head -1)
		v=
		[ -n "$ko" ] && v=$(modinfo -F version "$ko" 2>/dev/null)
		log "$k: $m: ${ko#"$R"} version '$v'"
		check "$k: $m installed by DKMS with a version naming $VER" \
			grep -qF -- "$VER" <<<"${ko:+$v}"
	done
done
check "tsq-probe-stat is in /usr/sbin and runs" \
	in_root sh -c '/usr/sbin/tsq-probe-stat --help >/dev/null 2>&1'

# 2. remove
in_root apt-get remove -y -q "$PKG" >"$TMP/remove.log" 2>&1
rc=$?
check "apt-get remove succeeded" [ "$rc" -eq 0 ]
left=$(ours_left)
[ -z "$left" ] || log "left after remove: $(echo ${left//$R/})"
check "after remove nothing of ours is left in /lib/modules, /var/lib/dkms, /usr" [ -z "$left" ]
st=$(in_root dpkg-query -W -f '${Status}' "$PKG" 2>/dev/null)
check "after remove only the conffiles remain (dpkg: '$st')" [ "$st" = 'deinstall ok config-files' ]

# 3. purge
in_root apt-get purge -y -q "$PKG" >"$TMP/purge.log" 2>&1
rc=$?
check "apt-get purge succeeded" [ "$rc" -eq 0 ]
file_list >"$TMP/files.after"
diff "$TMP/files.before" "$TMP/files.after" >"$TMP/files.diff"
sed 's/^/#   /' "$TMP/files.diff" | head -20
check "after purge the root holds exactly the files it had before the install" \
	[ ! -s "$TMP/files.diff" ]

# 4. dkms-autopkgtest from a local repository
mkdir -p "$R/tmp/tailfix/repo"
cp "$DEB" "$R/tmp/tailfix/repo/"
(cd "$R/tmp/tailfix/repo" && dpkg-scanpackages . /dev/null >Packages 2>/dev/null)
echo "deb [trusted=yes] file:/tmp/tailfix/repo ./" >"$R/etc/apt/sources.list.d/tailfix-test.list"
on_exit rm -f "$R/etc/apt/sources.list.d/tailfix-test.list"
in_root apt-get update -q -o Dir::Etc::sourcelist=sources.list.d/tailfix-test.list \
	-o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 >"$TMP/update.log" 2>&1 ||
	{ sed 's/^/# /' "$TMP/update.log"; fail "apt-get update of the local repository failed"; }
in_root sh -c 'cd /tmp && /usr/lib/dkms/dkms-autopkgtest '"$PKG" >"$TMP/autopkgtest.log" 2>&1
rc=$?
grep -E '^(I: (PASS|FAIL|SKIP)|E:)' "$TMP/autopkgtest.log" | sed 's/^/#   /'
check "dkms-autopkgtest $PKG passed (exit $rc)" [ "$rc" -eq 0 ]
for k in $KERNELS; do
	check "dkms-autopkgtest: PASS for $k" grep -qx "I: PASS $k" "$TMP/autopkgtest.log"
done
in_root apt-get purge -y -q "$PKG" >"$TMP/purge2.log" 2>&1
rm -rf "$R/etc/apt/sources.list.d/tailfix-test.list" "$R/tmp/tailfix/repo"
# (dkms-autopkgtest dpkg --remove's dkms on purpose, to prove the
# dependency, which must fail: dkms stays installed, its selection left at
# "deinstall" by the refused removal)
st=$(in_root dpkg-query -W -f '${Status}' dkms 2>/dev/null)
check "dkms is still installed (the deb depends on it): '$st'" \
	test "${st#* }" = "ok installed"
file_list >"$TMP/files.after2"
diff "$TMP/files.before" "$TMP/files.after2" >"$TMP/files.diff2"
sed 's/^/#   /' "$TMP/files.diff2" | head -20
check "after dkms-autopkgtest and purge the root holds the files it had before" \
	[ ! -s "$TMP/files.diff2" ]

ksft_finish
