// A read that never waits on the disk: `preadv2` with `RWF_NOWAIT` (Linux 4.14), which returns
// what the page cache holds and fails with EAGAIN where a read would have to wait. Swift's Glibc
// module does not declare `preadv2`, so it is called here.
#define _GNU_SOURCE
#include "CSluiceCrypto.h"
#include <errno.h>
#include <sys/uio.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

long sluice_pread_nowait(int fd, void *buffer, size_t count, int64_t offset) {
#if defined(__linux__)
    struct iovec vector = {.iov_base = buffer, .iov_len = count};
    return (long)preadv2(fd, &vector, 1, (off_t)offset, RWF_NOWAIT);
#else
    (void)fd; (void)buffer; (void)count; (void)offset;
    errno = EOPNOTSUPP;
    return -1;
#endif
}
