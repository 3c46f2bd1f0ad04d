"""PLNLPConfig refuses unknown keys, wrong types and impossible settings
before any work starts, each with one sentence naming the setting."""
import pytest

from plnlp_core.config import PLNLPConfig, with_graph_node_input
from plnlp_core.errors import PLNLPError


def refusal(**settings: object) -> str:
    """The message validate() refuses ``settings`` with."""
    with pytest.raises(PLNLPError) as caught:
        PLNLPConfig.from_mapping(settings).validate()
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".")
    return message


def test_defaults_validate_and_describe_ddi():
    info = PLNLPConfig().validate()
    assert info.name == "ddi" and info.ogb_name == "ogbl-ddi"


def test_from_mapping_refuses_an_unknown_key_and_lists_the_valid_ones():
    with pytest.raises(PLNLPError) as caught:
        PLNLPConfig.from_mapping({"num_negs": 3})
    assert "'num_negs'" in str(caught.value)
    assert "num_neg" in str(caught.value).split("valid settings are:")[1]


@pytest.mark.parametrize(("key", "value"), [
    ("num_neg", "3"), ("num_neg", 2.5), ("num_neg", True), ("dropout", "0.1"),
    ("force_symmetric_predictor", 1), ("encoder", 3), ("min_train_year", "2010"),
    ("lr", None),
])
def test_from_mapping_refuses_a_value_of_the_wrong_type_naming_the_setting(key, value):
    with pytest.raises(PLNLPError, match=f"setting {key} must be"):
        PLNLPConfig.from_mapping({key: value})


def test_from_mapping_accepts_ints_for_floats_and_null_for_optional_settings():
    config = PLNLPConfig.from_mapping({"lr": 1, "dropout": 0, "min_train_year": None})
    assert config.lr == 1.0 and isinstance(config.lr, float)
    assert isinstance(config.dropout, float)
    assert config.min_train_year is None


def test_replace_checks_the_changed_settings_too():
    assert PLNLPConfig().replace(num_neg=4).num_neg == 4
    with pytest.raises(PLNLPError, match="num_neg"):
        PLNLPConfig().replace(num_neg="4")


@pytest.mark.parametrize(("key", "value", "valid"), [
    ("dataset", "wikics", "citation2, citeseer, collab, cora, ddi, ppa, pubmed"),
    ("encoder", "gin", "agdn, gat, gcn, none, pure_gcn, sage, sum"),
    ("predictor", "cosine", "bilinear, dot, mlp, mlp_concat"),
    ("loss", "bce", "auc, ce, hinge_auc, log_rank, weighted_hinge_auc"),
    ("sampler", "uniform", "adversarial, global, hard, local"),
    ("node_input", "onehot", "embedding, features, both"),
    ("walk_starts", "some", "all, train_endpoints"),
])
def test_validate_refuses_an_unknown_name_and_lists_the_valid_ones(key, value, valid):
    message = refusal(**{key: value})
    assert repr(value) in message
    assert valid in message


@pytest.mark.parametrize("key", [
    "embedding_dim", "hidden_channels", "encoder_layers", "predictor_hidden",
    "predictor_layers", "num_neg", "epochs", "batch_size", "eval_every", "eval_batch_size",
])
@pytest.mark.parametrize("value", [0, -1])
def test_validate_refuses_non_positive_sizes(key, value):
    assert refusal(**{key: value}).startswith(f"{key} must be at least 1")


@pytest.mark.parametrize("key", ["dropout", "predictor_dropout"])
@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5])
def test_validate_refuses_dropout_outside_zero_to_one(key, value):
    assert refusal(**{key: value}).startswith(f"{key} must be in [0, 1)")


@pytest.mark.parametrize(("key", "value"), [("lr", 0.0), ("lr", -0.01), ("l2", -1e-4)])
def test_validate_refuses_non_positive_learning_rate_and_negative_l2(key, value):
    assert refusal(**{key: value}).startswith(f"{key} must be positive")


def test_validate_refuses_negative_walk_length():
    assert "walk_length" in refusal(walk_length=-1)


@pytest.mark.parametrize("value", [-2, 3])
def test_validate_refuses_heart_negatives_that_are_odd_or_negative(value):
    assert "heart_negatives must be 0 (off) or an even number" in refusal(heart_negatives=value)
    PLNLPConfig(heart_negatives=500).validate()


