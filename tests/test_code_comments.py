"""The code is held to the docs' rules: no comment or docstring reads as a diary, and every doc section the
code cites exists.

Which files: every Python file of the repository (the packages, ``setup.py``, tests, benchmarks, fuzz), the
C and HTML sources (``benchmarks/native_floor.c``, the tests' browser page), the CI script (``.ci/run``),
``pyproject.toml`` and the configuration files below ``configs/`` (those directly in it are docs, held by
tests/test_docs.py). Tool output and virtualenvs are left out (``SKIPPED_DIRS``).

What is read, as prose: of a Python file, its comments (a run of comment lines is one piece) and its
docstrings (every string that is a statement of its own: a module's, class's or function's docstring, or
an attribute's); of a C or HTML file, its comments; of a script or a configuration, its ``#`` comment lines.

The rules are tests/test_docs.py's: a diary mark anywhere (an ordinal followed by "pass", "issue" with a
number, the design page's name followed by a section sign: ``diary_marks``), and a citation of a doc
section that the doc does not have (``missing_sections``). Citations are also looked for in every string
literal of a Python file, since help texts and messages point users at the docs too; the diary rule is not
applied to them, because what a program prints (the sync test calls its forward run its first "pass") may
use those words for what they mean.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
from tests.layout import REPO_ROOT
from tests.test_docs import SKIPPED_DIRS, diary_marks, missing_sections, repository_paths

C_COMMENT = re.compile(r"/\*.*?\*/|(?<![:\w\"'])//[^\n]*|<!--.*?-->", re.DOTALL)
HASH_COMMENTED = {".toml", ".conf", ".service", ".sh", ".cfg", ".ini"}
C_COMMENTED = {".c", ".h", ".html", ".js"}


@dataclass(frozen=True)
class Piece:
    """A piece of a file's text, starting at ``line``: ``prose`` (a comment or docstring) or another string."""

    line: int
    text: str
    prose: bool = True


def code_files(root: Path = REPO_ROOT) -> list[Path]:
    """Every file this test reads (module docstring), in path order."""
    found = []
    for relative in map(PurePosixPath, repository_paths(root)[0]):
        in_configs = relative.parts[0] == "configs"
        if in_configs and len(relative.parts) == 2:
            continue  # a doc (tests/test_docs.py)
        if (relative.suffix in {".py", *C_COMMENTED} or relative.as_posix() in {".ci/run", "pyproject.toml"}
                or (in_configs and relative.suffix in HASH_COMMENTED)):
            found.append(root / relative)
    return sorted(found)


