/* Signals against /dev/neuron0 inside `neuronfs run`, as the driver
 * (2.25.4.0) answers them.
 *
 *   sigalrm_check alarm SECONDS NCMAP
 *     A SIGALRM handler (SA_RESTART) and a 100 us ITIMER_REAL timer run
 *     while the process loops over every long or blocking command: buffer
 *     copies both ways, MEM_COPY64, MEMSET64, MEM_COPY_ASYNC64 and
 *     MEM_COPY_ASYNC_WAIT, HBM_SCRUB_START/WAIT, NC_RESET (cores NCMAP)
 *     and NC_RESET_READY, CRWL enter/exit contended by a second thread,
 *     and a DMA queue of its own (DMA_QUEUE_INIT, DMA_COPY_DESCRIPTORS64,
 *     DMA_QUEUE_COPY_START). The driver never looks at signals there: any
 *     EINTR is a failure, and so is a copy whose data has not landed when
 *     its wait returns.
 *
 *   sigalrm_check sigterm NCMAP LATENCY_MS
 *     The reset-ready waits end early only when SIGTERM or SIGKILL is in
 *     the thread's private pending set (current->pending.signal), and they
 *     report it in the struct, not as errno: NC_RESET_READY returns 0 with
 *     result -EINTR, DEVICE_READY returns 0 with the byte 0. The request
 *     stays queued; a later wait reaps it. A process-wide pending SIGTERM
 *     (kill(2), in the shared set) does not end the wait. LATENCY_MS is
 *     how long the emulated reset takes (run it with a long one).
 *
 * Command numbers and structs come from neuron_abi.h, which the Go test
 * generates from package ioctl. Prints "sigalrm ok" or "sigterm ok". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "neuron_abi.h"

#define MiB (1u << 20)
#define BIG (4 * MiB)     /* buffer copies, MEM_COPY64, async copies */
#define DMA_BYTES (1 * MiB)
#define RING_DESCS 64
#define DMA_ENG 2         /* an engine of core 0 */
#define DMA_QID 3
#define CRWL_NC 0
#define SCRUB_CHANNEL 1   /* the data lives on channel 0 and in host memory */

static int fd;
static volatile sig_atomic_t alarms, terms;
static volatile int stop;

static void on_alarm(int s) { (void)s; alarms++; }
static void on_term(int s) { (void)s; terms++; }

enum {
	C_BUF_TO, C_BUF_FROM, C_MEMSET, C_COPY, C_ASYNC, C_ASYNC_WAIT, C_SCRUB_START, C_SCRUB_WAIT,
	C_RESET, C_RESET_READY, C_READER_ENTER, C_READER_EXIT, C_WRITER_ENTER, C_WRITER_DOWNGRADE,
	C_DMA_DESCS, C_DMA_START, C_N
};
static const char *names[C_N] = {
	"MEM_BUF_COPY64 to", "MEM_BUF_COPY64 from", "MEMSET64", "MEM_COPY64", "MEM_COPY_ASYNC64",
	"MEM_COPY_ASYNC_WAIT", "HBM_SCRUB_START", "HBM_SCRUB_WAIT", "NC_RESET", "NC_RESET_READY",
	"CRWL_READER_ENTER", "CRWL_READER_EXIT", "CRWL_WRITER_ENTER", "CRWL_WRITER_DOWNGRADE",
	"DMA_COPY_DESCRIPTORS64", "DMA_QUEUE_COPY_START",
};
static long calls[C_N], eintrs[C_N], others[C_N];
static long bad_data;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;

/* call issues one counted command; ok_errno is an errno that also counts
 * as success (EALREADY for a second writer of a loaded model). It
 * returns 0 on success, -1 otherwise. */
