"""Every refusal of the command lines, as ``docs/errors.md`` lists it: each
catalog entry is a key of :data:`ENTRIES`, with a stable part of its sentence,
its exit code, what becomes of the MLflow run and the test here that asserts
them; :func:`test_the_catalog_lists_exactly_these_entries` keeps the catalog
and the tests in step. Interrupts, unreachable services, GPU memory and two
runs sharing one SQLite store are tested here too."""
import errno
import functools
import http.server
import importlib
import json
import logging
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import grpc
import mlflow
import numpy as np
import psutil
import pytest
import torch
from mlflow.tracking import MlflowClient
from ray.core.generated import gcs_service_pb2

import pipelines.runtime.interrupts
import pipelines.runtime.ray_cluster
from components.recording.sweep_records import TrialOutcome
from components.recording.tags import (
    DRIVER_TAG,
    FAILURE_TAG,
    INTERRUPTED_TAG,
    OUTCOME_TAG,
    TRIAL_TAG,
    TUNE_STATE_TAG,
)
from components.storage.split_meta import DatasetMeta
from pipelines.planning.presets import load_preset
from pipelines.planning.sweep_space import SearchSpace
from pipelines.run import main as run_main
from pipelines.runtime import job, services
from pipelines.standin import main as standin_main
from pipelines.tune import main as tune_main
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError
from plnlp_testing.processes import (
    all_ended,
    descendants,
    free_port,
    pipeline_env,
    process_group,
    signal_the_tree,
)
from plnlp_testing.tracking_server import TrackingServer
from plnlp_testing.warm_start import cached_load, empty_tracking_store
from tests.standin import write_collab_standin, write_ddi_standin

REPO_ROOT = Path(__file__).resolve().parents[2]
CATALOG = REPO_ROOT / "docs" / "errors.md"
STANDIN = ["--set", "embedding_dim=16", "--set", "hidden_channels=16",
           "--set", "predictor_hidden=16", "--set", "batch_size=64", "--set", "epochs=2"]
# a graph with node features starts from own.yaml's features preset, whose linear input layer
# must meet the weight-free encoder's width
FEATURES_STANDIN = ["--set", "input_projection=16"]
REFUSE_WITHIN_S = 30


@dataclass(frozen=True)
class Entry:
    """One row of ``docs/errors.md``."""

    expected: str  # a stable part of the line its test prints (the test's values filled in)
    exit_code: int | None  # None: raised by the library, which no command reaches
    run: str  # what becomes of an MLflow run: "none", "FAILED" or "KILLED"
    test: str  # the test function here that asserts it


def settings(expected: str) -> Entry:
    return Entry(expected, 2, "none", "test_bad_settings_are_refused_before_anything_starts")


def service(expected: str, test: str) -> Entry:
    return Entry(expected, 2, "none", test)


def failure(expected: str, test: str) -> Entry:
    return Entry(expected, 1, "FAILED", test)


def space(expected: str) -> Entry:
    return Entry(expected, 2, "none", "test_bad_search_spaces_are_refused")


def resume(expected: str) -> Entry:
    return Entry(expected, 2, "none", "test_resume_refuses_a_run_it_cannot_go_on_with")


def sweep_resume(expected: str) -> Entry:
    return Entry(expected, 2, "none", "test_tune_resume_refuses_a_sweep_it_cannot_go_on_with")


def predict(expected: str) -> Entry:
    return Entry(expected, 2, "none", "test_predict_refuses_what_it_cannot_use")


def own_graph(expected: str) -> Entry:
    return failure(expected, "test_a_bad_graph_of_ones_own_fails_the_load")


