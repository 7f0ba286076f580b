"""Fake (meta) kernels of every operator, one module per op family, for ``torch.compile`` and
``torch.library.opcheck``.

A fake kernel gives the output shapes and dtypes without computing, so the ops can be traced. Each
repeats the shape-level checks of its C++ op with the same messages; value-level checks (length
ranges, NaN inputs, kernel field ranges) need data and stay in the real kernels.

Imported once, by ``softdtw_torch._ops`` right after it loads the extension.
"""
from . import hydra, minirocket, multirocket, rocket, softdtw  # noqa: F401  (each registers the fake kernels of its op family)