static int call(int which, unsigned long cmd, void *arg, int ok_errno) {
	int r = ioctl(fd, cmd, arg);
	int e = errno;
	pthread_mutex_lock(&count_mu);
	calls[which]++;
	int fail = 0;
	if (r == -1 && e == EINTR) {
		if (eintrs[which]++ < 3)
			fprintf(stderr, "%s: EINTR\n", names[which]);
		fail = 1;
	} else if (r != 0 && !(r == -1 && ok_errno && e == ok_errno)) {
		if (others[which]++ < 3)
			fprintf(stderr, "%s: ioctl = %d, errno %d (%s)\n", names[which], r, r == -1 ? e : 0, r == -1 ? strerror(e) : "-");
		fail = 1;
	}
	pthread_mutex_unlock(&count_mu);
	return fail ? -1 : 0;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* pause_us sleeps through signals. */
static void pause_us(long us) {
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
	}
}

static int must(int r, const char *what) {
	if (r != 0) {
		fprintf(stderr, "setup: %s: %s\n", what, strerror(errno));
		exit(2);
	}
	return r;
}

struct mem {
	uint64_t handle, pa;
};

static struct mem alloc_mem(uint64_t size, int host) {
	struct mem m = {0, 0};
	struct MemAllocV2MemType64 a;
	memset(&a, 0, sizeof a);
	a.Size = size;
	a.HostMemory = host;
	a.MemType = host ? 0 : MEM_TYPE_UNKNOWN_DEVICE;
	a.MemHandle = (uint64_t)(uintptr_t)&m.handle;
	must(ioctl(fd, NEURON_IOCTL_MEM_ALLOC_V2MT64, &a), "MEM_ALLOC_V2MT64");
	struct MemGetExtendedInfo i;
	memset(&i, 0, sizeof i);
	i.MemHandle = m.handle;
	must(ioctl(fd, NEURON_IOCTL_MEM_GET_EXTENDED_INFO, &i), "MEM_GET_EXTENDED_INFO");
	m.pa = i.MmapOffset;
	return m;
}

static int buf_copy(struct mem m, void *buf, uint64_t size, int to_device) {
	struct MemBufCopy64 v;
	memset(&v, 0, sizeof v);
	v.MemHandle = m.handle;
	v.Buffer = (uint64_t)(uintptr_t)buf;
	v.Size = size;
	v.CopyToMemHandle = to_device;
	return call(to_device ? C_BUF_TO : C_BUF_FROM, NEURON_IOCTL_MEM_BUF_COPY64, &v, 0);
}

static int memset_mem(struct mem m, uint64_t size, uint32_t value) {
	struct Memset64 v;
	memset(&v, 0, sizeof v);
	v.MemHandle = m.handle;
	v.Size = size;
	v.Value = value;
	return call(C_MEMSET, NEURON_IOCTL_MEMSET64, &v, 0);
}

static uint8_t *scratch;

/* check reads size bytes of m back and wants every byte to be value. */
static void check(struct mem m, uint64_t size, uint8_t value, const char *after) {
	if (buf_copy(m, scratch, size, 0) != 0)
		return;
	for (uint64_t i = 0; i < size; i++) {
		if (scratch[i] != value) {
			if (bad_data++ < 3)
				fprintf(stderr, "after %s: byte %llu is %#x, want %#x: the copy had not landed\n", after, (unsigned long long)i, scratch[i], value);
			return;
		}
	}
}

static int copy_async(struct mem src, uint64_t srcOff, struct mem dst, uint64_t dstOff, uint64_t size, int32_t prev, uint32_t *handle) {
	struct MemCopyAsync64 v;
	memset(&v, 0, sizeof v);
	v.SrcMemHandle = src.handle;
	v.DstMemHandle = dst.handle;
	v.Size = size;
	v.SrcOffset = srcOff;
	v.DstOffset = dstOff;
	v.PwaitHandle = (uint32_t)prev;
	int r = call(C_ASYNC, NEURON_IOCTL_MEM_COPY_ASYNC64, &v, 0);
	*handle = v.WaitHandle;
	return r;
}

