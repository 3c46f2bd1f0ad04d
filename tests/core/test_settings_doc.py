"""docs/settings.md describes exactly PLNLPConfig's fields, with their defaults."""
import dataclasses
from pathlib import Path

import yaml

from plnlp_core.config import PLNLPConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def documented() -> list[tuple[str, object]]:
    """(setting, default) of each row of the settings table, in order; the
    default cell is YAML in backticks."""
    rows = []
    for line in DOC.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| `") and len(cells) == 4:
            name, default = cells[0], cells[1]
            assert name.count("`") == 2 and default.startswith("`") and default.endswith("`"), \
                f"docs/settings.md: a row should be | `setting` | `default` | …: {line[:80]}"
            rows.append((name.strip("`"), yaml.safe_load(default.strip("`"))))
    return rows


FIELDS = {field.name: field.default_factory() if field.default is dataclasses.MISSING
          else field.default for field in dataclasses.fields(PLNLPConfig)}
ROWS = documented()


def test_every_field_has_exactly_one_row_and_every_row_is_a_field():
    names = [name for name, _ in ROWS]
    assert len(names) == len(set(names)), "docs/settings.md lists a setting twice"
    assert not set(FIELDS) - set(names), \
        f"PLNLPConfig fields missing from docs/settings.md: {sorted(set(FIELDS) - set(names))}"
    assert not set(names) - set(FIELDS), \
        f"docs/settings.md names settings that are not PLNLPConfig fields: " \
        f"{sorted(set(names) - set(FIELDS))}"


def test_documented_defaults_are_the_dataclass_defaults():
    for name, default in ROWS:
        if name not in FIELDS:
            continue
        expected = FIELDS[name]
        assert default == expected and type(default) is type(expected), \
            f"docs/settings.md gives {name} the default {default!r}, PLNLPConfig {expected!r}"


def test_the_rows_follow_the_dataclass_order():
    assert [name for name, _ in ROWS] == [name for name in FIELDS if name in dict(ROWS)]
