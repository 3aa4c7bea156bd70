"""envdoctor.domain.pci, table-driven: every spelling of a GPU's address reduces to one key."""

from __future__ import annotations

import pytest

from envdoctor.domain.pci import bdf_key, bus_key, parse_bdf


@pytest.mark.parametrize("bdf, bus, full", [
    ("00000000:3B:00.0", "0000:3b:00", "0000:3b:00.0"),  # NVML: 8-hex domain, upper case
    ("0000:3b:00.0", "0000:3b:00", "0000:3b:00.0"),  # sysfs / lspci -D
    ("3b:00.0", "0000:3b:00", "0000:3b:00.0"),  # lspci without the domain
    ("0000:3b:00", "0000:3b:00", "0000:3b:00"),  # torch, Xid lines: no function
    ("3b:00.1", "0000:3b:00", "0000:3b:00.1"),  # the board's audio function: same GPU, another function
    ("00010000:01:00.0", "10000:01:00", "10000:01:00.0"),  # Intel VMD domain: never cut to 4 digits
    ("10000:01:00.0", "10000:01:00", "10000:01:00.0"),
    ("0008:00:00.0", "0008:00:00", "0008:00:00.0"),
    ("garbage", None, None), ("0000:3b:zz.0", None, None), ("", None, None), (None, None, None),
])
def test_keys(bdf, bus, full):
    assert bus_key(bdf) == bus
    assert bdf_key(bdf) == full


def test_nvml_and_lspci_and_torch_agree():
    assert len({bus_key(b) for b in ("00000000:17:00.0", "17:00.0", "0000:17:00", "0000:17:00.1")}) == 1


def test_parse_bdf():
    assert parse_bdf("00000000:3B:00.0") == (0, 0x3B, 0, 0)
    assert parse_bdf("3b:00") == (0, 0x3B, 0, None)