def test_validate_refuses_raw_margins_without_weights_on_ddi():
    message = refusal(loss="weighted_hinge_auc", walk_length=0, edge_margin="raw")
    assert "weighted_hinge_auc" in message and "edge_margin=normalized" in message
    assert PLNLPConfig(loss="weighted_hinge_auc").validate().name == "ddi"


def test_validate_accepts_weighted_hinge_auc_with_random_walks_or_edge_weights():
    assert PLNLPConfig(loss="weighted_hinge_auc", walk_length=3).validate().name == "ddi"
    assert PLNLPConfig(dataset="collab", loss="weighted_hinge_auc").validate().edge_weights


@pytest.mark.parametrize("node_input", ["features", "both"])
def test_validate_refuses_node_features_on_ddi_which_has_none(node_input):
    message = refusal(node_input=node_input)
    assert "node_input" in message and "ddi" in message


def test_validate_accepts_node_features_where_the_dataset_has_them():
    assert PLNLPConfig(dataset="collab", node_input="both").validate().feature_dim == 128


@pytest.mark.parametrize("predictor", ["dot", "mlp"])
def test_validate_refuses_a_symmetric_predictor_on_directed_citation2(predictor):
    message = refusal(dataset="citation2", predictor=predictor)
    assert repr(predictor) in message and "force_symmetric_predictor" in message


@pytest.mark.parametrize("predictor", ["dot", "mlp"])
def test_validate_accepts_a_symmetric_predictor_on_citation2_when_forced(predictor):
    info = PLNLPConfig(dataset="citation2", predictor=predictor,
                       force_symmetric_predictor=True).validate()
    assert info.directed


@pytest.mark.parametrize("predictor", ["bilinear", "mlp_concat"])
def test_validate_accepts_a_directed_predictor_on_citation2(predictor):
    assert PLNLPConfig(dataset="citation2", predictor=predictor).validate().directed


def test_validate_refuses_min_train_year_on_a_dataset_without_years():
    assert "min_train_year" in refusal(min_train_year=2010)
    assert PLNLPConfig(dataset="collab", min_train_year=2010).validate().edge_years


def test_to_dict_round_trips_through_from_mapping():
    config = PLNLPConfig(encoder="gcn", num_neg=3, dropout=0.5)
    assert PLNLPConfig.from_mapping(config.to_dict()) == config


def test_a_heuristic_is_shaped_by_its_graph_and_its_evaluation_alone():
    config = PLNLPConfig(dataset="collab", embedding_dim=512, epochs=500, valid_as_input=True,
                         heart_negatives=100)
    assert config.shaping_settings(heuristic=True) == {
        "dataset": "collab", "valid_as_input": True, "min_train_year": None,
        "heart_negatives": 100, "heart_mode": "heart", "heart_files": None}
    assert "heart_mode" not in PLNLPConfig(dataset="collab").shaping_settings(heuristic=True)


def test_heart_s_settings_are_refused_when_they_cannot_go_together():
    with pytest.raises(PLNLPError, match="heart_files needs heart_negatives"):
        PLNLPConfig(heart_files="dataset/ogbl-ddi").validate()
    with pytest.raises(PLNLPError, match="heart_filtered builds its own"):
        PLNLPConfig(heart_negatives=500, heart_mode="heart_filtered",
                    heart_files="dataset/ogbl-ddi").validate()
    with pytest.raises(PLNLPError, match="unknown heart_mode 'strict'; choose one of: heart, "
                                         "heart_filtered"):
        PLNLPConfig(heart_negatives=500, heart_mode="strict").validate()


def test_plnlp_is_shaped_by_every_setting_of_the_parts_it_uses():
    shaping = PLNLPConfig(walk_length=3, sampler="adversarial", encoder_level="edge",
                          predictor="ncn").shaping_settings()
    assert {"walk_starts", "walk_rounds", "candidate_pool", "generator_lr", "ncn_beta",
            "predictor_hidden", "target_edge_removal", "embedding_dim", "lr"} <= set(shaping)
    assert not {"degree_power", "edge_counts", "edge_path_length", "predictor_layers"} & set(
        shaping)


@pytest.mark.parametrize(("settings", "dropped"), [
    ({}, {"walk_starts", "walk_rounds", "walk_positives", "candidate_pool", "generator_dim",
          "degree_power", "ncn_xlin", "edge_dropout", "edge_margin", "predictor_hidden",
          "predictor_layers", "feature_categories"}),
    ({"encoder": "none"}, {"hidden_channels", "encoder_layers", "dropout"}),
    ({"node_input": "features", "dataset": "collab"}, {"embedding_dim", "embedding_init"}),
])
def test_plnlp_leaves_out_the_settings_of_the_parts_it_does_not_use(settings, dropped):
    shaping = PLNLPConfig(**settings).shaping_settings()
    assert not dropped & set(shaping)
    assert {"dataset", "encoder", "predictor", "loss", "sampler", "lr", "seed"} <= set(shaping)


