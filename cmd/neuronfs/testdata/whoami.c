/* Prints the real and effective uid: a setuid-root copy run by an
 * unprivileged user prints a 0 effective uid. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
	printf("%d %d\n", (int)getuid(), (int)geteuid());
	return 0;
}
