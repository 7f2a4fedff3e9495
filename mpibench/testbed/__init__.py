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
