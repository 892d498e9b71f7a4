#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian package's whole life on a booted kernel, as an operator lives
# it, on a host that has never had it (a guest disk staged with
# TAILFIX_STAGE_DEB=1: the deb in /opt/tailfix/debs, linux-source-X.Y.tar.xz
# in /usr/src, the running kernel's headers, nothing of ours installed):
#   1. `apt-get install ./ena-tcp-tailfix-dkms_VERSION_all.deb`: DKMS builds
#      during the apt run; modprobe resolves tsq_probe and tcp_dctcp_fixed
#      to the files DKMS installed under this kernel's updates/, and they
#      load (the loaded module's srcversion is the file's); `modprobe ena`
#      still resolves to and loads the kernel's own ena (no out-of-tree
#      taint, no -tailfixVERSION version), and no ena.ko of ours is
#      installed;
#   2. `ena-tcp-tailfix ena enable`: the modprobe rule names ena-load,
#      modprobe resolves ena to our ena.ko under updates/ and loads it (our
#      version, out-of-tree taint, the file's srcversion); where the
#      initramfs carries an ena.ko, the one its modules.dep resolves is ours
#      and it carries the rule;
#   3. `ena-tcp-tailfix ena disable`: the rule and our ena.ko are gone,
#      `modprobe ena` loads the kernel's own ena again, the initramfs
#      resolves ena to the kernel's own and carries no rule; tsq_probe and
#      tcp_dctcp_fixed are still installed and load;
#   4. `apt-get purge`: nothing of ours is left -- /usr/src/ena-tcp-tailfix-*,
#      /var/lib/dkms/ena-tcp-tailfix, any module of ours under
#      /lib/modules/*/updates, /etc/ena-tcp-tailfix.conf,
#      /etc/modprobe.d/ena-tcp-tailfix*.conf, /usr/lib/ena-tcp-tailfix,
#      /usr/sbin/ena-tcp-tailfix, /usr/sbin/tsq-probe-stat, the docs and the
#      initramfs hook -- and `modprobe ena` loads the kernel's own ena.
# Without PKG_BOOT, in one boot: QEMU boots the guest once (-snapshot,
# with the host's copy of the kernel and initrd), and each "reboot" above
# is an unload of every module of ours and of ena and a fresh modprobe,
# which resolves through the same modules.dep and modprobe.d a boot would.
# With PKG_BOOT=N (1..6; tests/vm/reboots.sh boots one disk six times, each
# time with the kernel and initramfs the disk holds), the same life across
# real boots and a kernel upgrade, one step per boot, each boot judging
# what the step before it left:
#   1. (6.1) ena added to /etc/initramfs-tools/modules and every initramfs
#      rebuilt, so that each boot's initramfs loads ena as an ENA device's
#      udev event would (QEMU has no ENA model); the deb installed;
#   2. the ena loaded at boot is the kernel's own; our modules load; opt in;
#   3. the ena loaded at boot is ours; opt out;
#   4. the kernel's own again; the upgrade: the next kernel's headers
#      installed from a .deb, DKMS builds for it from their hook;
#   5. (the upgraded kernel) the kernel's own ena at boot, our modules
#      load; purge;
#   6. nothing of ours is left, the kernel's own ena at boot.
# (make check-full runs the boot mode: tests/vm/check.sh.)
# Each check must be able to fail:
#   - the same predicates are asserted both ways in one run: "ours" after
#     enable, "the kernel's own" before it and after disable, and the
#     leftover finder names every path of ours (the rule and our ena.ko
#     included) while the package is installed and opted in;
#   - the control at the end: a deb whose prerm and postrm leave the
#     modprobe rule and the setting in place (tests/mutants/pkg_lifecycle/
#     deb_keeps_rule.sh) is installed and purged, and the same leftover
#     check must find the rule.  (DKMS builds nothing for it: the kernel's
#     build link is moved aside while it is installed.)
# Disruptive (runs only with TAILFIX_DISRUPTIVE=1, require_disruptive):
# installs and purges a package, loads and unloads modules, rebuilds the
# initramfs; the one-boot run purges the package and puts back every module
# it unloaded on exit.  Skips on a host where the package or any module of
# ours is present, where ena is loaded or an ENA device is in use.  The boot
# mode leaves its step's changes for the next boot by design, so it runs
# only in a guest of tests/vm (tailfix.run= on the kernel command line).
. "$(dirname "$0")/lib.sh"
require_root
require_disruptive "installs and purges the package, loads and unloads modules, rebuilds the initramfs"
require_cmd apt-get dpkg-query dpkg-deb dkms modprobe modinfo
NAME=ena-tcp-tailfix
PKG=$NAME-dkms
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
[ -n "$VER" ] || fail "no PACKAGE_VERSION in $TAILFIX_ROOT/dkms.conf"
KREL=$(uname -r)
DEB=${PKG_LIFECYCLE_DEB:-$TAILFIX_ROOT/debs/${PKG}_${VER}_all.deb}
RULE=/etc/modprobe.d/$NAME-ena.conf
CONF=/etc/$NAME.conf
INITRD=/boot/initrd.img-$KREL

