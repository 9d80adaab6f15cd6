"""The test app of test_django.py: keys that are snowflake ids, and a relation to one."""
from django.db import models

from pg_snowflake.django import SnowflakeField


class Customer(models.Model):
    id = SnowflakeField(primary_key=True)
    name = models.TextField()


class Order(models.Model):
    id = SnowflakeField(primary_key=True)
    item = models.TextField()
    customer = models.ForeignKey(Customer, null=True, on_delete=models.CASCADE)
