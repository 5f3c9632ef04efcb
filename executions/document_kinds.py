"""The kinds of documents this app brings to core's document registry: executions and the
thought trees of Tree-of-Thoughts searches (export only, by node run id)."""
from core.documents import Kind, register_kind
from executions.documents import execution_document, thought_tree_document
from executions.models import Execution, ThoughtSearch
from executions.node_kinds.tot import thought_tree_import_document
from executions.services.document_import import execution_import_document


def register_document_kinds() -> None:
    register_kind(Kind("execution", "execution_id", Execution, "execution_id", execution_import_document,
                       execution_document))
    register_kind(Kind("thought_tree", "task_id", ThoughtSearch, "node_run__id", thought_tree_import_document,
                       thought_tree_document))
