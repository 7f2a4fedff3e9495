"""Near the top of the page: what the launch could do, and the planned cases it could not run.

Read from run.json (``launch``: the probe's findings; ``not_run``: case id -> what
it needs; ``full_command``: the launch that runs every case), so the first screen
says what ran and what did not, not only whether what ran passed.
"""
from __future__ import annotations

from ..htmlparts import esc


def section(info: dict) -> str:
    launch = info.get("launch")
    if not isinstance(launch, dict):
        return ""
    not_run = info.get("not_run") or {}
    ran = len(info.get("cases") or [])
    hosts = "; ".join(f"{h.get('host')}: {h.get('ranks')} rank(s) on {h.get('cores')} CPU(s), binding "
                      f"{h.get('binding')}" for h in launch.get("hosts", []))
    able = (f"process-fault tolerance {'yes' if launch.get('fault_tolerance') else 'no'}; "
            f"spawn: {launch.get('spawn')}; recoverable spawned processes "
            f"{'yes' if launch.get('recoverable_spawn') else 'no'}")
    parts = [f"<div id='launch' class='{'warning' if not_run else 'meta-line'}'>",
             f"<div>Launch: {esc(' '.join(str(launch.get('library', '')).split(',')[0].split()))} ({esc(launch.get('family'))}), "
             f"{esc(hosts)}; {esc(able)}.</div>"]
    if not_run:
        parts.append(f"<div><strong>Ran {ran} of {ran + len(not_run)} planned cases; "
                     f"{len(not_run)} not run</strong> (this launch cannot support them; exit status 4 "
                     "when everything that ran passed):</div><ul>")
        by_need: dict[str, list[str]] = {}
        for case, needs in not_run.items():
            by_need.setdefault(str(needs), []).append(str(case))
        parts += [f"<li>needs {esc(needs)}: {esc(', '.join(cases))}</li>" for needs, cases in by_need.items()]
        parts.append("</ul>")
        if info.get("full_command"):
            parts.append(f"<div>To run every case: <code>{esc(info['full_command'])}</code></div>")
    else:
        parts.append(f"<div>Ran all {ran} planned case(s).</div>")
    return "".join(parts) + "</div>"
