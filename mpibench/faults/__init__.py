"""Fault schedules and the communicator wrapper that injects them.

A schedule is plain data (what happens to which worker at which step and
phase); the wrapper around the communicator carries it out, and the recovery
policy (ULFM shrink or respawn, partition views, straggler drops) decides what
the survivors do. Algorithms never read the schedule: they only see the
communicator's errors.
"""
from .load import check_name, load_schedule
from .random_schedule import random_schedule
from .schedule import Delay, Kill, Partition, Schedule, validate

__all__ = ["Delay", "Kill", "Partition", "Schedule", "check_name", "load_schedule", "random_schedule", "validate"]