ENTRIES: dict[str, Entry] = {
    # names and settings
    "unknown-dataset": settings("unknown dataset 'wikics'; choose one of: citation2, citeseer, "
                                "collab, cora, ddi"),
    "unknown-preset": settings("unknown preset 'huge' for ddi; choose one of:"),
    "unknown-encoder": settings("unknown encoder 'gin'; choose one of:"),
    "unknown-predictor": settings("unknown predictor 'cosine'; choose one of:"),
    "unknown-loss": settings("unknown loss 'mse'; choose one of:"),
    "unknown-sampler": settings("unknown sampler 'uniform'; choose one of:"),
    # parts of one's own (import paths), before anything starts
    "part-misspelled": settings("encoder 'my parts:GIN' is not an import path; write "
                                "module.path:ClassName"),
    "part-options-builtin": settings("encoder_options sets eps for encoder 'sage', a built-in "
                                     "encoder, which takes its settings from the config's own"),
    "part-not-importable": settings("encoder 'no_such_parts.layers:GIN' cannot be imported "
                                    "(ModuleNotFoundError: No module named 'no_such_parts'); "
                                    "install the package that holds it, or run from the folder "
                                    "that holds no_such_parts"),
    "part-name-missing": settings("encoder 'examples.link_parts.layers:GINEncoder' names nothing "
                                  "in examples.link_parts.layers (its classes: GINLayer); give "
                                  "one of them after the colon."),
    "part-wrong-kind": settings("loss 'examples.link_parts.layers:GINLayer' is the class "
                                "examples.link_parts.layers.GINLayer, not a subclass of "
                                "plnlp_core.losses.RankingLoss; a loss is a class whose forward("),
    "part-flag-missing": settings("predictor 'flagless_parts:Scorer' has no symmetric flag; give "
                                  "the class symmetric = True or False"),
    "part-option-unknown": settings("encoder_options.heads is not a setting of encoder "
                                    "'examples.link_parts.layers:GINLayer'; it takes: eps, "
                                    "train_eps (the product passes in_channels, out_channels)."),
    "part-not-built": settings("could not be built with in_channels=512, hidden_channels=512, "
                               "num_layers=2, dropout=0.3, residual=True (ValueError: a residual "
                               "MLP adds its input (1024) to hidden layers of 512); fix "
                               "predictor_options or the class's __init__"),
    "part-call-fails": settings("failed on a tiny graph of 64 nodes (TypeError: "
                                "MLPPredictor.forward() takes 3 positional arguments but 4 were "
                                "given); its forward(h [N, C], pairs [M, 2], lookup) returns [M] "
                                "at encoder_level edge"),
    "part-wrong-shape": settings("encoder 'narrow_parts:Narrow' returned shape [64, 3] on a tiny "
                                 "graph of 64 nodes, where [64, 512] (nodes x out_channels) was "
                                 "due"),
    "part-defined-in-main": Entry("is defined in __main__ (a notebook or script), which Ray's "
                                  "workers and a served model cannot import", None, "none",
                                  "test_library_safety_nets_raise_plnlp_error"),
    "run-job-unknown-part": Entry("run_job takes parts as encoder=, predictor=, loss=, sampler=; "
                                  "not layer.", None, "none",
                                  "test_library_safety_nets_raise_plnlp_error"),
    "unknown-choice": settings("unknown lr_decay 'cosine'; choose one of: none, linear."),
    "no-scheduler-setting": settings("unknown setting 'scheduler'; valid settings are:"),
    "unknown-setting": settings("unknown setting 'batchsize'; valid settings are:"),
    "wrong-type": settings("setting lr must be float or int, got 'fast'."),
    "not-key-value": settings("--set 'lr' is not KEY=VALUE; write e.g. --set lr=0.01."),
    "below-one": settings("num_neg must be at least 1, got 0."),
    "clip-not-positive": settings("clip_grad_norm must be positive or null (off), got 0.0."),
    "dropout-range": settings("dropout must be in [0, 1), got 1.5."),
    "projection-dropout-without-projection": settings("projection_dropout drops the projected "
                                                      "node input, and input_projection is null"),
    "completion-range": settings("ncn_completion_threshold must be in (0, 1] and "
                                 "ncn_completion_alpha at least 0, got 1.5 and 1.0."),
    "target-removal-limit-range": settings("target_removal_limit must be in (0, 1] (the largest "
                                           "share of the graph's edges a training step removes "
                                           "at once), got 1.5."),
    "batch-fraction-range": settings("batch_fraction must be in (0, 1] (a batch's least share "
                                     "of an epoch's positives) or null, got 1.5."),
    "lr-not-positive": settings("lr must be positive, got 0.0."),
    "walk-length-negative": settings("walk_length must be 0 (off) or positive, got -1."),
    "initial-residual-negative": settings("encoder_initial_residual must be 0 (off) or "
                                          "positive, got -1.0."),
    "initial-residual-size": settings("encoder_initial_residual adds the node input (512 "
                                      "channels) to every encoder layer's output (64); set "
                                      "embedding_dim to 64"),
    "predictor-residual-predictor": settings("predictor_residual adds h_i * h_j to each hidden "
                                             "layer of the node level's predictor mlp; set "
                                             "predictor=mlp at encoder_level node"),
    "predictor-residual-size": settings("predictor_residual adds h_i * h_j (512 channels) to "
                                        "each hidden layer of the predictor (64); set "
                                        "predictor_hidden to 512"),
    "node-target-edge-removal": settings("node_target_edge_removal hides each step's positive "
                                         "edges from the node level's encoder; set "
                                         "encoder_level=node with an encoder other than none"),
    "heart-negatives-odd": settings("heart_negatives must be 0 (off) or an even number of hard "
                                    "negatives per positive, half replacing each endpoint "
                                    "(HeaRT uses 500), got 5."),
    "heart-files-without-negatives": settings("heart_files needs heart_negatives set to the "
                                              "files' number of negatives per positive (HeaRT's: "
                                              "500)."),
    "heart-files-filtered": settings("heart_files are HeaRT's own negatives (heart_mode=heart), "
                                     "and heart_filtered builds its own; leave heart_files out "
                                     "or set heart_mode=heart."),
    "heart-file-unusable": failure("heart_valid_samples.npy holds an array of shape [3, 4, 2], "
                                   "not [positives, 6, 2]; set heart_negatives to the files' "
                                   "number of negatives per positive",
                                   "test_heart_files_that_cannot_be_used_fail_the_run"),
    "walk-settings-without-walks": settings("walk_rounds and walk_positives=walks need random "
                                            "walks; set walk_length to a positive length"),
    "features-missing": settings("node_input 'both' needs node features, and ogbl-ddi has none; "
                                 "set node_input=embedding."),
    "symmetric-predictor-directed": settings("predictor 'dot' is symmetric but ogbl-citation2 is "
                                             "directed; use bilinear or mlp_concat"),
    "raw-margin-without-weights": settings("loss 'weighted_hinge_auc' with edge_margin raw needs "
                                           "edge weights, and ogbl-ddi has none"),
    "years-missing": settings("min_train_year filters edges by year, and ogbl-ddi has no edge "
                              "years; remove the setting."),
    "edge-level-predictor": settings("encoder_level edge scores pairs with an edge-level "
                                     "predictor, so predictor 'dot' cannot serve it; set "
                                     "predictor=mlp or ncn."),
    "ncn-at-node-level": settings("predictor 'ncn' reads the pair's common neighbours, which "
                                  "only encoder_level edge gives; set encoder_level=edge."),
    "edge-level-directed": settings("encoder_level edge is symmetric in i and j (common "
                                    "neighbours in the undirected graph) but ogbl-citation2 is "
                                    "directed; set force_symmetric_predictor=true"),
    "edge-path-length": settings("edge_path_length must be 2 (common neighbours) or 3 (also "
                                 "paths of length 3), got 4."),
    "edge-path-without-edge-level": settings("edge_path_length applies to encoder_level edge "
                                             "only; set encoder_level=edge or leave "
                                             "edge_path_length at 2."),
    "edge-setting-at-node-level": settings("target_edge_removal applies to encoder_level edge "
                                           "only; set encoder_level=edge or leave "
                                           "target_edge_removal at true."),
    "edge-dropout-at-node-level": settings("edge_dropout applies to encoder_level edge only; "
                                           "set encoder_level=edge or leave edge_dropout at "
                                           "0.0."),
    "ncn-setting-with-mlp": settings("ncn_beta applies to predictor ncn only; set "
                                     "predictor=ncn or leave ncn_beta at 1.0."),
    "counts-with-ncn": settings("edge_counts and edge_path_length 3 add count features to "
                                "predictor mlp, and predictor ncn has none"),
    "feature-categories-range": settings("feature_categories must be at least 2 or null "
                                         "(features used raw), got 1."),
    "feature-categories-without-features": settings("feature_categories embeds the node "
                                                    "features, which node_input embedding leaves "
                                                    "out"),
    "feature-categories-width": settings("feature_categories 58 reads the node features as 58 "
                                         "one-hot columns or one integer column, and "
                                         "ogbl-collab has 128"),
    "sum-encoder-size": settings("encoder sum has no weights, so the node input's size (512) "
                                 "must equal hidden_channels (64)"),
    "file-unreadable": settings("; give a readable YAML file."),
    "file-not-mapping": settings("must be a YAML mapping, got list."),
    "config-other-dataset": settings("the config names dataset 'collab' but --dataset is 'ddi'; "
                                     "choose one with --dataset."),
    "preset-unknown-setting": settings("sets unknown hiden_channels; fix the preset file"),
    "runs-below-one": settings("--runs must be at least 1, got 0."),
    "register-heuristic": settings("--register keeps a trained model, and heuristic:cn is a "
                                   "heuristic with none"),
    # pipelines/predict.py
    "predict-file-format": predict("--out out.txt must be a .csv or .parquet file."),
    "predict-out-folder-missing": predict("--out missing/out.csv: its folder missing does not "
                                          "exist; create it first"),
    "predict-file-missing": predict("--pairs missing.csv does not exist."),
    "predict-file-unreadable": predict("--pairs zero-bytes.csv cannot be read (Empty CSV file)"),
    "predict-pairs-columns": predict("--pairs ab.csv has no src or dst column (it has: a, b)"),
    "predict-for-without-top-k": predict("--for names the nodes of --top-k; add --top-k K."),
    "predict-top-k-below-one": predict("--top-k must be at least 1; got 0."),
    "predict-top-k-too-large": predict("--top-k must be between 1 and 59 (the model's graph has "
                                       "60 nodes); got 60."),
    "predict-unknown-id": predict("--for node id 'aspirin' is not a node of the model's graph"),
    "predict-blank-cell": predict("row 2's dst is blank; give each row a destination node id, "
                                  "or drop the row."),
    "predict-id-not-integer": predict("source node ids must be integers for this model, and row "
                                      "2's src is 1.5;"),
    "predict-id-out-of-range": predict("destination node id 60 is not a node of the model's "
                                       "graph (its ids are 0 to 59)"),
    "model-uri-malformed": predict("--model 'links' is not a model URI; give runs:/<run id>/model"),
    "model-store-missing": Entry("there is no MLflow store at sqlite:", 2, "none",
                                 "test_predict_refuses_a_store_that_does_not_exist_and_makes_none"),
    "model-run-unknown": predict("there is no MLflow run 0123 at sqlite:"),
    "model-logged-unknown": predict("there is no logged model m-0123abcd in sqlite:"),
    "model-run-heuristic": predict("scored pairs with heuristic:cn, which has no model to load"),
    "model-run-path": predict("not 'checkpoint'."),
    "model-run-seeds": predict("trained 2 seeds, each with its own model; give one of theirs"),
    "model-run-no-model": predict("has no model (status RUNNING): only a finished run logs one"),
    "model-unknown-name": predict("there is no registered model 'nothing' in sqlite:"),
    "model-unknown-alias": predict("registered model 'links' has no alias 'best' (its aliases: "
                                   "champion)"),
    "model-unknown-version": predict("registered model 'links' has no version 7 (it has 1)."),
    "model-part-missing": Entry("this model's predictor 'carried_parts:Scorer' cannot be "
                                "imported here (ModuleNotFoundError: No module named "
                                "'carried_helper'); install what it imports on this machine", 2,
                                "none", "test_predict_refuses_a_model_whose_part_does_not_import_"
                                "here"),
    "workers-below-one": settings("--num-workers and --cpus-per-worker must be at least 1."),
    "max-failures-negative": settings("--max-failures must be 0 or more, got -1."),
    "gpu-preset-on-cpu": settings("the ddi 'paper' preset is made for a GPU and would take hours "
                                  "on CPUs; add --use-gpu on a machine with GPUs"),
    "workers-exceed-cpus": service("64 workers need 64 CPUs but the Ray cluster has",
                                   "test_a_worker_group_the_cluster_cannot_hold_is_refused"),
    "workers-exceed-gpus": service("1 workers need 1 GPUs but the Ray cluster has 0; lower "
                                   "--num-workers or drop --use-gpu.",
                                   "test_a_worker_group_the_cluster_cannot_hold_is_refused"),
    # graphs of one's own, before anything starts
    "own-file-missing": settings("the edge list file"),
    "own-file-unreadable": settings("could not be read as csv (Empty CSV file); fix or export it "
                                    "again."),
    "own-missing-columns": settings("has no column src, dst (its columns: from, to); name its "
                                    "columns src, dst"),
    "own-split-folder-part": settings("has 0 test files; give it exactly one, test.csv or "
                                      "test.parquet."),
    "own-split-spec": settings("split 'random:0.5,0.5' does not parse;"),
    "own-split-fractions": settings("split 'random:0.9,0.2,0.1' needs three positive fractions "
                                    "that sum to 1"),
    "own-hits-k": settings("--hits-k '20,x' is not a list of positive integers"),
    "own-features-missing": settings("the node feature file"),
    "own-features-empty": settings("is empty; it needs a header and at least one row."),
    "own-features-no-values": settings("has no column besides id; add one numeric column"),
    "own-features-not-numbers": settings("has columns that are not all numbers (a);"),
    "own-features-repeated-id": settings("has several rows for node 3; keep one row per id."),
    "own-features-uncovered": settings("has no row for 1 of the graph's 60 node ids (e.g. 59)"),
    "own-features-non-finite": settings("holds 1 values that are NaN or infinite (or past "
                                        "float32's range), e.g. column a of node 4;"),
    "own-features-negative-index": settings("has the negative feature index -1 (node 2)"),
    "own-features-index-type": settings("holds double values, neither integer indices nor"),
    "own-features-repeated-entry": settings("has several rows for node 1 and feature 5;"),
    "own-features-list-unparsable": settings("holds '1 two' for node 7, which is not a list"),
    "own-features-list-type": settings("holds list<element: double> values, not lists of"),
    "unknown-model": settings("unknown model 'heuristic:katz'; choose plnlp or one of:"),
    # --resume
    "resume-missing-run": resume("there is no MLflow run 0123456789abcdef at sqlite:"),
    "resume-other-dataset": resume("trained collab, not ddi; resume it with --dataset collab."),
    "resume-finished": resume("has already finished; start a new run instead of --resume."),
    "resume-still-running": resume("is still running (its driver, pid "),
    "resume-other-shape": resume("holds a model of another shape ("),
    "resume-other-experiment": resume("is in experiment 'plnlp-ddi', not 'mine'; drop "
                                      "--experiment to go on with it there."),
    "resume-data-missing": resume("holds no ogbl_ddi folder here; give --data-root the folder "
                                  "that holds it"),
    # pipelines/tune.py --resume
    "sweep-resume-settings": sweep_resume("--resume goes on with the sweep's own settings; drop "
                                          "--set, --num-samples."),
    "sweep-resume-missing-run": sweep_resume("there is no MLflow run 0123456789abcdef at sqlite:"),
    "sweep-resume-not-a-sweep": sweep_resume("is not a sweep; give --resume the sweep's run"),
    "sweep-resume-other-dataset": sweep_resume("swept collab, not ddi; resume it with --dataset "
                                               "collab."),
    "sweep-resume-finished": sweep_resume("has already finished; start a new sweep instead of "
                                          "--resume."),
    "sweep-resume-state-gone": sweep_resume("cannot go on: its Ray Tune state is gone ("),
    "sweep-resume-store-missing": Entry(
        "there is no MLflow store at sqlite:", 2, "none",
        "test_tune_resume_refuses_a_store_that_does_not_exist_and_makes_none"),
    # search spaces (pipelines/tune.py)
    "space-unknown-key": space("schedular is not a key of a search space; allowed: preset,"),
    "space-unknown-setting": space("lrate is not a setting; valid settings are:"),
    "space-metric-not-validation": space("metric is 'test_hits_20', not a validation metric of ddi "
                                         "(the test set never steers a sweep); allowed: "
                                         "valid_hits_20"),
    "space-not-allowed": space("search is 'bayes'; allowed: random, grid, optuna."),
    "space-count": space("num_samples is 0; it must be a whole number of at least 1."),
    "space-scheduler-unknown": space("scheduler is {'hyperband': {}}; allowed: absent, or "),
    "space-asha-unknown": space("scheduler.asha.grace is not an ASHA setting"),
    "space-asha-reduction": space("scheduler.asha.reduction_factor must be at least 2."),
    "space-asha-max-t": space("scheduler.asha.max_t must be at least its grace_period."),
    "space-resource-unknown": space("resources.gpus is not a resource"),
    "space-gpus": space("resources.gpus_per_worker is 1.5; it must be 0, a fraction of one GPU"),
    "space-empty": space("space needs at least one searched setting"),
    "space-bad-distribution": space("lr must be one of {choice: [...]}, {grid: [...]}"),
    "space-no-values": space("lr has an empty choice; give a non-empty list of values."),
    "space-bounds": space("lr needs loguniform: [low, high] with 0 < low < high, got [0, 0.1]."),
    "space-grid-continuous": space("lr is a uniform, which a grid cannot enumerate"),
    "space-optuna-grid": space("lr is a grid, which Optuna's search cannot take; use `choice`."),
    "space-bad-value": space("num_neg cannot take 0: num_neg must be at least 1"),
    "trials-per-gpu-count": Entry("--trials-per-gpu is 0; give a whole number of trials of at "
                                  "least 1.", 2, "none", "test_bad_trials_per_gpu_are_refused"),
    "trials-per-gpu-without-gpus": Entry("--trials-per-gpu auto shares GPUs among trials and "
                                         "the Ray cluster has none; drop it to train on CPUs.",
                                         2, "none", "test_trials_per_gpu_on_a_cluster_without_"
                                                    "gpus_is_refused"),
    "trials-per-gpu-too-many": Entry("--trials-per-gpu 60: each trial needs about", 1, "FAILED",
                                     "test_trials_that_do_not_fit_a_gpu_are_refused_naming_how_"
                                     "many_do"),
    "trial-larger-than-gpu": Entry("a trial needs about", 1, "FAILED",
                                   "test_trials_that_do_not_fit_a_gpu_are_refused_naming_how_"
                                   "many_do"),
    "trials-per-gpu-and-gpus": Entry("--trials-per-gpu and --gpus-per-worker both say how much "
                                     "of a GPU a trial holds; give one of them.", 2, "none",
                                     "test_bad_trials_per_gpu_are_refused"),
    "space-too-large": service("resources ask 64 CPUs per trial but the Ray cluster has 2",
                               "test_a_sweep_the_cluster_cannot_hold_is_refused"),
    # stand-ins (pipelines/standin.py)
    "standin-unknown-size": service("unknown stand-in size 'huge'; choose one of:",
                                    "test_impossible_standins_are_refused"),
    "standin-bad-scale": service("the stand-in scale must be a positive number, not -1.0.",
                                 "test_impossible_standins_are_refused"),
    "standin-exists": service("already exists; remove it or choose another folder.",
                              "test_impossible_standins_are_refused"),
    "standin-too-many-nodes": service("has too many nodes; use at most 3,000,000,000.",
                                      "test_impossible_standins_are_refused"),
    "standin-too-many-edges": service("node pairs as edges; use at most half, with more nodes "
                                      "or fewer edges.", "test_impossible_standins_are_refused"),
    "standin-memory": service("of memory to generate but only",
                              "test_impossible_standins_are_refused"),
    "standin-edges-not-drawn": service("distinct edges among",
                                       "test_standin_generators_that_give_up_are_refused"),
    "standin-negatives-not-drawn": service("could not draw negatives that are no edges among",
                                           "test_standin_generators_that_give_up_are_refused"),
    "standin-too-small": Entry("needs at least 2 nodes and one edge, positive and negative in "
                               "every split.", None, "none",
                               "test_library_safety_nets_raise_plnlp_error"),
    "standin-unknown-dataset": Entry("there is no stand-in for 'ppa'; choose one of:", None, "none",
                                     "test_library_safety_nets_raise_plnlp_error"),
    # unreachable or refusing services
    "tracking-unreachable": service("no MLflow tracking server answers at",
                                    "test_an_unreachable_tracking_server_is_refused_quickly"),
    "tracking-credentials": service("refused the credentials (HTTP 40",
                                    "test_a_tracking_server_that_is_not_usable_is_refused"),
    "tracking-not-mlflow": service("answers but not as an MLflow tracking server (HTTP 404)",
                                   "test_a_tracking_server_that_is_not_usable_is_refused"),
    "tracking-host-refused": service("refused the Host header 127.0.0.1:",
                                     "test_a_tracking_server_that_is_not_usable_is_refused"),
    "tracking-unwritable": service("cannot write the MLflow store",
                                   "test_a_tracking_store_that_cannot_be_written_is_refused"),
    "ray-unreachable": service("no Ray cluster answers at RAY_ADDRESS=",
                               "test_an_unreachable_ray_address_is_refused_quickly"),
    "ray-dashboard-address": service("is a Ray dashboard address, which only `ray job submit",
                                     "test_a_ray_address_that_is_not_a_cluster_is_refused"),
    "ray-not-an-address": service("is not a Ray address; give host:port, ray://host:port or auto",
                                  "test_a_ray_address_that_is_not_a_cluster_is_refused"),
    "ray-not-host-port": service("is not host:port; give e.g. head-node:6379",
                                 "test_a_ray_address_that_is_not_a_cluster_is_refused"),
    "ray-not-gcs": service("answers but not as a Ray cluster's GCS",
                           "test_a_ray_address_that_is_not_a_cluster_is_refused"),
    "ray-token-refused": service("refused the authentication token sent; set RAY_AUTH_MODE=token "
                                 "and RAY_AUTH_TOKEN to the cluster's token",
                                 "test_a_cluster_that_refuses_the_token_is_refused"),
    "ray-token-missing": service("RAY_AUTH_MODE=token but no Ray token is set to connect to",
                                 "test_a_cluster_that_refuses_the_token_is_refused"),
    "ray-init-refused-token": service("Ray refused to connect to",
                                      "test_errors_of_ray_init_become_one_sentence"),
    "ray-connect-failed": service("could not connect to",
                                  "test_errors_of_ray_init_become_one_sentence"),
    "ray-local-start-failed": service("the local Ray did not start (The current node timed "
                                      "out during startup.)",
                                      "test_errors_of_ray_init_become_one_sentence"),
    "work-dir-unwritable": service(
        "cannot be written: the ",
        "test_object_storage_that_cannot_be_used_is_refused_before_any_work"),
    "data-root-unreadable": service(
        "--data-root s3://",
        "test_object_storage_that_cannot_be_used_is_refused_before_any_work"),
    "data-root-empty": service(
        "--data-root s3://work/no-ogb holds no files;",
        "test_object_storage_that_cannot_be_used_is_refused_before_any_work"),
    "kubeflow-preset-needs-gpu": service(
        "ppa's paper preset needs a GPU, which the pipeline's pods get only with --use-gpu",
        "test_a_compiled_pipeline_whose_defaults_cannot_run_is_refused"),
    # after the run started
    "data-root-no-dataset": failure(
        "--data-root s3://work/elsewhere holds no ogbl_ddi folder;",
        "test_a_stage_that_cannot_read_object_storage_fails_the_run"),
    "stage-copy-mismatch": failure(
        "could not be copied to this node (data.bin's sha256 differs from its manifest)",
        "test_a_stage_that_cannot_read_object_storage_fails_the_run"),
    "data-missing": failure("and could not be downloaded",
                            "test_a_missing_or_damaged_dataset_fails_the_run"),
    "data-unreadable": failure("could not be read ([Errno 5] Input/output error); replace it "
                               "with a fresh copy",
                               "test_a_missing_or_damaged_dataset_fails_the_run"),
    "data-partial": failure("could not be read (split/target/valid.pt is missing)",
                            "test_a_missing_or_damaged_dataset_fails_the_run"),
    "data-truncated": failure("could not be read (split/target/train.pt is truncated, corrupt or "
                              "holds objects other than numpy arrays)",
                              "test_a_missing_or_damaged_dataset_fails_the_run"),
    "data-runs-code": failure("could not be read (split/target/valid.pt is truncated, corrupt or "
                              "holds objects other than numpy arrays)",
                              "test_a_missing_or_damaged_dataset_fails_the_run"),
    "data-other-dataset": failure("appears to hold ogbl-collab, not ogbl-ddi",
                                  "test_a_missing_or_damaged_dataset_fails_the_run"),
    "gpu-out-of-memory": failure("out of GPU memory (tried to allocate 2.00 GiB); lower "
                                 "batch_size (now 64) or eval_batch_size (now ",
                                 "test_gpu_out_of_memory_in_a_train_worker_names_the_settings"),
    "precision-unsupported": failure("precision bf16 needs a GPU that computes in bfloat16, and "
                                     "Tesla V100-SXM2-16GB does not",
                                     "test_bf16_on_a_gpu_without_it_is_refused_naming_the_device"),
    "sampler-too-dense": failure("found no non-edge among all pairs; the graph is too dense for "
                                 "this sampler.",
                                 "test_a_graph_too_dense_to_sample_fails_the_run"),
    "candidate-pool-too-large": failure(
        "candidate_pool 100000 does not fit a graph of ",
        "test_a_candidate_pool_larger_than_the_graph_fails_before_training"),
    "own-empty": own_graph("is empty; it needs a header and at least one row."),
    "own-too-few-edges": own_graph("has 1 edge(s) once self-loops and duplicates are dropped, "
                                   "too few to put one in each of train, valid and test"),
    "own-bad-weights": own_graph("holds values that are not numbers of at least 0; fix them, or "
                                 "drop the column to weigh every edge 1."),
    "own-bad-labels": own_graph("holds values other than 0 and 1; mark positive pairs 1 and "
                                "negative pairs 0."),
    "own-no-time": own_graph("a time split needs a time column, and"),
    "own-features-not-one-hot": own_graph("node 7's feature row is not one-hot over the 3 "
                                          "columns feature_categories declares"),
    "own-features-category-out-of-range": own_graph("node 11's category column holds 5, outside "
                                                    "feature_categories' range 0..2"),
    "stage-cache-unreadable": Entry("is unreadable; delete", None, "none",
                                    "test_library_safety_nets_raise_plnlp_error"),
    "split-array-damaged": Entry("adj_crow.npy is missing or damaged (no such file); delete",
                                 None, "none", "test_library_safety_nets_raise_plnlp_error"),
    "feature-not-one-hot": Entry("node 1's feature row is not one-hot over the 3 columns",
                                 None, "none", "test_library_safety_nets_raise_plnlp_error"),
    "feature-category-out-of-range": Entry("node 0's category column holds 3, outside "
                                           "feature_categories' range 0..2", None, "none",
                                           "test_library_safety_nets_raise_plnlp_error"),
    "weighted-loss-without-weights": Entry("loss 'weighted_hinge_auc' needs a weight per "
                                           "positive pair", None, "none",
                                           "test_library_safety_nets_raise_plnlp_error"),
    "other-failure": failure("error: [Errno 28] the disk is full",
                             "test_any_other_failure_marks_the_run_failed"),
    "file-not-found": failure("error: [Errno 2] No such file or directory: '",
                              "test_a_missing_file_is_named_by_its_path_and_verbose_shows_where"),
    "file-not-found-no-path": failure(
        "error: [Errno 2] No such file or directory (no path given; --verbose shows where)",
        "test_a_missing_file_is_named_by_its_path_and_verbose_shows_where"),
    # interrupts
    "interrupted-sigint": Entry("interrupted: SIGINT (Ctrl-C) stopped the job and Ray was shut "
                                "down (run ", 130, "KILLED",
                                "test_ctrl_c_kills_the_run_and_it_goes_on_from_another_folder_"
                                "with_only_its_id"),
    "interrupted-sigterm": Entry("interrupted: SIGTERM stopped the job and Ray was shut down "
                                 "(run ", 143, "KILLED",
                                 "test_an_interrupt_kills_the_active_runs_with_the_epoch_reached"),
    "tracking-away": Entry("has not answered for ", 1, "RUNNING",
                           "test_a_server_away_past_the_patience_fails_the_run_and_resume_logs_"
                           "what_it_measured"),
    "store-away": Entry("error: the object store did not answer for over ", 1, "FAILED",
                        "test_a_store_away_past_its_patience_fails_the_run_and_resume_"
                        "finishes_it"),
    "interrupted-with-ray": Entry(
        "the epochs printed after those logged were not delivered: Ray ended with the driver; "
        "go on with: python pipelines/run.py --resume ", 143, "KILLED",
        "test_sigterm_to_every_process_of_the_run_kills_it_within_seconds"),
    "ray-gone": failure("error: the local Ray's GCS stopped answering during the run (Ray ended "
                        "under the driver)",
                        "test_a_ray_that_dies_under_the_run_fails_it_with_one_sentence"),
    "interrupted-before-run": Entry("stopped the job and Ray was shut down (no MLflow run had "
                                    "started)", 130, "none",
                                    "test_an_interrupt_before_the_run_records_nothing"),
    "interrupted-sweep": Entry("stopped the job and Ray was shut down (sweep run ", 130, "KILLED",
                               "test_an_interrupted_sweep_says_how_many_trials_ended_and_how_"
                               "to_go_on"),
}


def assert_refused(entry_id: str, code: int | None, err: str, test: str) -> str:
    """``code`` and the one line of ``err`` are what ``entry_id`` says."""
    entry = ENTRIES[entry_id]
    assert entry.test == test, f"{entry_id} names {entry.test}, not {test}"
    lines = [line for line in err.splitlines() if line.startswith(("error: ", "interrupted: "))]
    assert code == entry.exit_code, err
    assert len(lines) == 1, err
    line = lines[0]
    assert entry.expected in line, line
    assert_in_catalog(entry_id, line)
    return line


def assert_in_catalog(entry_id: str, text: str) -> None:
    """``text`` is the catalog's sentence of ``entry_id``, placeholders filled."""
    sentence = catalog_rows()[entry_id][0]
    pattern = "".join(".+?" if re.fullmatch(r"<[^<>]+>", part) else re.escape(part)
                      for part in re.split(r"(<[^<>]+>)", sentence))
    assert re.fullmatch(pattern, text, re.DOTALL), f"docs/errors.md has for {entry_id}:\n" \
        f"{sentence}\nbut the command printed:\n{text}"


# The catalog ---------------------------------------------------------------------------------

@functools.cache
def catalog_rows() -> dict[str, list[str]]:
    """The entries of ``docs/errors.md``: id -> [sentence, cause, exit, run,
    test], the sentence without the double backticks that quote it."""
    rows = {}
    for line in CATALOG.read_text().splitlines():
        match = re.match(r"\|\s*`([a-z0-9-]+)`\s*\|(.*)\|\s*$", line)
        if match:
            cells = [cell.strip() for cell in match.group(2).split(" | ")]
            cells[0] = cells[0].removeprefix("``").removesuffix("``").strip().replace("\\|", "|")
            rows[match.group(1)] = cells
    return rows


