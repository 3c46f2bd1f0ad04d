"""Which run a command line starts: a new one with the settings it names
(a preset made for a GPU asked about on CPUs), or, with ``--resume``, the
stopped run that goes on (:mod:`pipelines.resume`, which looks it up in
MLflow, imported only then so that ``--help`` and a refused setting answer
at once)."""
import argparse
import sys
from dataclasses import asdict

from pipelines.arguments import worker_group
from pipelines.settings import (
    GraphSource,
    RunPlan,
    graph_source,
    preset_name,
    preset_needs_gpu,
    resolve_config,
)
from plnlp_core.errors import PLNLPError
from plnlp_core.heuristics import HEURISTICS


def plan_run(args: argparse.Namespace) -> RunPlan:
    """The plan of ``args``: their graph and settings, or, with ``--resume``,
    the run that goes on (see :func:`pipelines.resume.resumed_run`)."""
    source = graph_source(args)
    model = _model(args.model)
    if model != "plnlp" and args.register is not None:
        raise PLNLPError(f"--register keeps a trained model, and {model} is a heuristic with "
                         "none; drop --register, or train one with --model plnlp.")
    if args.resume is not None:
        from pipelines.resume import resumed_run  # looks the run up in MLflow

        return resumed_run(args, source)
    config = resolve_config(args, source)
    if model == "plnlp":
        confirm_cpu_run(args, source)
    return RunPlan(None, config, args.runs if model == "plnlp" else 1, source, model)


def _model(name: str) -> str:
    kind, _, heuristic = name.partition(":")
    if name != "plnlp" and not (kind == "heuristic" and heuristic in HEURISTICS):
        raise PLNLPError(f"unknown model {name!r}; choose plnlp or one of: "
                         f"{', '.join(f'heuristic:{h}' for h in HEURISTICS.names)}.")
    return name


def confirm_cpu_run(args: argparse.Namespace, source: GraphSource) -> None:
    """A preset made for a GPU started without ``--use-gpu`` goes on only
    with ``--yes`` or a "y" typed at a terminal; elsewhere it is refused."""
    preset = preset_name(args, source)
    if args.use_gpu or args.yes or not preset_needs_gpu(source.presets, preset):
        return
    question = (f"The {args.dataset} {preset!r} preset is made for a GPU and takes hours "
                "on CPUs. Run it on CPUs anyway? [y/N] ")
    if sys.stdin.isatty() and input(question).strip().lower() in ("y", "yes"):
        return
    raise PLNLPError(f"the {args.dataset} {preset!r} preset is made for a GPU and would "
                     "take hours on CPUs; add --use-gpu on a machine with GPUs, choose "
                     "--preset cpu (or smoke), or add --yes to run it on CPUs anyway.")


def run_params(args: argparse.Namespace, plan: RunPlan) -> dict[str, object]:
    """The run's settings beside the config's, as every run logs them: the
    model, the seeds, the restarts allowed and the worker group."""
    return {"model": plan.model, "runs": plan.runs, "max_failures": args.max_failures,
            **asdict(worker_group(args))}
