// The floor under any seccomp supervisor: what an open costs when it is
// notified to a supervisor that answers CONTINUE at once, without reading
// the path or deciding anything, next to the same open un-notified.
//
//   notify_floor N ROUNDS PATH
//
// Each round runs three children, one after the other, each timing N
// open+close pairs of PATH: one without a filter (native), one whose
// openat is notified to this process with the listener in synchronous
// wake-up mode (sync, Linux >= 6.6), and one without it (async). Prints
// the medians over the rounds, in ns per open+close:
//   native_ns=... sync_ns=... async_ns=...
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif

enum { NATIVE, SYNC, ASYNC, MODES };
#define MAXROUNDS 64

static int n;
static const char *path;

static double now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void die(const char *what) {
	perror(what);
	exit(1);
}

// opens times n open+close pairs, after a warm-up, and returns ns per pair.
static double opens(void) {
	for (int i = 0; i < 1000; i++)
		close(open(path, O_RDONLY | O_CLOEXEC));
	double t0 = now_ns();
	for (int i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die(path);
		close(fd);
	}
	return (now_ns() - t0) / n;
}

static void send_fd(int sock, int fd) {
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {"f", 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sock, &m, 0) < 0)
		die("sendmsg");
}

static int recv_fd(int sock) {
	char cbuf[CMSG_SPACE(sizeof(int))], b;
	struct iovec iov = {&b, 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	if (recvmsg(sock, &m, 0) <= 0 || !CMSG_FIRSTHDR(&m))
		die("recvmsg");
	int fd;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
	return fd;
}

// install_filter notifies open and openat and allows everything else.
static int install_filter(void) {
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("PR_SET_NO_NEW_PRIVS");
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		die("seccomp");
	return fd;
}

// supervise answers every notification with CONTINUE until no task uses
// the filter any more.
static void supervise(int listener) {
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	for (;;) {
		memset(&req, 0, sizeof req);
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOENT) {
				struct pollfd p = {listener, POLLIN, 0};
				if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
					return;
				continue;
			}
			return;
		}
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

static double run(int mode) {
	int sp[2], res[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe(res) < 0)
		die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (mode != NATIVE) {
			int l = install_filter();
			send_fd(sp[0], l);
			close(l);
			char go;
			if (read(sp[0], &go, 1) != 1)
				_exit(1);
		}
		double ns = opens();
		if (write(res[1], &ns, sizeof ns) != sizeof ns)
			_exit(1);
		_exit(0);
	}
	close(res[1]);
	if (mode != NATIVE) {
		int l = recv_fd(sp[1]);
		if (mode == SYNC && ioctl(l, SECCOMP_IOCTL_NOTIF_SET_FLAGS, (uint64_t)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) < 0)
			die("SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP");
		if (write(sp[1], "g", 1) != 1)
			die("write");
		supervise(l);
		close(l);
	}
	double ns = -1;
	if (read(res[0], &ns, sizeof ns) != sizeof ns)
		ns = -1;
	int status;
	waitpid(pid, &status, 0);
	close(res[0]);
	close(sp[0]);
	close(sp[1]);
	if (ns < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "mode %d: child failed\n", mode);
		exit(1);
	}
	return ns;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: notify_floor N ROUNDS PATH\n");
		return 2;
	}
	n = atoi(argv[1]);
	int rounds = atoi(argv[2]);
	path = argv[3];
	if (n <= 0 || rounds <= 0 || rounds > MAXROUNDS) {
		fprintf(stderr, "bad N or ROUNDS\n");
		return 2;
	}
	double t[MODES][MAXROUNDS];
	for (int r = 0; r < rounds; r++)
		for (int m = 0; m < MODES; m++)
			t[m][r] = run(m);
	for (int m = 0; m < MODES; m++)
		qsort(t[m], rounds, sizeof(double), cmp);
	printf("native_ns=%.1f sync_ns=%.1f async_ns=%.1f\n", t[NATIVE][rounds / 2], t[SYNC][rounds / 2], t[ASYNC][rounds / 2]);
	return 0;
}
