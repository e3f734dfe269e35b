"""The documentation ships and stays true: the Sphinx site builds with warnings as errors, the API
page documents the public API, the docstring examples run, every "docs/theory.md §n" reference
points to a section that exists, and nothing cites the old out-of-tree specification."""

import doctest
import importlib
import re
import tomllib
from pathlib import Path

import pytest
from sphinx.cmd.build import build_main
from sphinx.util.inventory import InventoryFile

import manifold_dp
from manifold_dp.privacy import measurements

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
THEORY_REFERENCE = re.compile(r"docs/theory\.md §(\d+)")

# modules whose docstrings carry numpydoc Examples; each must have some and all must pass
DOCTEST_MODULES = [
    "manifold_dp.manifolds.base", "manifold_dp.manifolds.euclidean", "manifold_dp.manifolds.sphere",
    "manifold_dp.manifolds.hyperbolic", "manifold_dp.manifolds.spd", "manifold_dp.manifolds.kendall",
    "manifold_dp.manifolds.so3",
    "manifold_dp.stats.frechet", "manifold_dp.privacy.sensitivity", "manifold_dp.privacy.accounting",
]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs_html")
    warnings = out / "warnings.txt"
    status = build_main(["-W", "--keep-going", "-q", "-b", "html", "-d", str(out / "doctrees"),
                         "-w", str(warnings), str(DOCS), str(out / "html")])
    return status, warnings.read_text(encoding="utf-8") if warnings.exists() else "", out / "html"


def test_sphinx_site_builds_without_warnings(built_site):
    status, warnings, html = built_site
    assert status == 0 and warnings.strip() == "", f"sphinx-build -W failed (status {status}):\n{warnings}"
    for page in ("index", "getting_started", "theory", "api", "architecture", "security", "statistics", "certificate",
                 "benchmarks", "results"):
        assert (html / f"{page}.html").is_file(), page


def _documented_objects(html):
    with open(html / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", lambda base, uri: uri)
    return {name for kind, entries in inventory.items() if kind.startswith("py:") for name in entries}


def test_api_page_documents_the_public_api(built_site):
    _, _, html = built_site
    documented = _documented_objects(html)
    wanted = [f"manifold_dp.{name}" for name in manifold_dp.__all__]
    wanted += [f"manifold_dp.privacy.measurements.{name}" for name in ("laplace", "kng", "tangent_gaussian", "ambient",
                                                                       "Measurement")]
    wanted += [f"manifold_dp.{cls}.{member}" for cls in ("Euclidean", "Sphere", "Hyperbolic", "SPDAffineInvariant",
                                                          "SPDLogEuclidean", "KendallShape2D")
               for member in ("exp", "log", "dist", "inner", "random_unit_tangent", "to_tangent_coordinates")]
    wanted += [f"manifold_dp.SO3.{member}" for member in ("exp", "log", "dist", "to_tangent_coordinates", "canonical")]
    wanted += ["manifold_dp.manifolds.Manifold", "manifold_dp.manifolds.REGISTRY", "manifold_dp.privacy.CERTIFICATE_SCHEMA",
               "manifold_dp.privacy.Certificate", "manifold_dp.privacy.RadiusSelection",
               "manifold_dp.PrivacyAccountant.charge", "manifold_dp.PrivacyAccountant.spent",
               "manifold_dp.manifolds.Manifold.clip_to_ball", "manifold_dp.manifolds.Manifold.norm",
               "manifold_dp.manifolds.Manifold.check_point", "manifold_dp.privacy.tangent_pca.TangentPCARelease",
               "manifold_dp.estimators.PrivateFrechetMean", "manifold_dp.estimators.PrivateTangentPCA",
               "manifold_dp.estimators.PrivateMDM", "manifold_dp.audit.audit", "manifold_dp.audit.Scenario"]
    missing = [name for name in wanted if name not in documented]
    assert not missing, f"not on the API page: {missing}"
    assert all(callable(getattr(measurements, name)) for name in ("laplace", "kng", "tangent_gaussian", "ambient"))


# the speed kernels and release stages behind the public API: what a user never calls
INTERNALS = ("newton_terms", "newton_step", "newton_constants", "prepare_block", "prepare_rows", "karcher_terms",
             "weighted_log_sum", "mean_start", "centred_start_stats", "enclosing_lift", "prepare_records", "plan_release",
             "calibrate", "polar_point", "float_error", "grid_scales")


def test_api_page_shows_no_internals(built_site):
    _, _, html = built_site
    documented = _documented_objects(html)
    public = set(manifold_dp.__all__)  # their canonical names (manifold_dp.privacy.release.PrivateRelease) are aliases
    leaked = sorted(name for name in documented if name.rsplit(".", 1)[-1].startswith(INTERNALS)
                    or (name.startswith("manifold_dp.privacy.release.") and name.rsplit(".", 1)[-1] not in public))
    assert not leaked, f"internals on the API page: {leaked}"


def test_the_site_opens_with_getting_started():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    toctree = re.search(r"```\{toctree\}\n(.*?)```", index, re.S).group(1)
    entries = [line.strip() for line in toctree.splitlines() if line.strip() and not line.startswith(":")]
    assert entries[0] == "getting_started", entries

@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{module} has no Examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {module} failed"


def test_numpydoc_sections_on_the_main_public_functions():
    for obj in (manifold_dp.frechet_mean, manifold_dp.frechet_mean_sensitivity, manifold_dp.PrivacyAccountant,
                manifold_dp.PrivacyAccountant.charge, manifold_dp.Sphere, manifold_dp.Hyperbolic, manifold_dp.Euclidean,
                manifold_dp.SPDAffineInvariant, manifold_dp.SPDLogEuclidean, manifold_dp.KendallShape2D):
        doc = obj.__doc__ or ""
        assert "Parameters\n" in doc and re.search(r"\n\s*----------\n", doc), obj.__qualname__
        if not isinstance(obj, type) or obj is manifold_dp.PrivacyAccountant:
            assert "Raises\n" in doc, obj.__qualname__


def _text_files():
    files = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("*.rst")), *sorted(DOCS.glob("*.py"))]
    files += sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    return [f for f in files if f.is_file()]


