#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# No ethtool -S string of the kernel's own ENA driver or of amzn-drivers'
# moves with this package's patches: a tool that reads the ETHTOOL_GSTATS
# array by index reads the same counters from either driver.
#
# Kernel series (ena/patches/5.10, 6.1, 6.12, 7.3): for each series with its
# linux-source-X.Y (/usr/src or $TAILFIX_CACHE/linux-source/) and a kernel
# build tree of that series under /lib/modules (on the build machine 6.1
# and 6.12; a series without them is logged as not compared, and at least
# one must be compared: host checks do not skip), prepare-source.sh's patched ENA source
# lists exactly the strings of the pristine one, in the same order, for 1,
# 2 and 8 queues, without and with as many XDP Tx rings, without and with
# the optional device statistics.  The series adds no string: the doorbell
# fix has no counter there.  A mutant that puts queue_N_tx_drop_doorbells
# back at the end of each Tx block must fail.
#
# amzn-drivers with patches/amzn-2.17: the strings of the driver as
# released, in the same order and at the same indices, followed by
# queue_0_tx_drop_doorbells .. queue_<Q-1>_tx_drop_doorbells and nothing
# else.  For every kernel with headers in 6.1 and 6.12: both sources (the
# release tarball of ../shared/third_party, and the tree prepare-source.sh
# patches) get amzn-drivers' own configure step.  1, 2 and 8 queues, with
# no optional device statistics and with all of them (ENI, customer
# metrics, ENA SRD, PHC).  The values follow the strings: in the released
# and in the patched driver, ena_get_ethtool_stats() writes exactly
# ena_get_sset_count() values, the value at every index is the one of the
# counter that the string at that index names (queue 3's drop_doorbells at
# queue_3_tx_drop_doorbells), and the patched driver's values at the
# indices of the released strings are the released driver's on the same
# fake adapter.  Mutants of the patched ena_ethtool.c, each of which must
# fail:
#   - the counter inside each queue's Tx block (after doorbells), as the
#     series first had it;
#   - the counter in the accumulated Tx list of every queue;
#   - the appended strings listed but not counted by ena_get_sset_count();
# and, with the strings right (they must pass), the values wrong:
#   - the counter's values written inside each queue's Tx block;
#   - queue 0's counter written at every queue's index;
#   - the counter's values not written.
#
# How the strings are read: the kernel's build preprocesses ena_ethtool.c
# (its #ifdefs decided as for the module); the file's string tables and the
# functions that count and list the strings run in user space
# (ena_ethtool_strings.c).  The driver must also write exactly as many
# strings as ena_get_sset_count() promises.  For amzn-drivers the functions
# that fill the values run there too, with the structures of the counters
# from the driver's headers, on a fake adapter whose every counter that a
# table of the driver names holds a stamp (a hash) of the string it is to
# be reported under, put there through the table's entry: a value at a
# shifted index, or one counter's value at another's string, fails.
# Everything is unpacked in temporary directories; nothing is kept.

. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ena_amzn_common.sh"

require_cmd make tar patch gcc awk
HARNESS=$TAILFIX_ROOT/tests/host/ena_ethtool_strings.c
COUNTER=drop_doorbells

# The string tables and the functions that count and list the strings, from
# the file's own part of a preprocessed ena_ethtool.c, split into top-level
# items; stat_offset dropped (it names the driver's structures).  With
# values=1, also the functions that fill the values (ena_get_ethtool_stats()
# and what it calls; not ena_fetch_page_pool_stats(), the harness has its
# own) with stat_offset kept, and into the file $structs the structures of
# the counters, from the driver's headers.
EXTRACT='
cap != "" {
	if ($0 !~ /^# [0-9]+ "/)
		cap = cap $0 "\n"
	if ($0 ~ /^\};/) {
		printf "%s\n", cap >structs
		cap = ""
	}
	next
}
values && /^struct (ena_stats_(tx|rx|dev)|ena_keep_alive_stats|ena_com_stats_(admin|phc)|ena_admin_(eni_stats|ena_srd_stats|ena_srd_info)) \{/ {
	cap = $0 "\n"
	next
}
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
	if (values && name ~ /(_stats?|^ena_dump_stats_for_queue)$/ &&
	    name != "ena_fetch_page_pool_stats")
		return 1
	return name ~ /(strings|_count)$/
}'