def test_the_catalog_lists_exactly_these_entries():
    rows = catalog_rows()
    assert sorted(rows) == sorted(ENTRIES), "docs/errors.md and ENTRIES list other entries"
    tests = {name for name in globals() if name.startswith("test_")}
    for entry_id, (_sentence, _cause, exit_code, run, test) in rows.items():
        entry = ENTRIES[entry_id]
        assert exit_code == ("—" if entry.exit_code is None else str(entry.exit_code)), entry_id
        assert run.startswith(entry.run), entry_id
        assert test == f"`{entry.test}`", entry_id
        assert entry.test in tests, f"{entry_id} names a test that does not exist"


# Names and settings ---------------------------------------------------------------------------

def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


SETTINGS: dict[str, Callable[[Path], list[str]]] = {
    "unknown-dataset": lambda _: ["--dataset", "wikics"],
    "unknown-preset": lambda _: ["--dataset", "ddi", "--preset", "huge"],
    "unknown-encoder": lambda _: ["--dataset", "ddi", "--set", "encoder=gin"],
    "unknown-predictor": lambda _: ["--dataset", "ddi", "--set", "predictor=cosine"],
    "unknown-loss": lambda _: ["--dataset", "ddi", "--set", "loss=mse"],
    "unknown-sampler": lambda _: ["--dataset", "ddi", "--set", "sampler=uniform"],
    "unknown-choice": lambda _: ["--dataset", "ddi", "--set", "lr_decay=cosine"],
    "no-scheduler-setting": lambda _: ["--dataset", "ddi", "--set", "scheduler=cosine"],
    "unknown-setting": lambda _: ["--dataset", "ddi", "--set", "batchsize=3"],
    "wrong-type": lambda _: ["--dataset", "ddi", "--set", "lr=fast"],
    "not-key-value": lambda _: ["--dataset", "ddi", "--set", "lr"],
    "below-one": lambda _: ["--dataset", "ddi", "--set", "num_neg=0"],
    "clip-not-positive": lambda _: ["--dataset", "ddi", "--set", "clip_grad_norm=0"],
    "dropout-range": lambda _: ["--dataset", "ddi", "--set", "dropout=1.5"],
    "projection-dropout-without-projection": lambda _: ["--dataset", "ddi", "--preset", "smoke",
                                                        "--set", "projection_dropout=0.5"],
    "completion-range": lambda _: ["--dataset", "cora", "--set", "ncn_completion=true",
                                   "--set", "ncn_completion_threshold=1.5"],
    "target-removal-limit-range": lambda _: ["--dataset", "cora", "--set",
                                             "target_removal_limit=1.5"],
    "batch-fraction-range": lambda _: ["--dataset", "ddi", "--set", "batch_fraction=1.5"],
    "lr-not-positive": lambda _: ["--dataset", "ddi", "--set", "lr=0"],
    "walk-length-negative": lambda _: ["--dataset", "ddi", "--set", "walk_length=-1"],
    "initial-residual-negative": lambda _: ["--dataset", "ddi", "--set",
                                            "encoder_initial_residual=-1"],
    "initial-residual-size": lambda _: ["--dataset", "ddi", "--set",
                                        "encoder_initial_residual=0.1", "--set",
                                        "hidden_channels=64"],
    "predictor-residual-predictor": lambda _: ["--dataset", "ddi", "--set", "predictor=dot",
                                               "--set", "predictor_residual=true"],
    "predictor-residual-size": lambda _: ["--dataset", "ddi", "--set", "predictor_hidden=64",
                                          "--set", "predictor_residual=true"],
    "node-target-edge-removal": lambda _: ["--dataset", "ddi", "--set", "encoder=none",
                                           "--set", "node_target_edge_removal=true"],
    "heart-negatives-odd": lambda _: ["--dataset", "ddi", "--set", "heart_negatives=5"],
    "heart-files-without-negatives": lambda _: ["--dataset", "ddi", "--set", "heart_files=x"],
    "heart-files-filtered": lambda _: ["--dataset", "ddi", "--set", "heart_negatives=500", "--set",
                                       "heart_mode=heart_filtered", "--set", "heart_files=x"],
    "walk-settings-without-walks": lambda _: ["--dataset", "ddi", "--set", "walk_rounds=3"],
    "features-missing": lambda _: ["--dataset", "ddi", "--set", "node_input=both"],
    "symmetric-predictor-directed": lambda _: ["--dataset", "citation2", "--set", "predictor=dot",
                                               "--set", "force_symmetric_predictor=false"],
    "raw-margin-without-weights": lambda _: ["--dataset", "ddi", "--set",
                                             "loss=weighted_hinge_auc", "--set", "edge_margin=raw"],
    "years-missing": lambda _: ["--dataset", "ddi", "--set", "min_train_year=2010"],
    "edge-level-predictor": lambda _: ["--dataset", "ddi", "--set", "encoder_level=edge",
                                       "--set", "predictor=dot"],
    "edge-level-directed": lambda _: ["--dataset", "citation2", "--set", "encoder_level=edge",
                                      "--set", "force_symmetric_predictor=false"],
    "edge-path-length": lambda _: ["--dataset", "ddi", "--set", "encoder_level=edge",
                                   "--set", "edge_path_length=4"],
    "edge-path-without-edge-level": lambda _: ["--dataset", "ddi", "--set",
                                               "edge_path_length=3"],
    "ncn-at-node-level": lambda _: ["--dataset", "ddi", "--set", "predictor=ncn"],
    "edge-setting-at-node-level": lambda _: ["--dataset", "ddi", "--set",
                                             "target_edge_removal=false"],
    "edge-dropout-at-node-level": lambda _: ["--dataset", "ddi", "--set", "edge_dropout=0.1"],
    "ncn-setting-with-mlp": lambda _: ["--dataset", "ddi", "--set", "encoder_level=edge",
                                       "--set", "predictor=mlp", "--set", "ncn_beta=2"],
    "counts-with-ncn": lambda _: ["--dataset", "ddi", "--set", "encoder_level=edge",
                                  "--set", "predictor=ncn", "--set", "edge_counts=true"],
    "feature-categories-range": lambda _: ["--dataset", "ppa", "--set", "feature_categories=1"],
    "feature-categories-without-features": lambda _: ["--dataset", "ppa", "--set",
                                                      "node_input=embedding", "--set",
                                                      "feature_categories=58"],
    "feature-categories-width": lambda _: ["--dataset", "collab", "--set", "node_input=both",
                                           "--set", "feature_categories=58"],
    "sum-encoder-size": lambda _: ["--dataset", "ddi", "--set", "encoder=sum",
                                   "--set", "hidden_channels=64"],
    "file-unreadable": lambda tmp: ["--dataset", "ddi", "--config", str(tmp / "missing.yaml")],
    "file-not-mapping": lambda tmp: ["--dataset", "ddi", "--config",
                                     str(write(tmp / "list.yaml", "- lr\n- 0.1\n"))],
    "config-other-dataset": lambda tmp: ["--dataset", "ddi", "--config",
                                         str(write(tmp / "c.yaml", "dataset: collab\n"))],
    "preset-unknown-setting": lambda _: ["--dataset", "ddi", "--preset", "typo"],
    "runs-below-one": lambda _: ["--dataset", "ddi", "--runs", "0"],
    "workers-below-one": lambda _: ["--dataset", "ddi", "--preset", "smoke", "--num-workers", "0"],
    "gpu-preset-on-cpu": lambda _: ["--dataset", "ddi"],
    "max-failures-negative": lambda _: ["--dataset", "ddi", "--max-failures", "-1"],
    "own-file-missing": lambda tmp: ["--dataset", str(tmp / "missing.csv")],
    "own-file-unreadable": lambda tmp: ["--dataset", str(write(tmp / "zero-bytes.csv", ""))],
    "own-missing-columns": lambda tmp: ["--dataset", str(write(tmp / "g.csv", "from,to\n1,2\n"))],
    "own-split-folder-part": lambda tmp: ["--dataset", str(split_folder_without_test(tmp))],
    "own-split-spec": lambda tmp: ["--dataset", str(write(tmp / "g.csv", "src,dst\n1,2\n")),
                                   "--split", "random:0.5,0.5"],
    "own-split-fractions": lambda tmp: ["--dataset", str(write(tmp / "g.csv", "src,dst\n1,2\n")),
                                        "--split", "random:0.9,0.2,0.1"],
    "own-hits-k": lambda tmp: ["--dataset", str(write(tmp / "g.csv", "src,dst\n1,2\n")),
                               "--hits-k", "20,x"],
    "own-features-missing": lambda tmp: features_case(tmp, None),
    "own-features-empty": lambda tmp: features_case(tmp, "id,a\n"),
    "own-features-no-values": lambda tmp: features_case(tmp, "id\n" + ids_lines(60)),
    "own-features-not-numbers": lambda tmp: features_case(
        tmp, "id,a\n" + "".join(f"{i},{'x' if i == 3 else 1}\n" for i in range(60))),
    "own-features-repeated-id": lambda tmp: features_case(tmp, "id,features\n3,1\n3,2\n"),
    "own-features-uncovered": lambda tmp: features_case(
        tmp, "id,a\n" + "".join(f"{i},0.5\n" for i in range(59))),
    "own-features-non-finite": lambda tmp: features_case(
        tmp, "id,a\n" + "".join(f"{i},{'inf' if i == 4 else 1}\n" for i in range(60))),
    "own-features-negative-index": lambda tmp: features_case(tmp, "id,feature\n1,0\n2,-1\n"),
    "own-features-index-type": lambda tmp: features_case(tmp, "id,feature\n1,0.5\n"),
    "own-features-repeated-entry": lambda tmp: features_case(tmp, "id,feature\n1,5\n1,5\n"),
    "own-features-list-unparsable": lambda tmp: features_case(tmp, "id,features\n7,1 two\n"),
    "own-features-list-type": lambda tmp: features_case(tmp, None, fractions_parquet(tmp)),
    "unknown-model": lambda _: ["--dataset", "ddi", "--model", "heuristic:katz"],
    "register-heuristic": lambda _: ["--dataset", "ddi", "--model", "heuristic:cn",
                                     "--register", "links"],
    "part-misspelled": lambda _: ["--dataset", "ddi", "--set", "encoder=my parts:GIN"],
    "part-options-builtin": lambda _: ["--dataset", "ddi", "--set", "encoder_options.eps=0.1"],
    "part-not-importable": lambda _: ["--dataset", "ddi", "--set",
                                      "encoder=no_such_parts.layers:GIN"],
    "part-name-missing": lambda _: ["--dataset", "ddi", "--set",
                                    "encoder=examples.link_parts.layers:GINEncoder"],
    "part-wrong-kind": lambda _: ["--dataset", "ddi", "--set",
                                  "loss=examples.link_parts.layers:GINLayer"],
    "part-flag-missing": lambda tmp: ["--dataset", "ddi", "--set",
                                      f"predictor={own_module(tmp, 'flagless_parts', FLAGLESS)}"
                                      ":Scorer"],
    "part-option-unknown": lambda _: ["--dataset", "ddi", "--set",
                                      "encoder=examples.link_parts.layers:GINLayer", "--set",
                                      "encoder_options.heads=4"],
    "part-not-built": lambda _: ["--dataset", "ddi", "--set",
                                 "predictor=examples.link_parts.predictors:HadamardDistanceMLP",
                                 "--set", "predictor_options.residual=true"],
    "part-call-fails": lambda _: ["--dataset", "ddi", "--set", "encoder_level=edge", "--set",
                                  "predictor=examples.link_parts.predictors:HadamardDistanceMLP"],
    "part-wrong-shape": lambda tmp: ["--dataset", "ddi", "--set",
                                     f"encoder={own_module(tmp, 'narrow_parts', NARROW)}:Narrow"],
}
FLAGLESS = """
class Scorer(torch.nn.Module):
    def forward(self, h_src, h_dst):
        return (h_src * h_dst).sum(-1)
"""
NARROW = """
class Narrow(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = torch.nn.Linear(in_channels, 3)

    def forward(self, x, adj):
        return self.lin(x)
"""


def own_module(folder: Path, name: str, source: str) -> str:
    """Writes the module ``name`` of a part of one's own (``source``, which
    may use torch) into ``folder``, the command's current one; its name."""
    write(folder / f"{name}.py", "import torch\n" + textwrap.dedent(source))
    importlib.invalidate_caches()
    sys.modules.pop(name, None)
    return name


def ids_lines(count: int) -> str:
    return "".join(f"{i}\n" for i in range(count))


def features_case(tmp: Path, text: str | None, path: Path | None = None) -> list[str]:
    """A 60-node ring and ``--node-features`` of ``text`` (None: a file not
    there, or ``path``)."""
    edges = write(tmp / "g.csv", "src,dst\n" + "".join(f"{i},{(i + 1) % 60}\n"
                                                      for i in range(60)))
    features = path or (tmp / "f.csv" if text is None else write(tmp / "f.csv", text))
    return ["--dataset", str(edges), "--node-features", str(features)]


def fractions_parquet(tmp: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1], "features": [[0.5]]}), tmp / "f.parquet")
    return tmp / "f.parquet"


def split_folder_without_test(tmp: Path) -> Path:
    folder = tmp / "split"
    folder.mkdir()
    for part in ("train", "valid"):
        write(folder / f"{part}.csv", "src,dst,label\n1,2,1\n")
    return folder


@pytest.mark.parametrize("entry_id", SETTINGS)
def test_bad_settings_are_refused_before_anything_starts(entry_id, tmp_path, unwritten_mlflow_store,
                                                         monkeypatch, capsys):
    import pipelines.planning.presets

    presets = tmp_path / "presets"
    presets.mkdir()
    write(presets / "ddi.yaml", "typo:\n  lr: 0.01\n  hiden_channels: 8\n")
    if entry_id == "preset-unknown-setting":
        monkeypatch.setattr(pipelines.planning.presets, "PRESETS_DIR", presets)
    code = run_main(SETTINGS[entry_id](tmp_path))
    assert_refused(entry_id, code, capsys.readouterr().err,
                   "test_bad_settings_are_refused_before_anything_starts")
    assert not (tmp_path / "mlflow.db").exists()  # nothing recorded


@pytest.mark.slow
def test_a_worker_group_the_cluster_cannot_hold_is_refused(ray_session, mlflow_store, capsys):
    test = "test_a_worker_group_the_cluster_cannot_hold_is_refused"
    assert_refused("workers-exceed-cpus",
                   run_main(["--dataset", "ddi", "--preset", "smoke", "--num-workers", "64"]),
                   capsys.readouterr().err, test)
    assert_refused("workers-exceed-gpus",
                   run_main(["--dataset", "ddi", "--preset", "smoke", "--use-gpu"]),
                   capsys.readouterr().err, test)


LR = "space:\n  lr: {choice: [0.01]}\n"
SPACES = {
    "space-unknown-key": f"schedular: asha\n{LR}",
    "space-unknown-setting": "space:\n  lrate: {choice: [0.1]}\n",
    "space-metric-not-validation": f"metric: test_hits_20\n{LR}",
    "space-not-allowed": f"search: bayes\n{LR}",
    "space-count": f"num_samples: 0\n{LR}",
    "space-scheduler-unknown": f"scheduler: {{hyperband: {{}}}}\n{LR}",
    "space-asha-unknown": f"scheduler: {{asha: {{grace: 2}}}}\n{LR}",
    "space-asha-reduction": f"scheduler: {{asha: {{reduction_factor: 1}}}}\n{LR}",
    "space-asha-max-t": f"scheduler: {{asha: {{grace_period: 5, max_t: 2}}}}\n{LR}",
    "space-resource-unknown": f"resources: {{gpus: 1}}\n{LR}",
    "space-gpus": f"resources: {{gpus_per_worker: 1.5}}\n{LR}",
    "space-empty": "metric: valid_hits_20\n",
    "space-bad-distribution": "space:\n  lr: {normal: [0, 1]}\n",
    "space-no-values": "space:\n  lr: {choice: []}\n",
    "space-bounds": "space:\n  lr: {loguniform: [0, 0.1]}\n",
    "space-grid-continuous": "search: grid\nspace:\n  lr: {uniform: [0.001, 0.1]}\n",
    "space-optuna-grid": "search: optuna\nspace:\n  lr: {grid: [0.001, 0.1]}\n",
    "space-bad-value": "space:\n  num_neg: {choice: [0, 1]}\n",
}


@pytest.mark.parametrize("entry_id", SPACES)
def test_bad_search_spaces_are_refused(entry_id, tmp_path, mlflow_store, capsys):
    space = write(tmp_path / "space.yaml", f"preset: smoke\n{SPACES[entry_id]}")
    code = tune_main(["--dataset", "ddi", "--space", str(space)])
    assert_refused(entry_id, code, capsys.readouterr().err, "test_bad_search_spaces_are_refused")


@pytest.mark.parametrize(("entry_id", "flags"), [
    ("trials-per-gpu-count", ["--trials-per-gpu", "0"]),
    ("trials-per-gpu-and-gpus", ["--trials-per-gpu", "2", "--gpus-per-worker", "0.5"]),
])
def test_bad_trials_per_gpu_are_refused(entry_id, flags, tmp_path, mlflow_store, capsys):
    space = write(tmp_path / "space.yaml", f"preset: smoke\n{LR}")
    code = tune_main(["--dataset", "ddi", "--space", str(space), *flags])
    assert_refused(entry_id, code, capsys.readouterr().err, "test_bad_trials_per_gpu_are_refused")


