"""Fault schedules and the communicator wrapper that injects them.

A schedule is plain data (what happens to which worker at which step and
phase); the wrapper around the communicator carries it out. Algorithms never
read the schedule: they only see the communicator's errors.
"""
from .schedule import Schedule, load_schedule
from .wrapper import wrap

__all__ = ["Schedule", "load_schedule", "wrap"]
