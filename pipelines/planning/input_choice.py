"""The line a run prints and logs (``node_input_choice``) of which node
input it trains on and who chose it: the config or ``--set``, the preset,
or the graph (:func:`~plnlp_core.config.with_graph_node_input`, the one
default of a run's node input)."""
from plnlp_core.data.datasets import DatasetInfo

NODE_INPUT = "node_input"


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
