// SPDX-License-Identifier: GPL-2.0
/*
 * tailrr - request/response workload for tail-latency tests and benchmarks.
 *
 * The server answers every fixed-size request (64 bytes) with two write()
 * calls, a body and then a short trailer, under TCP_NODELAY.  That is the
 * shape that makes tcp_push() autocork the trailer behind the body while the
 * body still sits below TCP (in a qdisc or a NIC ring), so a lost TSQ
 * wake-up leaves the trailer stuck until the peer's delayed ACK arrives.
 *
 * The client runs an open loop by default: request i is due at t0 + i / R,
 * whatever happened to earlier requests, and its latency is measured from
 * that intended time to the arrival of the last byte of its reply, so a
 * stall is charged to every request queued behind it (no coordinated
 * omission).  With --closed it keeps one request outstanding per connection
 * and reports transactions per second instead.  The client leaves delayed
 * ACKs alone: no TCP_QUICKACK, no TCP_NODELAY.
 *
 *	tailrr server --bind ADDR --port P [--body N] [--trailer M]
 *		      [--nodelay 0|1] [--cc NAME] [--ready-file F]
 *	tailrr client --server ADDR --port P --requests N --rate R [--conns C]
 *		      [--body N] [--trailer M] [--raw FILE] [--slow-ms X]
 *		      [--stall-s S] [--cc NAME] [--delack]
 *	tailrr client --server ADDR --port P --closed --duration S [--conns C]
 *
 * The client prints key=value lines; latencies are in microseconds and the
 * percentiles are exact (nearest rank over the sorted samples).
 * Exit status: 0 done, 1 usage or set-up error, 2 stalled or broken run.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define REQ_SIZE	64
#define MAX_CONNS	4096
#define MAX_REQUESTS	100000000ULL
#define NSEC_PER_SEC	1000000000ULL
#define NSEC_PER_MSEC	1000000ULL

struct opts {
	const char *addr;
	const char *cc;
	const char *ready_file;
	const char *raw_file;
	int port;
	long body;
	long trailer;
	int nodelay;
	unsigned long long requests;
	double rate;
	int conns;
	int closed;
	double duration;
	double slow_ms;
	double stall_s;
	int delack;
};

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tailrr: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Parse a numeric socket address (no name lookup: this binary is static). */
static socklen_t parse_addr(const char *addr, int port,
			    struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return sizeof(*sin);
	}
	if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return sizeof(*sin6);
	}
	die(1, "'%s' is not a numeric IPv4 or IPv6 address", addr);
	return 0;
}

static int set_cc(int fd, const char *cc)
{
	if (!cc)
		return 0;
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc));
}

/* ---- server ------------------------------------------------------------ */

static const struct opts *srv;
static char *reply_buf;		/* max(body, trailer) bytes, read-only */
static unsigned long srv_conns, srv_requests;
static int srv_stop;		/* set by the SIGTERM/SIGINT handler */

static void on_stop_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&srv_stop, 1, __ATOMIC_RELAXED);
}

