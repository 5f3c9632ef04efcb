"""Default priorities by data type (data-transfer-protocol §6.3)."""
import pytest

from engine.context.content import element_priority


@pytest.mark.parametrize("atom_type, priority", [
    ("claim", 1), ("evidence", 2), ("methodology", 2), ("background", 3), ("metadata", 3),
    ("citation", 4), ("citations", 4), ("raw_text", 4),
])
def test_it_gives_each_atom_type_the_seed_default_priority(atom_type, priority):
    assert element_priority({"atom_type": atom_type}) == priority


def test_it_says_nothing_of_an_element_that_names_no_known_type():
    assert element_priority({"atom_type": "unknown"}) is None