def test_theory_has_sections_one_to_nine_and_every_reference_resolves():
    theory = (DOCS / "theory.md").read_text(encoding="utf-8")
    sections = {int(m) for m in re.findall(r"^## (\d+)\. ", theory, flags=re.MULTILINE)}
    assert sections == set(range(1, 10))
    dangling = []
    for path in _text_files():
        for number in THEORY_REFERENCE.findall(path.read_text(encoding="utf-8")):
            if int(number) not in sections:
                dangling.append(f"{path.relative_to(ROOT)}: §{number}")
    assert not dangling, dangling


def test_nothing_cites_the_out_of_tree_specification():
    # SPEC.md lives outside the repository and the wheel; the theory moved to docs/theory.md
    this_file = Path(__file__).resolve()
    offences = []
    for path in _text_files():
        if path.resolve() == this_file:
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bSPEC\b", line):
                offences.append(f"{path.relative_to(ROOT)}:{lineno}")
    assert not offences, f"cite docs/theory.md §n instead of SPEC: {offences}"


def test_packaging_metadata_ships_license_changelog_and_urls():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "LICENSE" in project["license-files"] and (ROOT / "LICENSE").is_file()
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert {"Homepage", "Documentation", "Changelog"} <= set(project["urls"])
    extras = project["optional-dependencies"]
    assert any(req.startswith("sphinx") for req in extras["docs"]) and any(req.startswith("sphinx") for req in extras["test"])
    assert any(req.startswith("scikit-learn") for req in extras["estimators"])
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{manifold_dp.__version__}]" in changelog and project["version"] == manifold_dp.__version__


# --- the README is for users; history lives in CHANGELOG.md ------------------------------------------------------

README_MAX_LINES = 250

HEX_ID = r"(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
# development history: issue numbers, helper names, session accounts, commit ids in prose (a hex word with a digit and
# a letter right after a prose word: "at c94b3c2", "the final code (fdd36e7"; a checksum string in code is not prose),
# and a benchmark diary's "(was 7.17×)" / "was 60×"
HISTORY = {
    "issue number": re.compile(r"\b[Ii]ssues?[ -]?#?\d+"),
    "helper name": re.compile(r"\bhelper-?\d"),
    "session account": re.compile(r"\bthis session\b", re.I),
    "commit id": re.compile(rf"\b[A-Za-z]{{2,}}[,;:]?\s+\(?({HEX_ID})(?![\w.+\-])"),
    "diary ratio": re.compile(r"\(was\b[^)]*×|\bwas\s+[~≈]?\d[\d.,]*\s*×"),
}


def _history(text):
    return [(kind, m.group(0)) for kind, pattern in HISTORY.items() for m in pattern.finditer(text)]


def _user_facing_files():
    files = [ROOT / "README.md"]
    files += [p for p in sorted(DOCS.rglob("*")) if p.is_file() and "_build" not in p.parts]
    files += sorted((ROOT / "src").rglob("*.py"))
    for path in files:
        try:
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # figures
            continue


@pytest.mark.parametrize("sentence", [
    "the 35 mutations were rerun at c94b3c2: 35 of 35 killed", "on a fresh clone of the final code (fdd36e7, after CI",
    "measured at commit 83f5680 (for the fixed-work rows", "two full runs at 8020a3a and 629e04c",
    "S² release 1.27× (28.3 vs 21.9 ms; was 7.17×)", "3.78–4.06× (was 60×)", "found by helper-4's review",
    "while profiling for issue 15", "the new results of Issue #16", "AMD EPYC (this session; numpy's arccos",
])
def test_history_patterns_catch_a_diary(sentence):
    assert _history(sentence), sentence


@pytest.mark.parametrize("text", [
    '"sensitivity": 0.02296523312514075,', "np.random.default_rng(20231122)", "a grid of 2.9802322387695312e-08",
    'NEW_MECHANISM_COLOURS = {"riemannian_gaussian": "#882255"}', 'CHECKSUM = "3f2a9bc4e1d0"', "entries 10^U(−323, 308)",
    "an isometry of both SPD metrics (1e308·I)", "the issue of float64 reach", "a helper function", "0x7fefffffffffffff",
])
def test_history_patterns_spare_ordinary_text(text):
    assert not _history(text), _history(text)


def test_readme_docs_and_src_hold_no_development_history():
    offences = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, text.find(found)) + 1}: {kind}: {found!r}"
                for path, text in _user_facing_files() for kind, found in _history(text)]
    assert not offences, "development history belongs in CHANGELOG.md:\n" + "\n".join(offences)


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move details to docs/"


def test_every_registered_mechanism_is_named_in_the_readme_and_the_certificate_page():
    """The mechanism lists written out in the docs follow the registry: a new mechanism must be
    described where users look for it."""
    from pathlib import Path

    from manifold_dp.privacy.mechanism_specs import MECHANISM_NAMES

    root = Path(__file__).resolve().parents[1]
    for page in ("README.md", "docs/certificate.md"):
        text = (root / page).read_text(encoding="utf-8")
        missing = [m for m in MECHANISM_NAMES if f"`{m}`" not in text]
        assert not missing, f"{page} does not name {missing}"