static int copy_wait(struct mem src, struct mem dst, uint32_t handle) {
	struct MemCopyAsyncWait v;
	memset(&v, 0, sizeof v);
	v.SrcMemHandle = src.handle;
	v.DstMemHandle = dst.handle;
	v.PwaitHandle = handle;
	return call(C_ASYNC_WAIT, NEURON_IOCTL_MEM_COPY_ASYNC_WAIT, &v, 0);
}

static int crwl(int which, unsigned long cmd, int ok_errno) {
	struct CRWL v;
	memset(&v, 0, sizeof v);
	v.NCID = CRWL_NC;
	memcpy(v.UUID.Value, "sigalrm_check model", 19);
	return call(which, cmd, &v, ok_errno);
}

/* writer_cycle loads the model (writer), holds it, and becomes a reader
 * that leaves. */
static void writer_cycle(long hold_us) {
	if (crwl(C_WRITER_ENTER, NEURON_IOCTL_CRWL_WRITER_ENTER, EALREADY) != 0)
		return;
	pause_us(hold_us);
	if (crwl(C_WRITER_DOWNGRADE, NEURON_IOCTL_CRWL_WRITER_DOWNGRADE, 0) != 0)
		return;
	crwl(C_READER_EXIT, NEURON_IOCTL_CRWL_READER_EXIT, 0);
}

static void reader_cycle(long hold_us) {
	if (crwl(C_READER_ENTER, NEURON_IOCTL_CRWL_READER_ENTER, 0) != 0)
		return;
	pause_us(hold_us);
	crwl(C_READER_EXIT, NEURON_IOCTL_CRWL_READER_EXIT, 0);
}

/* crwl_holder keeps the lock busy so that the main thread's enters wait. */
static void *crwl_holder(void *arg) {
	(void)arg;
	while (!stop) {
		writer_cycle(300);
		pause_us(50);
		reader_cycle(300);
		pause_us(50);
	}
	return NULL;
}

static void put32(uint8_t *b, uint32_t v) { memcpy(b, &v, 4); }
static void put64(uint8_t *b, uint64_t v) { memcpy(b, &v, 8); }

/* The client's own DMA queue: rings in host memory, a completion marker
 * that the last copy of a batch moves from word 0 to word 1. */
struct queue {
	struct mem tx, rx, marker;
	volatile uint32_t *mark;
	uint32_t next;
	uint8_t ring_id;
};

static void queue_init(struct queue *q) {
	q->tx = alloc_mem(RING_DESCS * DMA_DESC_SIZE, 1);
	q->rx = alloc_mem(RING_DESCS * DMA_DESC_SIZE, 1);
	q->marker = alloc_mem(4096, 1);
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)q->marker.pa);
	if (p == MAP_FAILED) {
		perror("setup: mmap of the marker");
		exit(2);
	}
	q->mark = p;
	q->mark[0] = DMA_COMPLETION_VALUE;
	q->mark[1] = 0;
	q->next = 0;
	q->ring_id = DMA_INITIAL_RING_ID;
	struct DMAQueueInit v;
	memset(&v, 0, sizeof v);
	v.EngID = DMA_ENG;
	v.QID = DMA_QID;
	v.TXDescCount = RING_DESCS;
	v.RXDescCount = RING_DESCS;
	v.TXHandle = q->tx.handle;
	v.RXHandle = q->rx.handle;
	must(ioctl(fd, NEURON_IOCTL_DMA_QUEUE_INIT, &v), "DMA_QUEUE_INIT");
}

/* queue_copy moves size bytes (a multiple of 64 KiB, at most 63 pieces)
 * from src to dst physical addresses, rings the doorbell and polls the
 * marker (at most 10 s). It returns 0 when the marker landed. */
