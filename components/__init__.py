"""Ray stages of the PLNLP pipeline. Each stage takes and returns typed
artifacts (paths with a known schema), so it can run anywhere on a cluster
that sees the work directory."""
