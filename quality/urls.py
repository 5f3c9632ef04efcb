from django.urls import path

from quality import views

evaluation_patterns = [
    path("", views.evaluation_list, name="list"),
    path("new/", views.evaluation_add, name="add"),
    path("<str:evaluation_id>/", views.evaluation_detail, name="detail"),
]
