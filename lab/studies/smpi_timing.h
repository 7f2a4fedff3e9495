/* The timing tail shared by smpi_allreduce.c and smpi_schedule.c: each rank records, per call,
 * the simulated clock before and after; the latest start and latest end over the ranks (one
 * MPI_Reduce with MPI_MAX) bound the call, so that the barrier's uneven release is not counted.
 * Rank 0 prints one line per size: bytes, then the median, lowest and highest of those times. */
#ifndef SMPI_TIMING_H
#define SMPI_TIMING_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int smpi_timing_ascending(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* `mine` holds 2 * calls clock readings (start, end) of this rank; `worst` is scratch of the
 * same length. Collective: every rank calls it once per size. */
static void smpi_timing_report(const double *mine, double *worst, int calls, long nbytes, int rank) {
  MPI_Reduce(mine, worst, 2 * calls, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  for (int c = 0; c < calls; c++) worst[c] = worst[2 * c + 1] - worst[2 * c];
  qsort(worst, calls, sizeof(double), smpi_timing_ascending);
  double median = calls % 2 ? worst[calls / 2] : (worst[calls / 2 - 1] + worst[calls / 2]) / 2;
  printf("%ld %.9e %.9e %.9e\n", nbytes, median, worst[0], worst[calls - 1]);
  fflush(stdout);
}
#endif
