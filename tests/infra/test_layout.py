"""The code's layout rules (CONTRIBUTING.md, "Layout"), read from the sources and the built
objects: no import cycle among the Python package's modules, lazy imports inside functions
included; no op family's C++ includes another family's files (what families share is in
csrc/common/, which includes no family); no device-agnostic C++ file of a family (problem.cpp,
composite.cpp, autograd.cpp, fit.cpp, plan.cpp) calls a function of its CPU or CUDA kernels; the
SoftDTW options travel as one bundle (csrc/softdtw/args.h), spelled out only where the public
ops' argument order requires it; SoftDTW's op bodies are written once (csrc/softdtw/bodies.h), the
device engines only compute."""
import ast
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Set

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "softdtw_torch"
CSRC = REPO / "csrc"
SOURCE_SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}


def _modules() -> Dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not "__init__")."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that module ``name`` imports anywhere in its body: ``from X import y``
    counts as an import of ``X.y`` when that is a module, else of ``X``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    found.add(f"{target}.{alias.name}")
                elif target in modules:
                    found.add(target)
    return found - {name}


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_sees_lazy_and_relative_imports():
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    # a lazy import inside a function (barycenter's SoftDTWKMeans), relative imports of a module and
    # of a name, from a subpackage one level up
    assert "softdtw_torch.clustering" in graph["softdtw_torch.barycenter"]
    assert "softdtw_torch._fake" in graph["softdtw_torch._ops"]
    assert "softdtw_torch._extension" in graph["softdtw_torch._fake.hydra"]
    assert "softdtw_torch._fake.minirocket" in graph["softdtw_torch._fake.multirocket"]


def test_no_import_cycle_in_the_package():
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


# --- C++: families and csrc/common ---

def _families() -> List[str]:
    """An op family is a folder of csrc/ with its ops' signatures (ops.h)."""
    return sorted(p.parent.name for p in CSRC.glob("*/ops.h"))


