"""What a run leaves for the driver to log: its ``final_*`` metrics and the
best model's :class:`plnlp_core.scoring.link_scorer.LinkScorer`, side by side in the
run's checkpoint storage (which the driver sees: a shared folder or object
storage).

The main job's training worker writes them itself once training ends
(:func:`export_best`): it holds the split, the input graph and the best
model on its device already, so the run needs no evaluation task to start a
process, import torch and read the split again (6.5 s of a 44 s ddi
``smoke`` run on 2 cores). The best epoch's evaluation is the final one
there: the same state, graph and evaluation an evaluation of the
checkpoint would run (``tests/components/test_stages.py`` checks that the two
agree). The kubeflow pipeline's separate evaluate step writes the same
files from the checkpoint (:func:`components.recording.model_export.evaluate_and_export`);
both go through :func:`finish`.

:data:`FINAL_FILE` is written last, so its presence means the scorer is
whole; :func:`clear_final` removes an earlier attempt's before training.
"""
import json
import tempfile
from pathlib import Path

from torch import Tensor, nn

from components.storage.location import Location, location, node_scratch_dir
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.data.node_ids import NodeIds
from plnlp_core.errors import PLNLPError
from plnlp_core.nn.model import unwrap
from plnlp_core.scoring.evaluation import scorer_metrics
from plnlp_core.scoring.heart import HardNegatives, heart_split_metrics
from plnlp_core.scoring.link_scorer import LinkScorer

FINAL_FILE = "final.json"
SCORER_DIR = "scorer"


def finish(
    model: nn.Module, split: LinkSplit, adj: Tensor, config: PLNLPConfig, node_ids: NodeIds,
    directory: "str | Path | Location", metrics: dict[str, float] | None = None,
    heart_negatives: HardNegatives | None = None,
) -> dict[str, float]:
    """The run's finish, the same for the main job and the kubeflow
    pipeline: ``model``'s ``final_*`` metrics (its best epoch's evaluation
    ``metrics`` when the caller has them, else evaluated here over ``adj``;
    with ``heart_negatives``, HeaRT's metrics too, scored by the scorer) and
    its scorer encoded over ``adj``, written into ``directory`` by
    :func:`write_final`. Returns the metrics."""
    scorer = LinkScorer.encode(model, split, adj, config, node_ids)
    evaluated = scorer_metrics(scorer.score, split) if metrics is None else metrics
    if heart_negatives is not None:
        evaluated = {**evaluated, **heart_split_metrics(scorer.score, heart_negatives,
                                                        config.eval_batch_size)}
    final = {f"final_{key}": value for key, value in evaluated.items()}
    write_final(directory, final, scorer)
    return final


def export_best(
    model: nn.Module, best_state: dict[str, Tensor], best_metrics: dict[str, float],
    split: LinkSplit, adj: Tensor, config: PLNLPConfig, node_ids: NodeIds,
    directory: "str | Path | Location", heart_negatives: HardNegatives | None = None,
) -> None:
    r"""Loads ``best_state`` into ``model`` (unwrapping DDP) and
    :func:`finish`\ es it on the model's device with ``best_metrics`` (and
    ``heart_negatives``)."""
    core = unwrap(model)
    core.load_state_dict(best_state)
    device = next(core.parameters()).device
    finish(core, split, adj.to(device), config, node_ids, directory, best_metrics,
           heart_negatives)


def write_final(directory: "str | Path | Location", final: dict[str, float],
                scorer: LinkScorer) -> None:
    """Writes ``scorer`` into ``directory/scorer``, then ``final`` and the
    kind of the scorer's node ids into ``directory/final.json`` (in object
    storage: the scorer's files uploaded from this node, the marker last)."""
    directory = location(directory)
    clear_final(directory)
    marker = json.dumps({"metrics": final, "id_kind": scorer.node_ids.kind})
    if directory.is_local:
        scorer.save(directory.local_path() / SCORER_DIR)
    else:
        with tempfile.TemporaryDirectory(prefix="plnlp-scorer-", dir=node_scratch_dir()) as local:
            scorer.save(Path(local))
            (directory / SCORER_DIR).upload(Path(local))
    (directory / FINAL_FILE).write_text(marker)


def read_final(directory: "str | Path | Location") -> tuple[dict[str, float], str]:
    """The ``final_*`` metrics and the node ids' kind :func:`write_final`
    wrote into ``directory``."""
    directory = location(directory)
    try:
        final = json.loads((directory / FINAL_FILE).read_text())
    except FileNotFoundError:
        raise PLNLPError(f"training ended without writing its final metrics and model to "
                         f"{directory}; run again with --resume to finish it from its last "
                         "checkpoint.") from None
    return final["metrics"], final["id_kind"]


def clear_final(directory: "str | Path | Location") -> None:
    """Removes what :func:`write_final` wrote into ``directory``, marker first."""
    directory = location(directory)
    marker = directory / FINAL_FILE
    if marker.exists():
        marker.filesystem.delete_file(marker.path)
    (directory / SCORER_DIR).remove()
