"""ROCKET, MiniRocket, MultiRocket and Hydra as operators (``torch.ops.softdtw_torch.rocket_*``,
``minirocket_*``, ``multirocket_*``, ``hydra_*``).

Given the same kernels / parameters: MiniRocket's and MultiRocket's features are bit-identical to
aeon's ``MiniRocket.transform`` / ``MultiRocket.transform``; Rocket's are bit-identical to aeon's
convolution code (``"float64"`` on float64 input, the float32 modes to its source compiled with /
without FMA), and within float32 rounding of aeon 1.6's own ``Rocket.transform``, not
bit-identical to it. Hydra's kernels are aeon's and its features aeon's within the tolerance
docs/user_guide/rocket.md states. See its
section ("Accumulation modes") and ``softdtw_torch/rocket/_rocket.py``.
"""
from ._kernels import RocketKernels, generate_kernels, kernels_from_aeon, kernels_to_aeon  # noqa: F401
from ._rocket import Rocket, RocketLayer, rocket_transform  # noqa: F401
from ._classifier import (  # noqa: F401
    HydraClassifier,
    MiniRocketClassifier,
    MultiRocketClassifier,
    MultiRocketHydraClassifier,
    RidgeClassifierCV,
    RocketClassifier,
    SparseScaler,
    StandardScaler,
)
from ._regressor import (  # noqa: F401
    HydraRegressor,
    MiniRocketRegressor,
    MultiRocketHydraRegressor,
    MultiRocketRegressor,
    RidgeCV,
    RocketRegressor,
)
from ._minirocket import MiniRocket  # noqa: F401
from ._multirocket import MultiRocket  # noqa: F401
from ._hydra import HydraLayer, HydraTransformer, hydra_parameters_from_aeon  # noqa: F401

__all__ = ["Rocket", "RocketLayer", "rocket_transform", "RocketKernels", "generate_kernels", "kernels_from_aeon",
           "kernels_to_aeon", "MiniRocket", "MultiRocket", "HydraTransformer", "HydraLayer", "hydra_parameters_from_aeon",
           "RocketClassifier", "MiniRocketClassifier", "MultiRocketClassifier", "HydraClassifier",
           "MultiRocketHydraClassifier", "RocketRegressor", "MiniRocketRegressor", "MultiRocketRegressor",
           "HydraRegressor", "MultiRocketHydraRegressor", "RidgeClassifierCV", "RidgeCV", "StandardScaler",
           "SparseScaler"]
