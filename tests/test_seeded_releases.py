"""Seeded releases are bit-identical to stored outputs.

Every mechanism on every space that supports it, the variance, the median, tangent PCA, ``radius="auto"``,
``center="auto"`` and ``mechanism="auto"``: the released values, the noise scale, the sensitivity
and the mechanism chosen, in ``float.hex``, or the refusal's type and message. A change to how a
release is organised must leave these unchanged; a change that is meant to alter a release
regenerates the file (``python tests/test_seeded_releases.py --write``) and says why in its commit.
The comparison is bit for bit under the numpy and scipy versions and the BLAS kernel that wrote the
file; under others (whose LAPACK may round differently: OpenBLAS picks its kernel per CPU) every
number must agree to 1e-9 relative.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy

import manifold_dp as md
from manifold_dp.privacy.release import MECHANISMS
from manifold_dp.privacy.tangent_pca import private_tangent_pca

STORED = Path(__file__).parent / "data" / "seeded_releases.json"
SPACES = {
    "S2": "Sphere(2)", "S5": "Sphere(5)", "H3": "Hyperbolic(3)", "SPD-AI3": "SPDAffineInvariant(3)",
    "SPD-LE3": "SPDLogEuclidean(3)", "K5": "KendallShape2D(5)", "E3": "Euclidean(3)",
}
N = 40
RADIUS = {"K5": 0.3}  # below r* = π/8 on Kendall shapes; 0.5 elsewhere


def _space(expr: str) -> Any:
    return eval(expr, vars(md))  # the fixed table above


def _data(M: Any, r: float) -> tuple[Any, Any]:
    rng = np.random.default_rng(7)
    c = M.exp(M.origin, 0.8 * r * M.random_unit_tangent(M.origin, rng=rng))
    return c, M.random_point(c, 0.4 * r, size=N, rng=rng)


def _hex(a: Any) -> list[str]:
    return [float(v).hex() for v in np.ravel(np.asarray(a, dtype=complex if np.iscomplexobj(a) else float).view(float))]


def _summary(rel: Any) -> dict[str, Any]:
    cert = rel.certificate
    out = {"point": _hex(rel.point), "mechanism": cert.mechanism, "scale": _hex(cert.scale),
           "sensitivity": _hex(cert.sensitivity), "radius": _hex(cert.radius)}
    return out


def _run(fn: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn()
        except (ValueError, TypeError, ArithmeticError) as err:
            return {"refused": f"{type(err).__name__}: {err}"}


def _cases() -> dict[str, Any]:
    cases: dict[str, Any] = {}
    for key, expr in SPACES.items():
        M = _space(expr)
        r = RADIUS.get(key, 0.5)
        c, X = _data(M, r)
        for mech in MECHANISMS:
            delta = 1e-6 if "gaussian" in mech else None
            cases[f"{key}/mean/{mech}"] = (lambda M=M, X=X, c=c, r=r, mech=mech, delta=delta: _summary(
                md.private_frechet_mean(X, M, center=c, radius=r, epsilon=1.0, delta=delta, mechanism=mech, rng=3)))
        cases[f"{key}/mean/auto-mechanism"] = lambda M=M, X=X, c=c, r=r: _summary(
            md.private_frechet_mean(X, M, center=c, radius=r, epsilon=1.0, delta=1e-6, mechanism="auto", rng=4))
        cases[f"{key}/mean/auto-radius"] = lambda M=M, X=X, c=c, r=r: _summary(
            md.private_frechet_mean(X, M, center=c, radius="auto", epsilon=1.0, rng=5))
        cases[f"{key}/mean/auto-center"] = lambda M=M, X=X: _summary(
            md.private_frechet_mean(X, M, center="auto", epsilon=2.0, rng=6))
        cases[f"{key}/mean/auto-center-auto-mechanism"] = lambda M=M, X=X: _summary(
            md.private_frechet_mean(X, M, center="auto", epsilon=2.0, delta=1e-6, mechanism="auto", rng=7))
        cases[f"{key}/variance"] = lambda M=M, X=X, c=c, r=r: {"value": _hex(
            md.private_frechet_variance(X, M, center=c, radius=r, epsilon=1.0, rng=8).point)}
        cases[f"{key}/median"] = lambda M=M, X=X, c=c, r=r: {"value": _hex(
            md.private_frechet_median(X, M, center=c, radius=r, epsilon=1.0, rng=10).point)}
        cases[f"{key}/tangent_pca"] = lambda M=M, X=X, c=c, r=r: (lambda rel: {
            "mean": _hex(rel.mean), "components": _hex(rel.components)})(
            private_tangent_pca(X, M, center=c, radius=r, epsilon=1.0, delta=1e-6, n_components=1,
                                mean_mechanism="laplace", rng=9))
        cases[f"{key}/tangent_pca/auto-mean"] = lambda M=M, X=X, c=c, r=r: (lambda rel: {
            "mean": _hex(rel.mean), "components": _hex(rel.components), "variance": _hex(rel.explained_variance)})(
            private_tangent_pca(X, M, center=c, radius=r, epsilon=1.0, delta=1e-6, n_components=1, rng=9))
    return cases


CASES = _cases()


def _blas() -> str:
    """The BLAS and the kernel it picked for this CPU (OpenBLAS chooses per CPU at run time, and
    kernels round eigendecompositions differently in the last bits)."""
    from threadpoolctl import threadpool_info

    return ", ".join(sorted(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
                            for i in threadpool_info() if i.get("user_api") == "blas"))


ENVIRONMENT = {"numpy": np.__version__, "scipy": scipy.__version__, "blas": _blas()}


@pytest.fixture(scope="module")
def stored() -> dict[str, Any]:
    return dict(json.loads(STORED.read_text()))


def _close(got: Any, want: Any) -> bool:
    """Equal, except that hex floats may differ by 1e-9 relative (another LAPACK's rounding)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_close(got[k], want[k]) for k in want)
    if isinstance(want, list):
        if not (isinstance(got, list) and len(got) == len(want)):
            return False
        a, b = np.array([float.fromhex(v) for v in got]), np.array([float.fromhex(v) for v in want])
        return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12))
    return bool(got == want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_release_is_bit_identical(name: str, stored: dict[str, Any]) -> None:
    want = stored["cases"].get(name)
    assert want is not None, f"{name} has no stored output: regenerate with --write and say why"
    got = _run(CASES[name])
    if stored["environment"] == ENVIRONMENT:
        assert got == want
    else:
        assert _close(got, want)


def test_every_stored_case_is_still_run(stored: dict[str, Any]) -> None:
    assert sorted(stored["cases"]) == sorted(CASES)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_seeded_releases.py --write")
    out = {"environment": ENVIRONMENT, "cases": {k: _run(f) for k, f in sorted(CASES.items())}}
    STORED.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(CASES)} cases to {STORED}")
