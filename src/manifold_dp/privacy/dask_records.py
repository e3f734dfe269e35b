"""A release's records in a Dask array: prepared on the workers, read in a public number of passes.

``prepare_blocks`` is stage 4 of a release (``privacy.release.prepared``) on Dask. One pass over
the blocks sanitises and clips every record exactly as ``prepare_records`` does in memory and
returns, per block, the counts of the ``RecordsWarning`` and the partial sums the certified mean
starts from (``(1/n) Σ log_center(x_i)``, ``(1/n) Σ (x_i − center)``), weighted by the whole
array's ``1/n``. Each later pass (``stats.frechet.certified_frechet_mean``: its Newton or gradient
steps) is one graph execution with one task per block, whose partial sums are added on the client
in block order. Where those passes read the clipped records:

- an array persisted on a ``dask.distributed`` cluster (every block a future): the first pass
  keeps each block's clipped records on its worker, and the later passes read them there; the
  copy is released when the release returns (the cluster holds the records twice meanwhile, as a
  release in memory does);
- any other array: every pass prepares its block again on the worker before reading it (the same
  records, to rounding) and computes the array's own graph again; nothing is kept.

Either way the clipped records never reach the client, and which passes run is decided from
public values only (the schedule, the array's chunks and scheduler); the data decide nothing but
the sums.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._typing import Array
from ..manifolds.base import Manifold
from ..records import PreparedBlocks, Records
from .release import RecordCounts, prepare_records, warn_records

__all__ = ["prepare_blocks", "persisted_on_cluster"]


def persisted_on_cluster(X: Any) -> bool:
    """Whether every block of the Dask array ``X`` is a ``dask.distributed`` future (the array as
    ``persist`` returns it on a cluster, with no operation on top)."""
    try:
        from distributed import Future
    except ImportError:
        return False
    graph = X.__dask_graph__()
    return all(isinstance(graph.get(key), Future) for key in _keys(X.__dask_keys__()))


def _keys(nested: Any) -> Iterator[Any]:
    """The block keys of a Dask array's nested lists (a key is a tuple, never a list)."""
    for item in nested:
        if isinstance(item, list):
            yield from _keys(item)
        else:
            yield item


def _first_pass(block: Any, manifold: Manifold, center: Array, radius: float, n: int, keep: bool,
                log_mean: bool) -> tuple[Array | None, tuple[Array, Any, Any]]:
    """One block prepared: ``(records, (counts, Σ log_center/n, Σ (x_i − center)/n))``, the records
    ``None`` when ``keep`` is false."""
    records, counts = prepare_records(manifold, block, center, radius, keep, log_mean, total=n)
    sums = (np.array([counts.non_finite, counts.off_manifold, counts.clipped], dtype=np.int64), records.log_mean,
            records.start_stats)
    return (np.asarray(records) if keep else None), sums


def _first_pass_sums(block: Any, w: Any, n: int, manifold: Manifold, center: Array, radius: float, keep: bool,
                     log_mean: bool) -> tuple[Array, Any, Any]:
    """A ``Records.map`` pass: the first pass's sums of one block, its records dropped."""
    return _first_pass(block, manifold, center, radius, n, keep, log_mean)[1]


def _prepared_again(block: Any, manifold: Manifold, center: Array, radius: float, n: int) -> Array:
    """A block's records as ``prepare_records`` prepares them, for a later pass (the fused pass
    without the log mean where the space has one: the same records to rounding)."""
    return np.asarray(prepare_records(manifold, block, center, radius, keep=True, log_mean=False, total=n)[0])


def _sum(parts: list[Any]) -> Any:
    """The blocks' partial sums added in block order (``None`` where the blocks gave none)."""
    return None if any(p is None for p in parts) else functools.reduce(operator.add, parts)


def prepare_blocks(manifold: Manifold, X: Any, center: Array, radius: float, keep: bool = True,
                   log_mean: bool = True) -> PreparedBlocks:
    """The records of the Dask array ``X`` as a release reads them, after one pass over its blocks
    (sanitise, clip, count, the start's partial sums), with one ``RecordsWarning`` giving the
    counts when any record was replaced or clipped, as in memory. ``keep`` and ``log_mean`` as for
    ``prepare_records`` (``keep=False``: no clipped record is built, kept or read again)."""
    import dask

    records = Records(X, manifold)
    n = records.n
    prepare: Callable[[Any], Any]
    if keep and persisted_on_cluster(records.X):  # the clipped blocks stay on their workers for the later passes
        task = dask.delayed(_first_pass, pure=False)
        kept = dask.persist(*[task(b, manifold, center, radius, n, keep, log_mean) for b in records.X.to_delayed().ravel()])
        parts = dask.compute(*[dask.delayed(operator.itemgetter(1))(b) for b in kept])
        blocks, prepare = list(kept), operator.itemgetter(0)
    else:
        parts = records.map(_first_pass_sums, manifold, center, radius, keep, log_mean)
        blocks = list(records.X.to_delayed().ravel())
        prepare = functools.partial(_prepared_again, manifold=manifold, center=center, radius=radius, n=n)
    non_finite, off_manifold, clipped = (int(v) for v in np.sum([p[0] for p in parts], axis=0))
    warn_records(manifold, RecordCounts(n, non_finite, off_manifold, clipped), radius)
    return PreparedBlocks(records.X, manifold, prepare, center, _sum([p[1] for p in parts]),
                          _sum([p[2] for p in parts]), radius, blocks)
