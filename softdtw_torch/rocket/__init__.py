"""ROCKET and MiniRocket as operators (``torch.ops.softdtw_torch.rocket_*``, ``minirocket_*``).

Bit-exact with aeon's transforms when given the same kernels / parameters; see the README's
ROCKET section for the accumulation modes and the documented behaviours.
"""
from ._minirocket import MiniRocket  # noqa: F401
