"""The one conversion of user input X (numpy, tensor or nested lists) into the (n_cases,
n_channels, n_timepoints) floating tensor the ROCKET estimators work on."""
from typing import Optional, Union

import numpy as np
import torch
from torch import Tensor


def as_series_tensor(X: Union[np.ndarray, Tensor], who: str, device: Optional[Union[str, torch.device]] = None,
                     integer_dtype: torch.dtype = torch.float64) -> Tensor:
    """X as a 3-D floating tensor; 2-D input is one channel (n_cases, n_timepoints).

    Float tensors/arrays keep their dtype (like numpy); integers and bools become ``integer_dtype``
    (aeon's Rocket works from float64, its MiniRocket casts to float32). Tensors are detached.
    Moved to ``device`` when given. Raises ValueError naming ``who`` for any other rank.
    """
    t = X.detach() if isinstance(X, Tensor) else torch.from_numpy(np.ascontiguousarray(np.asarray(X)))
    if not t.is_floating_point():
        t = t.to(integer_dtype)
    if t.dim() == 2:
        t = t.unsqueeze(1)
    if t.dim() != 3:
        raise ValueError(f"{who}: expected X to be 3-D (n_cases, n_channels, n_timepoints) or 2-D "
                         f"(n_cases, n_timepoints), got {t.dim()}-D")
    return t if device is None else t.to(device)