/* Write all of len bytes with one write() call, more only if it comes short. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[16384];
	size_t have = 0;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		while (have >= REQ_SIZE) {
			have -= REQ_SIZE;
			if (write_all(fd, reply_buf, (size_t)srv->body))
				goto out;
			if (srv->trailer &&
			    write_all(fd, reply_buf, (size_t)srv->trailer))
				goto out;
			__atomic_add_fetch(&srv_requests, 1, __ATOMIC_RELAXED);
		}
	}
out:
	close(fd);
	return NULL;
}

static void write_ready_file(const char *path, int port)
{
	char tmp[PATH_MAX];
	FILE *f;

	/* Write then rename, so a waiter never sees a half-written file. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die(1, "cannot create %s: %s", tmp, strerror(errno));
	fprintf(f, "%d\n", port);
	if (fclose(f) || rename(tmp, path))
		die(1, "cannot create %s: %s", path, strerror(errno));
}

static int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static int run_server(const struct opts *o)
{
	struct sockaddr_storage ss;
	struct sigaction sa;
	pthread_attr_t attr;
	sigset_t block, waitmask;
	socklen_t len;
	int lfd, one = 1;

	srv = o;
	reply_buf = malloc((size_t)(o->body > o->trailer ? o->body : o->trailer) + 1);
	if (!reply_buf)
		die(1, "out of memory");
	memset(reply_buf, 'x', (size_t)(o->body > o->trailer ? o->body : o->trailer) + 1);

	if (o->ready_file)
		unlink(o->ready_file);

	/*
	 * SIGTERM/SIGINT stay blocked everywhere except inside ppoll() in
	 * this thread, so a signal can never slip in between the check of
	 * srv_stop and the wait.  Worker threads inherit the blocked mask.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);

	len = parse_addr(o->addr, o->port, &ss);
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die(1, "socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/*
	 * A congestion control set on the listener is inherited by the
	 * children and shapes the handshake (ECN for DCTCP); it is set again
	 * on every accepted socket below.
	 */
	if (set_cc(lfd, o->cc))
		die(1, "TCP_CONGESTION %s: %s", o->cc, strerror(errno));
	if (bind(lfd, (struct sockaddr *)&ss, len))
		die(1, "bind %s:%d: %s", o->addr, o->port, strerror(errno));
	if (listen(lfd, 1024))
		die(1, "listen: %s", strerror(errno));
	if (o->ready_file)
		write_ready_file(o->ready_file, local_port(lfd));

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);

	while (!__atomic_load_n(&srv_stop, __ATOMIC_RELAXED)) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		pthread_t th;
		int fd, r;

		r = ppoll(&pfd, 1, NULL, &waitmask);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die(1, "ppoll: %s", strerror(errno));
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EAGAIN)
				continue;
			die(1, "accept: %s", strerror(errno));
		}
		if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &o->nodelay,
			       sizeof(o->nodelay)))
			die(1, "TCP_NODELAY: %s", strerror(errno));
		if (set_cc(fd, o->cc))
			die(1, "TCP_CONGESTION %s on accepted socket: %s",
			    o->cc, strerror(errno));
		if (pthread_create(&th, &attr, serve_conn, (void *)(intptr_t)fd)) {
			fprintf(stderr, "tailrr: cannot start a thread, dropping a connection\n");
			close(fd);
			continue;
		}
		srv_conns++;
	}
	close(lfd);
	if (o->ready_file)
		unlink(o->ready_file);
	printf("connections=%lu\nrequests=%lu\n", srv_conns,
	       __atomic_load_n(&srv_requests, __ATOMIC_RELAXED));
	fflush(stdout);
	return 0;
}

/* ---- client ------------------------------------------------------------ */

struct conn {
	int fd;
	unsigned long long sent;	/* requests handed to this socket */
	unsigned long long done;	/* replies fully received */
	unsigned int tx_pending;	/* request bytes not yet accepted */
	long rx_left;			/* bytes missing from the current reply */
	uint64_t sent_at;		/* closed loop: send time of the request */
	int want_out;			/* EPOLLOUT armed */
};

struct samples {
	uint64_t *v;			/* latencies in ns */
	size_t n, cap;
};

static void samples_add(struct samples *s, uint64_t ns)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 65536;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			die(1, "out of memory for %zu samples", s->cap);
	}
	s->v[s->n++] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static unsigned long long pct_us(const struct samples *s, double p)
{
	size_t rank;

	if (!s->n)
		return 0;
	rank = (size_t)((p / 100.0) * (double)s->n + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return s->v[rank - 1] / 1000;
}

static void epoll_mod(int ep, struct conn *c, int idx, int want_out)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (want_out ? EPOLLOUT : 0),
		.data.u32 = (uint32_t)idx,
	};

	if (c->want_out == want_out)
		return;
	c->want_out = want_out;
	if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev))
		die(1, "epoll_ctl: %s", strerror(errno));
}

/* Push out queued request bytes; returns -1 when the connection broke. */
static int conn_flush(int ep, struct conn *c, int idx)
{
	static const char req[REQ_SIZE * 64];

	while (c->tx_pending) {
		size_t len = c->tx_pending < sizeof(req) ? c->tx_pending : sizeof(req);
		ssize_t n = send(c->fd, req, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		c->tx_pending -= (unsigned int)n;
	}
	epoll_mod(ep, c, idx, c->tx_pending != 0);
	return 0;
}

static int connect_to(const struct opts *o)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(o->addr, o->port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die(1, "socket: %s", strerror(errno));
	if (set_cc(fd, o->cc))
		die(1, "TCP_CONGESTION %s: %s", o->cc, strerror(errno));
	if (connect(fd, (struct sockaddr *)&ss, len))
		die(1, "connect %s:%d: %s", o->addr, o->port, strerror(errno));
	return fd;
}

static void arm_timer(int tfd, uint64_t at_ns)
{
	struct itimerspec its = {
		.it_value.tv_sec = (time_t)(at_ns / NSEC_PER_SEC),
		.it_value.tv_nsec = (long)(at_ns % NSEC_PER_SEC),
	};

	/* A zero it_value disarms the timer: never ask for time 0. */
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL))
		die(1, "timerfd_settime: %s", strerror(errno));
}

