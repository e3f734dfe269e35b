"""The mutation check's catalogue still applies to the code: every named mutation's text occurs in
its file exactly as often as the mutation says. A mutation whose text has drifted is reported as
"stale" by ``tests/mutation_check.py`` instead of being run, and would silently stop guarding its
guarantee; this test makes such drift fail at once."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import mutation_check


@pytest.mark.parametrize("name", sorted(mutation_check.MUTATIONS))
def test_every_mutation_matches_the_code(name):
    file, old, new, _, *count = mutation_check.MUTATIONS[name]
    text = (mutation_check.ROOT / mutation_check.PKG / file).read_text()
    assert old != new
    assert text.count(old) == (count[0] if count else 1), f"mutation {name!r} no longer matches {file}: update it"


def test_every_listed_test_file_exists():
    assert all((mutation_check.ROOT / path).is_file() for path in mutation_check.TESTS)
