from django.urls import path

from agents import views

agent_patterns = [
    path("", views.agent_list, name="list"),
    path("<str:agent_id>/", views.agent_detail, name="detail"),
    path("<str:agent_id>/edit/", views.agent_edit, name="edit"),
]
derive_request_patterns = [
    path("", views.derive_request_list, name="list"),
    path("<str:derive_request_id>/", views.derive_request_detail, name="detail"),
]
