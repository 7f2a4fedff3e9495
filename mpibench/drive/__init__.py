"""Drivers outside MPI: they launch ``mpirun`` as a subprocess, read the rows a
case wrote and replay every case as an ordinary command line (sweep, self-test,
minimiser)."""
