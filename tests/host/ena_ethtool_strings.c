// SPDX-License-Identifier: GPL-2.0
/*
 * The ethtool -S strings of an ENA driver (amzn-drivers' or the kernel's
 * own), as the driver lists them, run in user space; for amzn-drivers also
 * the values, as ena_get_ethtool_stats() fills them.
 *
 * ena_ethtool_strings.sh preprocesses ena_ethtool.c with the kernel's own
 * build (so its #ifdefs are decided as for the module) and keeps, from the
 * file's own text, the string tables and the functions that count and list
 * the strings (ena_get_sset_count(), ena_get_ethtool_strings() and what
 * they call).  That text is included here, between stand-ins for the few
 * kernel and device calls it makes.  For amzn-drivers it also keeps the
 * functions that fill the values (ena_get_ethtool_stats() and what it
 * calls) and, from the driver's headers, the structures of the counters
 * they read (ENA_ETHTOOL_STRUCTS): the rings and the device here are
 * stand-ins that hold those structures.
 *
 *	ena_ethtool_strings [-v] QUEUES [e][m][s][p][x]
 *
 * QUEUES is the adapter's max_num_io_queues; the letters are the device's
 * capabilities: ENI statistics, customer metrics (all supported), ENA SRD
 * information, an active PHC; x adds as many XDP Tx rings as there are
 * queues, after them (as the kernel's driver does with an XDP program).
 * Prints the strings, one a line, in ETHTOOL_GSTRINGS order.  Exits 1,
 * with nothing on stdout, when the driver writes more or fewer strings
 * than ena_get_sset_count() promised, or an empty or unterminated one.
 *
 * -v (built with ENA_ETHTOOL_STRUCTS): every counter that a table of the
 * driver names holds a stamp of the ethtool -S string it is to be
 * reported under (a 64-bit FNV-1a hash of, e.g., "queue_3_tx_doorbells"
 * in queue 3's Tx ring, of "ena_admin_q_aborted_cmd" in the admin
 * queue's statistics), put there through the table's entry and the
 * structure's layout.  Prints the values of ena_get_ethtool_stats(), one
 * a line, in hex, in ETHTOOL_GSTATS order, after checking that it wrote
 * exactly ena_get_sset_count() of them and that the value at every index
 * is the stamp of the string at that index (num_of_active_io_queues:
 * num_io_queues).  Exits 1 otherwise, naming the first wrong index and
 * whose stamp it holds.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long s64;

#define ETH_GSTRING_LEN 32
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum { ETH_SS_STATS = 1, ETH_SS_PRIV_FLAGS = 2 };

enum ena_admin_aq_caps_id {
	ENA_ADMIN_ENI_STATS,
	ENA_ADMIN_ENA_SRD_INFO,
	ENA_ADMIN_CUSTOMER_METRICS,
};

#ifdef ENA_ETHTOOL_STRUCTS
/* The kernel's atomic64_t is one s64: the layout of a u64 */
#define atomic64_t u64

/* As on a 64-bit kernel: no sequence count, the readers never retry */
struct u64_stats_sync {
	int unused;
};

struct ethtool_stats;

#include ENA_ETHTOOL_STRUCTS

#define MAX_METRICS	32

struct ena_ring {
	struct ena_stats_tx tx_stats;
	struct ena_stats_rx rx_stats;
	struct u64_stats_sync syncp;
	struct u64_stats_sync napi_syncp;	/* patches/amzn-2.17 */
	struct u64_stats_sync timer_syncp;
};
#endif

struct ena_com_dev {
	unsigned int caps;
	unsigned int metrics;		/* customer metrics supported */
#ifdef ENA_ETHTOOL_STRUCTS
	struct {
		struct ena_com_stats_admin stats;
	} admin_queue;
	struct {
		struct ena_com_stats_phc stats;
	} phc;
	/* the answers of the ENI, ENA SRD and customer metrics commands */
	struct ena_admin_eni_stats eni_stats;
	struct ena_admin_ena_srd_info ena_srd_info;
	u64 metric_values[MAX_METRICS];	/* by metric id */
#endif
};

struct ena_adapter {
	struct ena_com_dev *ena_dev;
	int max_num_io_queues;
	int num_io_queues;
	int xdp_first_ring;
	int xdp_num_queues;
	bool eni_stats_supported;	/* the kernel's 5.10 driver */
	bool phc_active;
#ifdef ENA_ETHTOOL_STRUCTS
	struct ena_ring *tx_ring;
	struct ena_ring *rx_ring;
	struct ena_stats_dev dev_stats;
	struct u64_stats_sync syncp;
#endif
};

struct net_device {
	struct ena_adapter adapter;
};

static void *netdev_priv(struct net_device *netdev)
{
	return &netdev->adapter;
}

