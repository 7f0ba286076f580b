"""Tests for the numpy-only ``.ts`` loader and the bundled GunPoint copy; real files come from the
package (GunPoint) and from the datasets aeon ships inside its package (see tests/conftest.py),
and are also read with aeon's own loader to check that both readers agree."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import List

import numpy as np
import pytest

from conftest import AEON_DATASETS, needs_aeon_data
from softdtw_torch import datasets
from softdtw_torch.datasets import load_gunpoint, load_ts

PACKAGE_DATA = Path(datasets.__file__).resolve().parent / "data"
# aeon's bundled UCR/UEA datasets (None without aeon; the tests using it are then skipped).
AEON = Path(AEON_DATASETS) if AEON_DATASETS is not None else None

# The .ts files the tests, examples and benchmarks read from aeon's folder: (folder, file stem).
AEON_FILES = [
    ("UnitTest", "UnitTest"), ("GunPoint", "GunPoint"), ("ItalyPowerDemand", "ItalyPowerDemand"),
    ("ArrowHead", "ArrowHead"), ("OSULeaf", "OSULeaf"), ("ACSF1", "ACSF1"), ("BasicMotions", "BasicMotions"),
    ("JapaneseVowels", "JapaneseVowels"), ("JapaneseVowels", "JapaneseVowels_eq"),
]

# sha256 of the packaged GunPoint files, as listed in softdtw_torch/data/PROVENANCE.md.
GUNPOINT_SHA256 = {
    "GunPoint_TRAIN.ts": "f842401779fd9800d247d8b33121a1a4643710a19b24917dbdd9a060ca8630d5",
    "GunPoint_TEST.ts": "79332750788a6227b325b96bd0d70130c8eb707b9731f8d7dec62b7a7d36017e",
}


def _aeon_load(path: Path):
    """``aeon.datasets.load_from_ts_file``: aeon's own reader of the same file."""
    aeon_datasets = pytest.importorskip("aeon.datasets")
    return aeon_datasets.load_from_ts_file(str(path))


def _assert_same_series(ours, theirs) -> None:
    """Same arrays, bit for bit: one 3-D array, or a list of (channels, length) arrays."""
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert a.dtype == np.float64 and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    else:
        assert isinstance(ours, np.ndarray) and ours.dtype == np.float64 and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


def _assert_same_labels(ours, theirs) -> None:
    """Same labels; aeon's reader lower-cases every line it reads (labels included), ours keeps
    the file's spelling ("Standing" in BasicMotions, for instance)."""
    assert ours is not None and len(ours) == len(theirs)
    assert np.char.lower(ours.astype(str)).tolist() == np.asarray(theirs).astype(str).tolist()


def _data_lines(path: Path) -> List[str]:
    """The case lines after ``@data``, read with plain string handling (independent of load_ts)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().lower() == "@data")
    return [line.strip() for line in lines[start + 1:] if line.strip()]


def _header_value(path: Path, key: str) -> str | None:
    """The first value of header ``@key`` (case-insensitive), or None if absent."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lower().startswith("@" + key.lower() + " "):
            return line.split()[1]
    return None


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tiny.ts"
    path.write_text(text, encoding="utf-8")
    return path


# --- GunPoint (package-shipped copy) -----------------------------------------------------------

def test_gunpoint_shapes_and_dtype() -> None:
    X_train, y_train = load_gunpoint("train")
    X_test, y_test = load_gunpoint("test")
    assert X_train.shape == (50, 1, 150)
    assert X_test.shape == (150, 1, 150)
    assert X_train.dtype == np.float64 and X_test.dtype == np.float64
    assert y_train.shape == (50,) and y_test.shape == (150,)
    assert not np.isnan(X_train).any() and not np.isnan(X_test).any()


def test_gunpoint_default_split_is_train() -> None:
    np.testing.assert_array_equal(load_gunpoint()[0], load_gunpoint("train")[0])


