"""Only for ``tests/pipelines/test_errors.py`` until it imports
:mod:`plnlp_testing` itself; remove this module then. Every other test
imports the services from :mod:`plnlp_testing`."""
from plnlp_testing.object_store import bucket_keys, make_bucket, s3_env, s3_server
from plnlp_testing.proxy import PausableProxy

__all__ = ["PausableProxy", "bucket_keys", "make_bucket", "s3_env", "s3_server"]
