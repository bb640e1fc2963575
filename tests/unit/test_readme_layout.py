"""The docs' Layout page (docs/layout.md) names every module of the package, in the row of its
folder."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "edgeproxy"


def _layout() -> str:
    text = (ROOT / "docs" / "layout.md").read_text()
    assert text.startswith("# Layout\n")
    return text


def _rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in _layout().splitlines():
        cells = line.split("|")
        if len(cells) > 2 and cells[1].strip().startswith("`"):
            rows[cells[1].strip().strip("`")] = line
    return rows


def _missing() -> list[str]:
    rows, layout = _rows(), _layout()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        folder = path.parent.relative_to(PACKAGE).as_posix()
        if folder == ".":
            if f"`{path.stem}`" not in layout and f"`{path.name}`" not in layout:
                missing.append(path.name)
        elif f"`{path.stem}`" not in rows.get(f"{folder}/", ""):
            missing.append(f"{folder}/{path.name}")
    return missing


def test_the_layout_lists_every_module_in_its_folders_row() -> None:
    assert _missing() == []


def test_the_check_sees_the_folders() -> None:
    # A renamed heading or table would make the check above pass on nothing.
    rows = _rows()
    assert {"routing/", "service/", "api/", "state/"} <= set(rows)
    assert "`router`" in rows["service/"]
