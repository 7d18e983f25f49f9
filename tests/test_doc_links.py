"""Every relative link of README.md, docs/*.md and the packages' READMEs resolves: the file (or folder) exists, and a
#anchor names a heading of the page it points to, as GitHub spells heading anchors (issue 29)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "chateval").rglob("README.md")), *sorted((ROOT / "examples").rglob("README.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, link targets and punctuation dropped (hyphens
    and underscores kept), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def outside_code(text: str) -> list[str]:
    """The page's lines outside fenced code blocks, inline code spans blanked."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            out.append(re.sub(r"`[^`]*`", lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", line))
    return out


def anchors(path: Path) -> set[str]:
    out: set[str] = set()
    seen: dict[str, int] = {}
    fence = False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"^#{1,6} (.*)", line)):
            a = slug(m.group(1))
            out.add(a if a not in seen else f"{a}-{seen[a]}")
            seen[a] = seen.get(a, 0) + 1
    return out


def links(path: Path) -> list[str]:
    out = []
    for line in outside_code(path.read_text(encoding="utf-8")):
        out += LINK.findall(line)
    return [t for t in out if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]  # http:, mailto: are not ours


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading '#{anchor}' in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_checker_sees_a_broken_link_and_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [bad](#nope) [gone](missing.md) `[code](not/a/link.md)`\n"
                    "```\n[in a block](also/not.md)\n```\n")
    assert links(page) == ["#title", "#nope", "missing.md"]
    assert anchors(page) == {"title"}
    assert slug("Gating CI: `--fail-under`") == "gating-ci---fail-under"
    assert slug("`theanine` — timeline-based memory") == "theanine--timeline-based-memory"


def test_the_mkdocs_nav_lists_every_page_and_only_pages_that_exist():
    import yaml

    class Loader(yaml.SafeLoader):  # mkdocs.yml names a Python function (the anchor style): not ours to run
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)["nav"]
    listed = [page for entry in nav for page in entry.values()]
    assert sorted(listed) == sorted(p.name for p in (ROOT / "docs").glob("*.md")), listed
