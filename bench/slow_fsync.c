/* A disk whose flushes take time, for benchmarks: LD_PRELOAD this into a process and every fsync and
 * fdatasync first sleeps GARLICFARM_FSYNC_DELAY_US microseconds (then flushes for real), as on a
 * spinning disk or a network volume. bench/farm_bench.py --fsync-delay-ms builds and loads it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static void pause_like_a_slow_disk(void) {
    const char *us = getenv("GARLICFARM_FSYNC_DELAY_US");
    if (us != NULL) usleep((useconds_t)strtoul(us, NULL, 10));
}

int fsync(int fd) {
    static int (*real)(int) = NULL;
    if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    pause_like_a_slow_disk();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int) = NULL;
    if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    pause_like_a_slow_disk();
    return real(fd);
}
