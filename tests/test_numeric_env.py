"""The environment a printed command carries: the numeric kernels' variables and the user's
MPI tuning variables, never the launcher's own, and no MPI ones before a command without MPI;
the PYTHONPATH a plugin is found on."""
import pytest

from mpibench.base import numeric_env


@pytest.fixture
def clean(monkeypatch):
    import os
    for key in list(os.environ):
        if key.startswith(numeric_env.NUMERIC_ENV_PREFIXES) or key.startswith(("OMPI_", "PRTE_", "MPIR_CVAR_")):
            monkeypatch.delenv(key)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return monkeypatch


def test_nothing_set_means_no_prefix(clean):
    assert numeric_env.env_prefix() == [] and numeric_env.env_prefix(with_mpi=False) == []


def test_the_users_mpi_settings_are_carried_the_launchers_are_not(clean):
    clean.setenv("OPENBLAS_CORETYPE", "Haswell")
    clean.setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1")
    clean.setenv("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "ring")
    clean.setenv("OMPI_MCA_num_procs", "3")  # Open MPI's launcher sets this in every rank
    clean.setenv("OMPI_COMM_WORLD_RANK", "0")
    words = numeric_env.env_prefix()
    assert words[0].endswith("env")
    assert words[1:] == ["OPENBLAS_CORETYPE=Haswell", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring",
                         "OMPI_MCA_coll_libnbc_iallreduce_algorithm=1"]


def test_a_command_without_mpi_carries_only_the_kernels(clean):
    clean.setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1")
    assert numeric_env.env_prefix(with_mpi=False) == []
    clean.setenv("OMP_NUM_THREADS", "1")
    assert numeric_env.env_prefix(with_mpi=False)[1:] == ["OMP_NUM_THREADS=1"]


def test_the_path_plugins_are_found_on_is_carried_by_every_command(clean):
    clean.setenv("PYTHONPATH", "/home/me/plugins:/opt/kinds")
    assert numeric_env.env_prefix()[1:] == ["PYTHONPATH=/home/me/plugins:/opt/kinds"]
    assert numeric_env.env_prefix(with_mpi=False)[1:] == ["PYTHONPATH=/home/me/plugins:/opt/kinds"]
