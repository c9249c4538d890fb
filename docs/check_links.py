"""Check that every link of the README and docs/ resolves inside the repository.

``python docs/check_links.py`` prints each broken link and exits 1 if any. A
link is broken when it leaves the repository, names a file that does not
exist, or names a ``#heading`` that the target Markdown file does not have
(GitHub's heading anchors). Web links (``http(s)://``, ``mailto:``) are not
followed. The test suite runs it too (``tests/test_cli.py``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/*.md", "ocp_analytics/sql/README.md")

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!\!)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_IMAGE = re.compile(r"!\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"`+[^`]*`+")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of the headings of a Markdown file.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "a.md"
    >>> _ = p.write_text("# The Wilson interval (ci_low, ci_high)\\n## Usage\\n## Usage\\n")
    >>> sorted(anchors(p))
    ['the-wilson-interval-ci_low-ci_high', 'usage', 'usage-1']
    """
    seen: dict[str, int] = {}
    out = set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if not m:
            continue
        title = m.group(1).replace("`", "").lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file (outside code blocks and code spans)."""
    found = []
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        line = _CODE_SPAN.sub("", line)
        found += _LINK.findall(line) + _IMAGE.findall(line)
    return found


def broken(path: Path, root: Path = ROOT) -> list[str]:
    """Why each link of ``path`` does not resolve inside ``root`` (empty when all do)."""
    problems = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            if not target.startswith(("http://", "https://", "mailto:")):
                problems.append(f"{target}: not a web link nor a file of the repository")
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path.resolve()
        if not dest.is_relative_to(root):
            problems.append(f"{target}: outside the repository")
        elif not dest.exists():
            problems.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{target}: no heading #{anchor} in {dest.relative_to(root)}")
    return problems


def main() -> int:
    pages = sorted({p for pattern in PAGES for p in ROOT.glob(pattern)})
    bad = 0
    for page in pages:
        for problem in broken(page):
            print(f"{page.relative_to(ROOT)}: {problem}")
            bad += 1
    print(f"{len(pages)} pages, {bad} broken link(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
