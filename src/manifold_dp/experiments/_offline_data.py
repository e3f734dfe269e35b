"""Real data sets that ship inside a package wheel, read without importing the package.

geomstats 2.8.0 (its last release) does not import with numpy ≥ 2.4, but its wheel carries small
data sets as plain files: the world's 50 largest cities (points on S²) and the fMRI connectomes
of the MLSP 2014 schizophrenia challenge (86 correlation matrices, 28 × 28). We read them from
the wheel with ``zipfile``. The wheel is looked up in ``$MANIFOLD_DP_GEOMSTATS_WHEEL`` (a path),
then in the cache folder ``$MANIFOLD_DP_CACHE`` (default ``~/.cache/manifold_dp``), and otherwise
fetched once into that folder by ``pip download`` from the package registry. When none of that
works the loaders return ``None`` with the reason, and the experiments say so in the report.
"""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

WHEEL = "geomstats-2.8.0-py3-none-any.whl"
CITIES = "geomstats/datasets/data/cities/cities.json"
CONNECTOMES = "geomstats/datasets/data/connectomes/train_FNC.csv"
KARATE = "geomstats/datasets/data/graph_karate/karate.txt"
CITATION_CITIES = ("the 50 largest cities of the simplemaps World Cities Database (basic edition, CC BY 4.0), as "
                   "shipped in the geomstats 2.8.0 wheel (MIT licence), read from the wheel without importing it")
CITATION_CONNECTOMES = ("fMRI functional-network connectivity of 86 subjects (28 × 28 correlation matrices) from the "
                        "Kaggle MLSP 2014 Schizophrenia Classification Challenge, as shipped in the geomstats 2.8.0 "
                        "wheel (MIT licence for the package; the data are under the challenge's terms, which state no "
                        "open licence), read from the wheel without importing it")


def geomstats_wheel(download: bool = True, timeout: float = 180) -> tuple[Path | None, str | None]:
    """``(path, None)`` of the geomstats 2.8.0 wheel, or ``(None, reason)``."""
    given = os.environ.get("MANIFOLD_DP_GEOMSTATS_WHEEL")
    if given:
        return (Path(given), None) if Path(given).is_file() else (None, f"MANIFOLD_DP_GEOMSTATS_WHEEL={given!r} is not a file")
    cache = Path(os.environ.get("MANIFOLD_DP_CACHE", Path.home() / ".cache" / "manifold_dp"))
    if (cache / WHEEL).is_file():
        return cache / WHEEL, None
    if not download:
        return None, f"{WHEEL} is not in {cache}"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "geomstats==2.8.0", "--no-deps", "--only-binary=:all:",
                        "--quiet", "--dest", str(cache)], check=True, timeout=timeout, capture_output=True)
    except (OSError, subprocess.SubprocessError) as err:
        return None, f"could not fetch {WHEEL} from the package registry ({type(err).__name__})"
    return ((cache / WHEEL), None) if (cache / WHEEL).is_file() else (None, f"pip did not leave {WHEEL} in {cache}")


def _read(member):
    wheel, reason = geomstats_wheel()
    if wheel is None:
        return None, reason
    try:
        with zipfile.ZipFile(wheel) as z:
            return z.read(member).decode("utf-8"), None
    except (OSError, KeyError, zipfile.BadZipFile) as err:
        return None, f"{wheel.name} has no readable {member} ({type(err).__name__})"


def load_cities() -> tuple[tuple[Any, list[str]] | None, str | None]:
    """``((N, 3) unit vectors, names), None`` or ``(None, reason)``: latitude φ and longitude λ
    mapped to ``(cos φ cos λ, cos φ sin λ, sin φ)``."""
    text, reason = _read(CITIES)
    if text is None:
        return None, reason
    rows = json.loads(text)
    lat, lng = np.radians([float(r["lat"]) for r in rows]), np.radians([float(r["lng"]) for r in rows])
    points = np.stack([np.cos(lat) * np.cos(lng), np.cos(lat) * np.sin(lng), np.sin(lat)], axis=1)
    return (points, [r["city"] for r in rows]), None


def load_connectomes(size: int = 28) -> tuple[Any, str | None]:
    """``((N, size, size)`` correlation matrices, None)`` or ``(None, reason)``: each row of the
    file is the strict upper triangle, row by row (the order under which all 86 are positive
    definite), and the diagonal is 1."""
    text, reason = _read(CONNECTOMES)
    if text is None:
        return None, reason
    values = np.array([[float(v) for v in line.split(",")[1:]] for line in text.strip().splitlines()[1:]])
    rows, cols = np.triu_indices(size, 1)
    if values.shape[1] != rows.size:
        return None, f"{CONNECTOMES} rows have {values.shape[1]} values, expected {rows.size}"
    out = np.repeat(np.eye(size)[None], len(values), axis=0)
    out[:, rows, cols] = values
    out[:, cols, rows] = values
    return out, None


def load_karate_embedding(dim: int = 2, epochs: int = 400, step: float = 0.05, seed: int = 0) -> tuple[Any, str | None]:
    """``((34, dim + 1)`` points of ``H^dim`` (hyperboloid), None)`` or ``(None, reason)``: Zachary's
    karate club (W. W. Zachary, J. Anthropol. Res. 1977; 34 members, 78 friendships, as shipped in
    the geomstats 2.8.0 wheel), its friendship graph embedded by minimising, for every member ``u`` and friend ``v``,
    ``ρ(u, v) + log Σ_{w ≠ u} e^(−ρ(u, w))`` (Nickel & Kiela 2017): each step moves every member
    ``u`` along the Riemannian gradient of its own terms (``exp_u(−step·grad_u)``, the terms where
    ``u`` is someone else's friend or neighbour left to that member), full batch, from points near
    ``e0``; deterministic for a seed."""
    from ..manifolds import Hyperbolic

    text, reason = _read(KARATE)
    if text is None:
        return None, reason
    A = np.array([[float(v) for v in line.split()] for line in text.strip().splitlines()])
    if A.shape != (34, 34) or not np.array_equal(A, A.T):
        return None, f"{KARATE} is not a symmetric 34 × 34 adjacency matrix"
    H = Hyperbolic(dim)
    rng = np.random.default_rng(seed)
    X = H.exp(np.broadcast_to(H.origin, (34, dim + 1)), 0.01 * H.random_unit_tangent(H.origin, size=34, rng=rng))
    others = ~np.eye(34, dtype=bool)
    for _ in range(epochs):
        logs = H.log(X[:, None], X[None, :])  # (u, w) → log_u(w)
        d = np.maximum(H.dist(X[:, None], X[None, :]), 1e-12)
        weights = np.where(others, np.exp(-d), 0.0)
        weights /= weights.sum(axis=1, keepdims=True)
        unit = logs / d[..., None]
        # ∂ρ(u, w)/∂u = −log_u(w)/ρ: friends pull, the softmax over everyone pushes
        grad = -(A[..., None] * unit).sum(axis=1) + A.sum(axis=1)[:, None] * (weights[..., None] * unit).sum(axis=1)
        X = H.exp(X, -step * grad)
    return X, None
