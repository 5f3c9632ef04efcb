from django.urls import path

from quality.derive_requests import views

derive_request_patterns = [
    path("", views.derive_request_list, name="list"),
    path("<str:derive_request_id>/", views.derive_request_detail, name="detail"),
]
