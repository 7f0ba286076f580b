"""Small loaders for time-series data sets in the sktime/aeon ``.ts`` format (numpy only).

The ``.ts`` format (https://www.aeon-toolkit.org, "the .ts file format") is a text file with

* optional comment lines starting with ``#`` (or ``%``, as in ARFF files; aeon's own
  ``UnitTest`` files use it),
* ``@`` header lines (``@problemName``, ``@univariate``, ``@dimensions``, ``@equalLength``,
  ``@seriesLength``, ``@classLabel true 1 2``, ``@targetLabel true``, ...; keys are
  case-insensitive),
* an ``@data`` line, then one case per line: channels separated by ``:``, values inside a
  channel by ``,``, and, when the header declares labels, the class label (or regression target)
  as the last ``:``-separated field. A ``?`` value is a missing value.

Only the plain-values form is supported (``@timeStamps true`` files, whose values are written as
``(time,value)`` pairs, are rejected with a clear error).

This module has no dependency beyond numpy so the data used by the examples can be loaded
without installing aeon or sktime.
"""
from __future__ import annotations

import importlib.util
import os
from importlib import resources
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

__all__ = ["load_ts", "load_gunpoint", "aeon_datasets_dir"]

#: What :func:`load_ts` returns for the series: one float64 array (n_cases, n_channels,
#: n_timepoints) when every case has the same length, otherwise one (n_channels, length) array
#: per case.
Series = Union[np.ndarray, List[np.ndarray]]

# Comment prefixes: '#' is the .ts convention, '%' the ARFF one that some aeon files carry.
_COMMENT_PREFIXES = ("#", "%")

_GUNPOINT_FILES: Dict[str, str] = {"train": "GunPoint_TRAIN.ts", "test": "GunPoint_TEST.ts"}


def _is_true(value: str) -> bool:
    """Whether a header value such as ``true``/``false`` (any case) reads as true."""
    return value.strip().lower() == "true"


def _parse_header(lines: List[str], path: str) -> Tuple[Dict[str, List[str]], int]:
    """Read the ``@`` header up to ``@data``.

    Returns the header as ``{lowercased key: [values...]}`` and the index of the first line after
    ``@data``. Raises ``ValueError`` if there is no ``@data`` line.
    """
    header: Dict[str, List[str]] = {}
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith(_COMMENT_PREFIXES):
            continue
        if not line.startswith("@"):
            raise ValueError(
                f"load_ts: {path}, line {i + 1}: expected a '@' header line or a comment "
                f"before '@data', got {line[:40]!r} (is the '@data' line missing?)"
            )
        key, _, rest = line[1:].partition(" ")
        key = key.lower()
        if key == "data":
            return header, i + 1
        # A repeated key (some files carry two @problemName lines) keeps the first value.
        header.setdefault(key, rest.split())
    raise ValueError(f"load_ts: {path}: no '@data' line; not a .ts file?")


def _has_labels(header: Dict[str, List[str]]) -> bool:
    """Whether each case ends with a label: ``@classLabel true`` or ``@targetLabel true``.

    A file that declares neither is assumed to be labelled (the common case); one that says
    ``@classLabel false`` without a target is not.
    """
    class_label = header.get("classlabel")
    target_label = header.get("targetlabel")
    if class_label is None and target_label is None:
        return True
    return (bool(class_label) and _is_true(class_label[0])) or (
        bool(target_label) and _is_true(target_label[0])
    )


def _parse_channel(text: str, path: str, line_no: int) -> np.ndarray:
    """Parse one ``,``-separated channel into float64; ``?`` becomes NaN."""
    values: List[float] = []
    for token in text.split(","):
        token = token.strip()
        if token == "?":
            values.append(float("nan"))
            continue
        try:
            values.append(float(token))
        except ValueError:
            raise ValueError(
                f"load_ts: {path}, line {line_no}: expected a number or '?', got {token!r}"
            ) from None
    return np.asarray(values, dtype=np.float64)