def python_pieces(source: str) -> list[Piece]:
    """A Python source's comments (runs of consecutive comment lines joined) and docstrings as prose, and its
    other string literals (their values, implicit concatenations joined) as non-prose, in line order."""
    pieces: list[Piece] = []
    run: list[str] = []
    run_start = last = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        if run and line != last + 1:
            pieces.append(Piece(run_start, "\n".join(run)))
            run = []
        if not run:
            run_start = line
        run.append(token.string.lstrip("#"))
        last = line
    if run:
        pieces.append(Piece(run_start, "\n".join(run)))
    tree = ast.parse(source)
    docstrings = {
        id(node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            pieces.append(Piece(node.lineno, node.value, prose=id(node) in docstrings))
    return sorted(pieces, key=lambda piece: piece.line)


def commented_pieces(path: Path, text: str) -> list[Piece]:
    """The comments of a C, HTML, shell or configuration file, as prose."""
    if path.suffix in C_COMMENTED:
        return [Piece(text.count("\n", 0, match.start()) + 1, match.group(0)) for match in C_COMMENT.finditer(text)]
    pieces: list[Piece] = []
    for number, line in enumerate(text.splitlines(), 1):
        if "#" not in line:
            continue
        comment = line.split("#", 1)[1]
        if pieces and pieces[-1].line + pieces[-1].text.count("\n") == number - 1:
            pieces[-1] = Piece(pieces[-1].line, pieces[-1].text + "\n" + comment)
        else:
            pieces.append(Piece(number, comment))
    return pieces


def pieces_of(path: Path) -> list[Piece]:
    """What this test reads of ``path`` (module docstring)."""
    text = path.read_text(encoding="utf-8")
    return python_pieces(text) if path.suffix == ".py" else commented_pieces(path, text)


def _relative(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


@pytest.mark.parametrize("path", code_files(), ids=_relative)
def test_no_comment_or_docstring_is_a_diary(path):
    marks = [
        f"line {piece.line + int(mark.split(':', 1)[0].split()[1]) - 1}:{mark.split(':', 1)[1]}"
        for piece in pieces_of(path) if piece.prose for mark in diary_marks(piece.text)
    ]
    assert marks == [], f"{_relative(path)} has comments or docstrings that read as a diary"


@pytest.mark.parametrize("path", code_files(), ids=_relative)
def test_every_doc_section_the_code_cites_exists(path):
    missing = [f"line {piece.line}: {cited}" for piece in pieces_of(path) for cited in missing_sections(piece.text)]
    assert missing == [], f"{_relative(path)} cites doc sections that do not exist"


def test_the_code_this_test_reads_includes_every_kind():
    files = {_relative(path) for path in code_files()}
    assert {"setup.py", ".ci/run", "pyproject.toml", "benchmarks/native_floor.c", "open4wd_node/race/mesh.py",
            "tests/test_docs.py", "fuzz/harness.py", "configs/systemd/open4wd-signal.service"} <= files
    assert "configs/node.toml" not in files  # a doc
    assert not any(part in SKIPPED_DIRS for path in files for part in path.split("/"))


def test_comments_and_docstrings_are_prose_and_other_strings_are_not():
    source = (
        '"""Module docstring."""\n'
        "# a comment that runs\n"
        "# over two lines\n"
        "\n"
        "X = 1  # trailing\n"
        '"""The attribute X."""\n'
        "def f():\n"
        '    """Function docstring."""\n'
        '    return print("printed " "text", f"{X} formatted")\n'
    )
    pieces = python_pieces(source)
    assert sorted((p.line, p.text, p.prose) for p in pieces) == [
        (1, "Module docstring.", True),
        (2, " a comment that runs\n over two lines", True),
        (5, " trailing", True),
        (6, "The attribute X.", True),
        (8, "Function docstring.", True),
        (9, " formatted", False),
        (9, "printed text", False),
    ]


def test_diaries_and_missing_sections_are_found_in_code(tmp_path):
    # The marks are assembled from parts, so that this module holds none of them as written.
    ordinal_pass, issue, design_page = "Sixth" + " pass", "issue" + " 18", "ARCHITECTURE" + " §1"
    gone = "docs/node.md, " + '"' + ordinal_pass + '"'
    source = (
        f'"""Reads its links ({gone}).\n\nAs {issue} asked."""\n'
        f"X = 1  # the design ({design_page})\n"
        f"HELP = 'see {gone}'  # a help text\n"
        'OUT = "first' + ' pass {x}"  # what a program prints is not prose\n'
    )
    pieces = python_pieces(source)
    assert [mark.split(":", 1)[1].strip() for p in pieces if p.prose for mark in diary_marks(p.text)] == [
        "a numbered pass: 'Sixth pass'", "an issue number: 'issue 18'",
        "the design page instead of the decision: 'ARCHITECTURE §'",
    ]
    assert [cited for p in pieces for cited in missing_sections(p.text)] == [f'docs/node.md "{ordinal_pass}"'] * 2


def test_comments_of_c_html_and_scripts_are_read(tmp_path):
    c_file, script = tmp_path / "floor.c", tmp_path / "run.sh"
    c_file.write_text('/* the floor:\n   a block */\nint x; // a line\nchar *url = "http://example.net";\n<!-- html -->\n')
    script.write_text("#!/bin/sh\n# one\n# two\necho done\n\n# three\n")
    assert [(p.line, p.text) for p in commented_pieces(c_file, c_file.read_text())] == [
        (1, "/* the floor:\n   a block */"), (3, "// a line"), (5, "<!-- html -->"),
    ]
    assert [(p.line, p.text) for p in commented_pieces(script, script.read_text())] == [
        (1, "!/bin/sh\n one\n two"), (6, " three"),
    ]
