"""The nvidia-smi field table: it names real ``Gpu`` fields once each, and the CSV query asks for what it reads."""

from __future__ import annotations

import dataclasses

from envdoctor.model.facts import Gpu
from envdoctor.parsers.nvidia_smi_csv import QUERY_GPU_FIELDS, gpus_from_query_csv
from envdoctor.parsers.nvidia_smi_fields import DERIVED, GPU_FIELDS
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml


def _keys(key):
    return () if key is None or key == DERIVED else (key,) if isinstance(key, str) else key


def test_every_row_is_one_gpu_field_that_some_format_has():
    names = [f.gpu for f in GPU_FIELDS]
    assert len(names) == len(set(names))
    assert set(names) <= {f.name for f in dataclasses.fields(Gpu)}
    assert all(f.xml is not None or f.q is not None or f.csv is not None for f in GPU_FIELDS)


def test_every_queried_csv_field_is_read():
    # QUERY_GPU_FIELDS is what the probe asks nvidia-smi for; a column the table does not name would be dropped
    read = {name for f in GPU_FIELDS for key in _keys(f.csv) for name in key.split("|")}
    assert set(QUERY_GPU_FIELDS) - read == {"index", "driver_version"}


def test_a_renamed_section_and_a_fallback_key_are_both_read():
    # <power_readings> is the tag before driver ~530; power_draw N/A falls through to instant_power_draw
    xml = ('<nvidia_smi_log><gpu id="00000000:01:00.0"><power_readings><power_draw>N/A</power_draw>'
           "<instant_power_draw>71.50 W</instant_power_draw></power_readings></gpu></nvidia_smi_log>")
    (g,) = parse_nvidia_smi_xml(xml).gpus
    assert (g.power_draw_w, g.pci_bus_id) == (71.5, "00000000:01:00.0")
    # CSV: an unknown first spelling of a column falls through to the other
    (g,) = gpus_from_query_csv("clocks.current.sm [MHz], clocks.sm [MHz]\n[N/A], 1410 MHz\n")
    assert g.clocks_sm_mhz == 1410