@pytest.mark.slow
def test_trials_per_gpu_on_a_cluster_without_gpus_is_refused(ray_session, mlflow_store, tmp_path,
                                                             capsys):
    space = write(tmp_path / "space.yaml", f"preset: smoke\n{LR}")
    code = tune_main(["--dataset", "ddi", "--space", str(space), "--trials-per-gpu", "auto"])
    assert_refused("trials-per-gpu-without-gpus", code, capsys.readouterr().err,
                   "test_trials_per_gpu_on_a_cluster_without_gpus_is_refused")


def test_trials_that_do_not_fit_a_gpu_are_refused_naming_how_many_do():
    """Checked once the graph is loaded, against a GPU's memory read on the
    cluster: here a 4 GiB GPU and ddi's ``paper`` sizes."""
    from pipelines.planning.gpu_packing import pack_trials

    base = PLNLPConfig.from_mapping({**load_preset("ddi", "paper"), "dataset": "ddi"})
    space = SearchSpace(Path("space.yaml"), base, DATASETS.get("ddi"),
                        {"space": {"lr": {"choice": [0.001, 0.01]}}})
    meta = DatasetMeta("ddi", 4267, False, 0, "hits@20", 1_067_911)
    for entry_id, trials, gpu_gib in (("trials-per-gpu-too-many", 60, 141),
                                      ("trial-larger-than-gpu", "auto", 2)):
        with pytest.raises(PLNLPError) as refused:
            pack_trials(trials, space, meta, gpu_gib * 2**30)
        line = f"error: {refused.value}"
        assert ENTRIES[entry_id].expected in line
        assert_in_catalog(entry_id, line)


@pytest.mark.slow
def test_a_sweep_the_cluster_cannot_hold_is_refused(ray_session, mlflow_store, tmp_path, capsys):
    space = write(tmp_path / "space.yaml", f"preset: smoke\nresources: {{workers: 64}}\n{LR}")
    code = tune_main(["--dataset", "ddi", "--space", str(space)])
    assert_refused("space-too-large", code, capsys.readouterr().err,
                   "test_a_sweep_the_cluster_cannot_hold_is_refused")
    assert MlflowClient(mlflow_store).get_experiment_by_name("plnlp-ddi-tune") is None


STANDINS = {
    "standin-unknown-size": ["--dataset", "ddi", "--size", "huge"],
    "standin-bad-scale": ["--dataset", "ddi", "--scale", "-1"],
    "standin-exists": ["--dataset", "ddi"],
    "standin-too-many-nodes": ["--dataset", "ppa", "--size", "real", "--scale", "10000"],
    "standin-too-many-edges": ["--dataset", "ddi", "--scale", "0.0001"],
    "standin-memory": ["--dataset", "citation2", "--size", "real", "--scale", "50"],
}


@pytest.mark.parametrize("entry_id", STANDINS)
def test_impossible_standins_are_refused(entry_id, tmp_path, capsys):
    (tmp_path / "ogbl_ddi").mkdir()  # for standin-exists
    code = standin_main([*STANDINS[entry_id], "--out", str(tmp_path)])
    assert_refused(entry_id, code, capsys.readouterr().err, "test_impossible_standins_are_refused")


@pytest.mark.parametrize(("entry_id", "patch"), [
    ("standin-edges-not-drawn", ("_MAX_ROUNDS", 0)),
    ("standin-negatives-not-drawn", ("_taken", lambda keys, n, sources, *a: np.ones_like(
        sources, dtype=bool))),
])
def test_standin_generators_that_give_up_are_refused(entry_id, patch, tmp_path, monkeypatch,
                                                     capsys):
    import plnlp_core.data.standins.generating

    monkeypatch.setattr(plnlp_core.data.standins.generating, *patch)
    code = standin_main(["--dataset", "ddi", "--out", str(tmp_path)])
    assert_refused(entry_id, code, capsys.readouterr().err,
                   "test_standin_generators_that_give_up_are_refused")
    assert list(tmp_path.iterdir()) == []  # no half-written stand-in


def test_library_safety_nets_raise_plnlp_error(tmp_path, monkeypatch):
    """Checks that commands never reach; the library refuses all the same."""
    import plnlp_core.data.standins
    from components.storage.graph_files import read_adjacency
    from components.storage.location import Location
    from components.storage.manifest import MANIFEST, content_digest
    from pipelines.planning.request import RunRequest
    from pipelines.run import run_job
    from plnlp_core.data.standins import StandinSize, check_standin_size, standin_size
    from plnlp_core.losses import LOSSES
    from plnlp_core.nn.node_input import category_index

    monkeypatch.delitem(plnlp_core.data.standins.SPLIT_TYPES, "ppa")  # a dataset without a stand-in
    raised = {
        "standin-too-small": lambda: check_standin_size("ddi", StandinSize(1, 0, 1, 1, 1, 1)),
        "standin-unknown-dataset": lambda: standin_size("ppa", "tiny"),
        "feature-not-one-hot": lambda: category_index(torch.tensor([[0.0, 1, 0], [1, 1, 0]]), 3),
        "feature-category-out-of-range": lambda: category_index(torch.tensor([[3.0], [0]]), 3),
        "weighted-loss-without-weights": lambda: LOSSES.get("weighted_hinge_auc")(
            torch.zeros(2), torch.zeros(2, 1), None),
        "stage-cache-unreadable": lambda: content_digest(
            Location(write(tmp_path / MANIFEST, "{").parent)),
        "split-array-damaged": lambda: read_adjacency(tmp_path, 60),
        "part-defined-in-main": lambda: PLNLPConfig.from_mapping(
            {"encoder": type("Layer", (torch.nn.Module,), {"__module__": "__main__"})}),
        "run-job-unknown-part": lambda: run_job(RunRequest("ddi"), layer="sage"),
    }
    for entry_id, call in raised.items():
        entry = ENTRIES[entry_id]
        assert entry.test == "test_library_safety_nets_raise_plnlp_error"
        with pytest.raises(PLNLPError) as caught:
            call()
        assert entry.expected in str(caught.value)
        assert_in_catalog(entry_id, str(caught.value))


# Unreachable services -------------------------------------------------------------------------

SMOKE = ["--dataset", "ddi", "--preset", "smoke"]


def timed_run(argv: list[str]) -> tuple[int, float]:
    started = time.monotonic()
    code = run_main(argv)
    return code, time.monotonic() - started


@contextmanager
def silent_listener() -> Iterator[int]:
    """A TCP port that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("0.0.0.0", 0))
        server.listen(8)
        yield server.getsockname()[1]


@contextmanager
def http_server(status: int, body: str = "") -> Iterator[str]:
    """An HTTP server answering every request with ``status`` and ``body``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = answer

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def tracking_uri(uri: str) -> Iterator[None]:
    """MLflow records to ``uri`` for the block (it is a global of MLflow's)."""
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)


def test_an_unreachable_tracking_server_is_refused_quickly(mlflow_store, monkeypatch, capsys):
    """Before Ray starts: RAY_ADDRESS points nowhere, and is never reached."""
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with silent_listener() as port:
        for uri in ("http://127.0.0.1:1", f"http://127.0.0.1:{port}",
                    "http://alice:pw-plnlp-leak@127.0.0.1:1"):
            with tracking_uri(uri):
                code, seconds = timed_run(SMOKE)
            line = assert_refused("tracking-unreachable", code, capsys.readouterr().err,
                                  "test_an_unreachable_tracking_server_is_refused_quickly")
            assert uri.replace("alice:pw-plnlp-leak@", "***@") in line
            assert "pw-plnlp-leak" not in line and seconds < REFUSE_WITHIN_S
            print(f"{uri}: refused in {seconds:.1f} s ({line})")


# MLflow's server answers a Host header it was not told (--allowed-hosts) so
INVALID_HOST = "Invalid Host header - possible DNS rebinding attack detected"


@pytest.mark.parametrize(("entry_id", "status", "body"), [
    ("tracking-credentials", 401, ""), ("tracking-credentials", 403, "Forbidden"),
    ("tracking-not-mlflow", 404, ""), ("tracking-host-refused", 403, INVALID_HOST)])
def test_a_tracking_server_that_is_not_usable_is_refused(entry_id, status, body, mlflow_store,
                                                         monkeypatch, capsys):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with http_server(status, body) as uri, tracking_uri(uri):
        code = run_main(SMOKE)
    line = assert_refused(entry_id, code, capsys.readouterr().err,
                          "test_a_tracking_server_that_is_not_usable_is_refused")
    assert f"HTTP {status}" in line
    if entry_id == "tracking-host-refused":
        assert "credentials" not in line
        assert f"--allowed-hosts {uri.removeprefix('http://')},..." in line


@pytest.mark.parametrize("store", ["sqlite:///{file}/sub/mlflow.db", "file://{file}/mlruns",
                                   "sqlite:////proc/plnlp/mlflow.db"])
def test_a_tracking_store_that_cannot_be_written_is_refused(store, tmp_path, mlflow_store,
                                                            monkeypatch, capsys):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    uri = store.format(file=write(tmp_path / "a-file", ""))
    with tracking_uri(uri):
        code = run_main(SMOKE)
    line = assert_refused("tracking-unwritable", code, capsys.readouterr().err,
                          "test_a_tracking_store_that_cannot_be_written_is_refused")
    assert uri in line


@pytest.mark.slow  # five probes that wait out silent addresses: 10 s on 2 cores
def test_an_unreachable_ray_address_is_refused_quickly(tmp_path, unwritten_mlflow_store,
                                                       monkeypatch, capsys):
    with silent_listener() as port:
        for address in ("127.0.0.1:1", "ray://127.0.0.1:1", "http://127.0.0.1:1",
                        f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            monkeypatch.setenv("RAY_ADDRESS", address)
            code, seconds = timed_run(SMOKE)
            line = assert_refused("ray-unreachable", code, capsys.readouterr().err,
                                  "test_an_unreachable_ray_address_is_refused_quickly")
            assert "unset RAY_ADDRESS to start a local Ray" in line
            assert seconds < REFUSE_WITHIN_S
            print(f"{address}: refused in {seconds:.1f} s ({line})")
    assert not (tmp_path / "mlflow.db").exists()  # no MLflow run


@contextmanager
def fake_gcs(token: str | None = None) -> Iterator[int]:
    """A gRPC server on all interfaces that answers ``GetClusterId`` as Ray's
    GCS does: with ``token``, only to ``authorization: Bearer <token>``."""

    def cluster_id(request, context):
        sent = dict(context.invocation_metadata()).get("authorization")
        if token is not None and sent != f"Bearer {token}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "InvalidAuthToken: Authentication token is missing or incorrect")
        return gcs_service_pb2.GetClusterIdReply()

    handler = grpc.method_handlers_generic_handler("ray.rpc.NodeInfoGcsService", {
        "GetClusterId": grpc.unary_unary_rpc_method_handler(
            cluster_id, request_deserializer=gcs_service_pb2.GetClusterIdRequest.FromString,
            response_serializer=gcs_service_pb2.GetClusterIdReply.SerializeToString)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("0.0.0.0:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(0)


def test_a_ray_address_that_is_not_a_cluster_is_refused(mlflow_store, monkeypatch, capsys):
    test = "test_a_ray_address_that_is_not_a_cluster_is_refused"
    with http_server(200) as dashboard:
        monkeypatch.setenv("RAY_ADDRESS", dashboard)
        assert_refused("ray-dashboard-address", run_main(SMOKE), capsys.readouterr().err, test)
    for entry_id, address in (("ray-not-an-address", "redis://head:6379"),
                              ("ray-not-host-port", "head:port")):
        monkeypatch.setenv("RAY_ADDRESS", address)
        assert_refused(entry_id, run_main(SMOKE), capsys.readouterr().err, test)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))  # serves nothing
    port = server.add_insecure_port("0.0.0.0:0")
    server.start()
    try:
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
        assert_refused("ray-not-gcs", run_main(SMOKE), capsys.readouterr().err, test)
    finally:
        server.stop(0)


def test_a_cluster_that_refuses_the_token_is_refused(mlflow_store, tmp_path, monkeypatch, capsys):
    test = "test_a_cluster_that_refuses_the_token_is_refused"
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ray/auth_token
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    with fake_gcs(token="the-cluster-token") as port:
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
        monkeypatch.setenv("RAY_AUTH_MODE", "token")
        monkeypatch.setenv("RAY_AUTH_TOKEN", "another-token")
        assert_refused("ray-token-refused", run_main(SMOKE), capsys.readouterr().err, test)
        monkeypatch.delenv("RAY_AUTH_TOKEN")
        assert_refused("ray-token-missing", run_main(SMOKE), capsys.readouterr().err, test)
        monkeypatch.delenv("RAY_AUTH_MODE")  # and no token anywhere: none is sent
        assert run_main(SMOKE) == 2
        assert "refused a connection without a token" in capsys.readouterr().err
        # Ray's own switch to send the found token, which commands that join the
        # suite's Ray take for real (plnlp_testing.processes.pipeline_env's ray_address)
        switched = []
        monkeypatch.setattr(pipelines.runtime.ray_cluster, "send_found_token",
                            lambda: switched.append(os.environ.get("RAY_AUTH_TOKEN")))
        monkeypatch.setenv("RAY_AUTH_TOKEN", "a-wrong-token")  # found, and refused too
        assert run_main(SMOKE) == 2 and switched == []
        assert "refused a connection without a token" in capsys.readouterr().err
        monkeypatch.setenv("RAY_AUTH_TOKEN", "the-cluster-token")
        pipelines.runtime.ray_cluster.check_ray_address(f"127.0.0.1:{port}")  # right token passes
        assert switched == ["the-cluster-token"]  # and ray.init is told to send it too
    with fake_gcs() as port:  # a cluster without token auth: ray.init sends none
        pipelines.runtime.ray_cluster.check_ray_address(f"127.0.0.1:{port}")
        assert switched == ["the-cluster-token"]


def test_errors_of_ray_init_become_one_sentence(mlflow_store, monkeypatch, capsys):
    import ray

    test = "test_errors_of_ray_init_become_one_sentence"
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    for entry_id, error in (
        ("ray-connect-failed", ConnectionError("Could not find any running Ray instance.")),
        ("ray-init-refused-token", ray.exceptions.AuthenticationError("token mismatch")),
    ):
        def refuse(*args, error=error, **kwargs):
            raise error

        monkeypatch.setattr(pipelines.runtime.ray_cluster.ray, "init", refuse)
        assert_refused(entry_id, run_main(SMOKE), capsys.readouterr().err, test)
    started = []

    def time_out(*args, **kwargs):  # Ray's start of a local node, on a loaded machine
        started.append(subprocess.Popen(["sleep", "600"]))  # as its GCS, already launched
        raise Exception("The current node timed out during startup.")

    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.setattr(pipelines.runtime.ray_cluster.ray, "init", time_out)
    assert_refused("ray-local-start-failed", run_main(SMOKE), capsys.readouterr().err, test)
    assert len(started) == 2  # tried once more
    assert all(process.poll() is not None for process in started)  # nothing outlives a try


@pytest.mark.parametrize("reason, tries", [("The current node timed out during startup.", 2),
                                           ("Failed to start the dashboard.", 1)])
def test_a_local_ray_start_that_timed_out_is_tried_once_more(reason, tries, monkeypatch):
    """A first try that timed out (a raylet whose dashboard agent missed
    Ray's fixed 15 s) is stopped and the start goes on with a second, which
    here succeeds; a start that failed otherwise is not tried again."""
    from pipelines.runtime.ray_cluster import start_local_ray

    started = []

    def fail_first(*args, **kwargs):
        started.append(subprocess.Popen(["sleep", "600"]))  # as its GCS, already launched
        if len(started) == 1:
            raise Exception(reason)
        return SimpleNamespace(dashboard_url=None)

    monkeypatch.setattr(pipelines.runtime.ray_cluster.ray, "init", fail_first)
    try:
        if tries == 1:
            with pytest.raises(Exception, match=reason):
                start_local_ray(logging.WARNING)
        else:
            start_local_ray(logging.WARNING)
        assert len(started) == tries
        assert started[0].poll() is not None  # the failed try's processes are stopped
    finally:
        for process in started:
            process.kill()


def group_is_gone(pgid: int, within_s: float = 20) -> bool:
    """Whether every process of group ``pgid`` has ended."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    return False


@pytest.mark.slow
def test_a_real_cluster_refuses_a_wrong_token_within_seconds(suite_ray_address, monkeypatch):
    """The suite's Ray, a real GCS with Ray's token auth on (its default for
    a local start, the token in ``~/.ray/auth_token``): its token passes,
    a wrong one is refused within seconds, and with ``RAY_AUTH_MODE`` unset
    the token found on the machine passes and ``ray.init`` is told to send
    it (Ray's own switch, recorded here rather than flipped in the suite's
    driver)."""
    token = pipelines.runtime.ray_cluster.ray_auth_token()
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", token)
    pipelines.runtime.ray_cluster.check_ray_address(suite_ray_address)
    monkeypatch.setenv("RAY_AUTH_TOKEN", "a-wrong-token")
    started = time.monotonic()
    with pytest.raises(PLNLPError, match="refused the authentication token sent"):
        pipelines.runtime.ray_cluster.check_ray_address(suite_ray_address)
    assert time.monotonic() - started < REFUSE_WITHIN_S
    switched = []
    monkeypatch.setattr(pipelines.runtime.ray_cluster, "send_found_token",
                        lambda: switched.append(True))
    monkeypatch.delenv("RAY_AUTH_MODE")
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    pipelines.runtime.ray_cluster.check_ray_address(suite_ray_address)
    assert switched == [True]


# After the run started ------------------------------------------------------------------------

def only_run(uri: str, experiment: str = "plnlp-ddi"):
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    tops = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(tops) == 1
    return tops[0]


class Payload:
    """Unpickling this runs ``touch <marker>``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def damage(entry_id: str, root: Path, tmp_path: Path) -> Path:
    """Damages the stand-in at ``root`` as ``entry_id`` says; the data root to give."""
    target = root / "ogbl_ddi" / "split" / "target"
    if entry_id == "data-missing":
        return write(tmp_path / "a-file", "") / "datasets"
    if entry_id == "data-unreadable":  # a file even root cannot read
        (target / "train.pt").unlink()
        (target / "train.pt").symlink_to("/proc/self/mem")
    elif entry_id == "data-partial":
        (target / "valid.pt").unlink()
    elif entry_id == "data-truncated":
        (target / "train.pt").write_bytes((target / "train.pt").read_bytes()[:-100])
    elif entry_id == "data-runs-code":
        edges = np.zeros((4, 2), dtype=np.int64)
        torch.save({"edge": edges, "edge_neg": edges, "x": Payload(tmp_path / "payload-ran")},
                   target / "valid.pt")
    elif entry_id == "data-other-dataset":
        collab = write_collab_standin(tmp_path / "collab")
        root = tmp_path / "mislabelled"
        root.mkdir()
        (collab / "ogbl_collab").rename(root / "ogbl_ddi")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("entry_id", ["data-missing", "data-unreadable", "data-partial",
                                      "data-truncated", "data-runs-code", "data-other-dataset"])
def test_a_missing_or_damaged_dataset_fails_the_run(entry_id, ray_session, mlflow_store,
                                                    standin_root, tmp_path, capsys):
    root = damage(entry_id, standin_root, tmp_path)
    code = run_main([*SMOKE, "--data-root", str(root), *STANDIN])
    line = assert_refused(entry_id, code, capsys.readouterr().err,
                          "test_a_missing_or_damaged_dataset_fails_the_run")
    run = only_run(mlflow_store)
    assert run.info.status == "FAILED"
    assert run.data.tags[FAILURE_TAG] == line.removeprefix("error: ")
    assert not (tmp_path / "payload-ran").exists()  # a pickle that would run code never runs


@pytest.mark.slow
def test_heart_files_that_cannot_be_used_fail_the_run(ray_session, mlflow_store, standin_root,
                                                      tmp_path, capsys):
    np.save(tmp_path / "heart_valid_samples.npy", np.zeros((3, 4, 2), dtype=np.int64))
    np.save(tmp_path / "heart_test_samples.npy", np.zeros((3, 4, 2), dtype=np.int64))
    code = run_main(["--dataset", "ddi", "--data-root", str(standin_root), "--model",
                     "heuristic:ra", "--set", "heart_negatives=6", "--set",
                     f"heart_files={tmp_path}"])
    line = assert_refused("heart-file-unusable", code, capsys.readouterr().err,
                          "test_heart_files_that_cannot_be_used_fail_the_run")
    run = only_run(mlflow_store)
    assert run.info.status == "FAILED"
    assert run.data.tags[FAILURE_TAG] == line.removeprefix("error: ")


def train_out_of_gpu_memory(*args, **kwargs):
    """Stands in for ``components.train.stage.train``: a real Ray Train worker
    that runs out of GPU memory."""
    import ray.train
    import ray.train.torch

    def loop(config: dict) -> None:
        raise torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "15.77 GiB of which 1.20 GiB is free.")

    storage = Path(os.environ["PLNLP_CACHE_DIR"]) / "oom"
    ray.train.torch.TorchTrainer(loop, scaling_config=ray.train.ScalingConfig(num_workers=1),
                                 run_config=ray.train.RunConfig(storage_path=str(storage))).fit()


@pytest.mark.slow
def test_gpu_out_of_memory_in_a_train_worker_names_the_settings(
    ray_session, mlflow_store, standin_root, monkeypatch, capsys,
):
    import components.train_and_evaluate

    monkeypatch.setattr(components.train_and_evaluate, "train", train_out_of_gpu_memory)
    code = run_main([*SMOKE, "--data-root", str(standin_root), *STANDIN])
    line = assert_refused("gpu-out-of-memory", code, capsys.readouterr().err,
                          "test_gpu_out_of_memory_in_a_train_worker_names_the_settings")
    assert line.endswith("or the hidden sizes.")
    run = only_run(mlflow_store)
    assert run.info.status == "FAILED"
    assert run.data.tags[FAILURE_TAG] == line.removeprefix("error: ")


def test_bf16_on_a_gpu_without_it_is_refused_naming_the_device(monkeypatch):
    """Checked by ``fit`` on the worker's device before the first step."""
    from plnlp_core.training.epoch import check_precision

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "Tesla V100-SXM2-16GB")
    with pytest.raises(PLNLPError) as refused:
        check_precision("bf16", torch.device("cuda"))
    line = f"error: {refused.value}"
    assert ENTRIES["precision-unsupported"].expected in line
    assert_in_catalog("precision-unsupported", line)
    for precision, device in (("fp32", "cuda"), ("tf32", "cuda"), ("bf16", "cpu")):
        check_precision(precision, torch.device(device))  # nothing to refuse


