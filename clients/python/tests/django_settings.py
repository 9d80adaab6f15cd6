"""Django configured for the tests (test_django.py, test_drf.py): the app `shop`, the server of
libpq's PG* variables."""
import os

import django
from django.conf import settings


def configure():
    if settings.configured:
        return
    settings.configure(
        INSTALLED_APPS=["tests.shop"],
        DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": os.environ["PGDATABASE"],
                               "HOST": os.environ.get("PGHOST", ""), "PORT": os.environ.get("PGPORT", ""),
                               "USER": os.environ.get("PGUSER", "")}},
        USE_TZ=True, DEFAULT_AUTO_FIELD="django.db.models.BigAutoField")
    django.setup()
