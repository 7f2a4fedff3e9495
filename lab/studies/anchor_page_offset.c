/* A PMPI shim for an anchor such as IMB-MPI1 (vs_anchor.py --anchor-buffers one-page-offset).

   IMB-MPI1 takes its send and receive buffers from MPI_Alloc_mem, which Open MPI serves
   from malloc. Below malloc's mmap threshold (128 KiB by default) two such buffers
   allocated one after the other start 16 bytes apart modulo 4096, and a reduction that
   reads one while writing the other then stalls on 4K aliasing. From the threshold up
   both are mapped, 16 bytes into a page, like every buffer bench times.

   Loaded with LD_PRELOAD, this library gives every MPI_Alloc_mem buffer that same start,
   16 bytes into a page, and changes nothing else: the tool's binary, its MPI calls and
   its timing stay as they were. MPI_Free_mem hands the real allocation back. */
#include <mpi.h>
#include <stdint.h>

#define PAGE_BYTES 4096
#define OFFSET_BYTES 16
#define SLOTS 1024

static void *given[SLOTS], *underlying[SLOTS];

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
    int slot = 0;
    while (slot < SLOTS && given[slot]) slot++;
    if (slot == SLOTS) return PMPI_Alloc_mem(size, info, baseptr);  /* table full: as allocated */
    void *raw;
    int rc = PMPI_Alloc_mem(size + PAGE_BYTES + OFFSET_BYTES, info, &raw);
    if (rc != MPI_SUCCESS) return rc;
    uintptr_t page = ((uintptr_t)raw + PAGE_BYTES - 1) & ~(uintptr_t)(PAGE_BYTES - 1);
    given[slot] = (char *)page + OFFSET_BYTES;
    underlying[slot] = raw;
    *(void **)baseptr = given[slot];
    return MPI_SUCCESS;
}

int MPI_Free_mem(void *base) {
    for (int slot = 0; slot < SLOTS; slot++) {
        if (given[slot] == base) {
            given[slot] = 0;
            return PMPI_Free_mem(underlying[slot]);
        }
    }
    return PMPI_Free_mem(base);
}
