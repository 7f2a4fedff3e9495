"""Results, read offline from a run folder's CSVs: the calibration's figures, the
analytic cost model, the comparison of measured and modelled figures, and the
HTML report. Nothing here runs training or MPI: the job measures
(:mod:`mpibench.job.calibrate`, :mod:`mpibench.job.scaling`) and writes the CSVs.

Every figure is tagged ``measured`` (timed on real ranks) or ``modelled``
(computed from the alpha-beta-gamma model calibrated in the same run); the two
are never mixed, and where they disagree the disagreement is reported.
"""
