"""The action a scheduler can take on a finding: a small vocabulary, and how NVIDIA's own action names map to it.

Every finding carries one action (``Finding.action``; the defaults per category and the per-code overrides are
in model/catalogue.py, ``action_for``), so that a scheduler or a node-health hook can act on a finding without
reading its prose: the JSON (``findings[].action``), node-health's line and JSON, and the OpenMetrics labels
carry it. The fix (``Finding.fix``) stays what a person does; the action is what an automaton does first.

The vocabulary, weakest first (``strongest`` picks the node's action among several findings):

- ``none``: no action for a scheduler: nothing is wrong, or nothing envdoctor can name (a person reads the fix).
- ``reconfigure``: change the software or its configuration (install or reinstall packages or the driver, set a
  variable or a setting, point a job at other storage); the node itself is sound. NVIDIA's Xid bucket UPDATE_SWFW.
- ``restart-process``: end the processes on the GPU and start the job again; the GPU is usable by a new process.
  NVIDIA's Xid bucket RESTART_APP; NVML's DRAIN_P2P asks first to end the processes doing peer-to-peer traffic.
- ``reset-gpu``: end every process on the GPU and reset it (``nvidia-smi -r``); the node stays up. Xid bucket
  RESET_GPU; NVML's GPU_RESET, BUS_RESET and DRAIN_AND_RESET (let running work finish, then reset).
- ``reboot-node``: reboot the node (or the VM). Xid buckets RESTART_BM and RESTART_VM; NVML's NODE_REBOOT and
  SYSTEM_REBOOT.
- ``drain-node``: take the node out of service and call the provider: the hardware needs a person (a degraded
  link, a GPU whose memory is failing, a missing GPU). Xid buckets CONTACT_SUPPORT and CHECK_MECHANICALS; NVML's
  RECOVER_IMEX_DOMAIN (the NVLink domain spans nodes: not this node's to fix alone).

Sources for NVIDIA's names:
- the Xid catalog's "Resolution Bucket (Immediate Action)" column (https://docs.nvidia.com/deploy/xid-errors/
  analyzing-xid-catalog.html: RESTART_APP, CONTACT_SUPPORT, WORKFLOW_XID_13 read there; RESET_GPU, RESTART_VM,
  RESTART_BM, CHECK_MECHANICALS, UPDATE_SWFW, CHECK_UVM, XID_154 and IGNORE as a public summary of that column
  lists them);
- NVML's nvmlDeviceGpuRecoveryAction_t (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), values as NVIDIA's own binding
  nvidia-ml-py 13.615.71 defines them (pynvml.py: NONE 0, GPU_RESET 1, NODE_REBOOT 2, DRAIN_P2P 3,
  DRAIN_AND_RESET 4, RECOVER_IMEX_DOMAIN 5, BUS_RESET 6, SYSTEM_REBOOT 7), meanings from NVIDIA's "Error Recovery
  and Response Flags" (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html).
"""

from __future__ import annotations

from typing import Dict, Iterable, Optional, Union

NONE = "none"
RECONFIGURE = "reconfigure"
RESTART_PROCESS = "restart-process"
RESET_GPU = "reset-gpu"
REBOOT_NODE = "reboot-node"
DRAIN_NODE = "drain-node"

# the vocabulary, weakest first: name -> what it asks of a scheduler
ACTIONS: Dict[str, str] = {
    NONE: "nothing for a scheduler to do (nothing wrong, or nothing envdoctor can name: a person reads the fix)",
    RECONFIGURE: "change the software or its configuration (packages, the driver, a setting); the node is sound",
    RESTART_PROCESS: "end the GPU's processes and start the job again; the GPU is usable by a new process",
    RESET_GPU: "end every process on the GPU and reset it (nvidia-smi -r); the node stays up",
    REBOOT_NODE: "reboot the node (or the VM)",
    DRAIN_NODE: "take the node out of service and call the provider: the hardware needs a person",
}
_ORDER = {name: i for i, name in enumerate(ACTIONS)}

