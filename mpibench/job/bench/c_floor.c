/* The no-Python floor: a C loop of MPI_Allreduce, as OSU and IMB time it.
 *
 * Loaded into the benchmark's own processes (ctypes) and handed the same
 * communicator and buffers as the Python rows, so only the language differs.
 * Before each call (untimed): the in-place buffer is refilled from the inputs
 * and the ranks meet at a barrier. Each call is timed with MPI_Wtime.
 */
#include <mpi.h>
#include <string.h>

int mpibench_c_floor(MPI_Comm comm, const void *inputs, void *buf, int count, int is_double,
                     int in_place, int calls, double *times)
{
    MPI_Datatype type = is_double ? MPI_DOUBLE : MPI_FLOAT;
    size_t bytes = (size_t)count * (is_double ? sizeof(double) : sizeof(float));
    for (int k = 0; k < calls; k++) {
        if (in_place)
            memcpy(buf, inputs, bytes);
        int rc = MPI_Barrier(comm);
        if (rc != MPI_SUCCESS)
            return rc;
        double start = MPI_Wtime();
        rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : inputs, buf, count, type, MPI_SUM, comm);
        times[k] = MPI_Wtime() - start;
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}