static bool ena_com_get_cap(struct ena_com_dev *dev, int cap)
{
	return dev->caps & (1u << cap);
}

static bool ena_com_get_customer_metric_support(struct ena_com_dev *dev,
						int idx)
{
	return dev->metrics & (1u << idx);
}

static int ena_com_get_customer_metric_count(struct ena_com_dev *dev)
{
	return __builtin_popcount(dev->metrics);
}

static bool ena_phc_is_active(struct ena_adapter *adapter)
{
	return adapter->phc_active;
}

static void ethtool_sprintf(u8 **data, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf((char *)*data, ETH_GSTRING_LEN, fmt, args);
	va_end(args);
	*data += ETH_GSTRING_LEN;
}

static void ethtool_puts(u8 **data, const char *str)
{
	snprintf((char *)*data, ETH_GSTRING_LEN, "%s", str);
	*data += ETH_GSTRING_LEN;
}

#ifdef ENA_ETHTOOL_STRUCTS
static unsigned int ena_u64_stats_fetch_begin(const struct u64_stats_sync *syncp)
{
	(void)syncp;
	return 0;
}

static bool ena_u64_stats_fetch_retry(const struct u64_stats_sync *syncp,
				      unsigned int start)
{
	(void)syncp;
	(void)start;
	return false;
}

static s64 atomic64_read(const atomic64_t *v)
{
	return *v;
}

static int ena_com_get_eni_stats(struct ena_com_dev *dev,
				 struct ena_admin_eni_stats *stats)
{
	*stats = dev->eni_stats;
	return 0;
}

static int ena_com_get_ena_srd_info(struct ena_com_dev *dev,
				    struct ena_admin_ena_srd_info *info)
{
	*info = dev->ena_srd_info;
	return 0;
}

/* The supported metrics' values, in metric id order, up to LEN bytes */
static int ena_com_get_customer_metrics(struct ena_com_dev *dev, char *buf,
					u32 len)
{
	u32 i, n = 0;

	for (i = 0; i < MAX_METRICS; i++) {
		if (!(dev->metrics & (1u << i)))
			continue;
		if ((n + 1) * sizeof(u64) > len)
			return -1;
		memcpy(buf + n++ * sizeof(u64), &dev->metric_values[i],
		       sizeof(u64));
	}
	return 0;
}

/* Left out of the extract: it copies the page pools' counters into the
 * Rx rings (with CONFIG_PAGE_POOL_STATS), which would overwrite stamps.
 */
static void ena_fetch_page_pool_stats(struct ena_adapter *adapter)
{
	(void)adapter;
}
#endif

#include ENA_ETHTOOL_EXTRACT