static int run_client(const struct opts *o)
{
	const long reply_size = o->body + o->trailer;
	unsigned long long total = o->requests, issued = 0, completed = 0;
	uint64_t t0, t_end = 0, last_progress, last_reply = 0;
	uint64_t interval_ns = 0, send_lag_max = 0, slow_ns, sum = 0;
	struct samples lat = { 0 };
	struct epoll_event ev;
	unsigned long long slow = 0;
	struct conn *conns;
	int ep, tfd, i, zero = 0;

	signal(SIGPIPE, SIG_IGN);
	conns = calloc((size_t)o->conns, sizeof(*conns));
	if (!conns)
		die(1, "out of memory");
	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ep < 0 || tfd < 0)
		die(1, "epoll/timerfd: %s", strerror(errno));
	ev.events = EPOLLIN;
	ev.data.u32 = UINT32_MAX;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev))
		die(1, "epoll_ctl: %s", strerror(errno));

	for (i = 0; i < o->conns; i++) {
		struct conn *c = &conns[i];

		c->fd = connect_to(o);
		c->rx_left = reply_size;
		ev.events = EPOLLIN;
		ev.data.u32 = (uint32_t)i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev))
			die(1, "epoll_ctl: %s", strerror(errno));
	}
	if (!o->closed) {
		interval_ns = (uint64_t)((double)NSEC_PER_SEC / o->rate);
		if (!interval_ns)
			interval_ns = 1;
	}
	if (!total)
		total = MAX_REQUESTS;
	if (total < MAX_REQUESTS) {
		/* No reallocation in the middle of a measurement. */
		lat.cap = (size_t)total;
		lat.v = malloc(lat.cap * sizeof(*lat.v));
		if (!lat.v)
			die(1, "out of memory for %zu samples", lat.cap);
	}

	t0 = now_ns();
	if (o->closed && o->duration > 0)
		t_end = t0 + (uint64_t)(o->duration * NSEC_PER_SEC);
	last_progress = t0;
	slow_ns = (uint64_t)(o->slow_ms * NSEC_PER_MSEC);

	for (;;) {
		struct epoll_event evs[64];
		uint64_t now = now_ns();
		int n, timeout_ms;
		int sending = issued < total && (!t_end || now < t_end);

		/* The stall clock runs only while a reply is owed. */
		if (completed == issued)
			last_progress = now;

		/* Issue every request that is due. */
		if (!o->closed) {
			while (issued < total && t0 + issued * interval_ns <= now) {
				struct conn *c = &conns[issued % (unsigned long long)o->conns];
				uint64_t lag = now - (t0 + issued * interval_ns);

				if (lag > send_lag_max)
					send_lag_max = lag;
				c->tx_pending += REQ_SIZE;
				c->sent++;
				issued++;
			}
		} else {
			for (i = 0; i < o->conns && sending; i++) {
				struct conn *c = &conns[i];

				if (c->sent != c->done || issued >= total)
					continue;
				c->tx_pending += REQ_SIZE;
				c->sent++;
				c->sent_at = now;
				issued++;
			}
		}
		for (i = 0; i < o->conns; i++)
			if (conns[i].tx_pending && conn_flush(ep, &conns[i], i))
				die(2, "send on connection %d: %s", i, strerror(errno));

		if (completed == issued && !sending)
			break;
		if (completed < issued &&
		    now - last_progress > (uint64_t)(o->stall_s * NSEC_PER_SEC))
			die(2, "no reply for %.0f s: %llu of %llu requests answered",
			    o->stall_s, completed, issued);

		if (!o->closed && issued < total)
			arm_timer(tfd, t0 + issued * interval_ns);
		timeout_ms = 1000;
		if (t_end && now < t_end && (t_end - now) / NSEC_PER_MSEC < 1000)
			timeout_ms = (int)((t_end - now) / NSEC_PER_MSEC) + 1;

		n = epoll_wait(ep, evs, 64, timeout_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(1, "epoll_wait: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			uint32_t idx = evs[i].data.u32;
			struct conn *c;
			char buf[65536];
			ssize_t got;
			uint64_t t;

			if (idx == UINT32_MAX) {
				uint64_t ticks;

				if (read(tfd, &ticks, sizeof(ticks)) < 0 &&
				    errno != EAGAIN)
					die(1, "timerfd read: %s", strerror(errno));
				continue;
			}
			c = &conns[idx];
			if ((evs[i].events & EPOLLOUT) && conn_flush(ep, c, (int)idx))
				die(2, "send on connection %u: %s", idx, strerror(errno));
			if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
				continue;
			got = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got < 0)
				die(2, "recv on connection %u: %s", idx, strerror(errno));
			if (got == 0)
				die(2, "server closed connection %u after %llu replies",
				    idx, c->done);
			/*
			 * --delack: stay in delayed-ACK (ping-pong) mode, as a
			 * request/response client in steady state is, whatever
			 * the kernel's heuristics did after a timer fired.
			 */
			if (o->delack)
				setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
			t = now_ns();
			last_progress = t;
			while (got > 0) {
				long take = got < c->rx_left ? (long)got : c->rx_left;
				unsigned long long req;
				uint64_t start, l;

				got -= take;
				c->rx_left -= take;
				if (c->rx_left)
					continue;
				c->rx_left = reply_size;
				if (c->done >= c->sent)
					die(2, "reply without a request on connection %u", idx);
				req = idx + c->done * (unsigned long long)o->conns;
				start = o->closed ? c->sent_at : t0 + req * interval_ns;
				c->done++;
				completed++;
				l = t - start;
				samples_add(&lat, l);
				sum += l;
				if (l >= slow_ns)
					slow++;
				last_reply = t;
			}
		}
	}

	if (o->raw_file) {
		FILE *f = fopen(o->raw_file, "w");
		size_t k;

		if (!f)
			die(1, "cannot write %s: %s", o->raw_file, strerror(errno));
		/* One latency per line, in the order the replies completed. */
		for (k = 0; k < lat.n; k++)
			fprintf(f, "%llu\n", (unsigned long long)(lat.v[k] / 1000));
		if (fclose(f))
			die(1, "cannot write %s: %s", o->raw_file, strerror(errno));
	}
	if (lat.n)
		qsort(lat.v, lat.n, sizeof(*lat.v), cmp_u64);

	printf("mode=%s\n", o->closed ? "closed" : "open");
	printf("conns=%d\n", o->conns);
	printf("requests=%llu\n", completed);
	if (o->closed) {
		double el = (double)(last_reply > t0 ? last_reply - t0 : 1) / NSEC_PER_SEC;

		printf("elapsed_s=%.3f\n", el);
		printf("tps=%.1f\n", (double)completed / el);
	} else {
		printf("rate=%g\n", o->rate);
		printf("send_lag_max_us=%llu\n", (unsigned long long)(send_lag_max / 1000));
	}
	printf("p50_us=%llu\n", pct_us(&lat, 50));
	printf("p90_us=%llu\n", pct_us(&lat, 90));
	printf("p99_us=%llu\n", pct_us(&lat, 99));
	printf("p999_us=%llu\n", pct_us(&lat, 99.9));
	printf("p9999_us=%llu\n", pct_us(&lat, 99.99));
	printf("max_us=%llu\n", lat.n ? (unsigned long long)(lat.v[lat.n - 1] / 1000) : 0ULL);
	printf("slow_ms=%g\n", o->slow_ms);
	printf("slow=%llu\n", slow);
	printf("mean_us=%.1f\n", lat.n ? (double)sum / (double)lat.n / 1000.0 : 0.0);
	fflush(stdout);
	for (i = 0; i < o->conns; i++)
		close(conns[i].fd);
	free(conns);
	free(lat.v);
	return 0;
}

