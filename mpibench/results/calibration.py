"""The calibrated machine parameters: plain data, readable without MPI.

:mod:`.calibrate` measures them inside a job; the cost model, the comparison
and the report (which runs without MPI) read them from here or from run.json.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Calibration:
    """The calibrated machine parameters and how each one was obtained."""

    alpha_s: float
    beta_s_per_byte: float
    gamma_cache_s_per_byte: float
    gamma_memory_s_per_byte: float
    compute_fixed_s: float
    compute_per_sample_s: float
    cores: int
    ranks_on_host: int
    ranks: int
    call_overhead_s: float = 0.0
    loop_overhead_s: float = 0.0  # the worker loop's bookkeeping per step
    one_rank_step_s: dict = field(default_factory=dict)  # str(local batch) -> one-rank step (median over strategies)
    one_rank_step_by_strategy_s: dict = field(default_factory=dict)  # "strategy:batch" -> one-rank step time
    alpha_step_s: float = 0.0  # alpha and beta as a training step sees them (after compute)
    beta_step_s_per_byte: float = 0.0
    other_load_cores: float | None = None  # other processes' CPU use while calibrating
    shapes: dict = field(default_factory=dict)
    how: dict = field(default_factory=dict)
    ping_pong: list = field(default_factory=list)  # (bytes, half round trip s)
    exchange_step: list = field(default_factory=list)  # (bytes, s) one exchange each way after a local step
    agree_s: float = 0.0  # the commit agreement over all ``ranks`` (job.calibrate_agree)
    agree_self_s: float = 0.0  # the same on one rank
    bands: list = field(default_factory=list)  # [upper bytes or None, alpha_s, beta_s_per_byte] (calibrate_bands)
    band_split_bytes: int | None = None
    ping_pong_bands: list = field(default_factory=list)  # (bytes, half round trip s) the bands were fitted to
    step_bands: list = field(default_factory=list)  # as ``bands``, fitted to ``exchange_step``
    step_band_split_bytes: int | None = None

    def in_step(self) -> "Calibration":
        """These figures with the after-compute alpha and beta, and their bands when calibrated
        (for modelling training steps)."""
        if not self.alpha_step_s and not self.beta_step_s_per_byte:
            return self
        return Calibration.from_dict({**self.as_dict(), "alpha_s": self.alpha_step_s,
                                      "beta_s_per_byte": self.beta_step_s_per_byte, "bands": self.step_bands,
                                      "band_split_bytes": self.step_band_split_bytes})

    def band(self, message_bytes: float) -> tuple[str, float, float]:
        """(band name, alpha, beta) for a message of ``message_bytes``: the band's when
        calibrated by band, else ("one line", alpha_s, beta_s_per_byte)."""
        for upper, alpha, beta in self.bands:
            if upper is None or message_bytes <= upper:
                name = f"<= {int(upper) >> 10} KiB" if upper is not None else (
                    f"> {int(self.band_split_bytes) >> 10} KiB" if self.band_split_bytes else "one line")
                return name, float(alpha), float(beta)
        return "one line", self.alpha_s, self.beta_s_per_byte

    def in_band(self, message_bytes: float) -> "Calibration":
        """These figures with the alpha and beta of ``message_bytes``'s band."""
        if not self.bands:
            return self
        _, alpha, beta = self.band(message_bytes)
        return Calibration.from_dict({**self.as_dict(), "alpha_s": alpha, "beta_s_per_byte": beta})

    def with_one_rank_step(self, strategy: str, batch, seconds) -> "Calibration":
        """These figures with the one-rank step of ``strategy`` at ``batch`` replaced by
        ``seconds`` (a measurement taken beside a scaling point); unchanged without one."""
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            return self
        if not seconds > 0 or not float(batch).is_integer():
            return self
        table = {**self.one_rank_step_by_strategy_s, f"{strategy}:{int(batch)}": seconds}
        return Calibration.from_dict({**self.as_dict(), "one_rank_step_by_strategy_s": table})

    def gamma_s_per_byte(self, nbytes: float) -> float:
        """Reduction cost per byte: the cache figure for small buffers, memory for large."""
        return self.gamma_cache_s_per_byte if nbytes <= 1 << 20 else self.gamma_memory_s_per_byte

    def compute_s(self, batch: float) -> float:
        return self.compute_fixed_s + self.compute_per_sample_s * batch

    def local_step_s(self, batch: float, strategy: str | None = None) -> float:
        """One rank's step without communication: measured through the worker loop at
        this batch (under ``strategy`` when calibrated so) when calibrated there, else
        the compute line plus the loop overhead."""
        measured = None
        if float(batch).is_integer():
            measured = self.one_rank_step_by_strategy_s.get(f"{strategy}:{int(batch)}")
            if measured is None:
                measured = self.one_rank_step_s.get(str(int(batch)))
        if measured is not None:
            return max(measured - 2 * self.call_overhead_s, 0.0)  # its two one-rank collectives
        return self.compute_s(batch) + self.loop_overhead_s

    @property
    def oversubscribed(self) -> bool:
        return self.ranks_on_host > self.cores

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Calibration":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})
