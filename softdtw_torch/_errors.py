"""Errors name the public function or estimator the user called: :func:`public_errors`.

Every message starts ``"<name>: "``. A public entry point that works through other ones (``dtw``
through ``soft_dtw``, ``MiniRocketClassifier`` through ``MiniRocket`` and the ``minirocket_fit``
operator) checks what it can itself, under its own name; what only the callee finds (values its
kernel reads: NaN, lengths out of range; the series' length for a transform) would name the callee,
which the user never called. ``with public_errors(who):`` around the call renames such an error.
This is the one place the Python side does that; ``with_public_name`` in csrc/common/checks.h is
the operators' own, for the public operators made of other operators (``soft_dtw`` of
``pairwise_cost`` and ``soft_dtw_from_cost``).
"""
import contextlib
import re
from typing import Iterator

import torch

__all__ = ["public_errors", "with_public_name"]

# The leading "<name>: " of a message: an op (``minirocket_fit``), a function or a method
# (``MiniRocket.fit``).
_LEADING_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*: ")


def with_public_name(who: str, message: str) -> str:
    """``message`` under the name ``who``: its leading ``"<name>: "`` replaced (kept when it is
    ``who`` itself or one of its methods, ``"<who>.<method>: "``), or ``"<who>: "`` put in front
    of a message without one (a message of numpy or scikit-learn)."""
    if message.startswith(f"{who}:") or message.startswith(f"{who}."):
        return message
    match = _LEADING_NAME.match(message)
    rest = message[match.end():] if match else message
    return f"{who}: {rest}"


@contextlib.contextmanager
def public_errors(who: str) -> Iterator[None]:
    """Re-raises a ValueError, TypeError or torch.OutOfMemoryError (the memory preflight's
    refusal) of the body, same type, named ``who``
    (:func:`with_public_name`). Subclasses (``NotFittedError``, ...) pass as they are.

    Eager code only: TorchScript compiles no ``with`` of it, so scriptable functions call it under
    ``if not torch.jit.is_scripting():`` (scripted code keeps the callee's name)."""
    try:
        yield
    except (ValueError, TypeError, torch.OutOfMemoryError) as error:
        if type(error) not in (ValueError, TypeError, torch.OutOfMemoryError):
            raise
        message = str(error)
        renamed = with_public_name(who, message)
        if renamed == message:
            raise
        # The callee's traceback is kept; its message, which named the callee, is not chained.
        raise type(error)(renamed).with_traceback(error.__traceback__) from None