static int queue_copy(struct queue *q, uint64_t src, uint64_t dst, uint64_t size) {
	uint8_t tx[RING_DESCS * DMA_DESC_SIZE], rx[RING_DESCS * DMA_DESC_SIZE];
	uint32_t n = 0, slot = q->next;
	uint8_t id = q->ring_id;
	for (uint64_t off = 0; off <= size; off += 65536) {
		uint64_t s = src + off, d = dst + off;
		uint32_t len = 65536;
		if (off == size) /* the marker */
			s = q->marker.pa, d = q->marker.pa + 4, len = 4;
		uint32_t ctrl = (len & DMA_DESC_LEN_MASK) | ((uint32_t)(id & 3) << DMA_DESC_RING_ID_SHIFT) | DMA_DESC_FIRST | DMA_DESC_LAST;
		put32(tx + n * DMA_DESC_SIZE, ctrl);
		put32(tx + n * DMA_DESC_SIZE + 4, DMA_DESC_META_DEFAULT);
		put64(tx + n * DMA_DESC_SIZE + 8, s);
		put32(rx + n * DMA_DESC_SIZE, ctrl);
		put32(rx + n * DMA_DESC_SIZE + 4, 0);
		put64(rx + n * DMA_DESC_SIZE + 8, d);
		n++;
		if (++slot == RING_DESCS)
			slot = 0, id = (id + 1) & 3;
	}
	/* Write both rings, split where they wrap. */
	for (uint32_t start = 0; start < n;) {
		uint32_t k = n - start;
		if (k > RING_DESCS - q->next)
			k = RING_DESCS - q->next;
		for (int side = 0; side < 2; side++) {
			struct DMACopyDescriptors64 v;
			memset(&v, 0, sizeof v);
			v.MemHandle = side ? q->rx.handle : q->tx.handle;
			v.Buffer = (uint64_t)(uintptr_t)((side ? rx : tx) + start * DMA_DESC_SIZE);
			v.NumDescs = k;
			v.Offset = (uint64_t)q->next * DMA_DESC_SIZE;
			v.QueueType = side; /* 0 TX, 1 RX */
			if (call(C_DMA_DESCS, NEURON_IOCTL_DMA_COPY_DESCRIPTORS64, &v, 0) != 0)
				return -1;
		}
		q->next += k;
		if (q->next == RING_DESCS)
			q->next = 0, q->ring_id = (q->ring_id + 1) & 3;
		start += k;
	}
	struct DMAQueueCopyStart v = {DMA_ENG, DMA_QID, n, n};
	if (call(C_DMA_START, NEURON_IOCTL_DMA_QUEUE_COPY_START, &v, 0) != 0)
		return -1;
	double deadline = now() + 10;
	while (__atomic_load_n(&q->mark[1], __ATOMIC_ACQUIRE) != DMA_COMPLETION_VALUE) {
		if (now() > deadline) {
			fprintf(stderr, "DMA queue: the completion marker never landed\n");
			bad_data++;
			return -1;
		}
		pause_us(20);
	}
	q->mark[1] = 0;
	return 0;
}

static void start_timer(long us) {
	struct itimerval it = {{0, us}, {0, us}};
	setitimer(ITIMER_REAL, &it, NULL);
}