def test_gpu_out_of_memory_wrapped_by_a_ray_task_is_found():
    import ray.exceptions

    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB")
    wrapped = ray.exceptions.RayTaskError("evaluate_checkpoint", "Traceback ...", oom)
    for error in (wrapped, wrapped.as_instanceof_cause()):
        try:
            raise RuntimeError("the stage failed") from error
        except RuntimeError as outer:
            assert job.describe_failure(outer).startswith(
                "out of GPU memory (tried to allocate 512.00 MiB); lower batch_size (now ?)")
    reason = job.gpu_out_of_memory_reason(oom, {"batch_size": "8", "eval_batch_size": "9"})
    assert reason.endswith("(now 8) or eval_batch_size (now 9), or the hidden sizes.")


def write_complete_graph(root: Path) -> Path:
    """A ddi stand-in whose training edges join every pair of nodes."""
    write_ddi_standin(root)
    pairs = np.array([(u, v) for u in range(60) for v in range(u + 1, 60)], dtype=np.int64)
    torch.save({"edge": pairs}, root / "ogbl_ddi" / "split" / "target" / "train.pt")
    return root


@pytest.mark.slow
def test_a_graph_too_dense_to_sample_fails_the_run(ray_session, mlflow_store, tmp_path, capsys):
    root = write_complete_graph(tmp_path / "dense")
    code = run_main([*SMOKE, "--data-root", str(root), *STANDIN, "--max-failures", "0"])
    assert_refused("sampler-too-dense", code, capsys.readouterr().err,
                   "test_a_graph_too_dense_to_sample_fails_the_run")
    assert only_run(mlflow_store).info.status == "FAILED"


def test_a_candidate_pool_larger_than_the_graph_fails_before_training(
    ray_session, mlflow_store, standin_root, monkeypatch, capsys,
):
    import components.train_and_evaluate

    def never_trained(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(components.train_and_evaluate, "train", never_trained)
    code = run_main([*SMOKE, "--data-root", str(standin_root), *STANDIN,
                     "--set", "sampler=hard", "--set", "candidate_pool=100000"])
    assert_refused("candidate-pool-too-large", code, capsys.readouterr().err,
                   "test_a_candidate_pool_larger_than_the_graph_fails_before_training")
    assert only_run(mlflow_store).info.status == "FAILED"


@pytest.mark.slow
def test_any_other_failure_marks_the_run_failed(ray_session, mlflow_store, standin_root,
                                                monkeypatch, capsys):
    import components.train_and_evaluate

    def full_disk(*args, **kwargs):
        raise OSError(28, "the disk is full")

    monkeypatch.setattr(components.train_and_evaluate, "train", full_disk)
    code = run_main([*SMOKE, "--data-root", str(standin_root), *STANDIN])
    assert_refused("other-failure", code, capsys.readouterr().err,
                   "test_any_other_failure_marks_the_run_failed")
    assert only_run(mlflow_store).data.tags[FAILURE_TAG] == "[Errno 28] the disk is full"


@pytest.mark.parametrize("verbose", [False, True])
def test_a_missing_file_is_named_by_its_path_and_verbose_shows_where(verbose, mlflow_store,
                                                                    tmp_path, capsys):
    """A library that re-raises a missing file without its path (as the
    error then reaches the line), and one that never had it."""
    test = "test_a_missing_file_is_named_by_its_path_and_verbose_shows_where"
    gone = tmp_path / "gone" / "train.parquet"

    def reading(work: Path) -> None:
        try:
            gone.read_bytes()
        except FileNotFoundError as error:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)) from error

    def pathless(work: Path) -> None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))

    lines = {}
    for entry_id, job_ in (("file-not-found", reading), ("file-not-found-no-path", pathless)):
        outcome = job.execute(entry_id, "reading", None, job_, verbose=verbose)
        err = capsys.readouterr().err
        lines[entry_id] = assert_refused(entry_id, 1 if outcome is None else 0, err, test)
        assert ("Traceback (most recent call last)" in err) == verbose
        run = only_run(mlflow_store, entry_id)
        assert run.info.status == "FAILED"
        assert run.data.tags[FAILURE_TAG] == lines[entry_id].removeprefix("error: ")
    assert lines["file-not-found"].endswith(f"No such file or directory: '{gone}'")

# Interrupts -----------------------------------------------------------------------------------

@pytest.fixture
def no_ray_shutdown(monkeypatch):
    """Keeps an in-process interrupt from shutting the suite's Ray down."""
    monkeypatch.setattr(pipelines.runtime.interrupts.ray, "shutdown", lambda: None)


def log_epochs(epochs: int) -> None:
    client = MlflowClient()
    run_id = mlflow.active_run().info.run_id
    for epoch in range(1, epochs + 1):
        client.log_metric(run_id, "train_loss", 1.0 / epoch, step=epoch)


def interrupt_self(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(5)  # the handler raises here
    raise AssertionError("the signal did not interrupt")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_kills_the_active_runs_with_the_epoch_reached(signum, mlflow_store,
                                                                   no_ray_shutdown, capsys):
    """Two seeds as ``--runs 2`` makes them: the first finished, the second
    interrupted at epoch 3 after Ray Train tried to take SIGINT over."""
    def job_(work: Path) -> None:
        with mlflow.start_run(run_name="seed-0", nested=True):
            log_epochs(5)
        with mlflow.start_run(run_name="seed-1", nested=True):
            log_epochs(3)
            signal.signal(signal.SIGINT, lambda *args: None)  # as TorchTrainer.fit does
            interrupt_self(signum)

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(SystemExit) as exited:
        job.execute("interrupts", "two-seeds", None, job_)
    err = capsys.readouterr().err
    if signum == signal.SIGTERM:
        assert_refused("interrupted-sigterm", exited.value.code, err,
                       "test_an_interrupt_kills_the_active_runs_with_the_epoch_reached")
    else:
        assert exited.value.code == 130 and "\ninterrupted: SIGINT (Ctrl-C) stopped" in f"\n{err}"
    client = MlflowClient(mlflow_store)
    runs = {r.info.run_name: r for r in client.search_runs(
        [client.get_experiment_by_name("interrupts").experiment_id])}
    parent = runs['two-seeds'].info.run_id
    assert f"run {parent} KILLED at epoch 3, logged through epoch 3; go on with: python " \
           f"pipelines/run.py --resume {parent})" in err
    assert {name: r.info.status for name, r in runs.items()} == {
        "two-seeds": "KILLED", "seed-0": "FINISHED", "seed-1": "KILLED"}
    for name in ("two-seeds", "seed-1"):
        assert runs[name].data.tags[INTERRUPTED_TAG] == "3"
        assert runs[name].data.tags[FAILURE_TAG].startswith("interrupted by SIG")
    assert {s: signal.getsignal(s) for s in handlers} == handlers  # restored
    assert signal.signal is pipelines.runtime.interrupts._install_handler


def test_an_interrupt_swallowed_by_a_library_still_kills_the_run(mlflow_store, no_ray_shutdown,
                                                                 capsys):
    """Ray Tune stops a sweep on Ctrl-C and returns what it has."""
    def swallowing(work: Path) -> str:
        log_epochs(2)
        try:
            interrupt_self(signal.SIGINT)
        except KeyboardInterrupt:
            return "partial results"

    with pytest.raises(SystemExit) as exited:
        job.execute("swallowed", "sweep", None, swallowing)
    assert exited.value.code == 130
    run = only_run(mlflow_store, "swallowed")
    assert run.info.status == "KILLED" and run.data.tags[INTERRUPTED_TAG] == "2"
    assert f"KILLED at epoch 2, logged through epoch 2; go on with: python pipelines/run.py " \
           f"--resume {run.info.run_id})" in capsys.readouterr().err


def test_an_interrupted_sweep_says_how_many_trials_ended_and_how_to_go_on(
        mlflow_store, no_ray_shutdown, capsys):
    """A sweep's run has no epoch of its own: its trials ran side by side,
    each to its own; the one the interrupt stopped is tagged with its epoch."""
    def sweep_(work: Path) -> None:
        mlflow.set_tag(TUNE_STATE_TAG, str(work))
        ended = TrialOutcome("t0", "trial_0", {"lr": 0.1}, "completed", 4)
        with mlflow.start_run(run_name="ended", nested=True,
                              tags={TRIAL_TAG: "t0", OUTCOME_TAG: ended.to_json()}):
            log_epochs(4)
        with mlflow.start_run(run_name="running", nested=True, tags={TRIAL_TAG: "t1"}):
            log_epochs(2)
            interrupt_self(signal.SIGINT)

    with pytest.raises(SystemExit) as exited:
        job.execute("sweeps", "sweep", None, sweep_)
    line = assert_refused("interrupted-sweep", exited.value.code, capsys.readouterr().err,
                          "test_an_interrupted_sweep_says_how_many_trials_ended_and_how_to_go_on")
    client = MlflowClient(mlflow_store)
    runs = {r.info.run_name: r for r in client.search_runs(
        [client.get_experiment_by_name("sweeps").experiment_id])}
    sweep_id = runs["sweep"].info.run_id
    assert line.endswith(f"(sweep run {sweep_id} KILLED with 1 trial ended; go on with --resume "
                         f"{sweep_id})")
    assert {name: r.info.status for name, r in runs.items()} == {
        "sweep": "KILLED", "ended": "FINISHED", "running": "KILLED"}
    assert INTERRUPTED_TAG not in runs["sweep"].data.tags
    assert runs["running"].data.tags[INTERRUPTED_TAG] == "2"
    assert runs["sweep"].data.tags[FAILURE_TAG] == "interrupted by SIGINT (Ctrl-C)"


def test_an_interrupt_before_the_run_records_nothing(tmp_path, unwritten_mlflow_store,
                                                     no_ray_shutdown, capsys):
    from components.train.worker_group import WorkerGroup

    with pytest.raises(SystemExit) as exited:
        services.prepare(lambda: interrupt_self(signal.SIGINT), WorkerGroup())
    assert_refused("interrupted-before-run", exited.value.code, capsys.readouterr().err,
                   "test_an_interrupt_before_the_run_records_nothing")
    assert not (tmp_path / "mlflow.db").exists()


def train_loss_epoch(database: Path) -> int:
    """The largest ``train_loss`` step in the SQLite store, 0 if none yet."""
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(database, timeout=5) as connection:
            (step,) = connection.execute(
                "SELECT MAX(step) FROM metrics WHERE key = 'train_loss'").fetchone()
    except sqlite3.Error:  # the tables are being created
        return 0
    return step or 0


def wait_for_a_logged_epoch(process, database: Path, log: Path, within_s: float = 150) -> None:
    """Waits until MLflow holds the run's first epoch, the process still running."""
    deadline = time.monotonic() + within_s
    while train_loss_epoch(database) < 1:
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)


def wait_for_a_checkpoint(database: Path, log: Path, epoch: int,
                          experiment: str = "plnlp-ddi") -> None:
    """Waits until the run in ``database`` has a whole checkpoint of
    ``epoch`` or later (:func:`checkpointed_epoch`)."""
    wait_until(lambda: checkpointed_epoch(only_run(f"sqlite:///{database}", experiment))
               >= epoch, log, within_s=60)


def checkpointed_epoch(run) -> int:
    """The epoch of the newest checkpoint that the run's one worker
    finished, which ``--resume`` goes on after: its manifest is there and
    every file it lists has the size it lists (a driver killed while the
    checkpoint was copied into the work folder can leave the manifest
    beside a file cut short)."""
    folder = Path(run.data.tags["plnlp.checkpoints"])
    return max((int(manifest.parent.name.rsplit("_", 1)[1])
                for manifest in folder.glob("*/checkpoint_epoch_*/files-0.json")
                if whole(manifest)), default=0)


def whole(manifest: Path) -> bool:
    """Whether every file ``manifest`` lists beside it has the size it lists."""
    try:
        sizes = json.loads(manifest.read_text())
    except ValueError:  # cut short itself
        return False
    return all((manifest.parent / name).is_file()
               and (manifest.parent / name).stat().st_size == size
               for name, size in sizes.items())


def resume_to_the_end(run_id: str, env: dict[str, str], cwd: Path, log: Path) -> str:
    """``pipelines/run.py --resume run_id`` as a user runs it, in ``cwd``,
    ending well; its output."""
    argv = [sys.executable, str(REPO_ROOT / "pipelines" / "run.py"), "--resume", run_id]
    with process_group(argv, env, cwd, log) as process:
        code = process.wait(timeout=300)
    output = log.read_text()
    assert code == 0, output[-3000:]
    return output


