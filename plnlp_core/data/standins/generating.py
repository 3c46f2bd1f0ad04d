"""The random graphs of the stand-ins: Chung–Lu edges over power-law node
weights, split into disjoint train, valid and test positives, and negatives
that are no edges, all as int64 numpy arrays."""
import numpy as np

from plnlp_core.errors import PLNLPError
from plnlp_core.data.standins.sizing import CHUNK, StandinSize

DEGREE_EXPONENT = 2.3
_MAX_ROUNDS = 64


def draw_positives(rng: np.random.Generator, size: StandinSize,
               directed: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """The sorted keys of every edge (a few surplus non-positives included)
    and the train (sorted), valid and test pairs, disjoint."""
    keys = _distinct_keys(rng, size.num_nodes, size.positives, directed)
    chosen = keys[rng.permutation(len(keys))[:size.positives]]
    train, valid, test = np.split(chosen, [size.train, size.train + size.valid])
    train.sort()
    return keys, [_decode(part, size.num_nodes) for part in (train, valid, test)]


def _distinct_keys(rng: np.random.Generator, num_nodes: int, count: int,
                   directed: bool) -> np.ndarray:
    """At least ``count`` distinct Chung–Lu pairs as sorted keys ``u * N + v``
    (``u < v`` unless ``directed``), without self-loops."""
    cap = 1 / np.sqrt(count if directed else 2 * count)
    p_out = _node_probabilities(rng, num_nodes, cap)
    p_in = _node_probabilities(rng, num_nodes, cap) if directed else p_out
    keys, batch = np.empty(0, dtype=np.int64), count + count // 16 + 64
    for _ in range(_MAX_ROUNDS):
        before = len(keys)
        sources, targets = _endpoints(rng, p_out, batch), _endpoints(rng, p_in, batch)
        rng.shuffle(targets)
        keep = sources != targets
        fresh = _encode(sources[keep], targets[keep], num_nodes, directed)
        del sources, targets, keep
        keys = _sorted_unique(np.concatenate([keys, fresh]))
        if len(keys) >= count:
            return keys
        gained = max(len(keys) - before, 1)
        batch = int((count - len(keys)) * batch / gained * 1.1) + 64
    raise PLNLPError(f"could not draw {count:,} distinct edges among {num_nodes:,} nodes; "
                     "use more nodes or fewer edges.")


def _node_probabilities(rng: np.random.Generator, num_nodes: int, cap: float) -> np.ndarray:
    r"""Power-law weights :math:`i^{-1/(\gamma - 1)}` normalised to sum 1,
    the largest capped at ``cap`` (the rest scaled up to keep the sum),
    assigned to the nodes in random order."""
    if cap * num_nodes <= 1:
        return np.full(num_nodes, 1 / num_nodes)
    weights = np.arange(1, num_nodes + 1, dtype=np.float64) ** (-1 / (DEGREE_EXPONENT - 1))
    tail = np.cumsum(weights[::-1])[::-1]  # tail[k]: sum of weights k, k + 1, ...
    capped = np.arange(num_nodes)
    scale = (1 - capped * cap) / tail
    first = int(np.argmax(weights * scale <= cap))  # fewest capped that fit under the cap
    probabilities = weights * scale[first]
    probabilities[:first] = cap
    return probabilities[rng.permutation(num_nodes)] / probabilities.sum()


def _endpoints(rng: np.random.Generator, probabilities: np.ndarray, count: int) -> np.ndarray:
    """``count`` nodes drawn in proportion to ``probabilities``, sorted."""
    counts = rng.multinomial(count, probabilities)
    return np.repeat(np.arange(len(probabilities), dtype=np.int64), counts)


def _encode(sources: np.ndarray, targets: np.ndarray, num_nodes: int,
            directed: bool) -> np.ndarray:
    if directed:
        return sources * num_nodes + targets
    return np.minimum(sources, targets) * num_nodes + np.maximum(sources, targets)


def _decode(keys: np.ndarray, num_nodes: int) -> np.ndarray:
    pairs = np.empty((len(keys), 2), dtype=np.int64)
    np.divmod(keys, num_nodes, out=(pairs[:, 0], pairs[:, 1]))
    return pairs


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    # np.unique is many times slower than a sort and a mask on large arrays
    keys.sort()
    first = np.empty(len(keys), dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return keys[first]


def _taken(keys: np.ndarray, num_nodes: int, sources: np.ndarray, targets: np.ndarray,
           directed: bool) -> np.ndarray:
    """Which pairs are self-loops or edges, ``keys`` being sorted edge keys."""
    queries = _encode(sources, targets, num_nodes, directed)
    order = np.argsort(queries)  # sorted queries make the search cache-friendly
    found = np.searchsorted(keys, queries[order])
    hit = np.empty(len(queries), dtype=bool)
    hit[order] = keys[np.minimum(found, len(keys) - 1)] == queries[order]
    return hit | (sources == targets)


def negative_pairs(rng: np.random.Generator, keys: np.ndarray, num_nodes: int,
                    count: int) -> np.ndarray:
    """``count`` uniform random node pairs that are no edges nor self-loops."""
    pairs = rng.integers(num_nodes, size=(count, 2), dtype=np.int64)
    _redraw_taken(rng, keys, num_nodes, pairs[:, 0], pairs[:, 1], directed=False,
                  redraw_sources=True)
    return pairs


def negative_targets(rng: np.random.Generator, keys: np.ndarray, num_nodes: int,
                      sources: np.ndarray, per_source: int) -> np.ndarray:
    """``per_source`` uniform random targets of each source that are no
    out-neighbours nor the source itself, shape ``[len(sources), per_source]``."""
    targets = rng.integers(num_nodes, size=(len(sources), per_source), dtype=np.int64)
    rows = max(1, CHUNK // per_source)
    for start in range(0, len(sources), rows):
        block = targets[start:start + rows].reshape(-1)
        _redraw_taken(rng, keys, num_nodes, np.repeat(sources[start:start + rows], per_source),
                      block, directed=True, redraw_sources=False)
    return targets


def _redraw_taken(rng: np.random.Generator, keys: np.ndarray, num_nodes: int,
                  sources: np.ndarray, targets: np.ndarray, directed: bool,
                  redraw_sources: bool) -> None:
    """Redraws, in place, the pairs ``(sources[i], targets[i])`` that are
    self-loops or edges until none is."""
    pending = np.arange(len(targets))
    for _ in range(_MAX_ROUNDS):
        pending = pending[_taken(keys, num_nodes, sources[pending], targets[pending], directed)]
        if len(pending) == 0:
            return
        if redraw_sources:
            sources[pending] = rng.integers(num_nodes, size=len(pending))
        targets[pending] = rng.integers(num_nodes, size=len(pending))
    raise PLNLPError(f"could not draw negatives that are no edges among {num_nodes:,} nodes; "
                     "use more nodes or fewer edges.")
