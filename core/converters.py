"""Path converters of the pages' URLs, registered once when the app is ready."""


class RowIdConverter:
    """A row id in a page's URL: 1 to 18 digits, so it always fits the 64-bit keys of both
    databases. Django's `int` takes any number of digits, and a longer one overflowed the
    query (a 500) instead of matching nothing (a 404)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value) -> str:
        return str(value)
