"""Contract: checks do no I/O (under the audit hook of tests/audit.py) and every check is catalogued and skips cleanly."""

from __future__ import annotations

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts
from envdoctor.model.findings import CheckStatus
from tests import audit
from tests import machines as m


def _snapshots():
    snaps = [build() for build, _ in m.SCENARIOS.values()]
    snaps.append(Facts())  # nothing probed at all
    snaps.append(m.with_nvcc(m.healthy_a100(), "11.8", "11.8.89"))
    return snaps


def test_checks_do_no_io():
    # every snapshot and paste in the repository: tests/test_diagnose_no_io.py; these add the scenarios' variants
    compat = load_compat()  # loading data is not a check's job: done before the hook acts
    # nor is importing a module a check imports lazily (packaging's requirement parser): run alone, this test
    # failed on packages.torch-requires' first import; with other tests before it, it passed
    from envdoctor.services.collect import warm_up

    warm_up()
    snaps = _snapshots()
    audit.SEEN.clear()
    for facts in snaps:
        with audit.forbidden():
            results = run_checks(facts, compat, all_checks())
        for res in results:
            assert res.status != CheckStatus.ERRORED, (res.id, res.reason)
    assert not audit.SEEN, audit.SEEN


@pytest.mark.parametrize("check", all_checks(), ids=lambda c: c.id)
def test_every_check_has_categories_from_the_catalogue(check):
    from envdoctor.model.catalogue import CATEGORIES

    assert check.categories, check.id
    assert set(check.categories) <= set(CATEGORIES)


def test_empty_facts_skip_rather_than_crash():
    results = run_checks(Facts(), load_compat(), all_checks())
    assert all(r.status in (CheckStatus.SKIPPED, CheckStatus.PASSED) for r in results), \
        [(r.id, r.status, r.reason) for r in results if r.status not in (CheckStatus.SKIPPED, CheckStatus.PASSED)]
    for r in results:
        if r.status == CheckStatus.SKIPPED:
            assert r.reason