@pytest.mark.parametrize("split", ["train", "test"])
def test_gunpoint_labels(split: str) -> None:
    _, y = load_gunpoint(split)
    assert set(y.tolist()) == {"1", "2"}


def test_gunpoint_first_value_matches_file() -> None:
    first_line = _data_lines(PACKAGE_DATA / "GunPoint_TRAIN.ts")[0]
    first_number = float(first_line.split(":")[0].split(",")[0])
    last_label = first_line.split(":")[-1]
    X, y = load_gunpoint("train")
    assert X[0, 0, 0] == first_number
    assert y[0] == last_label


@pytest.mark.parametrize("name", sorted(GUNPOINT_SHA256))
def test_gunpoint_files_match_their_recorded_hash(name: str) -> None:
    assert hashlib.sha256((PACKAGE_DATA / name).read_bytes()).hexdigest() == GUNPOINT_SHA256[name]


@needs_aeon_data
def test_gunpoint_copy_is_aeons_verbatim() -> None:
    # The packaged files are byte-identical to the ones aeon bundles (PROVENANCE.md).
    for name in GUNPOINT_SHA256:
        assert (PACKAGE_DATA / name).read_bytes() == (AEON / "GunPoint" / name).read_bytes()


@needs_aeon_data
@pytest.mark.parametrize("split", ["train", "test"])
def test_gunpoint_equals_aeons_named_loader(split: str) -> None:
    aeon_datasets = pytest.importorskip("aeon.datasets")
    X_aeon, y_aeon = aeon_datasets.load_classification("GunPoint", split=split)
    X, y = load_gunpoint(split)
    _assert_same_series(X, X_aeon)
    _assert_same_labels(y, y_aeon)


@pytest.mark.parametrize("split", ["val", "TRAIN", "", "training"])
def test_gunpoint_bad_split(split: str) -> None:
    with pytest.raises(ValueError, match="expected split to be 'train' or 'test'"):
        load_gunpoint(split)


# --- aeon's bundled files ----------------------------------------------------------------------

@needs_aeon_data
def test_aeon_datasets_is_aeons_data_folder() -> None:
    # softdtw_torch.datasets.aeon_datasets_dir finds the folder without importing aeon; it must be
    # the one aeon's loaders read.
    aeon_datasets = pytest.importorskip("aeon.datasets")
    expected = os.path.join(os.path.dirname(aeon_datasets.__file__), "data")
    assert os.path.samefile(AEON_DATASETS, expected)


@needs_aeon_data
@pytest.mark.parametrize("split", ["TRAIN", "TEST"])
@pytest.mark.parametrize("folder, stem", AEON_FILES, ids=[stem for _, stem in AEON_FILES])
def test_load_ts_reads_what_aeon_reads(folder: str, stem: str, split: str) -> None:
    path = AEON / folder / f"{stem}_{split}.ts"
    X_aeon, y_aeon = _aeon_load(path)
    X, y = load_ts(path)
    _assert_same_series(X, X_aeon)
    _assert_same_labels(y, y_aeon)


@needs_aeon_data
def test_multivariate_basic_motions() -> None:
    path = AEON / "BasicMotions" / "BasicMotions_TRAIN.ts"
    lines = _data_lines(path)
    # Independent parse: every field but the last (the label) is one channel.
    n_channels_parsed = len(lines[0].split(":")) - 1
    declared = _header_value(path, "dimensions")
    expected = int(declared) if declared is not None else n_channels_parsed
    assert expected == n_channels_parsed == 6

    X, y = load_ts(path)
    assert isinstance(X, np.ndarray) and y is not None
    assert X.shape == (len(lines), expected, 100)
    assert set(y.tolist()) == {"Standing", "Running", "Walking", "Badminton"}
    # The second channel's first value, read straight from the text.
    assert X[0, 1, 0] == float(lines[0].split(":")[1].split(",")[0])
    # And everything as aeon's own loader reads it.
    X_aeon, y_aeon = _aeon_load(path)
    _assert_same_series(X, X_aeon)
    _assert_same_labels(y, y_aeon)


