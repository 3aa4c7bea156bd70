"""Parsers for nvidia-smi XML, -q text, query CSV, nvlink status, topo -m and /proc/driver/nvidia/version."""

from __future__ import annotations

import pytest

from envdoctor.model.facts import NvlinkLink, ProbeStatus
from envdoctor.parsers.nvidia_smi_csv import gpus_from_query_csv, parse_query_csv
from envdoctor.parsers.nvidia_smi_fields import clean, to_bytes
from envdoctor.parsers.nvidia_smi_q import parse_nvidia_smi_q
from envdoctor.parsers.nvidia_smi_xml import cuda_version_from_int, parse_nvidia_smi_xml
from envdoctor.parsers.nvlink import parse_nvlink_status
from envdoctor.parsers.proc_driver import parse_proc_driver_version
from envdoctor.parsers.topo import parse_topo
from tests.paths import FIXTURES

FIX = FIXTURES
MIB = 1024 * 1024


def fixture(rel: str) -> str:
    return (FIX / rel).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize("raw", ["N/A", "[N/A]", "[Not Supported]", "[Unknown Error]", "  ", "Requested functionality has been deprecated"])
def test_clean_unknowns(raw):
    assert clean(raw) is None


def test_units_and_cuda_int():
    assert to_bytes("81920 MiB") == 81920 * MIB
    assert cuda_version_from_int(12040) == "12.4"
    assert cuda_version_from_int(11080) == "11.8"


# --------------------------------------------------------------------------- XML


def test_xml_a100_v12_mig_ecc_power():
    d = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/a100-sxm4-80gb_535.54.03.xml"))
    assert (d.status, d.source, d.version, d.cuda_driver_version) == ("ok", "nvidia-smi-xml", "535.54.03", "12.2")
    (g,) = d.gpus
    assert g.name == "NVIDIA A100-SXM4-80GB"
    assert g.pci_bus_id == "00000000:01:00.0" and g.pci_device_id == "0x20B210DE"
    assert g.architecture == "Ampere"
    assert g.memory_total_bytes == 81920 * MIB and g.memory_used_bytes == 50 * MIB
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_gen_device_max) == (4, 4, 4)
    assert (g.pcie_width_current, g.pcie_width_max) == (16, 16)
    assert g.mig_mode_current is True and g.mig_mode_pending is True and g.mig_device_count == 4
    assert g.persistence_mode is False
    assert g.ecc_mode_current is True and g.ecc_volatile_uncorrected == 0 and g.ecc_aggregate_corrected == 0
    assert g.retired_pages_single_bit is None and g.remapped_rows_pending is None  # "N/A" in this capture
    assert (g.power_draw_w, g.power_limit_w, g.power_min_limit_w, g.power_max_limit_w) == (67.03, 500.0, 100.0, 500.0)
    assert (g.temperature_c, g.temperature_slowdown_c, g.temperature_shutdown_c) == (27.0, 89.0, 92.0)
    assert (g.clocks_sm_mhz, g.clocks_sm_max_mhz, g.clocks_mem_max_mhz, g.clocks_sm_app_mhz) == (1275, 1410, 1593, 1275)
    assert g.throttle_reasons == []
    assert g.utilization_gpu_pct is None  # N/A under MIG
    assert g.processes == []


def test_xml_old_throttle_tags_and_power_readings():
    # DTD without DOCTYPE, <clocks_throttle_reasons>, <power_readings> all N/A
    d = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/quadro-p400_418.43.xml"))
    (g,) = d.gpus
    assert d.version == "418.43" and d.cuda_driver_version == "10.1"
    assert g.throttle_reasons == ["gpu_idle"]
    assert g.power_draw_w is None and g.power_limit_w is None
    assert g.temperature_slowdown_c == 100.0 and g.temperature_shutdown_c == 103.0
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_gen_device_max) == (1, 3, None)


def test_xml_a10g_remapped_rows_processes():
    (g,) = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/a10g_515.105.01.xml")).gpus
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable) == (0, 0)
    assert g.remapped_rows_pending is False and g.remapped_rows_failure is False
    assert g.pcie_width_current == 8 and g.pcie_width_max == 16
    assert g.throttle_reasons == ["gpu_idle"]
    assert [(p.pid, p.type, p.name, p.used_memory_bytes) for p in g.processes] == [(725, "G", "/usr/lib/xorg/Xorg", 22 * MIB)]


def test_xml_t4_retired_pages():
    (g,) = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/tesla-t4_515.105.01.xml")).gpus
    assert (g.retired_pages_single_bit, g.retired_pages_double_bit, g.retired_pages_pending) == (0, 0, False)