def test_a_part_whose_choice_is_open_keeps_its_settings():
    config = PLNLPConfig()
    assert "candidate_pool" not in config.shaping_settings()
    assert "candidate_pool" in config.shaping_settings(open_choices=["sampler"])
    assert "walk_starts" in config.shaping_settings(open_choices=["walk_length"])


def test_validate_refuses_a_negative_initial_residual():
    with pytest.raises(PLNLPError, match="encoder_initial_residual must be 0 .off. or positive"):
        PLNLPConfig(encoder_initial_residual=-0.1).validate()


def test_validate_refuses_an_initial_residual_whose_input_differs_from_the_layers():
    with pytest.raises(PLNLPError, match=r"node input \(256 channels\) .* output \(64\)"):
        PLNLPConfig(encoder_initial_residual=0.1, hidden_channels=64).validate()
    PLNLPConfig(encoder_initial_residual=0.1).validate()
    PLNLPConfig(encoder_initial_residual=0.1, hidden_channels=64, encoder="none").validate()


@pytest.mark.parametrize("settings", [{"predictor": "dot"}, {"predictor": "mlp_concat"},
                                      {"encoder_level": "edge", "predictor": "mlp"}])
def test_validate_refuses_predictor_residual_off_the_node_level_mlp(settings):
    with pytest.raises(PLNLPError, match="predictor_residual adds h_i . h_j to each hidden layer "
                                         "of the node level's predictor mlp"):
        PLNLPConfig(predictor_residual=True, **settings).validate()


def test_validate_refuses_predictor_residual_whose_hidden_layers_differ_from_the_nodes():
    with pytest.raises(PLNLPError, match=r"\(256 channels\) .* predictor \(64\)"):
        PLNLPConfig(predictor="mlp", predictor_residual=True, predictor_hidden=64).validate()
    PLNLPConfig(predictor="mlp", predictor_residual=True).validate()
    PLNLPConfig(predictor="mlp", predictor_residual=True, predictor_hidden=64,
                predictor_layers=1).validate()


def test_predictor_residual_shapes_a_run_only_with_the_node_level_mlp():
    assert "predictor_residual" not in PLNLPConfig().shaping_settings()
    assert "predictor_residual" in PLNLPConfig(predictor="mlp").shaping_settings()


def test_diffusion_hops_below_one_is_refused_and_shapes_only_agdn_runs():
    with pytest.raises(PLNLPError, match="diffusion_hops must be at least 1, got 0."):
        PLNLPConfig(encoder="agdn", diffusion_hops=0).validate()
    assert "diffusion_hops" not in PLNLPConfig().shaping_settings()
    assert "diffusion_hops" in PLNLPConfig(encoder="agdn").shaping_settings()


def test_encoder_relu_shapes_runs_of_encoders_with_weights_only():
    assert "encoder_relu" in PLNLPConfig().shaping_settings()
    assert "encoder_relu" not in PLNLPConfig(encoder="sum", embedding_dim=256).shaping_settings()


def test_a_graph_with_features_trains_on_them_unless_the_settings_say():
    """One default of a run's node input: both beside features, the embedding
    without them; a node input the settings name is kept, and the field's own
    default is a config's made without a graph."""
    assert with_graph_node_input({"lr": 0.01}, 1433) == {"lr": 0.01, "node_input": "both"}
    assert with_graph_node_input({}, 0) == {"node_input": "embedding"}
    named = {"node_input": "features"}
    assert with_graph_node_input(named, 0) == named
    assert PLNLPConfig().node_input == "embedding"


def test_batches_grow_to_their_fraction_of_an_epoch_and_never_shrink():
    """B = max(batch_size / W, ceil(f P)): a small graph keeps batch_size, a
    large one takes at most 1 / f steps an epoch, each worker its share."""
    config = PLNLPConfig(batch_size=1152, batch_fraction=0.125)
    assert config.batch_for(3695) == 1152
    assert config.batch_for(29_690) == 3712
    assert -(-29_690 // config.batch_for(29_690)) == 8
    assert config.batch_for(14_845, world_size=2) == 1856
    assert PLNLPConfig(batch_size=1152).batch_for(29_690) == 1152
