/* A loop of MPI_Allreduce (float, sum) for SMPI: for each size given, `calls` calls, each
 * timed on the simulated clock (one clock for all ranks) from the last rank's start to the
 * last rank's end, so that the barrier's uneven release is not counted; rank 0 prints, per
 * size, the bytes and the median, lowest and highest of those times over the calls. Buffers come from
 * SMPI_SHARED_MALLOC, so thousands of simulated ranks share one copy of the memory.
 * Usage: smpi_allreduce CALLS WARMUP BYTES... (built by benchmarks/smpi_crosscheck.py with smpicc);
 * WARMUP 1 makes one untimed call per size first (an smp_* algorithm builds its node
 * communicators on its first use), 0 none (at p = 4096 every call costs minutes of wall time). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int ascending(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int calls = argc > 2 ? atoi(argv[1]) : 0;
  int warmup = argc > 2 ? atoi(argv[2]) : -1;
  if (calls < 1 || calls > 1000 || (warmup != 0 && warmup != 1)) {
    if (rank == 0) fprintf(stderr, "usage: smpi_allreduce CALLS(1..1000) WARMUP(0|1) BYTES...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double *mine = malloc(2 * calls * sizeof(double)), *worst = malloc(2 * calls * sizeof(double));
  for (int a = 3; a < argc; a++) {
    long count = atol(argv[a]) / 4;
    if (count < 1) count = 1;
    float *in = SMPI_SHARED_MALLOC(count * sizeof(float));
    float *out = SMPI_SHARED_MALLOC(count * sizeof(float));
    if (warmup) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int c = 0; c < calls; c++) {
      MPI_Barrier(MPI_COMM_WORLD); /* every call starts together, as the benchmarks time one */
      mine[2 * c] = MPI_Wtime();
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      mine[2 * c + 1] = MPI_Wtime();
    }
    MPI_Reduce(mine, worst, 2 * calls, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      for (int c = 0; c < calls; c++) worst[c] = worst[2 * c + 1] - worst[2 * c];
      qsort(worst, calls, sizeof(double), ascending);
      double median = calls % 2 ? worst[calls / 2] : (worst[calls / 2 - 1] + worst[calls / 2]) / 2;
      printf("%ld %.9e %.9e %.9e\n", count * 4, median, worst[0], worst[calls - 1]);
      fflush(stdout);
    }
    SMPI_SHARED_FREE(in);
    SMPI_SHARED_FREE(out);
  }
  free(mine);
  free(worst);
  MPI_Finalize();
  return 0;
}
