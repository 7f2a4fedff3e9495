/* A loop of MPI_Allreduce (float) for SMPI: for each size given, `calls` calls, each timed on the
 * simulated clock (smpi_timing.h). Buffers come from SMPI_SHARED_MALLOC, so thousands of simulated
 * ranks share one copy of the memory, and SMPI skips every copy from or into them.
 * Usage: smpi_allreduce CALLS WARMUP OP BYTES... (built by lab/studies/smpi_crosscheck.py with smpicc);
 * WARMUP 1 makes one untimed call per size first (an smp_* algorithm builds its node
 * communicators on its first use), 0 none. OP `sum` is MPI_SUM; `none` is a commutative
 * user-defined operation that adds nothing: with smpi/simulate-computation:no SMPI charges no
 * time for the sums either way, so the simulated times are the same, but with `none` the messages'
 * copies into the collectives' private scratch are skipped (the sender's buffer is shared), so
 * p = 4096 ranks x 64 MiB fits, and no host time is spent adding floats nobody reads. A rank's copy
 * to itself (SimGrid's Datatype::copy) is still a real memcpy between shared buffers. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "smpi_timing.h"

static void add_nothing(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)in, (void)inout, (void)len, (void)type;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int calls = argc > 3 ? atoi(argv[1]) : 0;
  int warmup = argc > 3 ? atoi(argv[2]) : -1;
  int sum = argc > 3 && strcmp(argv[3], "sum") == 0;
  if (calls < 1 || calls > 1000 || (warmup != 0 && warmup != 1) || (!sum && strcmp(argv[3], "none") != 0)) {
    if (rank == 0) fprintf(stderr, "usage: smpi_allreduce CALLS(1..1000) WARMUP(0|1) sum|none BYTES...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Op op = MPI_SUM;
  if (!sum) MPI_Op_create(add_nothing, 1, &op);
  double *mine = malloc(2 * calls * sizeof(double)), *worst = malloc(2 * calls * sizeof(double));
  for (int a = 4; a < argc; a++) {
    long count = atol(argv[a]) / 4;
    if (count < 1) count = 1;
    float *in = SMPI_SHARED_MALLOC(count * sizeof(float));
    float *out = SMPI_SHARED_MALLOC(count * sizeof(float));
    if (warmup) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, op, MPI_COMM_WORLD);
    for (int c = 0; c < calls; c++) {
      MPI_Barrier(MPI_COMM_WORLD); /* every call starts together, as the benchmarks time one */
      mine[2 * c] = MPI_Wtime();
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, op, MPI_COMM_WORLD);
      mine[2 * c + 1] = MPI_Wtime();
    }
    smpi_timing_report(mine, worst, calls, count * 4, rank);
    SMPI_SHARED_FREE(in);
    SMPI_SHARED_FREE(out);
  }
  if (!sum) MPI_Op_free(&op);
  free(mine);
  free(worst);
  MPI_Finalize();
  return 0;
}
