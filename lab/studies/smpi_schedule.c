/* mpibench's message schedules written as MPI_Sendrecv calls, for SMPI at sizes where SMPI's own
 * collectives cannot run: those allocate real per-rank scratch and add real floats (p = 4096 ranks
 * x 64 MiB is 256 GiB). Here every buffer is one SMPI_SHARED_MALLOC region and nothing is added,
 * so SMPI times only the messages on its network model, as the round model with gamma infinite.
 *   rd   recursive doubling: log2 p exchanges of the whole buffer with rank ^ 2^k
 *   rab  Rabenseifner: halving near partners first (rank ^ 1, ^ 2, ...; n/2, n/4, ...), then
 *        doubling back in the reverse order (sync/plans.halving_steps, MPICH's order)
 * p must be a power of two (the runs here are). Timed like smpi_allreduce.c: per call from the
 * last rank's start to the last rank's end; rank 0 prints bytes, median, lowest, highest.
 * Usage: smpi_schedule rd|rab CALLS BYTES... */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "smpi_timing.h"

static void exchange(char *out, char *in, long nbytes, int partner) {
  MPI_Sendrecv(out, (int)nbytes, MPI_BYTE, partner, 7, in, (int)nbytes, MPI_BYTE, partner, 7, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
}

static void schedule(int halving, int rank, int steps, long nbytes, char *out, char *in) {
  if (!halving) {
    for (int k = 0; k < steps; k++) exchange(out, in, nbytes, rank ^ (1 << k));
    return;
  }
  for (int k = 0; k < steps; k++) exchange(out, in, nbytes >> (k + 1), rank ^ (1 << k));
  for (int k = steps - 1; k >= 0; k--) exchange(out, in, nbytes >> (k + 1), rank ^ (1 << k));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  int calls = argc > 2 ? atoi(argv[2]) : 0;
  int halving = argc > 1 && strcmp(argv[1], "rab") == 0;
  if (argc < 3 || (!halving && strcmp(argv[1], "rd") != 0) || calls < 1 || calls > 1000 || (p & (p - 1))) {
    if (rank == 0) fprintf(stderr, "usage: smpi_schedule rd|rab CALLS(1..1000) BYTES... (p a power of two)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int steps = 0;
  while ((1 << steps) < p) steps++;
  double *mine = malloc(2 * calls * sizeof(double)), *worst = malloc(2 * calls * sizeof(double));
  for (int a = 3; a < argc; a++) {
    long nbytes = atol(argv[a]);
    if (nbytes < 1) nbytes = 1;
    char *out = SMPI_SHARED_MALLOC(nbytes), *in = SMPI_SHARED_MALLOC(nbytes);
    for (int c = 0; c < calls; c++) {
      MPI_Barrier(MPI_COMM_WORLD);
      mine[2 * c] = MPI_Wtime();
      schedule(halving, rank, steps, nbytes, out, in);
      mine[2 * c + 1] = MPI_Wtime();
    }
    smpi_timing_report(mine, worst, calls, nbytes, rank);
    SMPI_SHARED_FREE(in);
    SMPI_SHARED_FREE(out);
  }
  free(mine);
  free(worst);
  MPI_Finalize();
  return 0;
}
