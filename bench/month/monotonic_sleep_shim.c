/* Preloaded before libfaketime by the month replay (bench/month/clock.py).
 *
 * libfaketime 0.9.10 converts an absolute CLOCK_MONOTONIC deadline with the realtime offset
 * even when the monotonic clock is not faked (FAKETIME_DONT_FAKE_MONOTONIC=1), so the kernel
 * gets a negative time and Python 3.11's time.sleep fails with EINVAL (wolfcw/libfaketime#426).
 * The replay never fakes the monotonic clocks, so their sleeps go straight to the kernel. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int clock_nanosleep(clockid_t clock_id, int flags, const struct timespec *req, struct timespec *rem) {
    if (clock_id == CLOCK_MONOTONIC || clock_id == CLOCK_MONOTONIC_RAW || clock_id == CLOCK_BOOTTIME) {
        long r = syscall(SYS_clock_nanosleep, clock_id, flags, req, rem);
        return r == 0 ? 0 : errno;
    }
    static int (*next)(clockid_t, int, const struct timespec *, struct timespec *);
    if (!next) next = (int (*)(clockid_t, int, const struct timespec *, struct timespec *))dlsym(RTLD_NEXT, "clock_nanosleep");
    return next(clock_id, flags, req, rem);
}
