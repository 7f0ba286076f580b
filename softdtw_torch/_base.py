"""The base of every estimator: scikit-learn's ``BaseEstimator`` and one not-fitted error.

:class:`Estimator` is ``sklearn.base.BaseEstimator`` (``get_params`` / ``set_params`` from the
``__init__`` signature, repr, ``clone``, pickling, tags) plus the fitted check, which raises
:class:`NotFittedError`. Each estimator puts the mixin of its kind (``ClassifierMixin``,
``TransformerMixin``, ``ClusterMixin``) on the left of :class:`Estimator` and declares what input
it takes in ``__sklearn_tags__``. :func:`check_random_state` and :func:`draw_seed` are the
``random_state`` rules of all estimators, :func:`check_device` the ``device`` rule.
"""
import numbers
from typing import Any, Optional

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError
from sklearn.utils import Tags
from sklearn.utils.validation import check_array
from torch import Tensor

from ._input import _Data, _prepare_series

__all__ = ["Estimator", "NotFittedError", "as_numeric_array", "check_device", "check_random_state", "draw_seed",
           "read_series", "series_tags"]


class NotFittedError(_SklearnNotFittedError, RuntimeError):
    """Raised when an estimator is used before ``fit``.

    A subclass of ``sklearn.exceptions.NotFittedError`` (itself a ValueError and an AttributeError),
    so scikit-learn's tools and ``except sklearn.exceptions.NotFittedError`` catch it. Also a
    RuntimeError, so that ``except RuntimeError`` around a ``MiniRocket`` call catches it too. (The
    other way round does not hold: ``sklearn.utils.validation.check_is_fitted`` raises scikit-learn's
    class, which ``except softdtw_torch.NotFittedError`` does not catch.)

    Examples
    --------
    >>> import torch
    >>> from softdtw_torch import NotFittedError
    >>> from softdtw_torch.rocket import MiniRocket
    >>> try:
    ...     MiniRocket(n_kernels=84).transform(torch.zeros(2, 1, 20))
    ... except NotFittedError as error:
    ...     print(error)
    MiniRocket.transform: this instance is not fitted yet; call fit first
    >>> issubclass(NotFittedError, (ValueError, AttributeError, RuntimeError))
    True
    """


class Estimator(BaseEstimator):
    """scikit-learn's ``BaseEstimator`` with the fitted check of our estimators.

    A subclass stores each ``__init__`` argument under its own name (and does nothing else in
    ``__init__``), and names in ``_fitted_attribute`` an attribute that only a fit sets.
    """

    _fitted_attribute = ""

    def __sklearn_is_fitted__(self) -> bool:
        # What sklearn.utils.validation.check_is_fitted asks.
        return hasattr(self, self._fitted_attribute)

    def _check_is_fitted(self, method_name: str) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"{type(self).__name__}.{method_name}: this instance is not fitted yet; call fit first")


def series_tags(tags: Tags, allow_nan: bool = False) -> Tags:
    """The input tags of a time-series estimator: 3-D collections, and 2-D arrays read as
    (n_cases, n_timepoints) univariate series (aeon's and tslearn's convention, which also keeps
    scikit-learn's common checks, all fed 2-D arrays, running). ``allow_nan``: NaN-padded series
    of different lengths are accepted (tslearn's format)."""
    tags.input_tags.two_d_array = True
    tags.input_tags.three_d_array = True
    tags.input_tags.allow_nan = allow_nan
    return tags


def as_numeric_array(X: Any, who: str) -> np.ndarray:
    """X (anything but a tensor) as a numeric numpy array, through scikit-learn's ``check_array``.

    So sparse matrices, complex or non-numeric values and empty arrays get scikit-learn's errors
    (naming ``who``), which its tools and common checks expect; DataFrames and lists are read,
    object arrays of numbers become float64, read-only arrays are copied (torch would warn on
    them). Numeric dtypes, rank and memory layout are kept, and NaN / inf pass: the rank and the
    values are each estimator's to check.
    """
    try:
        return check_array(X, accept_sparse=False, dtype="numeric", force_writeable=True, ensure_all_finite=False,
                           ensure_2d=False, allow_nd=True, estimator=who, input_name="X")
    except (ValueError, TypeError) as error:  # scikit-learn's words (its checks match them), after our name
        raise type(error)(f"{who}: {error}") from error


