#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# source-files.sh [TOP]: the files of the DKMS source tree, one per line
# ending in NUL, relative to TOP (default: this checkout).  This is the one
# list of what goes to /usr/src/ena-tcp-tailfix-VERSION: `make install`
# (scripts/install.sh), `make deb` and `make rpm` (scripts/package.sh) copy
# exactly these files:
#  - what dkms.conf and the commands it gives DKMS (MAKE, CLEAN,
#    POST_INSTALL, the probe) use: dkms.conf, Makefile, scripts/ and the
#    three module directories, with their READMEs; cli/, the operator's
#    command (installed to /usr/sbin by the packages);
#  - in a git checkout, the tracked files only (nothing built, nothing
#    stray); elsewhere (a release tarball), the files found there;
#  - not ena/upstream/ (the series for sending upstream, not built);
#  - never a build product (*.ko, *.o, ena/build-*/, ...) or a VCS file
#    (.git, .gitignore), whichever way the list was made.
set -euo pipefail
top=$(cd "${1:-$(dirname "$0")/..}" && pwd)
paths=(dkms.conf Makefile scripts tsq_probe tcp_dctcp_fixed ena cli)
junk='^ena/upstream(-out)?/|(^|/)(\.git(/|$|ignore$|attributes$|modules$)|\.tailfix-probe/|\.tmp_versions/|build-[^/]*/|[^/]*\.(ko|ko\.[a-z]+|o|mod|mod\.c|cmd|order|symvers)$)'
cd "$top"
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
	git ls-files -z -- "${paths[@]}"
else
	find "${paths[@]}" -type f -print0
fi | grep -zvE "$junk" | while IFS= read -r -d '' f; do
	# A tracked file deleted in the work tree is not part of it.
	[ -f "$f" ] && printf '%s\0' "$f"
done
