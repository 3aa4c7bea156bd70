"""Reader for the reporter's words about traffic between GPUs going wrong (issue 42, round 12): the symptoms of
PCIe peer-to-peer broken by the IOMMU or PCIe ACS, told without a topology matrix or a hang.

With the IOMMU translating (AMD-Vi, VT-d) or ACS on the bridges above the GPUs, peer-to-peer writes between GPUs
are redirected to the root complex: they never complete (a collective hangs: readers/prose.py, nccl_log.py and
diagnose.p2p-hang), are dropped (a tensor copied from one GPU to another arrives as zeros, while a copy through
the CPU is right: pytorch/pytorch#84803), or crawl (four GPUs slower per batch than one: soumith/imagenet-multiGPU
.torch#19), and multi-GPU training fails while one GPU works (huggingface/transformers#8628). NCCL's
troubleshooting guide (PCI Access Control Services) names the cause and the test: NCCL_P2P_DISABLE=1.

The first such sentence goes into ``paste.p2p_said`` and its kind into ``paste.p2p_said.kind``:
- ``peer-copy-wrong``: a copy between GPUs said to corrupt the data (zeros, garbage, wrong values);
- ``multi-gpu-slower``: several GPUs said to be slower than one;
- ``multi-gpu-fails``: an error said to come with data parallel / several GPUs, in a paste that names them;
- ``p2p-named``: the reporter naming the IOMMU, ACS or P2P beside a multi-GPU failure, or saying that
  NCCL_P2P_DISABLE=1 makes it work.
checks/diagnose_p2p.py judges it.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from .base import LOOSE, Acc, Paste

_SENT = re.compile(r"(?<=[.!?])\s+|\n")
_GPUS = r"(?:\d+|two|three|four|eight|several|multiple|many|more|all(?: the)?|both)\s?(?:x\s?)?(?:\w+ ){0,2}?GPUs\b"
# a copy between GPUs ...
_PEER_MOVE = re.compile(
    r"\b(?:from (?:one|a) GPU to (?:another|the other|a second)|between (?:the |two |different |multiple )?GPUs|"
    r"(?:cuda:?|GPU ?)\d+ (?:to|->) (?:cuda:?|GPU ?)\d+|GPU-to-GPU|peer[- ]to[- ]peer|P2P|cudaMemcpyPeer)", re.I)
# ... that corrupts what it copies
_CORRUPT = re.compile(r"\b(?:corrupt\w*|garbage|all zeros?|(?:wrong|incorrect|invalid) (?:values?|results?|data|outputs?)|"
                      r"zeros? instead|returns? zeros?|becomes? zeros?|(?:are|is) (?:all )?zeros?)\b", re.I)
_SLOWER = re.compile(
    _GPUS + r"[^.!?\n]{0,40}?\bslower than (?:with |on |using )?(?:one|1|a single|single)\b|"
    r"\bslower (?:with|on|using) " + _GPUS + r"[^.!?\n]{0,20}?\bthan (?:with |on |using )?(?:one|1|a single|single)\b",
    re.I)
_FAILS_PARALLEL = re.compile(
    r"\b(?:CUDA error|error|fails?|failed|crash\w*)\b[^.!?\n]{0,60}?\b(?:with|using|in) (?:data[ -]?parallel|DataParallel|"
    r"multi-?gpus?|multiple GPUs|several GPUs)\b", re.I)
# the paste names several GPUs in use: CUDA_VISIBLE_DEVICES with two or more, "all four GPUs", "4 GPUs"
_SEVERAL = re.compile(r"CUDA_VISIBLE_DEVICES=\"?\d+(?:,\d+)+|\b(?:all )?(?:[2-9]|1[0-6]|two|three|four|eight) "
                      r"(?:\w+ )?GPUs\b", re.I)
# the mechanism named by the reporter beside a multi-GPU failure, or the test that settles it said to work
_NAMED = re.compile(r"\b(?:IOMMU|AMD-Vi|VT-d|ACS)\b", re.I)
_MULTI_FAIL = re.compile(r"\b(?:hangs?|hung|stuck|freez\w*|deadlock\w*|slow\w*|corrupt\w*|zeros?|wrong|fails?|"
                         r"failed|error)\b", re.I)
_P2P_OFF_WORKS = re.compile(
    r"NCCL_P2P_DISABLE ?= ?1\b[^.!?\n]{0,40}?\b(?:works?|worked|fix\w*|solv\w*|resolv\w*|helps?|helped|runs? fine|"
    r"finish\w*)\b|\b(?:works?|worked|runs? fine|fixed|solved|resolved)\b[^.!?\n]{0,40}?NCCL_P2P_DISABLE ?= ?1\b", re.I)
# ... but not said to fail too ("NCCL_P2P_DISABLE=1 doesn't help", "still hangs with NCCL_P2P_DISABLE=1")
_NEGATED = re.compile(r"\b(?:doesn't|does not|didn't|did not|don't|do not|not|never|no longer|nor)\b\s*(?:\w+\s+)?"
                      r"(?:work|help|fix|solve|resolve|change)|\bstill\b|\bneither\b|\bno (?:luck|effect|change|difference)",
                      re.I)
_WORDS = ["gpu", "p2p", "peer", "parallel", "iommu", "acs", "amd-vi", "vt-d", "nccl_p2p_disable", "cudamemcpypeer",
          "cuda:"]


def p2p_said(paste: Paste) -> Optional[Tuple[str, str]]:
    """(kind, sentence) of the first sentence that tells a symptom of broken GPU peer-to-peer (see the module)."""
    several = None
    for i in paste.distinct(paste.with_any(_WORDS), head=400, tail=100):
        line = paste.lines[i]
        if line.lstrip().startswith(("|", "+")) or len(line) > 2000:
            continue
        for sent in _SENT.split(line):
            if _P2P_OFF_WORKS.search(sent) and not _NEGATED.search(sent):
                return "p2p-named", sent.strip()[:200]
            if _NAMED.search(sent) and _MULTI_FAIL.search(sent) and re.search(r"\bGPUs\b|multi-?gpu|P2P", sent, re.I):
                return "p2p-named", sent.strip()[:200]
            if _PEER_MOVE.search(sent) and _CORRUPT.search(sent):
                return "peer-copy-wrong", sent.strip()[:200]
            if _SLOWER.search(sent):
                return "multi-gpu-slower", sent.strip()[:200]
            if _FAILS_PARALLEL.search(sent):
                if several is None:
                    several = bool(_SEVERAL.search(paste.text))
                if several:
                    return "multi-gpu-fails", sent.strip()[:200]
    return None


def read_p2p_said(paste: Paste, acc: Acc) -> None:
    """``paste.p2p_said`` (the sentence) and ``paste.p2p_said.kind``."""
    found = p2p_said(paste)
    if found:
        kind, said = found
        acc.put("paste.p2p_said", said, LOOSE, "the reporter's words")
        acc.put("paste.p2p_said.kind", kind, LOOSE, said)
