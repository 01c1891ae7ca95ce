/*
 * sync_barrier_sync: MPI-IO's SYNC-BARRIER-SYNC between two ranks, each on its own mount of
 * one file (interop-tests/tests/mpi_io.rs runs it on two `pnfs mount`s of one server).
 *
 *     mpiexec -n 2 sync_barrier_sync MODE ROUNDS PATH_OF_RANK0 PATH_OF_RANK1
 *
 * Rank 0 writes, rank 1 reads. The file is opened through ROMIO's UFS driver (the path is
 * prefixed `ufs:`), so every MPI-IO call below is a plain pwrite/pread/fsync on the mount.
 *
 * Setup: rank 0 creates the file with NBLOCKS blocks of round 0 and closes it; then both
 * open it, and rank 1 reads every block (close-to-open makes that read fresh; it is checked).
 * Rank 1's page cache now holds every block, which is what a stale read would come from.
 *
 * Round r (1..ROUNDS), on block (r-1) % NBLOCKS:
 *     rank 0: MPI_File_write_at(block, content of round r)
 *     all:    MPI_File_sync          (collective; rank 0's write sent and COMMITted)
 *     all:    MPI_Barrier
 *     MODE:   ioctl: rank 1 calls ioctl(PNFS_IOC_REVALIDATE) on a descriptor of its own
 *                    (opened once with open(2): ROMIO does not hand out its own; the mount
 *                    revalidates the file under every open of it)
 *             sync:  all call MPI_File_sync again (the standard recipe's second sync; the
 *                    mount option fsync_revalidate is what makes it drop caches, if the
 *                    MPI calls fsync there: see fsync() below)
 *             fsync: rank 1 calls fsync(2) on a descriptor of its own, as an MPI_File_sync
 *                    that always calls fsync would (what fsync_revalidate acts on)
 *             none:  nothing (the check that staleness is visible at all)
 *     rank 1: MPI_File_read_at(block), compared with round r's content
 *     all:    MPI_Barrier            (rank 0 does not write round r+1 before rank 1 read r)
 *
 * Prints `MPI_RESULT mode=M rounds=N stale=S torn=T reader_fsyncs=F seconds=X` (rank 1; torn
 * counts the stale reads that are no whole older round, part of S; F is how many fsync(2)
 * calls rank 1 made during the rounds, see fsync() below) and the first few stale rounds.
 * Exits non-zero on any failed call, short read or short write; the stale count is for the
 * caller to judge (mode none is expected to have some).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pnfs_ioctl.h"

/* A few pages per block, a few blocks: the reader caches all of them. */
#define BLOCK (16 * 1024)
#define NBLOCKS 4
/* How many stale rounds are printed one by one. */
#define SHOW_STALE 5

enum mode { MODE_IOCTL, MODE_SYNC, MODE_FSYNC, MODE_NONE };

static int rank = -1;

/*
 * fsync(2) as MPI-IO calls it, counted. `-o fsync_revalidate` can only act on a rank whose
 * MPI_File_sync reaches the file system as an fsync, and mpich 4.0's ROMIO skips the fsync
 * on a rank that wrote nothing since its last sync (ADIOI_GEN_Flush tests fd->dirty_write),
 * which is the reader here; ROMIO 3.2 (Open MPI 4.1's) does not skip it. The count tells
 * the caller which case it ran in, rather than it guessing from the MPI's version. (This
 * definition interposes on libc's for the MPI library too: the executable comes first in
 * symbol lookup; the real one is called either way.)
 */
static long fsyncs;

int fsync(int fd)
{
    static int (*real)(int);
    if (!real) {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
        if (!real) {
            errno = ENOSYS;
            return -1;
        }
    }
    fsyncs++;
    return real(fd);
}

static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "sync_barrier_sync rank %d: ", rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

/* Every MPI call is checked; files return errors (MPI_ERRORS_RETURN is their default). */
#define CHECK(call)                                                                  \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != MPI_SUCCESS) {                                                    \
            char msg_[MPI_MAX_ERROR_STRING];                                         \
            int len_ = 0;                                                            \
            MPI_Error_string(rc_, msg_, &len_);                                      \
            die("%s failed (line %d): %.*s", #call, __LINE__, len_, msg_);           \
        }                                                                            \
    } while (0)

/*
 * The content of `block` in `round`: a header naming both (so a stale read says which
 * round it holds), then bytes that differ from round to round and from block to block.
 */
static void fill(unsigned char *buf, uint32_t round, uint32_t block)
{
    memcpy(buf, &round, 4);
    memcpy(buf + 4, &block, 4);
    for (size_t i = 8; i < BLOCK; i++)
        buf[i] = (unsigned char)(round * 131u + block * 17u + i * 7u + (i >> 8));
}

static void write_block(MPI_File fh, uint32_t round, uint32_t block, unsigned char *buf)
{
    MPI_Status st;
    int count = 0;
    fill(buf, round, block);
    CHECK(MPI_File_write_at(fh, (MPI_Offset)block * BLOCK, buf, BLOCK, MPI_BYTE, &st));
    CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
    if (count != BLOCK)
        die("short write of block %u in round %u: %d of %d bytes", block, round, count, BLOCK);
}

static void read_block(MPI_File fh, uint32_t block, unsigned char *buf)
{
    MPI_Status st;
    int count = 0;
    CHECK(MPI_File_read_at(fh, (MPI_Offset)block * BLOCK, buf, BLOCK, MPI_BYTE, &st));
    CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
    if (count != BLOCK)
        die("short read of block %u: %d of %d bytes", block, count, BLOCK);
}

