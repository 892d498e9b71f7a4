#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make deb and make rpm (scripts/package.sh) build packages of the DKMS
# source that DKMS can use, named and versioned after dkms.conf:
#   deb: file name, Package and Version from dkms.conf; Depends on dkms;
#        lintian has no E: or W: line; a real `dkms add` + `dkms build` (a
#        private DKMS tree, no signing, ena left out for time) of the tree
#        it installs in /usr/src builds tsq_probe and tcp_dctcp_fixed;
#   rpm: file name, Name and Version; Requires dkms; %post registers,
#        builds and installs (run against a fake dkms: a kernel that fails
#        is reported and skipped, the scriptlet succeeds); %preun runs
#        `dkms remove NAME/VERSION --all --rpm_safe_upgrade` and succeeds
#        when it fails;
#   both: /usr/src/ena-tcp-tailfix-VERSION/ holds dkms.conf, the sources of
#        the three modules, exactly the files of scripts/source-files.sh
#        (what `make install` copies) with the scripts DKMS runs executable,
#        no *.ko and nothing of git; tsq-probe-stat in /usr/sbin; the
#        modprobe.d file in /etc is all comments and lists every module
#        parameter of the sources with the default its README gives; the
#        modules-load.d and sysctl.d examples are under /usr/share/doc.
# Then each check is shown to fail: mutants of the built deb (unpacked,
# changed, packed again: a planted .ko, a .git directory, another version,
# no dkms in Depends, a missing source, no tsq-probe-stat, no dkms.conf, a
# script that lost its x bit, an active modprobe.d line, no copyright file
# for lintian, no build-modules.sh for dkms build), mutants of the
# modprobe.d file, and rpms built from copies of the checkout (not a git
# tree: the other way source-files.sh makes its list) with .ko files and a
# .git planted (which must stay out) and: a %preun without
# --rpm_safe_upgrade; a source-files.sh that lets build products through
# and a %post that fails with the first kernel; another dkms.conf version.

. "$(dirname "$0")/../lib.sh"

NAME=ena-tcp-tailfix
PKG=$NAME-dkms
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
[ -n "$VER" ] || fail "no PACKAGE_VERSION in dkms.conf"
SRC=/usr/src/$NAME-$VER

TOOLS="dpkg-buildpackage dh_dkms lintian rpmbuild rpm dpkg-deb dkms make"
missing_tools() {
	local t
	for t in $TOOLS; do
		command -v "$t" >/dev/null 2>&1 || printf '%s ' "$t"
	done
}
TMP=$(mktemp -d)
on_exit rm -rf "$TMP"
missing=$(missing_tools)
if [ -n "$missing" ]; then
	log "missing: $missing: scripts/deps.sh pkg"
	"$TAILFIX_ROOT/scripts/deps.sh" pkg >"$TMP/deps.log" 2>&1 ||
		skip "packaging tools missing ($missing) and scripts/deps.sh pkg could not install them: $(tail -1 "$TMP/deps.log")"
	missing=$(missing_tools)
	[ -z "$missing" ] || skip "still missing after scripts/deps.sh pkg: $missing"
fi
start=$SECONDS

# ---- the checks: each takes what it judges as arguments ----------------------

# listing PKGFILE: "MODE PATH" per file and directory of a .deb or an .rpm.
listing() {
	case $1 in
	*.deb) dpkg-deb -c "$1" | awk '{ p = $6; sub(/^\./, "", p); sub(/\/$/, "", p); if (p != "") print $1, p }' ;;
	*.rpm) rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" ;;
	esac
}
paths() { awk '{ print $2 }' "$1"; }

