from django.conf import settings
from django.db import models
from django.utils.timezone import now


class Schedule(models.Model):
    """A workflow started on a cron schedule: which version (a pinned one, or the latest at
    each fire), with what input, when (a cron expression read in an IANA time zone), and what
    to do with a fire missed while the beat was down. The beat sends its fires through the
    `PeriodicTask` it owns (schedules/beat.py), kept in step with every save."""

    class Missed(models.TextChoices):
        CATCH_UP = "catch_up"  # one run, for the latest missed fire, when the beat is back
        SKIP = "skip"  # none: the next fire on time runs

    name = models.CharField(max_length=200, unique=True)
    # A workflow deleted (one never run) takes its schedules with it, and they their beat entries.
    workflow = models.ForeignKey("workflows.Workflow", on_delete=models.CASCADE, related_name="schedules")
    version = models.PositiveIntegerField(null=True, blank=True, help_text="The version each run runs; none: the latest.")
    input = models.JSONField(default=dict, blank=True)
    cron = models.CharField(max_length=200, help_text="Five fields: minute hour day-of-month month day-of-week.")
    timezone = models.CharField(max_length=64, default="UTC", help_text="The IANA zone the cron is read in.")
    enabled = models.BooleanField(default=True)
    missed = models.CharField(max_length=10, choices=Missed.choices, default=Missed.SKIP)
    # Fire times before this are none of its own: it was made, paused, or its timing changed since.
    active_since = models.DateTimeField(default=now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)
    periodic_task = models.OneToOneField("django_celery_beat.PeriodicTask", null=True, blank=True,
                                         on_delete=models.SET_NULL, related_name="+")

    def __str__(self) -> str:
        return self.name


class ScheduleFire(models.Model):
    """One fire time of a schedule, written in the same transaction as what it did (the run it
    started, a missed fire skipped, a refusal): unique on (schedule, fire time), so a
    duplicate message, two beats or a restart never start a second run for one fire time."""

    class Outcome(models.TextChoices):
        STARTED = "started"
        SKIPPED = "skipped"  # missed while the beat was down, and the schedule skips those
        FAILED = "failed"  # the run could not start: `error` says why

    # Kept when the schedule is deleted (with its name), so the runs it started still say so.
    schedule = models.ForeignKey(Schedule, null=True, on_delete=models.SET_NULL, related_name="fires")
    schedule_name = models.CharField(max_length=200)
    fire_time = models.DateTimeField()
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    execution = models.OneToOneField("executions.Execution", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="schedule_fire")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["schedule", "fire_time"], name="one_fire_per_fire_time")]
        indexes = [models.Index(fields=["schedule", "-fire_time"], name="schedule_fires_newest")]
