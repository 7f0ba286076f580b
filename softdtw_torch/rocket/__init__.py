"""ROCKET and MiniRocket as operators (``torch.ops.softdtw_torch.rocket_*``, ``minirocket_*``).

Bit-exact with aeon's transforms when given the same kernels / parameters; see the README's
ROCKET section for the accumulation modes and the documented behaviours.
"""
from ._kernels import RocketKernels, generate_kernels, kernels_from_aeon, kernels_to_aeon  # noqa: F401
from ._rocket import Rocket, RocketLayer, rocket_transform  # noqa: F401
from ._classifier import RidgeClassifierCV, RocketClassifier, StandardScaler  # noqa: F401
from ._minirocket import MiniRocket  # noqa: F401
