"""The Schedules section of a workflow's page: an author adds a schedule in the browser and sees
its cron in words and its next five fire times in its zone; a refused cron is shown at its
field; a viewer sees the schedules without a button to change them."""
from datetime import datetime

import pytest
from playwright.sync_api import expect

from core.models import AuditEntry
from schedules.models import Schedule
from schedules.services import schedule_create
from tests.pages.conftest import screenshot, signed_in
from tests.schedules.conftest import workflow  # noqa: F401 - the scheduled workflow


@pytest.mark.django_db(transaction=True)
def test_an_author_adds_a_schedule_and_sees_its_next_five_times(api, page_for, workflow):  # noqa: F811
    page = page_for(api.author.user)
    page.goto(f"/workflows/{workflow.workflow_id}/")
    section = page.locator("#schedules")
    expect(section.locator("#schedules-status")).to_have_text("No schedule yet.")
    section.locator("#schedule-add").click()
    page.fill("#schedule-name", "weekday mornings")
    page.fill("#schedule-cron", "0 9 * * mon-fri 1")
    page.fill("#schedule-timezone", "Asia/Tokyo")
    page.fill("#schedule-input", '{"repository": "acme"}')
    page.click("#schedule-save")
    expect(section.locator('[data-problem="cron"]')).to_contain_text("five fields")
    expect(page.locator("#schedule-cron")).to_have_attribute("aria-invalid", "true")
    page.fill("#schedule-cron", "0 9 * * mon-fri")
    page.click("#schedule-save")
    added = section.locator('[data-schedule="weekday mornings"]')
    expect(added.locator(".schedule-words")).to_have_text("At 09:00, Monday through Friday")
    times = added.locator(".next-fires li")
    expect(times).to_have_count(5)
    for text in times.all_text_contents():  # each at 09:00 in Tokyo, on a weekday
        assert text.endswith("09:00 (+09:00)"), text
        assert datetime.strptime(text[:10], "%Y-%m-%d").weekday() < 5
    screenshot(section, "workflow_schedules")
    added.locator(".schedule-toggle").click()
    expect(added.locator(".badge")).to_have_text("paused")
    schedule = Schedule.objects.get()
    assert (schedule.cron, schedule.timezone, schedule.enabled, schedule.created_by) == (
        "0 9 * * mon-fri", "Asia/Tokyo", False, api.author.user)
    assert list(AuditEntry.objects.filter(object_type="schedule").values_list("action", "via").order_by("pk")) == [
        ("schedule.create", "page"), ("schedule.pause", "page")]


@pytest.mark.django_db
def test_a_viewer_sees_the_schedules_section_without_buttons(api, workflow):  # noqa: F811
    schedule_create(workflow_id=workflow.workflow_id, name="nightly", cron="30 2 * * *", input={"repository": "a"})
    author = signed_in(api.author.user).get(f"/workflows/{workflow.workflow_id}/").content.decode()
    assert 'id="schedules"' in author and 'id="schedule-add"' in author and 'data-editable="true"' in author
    viewer = signed_in(api.viewer.user).get(f"/workflows/{workflow.workflow_id}/").content.decode()
    assert 'id="schedules"' in viewer and 'id="schedule-add"' not in viewer and 'id="schedule-form"' not in viewer
    assert "js/workflow_schedules.js" in viewer
