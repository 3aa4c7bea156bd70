"""The one fix for torch and its companions (torchvision, torchaudio) built for different variants: the set
reinstalled together from one index. packages.cuda-variant offers it for the variant its metadata and files show,
and packages.extension-build for a companion whose binary does not load next to torch for the same reason, so
that the two findings carry the same command and the judge shows them as one cause (judging/settle.py: a
finding whose fix another's fix runs follows from it)."""

from __future__ import annotations

from ..domain.versions import base_version
from ..model.facts import PythonEnv
from ..model.findings import Fix
from ..remedies import pip_install
from ..remedies.torch_plan import pair_pins, target_variant
from ._shadowing import or_origin_fix
from .base import CheckContext

VISION_README = "https://github.com/pytorch/vision#installation"


def companion_set_fix(ctx: CheckContext, py: PythonEnv) -> Fix:
    version = base_version(py.torch.version) or ""
    target = target_variant(ctx.facts, ctx.compat, py, version)
    return or_origin_fix(py, Fix(f"Reinstall the set together from the {target} index" if target else
                                 "Reinstall torch and its companions together from one index",
                                 [pip_install(ctx.facts, py, pair_pins(ctx.facts, ctx.compat, py, version), target,
                                              force=True)],
                                 VISION_README))
