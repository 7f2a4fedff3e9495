"""Alpha and beta by message-size band, calibrated in the run.

One line ``alpha + n*beta`` misses the collectives on both sides of the MPI's
protocol switch (eager below, rendezvous or single-copy above; near 64 KiB on
the PyPI Open MPI's shared memory): fitted to a ping-pong from 8 bytes to
16 MiB, it was off by more than the tolerance at small or large sizes. Here
the ping-pong runs over sizes on both sides and :func:`~.timing.fit_bands`
picks the split that fits best among the sizes tried; the model then takes
each message's alpha and beta from its band (``Calibration.in_band``).
"""
from __future__ import annotations

from .calibrate_agree import AGREE_HOW, agreement_s
from .timing import fit_bands

BAND_SIZES_BYTES = (8, 256, 1 << 10, 4 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20,
                    4 << 20, 16 << 20)
BAND_SPLITS_BYTES = (4 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10)

MORE_HOW = {
    **AGREE_HOW,
    "bands": "ping-pong as for alpha_s over " + ", ".join(str(s) for s in BAND_SIZES_BYTES) + " bytes; split "
             "into two bands at the size among " + ", ".join(str(s) for s in BAND_SPLITS_BYTES) + " that gives the "
             "least squared relative error, alpha and beta fitted per band as for alpha_s: "
             "[upper bytes (null: no bound), alpha s, beta s/byte]",
    "band_split_bytes": "the split chosen (null: one line fitted best)",
}


def more_figures(world, ping_pong) -> dict:
    """The commit agreement and the bands (collective over ``world``; ``ping_pong`` is
    :func:`.calibrate.ping_pong`, passed in so this module stays below it)."""
    agree, agree_self = agreement_s(world)
    points = ping_pong(world, sizes=BAND_SIZES_BYTES)
    split, bands = fit_bands(points, BAND_SPLITS_BYTES) if len(points) >= 2 else (None, [])
    return {"agree_s": agree, "agree_self_s": agree_self, "bands": bands, "band_split_bytes": split,
            "ping_pong_bands": [list(p) for p in points]}
