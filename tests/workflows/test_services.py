"""Blueprint writes: a contract's schema is checked before anything is saved."""
import pytest

from core.documents import import_documents
from core.errors import DocumentError
from tests import seed_examples as seed
from workflows.models import Blueprint

pytestmark = pytest.mark.django_db


def test_it_refuses_a_contract_pattern_re2_cannot_take_naming_the_contract_and_pattern_and_keeps_the_old_one():
    import_documents([seed.AGENT_ROOT | {"lineage": {}}, seed.AGENT_VALIDATOR])
    good = seed.fresh(seed.BLUEPRINT)
    good["agents"] = good["agents"][:2]
    import_documents(good)
    bad = seed.fresh(good)
    bad["name"] = "renamed"
    bad["contracts"]["agent_scholar → agent_validator"]["schema"] = {
        "type": "object", "properties": {"atom_id": {"type": "string", "pattern": "^(?=a)[a-z]+$"}}}
    with pytest.raises(DocumentError) as refused:
        import_documents(bad)
    message = str(refused.value)
    assert "contracts['agent_scholar → agent_validator'].schema" in message
    assert "the pattern '^(?=a)[a-z]+$' cannot be used" in message
    assert "(at schema['properties']['atom_id']['pattern'])" in message
    assert Blueprint.objects.get(blueprint_id=good["blueprint_id"]).name == good["name"]


def test_it_refuses_two_contract_keys_for_one_pair_naming_both():
    import_documents([seed.AGENT_ROOT | {"lineage": {}}, seed.AGENT_VALIDATOR])
    good = seed.fresh(seed.BLUEPRINT)
    good["agents"] = good["agents"][:2]
    import_documents(good)
    twice = seed.fresh(good)
    contract = twice["contracts"]["agent_scholar → agent_validator"]
    twice["contracts"]["agent_scholar -> agent_validator"] = {**contract, "schema": {"type": "array"}}
    with pytest.raises(DocumentError, match=r"contracts\['agent_scholar -> agent_validator'\]: names the same pair "
                                            r"as 'agent_scholar → agent_validator': one pair of agents has one contract"):
        import_documents(twice)
    assert Blueprint.objects.get(blueprint_id=good["blueprint_id"]).contracts.count() == 1
