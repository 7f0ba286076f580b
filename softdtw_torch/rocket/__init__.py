"""ROCKET and MiniRocket as operators (``torch.ops.softdtw_torch.rocket_*``, ``minirocket_*``).

Given the same kernels / parameters: MiniRocket's features are bit-identical to aeon's
``MiniRocket.transform``; Rocket's are bit-identical to aeon's convolution code (``"float64"`` on
float64 input, the float32 modes to its source compiled with / without FMA), and within float32
rounding of aeon 1.6's own ``Rocket.transform``, not bit-identical to it. See the README's ROCKET
section ("Accumulation modes") and ``softdtw_torch/rocket/_rocket.py``.
"""
from ._kernels import RocketKernels, generate_kernels, kernels_from_aeon, kernels_to_aeon  # noqa: F401
from ._rocket import Rocket, RocketLayer, rocket_transform  # noqa: F401
from ._classifier import RidgeClassifierCV, RocketClassifier, StandardScaler  # noqa: F401
from ._minirocket import MiniRocket  # noqa: F401
