"""The record preparation of the real line (``Euclidean`` mixes it in): the flat case's private
mean is ``c + (1/n) Σ clip(x_i − c, −r, r)``, and its preparation costs a few whole-array passes
over cache-sized blocks instead of the generic path's ~20 (finiteness by products, two bitwise
selects, ``ρ``, ``min(1, r/ρ)``, a product per record and a weighted sum). It computes what the
generic ``privacy.release.prepare_records`` path computes, to rounding (the clipped value is
``±r`` exactly instead of ``(x − c)·(r/|x − c|)``), with the same counts.

Every record goes through the same operations, and only additions, comparisons, ``fmin``/``fmax``
and bit-free counts touch a record: no product or quotient, whose cost jumps for a subnormal
operand (a product with one was measured 60× slower per element here), and no masked select,
whose cost grows with the mix of its mask (docs/security.md, Timing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._typing import Array
from .arrays import finite_rows, select
from .passes import RecordPasses

__all__ = ["EuclideanPasses", "LINE_ROWS", "LINE_SUBBLOCK", "LINE_RADIUS_MAX"]

LINE_ROWS = 1 << 20  # records per block of prepare_records on the line: three byte masks per record, no float temporary ...
LINE_SUBBLOCK = 1 << 15  # ... beyond two of this many doubles (256 KiB each: the passes run in cache)
LINE_RADIUS_MAX = 2.0**900  # the pass sums the clipped records unweighted: n·r stays far inside float64 below this


class EuclideanPasses(RecordPasses):
    """The record preparation of ``Euclidean(1)`` (see the module docstring); other dimensions take
    the generic path."""

    if TYPE_CHECKING:
        dim: int

    def _clip_with_logs(self, x: Array, center: Any, radius: float) -> tuple[Array, Array, Any, Any]:
        """The generic clip, safe where ``x − c`` overflows (a finite record and a finite centre more
        than float64's range apart: the log is ``±inf`` and ``r/ρ = 0``, whose product is NaN) or
        ``‖x − c‖²`` does (beyond about ``1.3e154``: ``r/ρ = 0`` made the record the centre).
        Such a record is clipped to ``c + r·u`` with ``u`` the unit direction of ``x/2 − c/2``
        (finite; its norm taken with the row scaled by a power of two), built for every record and
        selected where the difference is not finite (branch-free)."""
        out, v, scale, outside = super()._clip_with_logs(x, center, radius)
        c = np.asarray(center, float)
        with np.errstate(all="ignore"):
            h = np.asarray(x, float) * 0.5 - c * 0.5
            e = np.frexp(np.max(np.abs(h), axis=-1))[1]
            u = np.ldexp(h, -e[..., None])
            norm = np.sqrt(np.einsum("...i,...i->...", u, u))
            unit = u / (norm + (norm == 0.0))[..., None]
            far = ~finite_rows(v, 1) | ~(np.asarray(scale) > 0.0)  # x − c overflowed, or ‖x − c‖² did (r/ρ = 0)
            out = select(far[..., None], c + radius * unit, out)
            v = select(far[..., None], radius * unit, v)
            scale = select(far, 1.0, scale)
        return out, v, scale, outside

    def clipped_log_sum(self, x: Any, center: Any, radius: float, weights: Any) -> tuple[Any, Array]:
        """``(outside, Σ w_i log_center(x̃_i))`` through ``_clip_with_logs`` (overflow-safe)."""
        _, v, scale, outside = self._clip_with_logs(np.asarray(x), center, radius)
        return outside, np.tensordot(np.asarray(weights, float) * scale, v, axes=(0, 0))

    def prepare_rows(self, rows: int, n: int, log_sum: bool = True) -> int:
        """The line's pass keeps no per-record float temporary: ``LINE_ROWS`` records per block."""
        return max(rows, LINE_ROWS) if self.dim == 1 else rows

    def prepare_block(self, X: Array, center: Array, radius: float, weight: float, log_sum: bool = True,
                      keep: bool = True, out: Array | None = None) -> tuple[Any, ...] | None:
        """One block of ``privacy.release.prepare_records`` on the line, in sub-blocks of
        ``LINE_SUBBLOCK`` records: ``(records, finite, ok, moved, [weight·Σ (x̃_i − c)])`` with
        ``finite``, ``ok``, ``moved`` the numbers of finite records, of points among them (all) and
        of records the clip moved (counts, not masks: no per-record output, ``keep`` aside).

        With ``t = x − c`` (non-finite records give NaN or ``±inf``; a finite record beyond
        float64 from ``c`` gives ``±inf`` too, and is clipped to ``±r`` as it should be),
        ``z = fmax(fmin(t, r), −r)`` is ``clip(t, −r, r)`` for every finite record, and ``r``
        (NaN, ``+inf``) or ``−r`` (``−inf``) for a non-finite one. A record is inside the ball iff
        ``t == z`` (NaN never is), moved iff finite and not inside; the finite ones are counted as those
        below ``+inf`` (NaN compares false) less the ``−inf`` ones. The sum of ``z`` over all
        records, less ``r·(#non-finite − 2·#−inf)``, is the sum over the finite ones: the
        non-finite records count as the centre (``z = 0``) without a select. ``keep``: the clipped
        records ``c + z``, and ``c`` for the non-finite ones (a bitwise select)."""
        X = np.asarray(X, float)
        if self.dim != 1 or X.ndim != 2 or X.shape[1] != 1 or not radius <= LINE_RADIUS_MAX:
            return None  # other dimensions (the generic path raises the shape error), or a radius near float64's end
        x = X[:, 0]
        m = len(x)
        c, r = float(np.asarray(center, float).reshape(-1)[0]), float(radius)
        step = min(m, LINE_SUBBLOCK)
        t, z, flags, spare = np.empty(step), np.empty(step), np.empty(step, bool), np.empty(step, bool)
        records = (np.empty(m) if out is None else out[:, 0]) if keep else None
        total, finite, inside, below = 0.0, 0, 0, 0
        with np.errstate(all="ignore"):
            for i in range(0, m, step):
                j = min(i + step, m)
                xb, zb, fb, ib = x[i:j], z[:j - i], flags[:j - i], spare[:j - i]
                tb = xb if c == 0.0 else np.subtract(xb, c, out=t[:j - i])  # x − 0 is x (public: the centre)
                np.fmin(tb, r, out=zb)
                np.fmax(zb, -r, out=zb)
                total += float(np.add.reduce(zb))
                inside += int(np.count_nonzero(np.equal(tb, zb, out=fb)))
                below += int(np.count_nonzero(np.equal(xb, -np.inf, out=fb)))
                finite += int(np.count_nonzero(np.less(xb, np.inf, out=fb)))  # finite or −inf (NaN compares false)
                if records is not None:
                    np.not_equal(xb, -np.inf, out=ib)
                    np.logical_and(fb, ib, out=fb)
                    records[i:j] = select(fb, np.add(zb, c, out=zb), c)
        finite -= below
        total -= r * ((m - finite) - 2 * below)
        if records is not None:
            records = records[:, None] if out is None else out
        return records, finite, finite, finite - inside, np.array([weight * total])
