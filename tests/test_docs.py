"""The docs describe the repository as it is: every file path a doc names exists, every section a doc cites
exists, and no doc is a diary.

Which files are docs: ``README.md``, ``CONTRIBUTING.md``, ``CHANGELOG.md``, every ``*.md`` under ``docs/``,
``fuzz/README.md``, and the comment lines of ``configs/`` (the shipped configuration documents itself).

How a path is recognised (CONTRIBUTING.md, "Docs"). The text is cut into words at white space, quotes,
brackets and backticks, so a path counts the same bare, in backticks or as a link target; a pytest node id
(``tests/x.py::test_y``) counts by its file. A word is *not* a path of this repository when it holds a
placeholder or a pattern (``<data-dir>/races/``, ``DIR/report.json``, ``races/*.o4wlog``, ``HOST:PORT``,
``$VAR``, ``~/…``), is absolute (``/etc/…``), or is part of a URL. Of the rest:

- a word with a directory (``a/b.py``, ``docs/examples/``) is a path when it ends in one of ``EXTENSIONS``,
  ends in ``/`` with at least two parts, or starts with ``.ci/``; it must exist from the repository root,
  from the doc's own folder, or as the tail of an existing path (``race/world.py`` in a section about
  ``open4wd_node/``);
- a bare file name (``blocking.py``) is a path when it ends in one of ``BARE_EXTENSIONS`` (source and docs,
  not the names of files a user or a run makes, such as ``report.json`` or ``identity.key``); some file of
  the repository must have that name.

A section is cited as a doc's path followed by its name in quotes, or several names (docs/race.md, "Chained
inputs"; docs/node.md "Demo", "The live page"); the path is not itself inside quotes. A name must be a heading
of that doc, or the bold lead of one of its paragraphs or list items (``**Own states.**``), compared without
backticks and without the lead's closing full stop; a name may leave out a parenthesised tail or what
follows a colon (the heading "Race mesh (`open4wd_node/race/mesh.py`)" is cited as "Race mesh", "Weather:
rain and snow patches" as "Weather"). tests/test_code_comments.py holds the code to the same rule and to the
diary rule.

A diary is recognised by a heading that names a pass, a date or a branch, and anywhere in the text by an
ordinal followed by "pass", the word issue followed by a number, or the design page's name followed by a
section sign (a reference to the page instead of the decision itself).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from tests.layout import REPO_ROOT

EXTENSIONS = (".py", ".md", ".toml", ".json", ".jsonl", ".c", ".txt", ".csv", ".glb", ".service", ".html", ".sh")
BARE_EXTENSIONS = (".py", ".md", ".c", ".toml", ".service")
SKIPPED_DIRS = {".git", ".venv", "build", "dist", "__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth"
    "|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|\\d+(?:st|nd|rd|th)"
)
DIARY_ANYWHERE = {
    "a numbered pass": re.compile(rf"\b(?:{ORDINALS})\s+pass\b", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE),
    "the design page instead of the decision": re.compile(r"\bARCHITECTURE(?:\.md)?\s*§"),
}
DIARY_HEADING = {
    "a pass": re.compile(r"\bpass(?:es)?\b", re.IGNORECASE),
    "a date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    "a branch": re.compile(r"\bbranch\b", re.IGNORECASE),
}

DOC_CITATION = re.compile(
    r"""(?<!["\w/.-])((?:docs/[\w/-]+|fuzz/README|README|CONTRIBUTING|CHANGELOG)\.md)`?"""
    r"""((?:\s*,?\s*(?:and\s+)?["“][^"”\s,][^"”]*["”])+)"""
)
SECTION_NAME = re.compile(r"""["“]([^"”]+)["”]""")
HEADING = re.compile(r"^#+\s+(.+?)\s*$")
BOLD_LEAD = re.compile(r"^\s*(?:[-*]\s+|\d+\.\s+)?\*\*([^*]+)\*\*")

WORD_BREAKS = re.compile(r"[\s`'\"“”‘’()\[\]|,;!?*]+")
NOT_A_REPOSITORY_PATH = re.compile(r"[<>{}$~@:=%&+]|^/|^\.\.?/?$")
PLACEHOLDER_PART = re.compile(r"^[A-Z][A-Z0-9_-]*$")


def doc_files() -> list[Path]:
    """Every doc this test reads, as paths under the repository root."""
    docs = [REPO_ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "fuzz/README.md")]
    docs += sorted((REPO_ROOT / "docs").rglob("*.md"))
    docs += sorted(path for path in (REPO_ROOT / "configs").iterdir() if path.is_file())
    return docs


