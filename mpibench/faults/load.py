"""From a name or a file to a validated schedule.

Kept apart from :mod:`.schedule` (the data and its validation) so that the
data module imports nothing: the named scenarios (:mod:`.scenarios`) and the
TOML reader (:mod:`.toml_io`) build schedules, and this module chooses between
them.
"""
from __future__ import annotations

from .scenarios import ALL_SCENARIOS, build
from .schedule import Schedule, validate
from .toml_io import load_file

UNKNOWN = "unknown scenario {name!r} (see 'python -m mpibench scenarios', or give a .toml schedule file)"


def check_name(name_or_path: str) -> None:
    """ValueError unless ``name_or_path`` names a scenario or a .toml file: what can be told
    before the world size is known (a file is read, and may be written, later: :func:`load_schedule`)."""
    if name_or_path not in ALL_SCENARIOS and not name_or_path.endswith(".toml"):
        raise ValueError(UNKNOWN.format(name=name_or_path))


def load_schedule(name_or_path: str, world_size: int, seed: int = 0) -> Schedule:
    """A named scenario or a TOML file, validated for ``world_size``; ValueError if not valid.

    ``seed`` is accepted so seeded scenarios can be added without changing callers;
    the named scenarios and TOML files are fixed.
    """
    check_name(name_or_path)
    if name_or_path in ALL_SCENARIOS:
        return validate(build(name_or_path, world_size))
    return validate(load_file(name_or_path, world_size))