# harness DIR KVER [values]: DIR/ena/ena_ethtool.c preprocessed for KVER,
# its extract built into DIR/strings (amzn-drivers: DIR/ena/config.h must
# exist; the kernel's driver: DIR/ena/Kbuild); with "values", DIR/strings -v
# runs ena_get_ethtool_stats() too
harness() {
	local d=$1/ena values=${3:+1} defs=() nometrics=

	make -s -C "/lib/modules/$2/build" M="$d" KCFLAGS=-D__NO_FORTIFY \
		ena_ethtool.i >"$1/i.log" 2>&1 || { cat "$1/i.log" >&2; return 1; }
	: >"$1/structs.c"
	awk -v values="${values:-0}" -v structs="$1/structs.c" "$EXTRACT" "$d/ena_ethtool.i" |
		if [ -n "$values" ]; then cat; else sed -E 's/, \.stat_offset = [^}]*\}/ }/'; fi >"$1/extract.c" &&
		grep -q 'ena_get_ethtool_strings' "$1/extract.c" &&
		{ grep -q ena_hw_stats_strings "$1/extract.c" || nometrics=-DENA_NO_METRICS; } || return 1
	if [ -n "$values" ]; then
		if ! grep -q 'ena_get_ethtool_stats' "$1/extract.c" || ! grep -q 'struct ena_stats_tx {' "$1/structs.c"; then
			echo "no ena_get_ethtool_stats() or no struct ena_stats_tx in the extract" >&2
			return 1
		fi
		defs+=(-DENA_ETHTOOL_STRUCTS='"structs.c"')
		grep -q ena_per_q_stats_tx_appended_strings "$1/extract.c" && defs+=(-DENA_TX_APPENDED)
	fi
	gcc -O1 -Wall -Werror -Wno-unused-function -Wno-pointer-sign ${nometrics:+"$nometrics"} -I"$1" \
		-DENA_ETHTOOL_EXTRACT='"extract.c"' "${defs[@]}" -o "$1/strings" "$HARNESS" 2>"$1/cc.log" ||
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
# compare REF DIR CAPS EXPECT: for every queue count and each capability
# set in CAPS, DIR's strings are what "EXPECT REF-LIST QUEUES" prints (the
# first difference logged)
compare() {
	local q c

	for q in $QUEUES; do
		for c in $3; do
			"$1/strings" "$q" "${c#-}" >"$1/ref.$q$c" &&
				"$2/strings" "$q" "${c#-}" >"$2/out.$q$c" || return 1
			if ! diff <("$4" "$1/ref.$q$c" "$q") "$2/out.$q$c" >"$2/diff.$q$c"; then
				log "$q queues, capabilities '${c#-}': first difference:"
				head -4 "$2/diff.$q$c" | sed 's/^/#   /'
				return 1
			fi
		done
	done
}
# same_plus_counter REF DIR: DIR's strings are REF's plus the counter
same_plus_counter() { compare "$1" "$2" "$CAPS" expected; }

# same_values REF DIR: for every queue count and capability set of CAPS,
# the values of DIR and of REF pass the harness's check (as many as
# counted, each the value of the counter named by the string at its index;
# the first difference logged), and DIR's are REF's at the indices of REF's
# strings, followed by one for each queue
same_values() {
	local q c n d

	for q in $QUEUES; do
		for c in $CAPS; do
			for d in "$1" "$2"; do
				"$d/strings" -v "$q" "${c#-}" >"$d/values.$q$c" 2>"$d/values.err" && continue
				log "$q queues, capabilities '${c#-}': ${d##*/}: $(cat "$d/values.err")"
				return 1
			done
			n=$(wc -l <"$1/values.$q$c")
			if ! head -n "$n" "$2/values.$q$c" | cmp -s - "$1/values.$q$c" ||
				[ "$(wc -l <"$2/values.$q$c")" -ne $((n + q)) ]; then
				log "$q queues, capabilities '${c#-}': not the released driver's values followed by $q more"
				return 1
			fi
		done
	done
}

# mutant NAME SED DESC [values]: the patched tree for $k with SED applied
# to ena_ethtool.c must still build and run (a mutant that does not build
# proves nothing) and fail the comparison of the strings; with "values",
# its strings must pass and its values fail
mutant() {
	local m=$TMP/mutant-$1-$k verdict outcome=fails

	cp -r "$new" "$m"
	sed -i "$2" "$m/ena/ena_ethtool.c"
	verdict='harness "$m" "$k" && ! same_plus_counter "$ref" "$m"'
	if [ "${4:-}" = values ]; then
		verdict='harness "$m" "$k" values && same_plus_counter "$ref" "$m" && ! same_values "$ref" "$m"'
		outcome="same strings, the values fail"
	fi
	check "$k: mutant, $3: $outcome" \
		eval '! cmp -s "$m/ena/ena_ethtool.c" "$new/ena/ena_ethtool.c" && '"$verdict"
}

# ---- the kernel series --------------------------------------------------------
KCAPS="- x e ex emspx"
# same_strings REF DIR: DIR's strings are REF's
unchanged() { cat "$1"; }
same_strings() { compare "$1" "$2" "$KCAPS" unchanged; }

KTMP=$(mktemp -d)
on_exit rm -rf "$KTMP"
CACHE=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
for series in $(cd "$TAILFIX_ROOT/ena/patches" && echo */ | tr -d /); do
	case $series in *[!0-9.]*) continue ;; esac
	desc="$series: the patched ENA lists the pristine one's ethtool -S strings"
	src=/usr/src/linux-source-$series.tar.xz
	[ -f "$src" ] || src=$CACHE/linux-source/linux-source-$series.tar.xz
	if [ ! -f "$src" ]; then
		log "$series: not compared here: no linux-source-$series (/usr/src or $CACHE/linux-source)"
		continue
	fi
	kv=
	for b in /lib/modules/"$series".*/build; do
		[ -f "$b/Makefile" ] && { kv=$(basename "$(dirname "$b")"); break; }
	done
	if [ -z "$kv" ]; then
		log "$series: not compared here: no $series kernel build tree under /lib/modules to preprocess ena_ethtool.c for"
		continue
	fi
	compared="${compared:-}$series "
	ref=$KTMP/pristine-$series new=$KTMP/patched-$series
	mkdir -p "$ref" "$new"
	out=$(ENA_SRC=$src "$TAILFIX_ROOT/ena/prepare-source.sh" --pristine "$kv" "$ref/ena" 2>&1) ||
		fail "$series: prepare-source.sh --pristine: $out"
	out=$(ENA_SRC=$ref/ena "$TAILFIX_ROOT/ena/prepare-source.sh" "$kv" "$new/ena" 2>&1) ||
		fail "$series: prepare-source.sh: $out"
	printf 'obj-m := ena_ethtool.o\n' | tee "$ref/ena/Kbuild" >"$new/ena/Kbuild"
	check "$series ($kv): the pristine ena_ethtool.c, preprocessed, lists its strings in user space" \
		harness "$ref" "$kv"
	check "$series ($kv): the patched ena_ethtool.c lists its strings in user space" harness "$new" "$kv"
	log "$series: $("$ref/strings" 1 | wc -l) strings for one queue, $("$ref/strings" 8 emspx | wc -l) for 8 with XDP and every option"
	check "$desc, same order (queues: $QUEUES; capabilities: $KCAPS)" same_strings "$ref" "$new"
	m=$KTMP/mutant-$series
	cp -r "$new" "$m"
	sed -i "s/^\tENA_STAT_TX_ENTRY(unmask_interrupt),\$/&\n\tENA_STAT_TX_ENTRY($COUNTER),/" "$m/ena/ena_ethtool.c"
	check "$series: mutant, queue_N_tx_$COUNTER back at the end of each Tx block: fails" \
		eval '! cmp -s "$m/ena/ena_ethtool.c" "$new/ena/ena_ethtool.c" &&
			harness "$m" "$kv" && ! same_strings "$ref" "$m"'
