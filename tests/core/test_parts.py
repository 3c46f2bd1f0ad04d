"""Parts of one's own named by import path: the example package keeps each
kind's contract through a training run, its settings reach its constructor
and its params, a class object is named by its path, and what a run records
of its code (no Ray here; the commands' refusals are in
tests/pipelines/test_errors.py)."""
import importlib
import itertools
import sys
import textwrap

import pytest
import torch
import yaml

from examples.link_parts import GINLayer, HadamardDistanceMLP, HeadOrTailSampler, MarginRankingLoss
from plnlp_core.assembly import (
    build_loss,
    build_model,
    build_sampler,
    reads_weights,
    training_positives,
)
from plnlp_core.config import PLNLPConfig
from plnlp_core.errors import PLNLPError
from plnlp_core.parts.import_path import (
    code_location,
    code_version,
    import_path_of,
    is_import_path,
    own_parts,
)
from plnlp_core.preflight.checks import check_config
from plnlp_core.training.experiment import prepare_experiment, run_experiment
from tests.conftest import REPO_ROOT

SMALL = dict(embedding_dim=8, hidden_channels=8, predictor_hidden=8, epochs=2,
             batch_size=256, eval_batch_size=1024)
PARTS = yaml.safe_load((REPO_ROOT / "examples" / "link_parts" / "parts.yaml").read_text())
_modules = itertools.count()


@pytest.fixture
def write_module(tmp_path, monkeypatch):
    """Writes a module of one's own into the current folder (``tmp_path``),
    under a name of its own; returns the name."""
    monkeypatch.chdir(tmp_path)

    def write(source: str) -> str:
        name = f"own_parts_{next(_modules)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        return name

    yield write
    for name in [name for name in sys.modules if name.startswith("own_parts_")]:
        del sys.modules[name]


def test_the_example_parts_train_and_evaluate_through_one_experiment(ddi_standin_split):
    config = PLNLPConfig.from_mapping({**SMALL, **PARTS})
    check_config(config)
    experiment = prepare_experiment(config, ddi_standin_split)
    model = experiment.model
    assert all(isinstance(conv, GINLayer) for conv in model.encoder.convs)
    assert [conv.eps.requires_grad for conv in model.encoder.convs] == [True, True]
    assert isinstance(model.predictor, HadamardDistanceMLP)
    sampler = build_sampler(config, ddi_standin_split, experiment.graph)
    assert isinstance(sampler, HeadOrTailSampler) and sampler.tail_share == 0.5
    assert isinstance(build_loss(config), MarginRankingLoss) and build_loss(config).margin == 0.5
    result = run_experiment(experiment)
    assert 0.0 <= result.best_metrics["valid_hits_20"] <= 1.0
    assert [epoch.train_loss > 0 for epoch in result.history] == [True, True]


def test_a_part_s_settings_come_whole_or_one_key_at_a_time_and_are_logged_one_a_key():
    config = PLNLPConfig.from_mapping({
        **PARTS, "encoder_options.eps": 0.25, "encoder_options": {"train_eps": False}})
    assert config.encoder_options == {"train_eps": False, "eps": 0.25}
    assert config.replace(**{"encoder_options.eps": 0.5}).encoder_options == \
        {"train_eps": False, "eps": 0.5}
    shaping = config.shaping_settings()
    assert shaping["encoder_options.eps"] == 0.25 and "encoder_options" not in shaping
    assert shaping["loss_options.margin"] == 0.5
    assert "edge_margin" in shaping and "candidate_pool" in shaping  # they may read them
    assert "predictor_options" not in shaping and "predictor_options.residual" not in shaping
    assert "encoder_options" not in PLNLPConfig().shaping_settings()  # none for built-ins
    model = build_model(config, PLNLPConfig().validate(), 10)
    assert [conv.initial_eps for conv in model.encoder.convs] == [0.25, 0.25]


def test_a_part_given_as_its_class_is_named_by_its_import_path():
    config = PLNLPConfig.from_mapping({"encoder": GINLayer, "loss": MarginRankingLoss})
    assert config.encoder == "examples.link_parts.layers:GINLayer"
    assert own_parts(config) == {"encoder": "examples.link_parts.layers:GINLayer",
                                 "loss": "examples.link_parts.losses:MarginRankingLoss"}
    assert not is_import_path("sage") and is_import_path(config.loss)

    def local() -> type:
        class Layer(torch.nn.Module):
            pass
        return Layer

    with pytest.raises(PLNLPError, match="defined in a function, which Ray's workers"):
        import_path_of("encoder", local())


