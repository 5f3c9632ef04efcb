"""Schemathesis fuzzes every operation of the OpenAPI schema against the project's WSGI
application, with the demo data loaded.

Each request goes through the whole application — every middleware, authentication by
token, the API — in this process, inside the test's transaction, which is rolled back at the
end of each operation: the same answers a server would give, without a socket, a server
thread or a flush of every table per operation. Every generated request is sent as a
viewer, an author and an admin (each with a token of their own), so the fuzzer reaches the
permission checks and, as the admin, the code behind them. For every answer: no 5xx, the status code is one
the schema declares, and the body matches its schema.

The suite's run is derandomized (the same requests every time, so CI does not fail on a
new find by chance); `FUZZ_RANDOM=1 FUZZ_EXAMPLES=300` explores further. It runs once per
bin/test: on PostgreSQL when bin/test makes a pass there (its refusals — a NUL in a text,
an integer past 64 bits — are the stricter), else on SQLite.
"""
import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from project.api import api
from tests.replay import load_demo

schema = schemathesis.openapi.from_dict(api.get_openapi_schema())
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def tokens(db, tmp_path, settings):
    """A token each for a viewer, an author and an admin, viewer first."""
    from django.contrib.auth.models import Group, User

    from core.models import ApiToken

    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    viewer = User.objects.create_user(username="fuzz-viewer", password="a long password")
    author = User.objects.create_user(username="fuzz-author", password="a long password")
    author.groups.add(Group.objects.get_or_create(name="author")[0])  # a flushed database has none
    admin = User.objects.create_superuser(username="fuzz-admin", password="a long password")
    return [ApiToken.issue(user, "schemathesis")[1] for user in (viewer, author, admin)]


@pytest.fixture(scope="module")
def application():
    """The project's WSGI application, as a server runs it, but for closing the database
    connection at the start and end of each request (Django's test client does the same):
    the connection holds the test's transaction."""
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    yield get_wsgi_application()
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


@pytest.mark.last_pass_only
@schema.parametrize()
@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")), derandomize=os.environ.get("FUZZ_RANDOM") != "1",
          deadline=None, suppress_health_check=list(HealthCheck))
def test_it_answers_every_generated_request_as_its_schema_says(case, application, tokens):
    for token in tokens:
        case.call_and_validate(app=application, headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)