def _parse_case(
    line: str, labelled: bool, path: str, line_no: int
) -> Tuple[np.ndarray, Optional[str]]:
    """Parse one data line into a (n_channels, length) array and its label (or ``None``)."""
    fields = line.split(":")
    label: Optional[str] = None
    if labelled:
        if len(fields) < 2:
            raise ValueError(
                f"load_ts: {path}, line {line_no}: expected 'values:label' (the header declares "
                f"labels), found no ':'"
            )
        label = fields.pop().strip()
        if not label:
            raise ValueError(f"load_ts: {path}, line {line_no}: empty label")
    channels = [_parse_channel(f, path, line_no) for f in fields]
    lengths = {len(c) for c in channels}
    if len(lengths) != 1:
        raise ValueError(
            f"load_ts: {path}, line {line_no}: the channels of one case must have the same "
            f"length, got lengths {[len(c) for c in channels]}"
        )
    return np.stack(channels), label


def _check_against_header(
    cases: List[np.ndarray], labels: List[str], header: Dict[str, List[str]], path: str
) -> None:
    """Check the parsed cases against what the header promises (dimensions, lengths, labels)."""
    n_channels = cases[0].shape[0]
    if "dimensions" in header and header["dimensions"]:
        declared = int(header["dimensions"][0])
        if declared != n_channels:
            raise ValueError(
                f"load_ts: {path}: header says @dimensions {declared}, data has {n_channels} "
                f"channels"
            )
    if header.get("univariate") and _is_true(header["univariate"][0]) and n_channels != 1:
        raise ValueError(
            f"load_ts: {path}: header says @univariate true, data has {n_channels} channels"
        )
    lengths = {c.shape[1] for c in cases}
    if header.get("equallength") and _is_true(header["equallength"][0]) and len(lengths) > 1:
        raise ValueError(
            f"load_ts: {path}: header says @equalLength true, data has lengths "
            f"{sorted(lengths)}"
        )
    if header.get("serieslength") and len(lengths) == 1:
        declared = int(header["serieslength"][0])
        if lengths != {declared}:
            raise ValueError(
                f"load_ts: {path}: header says @seriesLength {declared}, data has length "
                f"{lengths.pop()}"
            )
    class_label = header.get("classlabel")
    if class_label and _is_true(class_label[0]) and len(class_label) > 1:
        allowed = set(class_label[1:])
        unknown = sorted(set(labels) - allowed)
        if unknown:
            raise ValueError(
                f"load_ts: {path}: labels {unknown} are not among the declared class labels "
                f"{class_label[1:]}"
            )


def load_ts(path: Union[str, "os.PathLike[str]"]) -> Tuple[Series, Optional[np.ndarray]]:
    r"""Load a ``.ts`` file.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.ts`` file.

    Returns
    -------
    X : numpy.ndarray or list
        A float64 array of shape (n_cases, n_channels, n_timepoints) when all cases have the same
        length, otherwise a list of n_cases float64 arrays of shape (n_channels, length_i). Missing
        values (``?``) are NaN.
    y : numpy.ndarray or None
        The n_cases labels as strings (class labels, or regression targets written as text:
        convert with ``y.astype(float)``), or ``None`` when the header says the file has no labels
        (``@classLabel false`` and no ``@targetLabel true``).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        The file is malformed (no ``@data``, non-numeric value, no label where the header declares
        labels, cases with different channel counts, data contradicting the header, no cases) or
        uses ``@timeStamps true``. The message names the file and line.

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from softdtw_torch.datasets import load_ts
    >>> text = "@problemName Tiny\n@univariate true\n@classLabel true a b\n@data\n1,2,3:a\n4,5,?:b\n"
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "Tiny_TRAIN.ts")
    ...     with open(path, "w") as f:
    ...         _ = f.write(text)
    ...     X, y = load_ts(path)
    >>> X.shape, X.dtype
    ((2, 1, 3), dtype('float64'))
    >>> X[1, 0].tolist(), y.tolist()
    ([4.0, 5.0, nan], ['a', 'b'])
    """
    path_str = os.fspath(path)
    with open(path_str, encoding="utf-8") as f:
        lines = f.read().splitlines()

    header, first_data = _parse_header(lines, path_str)
    if header.get("timestamps") and _is_true(header["timestamps"][0]):
        raise ValueError(f"load_ts: {path_str}: '@timeStamps true' files are not supported")
    labelled = _has_labels(header)

    cases: List[np.ndarray] = []
    labels: List[str] = []
    for i in range(first_data, len(lines)):
        line = lines[i].strip()
        if not line or line.startswith(_COMMENT_PREFIXES):
            continue
        case, label = _parse_case(line, labelled, path_str, i + 1)
        if cases and case.shape[0] != cases[0].shape[0]:
            raise ValueError(
                f"load_ts: {path_str}, line {i + 1}: expected {cases[0].shape[0]} channels "
                f"(as in the first case), got {case.shape[0]}"
            )
        cases.append(case)
        if label is not None:
            labels.append(label)
    if not cases:
        raise ValueError(f"load_ts: {path_str}: no cases after '@data'")

    _check_against_header(cases, labels, header, path_str)
    y = np.asarray(labels, dtype=str) if labelled else None
    if len({c.shape[1] for c in cases}) == 1:
        return np.stack(cases), y
    return cases, y


