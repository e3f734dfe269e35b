"""Sphinx configuration of the manifold_dp documentation (``python -m sphinx -W -b html docs out``).

The Markdown pages (theory, architecture, security, statistics, certificate) are read by MyST;
the API reference is built by autodoc from the numpydoc docstrings (napoleon).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # builds from a plain checkout too

from manifold_dp import __version__  # noqa: E402

project = "manifold_dp"
author = "manifold_dp developers"
copyright = "2026, manifold_dp developers"
version = release = __version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# numpydoc-style docstrings (Parameters / Returns / Raises / Examples)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True  # "Attributes" sections as fields: properties are documented by autodoc once
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # signatures show names and defaults; the numpydoc sections give the types

# Markdown: heading anchors so that links such as theory.md#references resolve
myst_heading_anchors = 3

html_theme = "alabaster"
html_title = f"manifold_dp {__version__}"
