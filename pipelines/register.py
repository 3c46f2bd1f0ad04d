"""Register a trained run's model in MLflow's model registry, without
training again: a new version of a name, which becomes ``<name>@champion``
when its validation metric beats the current champion's (as ``--register``
on ``pipelines/run.py`` and ``pipelines/tune.py`` does at the end of a run).

    python pipelines/register.py <run id> <name>
"""
import argparse
import sys

from pipelines.runtime.process_exit import skip_final_collection
from plnlp_core.errors import PLNLPError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pipelines/register.py",
        description="Register a trained PLNLP run's model as a new version of NAME in MLflow's "
                    "model registry; it becomes NAME@champion when its validation metric is "
                    "the best.")
    parser.add_argument("run_id", help="the run's MLflow id (its summary or the MLflow UI)")
    parser.add_argument("name", help="the registered model's name, e.g. ddi-links")
    return parser.parse_args(argv)


def validation_metric(run: object) -> str:
    """The run's ``final_valid_<metric>`` that picks the champion: its
    dataset's main metric (AUC for a graph of one's own). A run with a
    model has it: the model is logged after the final metrics."""
    from plnlp_core.data.datasets import DATASETS

    dataset = run.data.params.get("dataset", "")
    return f"final_valid_{DATASETS.get(dataset).main_metric_key}" \
        if dataset in DATASETS.names else "final_valid_auc"


def main(argv: list[str] | None = None) -> int:
    skip_final_collection()
    args = parse_args(argv)
    try:
        from components.recording.model_export import register_link_model
        from components.recording.reads import get_run
        from pipelines.runtime.home_folder import keep_home_clean
        from pipelines.runtime.model_source import check_model_uri

        keep_home_clean()
        check_model_uri(f"runs:/{args.run_id}/model")  # the run exists and holds one model
        metric = validation_metric(get_run(args.run_id))
        print(register_link_model(args.run_id, args.name, metric), flush=True)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
