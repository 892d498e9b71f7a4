#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The ethtool -S strings of amzn-drivers' ENA driver with patches/amzn-2.17
# are those of the driver as released, in the same order and at the same
# indices, followed by queue_0_tx_drop_doorbells .. queue_<Q-1>_tx_drop_doorbells
# and nothing else: a tool that reads the ETHTOOL_GSTATS array by index
# reads the same counters from either driver.
#
# For every kernel with headers in 6.1 and 6.12: both sources (the release
# tarball of ../shared/third_party, and the tree prepare-source.sh patches)
# get amzn-drivers' own configure step, then the kernel's build preprocesses
# ena_ethtool.c (its #ifdefs decided as for the module).  The file's string
# tables and the functions that count and list the strings run in user space
# (ena_ethtool_strings.c) for 1, 2 and 8 queues, with no optional device
# statistics and with all of them (ENI, customer metrics, ENA SRD, PHC).
# The driver must also write exactly as many strings as ena_get_sset_count()
# promises.
# Mutants of the patched ena_ethtool.c, each of which must fail:
#   - the counter inside each queue's Tx block (after doorbells), as the
#     series first had it;
#   - the counter in the accumulated Tx list of every queue;
#   - the appended strings listed but not counted by ena_get_sset_count().
# Nothing of amzn-drivers is kept; everything is unpacked in a temporary
# directory.

. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ena_amzn_common.sh"

require_cmd make tar patch gcc awk
amzn_setup
HARNESS=$TAILFIX_ROOT/tests/host/ena_ethtool_strings.c
COUNTER=drop_doorbells
PRISTINE=$CO/kernel/linux

