// SPDX-License-Identifier: GPL-2.0
/*
 * rpcbench: back-to-back RPCs and bulk streams for the dctcp_fixed benchmark.
 *
 *   rpcbench server -p PORT [-C CC]
 *	accept connections (one process each); a connection starts with a
 *	4-byte request size: 0 means a stream (read until EOF), otherwise
 *	read requests of that many bytes and answer each with 8 bytes.
 *   rpcbench rpc -H HOST -p PORT -s SIZE -t SECS [-C CC] [-o FILE]
 *	send back-to-back requests of SIZE bytes for SECS seconds; write one
 *	latency (microseconds, send start to reply end) per line to FILE.
 *   rpcbench stream -H HOST -p PORT -t SECS [-C CC]
 *	send for SECS seconds, print "bytes B secs S mbit M".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *host = "127.0.0.1";
static const char *cc;
static const char *outfile;
static int port = 5500;
static long size = 10000;
static double secs = 10;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void set_cc(int fd)
{
	int one = 1;

	if (cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc)))
		die("TCP_CONGESTION");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static void serve(int fd)
{
	static char buf[1 << 16];
	uint32_t req;
	long left;

	if (read_full(fd, &req, sizeof(req)))
		exit(0);
	req = ntohl(req);
	if (!req) {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		exit(0);
	}
	for (;;) {
		for (left = req; left > 0; ) {
			ssize_t n = read(fd, buf, left < (long)sizeof(buf) ?
					 (size_t)left : sizeof(buf));
			if (n <= 0)
				exit(0);
			left -= n;
		}
		if (write_full(fd, buf, 8))
			exit(0);
	}
}

static int server(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	signal(SIGCHLD, SIG_IGN);
	set_cc(l);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 64))
		die("bind/listen");
	for (;;) {
		int c = accept(l, NULL, NULL);

		if (c < 0) {
			if (errno == EINTR)
				continue;
			die("accept");
		}
		if (!fork()) {
			close(l);
			serve(c);
		}
		close(c);
	}
	return 0;
}

static int dial(uint32_t req)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	set_cc(fd);
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		die("address");
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	req = htonl(req);
	if (write_full(fd, &req, sizeof(req)))
		die("write");
	return fd;
}

static int rpc(void)
{
	int fd = dial(size);
	char *buf = calloc(1, size);
	FILE *out = outfile ? fopen(outfile, "w") : stdout;
	double end = now() + secs, t0;
	char reply[8];
	long n = 0;

	if (!buf || !out)
		die("setup");
	while ((t0 = now()) < end) {
		if (write_full(fd, buf, size) || read_full(fd, reply, 8))
			die("rpc");
		fprintf(out, "%.1f\n", (now() - t0) * 1e6);
		n++;
	}
	fclose(out);
	fprintf(stderr, "rpcbench: %ld RPCs of %ld bytes\n", n, size);
	return 0;
}

static int stream(void)
{
	static char buf[1 << 16];
	int fd = dial(0);
	double t0 = now(), end = t0 + secs, t;
	long long bytes = 0;

	while ((t = now()) < end) {
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n <= 0)
			die("stream");
		bytes += n;
	}
	t = now() - t0;
	printf("bytes %lld secs %.3f mbit %.2f\n", bytes, t, bytes * 8 / t / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int o;

	optind = 2;
	while ((o = getopt(argc, argv, "H:p:s:t:C:o:")) != -1) {
		switch (o) {
		case 'H':
			host = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 's':
			size = atol(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'C':
			cc = optarg;
			break;
		case 'o':
			outfile = optarg;
			break;
		default:
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(mode, "server"))
		return server();
	if (!strcmp(mode, "rpc") && size > 0)
		return rpc();
	if (!strcmp(mode, "stream"))
		return stream();
	fprintf(stderr, "usage: rpcbench server|rpc|stream [-H host] [-p port] [-s size]\n"
		"                [-t secs] [-C cc] [-o file]\n");
	return 2;
}