def smoke_command(ddi_root: Path, tmp_path: Path, *settings: str, work_dir: Path | None = None,
                  ray_address: str | None = None) -> tuple[list[str], dict[str, str], Path]:
    """``pipelines/run.py`` on ddi ``smoke`` with ``--set`` each of
    ``settings`` (and ``--work-dir``), as a user runs it (its own local
    Ray, or the running one at ``ray_address``) on a machine that ran it
    before (its SQLite store's tables made, the load stage's entry cached:
    see :mod:`plnlp_testing.warm_start`), its environment, and its SQLite store."""
    database = tmp_path / "mlflow.db"
    env = pipeline_env(tmp_path, ray_address, MLFLOW_TRACKING_URI=empty_tracking_store(database))
    cached_load(work_dir or tmp_path / "cache", "ddi", ddi_root)
    argv = [sys.executable, str(REPO_ROOT / "pipelines" / "run.py"), *SMOKE,
            "--data-root", str(ddi_root), *(["--work-dir", str(work_dir)] if work_dir else [])]
    return [*argv, *set_flags(*settings)], env, database


def set_flags(*settings: str) -> list[str]:
    """``--set`` before each of ``settings``, as a command line takes them."""
    return [part for setting in settings for part in ("--set", setting)]


# the interrupted runs' two-batch epochs: a signal a few epochs in, the resume trains the rest
RESUMED_EPOCHS = 20
# Two batches of 16,384 pairs an epoch, not the smoke preset's 65,536: the same model, its
# checkpoints and its MLflow records, for about 0.2 s an epoch instead of 0.35 (a ddi smoke
# command of 20 epochs joined to a running Ray: 15.1-15.8 CPU-seconds against 18.5-21.3,
# Intel Xeon, 2 vCPUs; smaller batches save nothing more). The runs given these are signalled
# at an event (an epoch logged, a checkpoint whole), with 200 epochs or at least 16 left after
# it; the tracking-server runs, their server stopped at epoch 3 of 15, train to their end
# either way.
SHORT_EPOCHS = ("max_batches_per_epoch=2", "batch_size=16384")


@pytest.mark.slow
def test_ctrl_c_kills_the_run_and_it_goes_on_from_another_folder_with_only_its_id(
        ddi_root, tmp_path, suite_ray_address):
    """Started with --experiment, --data-root and --work-dir, stopped by
    Ctrl-C (to the whole foreground process group, as a terminal sends
    it): the run is KILLED at its newest checkpoint's epoch and Ray is
    gone. Resumed from another folder (as ``ray job submit`` runs it in a
    job folder of its own, on the cluster's running Ray: the suite's) with
    only ``--resume ID``: the same run goes on after the epoch the
    interrupted line named."""
    work = tmp_path / "work"
    argv, env, database = smoke_command(ddi_root, tmp_path, f"epochs={RESUMED_EPOCHS}",
                                        *SHORT_EPOCHS, "checkpoint_every=1",
                                        work_dir=work)
    env.pop("PLNLP_DATA_ROOT", None)
    argv += ["--experiment", "elsewhere"]
    with process_group(argv, env, tmp_path, tmp_path / "first.log") as process:
        wait_for_a_logged_epoch(process, database, tmp_path / "first.log")
        # a checkpoint after the first one, so that the newest is not the only one
        wait_for_a_checkpoint(database, tmp_path / "first.log", 2, "elsewhere")
        ray_processes = descendants(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=60)
        assert all_ended(ray_processes), "Ray outlived the interrupted job"
    output = (tmp_path / "first.log").read_text()
    err = [line for line in output.splitlines() if line.startswith(("interrupted:", "error:"))]
    assert_refused("interrupted-sigint", code, "\n".join(err),
                   "test_ctrl_c_kills_the_run_and_it_goes_on_from_another_folder_"
                   "with_only_its_id")
    uri = f"sqlite:///{database}"
    killed = only_run(uri, "elsewhere")
    assert killed.info.status == "KILLED"
    assert killed.data.tags[FAILURE_TAG] == "interrupted by SIGINT (Ctrl-C)"
    epoch = int(killed.data.tags[INTERRUPTED_TAG])
    assert epoch == checkpointed_epoch(killed)
    assert f"KILLED at epoch {epoch}, logged through epoch " in err[0]
    assert err[0].endswith(f"; go on with: python pipelines/run.py --resume "
                           f"{killed.info.run_id})")
    assert 1 <= epoch < RESUMED_EPOCHS

    folder = tmp_path / "job-folder"
    folder.mkdir()  # no ./data, no --data-root, another cache
    resume_env = {**env, "PLNLP_CACHE_DIR": str(tmp_path / "other-cache"),
                  "RAY_ADDRESS": suite_ray_address}
    output = resume_to_the_end(killed.info.run_id, resume_env, folder, tmp_path / "resume.log")
    assert "Downloading artifacts" not in output
    assert f"restarting after epoch {epoch} from its checkpoint" in output
    client = MlflowClient(uri)
    again = only_run(uri, "elsewhere")
    assert again.info.run_id == killed.info.run_id and again.info.status == "FINISHED"
    assert [m.value for m in client.get_metric_history(again.info.run_id,
                                                       "restored_from_epoch")] == [epoch]
    assert sorted(m.step for m in client.get_metric_history(again.info.run_id, "train_loss")) \
        == list(range(1, RESUMED_EPOCHS + 1))
    assert not (tmp_path / "other-cache" / "runs").exists()  # its checkpoints were the run's
    assert not (work / "runs" / killed.info.run_id).exists()  # removed once it finished


@pytest.mark.slow
def test_a_lost_driver_s_run_is_marked_and_resume_goes_on_from_its_newest_checkpoint(
        ddi_root, tmp_path, suite_ray_address):
    """The driver and its local Ray killed at once (SIGKILL to the group: a
    head node that went down): MLflow holds the run RUNNING. ``--resume ID``
    on another Ray (the suite's) says the run was left by a driver that is gone, goes on
    after the newest complete checkpoint in the work folder, in the same run,
    and finishes it with every epoch once."""
    argv, env, database = smoke_command(ddi_root, tmp_path, f"epochs={RESUMED_EPOCHS}",
                                        *SHORT_EPOCHS, "checkpoint_every=2",
                                        work_dir=tmp_path / "work")
    with process_group(argv, env, tmp_path, tmp_path / "first.log") as process:
        wait_for_a_logged_epoch(process, database, tmp_path / "first.log")
        # a second whole checkpoint (epoch 4), so that the newest is not the only one
        wait_for_a_checkpoint(database, tmp_path / "first.log", 4)
        signal_the_tree(process.pid, signal.SIGKILL)  # the job's processes at once
        process.wait(timeout=60)
        driver = process.pid
        assert group_is_gone(driver), "a process of the killed job still runs"
        # Ray's workers lead process groups of their own: the actor ends once it
        # finds its raylet gone, and may write a checkpoint until then
        actor = int(re.findall(r"\(TrainingActor pid=(\d+)\)",
                               (tmp_path / "first.log").read_text())[-1])
        assert group_is_gone(actor, within_s=60), "the training actor outlived its raylet"
    uri = f"sqlite:///{database}"
    lost = only_run(uri)
    assert lost.info.status == "RUNNING"
    epoch = checkpointed_epoch(lost)
    assert 1 <= epoch < RESUMED_EPOCHS
    output = resume_to_the_end(lost.info.run_id, {**env, "RAY_ADDRESS": suite_ray_address},
                               tmp_path, tmp_path / "resume.log")
    assert re.search(rf"run {lost.info.run_id} was left RUNNING: its driver, pid {driver} on "
                     r".+, last seen \d+ s ago, is gone", output), output[-3000:]
    assert f"restarting after epoch {epoch} from its checkpoint" in output
    again = only_run(uri)
    assert again.info.run_id == lost.info.run_id and again.info.status == "FINISHED"
    assert FAILURE_TAG not in again.data.tags
    steps = [m.step for m in MlflowClient(uri).get_metric_history(again.info.run_id,
                                                                  "train_loss")]
    assert sorted(steps) == list(range(1, RESUMED_EPOCHS + 1))


@pytest.mark.slow
def test_sigterm_to_the_driver_during_training_kills_the_run_with_the_epoch_reached(
        ddi_root, tmp_path):
    """A job manager's ``kill PID``: SIGTERM to the driver alone, while its
    training actor trains short epochs (a few a second): every epoch printed,
    before the signal or while the driver delivers (its last request for
    reports stops the training before the next epoch prints), is in MLflow
    once, and the closing line names the last one logged."""
    argv, env, database = smoke_command(ddi_root, tmp_path, "epochs=200",
                                        *SHORT_EPOCHS, "checkpoint_every=50")
    with process_group(argv, env, tmp_path, tmp_path / "run.log") as process:
        wait_for_a_logged_epoch(process, database, tmp_path / "run.log")
        # epochs printed since the one logged (a few a second; under load, fewer)
        wait_until(lambda: printed_epochs(tmp_path / "run.log") >= 3, tmp_path / "run.log", 60)
        printed = printed_epochs(tmp_path / "run.log")
        ray_processes = descendants(process.pid)
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=60)
        assert all_ended(ray_processes), "Ray outlived the terminated job"
    output = (tmp_path / "run.log").read_text()
    assert "\x1b[" not in output  # a log file gets no colour codes
    own_lines = [line for line in output.splitlines() if "pid=" not in line]  # not Ray's
    assert not any("Traceback" in line for line in own_lines), output[-3000:]
    err = [line for line in own_lines if line.startswith(("interrupted:", "error:"))]
    assert code == 143 and len(err) == 1, output[-3000:]
    assert ENTRIES["interrupted-sigterm"].expected in err[0]
    killed = only_run(f"sqlite:///{database}")
    assert killed.info.status == "KILLED"
    assert killed.data.tags[INTERRUPTED_TAG] == str(checkpointed_epoch(killed))
    assert killed.data.tags[FAILURE_TAG] == "interrupted by SIGTERM"
    steps = [m.step for m in MlflowClient(f"sqlite:///{database}").get_metric_history(
        killed.info.run_id, "train_loss")]
    assert sorted(steps) == list(range(1, max(steps) + 1))
    assert max(steps) >= printed_epochs(tmp_path / "run.log") and printed > 1
    assert f"logged through epoch {max(steps)};" in err[0]

def own_lines(log: Path) -> list[str]:
    """The command's own lines of ``log``: not its Ray workers' (``pid=``)."""
    return [line for line in log.read_text().splitlines() if "pid=" not in line]


def terminate_the_group_after_an_epoch(process: subprocess.Popen, database: Path, log: Path,
                                       within_s: float = 150) -> tuple[int, float]:
    """SIGTERM to ``process``'s group once MLflow holds an epoch, as
    ``kill -TERM -- -PGID`` sends it; the exit status and the seconds it
    took, once every process the command had started has ended too."""
    wait_for_a_logged_epoch(process, database, log, within_s)
    ray_processes = descendants(process.pid)
    os.killpg(process.pid, signal.SIGTERM)
    signalled = time.monotonic()
    code = process.wait(timeout=60)
    took = time.monotonic() - signalled
    assert all_ended(ray_processes), "Ray outlived the terminated command"
    return code, took


@pytest.mark.slow
def test_sigterm_to_the_whole_process_group_kills_the_run_within_seconds(ddi_root, tmp_path):
    """``timeout``, Slurm and a terminal signal the command's whole process
    group: the local Ray runs in sessions of its own, so the signal reaches
    the driver alone, which stops the training, marks the run KILLED with
    every epoch printed delivered, shuts Ray down and exits 143 within 10 s."""
    argv, env, database = smoke_command(ddi_root, tmp_path, "epochs=200",
                                        *SHORT_EPOCHS, "checkpoint_every=1")
    with process_group(argv, env, tmp_path, tmp_path / "run.log") as process:
        code, took = terminate_the_group_after_an_epoch(process, database, tmp_path / "run.log")
    lines = own_lines(tmp_path / "run.log")
    assert not any("Traceback" in line or "GCS" in line for line in lines), lines[-20:]
    err = [line for line in lines if line.startswith(("interrupted:", "error:"))]
    assert code == 143 and len(err) == 1, lines[-20:]
    assert ENTRIES["interrupted-sigterm"].expected in err[0]
    assert took <= 10, f"the group's SIGTERM took {took:.1f} s to end the command"
    killed = only_run(f"sqlite:///{database}")
    assert killed.info.status == "KILLED"
    assert killed.data.tags[FAILURE_TAG] == "interrupted by SIGTERM"
    steps = sorted(m.step for m in MlflowClient(f"sqlite:///{database}").get_metric_history(
        killed.info.run_id, "train_loss"))
    assert steps == list(range(1, len(steps) + 1))
    assert steps[-1] >= printed_epochs(tmp_path / "run.log")
    assert f"logged through epoch {steps[-1]};" in err[0]


@pytest.mark.slow
def test_sigterm_to_every_process_of_the_run_kills_it_within_seconds(ddi_root, tmp_path):
    """systemd and Kubernetes signal every process of the job's cgroup: the
    local Ray (GCS, raylet, the training actor) ends with the driver, so no
    Ray call answers the clean-up. The run is KILLED at once from what the
    driver holds, the epochs it had relayed are in MLflow, and the process
    exits 143 within 10 s with one line that names what was lost."""
    argv, env, database = smoke_command(ddi_root, tmp_path, "epochs=200",
                                        *SHORT_EPOCHS, "checkpoint_every=1")
    with process_group(argv, env, tmp_path, tmp_path / "run.log") as process:
        wait_for_a_logged_epoch(process, database, tmp_path / "run.log")
        signal_the_tree(process.pid, signal.SIGTERM)
        signalled = time.monotonic()
        code = process.wait(timeout=60)
        took = time.monotonic() - signalled
    lines = own_lines(tmp_path / "run.log")
    assert not any("Traceback" in line or "GCS" in line for line in lines), lines[-20:]
    line = assert_refused("interrupted-with-ray", code, "\n".join(lines),
                          "test_sigterm_to_every_process_of_the_run_kills_it_within_seconds")
    assert took <= 10, f"the cgroup's SIGTERM took {took:.1f} s to end the command"
    killed = only_run(f"sqlite:///{database}")
    assert killed.info.status == "KILLED"
    assert killed.data.tags[FAILURE_TAG] == "interrupted by SIGTERM"
    assert int(killed.data.tags[INTERRUPTED_TAG]) >= 1
    steps = sorted(m.step for m in MlflowClient(f"sqlite:///{database}").get_metric_history(
        killed.info.run_id, "train_loss"))
    assert steps == list(range(1, len(steps) + 1)) and steps
    assert f"logged through epoch {steps[-1]};" in line


@pytest.mark.slow
def test_sigterm_to_a_sweep_s_whole_process_group_kills_its_runs_within_seconds(
        ddi_root, tmp_path):
    """The same group signal for ``pipelines/tune.py``: Ray Tune saves its
    state and stops the trials, the sweep's run and its trials end KILLED,
    exit 143 within seconds, one line that says how to go on. The bound is
    30 s, not the one-run tests' 10: a sweep's stop is Tune's save and its
    trials' ends, then the summary and Ray's shutdown, which on CI's 2 busy
    cores once took 13.0 s; a sweep that ran its 200-epoch trials to their
    end instead would take over a minute."""
    database = tmp_path / "mlflow.db"
    env = pipeline_env(tmp_path, MLFLOW_TRACKING_URI=empty_tracking_store(database))
    cached_load(tmp_path / "cache", "ddi", ddi_root)
    space = tmp_path / "space.yaml"
    space.write_text("preset: smoke\nmetric: valid_hits_20\nsearch: grid\n"
                     "space:\n  lr: {grid: [0.01, 0.02]}\n")
    argv = [sys.executable, str(REPO_ROOT / "pipelines" / "tune.py"), "--dataset", "ddi",
            "--space", str(space), "--data-root", str(ddi_root), "--set", "epochs=200",
            *set_flags(*SHORT_EPOCHS)]
    with process_group(argv, env, tmp_path, tmp_path / "sweep.log") as process:
        code, took = terminate_the_group_after_an_epoch(process, database,
                                                        tmp_path / "sweep.log", within_s=240)
    lines = own_lines(tmp_path / "sweep.log")
    assert not any("Traceback" in line or "GCS" in line for line in lines), lines[-20:]
    err = [line for line in lines if line.startswith(("interrupted:", "error:"))]
    assert code == 143 and len(err) == 1, lines[-20:]
    assert ENTRIES["interrupted-sweep"].expected in err[0] and "go on with --resume" in err[0]
    assert took <= 30, f"the group's SIGTERM took {took:.1f} s to end the command"
    client = MlflowClient(f"sqlite:///{database}")
    runs = client.search_runs([client.get_experiment_by_name("plnlp-ddi-tune").experiment_id])
    assert runs and {r.info.status for r in runs} == {"KILLED"}, \
        {r.info.run_name: r.info.status for r in runs}
    assert all(r.data.tags[FAILURE_TAG] == "interrupted by SIGTERM" for r in runs)


