"""The report's simulated section (mpibench.results.page.simulated): every figure under its tag."""
from __future__ import annotations

from mpibench.results.page import simulated

ROWS = """kind,platform,strategy,ranks,bytes,sync_s,step_s,recovery_s,tag
scale,cluster,ring,8,1000,0.001,0.002,0.003,simulated
scale,cluster,ring,8,1000,0.001,0.002,,modelled
host,this host,ring,2,,,0.0010,,measured
host,this host (cpu clock),ring,2,,,0.0012,,simulated
host,this host,ps,2,,,0.0010,,measured
host,this host (cpu clock),ps,2,,,0.0020,,simulated
"""


def test_section_shows_tags_and_judges_the_p2_tolerance(tmp_path):
    (tmp_path / "simulated.csv").write_text(ROWS)
    html = simulated.section(str(tmp_path))
    assert "[simulated]" in html and "[modelled]" in html and "measured ms" in html
    ring = html[html.index("<td>ring</td>"):]
    assert "<td>1.2</td>" in ring[:200] and "<td>yes</td>" in ring[:300]  # 1.2 ms: within 25 %
    ps = html[html.index("<td>ps</td>"):]
    assert "<td>no</td>" in ps[:300]  # twice the measured time: outside


def test_no_predictions_no_section(tmp_path):
    assert simulated.section(str(tmp_path)) == ""
