"""README.md stays one a newcomer reads to the end: at most 300 lines, the
long passages in docs/, and every relative link it gives leads somewhere."""
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
MAX_LINES = 300

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def without_code_blocks(text: str) -> str:
    """``text`` without its fenced code blocks (a ``#`` there is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def prose(text: str) -> str:
    """``text`` without code blocks and inline code, where brackets and
    parentheses are code, not links."""
    return re.sub(r"`[^`\n]*`", "", without_code_blocks(text))


def relative_links(path: Path) -> list[str]:
    """The targets of the markdown links in ``path`` that name no scheme
    (``https:``, ``mailto:``): files in the repository, with any ``#anchor``."""
    return [target for target in LINK.findall(prose(path.read_text()))
            if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)]


def github_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``path``: lower case, every
    character but letters, digits, spaces, ``-`` and ``_`` dropped, spaces
    as ``-``, a repeated one suffixed ``-1``, ``-2``, ..."""
    anchors, seen = set(), {}
    for line in without_code_blocks(path.read_text()).splitlines():
        match = HEADING.match(line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(2).strip().lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_the_readme_is_at_most_300_lines():
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_LINES, (
        f"README.md has {lines} lines, more than {MAX_LINES}: move a long passage into the "
        "docs/ page it belongs to and link to its heading there")


def test_the_readme_has_relative_links_to_check():
    assert any(target.startswith("docs/") for target in relative_links(README))


def test_every_relative_link_in_the_readme_names_a_file_that_exists():
    missing = [target for target in relative_links(README)
               if target.split("#")[0] and not (REPO_ROOT / target.split("#")[0]).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_anchor_in_the_readmes_links_names_a_heading_of_its_page():
    missing = []
    for target in relative_links(README):
        file, _, anchor = target.partition("#")
        page = REPO_ROOT / file if file else README
        if anchor and page.suffix == ".md" and page.exists() \
                and anchor not in github_anchors(page):
            missing.append(target)
    assert not missing, f"README.md links to headings that do not exist: {missing}"