def load_gunpoint(split: str = "train") -> Tuple[np.ndarray, np.ndarray]:
    """Load the GunPoint data set shipped with the package (UCR archive, via aeon).

    GunPoint: the x-coordinate of an actor's right hand while drawing a gun from a holster
    (class ``"1"``) or pointing a finger (class ``"2"``), 150 time points per case, each series
    z-normalised. See ``softdtw_torch/data/PROVENANCE.md`` for the source and how to cite it.

    Parameters
    ----------
    split : {'train', 'test'}, default 'train'
        ``"train"`` (50 cases) or ``"test"`` (150 cases).

    Returns
    -------
    X : numpy.ndarray
        float64 of shape (50, 1, 150) or (150, 1, 150).
    y : numpy.ndarray
        The labels as strings (``"1"`` or ``"2"``).

    Raises
    ------
    ValueError
        ``split`` is not ``"train"`` or ``"test"``.

    Examples
    --------
    >>> from softdtw_torch.datasets import load_gunpoint
    >>> X, y = load_gunpoint("train")
    >>> X.shape, X.dtype
    ((50, 1, 150), dtype('float64'))
    >>> sorted(set(y.tolist()))
    ['1', '2']
    """
    if split not in _GUNPOINT_FILES:
        raise ValueError(
            f"load_gunpoint: expected split to be 'train' or 'test', got {split!r}"
        )
    resource = resources.files(__package__) / "data" / _GUNPOINT_FILES[split]
    with resources.as_file(resource) as file:
        X, y = load_ts(file)
    # The shipped files are equal-length and labelled; the asserts document it for type checkers.
    assert isinstance(X, np.ndarray) and y is not None
    return X, y


def aeon_datasets_dir() -> Optional[str]:
    """The folder of UCR/UEA data sets that aeon ships inside its package, or None without aeon.

    It is ``os.path.join(os.path.dirname(aeon.datasets.__file__), "data")``: the ``.ts`` files
    aeon's own loaders read (GunPoint, ArrowHead, BasicMotions, ItalyPowerDemand, ACSF1, OSULeaf,
    JapaneseVowels, ...: copies of the UCR/UEA archive, timeseriesclassification.com), one folder
    per data set, ``<Name>/<Name>_TRAIN.ts`` and ``<Name>_TEST.ts``, ready for :func:`load_ts`.
    Found without importing aeon (whose import is slow). The tests, examples and benchmarks read
    every data set but the packaged GunPoint from here.

    Returns
    -------
    str or None
        The folder's path, or None when aeon is not installed.

    Examples
    --------
    >>> import os
    >>> from softdtw_torch.datasets import aeon_datasets_dir
    >>> folder = aeon_datasets_dir()
    >>> folder is None or os.path.basename(folder) == "data"
    True
    """
    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "datasets", "data")
