"""Loads the compiled operators and registers a fake (meta) kernel for each one, and the SoftDTW
ops' batching rules.

The fake kernels (``softdtw_torch._fake``, one module per op family) give output shapes and dtypes
without computing, so ``torch.compile`` and ``torch.library.opcheck`` can trace the ops. The
batching rules (``softdtw_torch._vmap``) let ``torch.vmap`` run a SoftDTW op once on the whole
vmapped batch. Both are registered here, once, right after the extension: nothing else registers
them.
"""
from ._extension import _C  # noqa: F401  (first: the extension's import registers the operators)
from . import _fake  # noqa: F401  (registers the fake kernels of every op family)
from . import _vmap  # noqa: F401  (registers the SoftDTW ops' batching rules)