[ -f "$DEB" ] || skip "no $DEB (a guest disk staged with TAILFIX_STAGE_DEB=1 has it)"
# ours_left: every path of ours on this host, one a line.
ours_left() {
	find /lib/modules/*/updates /lib/modules/*/extra \( -name 'tsq_probe.ko*' \
		-o -name 'tcp_dctcp_fixed.ko*' -o -name 'ena.ko*' \) 2>/dev/null
	ls -d /usr/src/$NAME-* /var/lib/dkms/$NAME $CONF /etc/modprobe.d/$NAME*.conf \
		/usr/lib/$NAME /usr/sbin/$NAME /usr/sbin/tsq-probe-stat /usr/share/doc/$PKG \
		/usr/share/initramfs-tools/hooks/$NAME 2>/dev/null
}
BOOT=${PKG_BOOT:-}
case $BOOT in "" | [1-6]) ;; *) fail "PKG_BOOT=$BOOT: 1 to 6 (tests/vm/reboots.sh)" ;; esac
[ -z "$BOOT" ] || grep -qw 'tailfix\.run=[^ ]*' /proc/cmdline ||
	skip "PKG_BOOT=$BOOT outside a tests/vm guest: the boot mode leaves its changes for the next boot"
# (the later boots of the boot mode find it installed by boot 1)
if [ "${BOOT:-1}" = 1 ]; then
	st=$(dpkg-query -W -f '${Status}' "$PKG" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = "unknown ok not-installed" ] || skip "$PKG is on this host already ($st)"
	left=$(ours_left)
	[ -z "$left" ] || skip "not a host without the package: $(echo $left)"
	for m in tsq_probe tcp_dctcp_fixed ena; do
		module_loaded "$m" && skip "$m is loaded here already: not unloading it"
	done
fi
ena_in_use && skip "ENA device in use here ($ENA_IN_USE): not touching its driver"
INTREE=$(ls /lib/modules/"$KREL"/kernel/drivers/net/ethernet/amazon/ena/ena.ko* 2>/dev/null | head -1)
[ -n "$INTREE" ] || skip "$KREL has no ena module of its own"
[ -e "/lib/modules/$KREL/build" ] || skip "no headers for $KREL (/lib/modules/$KREL/build): DKMS would build nothing"

dmesg_mark
TMP=$(mktemp -d)
on_exit "rm -rf '$TMP'"
for m in tsq_probe tcp_dctcp_fixed ena; do
	module_return_on_exit "$m"
done
# Whatever happens, the package goes (a purge of a half-installed one too),
# except between the boots of the boot mode, where the next boot needs it.
[ -n "$BOOT" ] ||
	on_exit "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $PKG; rm -f $RULE $CONF"

