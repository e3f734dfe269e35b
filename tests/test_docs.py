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
from manifold_dp.privacy import measurements, release

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
THEORY_REFERENCE = re.compile(r"docs/theory\.md §(\d+)")

# modules whose docstrings carry numpydoc Examples; each must have some and all must pass
DOCTEST_MODULES = [
    "manifold_dp.manifolds.base", "manifold_dp.manifolds.euclidean", "manifold_dp.manifolds.sphere",
    "manifold_dp.manifolds.hyperbolic", "manifold_dp.manifolds.spd", "manifold_dp.manifolds.kendall",
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
    for page in ("index", "theory", "api", "architecture", "security", "statistics", "certificate"):
        assert (html / f"{page}.html").is_file(), page


def _documented_objects(html):
    with open(html / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", lambda base, uri: uri)
    return {name for kind, entries in inventory.items() if kind.startswith("py:") for name in entries}


def test_api_page_documents_the_public_api(built_site):
    status, _, html = built_site
    documented = _documented_objects(html)
    wanted = [f"manifold_dp.{name}" for name in manifold_dp.__all__]
    wanted += [f"manifold_dp.privacy.measurements.{name}" for name in ("laplace", "kng", "tangent_gaussian", "ambient",
                                                                       "Measurement")]
    top_level = set(manifold_dp.__all__)
    wanted += [f"manifold_dp.privacy.release.{name}" for name in release.__all__ if name not in top_level]
    wanted += ["manifold_dp.manifolds.Manifold", "manifold_dp.manifolds.REGISTRY", "manifold_dp.privacy.CERTIFICATE_SCHEMA",
               "manifold_dp.PrivacyAccountant.charge", "manifold_dp.PrivacyAccountant.spent", "manifold_dp.Sphere.dist",
               "manifold_dp.manifolds.Manifold.clip_to_ball"]
    missing = [name for name in wanted if name not in documented]
    assert not missing, f"not on the API page: {missing}"
    assert all(callable(getattr(measurements, name)) for name in ("laplace", "kng", "tangent_gaussian", "ambient"))


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
