"""The MPI tuning variables said beside a benchmark's figures."""
from __future__ import annotations

import pytest

from mpibench.base.mpi_settings import describe, injected, mpi_settings


@pytest.mark.parametrize("key", ["OMPI_MCA_smsc", "OMPI_MCA_btl", "PRTE_MCA_ras", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
                                 "I_MPI_ADJUST_ALLREDUCE", "UCX_TLS", "FI_PROVIDER"])
def test_a_users_tuning_variable_is_a_setting(key):
    assert mpi_settings({key: "x", "HOME": "/root"}) == [f"{key}=x"]


@pytest.mark.parametrize("key", ["OMPI_MCA_num_procs", "OMPI_MCA_initial_wdir", "OMPI_MCA_orte_launch",
                                 "OMPI_MCA_ess_base_jobid", "OMPI_MCA_pmix_server_uri", "OMPI_MCA_mpi_ft_enable"])
def test_what_the_launcher_puts_into_a_rank_is_not_a_setting(key):
    assert injected(key)
    assert mpi_settings({key: "1"}) == []


def test_settings_are_sorted_and_other_variables_ignored():
    env = {"UCX_TLS": "sm", "OMPI_MCA_smsc": "^cma", "PATH": "/bin", "OMPI_ALLOW_RUN_AS_ROOT": "1"}
    assert mpi_settings(env) == ["OMPI_MCA_smsc=^cma", "UCX_TLS=sm"]
    assert describe(mpi_settings(env)) == "OMPI_MCA_smsc=^cma UCX_TLS=sm"


def test_none_set_says_so():
    assert describe(mpi_settings({"PATH": "/bin"})) == "none set"


def test_the_process_environment_is_read_by_default(monkeypatch):
    monkeypatch.setenv("OMPI_MCA_smsc", "^cma")
    assert "OMPI_MCA_smsc=^cma" in mpi_settings()