# The deb's or the rpm's file name, name and version are dkms.conf's.
deb_named() {
	local f=$1 ok=0 got

	[ "${f##*/}" = "${PKG}_${VER}_all.deb" ] || { log "file name ${f##*/}, not ${PKG}_${VER}_all.deb"; ok=1; }
	got=$(dpkg-deb -f "$f" Package Version Architecture | tr '\n' ' ')
	[ "$got" = "Package: $PKG Version: $VER Architecture: all " ] || { log "control: $got"; ok=1; }
	return $ok
}
rpm_named() {
	local f=$1 ok=0 got

	[[ ${f##*/} == "$PKG-$VER"-[0-9]*.noarch.rpm ]] || { log "file name ${f##*/}, not $PKG-$VER-RELEASE.noarch.rpm"; ok=1; }
	got=$(rpm -qp --qf '%{NAME} %{VERSION} %{ARCH}' "$f" 2>/dev/null)
	[ "$got" = "$PKG $VER noarch" ] || { log "header: $got"; ok=1; }
	return $ok
}

has_dkms_conf() { paths "$1" | grep -qx "$SRC/dkms.conf" || { log "no $SRC/dkms.conf"; return 1; }; }

# What DKMS builds each module from, and what the build runs.
MODULE_FILES="tsq_probe/Kbuild tsq_probe/tsq_probe.h tsq_probe/tsq_main.c tsq_probe/tsq_stats.c
tsq_probe/tsq_hist.c tsq_probe/tsq_clocks.c tsq_probe/tsq_stall.c tsq_probe/tsq_check.c
tsq_probe/tsq_hooks.c tcp_dctcp_fixed/tcp_dctcp_fixed.c
tcp_dctcp_fixed/Kbuild ena/Makefile ena/ena.kbuild ena/prepare-source.sh ena/patches/6.1/series
ena/patches/6.12/series Makefile scripts/build-modules.sh scripts/dkms-post-install.sh"
has_module_sources() {
	local f ok=0

	for f in $MODULE_FILES; do
		paths "$1" | grep -qx "$SRC/$f" || { log "no $SRC/$f"; ok=1; }
	done
	return $ok
}

# The files under $SRC are exactly those `make install` copies.
same_files_as_install() {
	diff <("$TAILFIX_ROOT/scripts/source-files.sh" "$TAILFIX_ROOT" | tr '\0' '\n' | sort) \
		<(awk -v s="$SRC/" '$1 ~ /^-/ && index($2, s) == 1 { print substr($2, length(s) + 1) }' "$1" | sort) \
		>"$TMP/diff" && return 0
	sed 's/^/# source-files.sh vs package: /' "$TMP/diff" | head -20
	return 1
}

no_ko() {
	local bad

	bad=$(paths "$1" | grep -E '\.(ko|o|mod\.c)(\.(xz|gz|zst))?$')
	[ -z "$bad" ] || { log "built objects: ${bad//$'\n'/ }"; return 1; }
}

no_git() {
	local bad

	bad=$(paths "$1" | grep -E '/\.git(/|$|ignore$|attributes$|modules$)')
	[ -z "$bad" ] || { log "git files: ${bad//$'\n'/ }"; return 1; }
}

has_tsq_probe_stat() {
	grep -qE '^-..x.* /usr/sbin/tsq-probe-stat$' "$1" || { log "no executable /usr/sbin/tsq-probe-stat"; return 1; }
}

# The operator's tools: the CLI, its man page, and the modprobe rule's target.
# The rule itself (etc/modprobe.d/ena-tcp-tailfix-ena.conf) is written only by
# `ena-tcp-tailfix ena enable`: a package that ships it swaps the NIC driver
# unasked.
has_operator_tools() {
	local ok=0

	grep -qE '^-..x.* /usr/sbin/ena-tcp-tailfix$' "$1" || { log "no executable /usr/sbin/ena-tcp-tailfix"; ok=1; }
	grep -qE '^-..x.* /usr/lib/ena-tcp-tailfix/ena-load$' "$1" ||
		{ log "no executable /usr/lib/ena-tcp-tailfix/ena-load"; ok=1; }
	grep -qE ' /usr/share/man/man8/ena-tcp-tailfix\.8(\.gz)?$' "$1" || { log "no ena-tcp-tailfix(8) man page"; ok=1; }
	! grep -q ' /etc/modprobe.d/ena-tcp-tailfix-ena.conf$' "$1" ||
		{ log "the package ships the ena modprobe rule: ena swapped unasked"; ok=1; }
	return $ok
}

# deb_maint_rule DEB: the maintainer scripts, run with /etc under a scratch
# root, write the ena rule only where the operator opted in, keep it over an
# upgrade, and remove it (and, on purge, the opt-in) with the package.
deb_maint_rule() {
	local d=$TMP/maint r ok=0 rule conf

	rm -rf "$d" && mkdir -p "$d/ctl" "$d/root/etc/modprobe.d" "$d/bin"
	dpkg-deb -e "$1" "$d/ctl" || return 1
	for r in postinst prerm postrm; do
		[ -f "$d/ctl/$r" ] || { log "no $r in the deb"; return 1; }
		# dkms and dpkg-query are not this check's business.
		sed -e "s|/etc/|$d/root/etc/|g" -e 's|^#DEBHELPER#$||' \
		    -e '/^# Automatically added by dh_dkms/,/^# End automatically added section/d' \
		    "$d/ctl/$r" >"$d/$r"
	done
	printf '#!/bin/sh\nexit 0\n' >"$d/bin/dkms" && cp "$d/bin/dkms" "$d/bin/dpkg-query" && chmod +x "$d/bin/"*
	rule=$d/root/etc/modprobe.d/ena-tcp-tailfix-ena.conf
	conf=$d/root/etc/ena-tcp-tailfix.conf
	PATH=$d/bin:$PATH sh "$d/postinst" configure >/dev/null 2>&1 || { log "postinst configure failed"; ok=1; }
	[ ! -e "$rule" ] || { log "postinst wrote the ena rule without the opt-in"; ok=1; }
	echo ENA_DRIVER=tailfix >"$conf"
	PATH=$d/bin:$PATH sh "$d/postinst" configure >/dev/null 2>&1 || { log "postinst configure (opted in) failed"; ok=1; }
	grep -qx 'install ena /usr/lib/ena-tcp-tailfix/ena-load $CMDLINE_OPTS' "$rule" 2>/dev/null ||
		{ log "postinst did not restore the opted-in ena rule"; ok=1; }
	PATH=$d/bin:$PATH sh "$d/prerm" upgrade >/dev/null 2>&1 || { log "prerm upgrade failed"; ok=1; }
	[ -e "$rule" ] || { log "prerm upgrade removed the ena rule"; ok=1; }
	PATH=$d/bin:$PATH sh "$d/prerm" remove >/dev/null 2>&1 || { log "prerm remove failed"; ok=1; }
	[ ! -e "$rule" ] || { log "prerm remove left the ena rule naming a removed ena-load"; ok=1; }
	[ -e "$conf" ] || { log "remove took the operator's opt-in"; ok=1; }
	PATH=$d/bin:$PATH sh "$d/postrm" purge >/dev/null 2>&1 || { log "postrm purge failed"; ok=1; }
	[ ! -e "$conf" ] || { log "purge left $conf"; ok=1; }
	return $ok
}

# dkms.conf runs these by path: a lost x bit breaks every build.
EXEC_FILES="scripts/build-modules.sh scripts/dkms-post-install.sh ena/prepare-source.sh"
scripts_executable() {
	local f ok=0

	for f in $EXEC_FILES; do
		grep -qE "^-..x.* $SRC/$f\$" "$1" || { log "$SRC/$f is not an executable file"; ok=1; }
	done
	return $ok
}

# The operator's files: one in /etc (modprobe.d), the examples under doc.
optional_files_placed() {
	local f ok=0 doc=/usr/share/doc/$PKG/examples

	for f in /etc/modprobe.d/$NAME.conf $doc/modules-load.d/$NAME.conf $doc/sysctl.d/60-$NAME.conf; do
		paths "$1" | grep -qx "$f" || { log "no $f"; ok=1; }
	done
	f=$(paths "$1" | grep -E '^/etc/(modules-load|sysctl)\.d/')
	[ -z "$f" ] || { log "active at boot: ${f//$'\n'/ }"; ok=1; }
	return $ok
}

# all_comments FILE: every line is blank or a comment.
all_comments() {
	local bad

	bad=$(grep -nvE '^[[:space:]]*(#|$)' "$1")
	[ -z "$bad" ] || { log "${1##*/}: active line(s): ${bad//$'\n'/ }"; return 1; }
}

# readme_default README PARAM: the "default" column of the Parameters table.
readme_default() {
	awk -F'|' -v p="$2" '
	/^## / { on = ($0 ~ /^## Parameters/); col = 0; next }
	on && /^\|/ && !col {
		for (i = 2; i < NF; i++) { h = $i; gsub(/[ `]/, "", h); if (h == "default") col = i }
		next
	}
	on && col { n = $2; gsub(/[ `]/, "", n); if (n == p) { v = $col; gsub(/[ `]/, "", v); print v; exit } }' "$1"
}

# modprobe_lists_params CONF SRCDIR: a "#options MODULE NAME=DEFAULT" line
# for every module parameter of the sources (ena: parameters its patches
# add), DEFAULT as the module's README says, and no other.
modprobe_lists_params() {
	local conf=$1 src=$2 m p def want=" " x ok=0

	for m in tsq_probe tcp_dctcp_fixed ena; do
		if [ "$m" = ena ]; then
			p=$(grep -hE '^\+.*module_param' "$src"/ena/patches/*/*.patch)
		else
			p=$(grep -ohE 'module_param(_cb|_named)?\([a-z0-9_]+' "$src/$m/"*.c | sed 's/.*(//')
		fi
		[ "$m" != ena ] || [ -z "$p" ] || { log "ena patches add parameters: $p"; ok=1; continue; }
		for p in $p; do
			want="$want$m.$p "
			def=$(readme_default "$src/$m/README.md" "$p")
			[ -n "$def" ] || { log "$m.$p: no default in $m/README.md"; ok=1; continue; }
			grep -qx "#options $m $p=$def" "$conf" ||
				{ log "$m.$p: no line '#options $m $p=$def' in ${conf##*/}"; ok=1; }
		done
	done
	for x in $(sed -n 's/^#options \([^ ]*\) \([^=]*\)=.*/\1.\2/p' "$conf"); do
		[[ $want == *" $x "* ]] || { log "$x in ${conf##*/} is no parameter of the sources"; ok=1; }
	done
	[ "$want" != " " ] || { log "no module parameter found in the sources"; ok=1; }
	return $ok
}

# The examples do what they say: tsq_probe in modules-load.d; dctcp_fixed
# added to the allowed list in sysctl.d, commented out like all of it.
examples_say_it() {
	local ex=$1/usr/share/doc/$PKG/examples ok=0

	grep -qx tsq_probe "$ex/modules-load.d/$NAME.conf" || { log "modules-load.d example: no tsq_probe line"; ok=1; }
	grep -qE '^#net\.ipv4\.tcp_allowed_congestion_control = .*\bdctcp_fixed$' "$ex/sysctl.d/60-$NAME.conf" ||
		{ log "sysctl.d example: no commented allowed list with dctcp_fixed"; ok=1; }
	all_comments "$ex/sysctl.d/60-$NAME.conf" || ok=1
	return $ok
}

# lintian_clean DEB: lintian ran (exit 1 is its own failure) and found no
# error or warning: no E: or W: line, and not exit 2 (--fail-on).
lintian_clean() {
	local rc=0 bad

	lintian --fail-on error,warning "$1" >"$TMP/lintian.out" 2>&1 || rc=$?
	sed 's/^/# lintian: /' "$TMP/lintian.out" | grep -v 'running with root privileges' | head -20
	[ "$rc" -ne 1 ] || { log "lintian did not run (exit 1)"; return 1; }
	bad=$(grep -cE '^[EW]: ' "$TMP/lintian.out")
	[ "$bad" -eq 0 ] && [ "$rc" -eq 0 ] || { log "$bad E:/W: line(s), lintian exit $rc"; return 1; }
}

deb_depends_dkms() {
	local dep

	dep=$(dpkg-deb -f "$1" Depends)
	printf '%s\n' "$dep" | tr ',|' '\n\n' | grep -qE '^ *dkms( |\(|$)' ||
		{ log "Depends: $dep"; return 1; }
}

# The kernel for the DKMS build: one with headers, 6.1 first.
K=
for b in /lib/modules/6.1.*/build /lib/modules/*/build; do
	[ -f "$b/Makefile" ] || continue
	K=$(basename "$(dirname "$b")")
	break
done

# dkms_builds ROOT: `dkms add` and `dkms build` for $K of ROOT$SRC in a
# private tree (no signing key, ena left out with ENA_SRC at nothing): it
# succeeds and builds tsq_probe and tcp_dctcp_fixed.
dkms_builds() {
	local root=$1 d built
	local -a dk

	d=$(mktemp -d "$TMP/dkms.XXXXXX")
	mkdir -p "$d/tree" "$d/install/$K"
	dk=(env ENA_SRC="$d/no-ena-source" sign_file="$d/no-sign-file"
	    dkms --dkmstree "$d/tree" --sourcetree "$root/usr/src" --installtree "$d/install")
	if ! { "${dk[@]}" add "$NAME/$VER" && "${dk[@]}" build "$NAME/$VER" -k "$K"; } >"$d/log" 2>&1; then
		tail -5 "$d/log" | sed 's/^/# dkms: /'
		log "dkms add/build failed for $K"
		return 1
	fi
	built=$(ls "$d/tree/$NAME/$VER/$K/"*/module 2>/dev/null | sed 's/\.ko.*//' | sort | paste -sd' ' -)
	log "dkms build for $K: $built; $(grep -h "^$NAME: ena" "$d/tree/$NAME/$VER/$K/"*/log/make.log 2>/dev/null | cut -c1-60)"
	[ "$built" = "tcp_dctcp_fixed tsq_probe" ]
}

# The rpm's scriptlets, run as rpm would (sh) with a fake dkms first in
# PATH that logs its calls: "add" fails as on a reinstall, "build" fails for
# the first kernel with headers, "remove" fails.
fake_dkms() {
	mkdir -p "$TMP/fakebin"
	cat >"$TMP/fakebin/dkms" <<-EOF
	#!/bin/sh
	echo "\$*" >>"$TMP/fakebin/calls"
	case "\$*" in
	add\ *) exit 3 ;;
	build\ *"-k $1"*) exit 10 ;;
	remove\ *) exit 3 ;;
	esac
	exit 0
	EOF
	chmod +x "$TMP/fakebin/dkms"
	: >"$TMP/fakebin/calls"
}
KERNELS=$(for b in /lib/modules/*/build; do [ -e "$b" ] && basename "$(dirname "$b")"; done)
FIRST=$(echo "$KERNELS" | head -1)

# post_registers SCRIPT: the %post text runs dkms add, build and install.
post_registers() {
	local c

	for c in add build install; do
		grep -qE "^[^#]*dkms $c $NAME/$VER( |;|$)" "$1" ||
			{ log "%post: no dkms $c $NAME/$VER in: $(grep -v '^#' "$1" | grep dkms | paste -sd';' -)"; return 1; }
	done
}
rpm_post_registers() {
	rpm -qp --qf '%{POSTIN}' "$1" >"$TMP/post.txt" 2>/dev/null
	post_registers "$TMP/post.txt"
}

rpm_post_tolerates() {
	local k rc=0 ok=0

	fake_dkms "$FIRST"
	rpm -qp --qf '%{POSTIN}' "$1" >"$TMP/post.sh" 2>/dev/null
	PATH=$TMP/fakebin:$PATH sh "$TMP/post.sh" >"$TMP/post.out" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || { log "%post exit $rc with a failing kernel"; ok=1; }
	grep -q "$FIRST" "$TMP/post.out" || { log "%post did not say that $FIRST failed"; ok=1; }
	! grep -q "^install .*-k $FIRST\$" "$TMP/fakebin/calls" || { log "%post installed after a failed build"; ok=1; }
	for k in $KERNELS; do
		[ "$k" = "$FIRST" ] && continue
		grep -q "^install $NAME/$VER -k $k\$" "$TMP/fakebin/calls" ||
			{ log "%post did not go on to install for $k"; ok=1; }
	done
	[ $ok -eq 0 ] || sed 's/^/# dkms called: /' "$TMP/fakebin/calls"
	return $ok
}

rpm_preun_removes() {
	local s rc=0

	s=$(rpm -qp --qf '%{PREUN}' "$1" 2>/dev/null)
	printf '%s\n' "$s" | grep -qE "^[^#]*dkms remove $NAME/$VER( .*)? --all( .*)? --rpm_safe_upgrade|^[^#]*dkms remove $NAME/$VER( .*)? --rpm_safe_upgrade( .*)? --all" ||
		{ log "%preun: $(printf '%s\n' "$s" | grep -v '^#' | paste -sd';' -)"; return 1; }
	fake_dkms none
	printf '%s\n' "$s" >"$TMP/preun.sh"
	PATH=$TMP/fakebin:$PATH sh "$TMP/preun.sh" >/dev/null 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || { log "%preun exit $rc when dkms remove fails"; return 1; }
}

rpm_requires_dkms() {
	rpm -qpR "$1" 2>/dev/null | grep -qE '^dkms( |$)' || { log "Requires: $(rpm -qpR "$1" 2>/dev/null | paste -sd' ' -)"; return 1; }
}

# ---- the packages of this checkout --------------------------------------------

OUT=$TMP/out
"$TAILFIX_ROOT/scripts/package.sh" deb "$OUT" >"$TMP/deb.log" 2>&1 ||
	{ sed 's/^/# /' "$TMP/deb.log" | tail -30; fail "make deb failed"; }
DEB=$(tail -1 "$TMP/deb.log")
"$TAILFIX_ROOT/scripts/package.sh" rpm "$OUT" >"$TMP/rpm.log" 2>&1 ||
	{ sed 's/^/# /' "$TMP/rpm.log" | tail -30; fail "make rpm failed"; }
RPM=$(tail -1 "$TMP/rpm.log")
log "built ${DEB##*/} and ${RPM##*/} in $((SECONDS - start)) s"
[ -f "$DEB" ] && [ -f "$RPM" ] || fail "package.sh printed no package: $DEB $RPM"
listing "$DEB" >"$TMP/deb.list"
listing "$RPM" >"$TMP/rpm.list"
X=$TMP/deb-root
dpkg-deb -x "$DEB" "$X"

check "deb: file name, Package and Version are dkms.conf's ($PKG $VER)" deb_named "$DEB"
check "deb: Depends on dkms" deb_depends_dkms "$DEB"
check "deb: lintian has no E: or W: line" lintian_clean "$DEB"
check "deb: maintainer scripts write the ena rule only on the opt-in, remove it with the package" deb_maint_rule "$DEB"
for kind in deb rpm; do
	l=$TMP/$kind.list
	check "$kind: $SRC/dkms.conf" has_dkms_conf "$l"
	check "$kind: the sources of the three modules and the build's scripts" has_module_sources "$l"
	check "$kind: $SRC holds exactly the files of scripts/source-files.sh (make install)" same_files_as_install "$l"
	check "$kind: no built objects (*.ko, *.o)" no_ko "$l"
	check "$kind: nothing of git (.git, .gitignore)" no_git "$l"
	check "$kind: executable /usr/sbin/tsq-probe-stat" has_tsq_probe_stat "$l"
	check "$kind: the CLI, its man page and ena-load; no ena modprobe rule shipped" has_operator_tools "$l"
	check "$kind: the scripts dkms.conf runs are executable" scripts_executable "$l"
	check "$kind: modprobe.d in /etc, modules-load.d and sysctl.d examples under /usr/share/doc" optional_files_placed "$l"
done
check "the modprobe.d file is all comments (inactive)" all_comments "$X/etc/modprobe.d/$NAME.conf"
check "the modprobe.d file lists every module parameter with its README default" \
	modprobe_lists_params "$X/etc/modprobe.d/$NAME.conf" "$X$SRC"
check "the examples load tsq_probe and allow dctcp_fixed (commented out)" examples_say_it "$X"
if [ -n "$K" ]; then
	check "deb: dkms add + build of its $SRC builds tsq_probe and tcp_dctcp_fixed for $K" dkms_builds "$X"
else
	check_skip "deb: dkms add + build of its $SRC" "no kernel headers here"
fi
check "rpm: file name, Name and Version are dkms.conf's ($PKG $VER)" rpm_named "$RPM"
check "rpm: Requires dkms" rpm_requires_dkms "$RPM"
check "rpm: %post runs dkms add, build and install" rpm_post_registers "$RPM"
if [ -n "$FIRST" ]; then
	check "rpm: %post reports a kernel whose build fails, goes on, succeeds" rpm_post_tolerates "$RPM"
else
	check_skip "rpm: %post with a failing kernel" "no kernel headers here"
fi
check "rpm: %preun: dkms remove $NAME/$VER --all --rpm_safe_upgrade, never fails" rpm_preun_removes "$RPM"
log "checks of the packages done at $((SECONDS - start)) s"

# ---- mutants: each check must fail on a package that breaks its rule ---------

# deb_mutant NAME SHELL-CODE: the deb unpacked, SHELL-CODE run at its root
# (control files in DEBIAN/), md5sums made again, packed under the name
# dpkg-deb gives it (Package_Version_Architecture.deb); prints its path.
deb_mutant() {
	local d=$TMP/mut/$1

	mkdir -p "$d/new"
	dpkg-deb -R "$DEB" "$d/root" || return 1
	(cd "$d/root" && eval "$2") || return 1
	(cd "$d/root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
		xargs -0 md5sum >DEBIAN/md5sums) || return 1
	dpkg-deb --root-owner-group -Zgzip -b "$d/root" "$d/new/" >/dev/null || return 1
	ls "$d/new/"*.deb
}
mutant() {	# mutant NAME SHELL-CODE CHECK-DESC CHECK [ARGS...]: the check fails on it
	local name=$1 code=$2 desc=$3 m l

	shift 3
	m=$(deb_mutant "$name" "$code") || { check "mutant $name: $desc" false; return; }
	l=$TMP/mut/$name.list
	listing "$m" >"$l"
	set -- "${@//@DEB@/$m}"
	check "mutant $name: $desc" fails "${@//@LIST@/$l}"
}
S=.$SRC
mutant version "sed -i 's/^Version: .*/Version: $VER.1/' DEBIAN/control" \
	"name/version check fails" deb_named @DEB@
cp "$DEB" "$TMP/mut/${PKG}_9.9.9_all.deb"
check "mutant deb renamed to 9.9.9: name/version check fails" fails deb_named "$TMP/mut/${PKG}_9.9.9_all.deb"
mutant ko "touch $S/tsq_probe/tsq_probe.ko $S/ena/ena.ko" "no-.ko check fails" no_ko @LIST@
mutant git "mkdir -p $S/.git && echo ref >$S/.git/HEAD && touch $S/ena/.gitignore" "no-git check fails" no_git @LIST@
mutant no-dkms "sed -i 's/^Depends: .*/Depends: xz-utils/' DEBIAN/control" "Depends check fails" deb_depends_dkms @DEB@
mutant no-source "rm $S/tcp_dctcp_fixed/tcp_dctcp_fixed.c" "module sources check fails" has_module_sources @LIST@
mutant extra-file "echo x >$S/tsq_probe/notes.txt" "same-files-as-install check fails" same_files_as_install @LIST@
mutant no-stat "rm usr/sbin/tsq-probe-stat" "tsq-probe-stat check fails" has_tsq_probe_stat @LIST@
mutant ship-rule "cp $S/ena/ena-load etc/modprobe.d/ena-tcp-tailfix-ena.conf" "operator-tools check fails" has_operator_tools @LIST@
mutant rule-always "sed -i 's/grep -qsx/true/' DEBIAN/postinst" "maintainer-scripts check fails" deb_maint_rule @DEB@
mutant rule-kept "sed -i 's/= remove ]/= none ]/' DEBIAN/prerm" "maintainer-scripts check fails" deb_maint_rule @DEB@
mutant no-dkms-conf "rm $S/dkms.conf" "dkms.conf check fails" has_dkms_conf @LIST@
mutant no-x "chmod -x $S/scripts/build-modules.sh" "executable-scripts check fails" scripts_executable @LIST@
mutant etc-sysctl "mkdir -p etc/sysctl.d && cp usr/share/doc/$PKG/examples/sysctl.d/* etc/sysctl.d/" \
	"optional-files check fails (an example active at boot)" optional_files_placed @LIST@
mutant lintian "rm usr/share/doc/$PKG/copyright" "lintian check fails (no copyright file)" lintian_clean @DEB@
if [ -n "$K" ]; then
	if m=$(deb_mutant no-build-script "rm $S/scripts/build-modules.sh") && dpkg-deb -x "$m" "$TMP/mut/nbs-root"; then
		check "mutant no-build-script: dkms build check fails" fails dkms_builds "$TMP/mut/nbs-root"
	else
		check "mutant no-build-script" false
	fi
fi

# The modprobe.d file: an uncommented line; a parameter left out; a wrong default.
conf=$X/etc/modprobe.d/$NAME.conf
sed 's/^#options tsq_probe recover=1$/options tsq_probe recover=1/' "$conf" >"$TMP/mut/active.conf"
check "mutant modprobe.d with an active line: all-comments check fails" fails all_comments "$TMP/mut/active.conf"
grep -v 'shift_g=' "$conf" >"$TMP/mut/no-param.conf"
check "mutant modprobe.d without shift_g: parameters check fails" fails modprobe_lists_params "$TMP/mut/no-param.conf" "$X$SRC"
sed 's/min_cwnd_after_ce=2$/min_cwnd_after_ce=1/' "$conf" >"$TMP/mut/default.conf"
check "mutant modprobe.d with another default: parameters check fails" fails modprobe_lists_params "$TMP/mut/default.conf" "$X$SRC"
echo '#options tcp_dctcp_fixed stat_ecn=0' | cat "$conf" - >"$TMP/mut/stale.conf"
check "mutant modprobe.d with a parameter the sources lack: parameters check fails" fails modprobe_lists_params "$TMP/mut/stale.conf" "$X$SRC"

# rpms built from copies of the checkout, not git trees.
copy_tree() {	# copy_tree DIR: this checkout's files (tracked and new), no .git
	mkdir -p "$1"
	if git -C "$TAILFIX_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$TAILFIX_ROOT" ls-files -co --exclude-standard -z |
			tar -C "$TAILFIX_ROOT" --null -T - -cf - | tar -C "$1" -xf -
	else
		tar -C "$TAILFIX_ROOT" --exclude=out --exclude='ena/build-*' --exclude=.git -cf - . | tar -C "$1" -xf -
	fi
}
plant_junk() {	# what a build and a VCS leave in a tree
	mkdir -p "$1/ena/build-$VER-x" "$1/.git" "$1/tsq_probe/.git"
	touch "$1/tsq_probe/tsq_probe.ko" "$1/tsq_probe/tsq_probe.o" "$1/ena/ena.ko" \
		"$1/ena/build-$VER-x/ena.ko" "$1/tcp_dctcp_fixed/.gitignore" "$1/tsq_probe/.git/config"
	echo ref >"$1/.git/HEAD"
}
rpm_of() {	# rpm_of DIR: make rpm in DIR, print the rpm's path
	"$1/scripts/package.sh" rpm "$1/out" >"$1.log" 2>&1 || { sed 's/^/# /' "$1.log" | tail -5; return 1; }
	tail -1 "$1.log"
}

T=$TMP/copy-junk
copy_tree "$T"
plant_junk "$T"
sed -i 's/ --rpm_safe_upgrade || :$/ || :/' "$T/packaging/$PKG.spec.in"
if r=$(rpm_of "$T"); then
	listing "$r" >"$T.list"
	check "rpm of a non-git tree with .ko and .git planted: no built objects" no_ko "$T.list"
	check "rpm of a non-git tree with .ko and .git planted: nothing of git" no_git "$T.list"
	check "mutant rpm %preun without --rpm_safe_upgrade: %preun check fails" fails rpm_preun_removes "$r"
else
	check "rpm of a non-git tree with junk planted" false
fi

T=$TMP/copy-filter
copy_tree "$T"
plant_junk "$T"
sed -i 's/grep -zvE "$junk"/cat/' "$T/scripts/source-files.sh"
cp "$T/packaging/$PKG.spec.in" "$T.spec"
sed -i 's/^\(\t*dkms build %{dkms_name}\/%{version} -k "\$k" .*\) || rc=\$?$/\1 || exit 1/' "$T/packaging/$PKG.spec.in"
cmp -s "$T.spec" "$T/packaging/$PKG.spec.in" && log "the %post mutant's sed matched nothing: the spec changed"
if r=$(rpm_of "$T"); then
	listing "$r" >"$T.list"
	check "mutant source-files.sh without its filter: no-.ko check fails" fails no_ko "$T.list"
	check "mutant source-files.sh without its filter: no-git check fails" fails no_git "$T.list"
	if [ -n "$FIRST" ]; then
		check "mutant rpm %post that stops at a failing kernel: tolerance check fails" fails rpm_post_tolerates "$r"
	fi
else
	check "rpm of a mutant source-files.sh" false
fi

T=$TMP/copy-version
copy_tree "$T"
sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$VER.99\"/" "$T/dkms.conf"
if r=$(rpm_of "$T"); then
	check "mutant rpm of another dkms.conf version: name/version check fails" fails rpm_named "$r"
	listing "$r" >"$T.list"
	check "mutant rpm of another dkms.conf version: dkms.conf check fails" fails has_dkms_conf "$T.list"
else
	check "rpm of another version" false
fi
cp "$RPM" "$TMP/mut/$PKG-9.9.9-1.noarch.rpm"
check "mutant rpm renamed to 9.9.9: name/version check fails" fails rpm_named "$TMP/mut/$PKG-9.9.9-1.noarch.rpm"
rpm -qp --qf '%{POSTIN}' "$RPM" | sed 's/dkms build [^|]*||/true ||/' >"$TMP/mut/post.txt"
rpm -qp --qf '%{POSTIN}' "$RPM" | cmp -s - "$TMP/mut/post.txt" && log "the dkms build mutant's sed matched nothing: the %post changed"
check "mutant %post that never runs dkms build: %post check fails" fails post_registers "$TMP/mut/post.txt"
log "done in $((SECONDS - start)) s"
ksft_finish