def read_series(X: Any, x_lengths: Any, who: str) -> _Data:
    """What a SoftDTW-family estimator reads: X (a tensor, a list of series of any lengths, or
    anything scikit-learn's ``check_array`` takes, through :func:`as_numeric_array`) as one padded
    group of series in tslearn's layout, with its lengths (``_prepare_series``). A 1-D X is refused,
    as scikit-learn refuses it: one series or n scalars, only the caller knows."""
    if not isinstance(X, (Tensor, list, tuple)):  # lists may be series of different lengths
        X = as_numeric_array(X, who)
    if getattr(X, "ndim", None) == 1:
        raise ValueError(f"{who}: expected X of shape (n_series, length, features) or (n_series, length), got a "
                         f"1-D input of shape {tuple(X.shape)}. Reshape your data: X.reshape(1, -1) for a single "
                         f"series")
    return _prepare_series(X, x_lengths, who, allow_groups=False)


def _int_seed(random_state: Any, who: str, check_range: bool) -> int:
    # A bool is not a seed (scikit-learn's check_random_state reads True as 1; we refuse it, as a
    # flag passed in the seed's place is a mistake)
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, numbers.Integral):
        raise TypeError(f"{who}: expected random_state to be None, an int or a numpy.random.RandomState, "
                        f"got {type(random_state).__name__}")
    seed = int(random_state)
    if check_range and not 0 <= seed <= 2**32 - 1:
        raise ValueError(f"{who}: expected random_state in [0, 2**32 - 1] (numpy's range), got {seed}")
    return seed


def check_random_state(random_state: Any, who: str) -> np.random.RandomState:
    """scikit-learn's rule: None gives numpy's global RandomState (``np.random.seed`` makes it
    reproducible), an int in [0, 2**32 - 1] a new RandomState seeded with it, a RandomState itself.
    Anything else raises a TypeError (a ValueError for an int out of range) naming ``who``."""
    if random_state is None:
        return np.random.mtrand._rand
    if isinstance(random_state, np.random.RandomState):
        return random_state
    return np.random.RandomState(_int_seed(random_state, who, check_range=True))


def draw_seed(random_state: Any, who: str, check_range: bool = True) -> int:
    """aeon's rule for an integer seed: an int is the seed itself; None or a RandomState draws one,
    ``randint(2**31 - 1)``, from :func:`check_random_state`'s RandomState (None: numpy's global one).

    ``check_range=False`` leaves the int's range to the operator that takes the seed."""
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return int(check_random_state(random_state, who).randint(np.iinfo(np.int32).max))
    return _int_seed(random_state, who, check_range)


def check_device(device: Any, who: str) -> Optional[torch.device]:
    """The ``device`` parameter (None, a string or a torch.device) as a torch.device (None stays
    None), checked where it is used (an estimator's ``fit``: scikit-learn validates no parameter in
    ``__init__``), so that a bad one fails there with an error naming ``who`` rather than later with
    torch's parser or CUDA driver error: TypeError for another type, ValueError for a string that
    names no device, or a CUDA device this machine does not have."""
    if device is None:
        return None
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{who}: expected device to be None, a string or a torch.device, got "
                        f"{type(device).__name__}")
    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{who}: device={device!r} is not a torch device (expected e.g. 'cpu', 'cuda', "
                         f"'cuda:1')") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{who}: device={str(device)!r} but CUDA is not available on this machine "
                             f"(torch.cuda.is_available() is False)")
        count = torch.cuda.device_count()
        if parsed.index is not None and parsed.index >= count:
            which = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
            raise ValueError(f"{who}: device={str(device)!r} but this machine has {count} CUDA "
                             f"device{'' if count == 1 else 's'} ({which})")
    return parsed
