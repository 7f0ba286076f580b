"""Every fenced code block of README.md and of the documentation site's pages (docs/**/*.md, the
design notes excepted) is run, checked, or says why not.

The conventions (also in CONTRIBUTING.md, "Code blocks in README.md and the docs pages"); a marker is an HTML comment on the
last non-blank line before the opening fence, so it does not show on the rendered page:

- every fence names its language (```python, ```bash, ```text, ...);
- ```python blocks run, each as its own program, in a fresh interpreter (this test's Python, in an
  empty temporary folder, with the repository on PYTHONPATH) and must exit with status 0.
  ``<!-- continues -->`` before a block appends it to the previous python block's program, so a
  block may use the names an earlier one defined; any other block must define what it uses;
- a ```text block whose first line is ``$ python ...`` is a transcript of ``key: value`` lines:
  the command is run and must print the same keys in the same order (the values are the
  machine's own);
- any other block (shell commands that install or build, output listings, file maps, C++) carries
  ``<!-- not executed: REASON -->``, the reason saying why it cannot run here and what covers it
  instead. A block with neither a runner nor a reason fails this test, so none is skipped silently.
"""
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
# The site's pages; not the design notes (read in the repository) nor what the build generates.
DOCUMENTS = [README, *sorted(p for p in (REPO / "docs").rglob("*.md")
                             if not {"design", "auto_examples"} & set(p.relative_to(REPO / "docs").parts))]

# A language, or a MyST directive in braces ({toctree}, {include}: markup of the site, not code).
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*|\{[\w-]+\}(?=\s|$))(?:\s.*)?$")
MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")
NOT_EXECUTED = re.compile(r"^not executed:\s*(.*)$", re.DOTALL)
KEY = re.compile(r"^(\w+):")


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    marker: Optional[str]  # the text of the HTML comment right above the fence, if any
    document: str = "README.md"  # the file, relative to the repository

    @property
    def reason(self) -> Optional[str]:
        match = NOT_EXECUTED.match(self.marker or "")
        return match.group(1).strip() if match else None


