"""docs/reproducing.md's tables say what each paper preset resolves to."""
import re
from pathlib import Path

import pytest
import yaml

from pipelines.planning.presets import load_preset
from plnlp_core.config import PLNLPConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "reproducing.md"


def preset_tables() -> dict[tuple[str, str], dict[str, object]]:
    """(dataset, preset) to {setting: value} from each dataset's table: the
    sections headed ``## ogbl-<dataset>``, each up to the next ``## ``."""
    tables = {}
    for section in re.split(r"^## ", DOC.read_text(), flags=re.M)[1:]:
        if not section.startswith("ogbl-"):
            continue
        dataset = section.removeprefix("ogbl-").split()[0]
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


NCN_COMMANDS = {  # NCN's published flags (GraphPKU/NeuralCommonNeighbor README), as settings
    "ddi": {"encoder": "sum", "hidden_channels": 224, "encoder_layers": 1,
            "encoder_residual": True, "input_dropout": 0.4, "predictor_dropout": 0.6,
            "ncn_xlin": True, "ncn_two_layer_output": True, "ncn_tail_activation": False,
            "lr": 0.0021, "predictor_lr": 0.0018, "batch_size": 24576, "epochs": 100,
            "target_edge_removal": True},
    "collab": {"encoder": "gcn", "hidden_channels": 64, "encoder_layers": 1,
               "encoder_residual": True, "encoder_layer_norm": True, "dropout": 0.1,
               "encoder_edge_dropout": 0.25, "predictor_dropout": 0.3, "ncn_xlin": True,
               "ncn_tail_activation": True, "lr": 0.0082, "predictor_lr": 0.0037,
               "batch_size": 65536, "epochs": 100, "valid_as_input": True},
    "ppa": {"encoder": "gcn", "node_input": "features", "feature_categories": 58,
            "embedding_dim": 64, "embedding_init": "orthogonal", "hidden_channels": 64,
            "encoder_layers": 3, "encoder_residual": True, "encoder_layer_norm": True,
            "encoder_edge_dropout": 0.1, "predictor_dropout": 0.1,
            "ncn_xlin": False, "ncn_tail_activation": True, "lr": 0.0013, "predictor_lr": 0.0013,
            "batch_size": 16384, "epochs": 25},
    "citation2": {"encoder": "pure_gcn", "hidden_channels": 64, "encoder_layers": 3,
                  "encoder_residual": True, "dropout": 0.3,
                  "input_dropout": 0.2, "predictor_dropout": 0.2, "ncn_xlin": True,
                  "ncn_tail_activation": True, "lr": 0.0088, "predictor_lr": 0.0058,
                  "batch_size": 32768, "epochs": 20, "target_edge_removal": False},
}


@pytest.mark.parametrize("dataset", sorted(NCN_COMMANDS))
def test_each_ene_preset_is_ncns_published_command_with_plnlp_losses_selectable(dataset):
    settings = load_preset(dataset, "ene")
    config = PLNLPConfig.from_mapping({"dataset": dataset, **settings})
    config.validate()
    assert (config.encoder_level, config.predictor, config.loss, config.num_neg) == (
        "edge", "ncn", "ce", 1)
    for key, value in NCN_COMMANDS[dataset].items():
        assert getattr(config, key) == value, f"{dataset} ene: {key}"
    for loss in ("auc", "hinge_auc", "log_rank"):
        config.replace(loss=loss, num_neg=3).validate()
