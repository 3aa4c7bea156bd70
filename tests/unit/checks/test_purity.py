"""Contract: checks do no I/O. Every check runs on every snapshot with subprocess, sockets and open patched to fail."""

from __future__ import annotations

import builtins
import os
import socket
import subprocess

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.facts import Facts
from envdoctor.findings import CheckStatus
from tests import machines as m


class IOAttempted(AssertionError):
    pass


def _fail(*_a, **_k):
    raise IOAttempted("a check tried to do I/O")


def _snapshots():
    snaps = [build() for build, _ in m.SCENARIOS.values()]
    snaps.append(Facts())  # nothing probed at all
    snaps.append(m.with_nvcc(m.healthy_a100(), "11.8", "11.8.89"))
    return snaps


def test_checks_do_no_io(monkeypatch):
    compat = load_compat()  # loading data is not a check's job: done before the patches
    snaps = _snapshots()
    monkeypatch.setattr(builtins, "open", _fail)
    monkeypatch.setattr(os, "open", _fail)
    monkeypatch.setattr(subprocess, "Popen", _fail)
    monkeypatch.setattr(socket, "socket", _fail)
    for facts in snaps:
        for res in run_checks(facts, compat, all_checks()):
            assert res.status != CheckStatus.ERRORED, (res.id, res.reason)


@pytest.mark.parametrize("check", all_checks(), ids=lambda c: c.id)
def test_every_check_has_categories_from_the_catalogue(check):
    from envdoctor.catalogue import CATEGORIES

    assert check.categories, check.id
    assert set(check.categories) <= set(CATEGORIES)


def test_empty_facts_skip_rather_than_crash():
    results = run_checks(Facts(), load_compat(), all_checks())
    assert all(r.status in (CheckStatus.SKIPPED, CheckStatus.PASSED) for r in results), \
        [(r.id, r.status, r.reason) for r in results if r.status not in (CheckStatus.SKIPPED, CheckStatus.PASSED)]
    for r in results:
        if r.status == CheckStatus.SKIPPED:
            assert r.reason
