"""The documentation site (docs/: the user guide in MyST markdown, the gallery run from
examples/gallery, and the API reference, Sphinx autodoc of the real package, nothing mocked) builds
with no warning, nitpicky references included; every gallery example ran and left a rendered
figure; the API reference documents every public name.

This is how CI builds it: CI runs the whole test suite. Locally:
``python -m sphinx -W --keep-going -b html docs build/docs`` (CONTRIBUTING.md, "Documentation").
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import softdtw_torch
import softdtw_torch.datasets
import softdtw_torch.rocket

# slow: a Sphinx build of the site, the gallery's examples run (about 1-2 min)
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("sphinx", reason="sphinx is not installed (requirements-dev.txt installs it)")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs-html")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(REPO / "docs"), str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=900)
    return result, out


def test_site_builds_without_warnings(build):
    result, out = build
    # -W turns every warning into a failing exit status; --keep-going reports all of them at once.
    assert result.returncode == 0, f"sphinx failed:\n{result.stderr[-8000:]}\n{result.stdout[-2000:]}"
    assert "WARNING" not in result.stderr and "ERROR" not in result.stderr, result.stderr
    assert (out / "index.html").is_file()
    # The sections a newcomer looks for.
    for page in ("getting_started", "installation", "user_guide/index", "guarantees", "performance",
                 "coming_from/tslearn", "coming_from/aeon", "coming_from/pysdtw", "api/index", "auto_examples/index"):
        assert (out / f"{page}.html").is_file(), page


def test_every_gallery_example_ran_and_rendered_its_figures(build):
    _, out = build
    examples = sorted((REPO / "examples" / "gallery").glob("plot_*.py"))
    assert len(examples) >= 4
    for example in examples:
        page = out / "auto_examples" / f"{example.stem}.html"
        assert page.is_file(), example.name
        # sphinx-gallery writes the figures an example leaves open as sphx_glr_<name>_NNN.png.
        figures = list((out / "_images").glob(f"sphx_glr_{example.stem}_[0-9][0-9][0-9].png"))
        assert figures, f"{example.name}: no rendered figure"
        assert all(f.stat().st_size > 10_000 for f in figures), figures


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
    for page in (out / "api").glob("*.html"):
        anchors |= set(re.findall(r'id="(softdtw_torch[\w.]*)"', page.read_text(encoding="utf-8")))
    names = _public_names()
    assert len(names) > 25  # not vacuous: the package's, datasets' and rocket's public names
    missing = [n for n in names if not any(a.rsplit(".", 1)[-1] == n for a in anchors)]
    assert not missing, f"public names missing from docs/api: {missing}"
