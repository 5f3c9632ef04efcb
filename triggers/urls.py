from django.urls import path

from triggers import views

hook_patterns = [
    path("<str:hook_id>", views.receive, name="receive"),
]