def test_a_loss_that_says_it_is_weighted_is_given_the_margins(ddi_standin_split, write_module):
    module = write_module("""
        from plnlp_core.losses import RankingLoss

        class Weighted(RankingLoss):
            weighted = True

            def forward(self, pos, neg, weight=None):
                return (weight.unsqueeze(-1) * (1 - pos.unsqueeze(-1) + neg).relu()).sum()
    """)
    config = PLNLPConfig.from_mapping({**SMALL, "loss": f"{module}:Weighted"})
    check_config(config)
    assert reads_weights(config) and not reads_weights(PLNLPConfig())
    edges, margins = training_positives(ddi_standin_split, config)
    assert margins is not None and margins.shape == edges.shape[:1]
    with pytest.raises(PLNLPError, match="with edge_margin raw needs edge weights"):
        check_config(config.replace(edge_margin="raw"))


def test_an_edge_level_predictor_of_ones_own_scores_with_the_graph_lookup(
        ddi_standin_split, write_module):
    module = write_module("""
        from plnlp_core.nn.edge_level.edge_predictor import EdgeLevelPredictor

        class Shallow(EdgeLevelPredictor):
            def __init__(self, in_channels, hidden_channels, dropout=0.0):
                super().__init__(in_channels, hidden_channels, 1, dropout, counts=False)
    """)
    config = PLNLPConfig.from_mapping({**SMALL, "encoder_level": "edge", "encoder": "gcn",
                                       "predictor": f"{module}:Shallow"})
    check_config(config)
    result = run_experiment(prepare_experiment(config.replace(epochs=1), ddi_standin_split))
    assert 0.0 <= result.best_metrics["valid_hits_20"] <= 1.0
    with pytest.raises(PLNLPError, match="edge_path_length applies to predictor mlp only"):
        check_config(config.replace(edge_path_length=3))


def test_a_model_guided_sampler_of_ones_own_gets_the_candidate_pool(write_module):
    module = write_module("""
        from plnlp_core.sampling import HardSampler

        class Hardest(HardSampler):
            pass
    """)
    config = PLNLPConfig.from_mapping({"sampler": f"{module}:Hardest", "candidate_pool": 70})
    check_config(config)  # a pool of 70 needs more than the 64 nodes the check starts from
    assert config.shaping_settings()["candidate_pool"] == 70


def test_a_symmetric_predictor_of_ones_own_is_refused_on_a_directed_graph():
    config = PLNLPConfig.from_mapping({
        "dataset": "citation2", "predictor": "examples.link_parts.predictors:HadamardDistanceMLP"})
    with pytest.raises(PLNLPError, match="is symmetric but ogbl-citation2 is directed"):
        check_config(config)
    check_config(config.replace(force_symmetric_predictor=True))


def test_the_check_leaves_the_random_state_as_it_was():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    check_config(PLNLPConfig.from_mapping(PARTS))
    assert torch.equal(torch.rand(3), expected)


def test_a_loose_package_is_recorded_by_its_files_and_an_installed_one_by_its_version(
        write_module, tmp_path):
    assert code_location("examples.link_parts.layers:GINLayer") == REPO_ROOT / "examples"
    module = write_module("class Part:\n    pass\n")
    path = f"{module}:Part"
    assert code_location(path) == tmp_path / f"{module}.py"
    first = code_version(path)
    assert first.startswith("sha256:") and len(first) == len("sha256:") + 16
    (tmp_path / f"{module}.py").write_text("class Part:\n    answer = 42\n")
    assert code_version(path) != first
    assert code_version("yaml:safe_load") == f"PyYAML {yaml.__version__}"


@pytest.mark.parametrize("settings", [
    {"dataset": "collab", "node_input": "features", "encoder": "none",
     "predictor": "examples.link_parts.predictors:HadamardDistanceMLP"},
    {"dataset": "collab", "node_input": "both", "encoder": "examples.link_parts.layers:GINLayer"},
    {"dataset": "ppa", "node_input": "features", "feature_categories": 58,
     "encoder": "examples.link_parts.layers:GINLayer"},
], ids=["features-no-encoder", "embedding-and-features", "feature-categories"])
def test_the_check_feeds_a_part_the_node_input_the_dataset_s_features_make(settings):
    check_config(PLNLPConfig.from_mapping(settings))


def test_a_constructor_with_kwargs_takes_any_setting_but_those_the_product_passes(write_module):
    module = write_module("""
        import torch

        class Open(torch.nn.Module):
            def __init__(self, in_channels, out_channels, **settings):
                super().__init__()
                self.settings = settings
                self.lin = torch.nn.Linear(in_channels, out_channels)

            def forward(self, x, adj):
                return self.lin(x)
    """)
    config = PLNLPConfig.from_mapping({**SMALL, "encoder": f"{module}:Open",
                                       "encoder_options": {"anything": 1}})
    check_config(config)
    assert build_model(config, PLNLPConfig().validate(), 10).encoder.convs[0].settings == \
        {"anything": 1}
    with pytest.raises(PLNLPError, match="encoder_options.in_channels is not a setting of "
                                         r"encoder .*; it takes: any but those \(the product "
                                         r"passes in_channels, out_channels\)"):
        check_config(config.replace(encoder_options={"in_channels": 3}))
