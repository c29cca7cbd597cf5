/*
 * procs_check DEVICE
 *
 * What the driver keeps per process, for the trace and replay tests:
 *   1. 16 children each open DEVICE and hold it: the parent's 17th open
 *      fails with EBUSY (the attach table is full).
 *   2. MEM_GET_PA on an O_WRONLY fd fails with EINVAL (free access reaches
 *      only the misc lane).
 *   3. The holders exit; the parent's open succeeds again.
 *   4. A child opens DEVICE, allocates device memory and a DMA queue of its
 *      own, hands the parent its memory handle and is SIGKILLed: its memory
 *      is gone (MEM_GET_EXTENDED_INFO refuses the handle) and its queue is free (the
 *      parent's DMA_QUEUE_INIT of the same queue succeeds).
 *   5. A child takes a datastore slot and writes to it; the parent takes
 *      the same slot by the child's pid and reads what it wrote. When the
 *      child has exited, its slot is gone (ENOENT by its pid).
 *   6. A child opens DEVICE with O_CLOEXEC, takes a datastore slot and
 *      execs a shell that says it runs and waits: the exec closed the fd,
 *      and with it the slot went (ENOENT by its pid) while the child lives.
 * It prints one line per step and "procs ok" when each went as described.
 *
 * Command numbers and structs come from neuron_abi.h, which the Go test
 * generates from the ABI table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "neuron_abi.h"

#define HOLDERS 16
#define RING_DESCS 64
#define DMA_ENG 2 /* an engine of core 0 */
#define DMA_QID 3

static const char *dev;