def test_xml_new_event_reason_sw_power_cap():
    (g,) = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/rtx-3090_590.44.01_sw-power-cap.xml")).gpus
    assert g.throttle_reasons == ["sw_power_cap"]
    assert g.power_draw_w == 35.15 and g.power_max_limit_w == 480.0
    assert g.ecc_volatile_corrected is None  # every counter N/A on a GeForce part


def test_xml_blackwell_device_max_gen_above_slot():
    (g,) = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/rtx-pro-6000-blackwell-maxq_590.44.01.xml")).gpus
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_gen_device_max) == (1, 4, 5)
    assert g.temperature_slowdown_c is None  # only T.Limit offsets in this DTD: not guessed


def test_xml_windows_vgpu_guest():
    d = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/grid-p4-1q-vgpu_windows_513.46.xml"))
    (g,) = d.gpus
    assert d.version == "513.46" and g.name == "GRID P4-1Q"
    assert g.throttle_reasons is None  # <clocks_throttle_reasons>N/A</clocks_throttle_reasons>
    assert g.power_draw_w is None and g.fan_speed_pct is None
    assert len(g.processes) == 13 and g.processes[0].pid == 1188 and g.processes[0].type == "C+G"
    assert g.processes[0].used_memory_bytes is None


def test_xml_two_gpus_indexed_in_order():
    d = parse_nvidia_smi_xml(fixture("nvidia-smi-xml/dual-rtx-a5000_590.44.01.xml"))
    assert [g.index for g in d.gpus] == [0, 1]
    assert all(g.name == "NVIDIA RTX A5000" for g in d.gpus)


