"""Agents (core-data-structures §2.1) with lineage and immutable versions, and the rows of
derive requests (§6).

Lineage is stored as a parent link; `root` and `level` are derived from it by the
services and never edited by hand, and `children_ids` is the reverse of `parent`.

Derive requests keep their rows here, with their tables and admin pages; everything that
raises, decides or shows them is `quality/derive_requests/` (its rules read runs, which
agents sits below).
"""
from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from agents.catalogue import token_encoding
from core.state_machine import StateMachine
from engine.context.limits import ContextLimits

identifier = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$",
    "an id is 1-100 characters: letters, digits, and _ . : - (not starting with punctuation)",
)

DEFAULT_MAX_TOOL_CALLS = 8
MAX_TOOL_CALLS = 100


class Agent(models.Model):
    class Type(models.TextChoices):
        META = "meta"
        BUSINESS = "business"

    class Status(models.TextChoices):
        ACTIVE = "active"
        INACTIVE = "inactive"
        DEPRECATED = "deprecated"

    STATES = StateMachine(
        "agent",
        {
            "active": {"inactive", "deprecated"},
            "inactive": {"active", "deprecated"},
            "deprecated": {"active"},
        },
    )

    agent_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50, help_text="The current version; earlier ones stay in AgentVersion.")
    type = models.CharField(max_length=20, choices=Type.choices, default=Type.BUSINESS)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)

    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    root = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    level = models.PositiveIntegerField(default=0)

    prompt_config = models.JSONField(default=dict)
    capabilities = models.JSONField(default=dict)
    constraints = models.JSONField(default=list)

    # What running the agent needs: operator-defined backend name, model, tokenizer,
    # the role that sets its strategy defaults, and its context limits (§6.1).
    backend = models.CharField(max_length=50, default="builtin")
    model = models.CharField(max_length=200, blank=True)
    encoding = models.CharField(max_length=50, default="cl100k_base")
    role = models.CharField(max_length=100, blank=True)
    max_input_tokens = models.PositiveIntegerField(default=100_000)
    max_output_tokens = models.PositiveIntegerField(default=16_000)
    reserved_for_system_prompt = models.PositiveIntegerField(default=5_000)
    reserved_for_instructions = models.PositiveIntegerField(default=3_000)
    safety_margin = models.FloatField(default=0.9)
    # Where max_input_tokens and max_output_tokens came from: the agent's document, the model
    # catalogue (agents/catalogue.py), or the defaults above.
    limit_sources = models.JSONField(default=dict, blank=True)
    data_area = models.PositiveIntegerField(null=True, blank=True, help_text="Tokens for data; defaults by role.")
    # How it calls the tools of its `capabilities.tools` (tools/catalogue.py).
    max_tool_calls = models.PositiveSmallIntegerField(
        default=DEFAULT_MAX_TOOL_CALLS, validators=[MinValueValidator(1), MaxValueValidator(MAX_TOOL_CALLS)],
        help_text="Tool calls one node run may make.")
    parallel_tool_calls = models.BooleanField(
        default=True, help_text="Whether the calls one model turn asks for may run at once.")
    tools_needing_approval = models.JSONField(
        default=list, blank=True, help_text="Names of its tools whose every call waits for a person's decision.")

    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["agent_id"]
        indexes = [models.Index(fields=["status", "type"])]

    def __str__(self) -> str:
        return self.agent_id

    @property
    def context_limits(self) -> ContextLimits:
        return ContextLimits(
            max_input_tokens=self.max_input_tokens, max_output_tokens=self.max_output_tokens,
            reserved_for_system_prompt=self.reserved_for_system_prompt,
            reserved_for_instructions=self.reserved_for_instructions,
            safety_margin=self.safety_margin, data_area=self.data_area, role=self.role,
        )

    @property
    def token_encoding(self) -> str:
        """The encoding this agent's tokens are counted in: its model's, as the catalogue names
        it now, else its own `encoding` (agents/catalogue.py, token_encoding)."""
        return token_encoding(self.backend, self.model, self.encoding)

    @property
    def available_for_data(self) -> int:
        return self.context_limits.available_for_data

    @property
    def effective_data_limit(self) -> int:
        return self.context_limits.effective_data_limit

    @property
    def data_budget(self) -> int:
        """Tokens the context builder may fill with data (§6.1, capped by the role's data area)."""
        return self.context_limits.data_limit

    @property
    def children_ids(self) -> list[str]:
        return sorted(child.agent_id for child in self.children.all())


class AgentVersion(models.Model):
    """An immutable snapshot of what an agent was; node runs point at the one they ran."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    version = models.CharField(max_length=50)
    content = models.JSONField(help_text="name, type, prompt_config, capabilities, constraints, runtime, context_limits")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["agent", "-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["agent", "version"], name="agent_version_unique")]

    def __str__(self) -> str:
        return f"{self.agent.agent_id}@{self.version}"


class DeriveRequest(models.Model):
    """A request to derive a specialised child of `parent_agent` (§6); its services, rules,
    pages and API are in `quality/derive_requests/`."""

    class Trigger(models.TextChoices):
        QUALITY_ISSUE = "quality_issue"
        CAPABILITY_GAP = "capability_gap"
        FREQUENCY_THRESHOLD = "frequency_threshold"

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"

    STATES = StateMachine("derive request", {"pending": {"approved", "rejected"}, "approved": set(), "rejected": set()})

    derive_request_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    parent_agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="derive_requests")
    trigger = models.CharField(max_length=30, choices=Trigger.choices)
    trigger_context = models.JSONField(default=dict, blank=True)
    new_name = models.CharField(max_length=200)
    domain_focus = models.CharField(max_length=200, blank=True)
    additional_skills = models.JSONField(default=list, blank=True)
    additional_constraints = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    result_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="derived_from_requests"
    )
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True)
    result_error = models.TextField(blank=True, help_text="Why creating the child agent failed, if it did.")
    # What the decision was made on, when it named an experiment pair (parent vs child): the
    # experiments' ids, the dataset version, and each scorer's delta and verdict at that time.
    evidence = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "trigger"])]
        constraints = [
            # One open request per agent and trigger: the rules never pile up duplicates.
            models.UniqueConstraint(fields=["parent_agent", "trigger"], condition=models.Q(status="pending"),
                                    name="one_pending_derive_request_per_agent_and_trigger"),
        ]

    def __str__(self) -> str:
        return self.derive_request_id


class DeriveRequestEvent(models.Model):
    """What happened to a derive request, by whom and when: raised, approved, rejected,
    its child agent created (or the creation failed)."""

    class Kind(models.TextChoices):
        RAISED = "raised"
        APPROVED = "approved"
        REJECTED = "rejected"
        CHILD_CREATED = "child_created"
        CHILD_FAILED = "child_failed"

    request = models.ForeignKey(DeriveRequest, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, help_text="The request's status after the event.")
    actor = models.CharField(max_length=150, help_text="A username, or 'rule:<trigger>' for a request a rule raised.")
    at = models.DateTimeField(default=timezone.now)
    comment = models.TextField(blank=True)

    class Meta:
        ordering = ["request", "at", "id"]

    def __str__(self) -> str:
        return f"{self.request.derive_request_id}: {self.kind} by {self.actor}"
