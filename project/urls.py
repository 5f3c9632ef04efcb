from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

from project.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
]
