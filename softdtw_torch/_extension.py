"""The compiled extension, ``softdtw_torch._C``, loaded once (its import registers the operators
with the dispatcher; ``_info.load_extension`` explains a failure). Read by ``_ops``, which adds the
fake kernels and batching rules, and by the fake kernels themselves (the C++ constants they
repeat), which therefore do not import ``_ops``.
"""
from ._info import load_extension

_C = load_extension()
