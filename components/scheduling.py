"""Where stage tasks run."""
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

# Outside any placement group: a stage started from a Ray Tune trial, whose
# group holds only the trial's token CPU, must still find CPUs for its tasks.
ANYWHERE = PlacementGroupSchedulingStrategy(placement_group=None)
