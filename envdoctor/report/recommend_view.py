"""`envdoctor recommend`'s answer as console text (services/recommend.py answers; the command line prints this)."""

from __future__ import annotations

from typing import Any, Dict


def render_recommendation(out: Dict[str, Any]) -> str:
    """The answer of services.recommend.recommend_for, as the console shows it."""
    lines = [f"For driver {out['driver'] or 'unknown'}, GPUs {', '.join(out['gpus']) or '(none given)'}, "
             f"Python {out['python'] or 'any'}, {out['os']}:"]
    for note in out.get("from_this_machine") or []:
        lines.append(f"  ({note})")
    for note in out["gpu_notes"]:
        lines.append(f"  ! {note}")
    change = out.get("driver_change")
    if out["driver_cannot_drive_gpu"]:
        lines.append(f"  ! {out['driver_cannot_drive_gpu']}: "
                     + (f"install the R{change['install_branch']} driver (a downgrade)"
                        if change and change["install_branch"] else
                        f"{change['why'].split(' [', 1)[0]}: plan these GPUs on separate machines" if change else
                        "upgrade the driver first" if out["driver"] else "plan these GPUs on separate machines"))
    rec = out["recommendation"]
    if rec is None:
        lines.append("No torch build in the matrix fits" + (f": {out['why_none']}" if out.get("why_none") else "."))
    else:
        lines += ["", f"Newest that fits: torch {rec['torch']} ({rec['variant']}"
                  + (f", CUDA {rec['cuda']})" if rec["cuda"] else ")")
                  + (f", torchvision {rec['torchvision']}" if rec["torchvision"] else "")
                  + (f", torchaudio {rec['torchaudio']}" if rec["torchaudio"] else "")
                  + (f", triton {rec['triton']}" if rec["triton"] else "")]
        if rec["rule"]:
            lines.append(f"  fits because: {rec['rule']}")
        for n in rec["not_covered"]:
            lines.append(f"  not covered by that rule: {n}")
        for n in rec["unknown"]:
            lines.append(f"  not judged: {n}")
        lines += ["  " + rec["pip"], "  " + rec["uv"]]
    if change and change["install_branch"]:
        after = change["recommendation"] or change["cpu_build"]
        lines += ["", f"With the R{change['install_branch']} driver"
                  + (f" (judged as {change['judged_with_driver']}, its newest in the matrix)"
                     if change["judged_with_driver"] else "") + ":"]
        if change["recommendation"] is None and change["why_none"]:
            lines.append(f"  no CUDA build fits: {change['why_none']}")
        if after is not None:
            lines.append(f"  torch {after['torch']} ({after['variant']}"
                         + (f", CUDA {after['cuda']})" if after["cuda"] else ", the CPU build)"))
            if after["rule"]:
                lines.append(f"  fits because: {after['rule']}")
            lines.append("  " + after["pip"])
        cpu = change["cpu_build"]
        if cpu is not None and after is not cpu:
            lines.append(f"  or the CPU build, {cpu['rule'].split(':', 1)[0]}: torch {cpu['torch']}")
            lines.append("  " + cpu["pip"])
    if out["per_cuda_variant"]:
        lines += ["", "For a machine with NVIDIA GPUs (driver unknown), the newest for each CUDA variant:"
                  if out.get("cpu_box") and rec is not None and rec["cuda"] is None else
                  "Newest for each other CUDA variant that fits:"]
        for e in out["per_cuda_variant"]:
            rule = (e["rule"] or "").split(" [", 1)[0]
            lines.append(f"  {e['variant']}: torch {e['torch']}" + (f" ({rule})" if rule else ""))
            lines.append(f"      {e['pip']}")
    newer = out["newer_not_fitting"]
    if newer:
        lines += ["", "Why newer builds do not fit:"]
        seen = set()
        for r in newer:
            key = (r["variant"], r["why_not"])
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"  torch {r['torch']} {r['variant']}: {r['why_not']}")
    for s in out["skipped"]:
        lines.append(f"(not judged: {s})")
    lines.append(f"(matrix as of {out['as_of']})")
    return "\n".join(lines)