#ifdef ENA_ETHTOOL_STRUCTS
/* The stamp of the counter to be reported as NAME: 64-bit FNV-1a */
static u64 stamp(const char *name)
{
	u64 h = 0xcbf29ce484222325ULL;

	while (*name) {
		h ^= (u8)*name++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Stamp each counter that TABLE (N entries) names, in the structure of
 * SIZE bytes at BASE, with the stamp of PREFIX and the entry's name, cut
 * as ethtool_sprintf() cuts it.  Fails on an offset outside the structure
 * or a counter named twice.
 */
static int stamp_table(void *base, size_t size, const struct ena_stats *table,
		       size_t n, const char *prefix)
{
	char name[ETH_GSTRING_LEN];
	size_t i;
	u64 *w;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%s", prefix, table[i].name);
		if ((table[i].stat_offset + 1) * sizeof(u64) > size) {
			fprintf(stderr, "%s: offset %u outside its structure\n",
				name, table[i].stat_offset);
			return -1;
		}
		w = (u64 *)base + table[i].stat_offset;
		if (*w) {
			fprintf(stderr, "%s: a counter that another entry names\n",
				name);
			return -1;
		}
		*w = stamp(name);
	}
	return 0;
}

/* Every counter of the fake adapter, through the driver's tables */
static int stamp_adapter(struct ena_adapter *adapter)
{
	struct ena_com_dev *dev = adapter->ena_dev;
	struct ena_admin_ena_srd_info *srd = &dev->ena_srd_info;
	char prefix[ETH_GSTRING_LEN];
	size_t i;
	int q;

	if (stamp_table(&adapter->dev_stats, sizeof(adapter->dev_stats),
			ena_stats_global_strings,
			ARRAY_SIZE(ena_stats_global_strings), "") ||
	    stamp_table(&dev->admin_queue.stats, sizeof(dev->admin_queue.stats),
			ena_stats_ena_com_admin_strings,
			ARRAY_SIZE(ena_stats_ena_com_admin_strings),
			"ena_admin_q_") ||
	    stamp_table(&dev->phc.stats, sizeof(dev->phc.stats),
			ena_stats_ena_com_phc_strings,
			ARRAY_SIZE(ena_stats_ena_com_phc_strings), "") ||
	    stamp_table(&dev->eni_stats, sizeof(dev->eni_stats),
			ena_stats_eni_strings,
			ARRAY_SIZE(ena_stats_eni_strings), ""))
		return -1;
	/* ENA SRD: the mode is the flags word, then the device's counters */
	if (stamp_table(srd, sizeof(*srd), ena_srd_info_strings, 1, "") ||
	    stamp_table(&srd->ena_srd_stats, sizeof(srd->ena_srd_stats),
			ena_srd_info_strings + 1,
			ARRAY_SIZE(ena_srd_info_strings) - 1, ""))
		return -1;
	if (ARRAY_SIZE(ena_hw_stats_strings) > MAX_METRICS)
		return -1;
	for (i = 0; i < ARRAY_SIZE(ena_hw_stats_strings); i++)
		dev->metric_values[i] = stamp(ena_hw_stats_strings[i].name);

	for (q = 0; q < adapter->max_num_io_queues; q++) {
		struct ena_stats_tx *tx = &adapter->tx_ring[q].tx_stats;
		struct ena_stats_rx *rx = &adapter->rx_ring[q].rx_stats;

		snprintf(prefix, sizeof(prefix), "queue_%d_tx_", q);
		if (stamp_table(tx, sizeof(*tx), ena_accum_stats_tx_strings,
				ARRAY_SIZE(ena_accum_stats_tx_strings), prefix) ||
		    stamp_table(tx, sizeof(*tx), ena_per_q_stats_tx_strings,
				ARRAY_SIZE(ena_per_q_stats_tx_strings), prefix))
			return -1;
#ifdef ENA_TX_APPENDED
		if (stamp_table(tx, sizeof(*tx),
				ena_per_q_stats_tx_appended_strings,
				ARRAY_SIZE(ena_per_q_stats_tx_appended_strings),
				prefix))
			return -1;
#endif
		snprintf(prefix, sizeof(prefix), "queue_%d_rx_", q);
		if (stamp_table(rx, sizeof(*rx), ena_stats_rx_strings,
				ARRAY_SIZE(ena_stats_rx_strings), prefix))
			return -1;
	}
	return 0;
}
#endif

/* Bytes after the promised strings, filled with GUARD, must stay so */
#define GUARD		0xa5
#define GUARD_LEN	(8 * ETH_GSTRING_LEN)

#ifdef ENA_ETHTOOL_STRUCTS
#define GUARD_VALUE	0xa5a5a5a5a5a5a5a5ULL
#define GUARD_VALUES	8

/* The value due at the index of the string S */
static u64 expected(struct ena_adapter *adapter, const char *s)
{
	if (!strcmp(s, "num_of_active_io_queues"))
		return adapter->num_io_queues;
	return stamp(s);
}

/* Say whose value V is, among the COUNT strings of STRS */
static void whose(struct ena_adapter *adapter, const u8 *strs, int count,
		  u64 v)
{
	const char *s;
	int i;

	if (v == GUARD_VALUE) {
		fprintf(stderr, "was not written\n");
		return;
	}
	for (i = 0; i < count; i++) {
		s = (const char *)strs + i * ETH_GSTRING_LEN;
		if (expected(adapter, s) == v) {
			fprintf(stderr, "holds the value of %s (index %d)\n", s, i);
			return;
		}
	}
	fprintf(stderr, "holds %#llx, no string's value\n", v);
}

/* ena_get_ethtool_stats() on NETDEV, checked against the COUNT strings of
 * STRS; prints the values
 */
static int check_values(struct net_device *netdev, const u8 *strs, int count)
{
	struct ena_adapter *adapter = netdev_priv(netdev);
	int i, j, bad = 0, first = -1;
	u64 *data, e;

	/* Distinct stamps, none the guard: a value names its string */
	for (i = 0; i < count; i++) {
		e = expected(adapter, (const char *)strs + i * ETH_GSTRING_LEN);
		if (e == GUARD_VALUE) {
			fprintf(stderr, "string %d: its stamp is the guard\n", i);
			return 2;
		}
		for (j = 0; j < i; j++)
			if (e == expected(adapter,
					  (const char *)strs + j * ETH_GSTRING_LEN)) {
				fprintf(stderr, "strings %d and %d: the same stamp\n",
					j, i);
				return 2;
			}
	}

	data = malloc((count + GUARD_VALUES) * sizeof(u64));
	if (!data)
		return 2;
	for (i = 0; i < count + GUARD_VALUES; i++)
		data[i] = GUARD_VALUE;
	ena_get_ethtool_stats(netdev, NULL, data);

	for (i = 0; i < GUARD_VALUES; i++)
		if (data[count + i] != GUARD_VALUE) {
			fprintf(stderr, "more values written than the %d counted\n",
				count);
			free(data);
			return 1;
		}
	for (i = 0; i < count; i++) {
		if (data[i] == expected(adapter,
					(const char *)strs + i * ETH_GSTRING_LEN))
			continue;
		if (first < 0)
			first = i;
		bad++;
	}
	if (bad) {
		fprintf(stderr, "%d of %d values wrong; the first, index %d (%s), ",
			bad, count, first,
			(const char *)strs + first * ETH_GSTRING_LEN);
		whose(adapter, strs, count, data[first]);
		free(data);
		return 1;
	}
	for (i = 0; i < count; i++)
		printf("%#018llx\n", data[i]);
	free(data);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	struct ena_com_dev dev = { 0 };
	struct net_device netdev = { .adapter.ena_dev = &dev };
	struct ena_adapter *adapter = &netdev.adapter;
	bool want_values = argc > 1 && !strcmp(argv[1], "-v");
	const char *caps;
	int count, i;
	u8 *buf;

	if (want_values) {
		argc--;
		argv++;
	}
	caps = argc > 2 ? argv[2] : "";
	if (argc < 2 || atoi(argv[1]) < 1) {
		fprintf(stderr, "usage: %s [-v] QUEUES [e][m][s][p][x]\n", argv[0]);
		return 2;
	}
#ifndef ENA_ETHTOOL_STRUCTS
	if (want_values) {
		fprintf(stderr, "-v: built without the counters' structures\n");
		return 2;
	}
#endif
	adapter->max_num_io_queues = atoi(argv[1]);
	adapter->num_io_queues = adapter->max_num_io_queues;
	if (strchr(caps, 'x')) {
		adapter->xdp_first_ring = adapter->num_io_queues;
		adapter->xdp_num_queues = adapter->num_io_queues;
	}
	if (strchr(caps, 'e')) {
		dev.caps |= 1u << ENA_ADMIN_ENI_STATS;
		adapter->eni_stats_supported = true;
	}
	if (strchr(caps, 's'))
		dev.caps |= 1u << ENA_ADMIN_ENA_SRD_INFO;
	/* Drivers without customer metrics (the kernel's before 6.9) have no
	 * ena_hw_stats_strings: ena_ethtool_strings.sh defines ENA_NO_METRICS.
	 */
#ifndef ENA_NO_METRICS
	if (strchr(caps, 'm')) {
		dev.caps |= 1u << ENA_ADMIN_CUSTOMER_METRICS;
		dev.metrics = (1u << ARRAY_SIZE(ena_hw_stats_strings)) - 1;
	}
#endif
	adapter->phc_active = strchr(caps, 'p');
#ifdef ENA_ETHTOOL_STRUCTS
	adapter->tx_ring = calloc(adapter->max_num_io_queues,
				  sizeof(*adapter->tx_ring));
	adapter->rx_ring = calloc(adapter->max_num_io_queues,
				  sizeof(*adapter->rx_ring));
	if (!adapter->tx_ring || !adapter->rx_ring || stamp_adapter(adapter))
		return 2;
#endif

	count = ena_get_sset_count(&netdev, ETH_SS_STATS);
	if (count < 1) {
		fprintf(stderr, "ena_get_sset_count(): %d\n", count);
		return 1;
	}
	buf = malloc((size_t)count * ETH_GSTRING_LEN + GUARD_LEN);
	if (!buf)
		return 2;
	memset(buf, GUARD, (size_t)count * ETH_GSTRING_LEN + GUARD_LEN);
	ena_get_ethtool_strings(&netdev, ETH_SS_STATS, buf);

	for (i = 0; i < GUARD_LEN; i++)
		if (buf[(size_t)count * ETH_GSTRING_LEN + i] != GUARD) {
			fprintf(stderr, "more strings written than the %d counted\n",
				count);
			return 1;
		}
	for (i = 0; i < count; i++) {
		const u8 *s = buf + (size_t)i * ETH_GSTRING_LEN;

		if (!memchr(s, '\0', ETH_GSTRING_LEN) || !s[0] || s[0] == GUARD) {
			fprintf(stderr, "string %d of %d: not written, empty or unterminated\n",
				i, count);
			return 1;
		}
	}
#ifdef ENA_ETHTOOL_STRUCTS
	if (want_values) {
		int ret = check_values(&netdev, buf, count);

		free(buf);
		return ret;
	}
#endif
	for (i = 0; i < count; i++)
		printf("%s\n", (const char *)buf + (size_t)i * ETH_GSTRING_LEN);
	free(buf);
	return 0;
}
