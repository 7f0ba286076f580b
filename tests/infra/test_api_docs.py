"""The API reference (docs/api: Sphinx autodoc of the real package, nothing mocked) builds from the
docstrings with no warning, nitpicky references included, and documents every public name.

This is how CI builds it: CI runs the whole test suite. Locally:
``python -m sphinx -W --keep-going -b html docs/api build/api-docs`` (about 5 s).
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import softdtw_torch
import softdtw_torch.datasets
import softdtw_torch.rocket

# slow: a Sphinx build of the API reference (10-50 s)
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("sphinx", reason="sphinx is not installed (requirements-dev.txt installs it)")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("api-html")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(REPO / "docs" / "api"), str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    return result, out


def test_api_reference_builds_without_warnings(build):
    result, out = build
    # -W turns every warning into a failing exit status; --keep-going reports all of them at once.
    assert result.returncode == 0, f"sphinx failed:\n{result.stderr[-8000:]}\n{result.stdout[-2000:]}"
    assert "WARNING" not in result.stderr and "ERROR" not in result.stderr, result.stderr
    assert (out / "index.html").is_file()


def _public_names():
    rocket = [n for n in dir(softdtw_torch.rocket)
              if not n.startswith("_") and getattr(getattr(softdtw_torch.rocket, n), "__module__", "")
              .startswith("softdtw_torch.rocket")]
    names = [n for n in softdtw_torch.__all__] + softdtw_torch.datasets.__all__ + rocket
    return sorted(set(names))


def test_every_public_name_is_documented(build):
    _, out = build
    # An object documented by autodoc gets an HTML anchor named by its full dotted path.
    anchors = set()
    for page in out.glob("*.html"):
        anchors |= set(re.findall(r'id="(softdtw_torch[\w.]*)"', page.read_text(encoding="utf-8")))
    names = _public_names()
    assert len(names) > 25  # not vacuous: the package's, datasets' and rocket's public names
    missing = [n for n in names if not any(a.rsplit(".", 1)[-1] == n for a in anchors)]
    assert not missing, f"public names missing from docs/api: {missing}"
