"""The ``Examples`` of the public docstrings run, and pass, as doctests; and every public name has one.

Public names: what each public module lists in ``__all__`` and defines itself (a re-export is
tested where it is defined: ``softdtw_torch.aeon`` re-exports the ROCKET family of
``softdtw_torch.rocket``), plus the names the package defines in private modules and exports
(``info``, ``release_table_memory``, ``lb_keogh`` ...). Every docstring with examples in those
modules is collected (methods and private bases' methods included), one test per docstring, so that
a failing example names its object and no single case nears the test budget (tests/budget.py).

Each docstring's examples run in a fresh namespace with ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``,
as ``python -m doctest`` would run them; they import what they use themselves, run on the CPU on
tiny inputs with fixed seeds, and print shapes, dtypes, booleans and rounded values only, so that
their output is the same on every machine. The plotting examples draw with matplotlib's Agg
backend; ``HydraTransformer.from_aeon``'s imports aeon (both in requirements-dev.txt).
"""
import doctest
import importlib
import inspect
import sys

import pytest

# The public modules, each checked for its own names.
MODULES = [
    "softdtw_torch",
    "softdtw_torch.functional",
    "softdtw_torch.metrics",
    "softdtw_torch.barycenter",
    "softdtw_torch.clustering",
    "softdtw_torch.neighbors",
    "softdtw_torch.nn",
    "softdtw_torch.datasets",
    "softdtw_torch.plot",
    "softdtw_torch._memory",
    "softdtw_torch.rocket._rocket",
    "softdtw_torch.rocket._minirocket",
    "softdtw_torch.rocket._multirocket",
    "softdtw_torch.rocket._hydra",
    "softdtw_torch.rocket._kernels",
    "softdtw_torch.rocket._classifier",
    "softdtw_torch.rocket._scalers",
    "softdtw_torch.rocket._ridge",
    "softdtw_torch.rocket._regressor",
    "softdtw_torch.tslearn",
    "softdtw_torch.aeon",
    "softdtw_torch.pysdtw",
    "softdtw_torch.pysdtw.distance",
    "softdtw_torch.soft_dtw_cuda",
    "softdtw_torch.distributed",
    "softdtw_torch.dask",
]

# Names a public module exports from a private module of the package, whose examples it owns.
PRIVATE_HOMES = {
    "softdtw_torch": ("softdtw_torch._info", "softdtw_torch._base", "softdtw_torch._memory"),
    "softdtw_torch.metrics": ("softdtw_torch._lower_bounds",),
}


def _owned(module):
    """(name, object) of each function or class in ``module.__all__`` that the module defines, or
    exports from one of its private homes."""
    homes = (module.__name__,) + PRIVATE_HOMES.get(module.__name__, ())
    owned = []
    for name in module.__all__:
        obj = getattr(module, name)
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", None) in homes:
            owned.append((name, obj))
    return owned


def _collect():
    """(the doctests to run, by name; for each module, its public names and whether each one's own
    docstring has examples)."""
    finder = doctest.DocTestFinder()
    tests, seen = {}, set()

    def add(found):
        for test in found:
            key = (test.filename, test.lineno, test.docstring)
            if test.examples and key not in seen:
                seen.add(key)
                tests[test.name] = test

    public = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        add(finder.find(module))
        public[module_name] = {}
        for name, obj in _owned(module):
            qualified = f"{module_name}.{name}"
            found = finder.find(obj, qualified, module=sys.modules[obj.__module__])
            add(found)  # a name defined in a private module is found here, under its public name
            public[module_name][qualified] = any(t.name == qualified and t.examples for t in found)
    return tests, public


TESTS, PUBLIC = _collect()


def test_every_public_name_has_an_example():
    names = {name: has for names in PUBLIC.values() for name, has in names.items()}
    assert len(names) > 60  # not vacuous: the modules' own public functions and classes
    missing = [name for name, has in names.items() if not has]
    assert not missing, f"public names without an Examples section that runs as a doctest: {missing}"
    for module_name, names in PUBLIC.items():
        assert names, f"{module_name} defines none of the names its __all__ lists"


@pytest.mark.parametrize("name", sorted(TESTS))
def test_docstring_examples_pass(name):
    test = TESTS[name]
    test.globs = {"__name__": "__doctest__"}  # a fresh namespace: each example imports what it uses
    report = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    try:
        result = runner.run(test, out=report.append)
    finally:
        if "matplotlib.pyplot" in sys.modules:  # figures the plotting examples opened
            sys.modules["matplotlib.pyplot"].close("all")
    assert result.attempted > 0
    assert result.failed == 0, "".join(report)