def test_xml_garbage_is_failed_not_raised():
    d = parse_nvidia_smi_xml("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    assert d.status == ProbeStatus.FAILED and "does not parse" in d.reason


# --------------------------------------------------------------------------- -q text


def test_q_a10_row_remap_pending():
    d = parse_nvidia_smi_q(fixture("other/a10_535.129.03_row-remap-pending_nvidia-smi-q.txt"))
    assert (d.status, d.version, d.cuda_driver_version) == ("ok", "535.129.03", "12.2")
    (g,) = d.gpus
    assert g.name == "NVIDIA A10" and g.pci_bus_id == "00000000:07:00.0" and g.pci_device_id == "0x223610DE"
    assert g.remapped_rows_uncorrectable == 4 and g.remapped_rows_pending is True and g.remapped_rows_failure is False
    assert g.memory_total_bytes == 23028 * MIB
    assert (g.power_draw_w, g.power_limit_w) == (43.89, 150.0)
    assert (g.temperature_slowdown_c, g.temperature_shutdown_c) == (98.0, 101.0)
    assert g.throttle_reasons == ["gpu_idle"]
    assert g.processes == []  # "Processes : None"


def test_q_hw_slowdown_nested_reasons_8_gpus():
    d = parse_nvidia_smi_q(fixture("perf-throttle/h100-sxm-80gb-x8_535.161.08_hw-slowdown-active.txt"))
    assert len(d.gpus) == 8
    assert all(g.throttle_reasons == ["hw_slowdown", "hw_power_brake_slowdown"] for g in d.gpus)
    assert d.gpus[0].pcie_replay_counter == 67


def test_q_sw_thermal_power_cap_one_gpu():
    d = parse_nvidia_smi_q(fixture("perf-throttle/h100-sxm-80gb-x8_535.183.01_sw-thermal-power-cap.txt"))
    assert d.gpus[2].throttle_reasons == ["sw_power_cap", "hw_power_brake_slowdown", "sw_thermal_slowdown"]
    assert d.gpus[0].throttle_reasons == ["gpu_idle"]


def test_q_processes_under_load():
    (g,) = parse_nvidia_smi_q(fixture("other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt")).gpus
    assert [(p.pid, p.name, p.used_memory_bytes) for p in g.processes] == [
        (11327, "/root/tools/memhog", 2566 * MIB),
        (11328, "/root/tools/memhog", 1542 * MIB),
        (11345, "./gpu_burn", 15690 * MIB),
    ]
    assert g.power_draw_w == 588.39  # "Instantaneous Power Draw" (no plain "Power Draw" line in 590)
    assert g.utilization_gpu_pct == 100.0


def test_q_v100_unknown_error_note_and_retired_pages():
    d = parse_nvidia_smi_q(fixture("other/v100-x8_550.127.05_nvidia-smi-q.txt"))
    assert len(d.gpus) == 8
    g = d.gpus[0]
    assert (g.retired_pages_single_bit, g.retired_pages_double_bit, g.retired_pages_pending) == (0, 0, False)
    assert g.notes == ["Host Max: Unknown Error"]


def test_q_old_460_ecc_and_power_readings():
    d = parse_nvidia_smi_q(fixture("other/a100-sxm4-40gb-x8_460.32.03_nvidia-smi-q.txt"))
    assert d.version == "460.32.03" and len(d.gpus) == 8
    g = d.gpus[0]
    assert g.pci_bus_id == "00000001:00:00.0" and g.ecc_mode_current is True  # "Ecc Mode" spelling
    assert g.power_limit_w == 400.0 and g.throttle_reasons == ["gpu_idle"]  # "Clocks Throttle Reasons"
    assert all(g.inforom_valid is None for g in d.gpus)


def test_q_inforom_warning_marks_only_that_gpu():
    # The warning line is the real one from an 8x V100 table capture (Azure/azhpc-diagnostics); its bus id
    # (0008:00:00.0) is no GPU of this A100 report, so nothing is flagged ...
    warning = fixture("nvidia-smi-table/v100-sxm2-x8_460.32.03_inforom-corrupted.txt").splitlines()[-1]
    assert warning.startswith("WARNING: infoROM is corrupted")
    report = fixture("other/a100-sxm4-40gb-x8_460.32.03_nvidia-smi-q.txt")
    assert [g.inforom_valid for g in parse_nvidia_smi_q(report + warning + "\n").gpus] == [None] * 8
    # ... and with the bus id of GPU 3 (edited here) only that GPU is.
    edited = warning.replace("0008:00:00.0", "0004:00:00.0")
    flags = [g.inforom_valid for g in parse_nvidia_smi_q(report + edited + "\n").gpus]
    assert flags == [None, None, None, False, None, None, None, None]


def test_q_not_a_report():
    assert parse_nvidia_smi_q("hello\n").status == ProbeStatus.FAILED


# --------------------------------------------------------------------------- query CSV


def test_query_csv_h200_wide():
    text = fixture("nvidia-smi-query/h200_590.48.01_idle_query-gpu.csv")
    (row,) = parse_query_csv(text)
    assert row["memory.total"] == "143771 MiB" and row["pcie.link.gen.hostmax"] is None
    (g,) = gpus_from_query_csv(text)
    assert g.name == "NVIDIA H200" and g.compute_capability == "9.0" and g.pci_bus_id == "00000000:83:00.0"
    assert g.memory_total_bytes == 143771 * MIB
    assert g.throttle_reasons == ["gpu_idle"]
    assert (g.power_draw_w, g.power_limit_w, g.power_min_limit_w) == (77.71, 700.0, 200.0)
    assert g.remapped_rows_pending is False and g.retired_pages_single_bit is None
    assert g.inforom_valid is True
    assert g.clocks_sm_app_mhz is None  # "[Requested functionality has been deprecated]"


def test_query_csv_consumer_na_ecc():
    (g,) = gpus_from_query_csv(fixture("nvidia-smi-query/rtx-4080-super_595.71.05_load_query-gpu.csv"))
    assert g.name == "NVIDIA GeForce RTX 4080 SUPER" and g.ecc_mode_current is None
    assert g.remapped_rows_correctable is None and g.performance_state == "P2"


def test_query_csv_noheader_with_fields():
    rows = parse_query_csv("0, NVIDIA H200, [N/A]\n", ["index", "name", "fan.speed"])
    assert rows == [{"index": "0", "name": "NVIDIA H200", "fan.speed": None}]


# --------------------------------------------------------------------------- nvlink


def test_nvlink_inactive_links():
    links = parse_nvlink_status(fixture("nvlink/v100-sxm2-x8_nvlink-inactive.txt"))
    assert [ln.link for ln in links[3] if not ln.active] == [3, 5]
    assert [ln.link for ln in links[5] if not ln.active] == [0, 4]
    assert links[0][0].speed_gbps == 25.781 and all(ln.active for ln in links[0])


def test_nvlink_all_inactive_vs_no_nvlink():
    assert parse_nvlink_status(fixture("nvlink/a100-sxm4-80gb_gpu6_all-links-inactive.txt")) == {
        6: [NvlinkLink(link=-1, active=False)]
    }
    assert parse_nvlink_status(fixture("nvlink/l40s_595.80_no-nvlink.txt")) == {0: []}


def test_nvlink_h100_18_links():
    links = parse_nvlink_status(fixture("nvlink/h100-sxm-80gb_590.48.01_18-links.txt"))[0]
    assert len(links) == 18 and links[17].speed_gbps == 26.562


# --------------------------------------------------------------------------- topo


def test_topo_ansi_single_gpu():
    t = parse_topo(fixture("topo/h100-sxm-80gb_590.48.01_single-gpu_ansi.txt"))
    assert t.gpus == ["GPU0"] and t.matrix == [["X"]]
    assert t.legend["NV#"] == "Connection traversing a bonded set of # NVLinks"


def test_topo_four_gpus_with_nics():
    gpus, matrix, legend = parse_topo(fixture("topo/rtx-6000-ada-x4_pcie-sys-node-pix_nics.txt"))
    assert gpus == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert matrix[0] == ["X", "NODE", "SYS", "SYS"] and matrix[3] == ["SYS", "SYS", "NODE", "X"]
    assert "PIX" in legend


# --------------------------------------------------------------------------- /proc/driver/nvidia/version


def test_proc_driver_version():
    # No citable capture exists (shared SOURCES.md "Gaps"); these lines follow the format the
    # kernel module prints (proprietary and open modules).
    assert parse_proc_driver_version(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"
        "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
    ) == "550.54.14"
    assert parse_proc_driver_version(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Wed Feb 26 01:53:46 UTC 2025\n"
    ) == "570.124.06"
    assert parse_proc_driver_version("") is None


def test_fabric_health_and_virtualization_from_the_xml():
    # the real v13 capture (fabric health all N/A there) and the same capture with the health fields as nvidia-smi
    # prints them on a registered GPU whose fabric lost a route
    text = fixture("nvidia-smi-xml/rtx-pro-6000-blackwell-maxq_590.44.01.xml")
    (g,) = parse_nvidia_smi_xml(text).gpus
    assert g.fabric_health is None and g.fabric_health_summary is None and g.virtualization_mode == "none"
    health = ("<health>\n\t\t\t\t<summary>N/A</summary>\n\t\t\t\t<bandwidth>N/A</bandwidth>\n"
              "\t\t\t\t<route_recovery_in_progress>N/A</route_recovery_in_progress>\n"
              "\t\t\t\t<route_unhealthy>N/A</route_unhealthy>\n")
    assert health in text
    sick = text.replace(health, health.replace("<summary>N/A", "<summary>Unhealthy")
                        .replace("<bandwidth>N/A", "<bandwidth>Degraded")
                        .replace("<route_unhealthy>N/A", "<route_unhealthy>True")
                        .replace("<route_recovery_in_progress>N/A", "<route_recovery_in_progress>False"))
    (g,) = parse_nvidia_smi_xml(sick).gpus
    assert g.fabric_health == ["degraded_bandwidth", "route_unhealthy"] and g.fabric_health_summary == "unhealthy"


def test_fabric_health_from_nvidia_smi_q_is_unknown_when_na():
    text = fixture("other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt")
    d = parse_nvidia_smi_q(text)
    assert {(g.fabric_state, g.fabric_health_summary) for g in d.gpus} == {("completed", None)}
    assert all(g.fabric_health is None for g in d.gpus)
    line = "            Route Unhealthy                            : N/A"
    summary = "            Summary                                    : N/A"
    assert line in text and summary in text
    (g,) = parse_nvidia_smi_q(text.replace(line, line.replace("N/A", "True"))
                              .replace(summary, summary.replace("N/A", "Limited Capacity"))).gpus
    assert g.fabric_health == ["route_unhealthy"] and g.fabric_health_summary == "limited_capacity"


def test_the_gpu_recovery_action_is_read_from_every_nvidia_smi_form():
    # real captures: -q (R590 H100) and -x (R590 RTX 3090) say "None"
    (g,) = parse_nvidia_smi_q(fixture("other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt")).gpus
    assert g.recovery_action == "none"
    assert {g.recovery_action for g in parse_nvidia_smi_xml(
        fixture("nvidia-smi-xml/rtx-3090_590.44.01_sw-power-cap.xml")).gpus} == {"none"}
    # the --query-gpu reader drops every "no value" spelling, "None" included, before a field sees it: unknown
    # there (never a false finding), as before
    (g,) = gpus_from_query_csv(fixture("nvidia-smi-query/h200_590.48.01_idle_query-gpu.csv"))
    assert g.recovery_action is None
    # the words Xid 154 uses for the other states (NVIDIA's Xid catalog); words not known here are kept
    from envdoctor.parsers.nvidia_smi_fields import to_recovery_action

    assert [to_recovery_action(v) for v in ("GPU Reset Required", "Node Reboot Required", "Drain P2P", "N/A",
                                            "Drain and Reset", "Something New")] == [
        "gpu_reset", "node_reboot", "drain_p2p", None, "drain_and_reset", "unknown: Something New"]
