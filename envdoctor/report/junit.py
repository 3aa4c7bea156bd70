"""JUnit XML for CI systems: one testcase per declared requirement and per check (`envdoctor assert --format junit`).

The shape is the common one Jenkins, GitLab and GitHub test reporters read: <testsuites><testsuite tests=
failures= errors= skipped=><testcase classname= name=><failure message= type=>text</failure></testcase>.
A finding at or above --fail-on is a <failure>; a check that crashed is an <error>; a skipped check is
<skipped message=...>.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import List

from ..model.findings import CheckStatus, Finding, Report, Severity
from .redact import redact_report


def _finding_text(f: Finding) -> str:
    lines = [f"{f.severity} · {f.category} · {f.code}", f.summary]
    if f.detail:
        lines.append(f.detail)
    for e in f.evidence:
        lines.append(f"  {e.path} = {e.value!r}" + (f" (expected {e.expected})" if e.expected else "")
                     + (f" [source: {e.source}]" if e.source else ""))
    if f.fix:
        lines.append(f"Fix: {f.fix.summary}")
        lines += [f"    {c}" for c in f.fix.commands]
    return "\n".join(lines)


def render_junit(report: Report, fail_on: str = Severity.ERROR, redact: bool = True) -> str:
    if redact:
        report = redact_report(report)

    def r(text: str) -> str:
        # XML 1.0 cannot carry most control characters (a pasted terminal escape): drop them
        return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)

    cases: List[ET.Element] = []
    failures = errors = skipped = 0
    targets = report.facts.targets
    req_findings = {}
    for f in report.findings:
        for e in f.evidence:
            if e.path.startswith("targets.requirements["):
                req_findings.setdefault(e.path, []).append(f)
    for k, text in enumerate(targets.requirements if targets else []):
        case = ET.Element("testcase", classname="envdoctor.requirements", name=f"require {text}")
        bad = [f for f in req_findings.get(f"targets.requirements[{k}]", [])
               if Severity.at_least(f.severity, fail_on)]
        if bad:
            failures += 1
            el = ET.SubElement(case, "failure", message=r(bad[0].summary), type=bad[0].category)
            el.text = r("\n\n".join(_finding_text(f) for f in bad))
        cases.append(case)
    for c in report.checks:
        case = ET.Element("testcase", classname=f"envdoctor.{c.area}", name=c.id)
        if c.duration_s is not None:
            case.set("time", f"{c.duration_s:.3f}")
        if c.status == CheckStatus.SKIPPED:
            skipped += 1
            ET.SubElement(case, "skipped", message=r(c.reason or "skipped"))
        elif c.status == CheckStatus.ERRORED:
            errors += 1
            el = ET.SubElement(case, "error", message=r(c.reason or "check crashed"), type="CheckErrored")
            el.text = r(c.reason or "")
        else:
            bad = [f for f in c.findings if Severity.at_least(f.severity, fail_on)]
            if bad:
                failures += 1
                el = ET.SubElement(case, "failure", message=r(bad[0].summary), type=bad[0].category)
                el.text = r("\n\n".join(_finding_text(f) for f in bad))
            rest = [f for f in c.findings if f not in bad]
            if rest:
                out = ET.SubElement(case, "system-out")
                out.text = r("\n\n".join(_finding_text(f) for f in rest))
        cases.append(case)
    suites = ET.Element("testsuites", name="envdoctor")
    suite = ET.SubElement(suites, "testsuite", name="envdoctor assert" if targets else "envdoctor",
                          tests=str(len(cases)), failures=str(failures), errors=str(errors), skipped=str(skipped))
    if report.facts.collected_at:
        suite.set("timestamp", report.facts.collected_at.replace("+00:00", ""))
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="envdoctor_version", value=report.envdoctor_version)
    ET.SubElement(props, "property", name="compat_as_of", value=str(report.compat_as_of or ""))
    data = getattr(report, "compat_source", None)
    if data:
        ET.SubElement(props, "property", name="compat_data", value=r(str(data)))
    if targets and targets.source:
        ET.SubElement(props, "property", name="targets_source", value=r(targets.source))
    suite.extend(cases)
    suites.set("tests", str(len(cases)))
    suites.set("failures", str(failures))
    suites.set("errors", str(errors))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
