"""Which node input a run trains on when its settings leave it out: the
graph's node features where it has them (most graphs users bring do), so
that features a user gave are never read and then ignored. A preset may
name its own (the paper's recipes do), and ``--set node_input=...`` any."""
from plnlp_core.data.datasets import DatasetInfo

NODE_INPUT = "node_input"


def with_node_input(settings: dict[str, object], info: DatasetInfo) -> dict[str, object]:
    """``settings``, with ``node_input`` chosen where they leave it out:
    ``both`` (the features beside a trained embedding) for a graph with
    node features, else ``embedding``."""
    if NODE_INPUT in settings:
        return settings
    return {**settings, NODE_INPUT: "both" if info.feature_dim else "embedding"}


def node_input_choice(chosen: str, preset: str, preset_settings: dict[str, object],
                      user_settings: dict[str, object], info: DatasetInfo) -> str:
    """Why the run trains on the node input ``chosen``, in one line."""
    if NODE_INPUT in user_settings:
        why = "as the config or --set says"
    elif NODE_INPUT in preset_settings:
        why = f"the {preset} preset's"
    else:
        why = "chosen for the graph"
    features = f"{info.feature_dim:,} node features" if info.feature_dim else "no node features"
    line = f"node input {chosen} ({why}; the graph has {features})"
    if info.feature_dim and chosen == "embedding":
        return f"{line}: --set node_input=both uses them"
    if info.feature_dim:
        return f"{line}: --set node_input=embedding trains on the embedding alone"
    return line
