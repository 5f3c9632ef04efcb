"""The kind of document this package brings to core's document registry: derive requests (§6)."""
from agents.models import DeriveRequest
from core.documents import Kind, register_kind
from quality.derive_requests.documents import derive_request_document
from quality.derive_requests.services import derive_request_import_document


def register_document_kinds() -> None:
    register_kind(Kind("derive_request", "derive_request_id", DeriveRequest, "derive_request_id",
                       derive_request_import_document, derive_request_document))