/* The round whose whole content `got` is, or -1 (torn: parts of several, or garbage). */
static long holds_round(const unsigned char *got, uint32_t block, unsigned char *scratch)
{
    uint32_t r;
    memcpy(&r, got, 4);
    fill(scratch, r, block);
    return memcmp(got, scratch, BLOCK) == 0 ? (long)r : -1;
}

int main(int argc, char **argv)
{
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    int size = 0;
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (argc != 5 || size != 2)
        die("usage: mpiexec -n 2 %s ioctl|sync|fsync|none ROUNDS PATH_OF_RANK0 PATH_OF_RANK1 "
            "(got %d args, %d ranks)",
            argv[0], argc - 1, size);
    enum mode mode;
    if (strcmp(argv[1], "ioctl") == 0)
        mode = MODE_IOCTL;
    else if (strcmp(argv[1], "sync") == 0)
        mode = MODE_SYNC;
    else if (strcmp(argv[1], "fsync") == 0)
        mode = MODE_FSYNC;
    else if (strcmp(argv[1], "none") == 0)
        mode = MODE_NONE;
    else
        die("unknown mode %s (ioctl, sync, fsync, none)", argv[1]);
    char *end = NULL;
    long rounds = strtol(argv[2], &end, 10);
    if (*argv[2] == '\0' || *end != '\0' || rounds < 1 || rounds > 1000000)
        die("ROUNDS %s: not a number from 1 to 1000000", argv[2]);
    /* This rank's own mount of the file, through ROMIO's UFS driver. */
    const char *path = argv[3 + rank];
    char ufs[4096];
    if (snprintf(ufs, sizeof ufs, "ufs:%s", path) >= (int)sizeof ufs)
        die("path too long: %s", path);

    unsigned char *buf = malloc(BLOCK), *want = malloc(BLOCK), *scratch = malloc(BLOCK);
    if (!buf || !want || !scratch)
        die("out of memory");

    /* Round 0 in every block, written by rank 0 alone and closed (so sent and committed). */
    if (rank == 0) {
        MPI_File fh;
        CHECK(MPI_File_open(MPI_COMM_SELF, ufs, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                            MPI_INFO_NULL, &fh));
        CHECK(MPI_File_set_size(fh, 0));
        for (uint32_t b = 0; b < NBLOCKS; b++)
            write_block(fh, 0, b, buf);
        CHECK(MPI_File_close(&fh));
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    MPI_File fh;
    CHECK(MPI_File_open(MPI_COMM_WORLD, ufs, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int fd = -1;
    if (rank == 1) {
        /* Reads every block into this mount's caches: what a stale read returns later. */
        for (uint32_t b = 0; b < NBLOCKS; b++) {
            read_block(fh, b, buf);
            fill(want, 0, b);
            if (memcmp(buf, want, BLOCK) != 0)
                die("block %u right after open is not round 0 (holds round %ld): "
                    "close-to-open failed",
                    b, holds_round(buf, b, scratch));
        }
        if (mode == MODE_IOCTL || mode == MODE_FSYNC) {
            fd = open(path, O_RDONLY);
            if (fd < 0)
                die("open %s: %s", path, strerror(errno));
        }
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    long stale = 0, torn = 0;
    fsyncs = 0;
    double t0 = MPI_Wtime();
    for (uint32_t r = 1; r <= (uint32_t)rounds; r++) {
        uint32_t b = (r - 1) % NBLOCKS;
        if (rank == 0)
            write_block(fh, r, b, buf);
        CHECK(MPI_File_sync(fh));
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (mode == MODE_SYNC)
            CHECK(MPI_File_sync(fh));
        if (rank == 1) {
            if (mode == MODE_IOCTL && ioctl(fd, PNFS_IOC_REVALIDATE) != 0)
                die("ioctl(PNFS_IOC_REVALIDATE) on %s in round %u: %s", path, r,
                    strerror(errno));
            if (mode == MODE_FSYNC && fsync(fd) != 0)
                die("fsync of %s in round %u: %s", path, r, strerror(errno));
            read_block(fh, b, buf);
            fill(want, r, b);
            if (memcmp(buf, want, BLOCK) != 0) {
                long held = holds_round(buf, b, scratch);
                uint32_t header;
                memcpy(&header, buf, 4);
                stale++;
                if (held < 0)
                    torn++;
                if (stale <= SHOW_STALE)
                    printf("stale read in round %u (block %u): holds %s %ld\n", r, b,
                           held < 0 ? "no whole round; header says" : "round",
                           held < 0 ? (long)header : held);
            }
        }
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    double secs = MPI_Wtime() - t0;
    long reader_fsyncs = fsyncs;

    if (fd >= 0 && close(fd) != 0)
        die("close %s: %s", path, strerror(errno));
    CHECK(MPI_File_close(&fh));
    if (rank == 1) {
        printf("MPI_RESULT mode=%s rounds=%ld stale=%ld torn=%ld reader_fsyncs=%ld "
               "seconds=%.3f\n",
               argv[1], rounds, stale, torn, reader_fsyncs, secs);
        fflush(stdout);
    }
    free(buf);
    free(want);
    free(scratch);
    CHECK(MPI_Finalize());
    return 0;
}