def parse_blocks(text: str, document: str = "README.md") -> List[Block]:
    """The fenced blocks of a markdown text, in document order."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, language = opening.groups()
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            raise AssertionError(f"{document}:{i + 1}: the {fence} block is never closed")
        previous = next((l.strip() for l in reversed(lines[:i]) if l.strip()), "")
        marker = MARKER.match(previous)
        blocks.append(Block(i + 1, language, "\n".join(lines[i + 1:end]) + "\n", marker and marker.group(1), document))
        i = end + 1
    return blocks


@dataclass
class Plan:
    """What the test does with the blocks: python programs, transcripts, declared blocks, problems."""
    programs: List[List[Block]]
    transcripts: List[Block]
    declared: List[Block]
    problems: List[str]


def plan(blocks: List[Block]) -> Plan:
    result = Plan([], [], [], [])
    for block in blocks:
        where = f"{block.document}:{block.line} ({block.language or 'no language'})"
        if block.language.startswith("{"):
            continue  # a MyST directive (the site's markup), not code
        if block.marker is not None and block.marker != "continues" and block.reason is None:
            # A typo in a marker would otherwise turn into "no reason" or a silent non-marker.
            result.problems.append(f"{where}: unknown marker <!-- {block.marker} -->; use "
                                   "<!-- continues --> or <!-- not executed: REASON -->")
        elif not block.language:
            result.problems.append(f"{where}: the fence names no language (```python, ```bash, ```text, ...)")
        elif block.language == "python":
            if block.reason is not None:
                result.problems.append(f"{where}: python blocks are run, not declared; make it runnable")
            elif block.marker == "continues":
                if not result.programs:
                    result.problems.append(f"{where}: <!-- continues --> but no python block comes before it")
                else:
                    result.programs[-1].append(block)
            else:
                result.programs.append([block])
        elif block.marker == "continues":
            result.problems.append(f"{where}: only python blocks can continue another block")
        elif block.reason is not None:
            if not block.reason:
                result.problems.append(f"{where}: <!-- not executed: --> gives no reason")
            else:
                result.declared.append(block)
        elif block.language == "text" and block.code.startswith("$ python "):
            result.transcripts.append(block)
        else:
            result.problems.append(f"{where}: neither run by this test nor declared; add "
                                   "<!-- not executed: REASON --> before the fence, saying what covers it")
    return result


PLANS = {doc.relative_to(REPO).as_posix(): plan(parse_blocks(doc.read_text(encoding="utf-8"), doc.relative_to(REPO).as_posix()))
         for doc in DOCUMENTS}
README_PLAN = PLANS["README.md"]
ALL_PROGRAMS = [program for p in PLANS.values() for program in p.programs]
ALL_TRANSCRIPTS = [block for p in PLANS.values() for block in p.transcripts]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


@pytest.mark.parametrize("document", sorted(PLANS))
def test_every_block_is_run_checked_or_declared(document):
    found = PLANS[document]
    assert not found.problems, "\n".join(found.problems)
    assert all(len(b.reason) >= 20 for b in found.declared), [b.line for b in found.declared]


def test_the_readme_and_the_site_have_python_examples():
    # Not vacuous: the README's three quick starts, and more on the site's pages.
    assert len(README_PLAN.programs) >= 3
    assert len(ALL_PROGRAMS) >= 10


# The README's programs run in the inner loop; the site pages' (a fresh interpreter each, about 3 s
# apiece) are marked slow and run in CI's whole suite, with the site's build (tests/infra/test_docs.py).
@pytest.mark.parametrize("program", [
    pytest.param(program, marks=() if program[0].document == "README.md" else pytest.mark.slow,
                 id=f"{program[0].document}:{program[0].line}") for program in ALL_PROGRAMS])
def test_python_blocks_run(program, tmp_path):
    script = tmp_path / "readme_block.py"
    # Blank lines put each block's code at its README line numbers, so tracebacks point there.
    source = []
    for block in program:
        source += [""] * (block.line - len(source)) + block.code.splitlines()
    script.write_text("\n".join(source) + "\n", encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(),
                            capture_output=True, text=True, timeout=600)
    lines = ", ".join(str(b.line) for b in program)
    document = program[0].document
    assert result.returncode == 0, (f"{document} python block(s) at line {lines} failed "
                                    f"(traceback line numbers are {document} lines):\n{result.stderr[-6000:]}")


@pytest.mark.parametrize("block", ALL_TRANSCRIPTS, ids=lambda b: f"{b.document}:{b.line}")
def test_transcripts_print_the_same_keys(block, tmp_path):
    command, *listing = block.code.splitlines()
    argv = shlex.split(command[2:])
    result = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    keys = lambda lines: [m.group(1) for m in map(KEY.match, lines) if m]
    expected = keys(listing)
    assert expected, f"{block.document}:{block.line}: the transcript lists no key: value lines"
    assert keys(result.stdout.splitlines()) == expected, result.stdout


# The conventions themselves, on small documents: a block that is neither run nor declared, or a
# marker that means nothing, must be reported, not skipped.
def test_convention_reports_undeclared_and_misdeclared_blocks():
    doc = "\n".join([
        "```python", "a = 1", "```",
        "<!-- continues -->", "", "```python", "print(a)", "```",
        "```python", "b = 2", "```",
        "<!-- not executed: installs packages into the environment -->", "```bash", "pip install x", "```",
        "```bash", "make", "```",
        "<!-- not executed: -->", "```text", "out", "```",
        "<!-- not executd: typo -->", "```cpp", "int main() {}", "```",
        "```", "no language", "```",
        "<!-- continues -->", "```bash", "ls", "```",
        "```text", "$ python -m softdtw_torch --info", "version: 0", "```",
    ])
    result = plan(parse_blocks(doc))
    assert [[b.line for b in p] for p in result.programs] == [[1, 6], [9]]
    assert [b.line for b in result.declared] == [13]
    assert [b.line for b in result.transcripts] == [34]
    assert [p.split(" ")[0] for p in result.problems] == [
        "README.md:16", "README.md:20", "README.md:24", "README.md:27", "README.md:31"]
    assert "neither run by this test nor declared" in result.problems[0]
    assert "gives no reason" in result.problems[1]
    assert "unknown marker" in result.problems[2]
    assert "names no language" in result.problems[3]
    assert "only python blocks can continue" in result.problems[4]


def test_unclosed_fence_is_an_error():
    with pytest.raises(AssertionError, match="never closed"):
        parse_blocks("```python\nx = 1\n")