apt_q() { DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get -y -q -o Dpkg::Use-Pty=0 "$@"; }
# step NAME cmd...: run a step of the lifecycle, its output in
# $TMP/NAME.log (and in the directory PKG_LIFECYCLE_LOGS, if set), its
# time logged; its exit status returned.
step() {
	local n=$1 t0=$SECONDS rc
	shift
	"$@" >"$TMP/$n.log" 2>&1
	rc=$?
	[ -z "${PKG_LIFECYCLE_LOGS:-}" ] || cp "$TMP/$n.log" "$PKG_LIFECYCLE_LOGS/pkg_lifecycle-$n.log"
	log "$n: '$*' exited $rc after $((SECONDS - t0)) s"
	grep -E 'ena-tcp-tailfix|[Ee]rror|DKMS|dkms|Building|[Ss]kipped|initramfs|refused' "$TMP/$n.log" |
		grep -v '^ *$' | tail -30 | sed 's/^/  /' | while IFS= read -r l; do log "$l"; done
	return "$rc"
}

# resolved MOD: the module file modprobe itself loads for MOD (its install
# rule aside), or nothing.
resolved() {
	modprobe --ignore-install --show-depends "$1" 2>/dev/null |
		sed -n "s,^insmod \([^ ]*/$1\.ko[^ ]*\).*,\1,p" | tail -1
}
# dkms_file MOD: the one file of MOD that DKMS installed for this kernel
# (under updates/ on Debian, extra/ on the Red Hat family), or nothing.
dkms_file() {
	local f
	f=$(find "/lib/modules/$KREL/updates" "/lib/modules/$KREL/extra" -name "$1.ko*" 2>/dev/null)
	[ "$(printf '%s\n' "$f" | grep -c .)" -eq 1 ] && echo "$f"
}
# resolves_to_dkms MOD: modprobe resolves MOD to the file DKMS installed.
resolves_to_dkms() {
	local r f
	r=$(resolved "$1") f=$(dkms_file "$1")
	log "$1: modprobe resolves to '${r:-none}', DKMS's file '${f:-none}'"
	[ -n "$f" ] && [ "$r" = "$f" ]
}
# loads_file MOD FILE: modprobe MOD loads FILE (the loaded module's
# srcversion is FILE's, our version, the out-of-tree taint); unloaded after.
loads_file() {
	local sv fsv v rc=1
	modprobe "$1" || { log "modprobe $1 failed"; return 1; }
	sv=$(cat "/sys/module/$1/srcversion" 2>/dev/null)
	fsv=$(modinfo -F srcversion "$2" 2>/dev/null)
	v=$(cat "/sys/module/$1/version" 2>/dev/null)
	log "$1 loaded: srcversion '$sv' version '$v' taint '$(cat "/sys/module/$1/taint" 2>/dev/null)'; $2: srcversion '$fsv'"
	[ -n "$sv" ] && [ "$sv" = "$fsv" ] && [[ $v == *"$VER" ]] && grep -q O "/sys/module/$1/taint" && rc=0
	modprobe -r "$1" || { log "modprobe -r $1 failed"; rc=1; }
	return "$rc"
}
# ena_intree_resolved: modprobe's ena (no install rule in the way) is the
# kernel's own file.
ena_intree_resolved() {
	local r
	r=$(modprobe --show-depends ena 2>/dev/null | tail -1)
	log "ena: modprobe --show-depends: '$r'"
	[[ $r == "insmod $INTREE"* ]]
}
# ena_loads_intree: `modprobe ena` (with whatever rule is in place) loads
# the kernel's own ena: no out-of-tree taint, not our version; unloaded
# after.
ena_loads_intree() {
	local v t rc=1
	modprobe ena || { log "modprobe ena failed"; return 1; }
	v=$(cat /sys/module/ena/version 2>/dev/null) t=$(cat /sys/module/ena/taint 2>/dev/null)
	log "ena loaded: version '${v:-none}' taint '$t'"
	[[ $t != *O* ]] && [[ $v != *-tailfix* ]] && rc=0
	modprobe -r ena || { log "modprobe -r ena failed"; rc=1; }
	return "$rc"
}
# initrd_ena WHAT: WHAT (ours or intree) is the ena.ko the initramfs's
# modules.dep resolves, and the rule is in the initramfs exactly when WHAT
# is ours.  An initramfs without any ena.ko (MODULES=dep) passes for
# intree only.
initrd_ena() {
	local d=$TMP/initrd m ko rel sv fsv rule=0
	rm -rf "$d"
	unmkinitramfs "$INITRD" "$d" 2>/dev/null || { log "unmkinitramfs $INITRD failed"; return 1; }
	m=$(find "$d" -type d -path "*/lib/modules/$KREL" | head -1)
	[ -n "$m" ] || { log "no lib/modules/$KREL in $INITRD"; return 1; }
	find "$d" -path "*/etc/modprobe.d/$NAME-ena.conf" | grep -q . && rule=1
	rel=$(sed -n 's,^\([^:]*/ena\.ko[^:]*\):.*,\1,p' "$m/modules.dep" | head -1)
	log "initramfs $INITRD: ena resolves to '${rel:-none}', $NAME-ena.conf $([ "$rule" = 1 ] && echo present || echo absent)"
	if [ -z "$rel" ]; then
		[ "$1" = intree ] && [ "$rule" = 0 ]
		return
	fi
	ko=$m/$rel
	case $1 in
	ours)
		fsv=$(modinfo -F srcversion "$(dkms_file ena)" 2>/dev/null)
		sv=$(modinfo -F srcversion "$ko" 2>/dev/null)
		[[ $rel == updates/* || $rel == extra/* ]] && [ -n "$sv" ] && [ "$sv" = "$fsv" ] && [ "$rule" = 1 ]
		;;
	intree)
		[ "/lib/modules/$KREL/$rel" = "$INTREE" ] && [ "$rule" = 0 ] &&
			! modinfo -F version "$ko" 2>/dev/null | grep -q -- -tailfix
		;;
	esac
}
# left_has PATTERN: ours_left lists a path matching the extended regex.
left_has() { ours_left | grep -qE -- "$1"; }

initrd_has_ena=0
if [ -f "$INITRD" ] && command -v unmkinitramfs >/dev/null; then
	lsinitramfs "$INITRD" 2>/dev/null | grep -q '/ena\.ko' && initrd_has_ena=1
	log "the initramfs $INITRD $([ "$initrd_has_ena" = 1 ] && echo carries || echo 'does not carry') ena.ko"
else
	log "no initramfs $INITRD (or no unmkinitramfs): the initramfs is not judged"
	INITRD=
fi

# ---- the boot mode (PKG_BOOT=N, tests/vm/reboots.sh): one step per boot
# booted_ena WHAT: the ena that the initramfs loaded at this boot (it is in
# its conf/modules since boot 1, standing in for the udev load an ENA
# device would cause) is WHAT: ours (the file DKMS installed, our version,
# out-of-tree) or intree (the kernel's own file, no out-of-tree taint).
booted_ena() {
	local sv v t fsv
	module_loaded ena || { log "no ena was loaded at boot"; return 1; }
	sv=$(cat /sys/module/ena/srcversion 2>/dev/null) v=$(cat /sys/module/ena/version 2>/dev/null)
	t=$(cat /sys/module/ena/taint 2>/dev/null)
	case $1 in
	ours) fsv=$(modinfo -F srcversion "$(dkms_file ena)" 2>/dev/null) ;;
	intree) fsv=$(modinfo -F srcversion "$INTREE" 2>/dev/null) ;;
	esac
	log "ena loaded at boot: srcversion '$sv' version '$v' taint '$t'; the $1 file's srcversion '$fsv'"
	# (an in-tree module has a srcversion only with CONFIG_MODULE_SRCVERSION_ALL,
	# which Debian's kernels do not set: both are empty then)
	[ "$sv" = "$fsv" ] || return 1
	case $1 in
	ours) [ -n "$sv" ] && [[ $v == *"-tailfix$VER" ]] && [[ $t == *O* ]] ;;
	intree) [[ $v != *-tailfix* ]] && [[ $t != *O* ]] ;;
	esac
}
# modules_load WHEN: tsq_probe and tcp_dctcp_fixed load from DKMS's files.
modules_load() {
	local m
	for m in tsq_probe tcp_dctcp_fixed; do
		check "$1: $m loads the file DKMS installed for $KREL" loads_file "$m" "$(dkms_file "$m")"
	done
}
if [ -n "$BOOT" ]; then
	log "boot $BOOT of tests/vm/reboots.sh's sequence, kernel $KREL"
	case $BOOT in
	1)
		check "boot 1: nothing of ours on the disk" [ -z "$(ours_left)" ]
		echo ena >>/etc/initramfs-tools/modules
		step initramfs update-initramfs -u -k "$KREL"
		check "boot 1: $KREL's initramfs rebuilt to load ena at boot" [ $? -eq 0 ]
		cp "$DEB" "$TMP/"
		step install apt_q install --no-install-recommends "$TMP/${DEB##*/}"
		check "boot 1: apt-get install ./${DEB##*/} succeeded" [ $? -eq 0 ]
		check "boot 1: DKMS installed the package for $KREL" \
			grep -q ': installed' <<<"$(dkms status "$NAME/$VER" -k "$KREL" 2>&1)"
		check "boot 1: no ena.ko of ours, no modprobe rule (no opt-in)" \
			bash -c "[ -z '$(dkms_file ena)' ] && [ ! -e '$RULE' ]"
		;;
	2)
		check "boot 2 (after the install): the ena loaded at boot is the kernel's own" booted_ena intree
		modules_load "boot 2"
		step enable ena-tcp-tailfix ena enable
		check "boot 2: ena-tcp-tailfix ena enable succeeded" [ $? -eq 0 ]
		;;
	3)
		check "boot 3 (after the opt-in): the ena loaded at boot is ours" booted_ena ours
		check "boot 3: (the control) the predicate of boots 2 and 4 fails here" fails booted_ena intree
		modules_load "boot 3"
		step disable ena-tcp-tailfix ena disable
		check "boot 3: ena-tcp-tailfix ena disable succeeded" [ $? -eq 0 ]
		;;
	4)
		check "boot 4 (after the opt-out): the ena loaded at boot is the kernel's own again" booted_ena intree
		hdr=$(ls /opt/tailfix/debs/upgrade/linux-headers-*.deb 2>/dev/null | head -1)
		up=$(basename "${hdr:-none}" | sed -n 's/^linux-headers-\([^_]*\)_.*/\1/p')
		[ -n "$up" ] || fail "no linux-headers .deb in /opt/tailfix/debs/upgrade (stage.sh TAILFIX_STAGE_UPGRADE)"
		step upgrade apt_q install --no-install-recommends "$hdr"
		check "boot 4: the kernel upgrade (apt-get install of $up's headers) succeeded" [ $? -eq 0 ]
		check "boot 4: DKMS installed the package for $up from the headers' hook" \
			grep -q ': installed' <<<"$(dkms status "$NAME/$VER" -k "$up" 2>&1)"
		# $up's image is on the disk already (stage.sh): its initramfs is
		# built here, as the image package's postinst would build it.
		step initramfs-up update-initramfs -u -k "$up"
		check "boot 4: $up's initramfs rebuilt (ena in it, as at boot 1)" [ $? -eq 0 ]
		check "boot 4: $up has an initramfs" [ -s "/boot/initrd.img-$up" ]
		;;
	5)
		check "boot 5 (the upgraded kernel): the ena loaded at boot is the kernel's own" booted_ena intree
		modules_load "boot 5"
		step purge apt_q purge "$PKG"
		check "boot 5: apt-get purge $PKG succeeded" [ $? -eq 0 ]
		;;
	6)
		left=$(ours_left)
		[ -z "$left" ] || log "left after the purge: $(echo $left)"
		check "boot 6 (after the purge): nothing of ours is left" [ -z "$left" ]
		check "boot 6: the ena loaded at boot is the kernel's own" booted_ena intree
		check "boot 6: modprobe finds no tsq_probe" bash -c '! modprobe --show-depends tsq_probe >/dev/null 2>&1'
		;;
	esac
	check "no bad kernel-log line" dmesg_clean
	ksft_finish
