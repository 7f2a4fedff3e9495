"""A throw-away multi-host testbed on one machine: hosts as network namespaces.

Each host is a Linux network namespace with its own hostname, joined by a veth
pair to one bridge; addresses come from the benchmarking range 198.18.0.0/15 and
no host has a route off the bridge. Open MPI reaches the hosts through an
``rsh`` agent that runs ``ip netns exec``, so ranks on one host talk over shared
memory and ranks on different hosts over TCP across the bridge. A real network
partition is nftables rules inside the namespaces, applied and lifted from
outside the job.

Everything here drives ``ip``, ``nft`` and ``mpirun`` as subprocesses and never
imports mpi4py. Needs root.

* :mod:`.netns`     -- create and tear down hosts, bridge and links by name
* :mod:`.launch`    -- rsh agent, hostfile and the mpirun command for a testbed
* :mod:`.cut`       -- cut and heal all traffic between two groups of hosts
* :mod:`.netfault`  -- a seeded network-partition schedule and the driver that
                       applies it when the job reaches the scheduled step
"""


def run_script(command, name: str) -> None:
    """Run a click command as a script: bad usage is one line on stderr and exit 2."""
    import sys

    import click

    try:
        command.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        sys.stderr.write(f"{name}: error: {exc.format_message().splitlines()[0]}\n")
        sys.exit(2)
    sys.exit(0)