def doc_text(path: Path) -> str:
    """What a reader reads of a doc: the whole of a Markdown file, the comment lines of a configuration."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return text
    return "\n".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line)


@cache
def repository_paths(root: Path) -> tuple[frozenset[str], frozenset[str]]:
    """Every file and every folder under ``root`` (relative, ``/``-separated), leaving out tool output."""
    files: set[str] = set()
    folders: set[str] = set()
    pending = [root]
    while pending:
        folder = pending.pop()
        for entry in folder.iterdir():
            if entry.name in SKIPPED_DIRS or entry.name.endswith(".egg-info"):
                continue
            relative = entry.relative_to(root).as_posix()
            if entry.is_dir():
                folders.add(relative)
                pending.append(entry)
            else:
                files.add(relative)
    return frozenset(files), frozenset(folders)


def named_paths(text: str) -> list[str]:
    """The words of ``text`` that name a file or folder of the repository, by the rule of this module."""
    found = []
    for word in WORD_BREAKS.split(text):
        word = word.split("::", 1)[0].split("#", 1)[0].rstrip(".:")
        if not word or NOT_A_REPOSITORY_PATH.search(word):
            continue
        parts = word.rstrip("/").split("/")
        if any(PLACEHOLDER_PART.match(part) for part in parts[:-1]) or "" in parts:
            continue
        if len(parts) > 1:
            if word.endswith(EXTENSIONS) or word.startswith(".ci/") or (word.endswith("/") and len(parts) >= 2):
                found.append(word)
        elif word.endswith(BARE_EXTENSIONS) and re.match(r"[\w-]", word) and not PLACEHOLDER_PART.match(word.rsplit(".", 1)[0]):
            found.append(word)
    return found


def missing_paths(doc: Path, text: str, root: Path = REPO_ROOT) -> list[str]:
    """The paths ``text`` (the text of ``doc``) names that do not exist in the repository at ``root``."""
    files, folders = repository_paths(root)
    names = {path.rsplit("/", 1)[-1] for path in files}
    doc_folder = doc.parent.relative_to(root).as_posix() if doc.parent != root else ""
    missing = []
    for word in named_paths(text):
        path = word.rstrip("/")
        pool = folders if word.endswith("/") else files
        if "/" not in path:
            exists = path in names
        else:
            beside = f"{doc_folder}/{path}" if doc_folder else path
            exists = path in pool or beside in pool or any(known.endswith("/" + path) for known in pool)
        if not exists and word not in missing:
            missing.append(word)
    return missing


def cited_sections(text: str) -> list[tuple[str, str]]:
    """``(doc, section name)`` for every section ``text`` cites, by the rule of this module (line breaks and
    indentation inside a citation do not matter)."""
    flat = " ".join(text.split())
    return [(match.group(1), name) for match in DOC_CITATION.finditer(flat) for name in SECTION_NAME.findall(match.group(2))]


@cache
def section_names(doc: Path) -> frozenset[str] | None:
    """The names a citation may give the sections of ``doc``: its headings and its paragraphs' and list items'
    bold leads, without backticks and a lead's closing full stop or colon; None when there is no such doc."""
    if not doc.is_file():
        return None
    names: set[str] = set()
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        if match := HEADING.match(line) or BOLD_LEAD.match(line):
            names.add(match.group(1).replace("`", "").strip().rstrip(".:"))
    return frozenset(names)


def missing_sections(text: str, root: Path = REPO_ROOT) -> list[str]:
    """The citations in ``text`` (``doc "name"``) whose doc has no section of that name, in order, each once."""
    missing = []
    for doc, name in cited_sections(text):
        names = section_names(root / doc)
        wanted = name.replace("`", "").strip()
        found = names is not None and any(
            known == wanted or known.startswith((wanted + " (", wanted + ":")) for known in names)
        if not found and (cited := f'{doc} "{name}"') not in missing:
            missing.append(cited)
    return missing


def diary_marks(text: str) -> list[str]:
    """Each line of ``text`` that reads as a diary, with what gives it away."""
    marks = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in DIARY_ANYWHERE.items():
            if match := pattern.search(line):
                marks.append(f"line {number}: {what}: {match.group(0)!r}")
        if line.startswith("#") and line.lstrip("#").startswith(" "):
            for what, pattern in DIARY_HEADING.items():
                if match := pattern.search(line):
                    marks.append(f"line {number}: a heading naming {what}: {line.strip()!r}")
    return marks


