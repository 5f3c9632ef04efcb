"""The `/api/schedules` operations: list and read (anyone signed in), create, change, pause,
resume and delete (authors)."""

from ninja import Query, Router, Schema, Status
from ninja.pagination import paginate

from core.api_support import Page, Rendered, responses
from core.roles import AUTHOR, require_role
from schedules import selectors, services
from schedules.models import Schedule, ScheduleFire
from schedules.schemas import FireOut, ScheduleIn, ScheduleOut, SchedulePatch

router = Router(tags=["schedules"])


class ScheduleFilter(Schema):
    workflow: str = ""


def schedule_out(schedule: Schedule) -> dict:
    return {"id": schedule.pk, "name": schedule.name, "workflow_id": schedule.workflow.workflow_id,
            "version": schedule.version, "input": schedule.input, "cron": schedule.cron,
            "cron_description": selectors.cron_words(schedule), "timezone": schedule.timezone,
            "enabled": schedule.enabled, "missed": schedule.missed, "next_fires": selectors.next_fires(schedule),
            "created_by": schedule.created_by.get_username() if schedule.created_by else None,
            "created_at": schedule.created_at, "updated_at": schedule.updated_at}


def fire_out(fire: ScheduleFire) -> dict:
    run = fire.execution
    return {"fire_time": fire.fire_time, "outcome": fire.outcome, "error": fire.error,
            "execution_id": run.execution_id if run else None, "execution_status": run.status if run else None}


@router.get("/schedules", response=responses(200, list[ScheduleOut]),
            summary="Schedules by name, each with its cron in words and its next five fire times")
@paginate(Page)
def schedules_list(request, filters: Query[ScheduleFilter]):
    return Rendered(selectors.schedule_list(workflow_id=filters.workflow),
                    lambda rows: [schedule_out(row) for row in rows])


@router.post("/schedules", response=responses(201, ScheduleOut),
             summary="Schedule a workflow (authors): its cron, zone and input checked, each refusal naming its field")
def schedules_create(request, payload: ScheduleIn):
    require_role(request.user, AUTHOR, to="schedule workflows")
    schedule = services.schedule_create(
        workflow_id=payload.workflow_id, name=payload.name, cron=payload.cron, timezone_name=payload.timezone,
        input=payload.input, version=payload.version, missed=payload.missed, enabled=payload.enabled,
        actor=request.user)
    return Status(201, schedule_out(selectors.schedule_get(schedule.pk)))


@router.get("/schedules/{schedule_id}", response=responses(200, ScheduleOut), summary="One schedule")
def schedules_get(request, schedule_id: int):
    return schedule_out(selectors.schedule_get(schedule_id))


@router.patch("/schedules/{schedule_id}", response=responses(200, ScheduleOut),
              summary="Change a schedule (authors): only the fields sent")
def schedules_update(request, schedule_id: int, payload: SchedulePatch):
    require_role(request.user, AUTHOR, to="change schedules")
    changes = payload.dict(exclude_unset=True)
    if "timezone" in changes:
        changes["timezone"] = changes["timezone"] if changes["timezone"] is not None else ""
    services.schedule_update(schedule=selectors.schedule_get(schedule_id), actor=request.user, **changes)
    return schedule_out(selectors.schedule_get(schedule_id))


@router.post("/schedules/{schedule_id}/pause", response=responses(200, ScheduleOut),
             summary="Pause a schedule (authors): it fires nothing until resumed")
def schedules_pause(request, schedule_id: int):
    require_role(request.user, AUTHOR, to="pause schedules")
    services.schedule_pause(schedule=selectors.schedule_get(schedule_id), actor=request.user)
    return schedule_out(selectors.schedule_get(schedule_id))


@router.post("/schedules/{schedule_id}/resume", response=responses(200, ScheduleOut),
             summary="Resume a paused schedule (authors): from its next fire time on; what it missed is not run")
def schedules_resume(request, schedule_id: int):
    require_role(request.user, AUTHOR, to="resume schedules")
    services.schedule_resume(schedule=selectors.schedule_get(schedule_id), actor=request.user)
    return schedule_out(selectors.schedule_get(schedule_id))


@router.delete("/schedules/{schedule_id}", response=responses(204, None),
               summary="Delete a schedule (authors); the runs it started stay")
def schedules_delete(request, schedule_id: int):
    require_role(request.user, AUTHOR, to="delete schedules")
    services.schedule_delete(schedule=selectors.schedule_get(schedule_id), actor=request.user)
    return Status(204, None)


@router.get("/schedules/{schedule_id}/fires", response=responses(200, list[FireOut]),
            summary="A schedule's fires, newest first: the run each started, or why it started none")
@paginate(Page)
def schedules_fires(request, schedule_id: int):
    return Rendered(selectors.schedule_fires(selectors.schedule_get(schedule_id)),
                    lambda rows: [fire_out(row) for row in rows])
