"""The services the tests start, as a package the tests and the benchmarks
both import: a command in its own process group (:mod:`.processes`), an S3
server (:mod:`.object_store`), a TCP proxy that can be taken down
(:mod:`.proxy`), PostgreSQL (:mod:`.postgres`) and an MLflow tracking server
(:mod:`.tracking_server`). Installed with the project; nothing in
``plnlp_core``, ``components`` or ``pipelines`` imports it."""
