"""The launcher flags that let Open MPI 5 run every case of the suite, in one place.

``--oversubscribe``: more ranks than cores start, and a replacement spawned after a
kill finds a slot; ``--with-ft ulfm``: process-fault tolerance, so survivors of a kill
are told and recover; ``--prtemca state_base_recoverable 1``: a spawned replacement
that a later case kills is a recoverable failure, not one that ends the launch
(exit 137 after a clean run otherwise).
"""
OPEN_MPI_FLAGS = ("--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable", "1")
FAULT_TOLERANCE_FLAGS = ("--with-ft", "ulfm")
RECOVERABLE_SPAWN_FLAGS = ("--prtemca", "state_base_recoverable", "1")


def root_env_words() -> list[str]:
    """``VAR=1`` words a printed Open MPI command needs to run as pasted by root
    (Open MPI refuses to start as root without them); none for other users."""
    import os

    if os.geteuid() != 0:
        return []
    return ["OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"]
