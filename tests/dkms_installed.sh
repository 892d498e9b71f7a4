#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What DKMS did for the running kernel, as an operator checks it:
#  - `dkms status` says the package is installed for it, and its make.log
#    has one line per module, "built" or "skipped ...: reason" (in the
#    guests the newer kernel got the package through DKMS's apt hook, a
#    kernel upgrade: tests/vm/stage.sh);
#  - Secure Boot: every module DKMS installed for the running kernel is signed
# with DKMS's own key (/var/lib/dkms/mok.key, created on first use by dkms
# 3.0.10 and later): `modinfo -F signer` is the subject CN of
# /var/lib/dkms/mok.pub and `sig_key` its serial number, so enrolling that
# certificate (`mokutil --import /var/lib/dkms/mok.pub`, README) is all a
# Secure Boot host needs (a dkms that does not sign, bullseye's 2.8: those
# subtests skip, saying so).  Read-only: nothing is loaded or changed.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd openssl modinfo dkms
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
kver=$(uname -r)
st=$(dkms status "ena-tcp-tailfix/$ver" -k "$kver" 2>&1)
log "dkms status: $st"
check "dkms status: ena-tcp-tailfix/$ver installed for $kver" grep -q ': installed' <<<"$st"
mlog=$(ls /var/lib/dkms/ena-tcp-tailfix/"$ver"/"$kver"/*/log/make.log 2>/dev/null | head -1)
[ -n "$mlog" ] && grep '^ena-tcp-tailfix: ' "$mlog" | sed 's/^/#   make.log: /'
# (fixed strings: a kernel release such as 6.12.117+deb12 is no regex)
one_line() {
	[ "$(grep -e "ena-tcp-tailfix: $1 built for $kver" -e "ena-tcp-tailfix: $1 skipped for $kver" -F "$mlog" |
		grep -c '^ena-tcp-tailfix: ')" -eq 1 ]
}
for m in tsq_probe tcp_dctcp_fixed ena; do
	check "make.log says once whether $m was built or why not" one_line "$m"
done

# Our modules installed by DKMS for this kernel (ena only where it was built).
mods=()
for m in tsq_probe tcp_dctcp_fixed ena; do
	dkms_path "$(modinfo -n "$m" 2>/dev/null)" && mods+=("$m")
done
check "tsq_probe and tcp_dctcp_fixed come from DKMS (${mods[*]})" \
	bash -c "printf '%s\n' ${mods[*]} | grep -qx tsq_probe && printf '%s\n' ${mods[*]} | grep -qx tcp_dctcp_fixed"
# The signatures.  A dkms that does not sign (before 3.0.10: bullseye's
# 2.8) has no certificate: those subtests skip and say which dkms it is.
cert=${DKMS_MOK_CERT:-/var/lib/dkms/mok.pub}
if [ ! -r "$cert" ]; then
	dv=$(dkms --version 2>/dev/null | grep -oE '[0-9]+(\.[0-9]+)+' | head -1)
	check_skip "modules signed by the DKMS key" \
		"no DKMS signing certificate $cert: dkms ${dv:-?} does not sign modules"
	ksft_finish
fi
cn=$(openssl x509 -in "$cert" -inform DER -noout -subject -nameopt multiline 2>/dev/null ||
	openssl x509 -in "$cert" -noout -subject -nameopt multiline)
cn=$(sed -n 's/^ *commonName *= *//p' <<<"$cn")
serial=$(openssl x509 -in "$cert" -inform DER -noout -serial 2>/dev/null ||
	openssl x509 -in "$cert" -noout -serial)
serial=${serial#serial=}
log "DKMS certificate: CN '$cn', serial $serial"
[ -n "$cn" ] && [ -n "$serial" ] || fail "cannot read the subject and serial of $cert"
# sig_key is printed as colon-separated hex bytes; the serial as plain hex.
norm() { tr -d ':' | tr 'a-f' 'A-F' | sed 's/^0*//'; }
for m in "${mods[@]}"; do
	signer=$(modinfo -F signer "$m")
	key=$(modinfo -F sig_key "$m" | norm)
	log "$m: signer '$signer', sig_key $key, hash $(modinfo -F sig_hashalgo "$m")"
	check "$m is signed by the DKMS key's CN" test "$signer" = "$cn"
	check "$m's sig_key is the DKMS certificate's serial" test "$key" = "$(norm <<<"$serial")"
done
ksft_finish
