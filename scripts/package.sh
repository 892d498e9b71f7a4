#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# package.sh deb|rpm [OUTDIR]: `make deb`, `make rpm`.  Builds
#   ena-tcp-tailfix-dkms_VERSION_all.deb        (debhelper, dh-sequence-dkms)
#   ena-tcp-tailfix-dkms-VERSION-1.noarch.rpm   (rpmbuild, a noarch DKMS spec)
# into OUTDIR (default: the top of this checkout) and prints its path.
# VERSION is dkms.conf's PACKAGE_VERSION, the project's only version.
#
# Both are built from one tree made in a temporary directory, never in the
# checkout:
#   ena-tcp-tailfix-VERSION/
#     src/ena-tcp-tailfix-VERSION/
#                 the DKMS source, installed as it is to /usr/src: the files
#                 of scripts/source-files.sh, the same `make install` copies
#     README.md, packaging/{modprobe.d,examples,tsq-probe-stat.8}
#     debian/     packaging/debian/ and a changelog written here (deb only)
# Why not a debian/ directory at the top of the checkout: dpkg-buildpackage
# there would run the top Makefile (dh_auto_build builds the modules for the
# running kernel, dh_auto_clean runs `make clean`), leave debian/<package>/
# staging trees in the checkout and its output in the directory above it.
# What the builds need comes from `scripts/deps.sh pkg`.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
out=${2:-$top}
name=ena-tcp-tailfix
die() { echo "package.sh: $*" >&2; exit 1; }

case $kind in
deb) tools="dpkg-buildpackage dh dh_dkms" ;;
rpm) tools="rpmbuild" ;;
*) echo "package.sh deb|rpm [OUTDIR]" >&2; exit 2 ;;
esac
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] ||
	die "PACKAGE_VERSION '$version' of dkms.conf is not a package version (a digit, then A-Z a-z 0-9 . + ~)"
for t in $tools; do
	command -v "$t" >/dev/null && continue
	echo "package.sh: $t is missing: scripts/deps.sh pkg" >&2
	"$top/scripts/deps.sh" pkg
	break
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/tailfix-pkg.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/$name-$version
src=$tree/src/$name-$version
mkdir -p "$src" "$tree/packaging"
"$top/scripts/source-files.sh" "$top" | tar -C "$top" --null -T - -cf - | tar -C "$src" -xf -
cp -p "$top/README.md" "$tree/"
(cd "$top/packaging" && cp -pR modprobe.d examples tsq-probe-stat.8 "$tree/packaging/")
cp -p "$top/cli/ena-tcp-tailfix.8" "$tree/packaging/"

# Where the sources come from, for the changelog.
when=$(date +%s)
from=
if [ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
	when=$(git -C "$top" log -1 --format=%ct)
	from=", from git $(git -C "$top" rev-parse --short HEAD)"
	git -C "$top" diff --quiet HEAD 2>/dev/null || from="$from with local changes"
fi

build_deb() {
	local deb=${name}-dkms_${version}_all.deb maint

	cp -pR "$top/packaging/debian" "$tree/debian"
	maint=$(sed -n 's/^Maintainer: //p' "$tree/debian/control")
	cat >"$tree/debian/changelog" <<-EOT
	$name ($version) unstable; urgency=medium

	  * $name $version$from.

	 -- $maint  $(date -R -u -d "@$when")
	EOT
	(cd "$tree" && dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 ||
		{ tail -40 "$work/build.log" >&2; die "dpkg-buildpackage failed (above)"; }
	[ -f "$work/$deb" ] || die "dpkg-buildpackage made no $deb: $(ls "$work")"
	install -m 0644 "$work/$deb" "$out/$deb"
	echo "$out/$deb"
}

build_rpm() {
	local rpmtop=$work/rpmbuild spec=$name-dkms.spec rpm

	mkdir -p "$rpmtop/SOURCES" "$rpmtop/SPECS"
	tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$when" \
		-czf "$rpmtop/SOURCES/$name-$version.tar.gz" "$name-$version"
	sed "s/@VERSION@/$version/g" "$top/packaging/$spec.in" >"$rpmtop/SPECS/$spec"
	SOURCE_DATE_EPOCH=$when rpmbuild -bb --define "_topdir $rpmtop" "$rpmtop/SPECS/$spec" \
		>"$work/build.log" 2>&1 ||
		{ tail -40 "$work/build.log" >&2; die "rpmbuild failed (above)"; }
	rpm=$(ls "$rpmtop/RPMS/noarch/$name-dkms-$version-"*.noarch.rpm 2>/dev/null) ||
		die "rpmbuild made no $name-dkms-$version-*.noarch.rpm"
	install -m 0644 "$rpm" "$out/${rpm##*/}"
	echo "$out/${rpm##*/}"
}

"build_$kind"
