"""Orchestration inside ``mpirun``: the main job and single runs (:mod:`.suite`,
:mod:`.runner`), the bench command (:mod:`.bench`), output folders, and the
in-job measurements (calibration, scaling)
that the offline report (:mod:`mpibench.results`) later reads as CSV."""