def _included_folders(folder: Path) -> Dict[str, Set[str]]:
    """For each source file under ``folder``: the first path component (below csrc/) of every file
    it includes with quotes, resolved from the including file's folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES:
            continue
        tops = set()
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M):
            target = (path.parent / name).resolve()
            assert target.is_file(), f"{path.relative_to(REPO)} includes {name}, which does not exist"
            tops.add(target.relative_to(CSRC).parts[0])
        found[path.relative_to(CSRC).as_posix()] = tops
    return found


def test_the_families_are_the_op_folders():
    assert _families() == ["hydra", "minirocket", "multirocket", "rocket", "softdtw"]


def test_the_include_reader_resolves_relative_paths():
    # minirocket's CUDA ops read MiniRocket's shared problem two folders up, in common/, and their
    # engine beside them
    assert _included_folders(CSRC / "minirocket")["minirocket/cuda/transform_ops.h"] == {"common", "minirocket"}


def test_no_family_includes_a_sibling():
    for family in _families():
        for source, tops in _included_folders(CSRC / family).items():
            assert tops <= {family, "common"}, f"csrc/{source} includes files of {sorted(tops - {family, 'common'})}"


def test_common_includes_no_family():
    for source, tops in _included_folders(CSRC / "common").items():
        assert tops <= {"common"}, f"csrc/{source} includes files of {sorted(tops - {'common'})}"


# --- C++: the SoftDTW argument bundle ---

# A parameter of the bundle's, spelled out (the flat form): `bandwidth` stands for the bundle.
_FLAT_BANDWIDTH = re.compile(r"(?:std::optional<int64_t>|OptInt)\s+bandwidth\b")


def _flat_bundles(text: str) -> int:
    return len(_FLAT_BANDWIDTH.findall(text))


def _library_text() -> str:
    """library.cpp with the SoftDTW bundle's schema text (the SOFTDTW_TORCH_*_SCHEMA macros of
    softdtw/args.h, string literals) written out where the private schemas name it."""
    text = (CSRC / "library.cpp").read_text()
    macros = dict(re.findall(r"#define (SOFTDTW_TORCH_\w+_SCHEMA) (.+)", (CSRC / "softdtw" / "args.h").read_text()))
    for _ in macros:  # a macro's text may name another
        for name, value in macros.items():
            text = re.sub(rf"\b{name}\b", lambda _: value, text)
    return text


def _softdtw_ops(public: bool) -> List[str]:
    """The public (no leading underscore) or private ops whose schema takes a bandwidth."""
    literal = r'"(?:[^"\\]|\\.)*"'  # a C++ string literal, escaped quotes included
    schemas = re.findall(rf"m\.def\(\s*((?:{literal}\s*)+)\)", _library_text())
    texts = ["".join(piece[1:-1] for piece in re.findall(literal, schema)) for schema in schemas]
    return [t.split("(")[0] for t in texts if t.startswith("_") != public and "int? bandwidth" in t]


def _public_softdtw_ops() -> List[str]:
    return _softdtw_ops(public=True)


def test_the_bundle_reader_sees_flat_lists():
    assert _flat_bundles("f(double gamma, std::optional<int64_t> bandwidth, OptInt  bandwidth)") == 2
    assert _flat_bundles("g(const ProblemArgs& args)") == 0
    assert "soft_dtw" in _public_softdtw_ops() and "dilate" in _public_softdtw_ops()


def test_private_softdtw_schemas_take_the_bundle_in_one_place():
    # args.h derives each private op's flat signature from (tensors, bundle, options) and the fakes
    # find the bundle by these names, so every private SoftDTW schema must list it contiguously,
    # in this order (_dtw_path without gamma), from args.h's schema text. The dispatcher checks the
    # types at load; this, the names.
    import torch

    import softdtw_torch  # noqa: F401  (registers the ops)

    bundle = ["gamma", "bandwidth", "itakura_max_slope", "x_lengths", "y_lengths"]
    private = _softdtw_ops(public=False)
    assert "_soft_dtw_fused_backward" in private and "_dtw_path" in private
    # Their text is args.h's (SOFTDTW_TORCH_BUNDLE_SCHEMA): only the public schemas spell it out.
    assert (CSRC / "library.cpp").read_text().count("int? bandwidth") == len(_public_softdtw_ops())
    for name in private:
        names = [a.name for a in getattr(torch.ops.softdtw_torch, name).default._schema.arguments]
        want = bundle if "gamma" in names else bundle[1:]
        first = names.index(want[0])
        assert names[first:first + len(want)] == want, f"{name}: {names}"


def test_the_softdtw_options_travel_as_one_bundle():
    # Private ops, their bodies and autograd take ProblemArgs; the flat list is spelled out only
    # for the public ops (by hand: one kernel each in composite.cpp; written from the schemas by
    # scripts/generate_cpp_api.py: their handles in ops.h, their declarations and definitions in
    # the C++ API), by the C++ loss modules' options, in args.h (the flat forms) and in the window's
    # own check.
    public = len(_public_softdtw_ops())
    allowed = {"softdtw/ops.h": public, "softdtw/composite.cpp": public, "softdtw_torch.h": public, "api.cpp": public,
               "softdtw_torch_nn.h": 3, "softdtw/args.h": 3, "softdtw/problem.h": 1, "softdtw/problem.cpp": 1}
    sources = [p for p in CSRC.rglob("*") if p.suffix in SOURCE_SUFFIXES]
    sources.append(REPO / "tests" / "cuda_emu" / "emulated_ops.cpp")
    for path in sources:
        name = path.relative_to(CSRC).as_posix() if path.is_relative_to(CSRC) else path.name
        found = _flat_bundles(path.read_text())
        assert found <= allowed.get(name, 0), (
            f"{name} spells out the SoftDTW options {found} times (at most {allowed.get(name, 0)}): take "
            "`const ProblemArgs& args` (csrc/softdtw/args.h) and register with Bundled::kernel")


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate_cpp_api", REPO / "scripts" / "generate_cpp_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_public_softdtw_signatures_are_written_from_their_schemas():
    # ops.h's handles, softdtw_torch.h's declarations and api.cpp's definitions of the public
    # SoftDTW ops are what scripts/generate_cpp_api.py writes from library.cpp's schemas.
    generator = _generator()
    assert set(generator.OPS) == set(_public_softdtw_ops()) | {"pairwise_cost"}
    stale = [path.relative_to(REPO).as_posix() for path, _ in generator.stale(REPO)]
    assert not stale, f"{stale} differ from the schemas: run python scripts/generate_cpp_api.py"


def test_the_generator_follows_a_changed_schema(tmp_path):
    # A new default and a new option in one schema reach the header, the definitions and the handle.
    generator = _generator()
    for name in ("library.cpp", "softdtw_torch.h", "api.cpp", "softdtw/ops.h"):
        (tmp_path / "csrc" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CSRC / name, tmp_path / "csrc" / name)
    library = tmp_path / "csrc" / "library.cpp"
    old = "soft_dtw_fused(Tensor x, Tensor y, float gamma=1.0, int? bandwidth=None, "
    assert old in library.read_text()
    library.write_text(library.read_text().replace(
        old, "soft_dtw_fused(Tensor x, Tensor y, float gamma=2.5, int? bandwidth=None, bool? planted=None, "))
    outdated = dict(generator.stale(tmp_path))
    assert sorted(p.name for p in outdated) == ["api.cpp", "ops.h", "softdtw_torch.h"]

    def words(path: Path, start: str, end: str) -> str:  # the text from start to end, spaces collapsed
        return " ".join(outdated[tmp_path / "csrc" / path].split(start)[1].split(end)[0].split())

    assert words("softdtw_torch.h", "soft_dtw_fused(", ";") == (
        "const at::Tensor& x, const at::Tensor& y, double gamma = 2.5, std::optional<int64_t> bandwidth = "
        "std::nullopt, std::optional<bool> planted = std::nullopt, const OptionalTensor& x_lengths = std::nullopt, "
        "const OptionalTensor& y_lengths = std::nullopt, bool checkpoint = false, std::optional<double> "
        "itakura_max_slope = std::nullopt)")
    assert words("api.cpp", "sdtw_ops::soft_dtw_fused(", ";") == (
        "x, y, gamma, bandwidth, planted, x_lengths, y_lengths, checkpoint, itakura_max_slope)")
    assert words("softdtw/ops.h", 'soft_dtw{"softdtw_torch::soft_dtw"};', "soft_dtw_fused{").endswith(
        "double gamma, OptInt bandwidth, std::optional<bool> planted, const OptTensor& x_lengths, "
        "const OptTensor& y_lengths, bool checkpoint, OptDouble itakura_max_slope)>")
    # A type the mapping does not know is refused, naming the op and the argument.
    library.write_text(library.read_text().replace("bool? planted=None", "Scalar planted"))
    with pytest.raises(ValueError, match="soft_dtw_fused: unexpected argument 'Scalar planted'"):
        generator.stale(tmp_path)


# --- C++: SoftDTW's op bodies are written once, over a device engine ---

# What only an op body does (csrc/softdtw/bodies.h): validate the inputs, parse the memory plan's
# option, refuse invalid values, recompute a backward's table through the engine.
_BODY_ONLY = re.compile(r"\b(prepare_\w+|finish_forward|fused_cache_named|check_pair_weights|checked_itakura_lengths"
                        r"|recomputed_table)\s*\(")


def _body_only_calls(text: str) -> List[str]:
    code = re.sub(r"//[^\n]*", "", text)  # comments may name them
    return _BODY_ONLY.findall(code)


def test_the_body_call_reader_sees_calls_not_comments():
    assert _body_only_calls("// prepare_fused(x)\nconst auto in = prepare_fused(x, y, args);") == ["prepare_fused"]
    assert _body_only_calls("  finish_forward (op, out, dtype, what);") == ["finish_forward"]
    assert _body_only_calls("// errors left to finish_forward (by the op)") == []


def test_softdtw_engines_leave_validation_and_errors_to_the_bodies():
    # The CPU engine (cpu/) and the tile engine (cuda/, which the emulator runs) compute on
    # validated inputs; a body that validated on one device only would let the devices' messages drift.
    engines = sorted(p for folder in ("cpu", "cuda") for p in (CSRC / "softdtw" / folder).iterdir())
    assert any(p.name == "tiles_ops.h" for p in engines) and any(p.name == "kernel.cpp" for p in engines)
    for path in engines:
        found = _body_only_calls(path.read_text())
        assert not found, f"csrc/softdtw/{path.parent.name}/{path.name} calls {found}: the op bodies' (bodies.h)"


# --- C++: the device-agnostic files call no device code ---

def _built_objects() -> Dict[str, Path]:
    """The in-place build's object of each csrc/ source that still exists, by its path below csrc/
    without the suffix ("softdtw/composite", "softdtw/cpu/kernel")."""
    objects = {}
    for root in sorted((REPO / "build").glob("temp.*/csrc")):
        for obj in root.rglob("*.o"):
            rel = obj.relative_to(root).with_suffix("")
            if any((CSRC / rel).with_suffix(suffix).is_file() for suffix in (".cpp", ".cu")):
                objects[rel.as_posix()] = obj
    return objects


def _symbols(obj: Path, which: str) -> Set[str]:
    """The demangled names of the library's functions (namespace softdtw_torch) that ``obj``
    defines (which="defined") or calls without defining them (which="undefined")."""
    out = subprocess.run(["nm", "-C", f"--{which}-only", str(obj)], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        name = line.split(maxsplit=2)[-1] if which == "defined" else line.split(maxsplit=1)[-1]
        if name.startswith("softdtw_torch::") and "(anonymous namespace)" not in name:
            names.add(name)
    return names


@pytest.fixture(scope="module")
def objects():
    if shutil.which("nm") is None:
        pytest.skip("needs binutils' nm")
    found = _built_objects()
    if not any(name.endswith("/cpu/kernel") for name in found):
        pytest.skip("needs the in-place build's objects (build/temp.*/csrc; scripts/env.sh builds them)")
    return found


def _is_device_code(name: str) -> bool:
    return len(name.split("/")) == 3 and name.split("/")[1] in ("cpu", "cuda")


def _is_device_agnostic(name: str) -> bool:
    return len(name.split("/")) == 2 and name.split("/")[0] in _families()


def test_the_symbol_reader_sees_kernels_calling_the_validation(objects):
    # the other direction is allowed and exists: the CPU kernels call problem.cpp's validation
    assert _symbols(objects["softdtw/cpu/kernel"], "undefined") & _symbols(objects["softdtw/problem"], "defined")


def test_device_agnostic_files_call_no_device_code(objects):
    device_defined = {}
    for name, obj in objects.items():
        if _is_device_code(name):
            for symbol in _symbols(obj, "defined"):
                device_defined[symbol] = name
    agnostic = [name for name in objects if _is_device_agnostic(name)]
    assert "softdtw/composite" in agnostic and "hydra/fit" in agnostic
    for name in agnostic:
        calls = {symbol: device_defined[symbol] for symbol in _symbols(objects[name], "undefined")
                 if symbol in device_defined}
        assert not calls, f"csrc/{name} calls device code: {calls}"
