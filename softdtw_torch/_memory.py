"""The memory preflight of the Python entry points, :func:`check`: the one in the operators
(``csrc/common/memory.h``) for what Python allocates itself (the all-pairs matrices of
``cdist_soft_dtw`` and ``cdist_dtw``). Same rule, same message, same error: torch.OutOfMemoryError,
what torch raises when CUDA memory runs out, so that one ``except torch.OutOfMemoryError`` catches
both. What a device can give: CUDA's free memory plus what torch's caching allocator holds unused;
on the CPU the limit set by :func:`set_memory_limit` (or ``SOFTDTW_TORCH_CPU_MEMORY_LIMIT``,
bytes), by default the machine's available memory."""
from typing import Optional

import torch

from ._ops import _C

__all__ = ["check", "memory_limit", "set_memory_limit"]


def check(who: str, what: str, nbytes: float, device: torch.device, remedies: str) -> None:
    """Raises torch.OutOfMemoryError naming ``who`` when ``nbytes`` (for ``what``) is beyond what
    ``device`` can give, saying the ``remedies``; returns when it fits (sizes up to 256 MiB always
    do unless a CPU limit is set, with no system call)."""
    index = -1 if device.index is None else device.index
    message = _C.memory_refusal(who, what, float(nbytes), device.type, index, remedies)
    if message:
        raise torch.OutOfMemoryError(message)


def set_memory_limit(nbytes: Optional[int]) -> None:
    """Sets the CPU memory the preflight lets one allocation of the library take, in bytes; None
    restores the default, the machine's available memory (Linux: ``MemAvailable``, capped by the
    cgroup's ``memory.max``). A call that would need more is refused with torch.OutOfMemoryError
    before it allocates anything. The environment variable ``SOFTDTW_TORCH_CPU_MEMORY_LIMIT``
    (bytes) sets it at import. CUDA needs no limit: its free memory is asked each time."""
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, int)):
        raise TypeError(f"set_memory_limit: expected nbytes to be an int or None, got {type(nbytes).__name__}")
    if nbytes is not None and nbytes < 1:
        raise ValueError(f"set_memory_limit: expected nbytes >= 1 or None, got {nbytes}")
    _C.set_memory_limit(nbytes)


def memory_limit() -> Optional[int]:
    """The CPU limit of :func:`set_memory_limit`, in bytes; None when unset (the default)."""
    return _C.memory_limit()
