"""The knowledge base that `db_query` data references read (data-transfer-protocol §2.4).

Papers, the knowledge atoms extracted from them, relations between atoms, and quality
records. Each row carries a stable public id (`paper_id`, `atom_id`, …); references and
exports name rows by that id, never by the database key.
"""
from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from agents.models import identifier

confidence_range = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class Paper(models.Model):
    paper_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    title = models.CharField(max_length=500)
    authors = models.JSONField(default=list, blank=True, help_text="A list of author names.")
    year = models.PositiveIntegerField(null=True, blank=True)
    venue = models.CharField(max_length=200, blank=True)
    domain = models.CharField(max_length=100, blank=True)
    abstract = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["paper_id"]

    def __str__(self) -> str:
        return self.paper_id


class KnowledgeAtom(models.Model):
    class AtomType(models.TextChoices):
        CLAIM = "claim"
        EVIDENCE = "evidence"
        METHODOLOGY = "methodology"
        BACKGROUND = "background"
        METADATA = "metadata"
        CITATION = "citation"

    atom_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="atoms")
    atom_type = models.CharField(max_length=20, choices=AtomType.choices)
    content = models.TextField()
    confidence = models.FloatField(validators=confidence_range)
    domain = models.CharField(max_length=100, blank=True)
    source_section = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["atom_id"]
        indexes = [models.Index(fields=["domain", "atom_type"])]

    def __str__(self) -> str:
        return self.atom_id


class Relation(models.Model):
    class RelationType(models.TextChoices):
        SUPPORTS = "supports"
        CONTRADICTS = "contradicts"
        EXTENDS = "extends"
        REFINES = "refines"
        DEPENDS_ON = "depends_on"

    relation_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    source = models.ForeignKey(KnowledgeAtom, on_delete=models.CASCADE, related_name="outgoing_relations")
    target = models.ForeignKey(KnowledgeAtom, on_delete=models.CASCADE, related_name="incoming_relations")
    relation_type = models.CharField(max_length=20, choices=RelationType.choices)
    confidence = models.FloatField(validators=confidence_range)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["relation_id"]

    def __str__(self) -> str:
        return self.relation_id


class QualityRecord(models.Model):
    """One quality evaluation of something (an atom, a paper, a relation, a run…)."""

    record_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    target_type = models.CharField(max_length=50)
    target_id = models.CharField(max_length=100)
    score = models.FloatField()
    passed = models.BooleanField()
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["record_id"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return self.record_id