# The string tables and the functions that count and list the strings, from
# the file's own part of a preprocessed ena_ethtool.c, split into top-level
# items; stat_offset dropped (it names the driver's structures).
EXTRACT='
/^# [0-9]+ "/ { own = ($3 ~ /\/ena_ethtool\.c"$/); next }
!own { next }
depth == 0 && item == "" && /^[ \t]*$/ { next }
{
	item = item $0 "\n"
	line = $0
	gsub(/"([^"\\]|\\.)*"/, "", line)
	depth += gsub(/\{/, "{", line) - gsub(/\}/, "}", line)
	if (depth == 0 && ($0 ~ /;[ \t]*$/ || $0 ~ /^\}/)) {
		if (keep(item))
			printf "%s\n", item
		item = ""
	}
}
function keep(t,   head, name) {
	head = t
	sub(/\n.*/, "", head)
	if (head ~ /^(struct ena_stats|struct ena_hw_metrics|enum ena_stat_type) \{/)
		return 1
	if (head ~ /^static const (struct ena_(stats|hw_metrics)|char) [a-z_0-9]+\[/)
		return 1
	if (head ~ /;[ \t]*$/ || head !~ /\(/)
		return 0
	name = head
	sub(/\(.*/, "", name)
	sub(/.*[ *]/, "", name)
	return name ~ /(strings|_count)$/
}'

# harness DIR KVER: DIR/ena/ena_ethtool.c preprocessed for KVER, its
# extract built into DIR/strings (DIR/ena/config.h must exist)
harness() {
	local d=$1/ena

	make -s -C "/lib/modules/$2/build" M="$d" KCFLAGS=-D__NO_FORTIFY \
		ena_ethtool.i >"$1/i.log" 2>&1 || { cat "$1/i.log" >&2; return 1; }
	awk "$EXTRACT" "$d/ena_ethtool.i" |
		sed -E 's/, \.stat_offset = [^}]*\}/ }/' >"$1/extract.c" &&
		grep -q 'ena_get_ethtool_strings' "$1/extract.c" &&
		gcc -O1 -Wall -Werror -Wno-unused-function -I"$1" \
			-DENA_ETHTOOL_EXTRACT='"extract.c"' -o "$1/strings" "$HARNESS" 2>"$1/cc.log" ||
		{ cat "$1/cc.log" >&2; return 1; }
}

QUEUES="1 2 8"
CAPS="- emsp"
# expected DIR Q: the released driver's strings for Q queues, then the
# appended counter for each queue
expected() {
	local q

	cat "$1"
	for ((q = 0; q < $2; q++)); do
		echo "queue_${q}_tx_$COUNTER"
	done
}
# same_plus_counter REF DIR: DIR's strings are REF's plus the counter, for
# every queue count and capability set (the first difference logged)
same_plus_counter() {
	local q c

	for q in $QUEUES; do
		for c in $CAPS; do
			"$1/strings" "$q" "${c#-}" >"$1/ref.$q$c" &&
				"$2/strings" "$q" "${c#-}" >"$2/out.$q$c" || return 1
			if ! diff <(expected "$1/ref.$q$c" "$q") "$2/out.$q$c" >"$2/diff.$q$c"; then
				log "$q queues, capabilities '${c#-}': first difference:"
				head -4 "$2/diff.$q$c" | sed 's/^/#   /'
				return 1
			fi
		done
	done
}

# mutant NAME SED DESC: the patched tree for $k with SED applied to
# ena_ethtool.c must fail the comparison
mutant() {
	local m=$TMP/mutant-$1-$k

	cp -r "$new" "$m"
	sed -i "$2" "$m/ena/ena_ethtool.c"
	check "$k: mutant, $3: fails" \
		eval '! cmp -s "$m/ena/ena_ethtool.c" "$new/ena/ena_ethtool.c" &&
			! { harness "$m" "$k" 2>/dev/null && same_plus_counter "$ref" "$m"; }'
}

for k in "${KVERS[@]}"; do
	ref=$TMP/pristine-$k new=$TMP/patched-$k
	cp -r "$PRISTINE" "$ref"
	(cd "$ref/ena" && ./configure.sh --kernel-dir "/lib/modules/$k/build" >"$ref/configure.log" 2>&1) ||
		fail "$k: amzn-drivers' configure.sh failed (see a run with its log)"
	check "$k: the released ena_ethtool.c, preprocessed, lists its strings in user space" harness "$ref" "$k"

	out=$(ENA_SRC=$TARBALL "$TAILFIX_ROOT/ena/prepare-source.sh" "$k" "$new" 2>&1) ||
		fail "$k: prepare-source.sh: $out"
	cp "$ref/ena/config.h" "$new/ena/"
	check "$k: the patched ena_ethtool.c lists its strings in user space" harness "$new" "$k"
	log "$k: as released, $("$ref/strings" 1 | wc -l) strings for one queue, $("$ref/strings" 8 emsp | wc -l) for 8 with every option"
	check "$k: patched = released strings, same order, then queue_N_tx_$COUNTER for each queue (queues: $QUEUES)" \
		same_plus_counter "$ref" "$new"

	mutant in-queue "/^static const struct ena_stats ena_per_q_stats_tx_appended_strings/,/^};/{/($COUNTER)/d};
		s/^\tENA_STAT_TX_ENTRY(doorbells),\$/&\n\tENA_STAT_TX_ENTRY($COUNTER),/" \
		"the counter inside each queue's Tx block, after doorbells"
	mutant accum "/^static const struct ena_stats ena_per_q_stats_tx_appended_strings/,/^};/{/($COUNTER)/d};
		s/^\tENA_STAT_TX_ENTRY(missed_tx),\$/&\n\tENA_STAT_TX_ENTRY($COUNTER),/" \
		"the counter in the accumulated Tx list"
	mutant uncounted 's/ENA_PER_Q_STATS_ARRAY_TX + ENA_STATS_ARRAY_RX +$/ENA_PER_Q_STATS_ARRAY_TX + ENA_STATS_ARRAY_RX + 0 */' \
		"the appended strings not counted by ena_get_sset_count()"
done
ksft_finish
