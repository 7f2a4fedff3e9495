"""mpibench: an MPI benchmark and correctness suite for data-parallel gradient sync."""

__version__ = "0.1.0"
