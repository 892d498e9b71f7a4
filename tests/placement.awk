# SPDX-License-Identifier: GPL-2.0
# placement.awk: reads tests/placement (its header says what a line means).
#   awk -v q='QUERY' -f placement.awk placement
#	the names of the tests QUERY selects, on one line, separated by sep
#	(-v sep=,; a space by default).  QUERY: terms separated by spaces,
#	all of which a test must meet:
#	  guest, host, mutant, pkg   its kind (see the header)
#	  check:PLACE, full:PLACE    PLACE is in that column
#	  !check:PLACE, !full:PLACE  PLACE is not
#	  +FLAG, -FLAG               it has FLAG, it has not
#	The tests come in the order of the file; where the first place term
#	has numbers (PLACE:N), the numbered tests come after the others, by N.
#   awk -v rules=1 -f placement.awk placement
#	every line against the header's rules: one message per broken rule
#	("FILE:LINE: ..."), exit 1 when there is one.
#   awk -v cells=1 -f placement.awk placement
#	"kind<TAB>name<TAB>check places<TAB>full places" per test, the places
#	separated by spaces, without numbers ("-" for none).
# A line that cannot be read (not four fields, a place unknown, twice or
# out of order) is reported on stderr and fails every mode (exit 2): a list
# read from a broken file must not look shorter.
function err(msg) {
	print FILENAME ":" FNR ": " msg > "/dev/stderr"
	bad = 1
}
# kind of test N
function kind_of(n) {
	if (name[n] ~ /^host\//)
		return "host"
	if (name[n] ~ /^mutants\//)
		return "mutant"
	if ((n, "pkg") in flag)
		return "pkg"
	return "guest"
}
# parse COLUMN (check or full) of test N from field S
function parse(n, col, s,    a, i, k, p, r, prev) {
	ncells[n, col] = 0
	if (s == "-")
		return
	k = split(s, a, ",")
	prev = 0
	for (i = 1; i <= k; i++) {
		p = a[i]
		r = 0
		if (match(p, /:[0-9]+$/)) {
			r = substr(p, RSTART + 1) + 0
			p = substr(p, 1, RSTART - 1)
		}
		if (!(p in order)) {
			err(name[n] ": unknown place '" a[i] "' in the " col " column")
			continue
		}
		if ((n, col, p) in at)
			err(name[n] ": " p " twice in the " col " column")
		if (order[p] <= prev)
			err(name[n] ": the " col " column's places are not in the order " places)
		prev = order[p]
		at[n, col, p] = r
		cell[n, col, ++ncells[n, col]] = p
	}
}
function cells_of(n, col,    i, s) {
	s = ""
	for (i = 1; i <= ncells[n, col]; i++)
		s = s (i > 1 ? " " : "") cell[n, col, i]
	return s == "" ? "-" : s
}
# test N meets query term T
function meets(n, t,    neg, c, p) {
	neg = sub(/^!/, "", t)
	if (t ~ /^(check|full):/) {
		c = t
		sub(/:.*/, "", c)
		p = substr(t, length(c) + 2)
		return neg != ((n, c, p) in at)
	}
	if (t ~ /^\+/)
		return (n, substr(t, 2)) in flag
	if (t ~ /^-/)
		return !((n, substr(t, 2)) in flag)
	return kind_of(n) == t
}
# the rules of the header for test N
function rule(n,    k, col, i, p, f, want, got, allowed) {
	k = kind_of(n)
	if (name[n] !~ /^((host|mutants)\/)?[a-z0-9_]+\.sh$/)
		err(name[n] ": not a test name (NAME.sh, host/NAME.sh, mutants/NAME.sh)")
	if (k == "guest") {
		allowed["check"] = " 6.1 6.12 7.x arm64 debug "
		allowed["full"] = " 5.10 6.1 6.12 7.x arm64 debug smp "
		want["check"] = "6.1"
		want["full"] = "5.10 6.1 6.12 7.x arm64"
		allowed["flags"] = " arm64-alone "
	} else if (k == "host") {
		allowed["check"] = " host "
		allowed["full"] = " host "
		want["full"] = "host"
		allowed["flags"] = " build "
	} else if (k == "mutant") {
		allowed["check"] = " 6.1 6.12 7.x "
		allowed["full"] = " 6.1 6.12 7.x "
		allowed["flags"] = " "
	} else {
		allowed["check"] = " "
		allowed["full"] = " 6.1 "
		want["full"] = "6.1"
		allowed["flags"] = " pkg "
	}
	for (col in allowed) {
		if (col == "flags")
			continue
		for (i = 1; i <= ncells[n, col]; i++) {
			p = cell[n, col, i]
			if (index(allowed[col], " " p " ") == 0)
				err(name[n] ": a " k " test cannot run in " p " in the " col " column (only:" allowed[col] ")")
		}
		got = " " cells_of(n, col) " "
		split(want[col], f, " ")
		for (i in f)
			if (index(got, " " f[i] " ") == 0)
				err(name[n] ": a " k " test runs in " f[i] " in the " col " column (" (col == "full" ? "check-full runs the whole suite in every guest" : "make check runs the whole suite in 6.1") ")")
	}
	if (k == "mutant" && ((n, "full", "6.1") in at) != ((n, "full", "6.12") in at))
		err(name[n] ": a mutant runs in check-full in both amd64 guests, 6.1 and 6.12, or in neither")
	for (i = 1; i <= nflags[n]; i++)
		if (index(allowed["flags"], " " flagname[n, i] " ") == 0)
			err(name[n] ": flag " flagname[n, i] " is not for a " k " test (only:" allowed["flags"] ")")
}
BEGIN {
	places = "host 5.10 6.1 6.12 7.x arm64 debug smp"
	np = split(places, a, " ")
	for (i = 1; i <= np; i++)
		order[a[i]] = i
	if (sep == "")
		sep = " "
	nq = split(q, term, " ")
	for (i = 1; i <= nq; i++)
		if (term[i] !~ /^(guest|host|mutant|pkg|!?(check|full):[a-z0-9.]+|[-+][a-z0-9-]+)$/) {
			print "placement.awk: not a query term: " term[i] > "/dev/stderr"
			bad = 1
			exit
		}
}
/^[ \t]*(#|$)/ {
	next
}
{
	if (NF != 4) {
		err("not NAME CHECK FULL FLAGS: " $0)
		next
	}
	n = ++ntests
	name[n] = $1
	if ($1 in seen)
		err($1 ": a second line (the first: line " seen[$1] ")")
	seen[$1] = FNR
	nflags[n] = 0
	if ($4 != "") {
		k = $4 == "-" ? 0 : split($4, a, ",")
		for (i = 1; i <= k; i++) {
			flag[n, a[i]] = 1
			flagname[n, ++nflags[n]] = a[i]
		}
	}
	parse(n, "check", $2)
	parse(n, "full", $3)
}
END {
	if (bad && !rules)
		exit 2
	if (rules) {
		for (n = 1; n <= ntests; n++)
			rule(n)
		for (n = 1; n <= ntests; n++)
			for (c = 1; c <= 2; c++) {
				col = c == 1 ? "check" : "full"
				for (i = 1; i <= ncells[n, col]; i++) {
					p = cell[n, col, i]
					r = at[n, col, p]
					if (r > 0 && ((col, p, r) in taken))
						err(name[n] ": " p ":" r " in the " col " column is " taken[col, p, r] "'s number too")
					taken[col, p, r] = name[n]
				}
			}
		exit bad
	}
	if (cells) {
		for (n = 1; n <= ntests; n++)
			printf "%s\t%s\t%s\t%s\n", kind_of(n), name[n], cells_of(n, "check"), cells_of(n, "full")
		exit 0
	}
	# the first place term orders
	oc = op = ""
	for (i = 1; i <= nq; i++)
		if (term[i] ~ /^(check|full):/) {
			oc = term[i]
			sub(/:.*/, "", oc)
			op = substr(term[i], length(oc) + 2)
			break
		}
	m = 0
	for (n = 1; n <= ntests; n++) {
		ok = 1
		for (i = 1; i <= nq && ok; i++)
			ok = meets(n, term[i])
		if (!ok)
			continue
		r = oc == "" ? 0 : at[n, oc, op]
		# insertion by (number, line)
		for (j = ++m; j > 1 && key[j - 1] > r; j--) {
			key[j] = key[j - 1]
			sel[j] = sel[j - 1]
		}
		key[j] = r
		sel[j] = n
	}
	s = ""
	for (j = 1; j <= m; j++)
		s = s (j > 1 ? sep : "") name[sel[j]]
	print s
}