# NVIDIA's Xid catalog, "Resolution Bucket (Immediate Action)": bucket -> action. WORKFLOW_* (a multi-step
# procedure in NVIDIA's guide), XID_154 (read NVML's recovery action instead) and CHECK_UVM name no one action:
# they are left out, so nvidia_action answers None for them and the finding keeps its catalogue action.
XID_BUCKETS: Dict[str, str] = {
    "IGNORE": NONE,
    "UPDATE_SWFW": RECONFIGURE,
    "UPDATE_SW": RECONFIGURE,
    "RESTART_APP": RESTART_PROCESS,
    "RESET_GPU": RESET_GPU,
    "RESTART_VM": REBOOT_NODE,
    "RESTART_BM": REBOOT_NODE,
    "CONTACT_SUPPORT": DRAIN_NODE,
    "CHECK_MECHANICALS": DRAIN_NODE,
}

# NVML's nvmlDeviceGpuRecoveryAction_t: value -> (NVML's name, action)
NVML_RECOVERY: Dict[int, tuple] = {
    0: ("NVML_GPU_RECOVERY_ACTION_NONE", NONE),
    1: ("NVML_GPU_RECOVERY_ACTION_GPU_RESET", RESET_GPU),
    2: ("NVML_GPU_RECOVERY_ACTION_NODE_REBOOT", REBOOT_NODE),
    3: ("NVML_GPU_RECOVERY_ACTION_DRAIN_P2P", RESTART_PROCESS),  # then query again: another value follows
    4: ("NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET", RESET_GPU),  # reduced capacity: finish work, then reset
    5: ("NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN", DRAIN_NODE),  # the multi-node NVLink domain's operator
    6: ("NVML_GPU_RECOVERY_ACTION_BUS_RESET", RESET_GPU),
    7: ("NVML_GPU_RECOVERY_ACTION_SYSTEM_REBOOT", REBOOT_NODE),
}


def nvidia_action(bucket: Optional[str] = None, nvml_recovery: Union[int, str, None] = None) -> Optional[str]:
    """The action for NVIDIA's own answer: an Xid catalog resolution bucket (``"RESET_GPU"``; case and spaces do
    not matter) and/or an NVML recovery action (its value ``1``, its name ``"NVML_GPU_RECOVERY_ACTION_GPU_RESET"``
    or ``"gpu_reset"``, nvidia-smi's ``"GPU Reset Required"``, or ``"unknown_6"``). When both are given, the stronger action wins
    (NVML's is read from the GPU now, the bucket is the catalog's advice for the Xid). None when neither names
    an action in the vocabulary (an unknown name, a WORKFLOW_* or XID_154 bucket): the caller keeps the
    catalogue's action then; an unknown name never becomes a guess."""
    found = []
    if bucket is not None:
        key = str(bucket).strip().upper().replace(" ", "_").replace("-", "_")
        if key in XID_BUCKETS:
            found.append(XID_BUCKETS[key])
    if nvml_recovery is not None:
        value: Optional[int] = None
        if isinstance(nvml_recovery, bool):
            value = None
        elif isinstance(nvml_recovery, int):
            value = nvml_recovery
        else:
            # NVML's name, the name without its prefix in any case ("gpu_reset", as the Gpu.recovery_action fact
            # spells it), nvidia-smi's words ("GPU Reset Required"), or "unknown_<value>" for a value the
            # reader did not name
            key = str(nvml_recovery).strip().upper().replace(" ", "_").replace("-", "_")
            key = key[:-len("_REQUIRED")] if key.endswith("_REQUIRED") else key
            if key.startswith("UNKNOWN_") and key[len("UNKNOWN_"):].isdigit():
                value = int(key[len("UNKNOWN_"):])
            else:
                key = key if key.startswith("NVML_") else f"NVML_GPU_RECOVERY_ACTION_{key}"
                value = next((v for v, (name, _a) in NVML_RECOVERY.items() if name == key), None)
        if value in NVML_RECOVERY:
            found.append(NVML_RECOVERY[value][1])
    return strongest(found) if found else None


def strongest(actions: Iterable[str]) -> str:
    """The strongest of ``actions`` (drain-node over reboot-node over ... over none); none for no action."""
    return max(actions, key=lambda a: _ORDER[a], default=NONE)


def check_action(action: str) -> str:
    """``action`` itself when it is in the vocabulary; ValueError naming the vocabulary otherwise."""
    if action not in ACTIONS:
        raise ValueError(f"action {action!r} is not one of {', '.join(ACTIONS)}")
    return action
