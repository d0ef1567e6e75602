"""train.precision as the C++ daemon reads it (common/learn/precision.h):
fp32; bf16 autocast where the hardware has bf16 units (CUDA, or a CPU with
AVX512_BF16 or AMX); auto picks bf16 where it has them, fp32 elsewhere."""
from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=None)
def cpu_has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and
                       bool({"avx512_bf16", "amx_bf16"} & set(line.split()))
                       for line in f)
    except OSError:
        return False


def resolve(precision: str, device: torch.device) -> str:
    """auto -> bf16 on CUDA or a bf16 CPU, else fp32; others unchanged."""
    if precision != "auto":
        return precision
    kind = torch.device(device).type
    return "bf16" if kind == "cuda" or (kind == "cpu" and cpu_has_bf16()) else "fp32"
