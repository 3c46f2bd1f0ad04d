"""docs/reproducing.md's tables say what each paper preset resolves to."""
import re
from pathlib import Path

import pytest
import yaml

from pipelines.settings import load_preset
from plnlp_core.config import PLNLPConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "reproducing.md"


def preset_tables() -> dict[tuple[str, str], dict[str, object]]:
    """(dataset, preset) to {setting: value} from each dataset's table."""
    tables = {}
    for section in re.split(r"^## ogbl-", DOC.read_text(), flags=re.M)[1:]:
        dataset = section.split()[0]
        header = next(line for line in section.splitlines() if line.startswith("| setting"))
        preset = re.search(r"`(\w+)` preset", header).group(1)
        rows = {}
        for line in section.splitlines():
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            if line.startswith("| `") and len(cells) == 4:
                rows[cells[0].strip("`")] = yaml.safe_load(cells[3].strip("`"))
        tables[(dataset, preset)] = rows
    return tables


TABLES = preset_tables()


def test_every_dataset_has_a_table():
    assert {dataset for dataset, _ in TABLES} == {"ddi", "collab", "ppa", "citation2"}


@pytest.mark.parametrize(("dataset", "preset"), sorted(TABLES))
def test_preset_resolves_to_its_table(dataset, preset):
    settings = load_preset(dataset, preset)
    config = PLNLPConfig.from_mapping({**settings, "dataset": dataset})
    config.validate()
    table = TABLES[(dataset, preset)]
    assert set(settings) <= set(table), f"not in the table: {set(settings) - set(table)}"
    for key, value in table.items():
        assert getattr(config, key) == value, f"{dataset} {preset}: {key}"