@pytest.mark.slow
def test_a_ray_that_dies_under_the_run_fails_it_with_one_sentence(ddi_root, tmp_path):
    """The local Ray's GCS killed alone during training: every Ray call of
    the driver would block until Ray's core worker ended it 60 s later, its
    run left RUNNING. The run is FAILED with one sentence within seconds."""

    argv, env, database = smoke_command(ddi_root, tmp_path, "epochs=200",
                                        *SHORT_EPOCHS, "checkpoint_every=1")
    with process_group(argv, env, tmp_path, tmp_path / "run.log") as process:
        wait_for_a_logged_epoch(process, database, tmp_path / "run.log")
        gcs = [child for child in psutil.Process(process.pid).children(recursive=True)
               if child.name() == "gcs_server"]
        assert len(gcs) == 1
        gcs[0].kill()
        killed = time.monotonic()
        code = process.wait(timeout=60)
        took = time.monotonic() - killed
    lines = own_lines(tmp_path / "run.log")
    assert took <= 15, f"the driver took {took:.1f} s to notice"
    assert_refused("ray-gone", code, "\n".join(lines),
                   "test_a_ray_that_dies_under_the_run_fails_it_with_one_sentence")
    failed = only_run(f"sqlite:///{database}")
    assert failed.info.status == "FAILED"
    assert failed.data.tags[FAILURE_TAG].startswith("the local Ray's GCS stopped answering")
    assert failed.data.tags[FAILURE_TAG].endswith(f"--resume {failed.info.run_id}")


SECOND_SIGNAL = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import mlflow, ray
from pipelines.runtime import job

def shutdown_that_waits():
    print(f"second signal at {time.monotonic()}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGINT)  # a second signal during the clean-up
    time.sleep(600)

ray.shutdown = shutdown_that_waits
def job_(work):
    mlflow.log_metric("train_loss", 1.0, step=1)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(600)
job.execute("second", "run", None, job_)
"""


@pytest.mark.slow  # a process of its own: 17 s on 2 cores
def test_a_second_signal_during_the_clean_up_ends_the_process_at_once(tmp_path):
    """The first signal's clean-up waits on Ray; a second ends the process
    at once (128 + its number) with the run already marked KILLED."""
    database = tmp_path / "mlflow.db"
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{database}",
           "PLNLP_CACHE_DIR": str(tmp_path / "cache")}
    ended = subprocess.run([sys.executable, "-c", SECOND_SIGNAL, str(REPO_ROOT)], env=env,
                           capture_output=True, text=True, timeout=300)
    exited = time.monotonic()
    assert ended.returncode == 130, ended.stderr[-3000:]
    # timed from the second signal, not from the start (imports take 5-30 s on 2 busy cores)
    second = float(re.search(r"second signal at ([0-9.]+)", ended.stderr).group(1))
    assert exited - second < 60  # not the 600 s the clean-up would wait
    lines = [line for line in ended.stderr.splitlines() if line.startswith("interrupted:")]
    assert len(lines) == 1 and "KILLED at epoch 1, logged through epoch 1" in lines[0], lines
    run = only_run(f"sqlite:///{database}", "second")
    assert run.info.status == "KILLED" and run.data.tags[FAILURE_TAG] == "interrupted by SIGTERM"


# Two runs at once ---------------------------------------------------------------------------

FIRST_TOUCH = """
import sys
sys.path.insert(0, sys.argv[1])
import mlflow
from components.recording.tracking_store import tracking_store_lock
with tracking_store_lock(mlflow.get_tracking_uri()):
    mlflow.set_experiment("plnlp-ddi")
with mlflow.start_run():
    mlflow.log_params({f"p{i}": i for i in range(20)})
    for step in range(20):
        mlflow.log_metric("train_loss", 1.0, step=step)
"""


@pytest.mark.slow  # two processes of their own: 9 s on 2 cores
def test_two_processes_opening_a_new_sqlite_store_at_once_both_record(tmp_path):
    """MLflow's migrations fail in one of two processes that create the
    tables at once (duplicate column, alembic version: without the lock, 5
    of 8 such processes failed); the lock orders them."""
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    processes = [subprocess.Popen([sys.executable, "-c", FIRST_TOUCH, str(REPO_ROOT)], env=env,
                                  cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                 for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0].decode() for p in processes]
    assert [p.returncode for p in processes] == [0, 0], "\n".join(outputs)[-3000:]
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("plnlp-ddi")
    assert len(client.search_runs([experiment.experiment_id])) == 2


@pytest.mark.slow
def test_two_pipelines_at_once_against_the_default_sqlite_file_both_finish(
        tmp_path, suite_ray_address):
    """Both on one running Ray of one node and 2 CPUs, the suite's (the
    training actors started ahead of their training once held both CPUs,
    and the load stages waited for one for good)."""
    root = write_ddi_standin(tmp_path / "datasets")
    # MLflow's default: sqlite:///mlflow.db in the folder
    env = pipeline_env(tmp_path, suite_ray_address)
    argv = [sys.executable, str(REPO_ROOT / "pipelines" / "run.py"), *SMOKE,
            "--data-root", str(root), *STANDIN]
    with process_group(argv, env, tmp_path, tmp_path / "a.log") as first, \
            process_group([*argv, "--seed", "1"], env, tmp_path, tmp_path / "b.log") as second:
        codes = [first.wait(timeout=300), second.wait(timeout=300)]
    logs = [(tmp_path / name).read_text()[-2000:] for name in ("a.log", "b.log")]
    assert codes == [0, 0], "\n".join(logs)
    assert not [line for log in logs for line in log.splitlines() if "database is locked" in line]
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("plnlp-ddi").experiment_id])
    assert sorted((r.info.status, r.data.params["seed"]) for r in runs) == [
        ("FINISHED", "0"), ("FINISHED", "1")]


# Graphs of one's own, found by the load stage -------------------------------------------------

def ring_edges(count: int) -> str:
    return "".join(f"{i},{(i + 1) % count}\n" for i in range(count))


BAD_GRAPHS: dict[str, Callable[[Path], list[str]]] = {
    "own-empty": lambda tmp: [str(write(tmp / "g.csv", "src,dst\n"))],
    "own-too-few-edges": lambda tmp: [str(write(tmp / "g.csv", "src,dst\n1,2\n"))],
    "own-bad-weights": lambda tmp: [str(write(tmp / "g.csv", "src,dst,weight\n" + "".join(
        f"{i},{i + 1},{-1 if i == 3 else 1}\n" for i in range(40))))],
    "own-bad-labels": lambda tmp: [str(labelled_folder(tmp))],
    "own-no-time": lambda tmp: [str(write(tmp / "g.csv", "src,dst\n" + ring_edges(40))),
                                "--split", "time:0.8,0.1,0.1"],
    "own-features-not-one-hot": lambda tmp: [
        str(write(tmp / "g.csv", "src,dst\n" + ring_edges(60))), "--node-features",
        str(write(tmp / "f.csv", "id,a,b,c\n" + "".join(
            f"{i},1,{int(i == 7)},0\n" for i in range(60)))),
        "--set", "node_input=features", "--set", "feature_categories=3", *FEATURES_STANDIN],
    "own-features-category-out-of-range": lambda tmp: [
        str(write(tmp / "g.csv", "src,dst\n" + ring_edges(60))), "--node-features",
        str(write(tmp / "f.csv", "id,species\n" + "".join(
            f"{i},{5 if i == 11 else i % 3}\n" for i in range(60)))),
        "--set", "node_input=features", "--set", "feature_categories=3", *FEATURES_STANDIN],
}


def labelled_folder(tmp: Path) -> Path:
    folder = tmp / "split"
    folder.mkdir()
    write(folder / "train.csv", "src,dst\n" + ring_edges(30))
    write(folder / "valid.csv", "src,dst,label\n0,5,1\n0,9,0\n")
    write(folder / "test.csv", "src,dst,label\n1,5,1\n1,9,2\n")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("entry_id", BAD_GRAPHS)
def test_a_bad_graph_of_ones_own_fails_the_load(entry_id, ray_session, mlflow_store, tmp_path,
                                                capsys):
    dataset, *flags = BAD_GRAPHS[entry_id](tmp_path)
    code = run_main(["--dataset", dataset, *flags, *STANDIN])
    line = assert_refused(entry_id, code, capsys.readouterr().err,
                          "test_a_bad_graph_of_ones_own_fails_the_load")
    runs = MlflowClient(mlflow_store).search_runs(
        [e.experiment_id for e in MlflowClient(mlflow_store).search_experiments()])
    assert [run.info.status for run in runs] == ["FAILED"]
    assert runs[0].data.tags[FAILURE_TAG] == line.removeprefix("error: ")


# --resume -------------------------------------------------------------------------------------

def resume_case(entry_id: str, tmp_path: Path) -> list[str]:
    """The command of ``entry_id``, with the MLflow run it resumes recorded."""
    from tests.pipelines.resume_runs import CONFIG, recorded_run, shapes_checkpoint

    if entry_id == "resume-missing-run":
        return ["--dataset", "ddi", "--resume", "0123456789abcdef"]
    if entry_id == "resume-other-dataset":
        return ["--dataset", "ddi", "--resume", recorded_run(CONFIG.replace(dataset="collab"))]
    if entry_id == "resume-finished":
        return ["--dataset", "ddi", "--resume", recorded_run(CONFIG, status="FINISHED")]
    if entry_id == "resume-still-running":  # its driver: this process, alive
        run_id = recorded_run(CONFIG, status="RUNNING")
        MlflowClient().set_tag(run_id, DRIVER_TAG, f"{socket.gethostname()}:{os.getpid()}")
        return ["--resume", run_id]
    if entry_id == "resume-other-experiment":
        return ["--resume", recorded_run(CONFIG, status="KILLED"), "--experiment", "mine"]
    if entry_id == "resume-data-missing":
        return ["--resume", recorded_run(CONFIG, status="KILLED"),
                "--data-root", str(tmp_path / "nowhere")]
    own = CONFIG.replace(encoder="examples.link_parts.layers:GINLayer")  # --resume imports it
    run_id = recorded_run(own, checkpoint=shapes_checkpoint(tmp_path, own))
    return ["--dataset", "ddi", "--resume", run_id, "--set", "hidden_channels=16"]


@pytest.mark.parametrize("entry_id", ["resume-missing-run", "resume-other-dataset",
                                      "resume-finished", "resume-still-running",
                                      "resume-other-shape",
                                      "resume-other-experiment", "resume-data-missing"])
def test_resume_refuses_a_run_it_cannot_go_on_with(entry_id, mlflow_store, tmp_path, capsys,
                                                   monkeypatch):
    monkeypatch.delenv("PLNLP_DATA_ROOT", raising=False)
    argv = resume_case(entry_id, tmp_path)
    resumed = argv[argv.index("--resume") + 1]
    client = MlflowClient()
    before = client.get_run(resumed).info.status if entry_id != "resume-missing-run" else None
    code = run_main(argv)
    assert_refused(entry_id, code, capsys.readouterr().err,
                   "test_resume_refuses_a_run_it_cannot_go_on_with")
    if before is not None:  # looking it up changed nothing
        assert client.get_run(resumed).info.status == before


def recorded_sweep(dataset: str = "ddi", status: str = "KILLED", state: Path | None = None,
                   sweep: bool = True) -> str:
    """A run as ``pipelines/tune.py`` records a sweep (``sweep``, else as
    ``pipelines/run.py`` records a run), ended ``status``, its Ray Tune
    state at ``state``."""
    with mlflow.start_run() as run:
        mlflow.log_params({"dataset": dataset, **({"searched": "lr"} if sweep else {})})
        if state is not None:
            mlflow.set_tag(TUNE_STATE_TAG, str(state))
    MlflowClient().set_terminated(run.info.run_id, status)
    return run.info.run_id


SWEEP_RESUME: dict[str, Callable[[Path], list[str]]] = {
    "sweep-resume-settings": lambda _: ["--resume", "0123", "--set", "lr=0.1",
                                        "--num-samples", "4"],
    "sweep-resume-missing-run": lambda _: ["--resume", "0123456789abcdef"],
    "sweep-resume-not-a-sweep": lambda _: ["--resume", recorded_sweep(sweep=False)],
    "sweep-resume-other-dataset": lambda _: ["--resume", recorded_sweep("collab")],
    "sweep-resume-finished": lambda _: ["--resume", recorded_sweep(status="FINISHED")],
    "sweep-resume-state-gone": lambda tmp: ["--resume", recorded_sweep(state=tmp / "gone")],
}


@pytest.mark.parametrize("entry_id", SWEEP_RESUME)
def test_tune_resume_refuses_a_sweep_it_cannot_go_on_with(entry_id, mlflow_store, tmp_path,
                                                          capsys):
    mlflow.set_experiment("sweeps")
    argv = SWEEP_RESUME[entry_id](tmp_path)
    client = MlflowClient(mlflow_store)
    before = [(r.info.run_id, r.info.status) for r in client.search_runs(
        [client.get_experiment_by_name("sweeps").experiment_id])]
    code = tune_main(["--dataset", "ddi", *argv])
    assert_refused(entry_id, code, capsys.readouterr().err,
                   "test_tune_resume_refuses_a_sweep_it_cannot_go_on_with")
    assert [(r.info.run_id, r.info.status) for r in client.search_runs(
        [client.get_experiment_by_name("sweeps").experiment_id])] == before


def test_tune_resume_refuses_a_store_that_does_not_exist_and_makes_none(
        unwritten_mlflow_store, tmp_path, capsys):
    code = tune_main(["--dataset", "ddi", "--resume", "0123456789abcdef"])
    assert_refused("sweep-resume-store-missing", code, capsys.readouterr().err,
                   "test_tune_resume_refuses_a_store_that_does_not_exist_and_makes_none")
    assert list(tmp_path.iterdir()) == []


PREDICT: dict[str, list[str]] = {
    "predict-file-format": ["--model", "models:/links@champion", "--top-k", "2",
                            "--out", "out.txt"],
    "predict-out-folder-missing": ["--model", "models:/links@champion", "--top-k", "2",
                                   "--out", "missing/out.csv"],
    "predict-file-missing": ["--model", "models:/links@champion", "--pairs", "missing.csv"],
    "predict-file-unreadable": ["--model", "models:/links@champion", "--pairs", "zero-bytes.csv"],
    "predict-pairs-columns": ["--model", "models:/links@champion", "--pairs", "ab.csv"],
    "predict-for-without-top-k": ["--model", "models:/links@champion", "--pairs", "pairs.csv",
                                  "--for", "1"],
    "predict-top-k-below-one": ["--model", "models:/links@champion", "--top-k", "0"],
    "predict-top-k-too-large": ["--model", "models:/links@champion", "--top-k", "60"],
    "predict-unknown-id": ["--model", "{strings}", "--top-k", "2", "--for", "aspirin"],
    "predict-blank-cell": ["--model", "models:/links@champion", "--pairs", "blank.csv"],
    "predict-id-not-integer": ["--model", "models:/links@champion", "--pairs", "fraction.csv"],
    "predict-id-out-of-range": ["--model", "models:/links@champion", "--pairs", "pairs.csv"],
    "model-uri-malformed": ["--model", "links", "--top-k", "2"],
    "model-run-unknown": ["--model", "runs:/0123/model", "--top-k", "2"],
    "model-logged-unknown": ["--model", "models:/m-0123abcd", "--top-k", "2"],
    "model-run-heuristic": ["--model", "runs:/{heuristic}/model", "--top-k", "2"],
    "model-run-path": ["--model", "{checkpoint}", "--top-k", "2"],
    "model-run-seeds": ["--model", "runs:/{seeds}/model", "--top-k", "2"],
    "model-run-no-model": ["--model", "runs:/{bare}/model", "--top-k", "2"],
    "model-unknown-name": ["--model", "models:/nothing@champion", "--top-k", "2"],
    "model-unknown-alias": ["--model", "models:/links@best", "--top-k", "2"],
    "model-unknown-version": ["--model", "models:/links/7", "--top-k", "2"],
}


@pytest.fixture
def predict_store(mlflow_store, ddi_standin_split, tmp_path) -> dict[str, str]:
    """Runs ``pipelines/predict.py`` is given: a registered model ``links``
    of the ddi stand-in (60 nodes), one with string ids, a heuristic's
    run, a run of two seeds and a run with no model; the files its
    arguments name, in the current folder."""
    import mlflow
    import pyarrow as pa

    from components.recording.model_export import (
        log_link_model,
        logged_model_uri,
        register_link_model,
    )
    from plnlp_core.assembly import build_input_adjacency, build_model
    from plnlp_core.config import PLNLPConfig
    from plnlp_core.data.node_ids import NodeIds
    from plnlp_core.scoring.link_scorer import LinkScorer

    mlflow.set_experiment("predict")  # not the experiment an earlier test left active
    config = PLNLPConfig(embedding_dim=8, hidden_channels=8)
    split = ddi_standin_split
    adj, _ = build_input_adjacency(split, config)
    runs = {}
    for name, ids in (("links", None), ("strings", pa.array([f"d{i}" for i in range(60)]))):
        scorer = LinkScorer.encode(build_model(config, split.info, split.num_nodes), split, adj,
                                   config, NodeIds(split.num_nodes, ids))
        scorer.save(tmp_path / name)
        with mlflow.start_run() as run:
            mlflow.log_metric("final/valid_hits_20", 0.5)
            log_link_model(tmp_path / name, scorer.node_ids.kind)
        runs[name] = run.info.run_id
    register_link_model(runs["links"], "links", "final_valid_hits_20")
    with mlflow.start_run() as run:
        mlflow.log_param("model", "heuristic:cn")
    runs["heuristic"] = run.info.run_id
    with mlflow.start_run() as run:
        for _ in range(2):
            with mlflow.start_run(nested=True):
                pass
    runs["seeds"] = run.info.run_id
    runs["bare"] = mlflow.start_run().info.run_id
    mlflow.end_run(status="RUNNING")
    runs["strings"] = logged_model_uri(runs["strings"])
    runs["checkpoint"] = f"runs:/{runs['links']}/checkpoint"
    write(tmp_path / "zero-bytes.csv", "")
    write(tmp_path / "ab.csv", "a,b\n1,2\n")
    write(tmp_path / "pairs.csv", "src,dst\n1,2\n3,60\n")
    write(tmp_path / "blank.csv", "src,dst\n1,2\n3,\n")
    write(tmp_path / "fraction.csv", "src,dst\n1,2\n1.5,5\n")
    return runs


@pytest.mark.parametrize("entry_id", PREDICT)
def test_predict_refuses_what_it_cannot_use(entry_id, predict_store, tmp_path, capsys):
    from pipelines.predict import main as predict_main

    def ours() -> list[Path]:  # MLflow notes in its artifacts which model a load asked for
        return sorted(path for path in tmp_path.rglob("*") if "mlruns" not in path.parts)

    before = ours()
    arguments = [argument.format(**predict_store) for argument in PREDICT[entry_id]]
    if "--out" not in arguments:
        arguments += ["--out", "out.csv"]
    code = predict_main(arguments)
    assert_refused(entry_id, code, capsys.readouterr().err,
                   "test_predict_refuses_what_it_cannot_use")
    assert ours() == before  # nothing written


CARRIED = """
import carried_helper
from plnlp_core.nn.predictors.mlp import MLPPredictor


