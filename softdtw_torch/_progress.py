"""Progress reports of long calls: the package's one convention (CONTRIBUTING.md, "Progress").

Every public function or estimator method that can run for more than a few seconds takes
``verbose`` (off by default) and reports through :class:`Progress`:

* ``verbose`` falsy: nothing is printed or imported, nothing is timed;
* truthy: a tqdm bar (``tqdm.auto``, a widget in notebooks) when tqdm is installed, otherwise plain
  lines on stderr, each naming the call (``cdist_soft_dtw``, ``MiniRocket.transform``, ...): one at
  the start, then at most one a second and one per tenth of the work, and a last one at the end
  (or when the call fails), so that the log of a long job stays short.

Either way the call computes exactly what it computes without ``verbose``: a report only reads
counts the call has anyway (no synchronisation on a device, no other chunking).
"""
from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, Optional, Type

# Plain lines: at most one a second and one per tenth of the total, whichever is rarer.
_MIN_SECONDS_BETWEEN_LINES = 1.0
_MIN_FRACTION_BETWEEN_LINES = 0.1


def log(desc: str, message: str) -> None:
    """One line ``"desc: message"`` on stderr: the form of every plain progress line."""
    print(f"{desc}: {message}", file=sys.stderr, flush=True)


def _tqdm_class() -> Any:
    """``tqdm.auto.tqdm``, or None when tqdm is not installed (an optional dependency)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    """Progress of one call over ``total`` units of work (pairs, cases, iterations, stages).

    ``desc`` names the public function or method (``"KNeighborsTimeSeriesClassifier.predict"``).
    Use it as a context manager, so that the bar is closed (and the last line printed) even when
    the call raises::

        with Progress(verbose, "cdist_soft_dtw", total=n_pairs, unit="pairs") as progress:
            for chunk in chunks:
                ...
                progress.update(len(chunk))
    """

    def __init__(self, verbose: Any, desc: str, total: int, unit: str = "it") -> None:
        self.enabled = bool(verbose)
        self.desc, self.total, self.unit = desc, int(total), unit
        self.n = 0
        self.status = ""
        self._bar: Any = None
        self._closed = False
        if not self.enabled:
            return
        tqdm = _tqdm_class()
        if tqdm is not None:
            self._bar = tqdm(total=self.total, desc=desc, unit=unit)
        else:
            self._start = self._last_time = time.monotonic()
            self._last_n = 0
            log(desc, self._count())

    def update(self, n: int = 1, status: str = "") -> None:
        """``n`` more units done; ``status`` (e.g. ``"objective -5800"``) is shown beside the count."""
        if not self.enabled:
            return
        self.n += n
        if status:
            self.status = status
        if self._bar is not None:
            if status:
                self._bar.set_postfix_str(status, refresh=False)
            self._bar.update(n)
            return
        now = time.monotonic()
        if (self.n < self.total  # the total is close()'s line
                and now - self._last_time >= _MIN_SECONDS_BETWEEN_LINES
                and self.n - self._last_n >= _MIN_FRACTION_BETWEEN_LINES * self.total):
            self._last_time, self._last_n = now, self.n
            log(self.desc, self._count())

    def _count(self) -> str:
        text = f"{self.n}/{self.total} {self.unit}"
        if self.total > 0:
            text += f" ({100 * self.n / self.total:.0f}%)"
        return f"{text}, {self.status}" if self.status else text

    def close(self, error: Optional[BaseException] = None) -> None:
        """Close the bar, or print the last line (how far the call got, and in how long)."""
        if not self.enabled or self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
            return
        end = "done" if error is None else f"stopped by {type(error).__name__}"
        log(self.desc, f"{self._count()}, {end} in {time.monotonic() - self._start:.1f} s")

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.close(exc)
