"""The sweep: one Ray Tune trial per sampled config, each a whole
augment -> train -> evaluate run recorded as a child MLflow run of one sweep
run; each trial reports every evaluated epoch to Tune, so that an ASHA
scheduler stops weak ones early.

    python pipelines/tune.py --dataset ddi --space tune_spaces/ablation.yaml
    python pipelines/tune.py --resume <sweep run id>

Search spaces are data (``tune_spaces/*.yaml``, see
:mod:`pipelines.planning.sweep_space`); trials are compared by a validation metric.
An interrupted sweep's run holds the trials that ended, summarised, and
``--resume`` goes on with the others in the same run, from Ray Tune's state
(``tune/<run id>`` under ``--work-dir``, else under the cache until the sweep
finishes). The flags become a request, the request a plan
(:func:`pipelines.planning.sweep_plan.plan_sweep`), and
:mod:`pipelines.runtime.sweep` runs it.
"""
import sys

from pipelines.planning.arguments import sweep_request
from pipelines.planning.sweep_plan import plan_sweep
from pipelines.runtime.process_exit import skip_final_collection
from plnlp_core.errors import PLNLPError


def main(argv: list[str] | None = None) -> int:
    skip_final_collection()
    request = sweep_request(argv)
    try:
        plan = plan_sweep(request)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from pipelines.runtime.sweep import run_sweep

    return run_sweep(plan, own_process=argv is None)


if __name__ == "__main__":
    sys.exit(main())
