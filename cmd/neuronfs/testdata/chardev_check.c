/* Checks /dev/neuron3 inside `neuronfs run` from C: a character device
 * with the /proc/devices major, openable, answering DEVICE_BASIC_INFO. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DEVICE_BASIC_INFO 0x40084e64u

int main(void) {
	FILE *f = fopen("/proc/devices", "r");
	char line[256];
	int major = -1, in_char = 0;
	if (!f) return 2;
	while (fgets(line, sizeof line, f)) {
		int m;
		char name[64];
		if (!strncmp(line, "Character devices:", 18)) { in_char = 1; continue; }
		if (line[0] == '\n') in_char = 0;
		if (in_char && sscanf(line, "%d %63s", &m, name) == 2 && !strcmp(name, "neuron")) major = m;
	}
	fclose(f);
	struct stat st, fst;
	if (major < 0 || stat("/dev/neuron3", &st) || !S_ISCHR(st.st_mode) ||
	    (int)major(st.st_rdev) != major || minor(st.st_rdev) != 3) {
		fprintf(stderr, "stat check failed (major %d)\n", major);
		return 1;
	}
	int fd = open("/dev/neuron3", O_RDWR | O_CLOEXEC);
	uint32_t info[2] = {0, 0};
	if (fd < 0 || ioctl(fd, DEVICE_BASIC_INFO, info) != 0 || info[0] < 2 || info[0] > 4) {
		perror("open/ioctl");
		return 1;
	}
	if (fstat(fd, &fst) || fst.st_rdev != st.st_rdev || fst.st_ino != st.st_ino || !S_ISCHR(fst.st_mode)) {
		fprintf(stderr, "fstat disagrees with stat\n");
		return 1;
	}
	close(fd);
	printf("c ok\n");
	return 0;
}
