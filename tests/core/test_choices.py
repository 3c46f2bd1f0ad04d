"""The torch-free tables a config is checked against
(:mod:`plnlp_core.choices`) name what the implementations register."""
from plnlp_core import choices
from plnlp_core.losses import LOSSES
from plnlp_core.nn import EDGE_PREDICTORS, ENCODER_LEVELS, ENCODERS, PREDICTORS
from plnlp_core.nn.encoders.encoder import WEIGHT_FREE_ENCODERS
from plnlp_core.sampling import SAMPLERS
from plnlp_core.scoring.heuristics import HEURISTICS


def test_encoders_match_the_registry():
    assert choices.ENCODER_CHOICES.names == ENCODERS.names
    assert choices.WEIGHT_FREE_ENCODERS == WEIGHT_FREE_ENCODERS


def test_predictors_match_the_registries_and_their_symmetry():
    for table, registry in ((choices.PREDICTOR_CHOICES, PREDICTORS),
                            (choices.EDGE_PREDICTOR_CHOICES, EDGE_PREDICTORS)):
        assert table.kind == registry.kind
        assert {name: table.get(name) for name in table.names} == \
            {name: registry.get(name).symmetric for name in registry.names}


def test_samplers_match_the_registry_and_which_are_guided():
    assert {name: choices.SAMPLER_CHOICES.get(name) for name in choices.SAMPLER_CHOICES.names} \
        == {name: SAMPLERS.get(name).guided for name in SAMPLERS.names}


def test_losses_levels_and_heuristics_match_their_registries():
    assert choices.LOSS_CHOICES.names == LOSSES.names
    assert choices.WEIGHTED_LOSSES <= set(LOSSES.names)
    assert list(choices.ENCODER_LEVEL_CHOICES) == ENCODER_LEVELS.names
    assert list(choices.HEURISTIC_CHOICES) == HEURISTICS.names

