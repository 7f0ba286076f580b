"""The base of every estimator: scikit-learn's estimator protocol, without scikit-learn.

:class:`Estimator` derives ``get_params`` / ``set_params`` from the ``__init__`` signature (as
scikit-learn's ``BaseEstimator``: the parameters are the ``__init__`` arguments, each stored under
its own name), gives a scikit-learn-style ``__repr__`` (the parameters that differ from their
defaults) and the fitted check, which raises :class:`NotFittedError`. :func:`check_random_state`
and :func:`draw_seed` are the ``random_state`` rules of all estimators.
"""
import inspect
import numbers
from typing import Any, Dict, List

import numpy as np

__all__ = ["Estimator", "NotFittedError", "check_random_state", "draw_seed"]


class NotFittedError(ValueError, AttributeError, RuntimeError):
    """Raised when an estimator is used before ``fit``.

    A ValueError and an AttributeError, as scikit-learn's; also a RuntimeError, what ``MiniRocket``
    raised before the estimators shared this class.
    """


class Estimator:
    """Parameters, repr and fitted check of an estimator (scikit-learn's protocol).

    A subclass stores each ``__init__`` argument under its own name (and does nothing else in
    ``__init__``), and names in ``_fitted_attribute`` an attribute that only a fit sets.
    """

    _fitted_attribute = ""

    @classmethod
    def _get_param_names(cls) -> List[str]:
        """The ``__init__`` arguments, sorted (as scikit-learn's)."""
        if cls.__init__ is object.__init__:
            return []
        parameters = inspect.signature(cls.__init__).parameters.values()
        return sorted(p.name for p in parameters
                      if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """The ``__init__`` parameters; with ``deep``, also ``name__key`` for parameters that are estimators."""
        params: Dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", v) for key, v in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> "Estimator":
        """Sets ``__init__`` parameters; returns self."""
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"{type(self).__name__}.set_params: unknown parameter {key!r}; valid parameters are {valid}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{name}={value!r}" for name, value in self.get_params(deep=False).items()
                   if defaults.get(name, inspect.Parameter.empty) is inspect.Parameter.empty
                   or repr(value) != repr(defaults[name])]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, self._fitted_attribute)

    def _check_is_fitted(self, method_name: str) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"{type(self).__name__}.{method_name}: this instance is not fitted yet; call fit first")


def _int_seed(random_state: Any, who: str, check_range: bool) -> int:
    if not isinstance(random_state, numbers.Integral):
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
