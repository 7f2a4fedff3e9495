"""Results: calibration, the analytic cost model, measured scaling, the comparison
of measured and modelled figures, and the HTML correctness report.

Every figure is tagged ``measured`` (timed on real ranks) or ``modelled``
(computed from the alpha-beta-gamma model calibrated in the same run); the two
are never mixed, and where they disagree the disagreement is reported.
"""