static void die(const char *what) {
	fprintf(stderr, "procs_check: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int open_dev(int flags) { return open(dev, flags | O_CLOEXEC); }

static uint64_t alloc_mem(int fd, uint64_t size, int host) {
	uint64_t handle = 0;
	struct MemAllocV2MemType64 a;
	memset(&a, 0, sizeof a);
	a.Size = size;
	a.HostMemory = host;
	a.MemType = host ? 0 : MEM_TYPE_UNKNOWN_DEVICE;
	a.MemHandle = (uint64_t)(uintptr_t)&handle;
	if (ioctl(fd, NEURON_IOCTL_MEM_ALLOC_V2MT64, &a) != 0)
		die("MEM_ALLOC_V2MT64");
	return handle;
}

/* queue_init sets up DMA_ENG/DMA_QID with rings of its own; it returns
 * ioctl's result. */
static int queue_init(int fd) {
	struct DMAQueueInit v;
	memset(&v, 0, sizeof v);
	v.EngID = DMA_ENG;
	v.QID = DMA_QID;
	v.TXDescCount = RING_DESCS;
	v.RXDescCount = RING_DESCS;
	v.TXHandle = alloc_mem(fd, RING_DESCS * DMA_DESC_SIZE, 1);
	v.RXHandle = alloc_mem(fd, RING_DESCS * DMA_DESC_SIZE, 1);
	return ioctl(fd, NEURON_IOCTL_DMA_QUEUE_INIT, &v);
}

/* mem_info returns MEM_GET_EXTENDED_INFO's result: for a bad handle the
 * driver returns a positive 22 (EINVAL without the minus), errno untouched. */
static int mem_info(int fd, uint64_t handle) {
	struct MemGetExtendedInfo i;
	memset(&i, 0, sizeof i);
	i.MemHandle = handle;
	return ioctl(fd, NEURON_IOCTL_MEM_GET_EXTENDED_INFO, &i);
}

/* ds_acquire takes pid's datastore slot (0: the caller's own), maps it
 * and returns the mapping, or NULL with errno set. */
static volatile uint64_t *ds_acquire(int fd, pid_t pid) {
	struct NeuronDSInfo v;
	memset(&v, 0, sizeof v);
	v.PID = pid;
	if (ioctl(fd, NEURON_IOCTL_ACQUIRE_NEURON_DS, &v) != 0)
		return NULL;
	void *p = mmap(NULL, v.Size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)v.MmapOffset);
	return p == MAP_FAILED ? NULL : p;
}

static void wait_child(pid_t pid, int want_sig) {
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	if (want_sig ? !(WIFSIGNALED(st) && WTERMSIG(st) == want_sig) : !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		fprintf(stderr, "procs_check: child %d ended with status %#x\n", pid, st);
		exit(2);
	}
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: procs_check DEVICE\n");
		return 2;
	}
	dev = argv[1];
	int ok = 1;

	/* 1. Sixteen holders, then a 17th open. */
	int ready[2], release[2];
	if (pipe(ready) || pipe(release))
		die("pipe");
	pid_t holders[HOLDERS];
	for (int i = 0; i < HOLDERS; i++) {
		if ((holders[i] = fork()) < 0)
			die("fork");
		if (holders[i] == 0) {
			close(release[1]);
			char c = open_dev(O_RDWR) >= 0 ? 'y' : 'n';
			if (write(ready[1], &c, 1) != 1)
				_exit(2);
			read(release[0], &c, 1); /* until the parent lets go */
			_exit(0);                /* the exit releases the slot */
		}
	}
	close(release[0]);
	for (int i = 0; i < HOLDERS; i++) {
		char c;
		if (read(ready[0], &c, 1) != 1 || c != 'y') {
			fprintf(stderr, "procs_check: holder %d could not open %s\n", i, dev);
			return 2;
		}
	}
	int fd = open_dev(O_RDWR);
	int e = errno;
	printf("17th open: %s\n", fd < 0 ? strerrorname_np(e) : "succeeded");
	ok &= fd < 0 && e == EBUSY;

	/* 2. MEM_GET_PA on a free-access fd. */
	int wfd = open_dev(O_WRONLY);
	if (wfd < 0)
		die("open O_WRONLY");
	uint64_t pa = 0;
	struct MemGetPA g = {.MemHandle = 1, .PA = (uint64_t)(uintptr_t)&pa};
	int r = ioctl(wfd, NEURON_IOCTL_MEM_GET_PA, &g);
	e = errno;
	printf("MEM_GET_PA on O_WRONLY: %s\n", r ? strerrorname_np(e) : "succeeded");
	ok &= r != 0 && e == EINVAL;

	/* 3. The holders go. */
	close(release[1]);
	for (int i = 0; i < HOLDERS; i++)
		wait_child(holders[i], 0);
	fd = open_dev(O_RDWR);
	printf("open after the holders exited: %s\n", fd < 0 ? strerrorname_np(errno) : "succeeded");
	ok &= fd >= 0;

	/* 4. A child that owns memory and a queue, SIGKILLed. */
	int hand[2];
	if (pipe(hand))
		die("pipe");
	pid_t owner = fork();
	if (owner < 0)
		die("fork");
	if (owner == 0) {
		int cfd = open_dev(O_RDWR);
		if (cfd < 0)
			die("child open");
		uint64_t h = alloc_mem(cfd, 4096, 0);
		if (queue_init(cfd) != 0)
			die("child DMA_QUEUE_INIT");
		if (write(hand[1], &h, sizeof h) != sizeof h)
			_exit(2);
		for (;;)
			pause();
	}
	uint64_t h;
	if (read(hand[0], &h, sizeof h) != sizeof h)
		die("reading the child's handle");
	r = mem_info(fd, h);
	printf("child's memory while it lives: %s\n", r ? "gone" : "present");
	int before = r;
	kill(owner, SIGKILL);
	wait_child(owner, SIGKILL);
	r = mem_info(fd, h);
	printf("child's memory after SIGKILL: %s\n", r ? "gone" : "present");
	ok &= before == 0 && r != 0;
	r = queue_init(fd);
	printf("its queue after SIGKILL: %s\n", r ? strerrorname_np(errno) : "free");
	ok &= r == 0;

	/* 5. A datastore slot, shared by pid. */
	int go[2];
	if (pipe(go))
		die("pipe");
	pid_t ds_owner = fork();
	if (ds_owner < 0)
		die("fork");
	if (ds_owner == 0) {
		close(go[1]);
		int cfd = open_dev(O_RDWR);
		volatile uint64_t *ds = cfd < 0 ? NULL : ds_acquire(cfd, 0);
		if (ds == NULL)
			die("child ACQUIRE_NEURON_DS");
		ds[1] = 0x5eed;
		char c = 'y';
		if (write(hand[1], &c, 1) != 1)
			_exit(2);
		read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	char c;
	if (read(hand[0], &c, 1) != 1)
		die("waiting for the datastore owner");
	volatile uint64_t *ds = ds_acquire(fd, ds_owner);
	printf("child's datastore slot by pid: %s\n", ds == NULL ? strerrorname_np(errno) : ds[1] == 0x5eed ? "shared" : "other memory");
	ok &= ds != NULL && ds[1] == 0x5eed;
	close(go[1]);
	wait_child(ds_owner, 0);
	ds = ds_acquire(fd, ds_owner);
	e = errno;
	printf("its slot after it exited: %s\n", ds == NULL ? strerrorname_np(e) : "still there");
	ok &= ds == NULL && e == ENOENT;

	/* 6. An exec closes an O_CLOEXEC fd. */
	int said[2], hold[2];
	if (pipe(said) || pipe(hold))
		die("pipe");
	pid_t execer = fork();
	if (execer < 0)
		die("fork");
	if (execer == 0) {
		int cfd = open_dev(O_RDWR); /* O_CLOEXEC */
		if (cfd < 0 || ds_acquire(cfd, 0) == NULL)
			die("child ACQUIRE_NEURON_DS before exec");
		close(hold[1]);
		close(said[0]);
		if (dup2(hold[0], 0) < 0 || dup2(said[1], 1) < 0)
			die("dup2");
		execl("/bin/sh", "sh", "-c", "echo ready; exec cat", (char *)NULL);
		die("exec");
	}
	close(hold[0]);
	close(said[1]);
	char word[8] = {0};
	if (read(said[0], word, 6) != 6 || strcmp(word, "ready\n") != 0)
		die("waiting for the exec'd shell");
	ds = ds_acquire(fd, execer);
	e = errno;
	printf("slot of a child that exec'd: %s\n", ds == NULL ? strerrorname_np(e) : "still there");
	ok &= ds == NULL && e == ENOENT;
	close(hold[1]);
	wait_child(execer, 0);

	close(fd);
	close(wfd);
	printf(ok ? "procs ok\n" : "procs FAILED\n");
	return ok ? 0 : 1;
}
