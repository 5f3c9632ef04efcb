"""The strategy tables and decision tree of data-transfer-protocol §5."""
import pytest

from engine.context.transfer_modes import FULL, REFERENCE, SUMMARY, choose_mode


@pytest.mark.parametrize("tokens, mode", [(1_999, FULL), (2_000, SUMMARY), (10_000, SUMMARY), (10_001, REFERENCE),
                                          (50_000, REFERENCE), (50_001, REFERENCE)])
def test_it_chooses_by_token_count(tokens, mode):
    choice = choose_mode(tokens=tokens, data_type="structured")
    assert choice.mode == mode
    assert choice.batched == (tokens > 50_000)
    assert "§5.1" in choice.reason


@pytest.mark.parametrize("role, mode", [("Scholar", FULL), ("Code", FULL), ("Validator", SUMMARY),
                                        ("Knowledge_Vault", REFERENCE), ("Strategic_Critic", SUMMARY),
                                        ("Orchestrator", SUMMARY)])
def test_it_chooses_by_downstream_task_type(role, mode):
    choice = choose_mode(tokens=20_000, data_type="text", role=role)
    assert (choice.mode, "§5.2" in choice.reason) == (mode, True)


@pytest.mark.parametrize("data_type, mode", [("text", SUMMARY), ("table", SUMMARY), ("chart", SUMMARY),
                                             ("metadata", FULL), ("relations", REFERENCE),
                                             ("code", FULL), ("formula", FULL)])
def test_it_chooses_by_data_type(data_type, mode):
    assert choose_mode(tokens=20_000, data_type=data_type).mode == mode


@pytest.mark.parametrize("node_mode", [SUMMARY, REFERENCE])
def test_it_never_summarises_code_or_formulas_whatever_the_node_says(node_mode):
    for data_type in ("code", "formula"):
        choice = choose_mode(tokens=8_000, data_type=data_type, role="Validator", node_mode=node_mode)
        assert choice.mode == FULL and "never summarised" in choice.reason


def test_it_passes_huge_code_as_a_batched_reference_not_a_summary():
    choice = choose_mode(tokens=80_000, data_type="code")
    assert (choice.mode, choice.batched) == (REFERENCE, True)


def test_it_lets_an_explicit_reference_setting_win():
    choice = choose_mode(tokens=100, data_type="code", role="Scholar", explicit=SUMMARY, node_mode=REFERENCE)
    assert (choice.mode, choice.reason) == (SUMMARY, "set on the reference")


def test_it_applies_the_node_mode_above_the_tables_and_passes_small_data_whole():
    assert choose_mode(tokens=5_000, data_type="text", role="Scholar", node_mode=SUMMARY).mode == SUMMARY
    assert choose_mode(tokens=500, data_type="text", node_mode=SUMMARY).mode == FULL
    assert choose_mode(tokens=5_000, data_type="text", node_mode="auto").mode == SUMMARY


def test_it_follows_the_decision_tree_for_an_unknown_role():
    assert choose_mode(tokens=1_000, data_type="structured", role="Other").mode == FULL
    assert choose_mode(tokens=5_000, data_type="structured", role="Other").mode == SUMMARY
    assert choose_mode(tokens=30_000, data_type="structured", role="Other").mode == REFERENCE
    assert choose_mode(tokens=60_000, data_type="structured", role="Scholar").batched
