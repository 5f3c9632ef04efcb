"""Datasets: a named list of items, kept as immutable versions.

Every change (an import, a run added as an item, an item removed) makes the dataset's next
`DatasetVersion` with all its items as rows of their own (`DatasetItem`); a version and its
items are never changed afterwards, so an experiment can name the version it ran over.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from agents.models import identifier


class Immutable(models.Model):
    """A row written once: saving it again is refused (a change is a new version)."""

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError(f"{type(self).__name__} rows are never changed: a change makes a new version")
        super().save(*args, **kwargs)


class Dataset(models.Model):
    name = models.CharField(max_length=100, unique=True, validators=[identifier])
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DatasetVersion(Immutable):
    class Change(models.TextChoices):
        IMPORT = "import"  # the items replaced by a file's
        APPEND = "append"  # a file's items added
        ADD_RUN = "add_run"  # a run added as an item
        REMOVE = "remove"  # an item removed

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    change = models.CharField(max_length=10, choices=Change.choices)
    note = models.CharField(max_length=200, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    # The CSV columns the items came with ([{"column", "target"}], in order), kept from version
    # to version so that a CSV export writes them back; None when no CSV was imported.
    csv_columns = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["dataset", "number"]
        constraints = [models.UniqueConstraint(fields=["dataset", "number"], name="dataset_version_number_unique")]

    def __str__(self) -> str:
        return f"{self.dataset.name} v{self.number}"


class DatasetItem(Immutable):
    """One item of one version. `has_expected` keeps an absent expected apart from JSON null."""

    version = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    item_id = models.CharField(max_length=200)
    input = models.JSONField(default=dict)
    has_expected = models.BooleanField(default=False)
    expected = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)  # None: the item has none
    # What the items page searches: the id and the JSON of input, expected and metadata, in
    # lower case, so that a search is one LIKE over one version's rows.
    search_text = models.TextField(blank=True)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "position"], name="dataset_item_position_unique"),
            models.UniqueConstraint(fields=["version", "item_id"], name="dataset_item_id_unique"),
        ]

    def __str__(self) -> str:
        return self.item_id

    def document(self) -> dict:
        """The item as the files hold it: absent keys left out."""
        out: dict = {"id": self.item_id, "input": self.input}
        if self.has_expected:
            out["expected"] = self.expected
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out
