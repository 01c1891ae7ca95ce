/*
 * pnfs_ioctl.h: the ioctls of a `pnfs mount` (the bundled pNFS client's FUSE mount).
 *
 * PNFS_IOC_REVALIDATE, on a descriptor of a file of the mount: this client's writes to
 * the file are sent, its cached data and attributes are dropped, from the client and from
 * the kernel's page cache, and fresh attributes are fetched from the server. The next read
 * returns what other clients wrote and made stable (fsync, close) before the call.
 *
 * MPI-IO's SYNC-BARRIER-SYNC over the mount:
 *     writer: write(); fsync(fd);          (sent and COMMITted)
 *     both:   MPI_Barrier();
 *     reader: ioctl(fd, PNFS_IOC_REVALIDATE); read();
 * or mount with `-o fsync_revalidate`, under which fsync() also revalidates, so an
 * unmodified MPI_File_sync gets these semantics where it calls fsync on the reading rank.
 * ROMIO 3.2 (Open MPI 4.1's) does. mpich 4.0's ROMIO does not: it skips the fsync on a
 * rank that wrote nothing since its last sync, so the reader's MPI_File_sync never reaches
 * the mount; there, use the ioctl. (interop-tests/tests/mpi_io.rs measures both.)
 *
 * Returns 0, or -1 with errno: EBADF (not a file open on the mount), ENOTTY (not a
 * `pnfs mount`), or the errno of the failed NFS call (EIO, ESTALE, ...).
 */
#ifndef PNFS_IOCTL_H
#define PNFS_IOCTL_H

#include <linux/ioctl.h>

/* The number only has to be unique among this file system's ioctls: an ioctl on a file of
 * the mount reaches no other driver. */
#define PNFS_IOC_MAGIC 0xB7

#define PNFS_IOC_REVALIDATE _IO(PNFS_IOC_MAGIC, 1)

#endif /* PNFS_IOCTL_H */
