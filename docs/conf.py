"""Sphinx configuration of the API reference, built from the package's docstrings.

Build: ``python -m sphinx -W --keep-going -b html docs/api build/api-docs`` (tests/infra/test_api_docs.py
runs it, so any warning fails the test suite). The real package is imported, extension included:
nothing is mocked, so the reference documents what is installed.
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)

import softdtw_torch  # noqa: E402

project = "softdtw-torch"
author = "The softdtw-torch contributors"
copyright = "2026, The softdtw-torch contributors"
release = version = softdtw_torch.__version__

extensions = [
    "sphinx.ext.autodoc",
    # The docstrings are Google style (Args:, Returns:, Raises:); MiniRocket's is NumPy style.
    "sphinx.ext.napoleon",
]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"softdtw-torch {release} API reference"

autodoc_member_order = "bysource"
# Public methods without a docstring of their own (forward, transform) are listed with their
# signature; extra_repr is nn.Module's hook for repr(), not API.
autodoc_default_options = {"undoc-members": True, "exclude-members": "extra_repr"}
# Signatures show the annotations; the docstrings say the shapes, devices and dtypes.
autodoc_typehints = "signature"
# No scikit-learn or torch docstring shown as if it were ours for a method we override silently.
autodoc_inherit_docstrings = False
# NumPy-style types ("int, default 32", "None, int or numpy.random.RandomState") become
# references and literals rather than one unresolvable class name.
napoleon_preprocess_types = True

# Every cross-reference must resolve, so that a renamed function or a typo in :func:`...` fails the
# build. References into torch, numpy, scikit-learn and the standard library (os.PathLike) cannot
# resolve here (no intersphinx: the build must not need the network), so those alone are exempt,
# with the private modules that docstrings name for readers of the source.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(torch|numpy|np|sklearn|os)(\..*)?"),
    (r"py:mod", r"softdtw_torch(\.\w+)*\._\w+"),
]


def skip_foreign_members(app, what, name, obj, skip, options):
    """Leaves out what a class gets from scikit-learn (the set_*_request methods of its metadata
    routing): their docstrings are written for scikit-learn's own reference."""
    if (getattr(obj, "__module__", None) or "").split(".")[0] == "sklearn":
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_foreign_members)