done

check "the kernel series compared on this host: ${compared:-none} (at least one)" [ -n "${compared:-}" ]

# ---- amzn-drivers -------------------------------------------------------------
amzn_kvers=$(ls -d /lib/modules/6.1.*/build/Makefile /lib/modules/6.12.*/build/Makefile 2>/dev/null)
if [ -z "$("$TAILFIX_ROOT/scripts/third-party.sh" amzn)" ]; then
	check_skip "amzn-drivers: patched = released strings, then the counter" \
		"no amzn-drivers release tarball (../shared/third_party, or TAILFIX_AMZN_TARBALL=)"
elif [ -z "$amzn_kvers" ]; then
	check_skip "amzn-drivers: patched = released strings, then the counter" \
		"no 6.1 or 6.12 kernel headers under /lib/modules"
else
	amzn_setup
	PRISTINE=$CO/kernel/linux
	for k in "${KVERS[@]}"; do
		ref=$TMP/pristine-$k new=$TMP/patched-$k
		cp -r "$PRISTINE" "$ref"
		(cd "$ref/ena" && ./configure.sh --kernel-dir "/lib/modules/$k/build" >"$ref/configure.log" 2>&1) ||
			fail "$k: amzn-drivers' configure.sh failed (see a run with its log)"
		check "$k: the released ena_ethtool.c, preprocessed, lists its strings and values in user space" \
			harness "$ref" "$k" values

		out=$(ENA_SRC=$TARBALL "$TAILFIX_ROOT/ena/prepare-source.sh" "$k" "$new" 2>&1) ||
			fail "$k: prepare-source.sh: $out"
		cp "$ref/ena/config.h" "$new/ena/"
		check "$k: the patched ena_ethtool.c lists its strings and values in user space" \
			harness "$new" "$k" values
		log "$k: as released, $("$ref/strings" 1 | wc -l) strings for one queue, $("$ref/strings" 8 emsp | wc -l) for 8 with every option"
		check "$k: patched = released strings, same order, then queue_N_tx_$COUNTER for each queue (queues: $QUEUES)" \
			same_plus_counter "$ref" "$new"
		check "$k: each value of ena_get_ethtool_stats() at its string's index, as many as counted, released and patched; the patched = the released values, then queue_N_tx_$COUNTER's (queues: $QUEUES; capabilities: $CAPS)" \
			same_values "$ref" "$new"

		mutant in-queue "/^static const struct ena_stats ena_per_q_stats_tx_appended_strings/,/^};/{/($COUNTER)/d};
			s/^\tENA_STAT_TX_ENTRY(doorbells),\$/&\n\tENA_STAT_TX_ENTRY($COUNTER),/" \
			"the counter inside each queue's Tx block, after doorbells"
		mutant accum "/^static const struct ena_stats ena_per_q_stats_tx_appended_strings/,/^};/{/($COUNTER)/d};
			s/^\tENA_STAT_TX_ENTRY(missed_tx),\$/&\n\tENA_STAT_TX_ENTRY($COUNTER),/" \
			"the counter in the accumulated Tx list"
		mutant uncounted 's/ENA_PER_Q_STATS_ARRAY_TX + ENA_STATS_ARRAY_RX +$/ENA_PER_Q_STATS_ARRAY_TX + ENA_STATS_ARRAY_RX + 0 */' \
			"the appended strings not counted by ena_get_sset_count()"
		# the appended values loop of ena_get_queue_stats()
		values_loop='/^\tfor (i = 0; i < adapter->max_num_io_queues; i++)$/,/ena_per_q_stats_tx_appended_strings);$/'
		mutant in-queue-values "${values_loop}d;
			s/^\t\tena_get_per_queue_tx_stats(ring, \&data, true);\$/&\n\t\tena_dump_stats_for_queue(ring, ENA_PER_Q_STATS_ARRAY_TX_APPENDED, \&data, ENA_TX_STAT, ena_per_q_stats_tx_appended_strings);/" \
			"the counter's values written inside each queue's Tx block" values
		mutant queue0-values "${values_loop}s/tx_ring\[i\]/tx_ring[0]/" \
			"queue 0's counter written for every queue" values
		mutant unwritten-values "${values_loop}d" \
			"the counter's values not written" values
	done
fi
ksft_finish
