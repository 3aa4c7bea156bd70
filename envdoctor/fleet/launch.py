"""The launcher's environment: what torchrun (or srun, or a PyTorchJob) tells each process about its place."""

from __future__ import annotations

import os
import socket
from typing import Mapping, Optional

from envdoctor.domain.fastclass import dataclass


class NotLaunched(ValueError):
    """No RANK/WORLD_SIZE: `envdoctor fleet` was run by hand, not by a launcher (exit 2)."""


@dataclass(frozen=True)
class Place:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: Optional[int]
    node_rank: Optional[int]  # torchrun's GROUP_RANK (else SLURM_NODEID); None: nodes are told apart by host
    hostname: str
    master: Optional[str]  # MASTER_ADDR:MASTER_PORT, as the launcher set them


def _int(env: Mapping[str, str], *names: str) -> Optional[int]:
    for name in names:
        value = env.get(name)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    return None


def place_from_env(env: Optional[Mapping[str, str]] = None) -> Place:
    """This process's place in the job, from the variables torchrun sets for every worker (RANK, WORLD_SIZE,
    LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK: torch.distributed.run's documentation, "Environment Variables")."""
    env = os.environ if env is None else env
    rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
    if rank is None or world is None:
        raise NotLaunched(
            "`envdoctor fleet` runs under a launcher that sets RANK and WORLD_SIZE: "
            "torchrun --nnodes N --nproc-per-node G -m envdoctor fleet (README, \"Fleets\")")
    if world < 1 or not 0 <= rank < world:
        raise NotLaunched(f"RANK={rank} and WORLD_SIZE={world} do not describe a job (0 <= RANK < WORLD_SIZE)")
    if "MASTER_ADDR" not in env or "MASTER_PORT" not in env:
        raise NotLaunched("MASTER_ADDR and MASTER_PORT are unset: torch.distributed cannot rendezvous "
                          "(torchrun sets them; under srun without torchrun, export them)")
    local = _int(env, "LOCAL_RANK", "SLURM_LOCALID")
    return Place(rank=rank, world_size=world, local_rank=local if local is not None else 0,
                 local_world_size=_int(env, "LOCAL_WORLD_SIZE"), node_rank=_int(env, "GROUP_RANK", "SLURM_NODEID"),
                 hostname=socket.gethostname(), master=f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}")
