"""The README is the first hour: at most 300 lines, no reference a user cannot follow, and
every link it makes into the documentation site lands on a page and heading that exist.
The site's pages carry no internal references either."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from edgeproxy.config.loader import load_config_file
from tests.fixtures.docs import DOCS, README, REPO, blocks, pages

MAX_LINES = 300
# What a user outside the project cannot follow: issue numbers, the behavioural
# reference documents (reference/000, "000's rule"), the "spec" they make up.
INTERNAL = [
    re.compile(r"(?<![-/\w])issues? ?#?\d+", re.I),  # not a file's name: compare-issue42.md
    re.compile(r"\breference/"),
    re.compile(r"\bprimary spec\b", re.I),
    re.compile(r"\bthe (routing )?spec\b", re.I),
    re.compile(r"\bspec deviations?\b", re.I),
    re.compile(r"`?\b00[0-3]\b`?'s\b"),
    re.compile(r"`00[0-3]`"),
    re.compile(r"\b00[0-3]'s\b"),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def internal_references(text: str) -> list[str]:
    return [m.group(0) for pattern in INTERNAL for m in pattern.finditer(text)]


def headings(path: Path) -> set[str]:
    """The anchors of ``path``'s headings, as the site's build makes them."""
    found, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        heading = None if fence else re.match(r"^#{1,6} (.*)", line)
        if heading:
            found.add(slugify(heading.group(1).replace("`", ""), "-"))
    return found


def test_the_readme_is_at_most_300_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


@pytest.mark.parametrize("path", pages(), ids=lambda p: p.name)
def test_no_internal_references(path: Path) -> None:
    assert internal_references(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_internal_references() -> None:
    # The patterns above catch what the README used to say, and not ordinary numbers.
    said = "Issue 14's targets; see reference/001; 000's rule; the primary spec; `003`"
    assert len(internal_references(said)) >= 5
    assert internal_references("1,000 requests; 2,000 a second; `?names=000`") == []


def test_the_readmes_links_land() -> None:
    missing = []
    for target in LINK.findall(README.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+://", target):
            continue
        file, _, anchor = target.partition("#")
        path = REPO / file if file else README
        if not path.exists() or (anchor and anchor not in headings(path)):
            missing.append(target)
    assert missing == []


def test_the_readme_links_every_page_of_the_site() -> None:
    linked = {t.partition("#")[0] for t in LINK.findall(README.read_text(encoding="utf-8"))}
    site = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert site - linked == set()


def test_the_screenshot_renders_from_both_places() -> None:
    # The README names it from the repository root, the site's pages from docs/.
    readme = README.read_text(encoding="utf-8")
    shots = re.findall(r"!\[[^\]]*\]\((docs/[^)]+\.png)\)", readme)
    assert shots
    assert all((REPO / shot).is_file() for shot in shots)
    for path in DOCS.glob("*.md"):
        prose = re.sub(r"`[^`\n]*`", "", path.read_text(encoding="utf-8"))  # not code spans
        for shot in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", prose):
            assert (DOCS / shot).is_file(), (path.name, shot)


def test_the_readmes_configuration_loads(tmp_path: Path) -> None:
    # The provider example a user copies first is a configuration the loader accepts.
    examples = [b for b in blocks(README) if b.language == "yaml"]
    assert examples
    for block in examples:
        path = tmp_path / "config.yaml"
        path.write_text(block.code)
        config = load_config_file(path)
        assert {d.provider.value for d in config.deployments} >= {"openai", "anthropic", "bedrock"}


def test_the_sites_home_has_the_readmes_prerequisites() -> None:
    # One text in two places (the repository's front page and the site's): kept equal.
    def prerequisites(text: str) -> str:
        start = text.index("## Prerequisites")
        return text[start : text.index("\n## ", start + 1)]

    home = (DOCS / "index.md").read_text(encoding="utf-8")
    assert prerequisites(home) == prerequisites(README.read_text(encoding="utf-8"))