class Scorer(MLPPredictor):
    pass
"""


def test_predict_refuses_a_model_whose_part_does_not_import_here(mlflow_store, ddi_standin_split,
                                                                 tmp_path, capsys):
    """The model carries its predictor's module, not the helper module that
    one imports: where the helper is not, the model is refused."""
    import mlflow

    from components.recording.model_export import log_link_model
    from pipelines.predict import main as predict_main
    from plnlp_core.assembly import build_input_adjacency, build_model
    from plnlp_core.config import PLNLPConfig
    from plnlp_core.data.node_ids import NodeIds
    from plnlp_core.scoring.link_scorer import LinkScorer

    own_module(tmp_path, "carried_helper", "")
    own_module(tmp_path, "carried_parts", CARRIED)
    config = PLNLPConfig(embedding_dim=8, hidden_channels=8, predictor_hidden=8,
                         predictor="carried_parts:Scorer")
    split = ddi_standin_split
    adj, _ = build_input_adjacency(split, config)
    scorer = LinkScorer.encode(build_model(config, split.info, split.num_nodes), split, adj,
                               config, NodeIds(split.num_nodes))
    scorer.save(tmp_path / "scorer")
    mlflow.set_experiment("carried")
    with mlflow.start_run() as run:
        log_link_model(tmp_path / "scorer", scorer.node_ids.kind)
    for name in ("carried_helper", "carried_parts"):  # this machine has neither now
        (tmp_path / f"{name}.py").unlink()
        sys.modules.pop(name)
    importlib.invalidate_caches()
    code = predict_main(["--model", f"runs:/{run.info.run_id}/model", "--top-k", "2",
                         "--out", "out.csv"])
    assert_refused("model-part-missing", code, capsys.readouterr().err,
                   "test_predict_refuses_a_model_whose_part_does_not_import_here")
    assert not (tmp_path / "out.csv").exists()


def test_predict_refuses_a_store_that_does_not_exist_and_makes_none(mlflow_store, tmp_path,
                                                                     monkeypatch, capsys):
    """Run outside the run's folder with MLFLOW_TRACKING_URI unset, MLflow
    looks in ./mlflow.db, and opening that store would create it."""
    from mlflow.tracking._tracking_service import utils as tracking_utils

    from pipelines.predict import main as predict_main

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    code = predict_main(["--model", "runs:/0123/model", "--top-k", "2", "--out", "out.csv"])
    line = assert_refused("model-store-missing", code, capsys.readouterr().err,
                          "test_predict_refuses_a_store_that_does_not_exist_and_makes_none")
    assert str(elsewhere / "mlflow.db") in line and "MLFLOW_TRACKING_URI" in line
    assert list(elsewhere.iterdir()) == []


# Object storage ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def object_stores(tmp_path_factory):
    """An S3 server that refuses every key it did not issue, and a plain one
    with a bucket ``work``."""
    from plnlp_testing.object_store import make_bucket, s3_server

    folder = tmp_path_factory.mktemp("s3")
    with s3_server(folder, checks_keys=True) as strict, s3_server(folder) as plain:
        make_bucket(plain, "work")
        yield strict, plain


@contextmanager
def pointed_at(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process reaches object storage at ``endpoint`` for the block."""
    from components.storage import location as storage
    from plnlp_testing.object_store import s3_env

    for key, value in s3_env(endpoint).items():
        monkeypatch.setenv(key, value)
    storage._root_filesystem.cache_clear()
    try:
        yield
    finally:
        storage._root_filesystem.cache_clear()


class UnansweredRegion:
    """``pyarrow.fs`` where S3 does not answer the question of a bucket's
    region (as where AWS cannot be reached: no network, a firewall), which
    ``FileSystem.from_uri`` asks before anything else."""

    class FileSystem:
        @staticmethod
        def from_uri(uri: str) -> None:
            bucket = uri.removeprefix("s3://").split("/")[0]
            raise OSError(f"When resolving region for bucket '{bucket}': AWS Error "
                          "NETWORK_CONNECTION during HeadBucket operation: curlCode: 6, Could "
                          f"not resolve hostname; Details: Could not resolve host: {bucket}.s3."
                          "us-east-1.amazonaws.com")

    def __getattr__(self, name: str) -> object:
        import pyarrow.fs

        return getattr(pyarrow.fs, name)


@pytest.mark.parametrize(("entry_id", "store", "flags", "said"), [
    ("work-dir-unwritable", "plain", ["--work-dir", "s3://no-such-bucket/plnlp"],
     "the bucket does not exist"),
    ("work-dir-unwritable", "strict", ["--work-dir", "s3://work/plnlp"],
     "the store refused the keys"),
    ("work-dir-unwritable", "silent", ["--work-dir", "s3://work/plnlp"],
     "the store does not answer (AWS_ENDPOINT_URL=http://127.0.0.1:"),
    ("work-dir-unwritable", "aws", ["--work-dir", "s3://nu5/plnlp"],
     "cannot be written: the store does not answer (AWS_ENDPOINT_URL is not set, so AWS itself "
     "was asked); check"),
    ("data-root-unreadable", "aws", ["--data-root", "s3://nu5/ogb"],
     "cannot be read: the store does not answer (AWS_ENDPOINT_URL is not set"),
    ("data-root-unreadable", "plain", ["--data-root", "s3://no-such-bucket/ogb"],
     "s3://no-such-bucket/ogb cannot be read: the bucket does not exist;"),
    ("data-root-empty", "plain", ["--work-dir", "s3://work/plnlp", "--data-root",
                                  "s3://work/no-ogb"], ""),
])
def test_object_storage_that_cannot_be_used_is_refused_before_any_work(
        entry_id, store, flags, said, object_stores, mlflow_store, monkeypatch, capsys):
    """Before Ray starts (RAY_ADDRESS points nowhere and is never reached),
    and nothing is written that a later run would trust."""
    from components.storage import location as storage
    from plnlp_testing.object_store import bucket_keys

    strict, plain = object_stores
    endpoint = {"strict": strict, "plain": plain, "aws": plain,
                "silent": f"http://127.0.0.1:{free_port()}"}[store]
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with pointed_at(endpoint, monkeypatch):
        if store == "aws":  # no endpoint: pyarrow asks AWS for the bucket's region, unanswered
            monkeypatch.delenv("AWS_ENDPOINT_URL")
            monkeypatch.setattr(storage, "pafs", UnansweredRegion())
        code = run_main([*SMOKE, *flags])
    line = assert_refused(entry_id, code, capsys.readouterr().err,
                          "test_object_storage_that_cannot_be_used_is_refused_before_any_work")
    assert said in line
    assert ".;" not in line and "no storage this product can reach" not in line
    assert mlflow.MlflowClient().search_experiments(filter_string="name = 'plnlp-ddi'") == []
    # at most the empty folder marker pyarrow leaves behind a probe
    assert [key for key in bucket_keys(plain, "work") if not key.endswith("/")] == []


def test_a_stage_that_cannot_read_object_storage_fails_the_run(object_stores, tmp_path,
                                                               monkeypatch):
    """The load stage's copy of a --data-root in a bucket, and a node's copy
    of a stage output there, refuse what is not there or not as its manifest
    says (the sentences a run's failure_reason then holds)."""
    from components.load import local_data_root
    from components.storage.location import Location
    from components.storage.stage_cache import cached, local_entry

    _, plain = object_stores
    monkeypatch.setenv("PLNLP_SCRATCH_DIR", str(tmp_path / "scratch"))
    with pointed_at(plain, monkeypatch):
        (Location("s3://work/elsewhere") / "README").write_text("not OGB's")
        with pytest.raises(PLNLPError) as missing:
            local_data_root(DATASETS.get("ddi"), Location("s3://work/elsewhere"))
        entry = cached(Location("s3://work/stages"), "demo", {"a": 1},
                       lambda scratch: (scratch / "data.bin").write_bytes(b"x" * 100))
        replaced = entry.location / entry.manifest["files_in"] / "data.bin"
        replaced.write_text("y" * 100)
        with pytest.raises(PLNLPError) as changed:
            local_entry(entry.location)
    for entry_id, error in (("data-root-no-dataset", missing), ("stage-copy-mismatch", changed)):
        line = f"error: {error.value}"
        assert ENTRIES[entry_id].expected in line, line
        assert_in_catalog(entry_id, line)


def test_a_compiled_pipeline_whose_defaults_cannot_run_is_refused(tmp_path, capsys):
    from pipelines.kubeflow import main as kubeflow_main

    code = kubeflow_main(["--compile", str(tmp_path / "plnlp.yaml"), "--dataset", "ppa"])
    assert_refused("kubeflow-preset-needs-gpu", code, capsys.readouterr().err,
                   "test_a_compiled_pipeline_whose_defaults_cannot_run_is_refused")
    assert not (tmp_path / "plnlp.yaml").exists()


# A tracking server away past the patience ----------------------------------------------------

def printed_epochs(log: Path) -> int:
    """The last epoch the run's log shows, 0 if none."""
    return max((int(n) for n in re.findall(r"epoch (\d+)/\d+ ", log.read_text())),
               default=0)


def wait_until(condition, log: Path, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)


def run_command(ddi_root: Path, tmp_path: Path, uri: str, epochs: int, ray_address: str
                ) -> tuple[list, dict]:
    """The smoke run of ``epochs`` short epochs (:data:`SHORT_EPOCHS`) that the
    tracking server at ``uri`` goes away from (its load stage's entry
    cached), joining the running Ray at ``ray_address``, and its environment."""
    cached_load(tmp_path / "work", "ddi", ddi_root)
    argv = [sys.executable, str(REPO_ROOT / "pipelines" / "run.py"), *SMOKE, "--data-root",
            str(ddi_root), "--work-dir", str(tmp_path / "work"), "--set", f"epochs={epochs}",
            *set_flags(*SHORT_EPOCHS, "checkpoint_every=5")]
    env = pipeline_env(tmp_path, ray_address, MLFLOW_TRACKING_URI=uri,
                       MLFLOW_HTTP_REQUEST_MAX_RETRIES="0", MLFLOW_HTTP_REQUEST_TIMEOUT="5")
    return argv, env


def logged_epochs(uri: str, run_id: str) -> list[int]:
    return sorted(m.step for m in MlflowClient(uri).get_metric_history(run_id, "train_loss"))


@pytest.mark.slow
def test_a_server_away_past_the_patience_fails_the_run_and_resume_logs_what_it_measured(
        ddi_root, tmp_path, suite_ray_address):
    """With a patience of 5 s, a server stopped at epoch 3 and not back by
    the end: the run trains to its end, then fails with how to go on;
    ``--resume`` once the server is back logs every epoch and finishes.
    Both commands join the suite's Ray, as on a cluster."""
    log = tmp_path / "run.log"
    with TrackingServer(tmp_path / "server") as server:
        server.start()
        argv, env = run_command(ddi_root, tmp_path, server.uri, 15, suite_ray_address)
        env["PLNLP_TRACKING_PATIENCE_S"] = "5"
        with process_group(argv, env, tmp_path, log) as process:
            wait_until(lambda: printed_epochs(log) >= 3, log, within_s=240)
            server.stop()
            code = process.wait(timeout=300)
        output = log.read_text()
        assert printed_epochs(log) == 15, output[-3000:]  # it trained to its end
        error = assert_refused("tracking-away", code, output,
                               "test_a_server_away_past_the_patience_fails_the_run_and_resume_"
                               "logs_what_it_measured")
        run_id = re.search(r"--resume (\w+)`", error).group(1)
        server.start()
        assert logged_epochs(server.uri, run_id)[-1] < 15
        resume_to_the_end(run_id, env, tmp_path, tmp_path / "resume.log")
        assert logged_epochs(server.uri, run_id) == list(range(1, 16))
        assert MlflowClient(server.uri).get_run(run_id).info.status == "FINISHED"



@contextmanager
def run_beside_a_store(ddi_root: Path, tmp_path: Path, *flags: str, **extra_env: str):
    """ddi ``smoke`` with a checkpoint every epoch, its work folder in a
    bucket reached through a :class:`~plnlp_testing.proxy.PausableProxy`
    (up), run as a user runs it, with ``flags``: the proxy, the process,
    its log, its environment and its SQLite store's URI. It starts its own
    Ray, whose workers get the store's endpoint and keys from the command's
    environment (the suite's Ray's workers have none of them)."""
    from plnlp_testing.object_store import make_bucket, s3_env, s3_server
    from plnlp_testing.proxy import PausableProxy

    with s3_server(tmp_path) as endpoint:
        make_bucket(endpoint, "work")
        proxy = PausableProxy(endpoint)
        proxy.up()
        argv, env, database = smoke_command(ddi_root, tmp_path, "epochs=12",
                                            "max_batches_per_epoch=2", "checkpoint_every=1")
        env.update(s3_env(proxy.url), **extra_env)
        log = tmp_path / "run.log"
        with process_group([*argv, "--work-dir", "s3://work/plnlp", *flags], env, tmp_path,
                           log) as process:
            yield proxy, process, log, env, f"sqlite:///{database}"


@pytest.mark.slow
def test_a_store_away_for_10_s_in_mid_training_is_waited_for_and_the_run_finishes(
        ddi_root, tmp_path):
    """Two DDP workers, so that the checkpoints go through Ray Train's own
    storage (given the product's patient file system): the store's endpoint
    refuses every connection for 10 s from epoch 3 on. The checkpoint
    writes wait for it (training stalls) and the run finishes with every
    epoch once, never restarted: with pyarrow's own 3 tries (under a
    second) the first write in the outage failed the worker group, which Ray
    Train started again from the newest checkpoint. 10 s is ten times those
    tries, and the doubling waits' try at 12.8 s finds the store back (a
    30 s outage stalled the run until the try at 51.2 s)."""
    with run_beside_a_store(ddi_root, tmp_path, "--num-workers", "2") as (
            proxy, process, log, _, uri):
        wait_until(lambda: printed_epochs(log) >= 3, log, within_s=240)
        proxy.down()
        at_outage = printed_epochs(log)
        time.sleep(10)
        assert printed_epochs(log) <= at_outage + 2, log.read_text()[-3000:]  # it waits
        proxy.up()
        code = process.wait(timeout=300)
    assert code == 0, log.read_text()[-3000:]
    run = only_run(uri)
    assert run.info.status == "FINISHED"
    assert logged_epochs(uri, run.info.run_id) == list(range(1, 13))
    assert "restored_from_epoch" not in run.data.metrics  # waited for, never restarted


@pytest.mark.slow
def test_a_store_away_past_its_patience_fails_the_run_and_resume_finishes_it(
        ddi_root, tmp_path):
    """One worker, a patience of 5 s: a 2 s outage at epoch 3 is waited
    for; the store gone for good from epoch 6 fails the run within 60 s,
    with the catalog's sentence naming the run; once the store is back,
    ``--resume`` goes on from the newest complete checkpoint in the bucket
    and the run finishes with every epoch once. A write gives up one to two
    patience periods after the store went, then the run ends; a full suite
    on 2 cores once took 40.6 s, when pyarrow's ``copy_files`` had let a
    checkpoint's upload fail without an error and the next checkpoint's
    write met the outage again (``Location.upload`` now closes each file
    itself)."""
    with run_beside_a_store(ddi_root, tmp_path, PLNLP_STORE_PATIENCE_S="5") as (
            proxy, process, log, env, uri):
        wait_until(lambda: printed_epochs(log) >= 3, log, within_s=240)
        proxy.down()
        time.sleep(2)
        proxy.up()
        wait_until(lambda: printed_epochs(log) >= 6, log, within_s=60)
        proxy.down()
        gone = time.monotonic()
        code = process.wait(timeout=120)
        assert time.monotonic() - gone < 60, log.read_text()[-3000:]
        output = log.read_text()
        line = assert_refused("store-away", code, output, "test_a_store_away_past_its_patience_"
                              "fails_the_run_and_resume_finishes_it")
        run = only_run(uri)
        assert line.endswith(f"go on with python pipelines/run.py --resume {run.info.run_id}.")
        assert run.info.status == "FAILED" and printed_epochs(log) < 12
        proxy.up()
        resume_to_the_end(run.info.run_id, env, tmp_path, tmp_path / "resume.log")
    assert logged_epochs(uri, run.info.run_id) == list(range(1, 13))
    assert MlflowClient(uri).get_run(run.info.run_id).info.status == "FINISHED"
