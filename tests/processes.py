"""Only for ``tests/pipelines/test_errors.py`` until it imports
:mod:`plnlp_testing` itself; remove this module then. Every other test
imports the services from :mod:`plnlp_testing`."""
from plnlp_testing.processes import free_port, pipeline_env, process_group
from plnlp_testing.tracking_server import TrackingServer

__all__ = ["TrackingServer", "free_port", "pipeline_env", "process_group"]