@needs_aeon_data
def test_unequal_length_aeon_file() -> None:
    path = AEON / "JapaneseVowels" / "JapaneseVowels_TRAIN.ts"
    lines = _data_lines(path)
    X, y = load_ts(path)
    assert isinstance(X, list) and y is not None
    assert len(X) == len(y) == len(lines)
    assert all(x.shape[0] == 12 for x in X)
    assert len({x.shape[1] for x in X}) > 1
    X_aeon, y_aeon = _aeon_load(path)
    assert isinstance(X_aeon, list)
    _assert_same_series(X, X_aeon)
    _assert_same_labels(y, y_aeon)


@needs_aeon_data
def test_percent_comments_are_skipped() -> None:
    # aeon's UnitTest files open with ARFF-style '%' comment lines.
    path = AEON / "UnitTest" / "UnitTest_TRAIN.ts"
    assert path.read_text(encoding="utf-8").lstrip().startswith("%")
    X, y = load_ts(path)
    assert isinstance(X, np.ndarray) and X.shape == (20, 1, 24)
    X_aeon, y_aeon = _aeon_load(path)
    _assert_same_series(X, X_aeon)
    _assert_same_labels(y, y_aeon)


# --- Synthetic files ---------------------------------------------------------------------------

def test_unequal_length_returns_list(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "# two cases of different lengths\n"
        "@problemName tiny\n@univariate false\n@dimensions 2\n@equalLength false\n"
        "@classLabel true a b\n@data\n"
        "1,2,3:4,5,6:a\n"
        "7,8:9,10:b\n",
    )
    X, y = load_ts(path)
    assert isinstance(X, list) and len(X) == 2
    np.testing.assert_array_equal(X[0], [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(X[1], [[7, 8], [9, 10]])
    assert X[0].dtype == np.float64
    assert y is not None and y.tolist() == ["a", "b"]


def test_missing_values_are_nan(tmp_path: Path) -> None:
    path = _write(tmp_path, "@classLabel true x\n@data\n1,?,3:x\n?,5,6:x\n")
    X, _ = load_ts(path)
    assert isinstance(X, np.ndarray) and X.shape == (2, 1, 3)
    assert np.isnan(X[0, 0, 1]) and np.isnan(X[1, 0, 0])
    assert X[0, 0, 2] == 3.0


def test_unlabelled_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "@classLabel false\n@data\n1,2:3,4\n5,6:7,8\n")
    X, y = load_ts(path)
    assert y is None
    assert isinstance(X, np.ndarray) and X.shape == (2, 2, 2)


@pytest.mark.parametrize(
    "text, match",
    [
        ("@problemName x\n@classLabel true a\n", "no '@data' line"),
        ("@classLabel true a\n1,2:a\n", r"line 2: .*is the '@data' line missing\?"),
        ("@classLabel true a\n@data\n", "no cases"),
        ("@classLabel true a\n@data\n1,x,3:a\n", r"line 3: expected a number or '\?', got 'x'"),
        ("@classLabel true a\n@data\n1,2,3\n", "found no ':'"),
        ("@classLabel true a\n@data\n1,2:a\n1,2:3,4:a\n", "line 4: expected 1 channels"),
        ("@classLabel true a\n@data\n1,2:3:a\n", "same length"),
        ("@dimensions 2\n@classLabel true a\n@data\n1,2:a\n", "@dimensions 2"),
        ("@classLabel true a b\n@data\n1,2:c\n", "not among the declared class labels"),
        ("@seriesLength 3\n@classLabel true a\n@data\n1,2:a\n", "@seriesLength 3"),
        ("@timeStamps true\n@classLabel true a\n@data\n(0,1),(1,2):a\n", "not supported"),
        ("oops\n@data\n1,2:a\n", "line 1: expected a '@' header line"),
    ],
)
def test_malformed_files_raise(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_ts(_write(tmp_path, text))


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_ts(tmp_path / "nope.ts")