/* ---- options ----------------------------------------------------------- */

static void print_usage(void)
{
	fprintf(stderr,
		"usage: tailrr server --bind ADDR --port P [--body N] [--trailer M]\n"
		"                     [--nodelay 0|1] [--cc NAME] [--ready-file F]\n"
		"       tailrr client --server ADDR --port P --requests N --rate R\n"
		"                     [--conns C] [--body N] [--trailer M] [--raw FILE]\n"
		"                     [--slow-ms X] [--stall-s S] [--cc NAME] [--delack]\n"
		"       tailrr client --server ADDR --port P --closed --duration S\n"
		"                     [--requests N] [--conns C] ...\n");
	exit(1);
}

static double num_arg(const char *name, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		die(1, "bad value '%s' for --%s (want %g..%g)", s, name, lo, hi);
	return v;
}

enum {
	OPT_BIND = 1, OPT_SERVER, OPT_PORT, OPT_BODY, OPT_TRAILER, OPT_NODELAY,
	OPT_CC, OPT_READY, OPT_REQUESTS, OPT_RATE, OPT_CONNS, OPT_RAW,
	OPT_SLOW, OPT_CLOSED, OPT_DURATION, OPT_STALL, OPT_DELACK, OPT_HELP,
};

static const struct option longopts[] = {
	{ "bind",	required_argument, NULL, OPT_BIND },
	{ "server",	required_argument, NULL, OPT_SERVER },
	{ "port",	required_argument, NULL, OPT_PORT },
	{ "body",	required_argument, NULL, OPT_BODY },
	{ "trailer",	required_argument, NULL, OPT_TRAILER },
	{ "nodelay",	required_argument, NULL, OPT_NODELAY },
	{ "cc",		required_argument, NULL, OPT_CC },
	{ "ready-file",	required_argument, NULL, OPT_READY },
	{ "requests",	required_argument, NULL, OPT_REQUESTS },
	{ "rate",	required_argument, NULL, OPT_RATE },
	{ "conns",	required_argument, NULL, OPT_CONNS },
	{ "raw",	required_argument, NULL, OPT_RAW },
	{ "slow-ms",	required_argument, NULL, OPT_SLOW },
	{ "closed",	no_argument,	   NULL, OPT_CLOSED },
	{ "duration",	required_argument, NULL, OPT_DURATION },
	{ "stall-s",	required_argument, NULL, OPT_STALL },
	{ "delack",	no_argument,	   NULL, OPT_DELACK },
	{ "help",	no_argument,	   NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

int main(int argc, char **argv)
{
	struct opts o = {
		.body = 1200, .trailer = 7, .nodelay = 1, .port = -1,
		.conns = 1, .slow_ms = 30, .stall_s = 30,
	};
	int server, c;

	if (argc < 2)
		print_usage();
	if (!strcmp(argv[1], "server"))
		server = 1;
	else if (!strcmp(argv[1], "client"))
		server = 0;
	else
		print_usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_BIND:
		case OPT_SERVER:
			o.addr = optarg;
			break;
		case OPT_PORT:
			o.port = (int)num_arg("port", optarg, 0, 65535);
			break;
		case OPT_BODY:
			o.body = (long)num_arg("body", optarg, 1, 1 << 24);
			break;
		case OPT_TRAILER:
			o.trailer = (long)num_arg("trailer", optarg, 0, 1 << 24);
			break;
		case OPT_NODELAY:
			o.nodelay = (int)num_arg("nodelay", optarg, 0, 1);
			break;
		case OPT_CC:
			o.cc = optarg;
			break;
		case OPT_READY:
			o.ready_file = optarg;
			break;
		case OPT_REQUESTS:
			o.requests = (unsigned long long)num_arg("requests", optarg,
								 1, MAX_REQUESTS);
			break;
		case OPT_RATE:
			o.rate = num_arg("rate", optarg, 0.001, 1e9);
			break;
		case OPT_CONNS:
			o.conns = (int)num_arg("conns", optarg, 1, MAX_CONNS);
			break;
		case OPT_RAW:
			o.raw_file = optarg;
			break;
		case OPT_SLOW:
			o.slow_ms = num_arg("slow-ms", optarg, 0, 1e9);
			break;
		case OPT_CLOSED:
			o.closed = 1;
			break;
		case OPT_DURATION:
			o.duration = num_arg("duration", optarg, 0.001, 1e6);
			break;
		case OPT_STALL:
			o.stall_s = num_arg("stall-s", optarg, 0.1, 1e6);
			break;
		case OPT_DELACK:
			o.delack = 1;
			break;
		default:
			print_usage();
		}
	}
	if (optind != argc)
		print_usage();
	if (!o.addr || o.port < 0)
		die(1, "--%s and --port are required", server ? "bind" : "server");
	if (server)
		return run_server(&o);
	if (!server && o.port == 0)
		die(1, "--port 0 is only for the server");
	if (o.closed) {
		if (!o.duration && !o.requests)
			die(1, "--closed needs --duration (or --requests)");
	} else if (!o.requests || !o.rate) {
		die(1, "open loop needs --requests and --rate");
	}
	return run_client(&o);
}
