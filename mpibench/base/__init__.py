"""The bottom layer: run settings, seeds, record schemas, averaging arithmetic and
``run.json``. Plain Python and NumPy that every other layer may import; it
imports nothing else of mpibench and never mpi4py at import time."""