def _relative(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


@pytest.mark.parametrize("doc", doc_files(), ids=_relative)
def test_every_path_a_doc_names_exists(doc):
    assert missing_paths(doc, doc_text(doc)) == [], f"{_relative(doc)} names files that are not in the repository"


@pytest.mark.parametrize("doc", doc_files(), ids=_relative)
def test_no_doc_is_a_diary(doc):
    assert diary_marks(doc_text(doc)) == [], f"{_relative(doc)} reads as a diary"


@pytest.mark.parametrize("doc", doc_files(), ids=_relative)
def test_every_section_a_doc_cites_exists(doc):
    assert missing_sections(doc_text(doc)) == [], f"{_relative(doc)} cites sections that its docs do not have"


def test_the_docs_this_test_reads_exist():
    assert all(doc.is_file() for doc in doc_files())


def test_paths_are_recognised_bare_in_backticks_and_in_links():
    text = (
        "See docs/race.md, `open4wd_node/race/world.py` and [the layout](docs/layout.md); "
        "`tests/test_docs.py::test_no_doc_is_a_diary`, `.ci/run`, `docs/examples/` and `blocking.py`."
    )
    assert named_paths(text) == [
        "docs/race.md", "open4wd_node/race/world.py", "docs/layout.md", "tests/test_docs.py", ".ci/run",
        "docs/examples/", "blocking.py",
    ]


def test_placeholders_urls_and_files_a_run_makes_are_not_repository_paths():
    text = (
        "`<data-dir>/races/`, DIR/races/RACE-ID/, `races/*.o4wlog`, open4wd://HOST:PORT/ROOM?host=z6Mk, "
        "https://github.com/xjustloveux/open-4wd-specs/blob/main/x.md, /etc/open4wd/relay.toml, ~/.local/share/x.md, "
        "report.json, identity.key, `sim_core/8`, µm/s, host/join, `$OPEN4WD_DATA_DIR/node.toml`, FILE.py"
    )
    assert named_paths(text) == []


def test_a_missing_file_is_found_wherever_it_is_named(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "pkg" / "race").mkdir(parents=True)
    (tmp_path / "pkg" / "race" / "world.py").write_text("")
    (tmp_path / "docs" / "a.md").write_text("")
    doc = tmp_path / "docs" / "a.md"
    text = "race/world.py, pkg/race/world.py, world.py, a.md, pkg/race/, race/gone.py, `gone.py`, pkg/race/gone/"
    assert missing_paths(doc, text, root=tmp_path) == ["race/gone.py", "gone.py", "pkg/race/gone/"]


def test_diary_headings_issue_numbers_and_design_references_are_found():
    # The marks are assembled from parts, so that this module holds none of them as written.
    ordinal_pass, issue, design_page = "Fourteenth" + " pass", "issue" + " 17", "ARCHITECTURE" + " §4"
    text = (
        f"# {ordinal_pass}: the same code\n"
        "## Campaigns (2026-12-01)\n"
        "### Cheaper executions (branch w5-fuzz)\n"
        f"as the {ordinal_pass.lower()} found, and {issue} asked ({design_page}).\n"
        "## Race session\n"
        "A backward pass over the samples; every test passes.\n"
    )
    assert [mark.split(":", 1)[0] for mark in diary_marks(text)] == [
        "line 1", "line 1", "line 2", "line 3", "line 4", "line 4", "line 4",
    ]


def test_citations_name_their_doc_and_every_section_they_quote():
    text = (
        'docs/race.md, "Chained inputs" and docs/node.md "Demo", "The live page" and\n'
        '    "Frames per tick"; fuzz/README.md, "Targets"; ("README.md", "CONTRIBUTING.md"); docs/sim.md alone; '
        "`docs/transport.md`, \"The listener's door\""
    )
    assert cited_sections(text) == [
        ("docs/race.md", "Chained inputs"), ("docs/node.md", "Demo"), ("docs/node.md", "The live page"),
        ("docs/node.md", "Frames per tick"), ("fuzz/README.md", "Targets"),
        ("docs/transport.md", "The listener's door"),
    ]


def test_a_citation_must_name_a_heading_or_a_bold_lead_of_its_doc(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# A page\n\n## Race mesh (`mesh.py`)\n\n## Weather: patches\n\n**Own states.** Text.\n\n"
        "- **A broken link (decision).** Text.\n\n"
        "```\n## Not a heading\n```\n\n## `open4wd-node signal`\n"
    )
    doc, gone = "docs/" + "a.md", "docs/" + "gone.md"  # assembled, so that this module cites nothing itself
    text = " ".join(f'{path}, "{name}"' for path, name in [
        (doc, "Race mesh"), (doc, "Weather"), (doc, "Own states"), (doc, "A broken link"), (doc, "`open4wd-node signal`"),
        (doc, "Race"), (doc, "Not a heading"), (doc, "Sixth pass"), (gone, "Race mesh"),
    ])
    assert missing_sections(text, root=tmp_path) == [
        f'{doc} "Race"', f'{doc} "Not a heading"', f'{doc} "Sixth pass"', f'{gone} "Race mesh"',
    ]
