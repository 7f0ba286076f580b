"""The documentation's claims point to the tests and benchmarks that show them, and the pointers do not rot.

- every ``tests/<path>.py::<test>`` named in README.md, a page of the documentation site (docs/,
  the design notes excepted), benchmarks/README.md or a docstring of the package names an existing
  file that defines that test function, and every ``tests/...py`` or ``benchmarks/...py`` named
  there exists;
- every row of the "Behaviour, chosen and tested" table of docs/guarantees.md has a non-empty
  "how we know" cell that points to a test or a benchmark, and so does every item of its
  "What you get".

The claims themselves are checked by the tests pointed to (e.g. tests/softdtw/test_ragged.py,
tests/softdtw/test_memory.py, tests/rocket/test_rocket.py), which fail when a stated exactness
or bound stops holding.
"""
import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
GUARANTEES = REPO / "docs" / "guarantees.md"
SITE_PAGES = sorted(p for p in (REPO / "docs").rglob("*.md")
                    if not {"design", "auto_examples"} & set(p.relative_to(REPO / "docs").parts))
DOCUMENTS = [README, *SITE_PAGES, REPO / "benchmarks" / "README.md", *sorted((REPO / "softdtw_torch").rglob("*.py")),
             *sorted((REPO / "examples" / "gallery").glob("*.py"))]

TEST_POINTER = re.compile(r"\b(tests/[\w/]+\.py)::(\w+)")
FILE_POINTER = re.compile(r"(?<![\w/.])((?:tests|benchmarks)/[\w/]+\.py)\b")
POINTER = re.compile(r"\b(?:tests|benchmarks)/[\w/]+\.py")


def _functions(path: Path) -> set:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _test_pointers():
    found = []
    for doc in DOCUMENTS:
        for path, name in TEST_POINTER.findall(doc.read_text(encoding="utf-8")):
            found.append((doc.relative_to(REPO).as_posix(), path, name))
    return found


def test_guarantees_page_has_test_pointers():
    # The check below is not vacuous: the guarantees page names many tests.
    assert sum(1 for doc, _, _ in _test_pointers() if doc == "docs/guarantees.md") >= 30


@pytest.mark.parametrize("doc,path,name", sorted(set(_test_pointers())))
def test_every_test_pointer_names_an_existing_test(doc, path, name):
    file = REPO / path
    assert file.is_file(), f"{doc} points to {path}::{name}, but {path} does not exist"
    assert name.startswith("test_"), f"{doc} points to {path}::{name}, which is not a test"
    assert name in _functions(file), f"{doc} points to {path}::{name}, but {path} defines no {name}"


def test_every_file_pointer_exists():
    missing = []
    for doc in DOCUMENTS:
        for path in FILE_POINTER.findall(doc.read_text(encoding="utf-8")):
            if not (REPO / path).is_file():
                missing.append(f"{doc.relative_to(REPO).as_posix()}: {path}")
    assert not missing, missing


def _cells(row: str) -> list:
    # Split a markdown table row on the pipes that are not escaped (\| inside a cell).
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def _behaviour_table():
    lines = GUARANTEES.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Behaviour, chosen and tested") + 1
    while not lines[start].startswith("|"):
        start += 1
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    table = lines[start:end]
    return _cells(table[0]), [_cells(r) for r in table[2:]]


def test_behaviour_table_has_a_how_we_know_cell_in_every_row():
    header, rows = _behaviour_table()
    assert header == ["topic", "behaviour", "how we know"]
    assert len(rows) >= 10
    for row in rows:
        assert len(row) == 3, row
        topic, behaviour, how = row
        assert topic and behaviour, row
        assert POINTER.search(how), f"behaviour table, row {topic!r}: no test or benchmark in 'how we know'"


def test_what_you_get_items_say_how_we_know():
    text = GUARANTEES.read_text(encoding="utf-8")
    block = text.split("## What you get\n", 1)[1].split("\n## ", 1)[0]
    items = [i for i in re.split(r"\n- ", "\n" + block.strip()) if i.strip()]
    assert len(items) >= 5
    for item in items:
        if "**Parallel CPU kernel.**" in item:  # how the kernel works, not a measurable claim
            continue
        assert "how we know" in item and POINTER.search(item), f"no 'how we know' in: {item[:80]}"
