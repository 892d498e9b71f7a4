// SPDX-License-Identifier: GPL-2.0
/*
 * The ethtool -S strings of an ENA driver (amzn-drivers' or the kernel's
 * own), as the driver lists them, run in user space.
 *
 * ena_ethtool_strings.sh preprocesses ena_ethtool.c with the kernel's own
 * build (so its #ifdefs are decided as for the module) and keeps, from the
 * file's own text, the string tables and the functions that count and list
 * the strings (ena_get_sset_count(), ena_get_ethtool_strings() and what
 * they call).  That text is included here, between stand-ins for the few
 * kernel and device calls it makes.
 *
 *	ena_ethtool_strings QUEUES [e][m][s][p][x]
 *
 * QUEUES is the adapter's max_num_io_queues; the letters are the device's
 * capabilities: ENI statistics, customer metrics (all supported), ENA SRD
 * information, an active PHC; x adds as many XDP Tx rings as there are
 * queues, after them (as the kernel's driver does with an XDP program).
 * Prints the strings, one a line, in ETHTOOL_GSTRINGS order.  Exits 1,
 * with nothing on stdout, when the driver writes more or fewer strings
 * than ena_get_sset_count() promised, or an empty or unterminated one.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

#define ETH_GSTRING_LEN 32
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum { ETH_SS_STATS = 1, ETH_SS_PRIV_FLAGS = 2 };

enum ena_admin_aq_caps_id {
	ENA_ADMIN_ENI_STATS,
	ENA_ADMIN_ENA_SRD_INFO,
	ENA_ADMIN_CUSTOMER_METRICS,
};

struct ena_com_dev {
	unsigned int caps;
	unsigned int metrics;		/* customer metrics supported */
};

struct ena_adapter {
	struct ena_com_dev *ena_dev;
	int max_num_io_queues;
	int num_io_queues;
	int xdp_first_ring;
	int xdp_num_queues;
	bool eni_stats_supported;	/* the kernel's 5.10 driver */
	bool phc_active;
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

#include ENA_ETHTOOL_EXTRACT

/* Bytes after the promised strings, filled with GUARD, must stay so */
#define GUARD		0xa5
#define GUARD_LEN	(8 * ETH_GSTRING_LEN)

int main(int argc, char **argv)
{
	struct ena_com_dev dev = { 0 };
	struct net_device netdev = { .adapter.ena_dev = &dev };
	struct ena_adapter *adapter = &netdev.adapter;
	const char *caps = argc > 2 ? argv[2] : "";
	int count, i;
	u8 *buf;

	if (argc < 2 || atoi(argv[1]) < 1) {
		fprintf(stderr, "usage: %s QUEUES [e][m][s][p][x]\n", argv[0]);
		return 2;
	}
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
	for (i = 0; i < count; i++)
		printf("%s\n", (const char *)buf + (size_t)i * ETH_GSTRING_LEN);
	free(buf);
	return 0;
}
