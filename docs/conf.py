"""Sphinx configuration of the documentation site: the user guide (MyST markdown), the gallery
(sphinx-gallery, run from examples/gallery at every build) and the API reference (autodoc of the
real package, extension included: nothing is mocked, so the reference documents what is installed).

Build: ``python -m sphinx -W --keep-going -b html docs build/docs`` (tests/infra/test_docs.py runs it,
so any warning fails the test suite; CONTRIBUTING.md, "Documentation"). ``docs/design/`` holds the
design notes; they are read in the repository, not built into the site.
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)

import softdtw_torch  # noqa: E402

project = "softdtw-torch"
author = "The softdtw-torch contributors"
copyright = "2026, The softdtw-torch contributors"
release = version = softdtw_torch.__version__

extensions = [
    "sphinx.ext.autodoc",
    # The docstrings are NumPy style (Parameters, Returns, Raises, Examples).
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# design/: the design notes, read in the repository; *_src: nothing (a guard for stray drafts).
exclude_patterns = ["_build", "design", "**/README.md", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5"]
root_doc = "index"

html_theme = "pydata_sphinx_theme"
html_title = f"softdtw-torch {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []

# MyST: headings get anchors (links such as [Derivatives](derivatives.md#derivatives)), and $...$
# math and ::: fences read as in the user guide.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "dollarmath"]

# The gallery: every script of examples/gallery runs at each build, and the figures it leaves open
# are rendered into its page.
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(ROOT, "examples", "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "show_memory": False,
    "reset_modules": ("matplotlib",),
    "image_scrapers": ("matplotlib",),
}

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

# Links into torch, numpy and scikit-learn's documentation: their inventories are fetched when
# SOFTDTW_TORCH_DOCS_ONLINE=1 (the published build). The test suite builds offline (CI's machines
# reach the package index only), so there the mapping is empty and references to those projects
# stay plain text (nitpick_ignore_regex below).
intersphinx_mapping = {}
if os.environ.get("SOFTDTW_TORCH_DOCS_ONLINE") == "1":
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "torch": ("https://docs.pytorch.org/docs/stable", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
    }

# Every cross-reference must resolve, so that a renamed function or a typo in :func:`...` fails the
# build. References into torch, numpy, scikit-learn and the standard library (os.PathLike) are
# exempt offline, with the private modules that docstrings name for readers of the source.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(torch|numpy|np|sklearn|os|matplotlib|dask|distributed)(\..*)?"),
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
