"""The command lines (``run.py``, ``tune.py``, ``predict.py``, ``register.py``,
``kubeflow.py``, ``standin.py``), their planning and their runtime.

Importing the package, as every command and every worker of a Ray a command
starts does (:mod:`pipelines.runtime.worker_collections`), defers two
imports their processes pay for and seldom use: ``torch._dynamo``, which PyG
would import with itself (:mod:`pipelines.runtime.deferred_dynamo`), and
scikit-learn's metrics, which OGB's ``Evaluator`` would import with itself
(:mod:`pipelines.runtime.deferred_auc`). The method library, ``plnlp_core``,
installs nothing of the kind in a user's process.
"""
from pipelines.runtime.deferred_auc import DeferredAUC
from pipelines.runtime.deferred_dynamo import DeferredDynamo

DeferredDynamo.install()
DeferredAUC.install()
