/* The project's own anchor: a stand-alone MPI_Allreduce timer, run as its own job.
 *
 * What OSU's osu_allreduce measures, written here so that no outside source is
 * shipped, with osu_allreduce's options and table, so the same reader takes both:
 *
 *   c_anchor [-m MIN:MAX] [-i ITERATIONS] [-x WARMUP] [-f]
 *
 * Sizes in bytes from MIN, doubling, up to MAX; float32 sum, out of place, on
 * MPI_COMM_WORLD; buffers allocated once for the largest size, each starting 16 bytes
 * into a page (below), and written before any timing. Per size: WARMUP untimed calls, then ITERATIONS calls each timed
 * alone with MPI_Wtime and followed by a barrier (untimed); each rank's mean,
 * then min / avg / max over the ranks, in microseconds. -f is accepted for
 * osu_allreduce's sake: the full table is always printed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Where a buffer starts in its page decides a reduction's speed. Two mallocs in a row below
 * glibc's mmap threshold start 16 bytes apart modulo 4096, and a reduction that reads one
 * while it writes the other stalls on 4K aliasing (up to 2x here: IMB-MPI1's buffers sit so).
 * Both buffers start 16 bytes into a page instead, where glibc puts a mapped allocation and
 * where bench puts its own (mpibench/base/buffer_layout.py). */
#define PAGE_BYTES 4096
#define OFFSET_BYTES 16

static float *one_page_offset(size_t bytes, void **underlying)
{
    if (posix_memalign(underlying, PAGE_BYTES, bytes + OFFSET_BYTES) != 0)
        return NULL;
    return (float *)((char *)*underlying + OFFSET_BYTES);
}

static double mean_call_s(int count, int iterations, int warmup, const float *send, float *recv)
{
    double total = 0.0;
    for (int k = 0; k < warmup + iterations; k++) {
        double start = MPI_Wtime();
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double took = MPI_Wtime() - start;
        if (k >= warmup)
            total += took;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return total / iterations;
}

static int parse(int argc, char **argv, size_t *lo, size_t *hi, int *iterations, int *warmup)
{
    int c;
    while ((c = getopt(argc, argv, "m:i:x:f")) != -1) {
        if (c == 'm' && sscanf(optarg, "%zu:%zu", lo, hi) != 2)
            return 0;
        if (c == 'i')
            *iterations = atoi(optarg);
        if (c == 'x')
            *warmup = atoi(optarg);
        if (c == '?')
            return 0;
    }
    return *lo >= sizeof(float) && *hi >= *lo && *iterations > 0 && *warmup >= 0 && optind == argc;
}

int main(int argc, char **argv)
{
    size_t lo = 4, hi = 1 << 20;
    int iterations = 100, warmup = 10, rank, ranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (!parse(argc, argv, &lo, &hi, &iterations, &warmup)) {
        if (rank == 0)
            fprintf(stderr, "usage: c_anchor [-m MIN:MAX] [-i ITERATIONS] [-x WARMUP] [-f]\n");
        MPI_Finalize();
        return 2;
    }
    size_t most = hi / sizeof(float);
    void *send_block = NULL, *recv_block = NULL;
    float *send = one_page_offset(most * sizeof(float), &send_block);
    float *recv = one_page_offset(most * sizeof(float), &recv_block);
    if (send == NULL || recv == NULL)
        MPI_Abort(MPI_COMM_WORLD, 3);
    for (size_t i = 0; i < most; i++)
        send[i] = (float)(i % 17) * 0.25f, recv[i] = 0.0f;
    if (rank == 0)
        printf("# mpibench C anchor (osu_allreduce's method)\n"
               "# buffers start %zu and %zu bytes into a page (send, receive)\n"
               "# Size       Avg Latency(us)"
               "   Min Latency(us)   Max Latency(us)  Iterations\n",
               (size_t)((uintptr_t)send % PAGE_BYTES), (size_t)((uintptr_t)recv % PAGE_BYTES));
    for (size_t bytes = lo; bytes <= hi; bytes *= 2) {
        double mine = mean_call_s((int)(bytes / sizeof(float)), iterations, warmup, send, recv);
        double lowest, highest, sum;
        MPI_Reduce(&mine, &lowest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &highest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%-10zu %18.2f %17.2f %17.2f %11d\n", bytes, sum / ranks * 1e6, lowest * 1e6,
                   highest * 1e6, iterations);
        fflush(stdout);
    }
    free(send_block);
    free(recv_block);
    MPI_Finalize();
    return 0;
}
