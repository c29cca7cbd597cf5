// The C client of BenchmarkTransports: a separate process, as a runtime
// is, issuing one kind of ioctl against several targets.
//
//   transport_client interleave OP N THREADS TARGET...
//       Each thread opens its own device on every target and runs rounds
//       of 256 calls per target, target after target, until each target
//       has had N calls from it, timing every call. Prints, per target,
//       the median, p99 and p99.9 in microseconds over all threads.
//   transport_client seq OP N THREADS TARGET
//       N calls per thread on one target, untimed; prints the client's CPU
//       time per call and the calls per second.
//
// OP is basic (DEVICE_BASIC_INFO) or copy4k (MEM_BUF_COPY64 of 4 KiB into
// device memory). A TARGET is PATH[,HANDLE0,HANDLE1...]: thread t opens
// PATH with t appended when PATH ends in "neuron", else PATH itself (the
// no-op floor); HANDLEt is the memory handle copy4k writes to.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CMD_BASIC 0x40084e64u   /* NEURON_IOCTL_DEVICE_BASIC_INFO */
#define CMD_COPY64 0xc0284e18u  /* NEURON_IOCTL_MEM_BUF_COPY64 */
#define ROUND 256
#define MAXT 8
#define MAXTHREADS 16

struct copy64 { /* neuron_ioctl_mem_buf_copy64 */
	uint64_t mem_handle, buffer, size, offset;
	uint32_t copy_to_mem_handle, pad;
};

static int copy4k, n, nthreads, ntargets;
static char *paths[MAXT];
static uint64_t handles[MAXT][MAXTHREADS];
static double *lat[MAXT][MAXTHREADS];

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int open_target(int tg, int t) {
	char p[4096];
	size_t l = strlen(paths[tg]);
	if (l >= 6 && strcmp(paths[tg] + l - 6, "neuron") == 0)
		snprintf(p, sizeof p, "%s%d", paths[tg], t);
	else
		snprintf(p, sizeof p, "%s", paths[tg]);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(p);
		exit(1);
	}
	return fd;
}

struct op { int fd; int floor; struct copy64 c; uint64_t info; };

static void call(struct op *o) {
	long r;
	if (copy4k && !o->floor)
		r = ioctl(o->fd, CMD_COPY64, &o->c);
	else
		r = ioctl(o->fd, CMD_BASIC, &o->info);
	if (r != 0) {
		perror("ioctl");
		exit(1);
	}
}

static void setup(struct op *o, int tg, int t, void *buf) {
	o->fd = open_target(tg, t);
	size_t l = strlen(paths[tg]);
	o->floor = !(l >= 6 && strcmp(paths[tg] + l - 6, "neuron") == 0);
	o->c = (struct copy64){.mem_handle = handles[tg][t], .buffer = (uintptr_t)buf, .size = 4096, .copy_to_mem_handle = 1};
}

static int interleave;

static void *worker(void *arg) {
	int t = (int)(intptr_t)arg;
	void *buf = aligned_alloc(4096, 4096);
	memset(buf, t + 1, 4096);
	struct op ops[MAXT];
	for (int tg = 0; tg < ntargets; tg++)
		setup(&ops[tg], tg, t, buf);
	if (!interleave) {
		for (int i = 0; i < n; i++)
			call(&ops[0]);
		return NULL;
	}
	for (int done = 0; done < n; done += ROUND)
		for (int tg = 0; tg < ntargets; tg++)
			for (int i = done; i < done + ROUND && i < n; i++) {
				double a = now_us();
				call(&ops[tg]);
				lat[tg][t][i] = now_us() - a;
			}
	return NULL;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc < 6) {
		fprintf(stderr, "usage: %s interleave|seq basic|copy4k N THREADS TARGET...\n", argv[0]);
		return 2;
	}
	interleave = strcmp(argv[1], "interleave") == 0;
	copy4k = strcmp(argv[2], "copy4k") == 0;
	n = atoi(argv[3]);
	nthreads = atoi(argv[4]);
	ntargets = argc - 5;
	if (ntargets > MAXT || nthreads > MAXTHREADS || nthreads < 1 || n < 1)
		return 2;
	for (int tg = 0; tg < ntargets; tg++) {
		paths[tg] = strtok(argv[5 + tg], ",");
		for (int t = 0; t < MAXTHREADS; t++) {
			char *h = strtok(NULL, ",");
			if (!h)
				break;
			handles[tg][t] = strtoull(h, NULL, 0);
		}
		for (int t = 0; t < nthreads; t++)
			lat[tg][t] = calloc(n, sizeof(double));
	}
	double start = now_us();
	pthread_t th[MAXTHREADS];
	for (int t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	double wall = now_us() - start;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
	if (!interleave) {
		double calls = (double)n * nthreads;
		printf("seq calls_per_s=%.0f client_cpu_us=%.3f\n", calls / (wall / 1e6), cpu / calls);
		return 0;
	}
	for (int tg = 0; tg < ntargets; tg++) {
		size_t m = (size_t)n * nthreads;
		double *all = malloc(m * sizeof(double));
		for (int t = 0; t < nthreads; t++)
			memcpy(all + (size_t)t * n, lat[tg][t], n * sizeof(double));
		qsort(all, m, sizeof(double), cmp);
		printf("target=%d median_us=%.3f p99_us=%.3f p999_us=%.3f\n", tg, all[m / 2], all[m * 99 / 100], all[m * 999 / 1000]);
		free(all);
	}
	return 0;
}
