from django import template

from executions.page_selectors import duration_ms_text

register = template.Library()


@register.filter
def duration_ms(value: float | None) -> str:
    """`{{ run.duration_ms|duration_ms }}`: "420 ms", "45.9 s", "4 min 05 s"."""
    return duration_ms_text(value)
