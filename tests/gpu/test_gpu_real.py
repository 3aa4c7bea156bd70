"""On a machine with an NVIDIA GPU: the real NVML probe and a real report, checked for structure and sanity only."""

from __future__ import annotations

import pytest

from envdoctor.model.facts import ProbeStatus


def _nvml_or_skip():
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except pynvml.NVMLError as e:
        pytest.skip(f"no usable NVIDIA driver here: {e}")
    if count == 0:
        pytest.skip("the driver lists no GPU")
    return pynvml


@pytest.mark.gpu
def test_real_nvml_probe_reads_every_gpu():
    from envdoctor.probes.nvml import binding_problem, probe_nvml

    pynvml = _nvml_or_skip()
    assert binding_problem(pynvml) is None
    d = probe_nvml()
    assert d.status == ProbeStatus.OK, d.reason
    assert d.version and d.gpus
    for g in d.gpus:
        assert g.name and g.pci_bus_id and g.memory_total_bytes and g.memory_total_bytes > 0
        assert g.nvml_error is None, (g.index, g.nvml_error, g.notes)
        # no field failed for a reason other than NVML's own answer
        assert not [n for n in g.notes or [] if "Error:" in n and "NVML" not in n], g.notes
        assert g.nvlinks is None or all(lk.link >= 0 for lk in g.nvlinks)


@pytest.mark.gpu
def test_real_report_has_no_crashed_check():
    from envdoctor.model.findings import CheckStatus
    from envdoctor.services.collect import collect, judge

    _nvml_or_skip()
    report = judge(collect())
    assert not [c.id for c in report.checks if c.status == CheckStatus.ERRORED]
