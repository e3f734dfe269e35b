"""The papers' experiments (docs/theory.md §6), one module per figure, the new results
(``composition``, ``mdm``, ``wrapped``, ``tangent_pca``, ``j23_gaussian``: their verdict is our claim,
``_findings``), and the report that gathers them.

Each module has ``ID``, ``TITLE``, ``CLAIM``, ``PROFILES`` (``quick``/``full`` configs), a pure
``run(config, rng) -> results`` and ``report(results, config, out_dir) -> ExperimentResult``.
"""

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from . import (
    composition,
    j23_gaussian,
    mdm,
    r21_f2,
    r21_spd,
    r21_sphere,
    s22_f1,
    s22_kendall,
    tangent_pca,
    u23_descriptors,
    u23_f1,
    u23_f4,
    wrapped,
)
from ._common import ExperimentResult
from .report import write_report

# the new results come after the reproductions: appending keeps every earlier module's seed
MODULES = [r21_spd, r21_sphere, r21_f2, s22_f1, s22_kendall, u23_f1, u23_descriptors, u23_f4, composition, mdm, wrapped,
           tangent_pca, j23_gaussian]
ALIASES = {
    "r21-f1ab": r21_spd, "r21-f1a": r21_spd, "r21-f1b": r21_spd,
    "r21-f1cd": r21_sphere, "r21-f1c": r21_sphere, "r21-f1d": r21_sphere,
    "r21-f2": r21_f2, "s22-f1": s22_f1, "s22-f1a": s22_f1, "s22-f1b": s22_f1,
    "s22-f23": s22_kendall, "s22-f2": s22_kendall, "s22-f3": s22_kendall,
    "u23-f1": u23_f1, "u23-f23": u23_descriptors, "u23-f2": u23_descriptors, "u23-f3": u23_descriptors, "u23-f4": u23_f4,
    "comp": composition, "composition": composition, "mdm": mdm, "wrap": wrapped, "wrapped": wrapped,
    "tpca": tangent_pca, "tangent-pca": tangent_pca, "j23": j23_gaussian, "j23-gaussian": j23_gaussian,
}


def resolve(names: Sequence[str]) -> list[ModuleType]:
    """Experiment modules for names like ``R21-F1a/b`` or ``u23-f4`` (all when empty)."""
    if not names:
        return list(MODULES)
    out = []
    for name in names:
        key = name.lower().replace("/", "").replace("_", "-")
        if key not in ALIASES:
            raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(m.ID for m in MODULES)}")
        if ALIASES[key] not in out:
            out.append(ALIASES[key])
    return out


def reproduce(names: Sequence[str] = (), profile: str = "quick", out_dir: str | Path = "results", seed: int = 2024,
              log: Callable[[str], Any] = print) -> tuple[list[ExperimentResult], tuple[Path, Path]]:
    """Run the experiments, write one PNG per figure plus ``report.md`` and ``report.html``."""
    if profile not in ("quick", "full"):
        raise ValueError(f"profile must be 'quick' or 'full', got {profile!r}")
    modules = resolve(names)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rngs = np.random.default_rng(seed).spawn(len(MODULES))
    results = []
    for mod in modules:
        log(f"[{mod.ID}] {mod.TITLE}")
        t = time.perf_counter()
        config = mod.PROFILES[profile]
        res = mod.report(mod.run(config, rngs[MODULES.index(mod)]), config, out_dir)
        res.seconds = time.perf_counter() - t
        log(f"[{mod.ID}] done in {res.seconds:.1f} s: {res.ours}")
        results.append(res)
    paths = write_report(results, out_dir, profile, seed)
    return results, paths
