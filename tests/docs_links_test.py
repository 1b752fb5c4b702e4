#!/usr/bin/env python3
"""Checks README.md and docs/*.md: every relative link names a file that exists, every
#anchor names a heading of its file (GitHub's slug rule), no page points outside the
repository (../shared included), and the README stays a map of at most 150 lines. Usage: docs_links_test.py ROOT. Prints each breach and exits 1 on any."""
import re
import sys
from pathlib import Path

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_BLOCK = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
README_MAX_LINES = 150


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    text = CODE_BLOCK.sub("", path.read_text(encoding="utf-8"))
    result, seen = set(), {}
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def check(root: Path) -> list:
    breaches = []
    pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    for page in pages:
        text = CODE_SPAN.sub("", CODE_BLOCK.sub("", page.read_text(encoding="utf-8")))
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.relative_to(root)}: ({target})"
            if not dest.exists():
                breaches.append(f"{where} names no file")
                continue
            if root.resolve() not in dest.parents and dest != root.resolve():
                breaches.append(f"{where} leaves the repository")
                continue
            if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                breaches.append(f"{where} names no heading of {dest.name}")
        if "../shared" in page.read_text(encoding="utf-8"):
            breaches.append(f"{page.relative_to(root)} sends the reader to ../shared, outside the repository")
    lines = len((root / "README.md").read_text(encoding="utf-8").splitlines())
    if lines > README_MAX_LINES:
        breaches.append(f"README.md has {lines} lines, more than {README_MAX_LINES}")
    return breaches


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    breaches = check(root)
    for b in breaches:
        print(f"docs_links: {b}")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
