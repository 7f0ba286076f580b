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
    """Raise torch.OutOfMemoryError naming ``who`` when ``nbytes`` is beyond what ``device`` can give.

    Returns when it fits (sizes up to 256 MiB always do unless a CPU limit is set, with no system
    call). The message says ``what`` needs the memory and the ``remedies``.

    Parameters
    ----------
    who : str
        The public function or estimator the error names.
    what : str
        What the memory is for (e.g. ``"the 40 x 40 matrix"``).
    nbytes : float
        The bytes needed.
    device : torch.device
        Where they would be allocated.
    remedies : str
        What the caller can do instead, said at the end of the message.

    Raises
    ------
    torch.OutOfMemoryError
        ``nbytes`` beyond what ``device`` can give (on the CPU, the limit of
        :func:`set_memory_limit`).

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch._memory import check, memory_limit, set_memory_limit
    >>> check("f", "a table", 1024, torch.device("cpu"), "use less")  # fits: returns None
    >>> before = memory_limit()
    >>> set_memory_limit(1000)
    >>> try:
    ...     check("f", "a table", 4096, torch.device("cpu"), "use less")
    ... except torch.OutOfMemoryError as error:
    ...     print(str(error).startswith("f: needs 4.0 KiB for a table"))
    True
    >>> set_memory_limit(before)
    """
    index = -1 if device.index is None else device.index
    message = _C.memory_refusal(who, what, float(nbytes), device.type, index, remedies)
    if message:
        raise torch.OutOfMemoryError(message)


def set_memory_limit(nbytes: Optional[int]) -> None:
    """Set the CPU memory the preflight lets one allocation of the library take, in bytes.

    A call that would need more is refused with torch.OutOfMemoryError before it allocates
    anything. The environment variable ``SOFTDTW_TORCH_CPU_MEMORY_LIMIT`` (bytes) sets it at
    import. CUDA needs no limit: its free memory is asked each time.

    Parameters
    ----------
    nbytes : int or None
        The limit, >= 1; None restores the default, the machine's available memory (Linux:
        ``MemAvailable``, capped by the cgroup's ``memory.max``).

    Raises
    ------
    TypeError
        ``nbytes`` neither an int nor None (a bool included).
    ValueError
        ``nbytes`` < 1.

    See Also
    --------
    memory_limit : the limit set.

    Examples
    --------
    >>> import torch
    >>> import softdtw_torch as st
    >>> before = st.memory_limit()
    >>> st.set_memory_limit(2**30)
    >>> st.memory_limit()
    1073741824
    >>> st.set_memory_limit(10_000)
    >>> try:
    ...     st.cdist_soft_dtw(torch.randn(40, 30, 2))
    ... except torch.OutOfMemoryError as error:
    ...     print(str(error).startswith("cdist_soft_dtw: needs"))
    True
    >>> st.set_memory_limit(before)
    """
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, int)):
        raise TypeError(f"set_memory_limit: expected nbytes to be an int or None, got {type(nbytes).__name__}")
    if nbytes is not None and nbytes < 1:
        raise ValueError(f"set_memory_limit: expected nbytes >= 1 or None, got {nbytes}")
    _C.set_memory_limit(nbytes)


def memory_limit() -> Optional[int]:
    """The CPU limit of :func:`set_memory_limit`, in bytes; None when unset (the default).

    Returns
    -------
    int or None
        The limit, or None.

    Examples
    --------
    >>> import softdtw_torch as st
    >>> before = st.memory_limit()
    >>> st.set_memory_limit(123_456)
    >>> st.memory_limit()
    123456
    >>> st.set_memory_limit(before)
    >>> st.memory_limit() == before
    True
    """
    return _C.memory_limit()
