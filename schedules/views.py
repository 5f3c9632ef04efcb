"""The schedule page: what it runs and when (its cron in words, its next five fire times in its
zone) and its fires, newest first, each with the run it started. Changes are made on the
workflow's page (static/js/workflow_schedules.js), through the API."""
import json

from django.http import Http404
from django.shortcuts import render

from core.errors import NotFound
from core.pages import paginate
from core.roles import AUTHOR, has_role
from schedules import selectors


def schedule_detail(request, schedule_id: int):
    try:
        schedule = selectors.schedule_get(schedule_id)
    except NotFound as missing:
        raise Http404(missing.message) from None
    return render(request, "schedules/schedule_detail.html", {
        **paginate(request, selectors.schedule_fires(schedule)), "schedule": schedule,
        "words": selectors.cron_words(schedule),
        "input_json": json.dumps(schedule.input, indent=2, ensure_ascii=False), "next_fires": selectors.next_fires(schedule),
        "editable": has_role(request.user, AUTHOR), "nav_section": "workflows",
    })
