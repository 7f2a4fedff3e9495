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

# Open MPI's words when its launcher failed before starting any rank for a reason that
# passes (PMIx's listener, under heavy load here, at times twice in a row).
LAUNCHER_NEVER_STARTED = "listener thread failed to start"
DEFAULT_RETRY_PAUSES = "2 6"


def launch_retry_pauses_s() -> tuple[float, ...]:
    """The pauses before each retry of a launch that never started: MPIBENCH_LAUNCH_RETRY_PAUSES_S
    (seconds separated by spaces; tests shorten them), else 2 s and then 6 s. A value that is
    not such seconds is said in one line and the default kept."""
    import os
    import sys

    given = os.environ.get("MPIBENCH_LAUNCH_RETRY_PAUSES_S", DEFAULT_RETRY_PAUSES)
    try:
        pauses = tuple(float(v) for v in given.split())
        if all(p >= 0 for p in pauses):
            return pauses
    except ValueError:
        pass
    print(f"mpibench: MPIBENCH_LAUNCH_RETRY_PAUSES_S={given!r} is not seconds separated by spaces; "
          f"pausing {DEFAULT_RETRY_PAUSES} s", file=sys.stderr)
    return tuple(float(v) for v in DEFAULT_RETRY_PAUSES.split())


LAUNCH_RETRY_PAUSES_S = launch_retry_pauses_s()


def root_env_words() -> list[str]:
    """``VAR=1`` words a printed Open MPI command needs to run as pasted by root
    (Open MPI refuses to start as root without them); none for other users."""
    import os

    if os.geteuid() != 0:
        return []
    return ["OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"]
