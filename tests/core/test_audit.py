"""The audit trail's foundation: an entry names who, from where, what and the values before
and after, and is never changed or deleted through the product."""
import subprocess
import sys

import pytest
from django.conf import settings

from core.audit import acting, record
from core.models import AuditEntry

pytestmark = pytest.mark.django_db


def test_an_entry_keeps_who_from_where_what_and_the_values_before_and_after(django_user_model):
    person = django_user_model.objects.create_user(username="ada")
    with acting("command", "purge_runs"):
        entry = record("workflow.save", actor=person, object_type="workflow", object_id="wf_a",
                       before={"version": 1}, after={"version": 2})
    entry.refresh_from_db()
    assert (entry.actor_id, entry.actor_name, entry.via, entry.via_detail) == (person.pk, "ada", "command", "purge_runs")
    assert (entry.action, entry.object_type, entry.object_id) == ("workflow.save", "workflow", "wf_a")
    assert (entry.before, entry.after) == ({"version": 1}, {"version": 2})
    # Outside any door, the product itself made the change.
    assert record("execution.purge", object_type="execution", object_id="e1").via == "system"


def test_an_entry_can_be_neither_changed_nor_deleted():
    entry = record("agent.save", object_type="agent", object_id="a1", after={"name": "x"})
    entry.action = "agent.delete"
    for attempt in (entry.save, entry.delete, lambda: AuditEntry.objects.filter(pk=entry.pk).update(action="x"),
                    lambda: AuditEntry.objects.all().delete()):
        with pytest.raises(PermissionError, match="append-only"):
            attempt()
    assert AuditEntry.objects.get(pk=entry.pk).action == "agent.save"


def test_an_unknown_source_is_refused():
    with pytest.raises(ValueError, match="unknown audit source 'laptop'"):
        with acting("laptop"):
            pass


def test_an_api_token_says_where_a_request_came_from_and_its_door_closes_behind_it(django_user_model):
    from core.api_support import TokenAuth
    from core.audit import current_via
    from core.models import ApiToken

    row, token = ApiToken.issue(django_user_model.objects.create_user(username="bot"), "ci")

    class Request:
        user = None

    with acting("page", "127.0.0.1"):
        assert current_via() == ("page", "127.0.0.1")
        TokenAuth().authenticate(Request(), token)
        assert current_via() == ("api_token", row.prefix)
    assert current_via() == ("system", "")


def test_a_manage_py_command_is_its_own_source():
    # In a process of its own, as a person runs a command.
    program = ("import sys, manage; sys.argv = ['manage.py', 'shell', '-c', "
               "'from core.audit import current_via; print(current_via())']; manage.main()")
    result = subprocess.run([sys.executable, "-c", program], cwd=settings.BASE_DIR, capture_output=True, text=True,
                            timeout=120)
    assert "('command', 'shell')" in result.stdout, result.stderr