fi

# ---- 1. install
log "the 'reboots' below are module unloads and fresh modprobes, not boots (see the header)"
check "before the install, modprobe ena resolves to the kernel's own ($INTREE)" ena_intree_resolved
cp "$DEB" "$TMP/"
step install apt_q install --no-install-recommends "$TMP/${DEB##*/}"
check "apt-get install ./${DEB##*/} succeeded" [ $? -eq 0 ]
st=$(dkms status "$NAME/$VER" -k "$KREL" 2>&1)
log "dkms status: $st"
check "DKMS built and installed the package for $KREL during the apt run" grep -q ': installed' <<<"$st"
for m in tsq_probe tcp_dctcp_fixed; do
	check "install: modprobe resolves $m to the file DKMS installed" resolves_to_dkms "$m"
	check "install: modprobe $m loads that file (its srcversion, version $VER, out-of-tree)" \
		loads_file "$m" "$(dkms_file "$m")"
done
check "install: no ena.ko of ours is installed (no opt-in)" [ -z "$(dkms_file ena)" ]
check "install: no modprobe rule for ena ($RULE)" [ ! -e "$RULE" ]
check "install: modprobe ena still resolves to the kernel's own" ena_intree_resolved
check "install: modprobe ena loads the kernel's own" ena_loads_intree
ml=$(ls /var/lib/dkms/$NAME/"$VER"/"$KREL"/*/log/make.log 2>/dev/null | head -1)
[ -n "$ml" ] && grep -i 'ena' "$ml" | tail -3 | while IFS= read -r l; do log "make.log: $l"; done

# ---- 2. opt in
step enable ena-tcp-tailfix ena enable
check "ena-tcp-tailfix ena enable succeeded" [ $? -eq 0 ]
check "enable: $CONF says ENA_DRIVER=tailfix" grep -qx 'ENA_DRIVER=tailfix' "$CONF"
check "enable: the modprobe rule sends ena through ena-load" \
	grep -qx 'install ena /usr/lib/ena-tcp-tailfix/ena-load $CMDLINE_OPTS' "$RULE"
check "enable: modprobe resolves ena to our ena.ko that DKMS installed" resolves_to_dkms ena
check "enable: modprobe ena loads ours (its srcversion, -tailfix$VER, out-of-tree)" loads_file ena "$(dkms_file ena)"
check "enable: modprobe ena no longer loads the kernel's own (the predicate of steps 1 and 3 fails here)" \
	bash -c "! modprobe --show-depends ena | tail -1 | grep -q '^insmod $INTREE'"
for m in tsq_probe tcp_dctcp_fixed; do
	check "enable: $m is still installed and loads" loads_file "$m" "$(dkms_file "$m")"
done
if [ -n "$INITRD" ] && [ "$initrd_has_ena" = 1 ]; then
	check "enable: the initramfs resolves ena to ours and carries the rule" initrd_ena ours
fi
# the leftover finder sees each kind of path of ours while they are there
for p in "/lib/modules/$KREL/updates/.*/tsq_probe\.ko" "/lib/modules/$KREL/updates/.*/tcp_dctcp_fixed\.ko" \
	"/lib/modules/$KREL/updates/.*/ena\.ko" "^/usr/src/$NAME-$VER\$" "^/var/lib/dkms/$NAME\$" "^$CONF\$" \
	"^$RULE\$" "^/usr/lib/$NAME\$" "^/usr/sbin/$NAME\$"; do
	check "control: the leftover check finds $p while installed" left_has "$p"
done

# ---- 3. opt out
step disable ena-tcp-tailfix ena disable
check "ena-tcp-tailfix ena disable succeeded" [ $? -eq 0 ]
check "disable: the modprobe rule is gone" [ ! -e "$RULE" ]
check "disable: $CONF says ENA_DRIVER=in-tree" grep -qx 'ENA_DRIVER=in-tree' "$CONF"
check "disable: our ena.ko is gone" [ -z "$(dkms_file ena)" ]
check "disable: modprobe ena resolves to the kernel's own again" ena_intree_resolved
check "disable: modprobe ena loads the kernel's own" ena_loads_intree
for m in tsq_probe tcp_dctcp_fixed; do
	check "disable: $m is still installed and loads" loads_file "$m" "$(dkms_file "$m")"
done
if [ -n "$INITRD" ]; then
	check "disable: the initramfs resolves ena to the kernel's own, without the rule" initrd_ena intree
fi

# ---- 4. purge
step purge apt_q purge "$PKG"
check "apt-get purge $PKG succeeded" [ $? -eq 0 ]
left=$(ours_left)
[ -z "$left" ] || log "left after purge: $(echo $left)"
check "purge: nothing of ours is left" [ -z "$left" ]
st=$(dpkg-query -W -f '${Status}' "$PKG" 2>/dev/null)
check "purge: dpkg knows nothing of $PKG ('$st')" \
	bash -c "[ -z '$st' ] || [ '$st' = 'unknown ok not-installed' ]"
check "purge: modprobe ena resolves to the kernel's own" ena_intree_resolved
check "purge: modprobe ena loads the kernel's own" ena_loads_intree
check "purge: modprobe finds no tsq_probe any more" bash -c '! modprobe --show-depends tsq_probe >/dev/null 2>&1'
if [ -n "$INITRD" ]; then
	check "purge: the initramfs resolves ena to the kernel's own, without the rule" initrd_ena intree
fi

# ---- control: a deb whose maintainer scripts leave the rule
MUT=$TMP/mutant.deb
if "$TESTS_DIR/mutants/pkg_lifecycle/deb_keeps_rule.sh" "$DEB" "$MUT" >"$TMP/mutant.log" 2>&1; then
	echo ENA_DRIVER=tailfix >"$CONF"
	mv "/lib/modules/$KREL/build" "$TMP/build.aside"
	on_exit "[ -e '$TMP/build.aside' ] && mv '$TMP/build.aside' '/lib/modules/$KREL/build'"
	step mutant-install apt_q install --no-install-recommends "$MUT"
	mrc=$?
	mv "$TMP/build.aside" "/lib/modules/$KREL/build"
	step mutant-purge apt_q purge "$PKG"
	prc=$?
	check "control: the mutant deb installed (postinst wrote the rule) and purged ($mrc, $prc)" \
		bash -c "[ $mrc -eq 0 ] && [ $prc -eq 0 ]"
	left=$(ours_left)
	log "left after the mutant's purge: $(echo $left)"
	check "control: after the mutant deb's purge, the leftover check finds the rule" left_has "^$RULE\$"
	rm -f "$RULE" "$CONF"
	check "control: with those removed by hand nothing is left" [ -z "$(ours_left)" ]
else
	sed 's/^/# /' "$TMP/mutant.log"
	check "control: the mutant deb was made" false
fi

check "no bad kernel-log line" dmesg_clean
ksft_finish
