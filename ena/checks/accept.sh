#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# accept.sh ACCEPT DIR RULE...: take the findings argued safe in ACCEPT out
# of DIR/RULE.found (check.sh's findings, one per line, "FILE:LINE: FN():
# message [RULE]"), printing each as "# accepted: finding (why)".
#
# ACCEPT has one entry per line, "RULE<TAB>FUNCTION<TAB>ERE of the
# message<TAB>why" ('#' starts a comment).  A finding is accepted by an
# entry of its own rule, for its function, whose ERE matches it.  An entry
# that accepted nothing is an error (exit 2): the source changed, and the
# argument has to be made again (entries of a RULE not given are not
# judged).  Exit 0 otherwise.
set -u
ACCEPT=${1:?usage: accept.sh ACCEPT DIR RULE...}
DIR=${2:?usage: accept.sh ACCEPT DIR RULE...}
shift 2
[ -r "$ACCEPT" ] || { echo "check: cannot read CHECK_ACCEPT=$ACCEPT" >&2; exit 2; }

: >"$DIR/accept.used"
for c in "$@"; do
	: >"$DIR/$c.kept"
	while IFS= read -r f; do
		# the entry (its line number) and why
		hit=$(awk -F'\t' -v c="$c" -v f="$f" '
			/^#/ || NF < 4 { next }
			$1 == c && index(f, " " $2 "(): ") && f ~ $3 { print NR "\t" $4; exit }' "$ACCEPT")
		if [ -n "$hit" ]; then
			echo "# accepted: $f (${hit#*$'\t'})"
			echo "${hit%%$'\t'*}" >>"$DIR/accept.used"
		else
			echo "$f" >>"$DIR/$c.kept"
		fi
	done <"$DIR/$c.found"
	mv "$DIR/$c.kept" "$DIR/$c.found"
done
n=0
while IFS=$'\t' read -r c fn re why; do
	n=$((n + 1))
	case $c in '#'* | '') continue ;; esac
	grep -qx "$n" "$DIR/accept.used" && continue
	# an entry of a rule not run this time (check.sh's CHECK_RULES)
	case " $* " in *" $c "*) ;; *) continue ;; esac
	echo "check: $ACCEPT:$n: nothing matched '$c $fn() $re': the source changed, make the argument again" >&2
	exit 2
done <"$ACCEPT"
exit 0