static int alarm_phase(double seconds, uint32_t ncmap) {
	struct mem dev = alloc_mem(BIG, 0), dev2 = alloc_mem(BIG, 0), host = alloc_mem(BIG, 1);
	struct mem dmadst = alloc_mem(DMA_BYTES, 0);
	struct queue q;
	queue_init(&q);
	uint8_t *u1 = malloc(BIG), *u2 = malloc(BIG);
	scratch = malloc(BIG);
	/* The lock's first writer, so that readers find the model. */
	writer_cycle(0);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	pthread_t holder;
	if (pthread_create(&holder, NULL, crwl_holder, NULL) != 0) {
		fprintf(stderr, "setup: pthread_create\n");
		return 2;
	}
	start_timer(100);
	double end = now() + seconds;
	long iter = 0;
	while (now() < end) {
		iter++;
		uint8_t v = (uint8_t)(iter * 7 + 1);
		char what[64];

		/* Buffer copies both ways. */
		for (uint32_t i = 0; i < BIG; i++)
			u1[i] = (uint8_t)(i * 13 + iter);
		if (buf_copy(dev, u1, BIG, 1) == 0 && buf_copy(dev, u2, BIG, 0) == 0 && memcmp(u1, u2, BIG) != 0 && bad_data++ < 3)
			fprintf(stderr, "MEM_BUF_COPY64 round trip differs\n");

		/* MEMSET64 and MEM_COPY64. */
		memset_mem(host, BIG, v);
		if (call(C_COPY, NEURON_IOCTL_MEM_COPY64, &(struct MemCopy64){.SrcMemHandle = host.handle, .DstMemHandle = dev2.handle, .Size = BIG}, 0) == 0)
			check(dev2, BIG, v, "MEM_COPY64");

		/* An async copy and its wait. */
		uint32_t h1, h2;
		memset_mem(dev, BIG, 0);
		if (copy_async(host, 0, dev, 0, BIG, -1, &h1) == 0 && copy_wait(host, dev, h1) == 0)
			check(dev, BIG, v, "MEM_COPY_ASYNC_WAIT");
		/* Two chained: the second waits for the first, the wait for both. */
		memset_mem(dev, BIG, 0);
		if (copy_async(host, 0, dev, 0, BIG / 2, -1, &h1) == 0 &&
		    copy_async(host, BIG / 2, dev, BIG / 2, BIG / 2, (int32_t)h1, &h2) == 0 &&
		    copy_wait(host, dev, h2) == 0)
			check(dev, BIG, v, "chained MEM_COPY_ASYNC64 and MEM_COPY_ASYNC_WAIT");

		/* The client's own DMA queue. */
		memset_mem(dmadst, DMA_BYTES, 0);
		if (queue_copy(&q, host.pa, dmadst.pa, DMA_BYTES) == 0) {
			snprintf(what, sizeof what, "DMA_QUEUE_COPY_START (iteration %ld)", iter);
			check(dmadst, DMA_BYTES, v, what);
		}

		/* HBM scrub of a channel no data lives on. */
		struct HBMScrubStart ss = {.NCID = 0, .HBMIndex = SCRUB_CHANNEL, .InitVal = 0};
		if (call(C_SCRUB_START, NEURON_IOCTL_HBM_SCRUB_START, &ss, 0) == 0) {
			struct HBMScrubWait sw = {.NCID = 0, .HBMIndex = SCRUB_CHANNEL};
			call(C_SCRUB_WAIT, NEURON_IOCTL_HBM_SCRUB_WAIT, &sw, 0);
		}

		/* A core reset and its wait. */
		struct DeviceReset rs = {.NCMap = ncmap};
		if (call(C_RESET, NEURON_IOCTL_NC_RESET, &rs, 0) == 0) {
			struct DeviceReady rd = {.RequestID = rs.RequestID, .Result = 7};
			if (call(C_RESET_READY, NEURON_IOCTL_NC_RESET_READY, &rd, 0) == 0 && rd.Result != 0) {
				pthread_mutex_lock(&count_mu);
				if (others[C_RESET_READY]++ < 3)
					fprintf(stderr, "NC_RESET_READY: result %d, want 0\n", rd.Result);
				pthread_mutex_unlock(&count_mu);
			}
		}

		/* The model lock, against the holder thread. */
		reader_cycle(0);
		writer_cycle(0);
	}
	start_timer(0);
	stop = 1;
	pthread_join(holder, NULL);

	long eintr = 0, other = 0;
	for (int i = 0; i < C_N; i++) {
		printf("%-24s calls %6ld  EINTR %5ld  other failures %ld\n", names[i], calls[i], eintrs[i], others[i]);
		eintr += eintrs[i];
		other += others[i];
	}
	printf("%ld iterations, %ld SIGALRMs, %ld EINTR, %ld other failures, %ld copies not landed\n", iter, (long)alarms, eintr, other, bad_data);
	if (eintr || other || bad_data || iter == 0)
		return 1;
	printf("sigalrm ok\n");
	return 0;
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static int term_pending(void) {
	sigset_t p;
	sigpending(&p);
	return sigismember(&p, SIGTERM);
}

/* nc_reset_ready_with_term: NC_RESET, then NC_RESET_READY with SIGTERM
 * pending as kill_how says ("thread": tgkill, private; "process": kill,
 * shared). It returns the wait's result, or 100+ on a failed call, and
 * how long the reset had been running when the wait began. */
static int nc_reset_ready_with_term(uint32_t ncmap, const char *kill_how, uint32_t *id, double *lag) {
	struct DeviceReset rs = {.NCMap = ncmap};
	if (ioctl(fd, NEURON_IOCTL_NC_RESET, &rs) != 0) {
		fprintf(stderr, "NC_RESET: %s\n", strerror(errno));
		return 100;
	}
	double started = now();
	if (!strcmp(kill_how, "thread"))
		syscall(SYS_tgkill, getpid(), gettid_(), SIGTERM);
	else
		kill(getpid(), SIGTERM);
	if (!term_pending()) {
		fprintf(stderr, "SIGTERM is not pending after %s kill\n", kill_how);
		return 101;
	}
	struct DeviceReady rd = {.RequestID = rs.RequestID, .Result = 7};
	*id = rs.RequestID;
	*lag = now() - started;
	int r = ioctl(fd, NEURON_IOCTL_NC_RESET_READY, &rd);
	if (r != 0) {
		fprintf(stderr, "NC_RESET_READY with SIGTERM pending (%s): ioctl = %d, errno %d (%s); the driver returns 0 and reports in the struct\n",
			kill_how, r, errno, strerror(errno));
		return 102;
	}
	return rd.Result;
}

static int unblock_and_take_term(sigset_t *term, int want_terms) {
	pthread_sigmask(SIG_UNBLOCK, term, NULL);
	if (terms != want_terms) {
		fprintf(stderr, "the SIGTERM handler ran %d times, want %d\n", (int)terms, want_terms);
		return -1;
	}
	return 0;
}

static int reap(uint32_t id, int32_t want, const char *what) {
	struct DeviceReady rd = {.RequestID = id, .Result = 7};
	int r = ioctl(fd, NEURON_IOCTL_NC_RESET_READY, &rd);
	if (r != 0 || rd.Result != want) {
		fprintf(stderr, "%s: NC_RESET_READY = %d (%s), result %d; want 0, result %d\n", what, r, r ? strerror(errno) : "-", rd.Result, want);
		return -1;
	}
	return 0;
}

static int sigterm_phase(uint32_t ncmap, double latency) {
	int fails = 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);

	/* 0. Other signals during a reset wait change nothing. */
	struct DeviceReset rs = {.NCMap = ncmap};
	must(ioctl(fd, NEURON_IOCTL_NC_RESET, &rs), "NC_RESET");
	start_timer(100);
	struct DeviceReady rd = {.RequestID = rs.RequestID, .Result = 7};
	int r = ioctl(fd, NEURON_IOCTL_NC_RESET_READY, &rd);
	int e = errno;
	start_timer(0);
	if (r != 0 || rd.Result != 0) {
		fprintf(stderr, "NC_RESET_READY under a 100 us SIGALRM timer: ioctl = %d (%s), result %d; want 0, result 0\n", r, r ? strerror(e) : "-", rd.Result);
		fails++;
	}
	printf("reset wait under SIGALRM: ioctl %d, result %d, %ld SIGALRMs\n", r, rd.Result, (long)alarms);

	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	int want_terms = 0;

	/* 1. SIGTERM pending in this thread: result -EINTR at once, request
	 *    kept; the next wait reaps it. If the machine was so slow that the
	 *    reset may have ended before the wait began, try again. */
	for (int attempt = 1;; attempt++) {
		uint32_t id;
		double lag;
		pthread_sigmask(SIG_BLOCK, &term, NULL);
		int res = nc_reset_ready_with_term(ncmap, "thread", &id, &lag);
		want_terms++;
		if (unblock_and_take_term(&term, want_terms) != 0)
			fails++;
		printf("NC_RESET_READY with SIGTERM pending in the thread: result %d\n", res);
		if (res >= 100) {
			fails++;
			break;
		}
		if (res == 0 && lag >= latency && attempt < 3) {
			printf("  (the wait began %.0f ms after the reset: inconclusive, again)\n", lag * 1e3);
			continue;
		}
		if (res != -EINTR) {
			fprintf(stderr, "NC_RESET_READY with SIGTERM pending in the thread: result %d, want %d (-EINTR)\n", res, -EINTR);
			fails++;
		}
		/* The driver leaves the request queued: this wait finds it. */
		if (res == -EINTR && reap(id, 0, "reaping the interrupted request") != 0)
			fails++;
		break;
	}

	/* 2. The deprecated pair: DEVICE_READY reports 0 (not ready). */
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	must(ioctl(fd, NEURON_IOCTL_DEVICE_RESET, NULL), "DEVICE_RESET");
	syscall(SYS_tgkill, getpid(), gettid_(), SIGTERM);
	uint8_t ready = 9;
	r = ioctl(fd, NEURON_IOCTL_DEVICE_READY, &ready);
	e = errno;
	want_terms++;
	if (unblock_and_take_term(&term, want_terms) != 0)
		fails++;
	printf("DEVICE_READY with SIGTERM pending in the thread: ioctl %d, byte %d\n", r, ready);
	if (r != 0 || ready != 0) {
		fprintf(stderr, "DEVICE_READY with SIGTERM pending in the thread: ioctl = %d (%s), byte %d; want 0, byte 0\n", r, r ? strerror(e) : "-", ready);
		fails++;
	}
	ready = 9;
	r = ioctl(fd, NEURON_IOCTL_DEVICE_READY, &ready);
	if (r != 0 || ready != 1) {
		fprintf(stderr, "DEVICE_READY after the signal: ioctl = %d, byte %d; want 0, byte 1\n", r, ready);
		fails++;
	}

	/* 3. SIGTERM pending for the process (the shared set): the driver
	 *    does not look there, and the wait runs to the end. */
	{
		uint32_t id;
		double lag;
		pthread_sigmask(SIG_BLOCK, &term, NULL);
		int res = nc_reset_ready_with_term(ncmap, "process", &id, &lag);
		want_terms++;
		if (unblock_and_take_term(&term, want_terms) != 0)
			fails++;
		printf("NC_RESET_READY with SIGTERM pending for the process: result %d\n", res);
		if (res != 0) {
			fprintf(stderr, "NC_RESET_READY with SIGTERM pending for the process only: result %d, want 0 (the driver checks the thread's own set)\n", res);
			fails++;
			if (res == -EINTR)
				reap(id, 0, "reaping");
		}
	}
	if (fails)
		return 1;
	printf("sigterm ok\n");
	return 0;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: sigalrm_check alarm SECONDS NCMAP | sigterm NCMAP LATENCY_MS\n");
		return 2;
	}
	fd = open("/dev/neuron0", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("open /dev/neuron0");
		return 2;
	}
	if (!strcmp(argv[1], "alarm") && argc == 4)
		return alarm_phase(atof(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0));
	if (!strcmp(argv[1], "sigterm") && argc == 4)
		return sigterm_phase((uint32_t)strtoul(argv[2], NULL, 0), atof(argv[3]) / 1e3);
	fprintf(stderr, "bad arguments\n");
	return 2;
}
