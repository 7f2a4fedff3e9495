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
    assert "[simulated]" in html and "[modelled]" in html and "step ms [measured]" in html
    ring = html[html.index("<td>ring</td>"):]
    assert "<td>1.2</td>" in ring[:200] and "<td>yes</td>" in ring[:300]  # 1.2 ms: within 25 %
    ps = html[html.index("<td>ps</td>"):]
    assert "<td>no</td>" in ps[:300]  # twice the measured time: outside


def test_no_predictions_no_section(tmp_path):
    assert simulated.section(str(tmp_path)) == ""


PARTS = """kind,platform,strategy,ranks,bytes,sync_s,step_s,recovery_s,compute_s,rest_s,evidence_s,check_s,commit_s,cpu_scale,tag
host,this host,ring,2,,0.0001,0.0003,,0.00012,0.00005,0.0001,0.00002,0.0,,measured
host,this host (replayed),ring,2,,0.00006,0.00025,,0.00012,0.00006,0.00011,0.00002,0.0,1.1,simulated
host,this host,ring,1,,0.00004,0.0005,,0.0004,0.00006,0.0003,0.00002,0.0,,measured
host,this host (replayed),ring,1,,0.00003,0.0009,,0.0004,0.00005,0.0007,0.00003,0.0,1.0,simulated
"""


def test_section_shows_each_part_under_both_tags_and_says_compute_is_an_input(tmp_path):
    (tmp_path / "simulated.csv").write_text(PARTS)
    html = simulated.section(str(tmp_path))
    assert "reduction ms [measured | simulated]" in html and "compute is an input" in html
    p2 = html[html.index("<td>ring</td><td class=\"num\">2</td>"):]
    assert "<td>0.1 | 0.06</td>" in p2[:400] and "<td>yes</td>" in p2[:200]  # 0.25 / 0.3 ms: -17 %
    p1 = html[html.index("<td>ring</td><td class=\"num\">1</td>"):]
    assert "<td>no</td>" in p1[:200]  # 0.9 / 0.5 ms: outside


def test_the_smpi_crosscheck_table_is_shown_beside_the_scale_rows(tmp_path):
    csv_path = tmp_path / "smpi_crosscheck.csv"
    csv_path.write_text("date,platform,placement,ranks,ranks_per_node,strategy,smpi_algorithm,bytes,smpi_s,smpi_lo_s,"
                        "smpi_hi_s,calls,launches,predicted_s,ratio,smpi_wall_s,note,tag\n"
                        "2026-01-01,p.toml,block,64,8,ring,lr,4096,2.5e-4,2.5e-4,2.5e-4,1,1,2.4e-4,0.96,1.0,,simulated\n"
                        "2026-01-01,p.toml,block,64,8,ring,lr,8,1e-5,1e-5,1e-5,1,1,2.4e-4,24,1.0,"
                        "SMPI lr: count < p <x>,simulated\n")
    html = simulated._crosscheck(csv_path)
    assert "beside SMPI" in html and "0.96" in html and "&lt;x&gt;" in html and "nan" not in html
    assert simulated._crosscheck(tmp_path / "absent.csv") == ""
