"""pg_snowflake for Python applications: ids decoded and composed in the application, JSON that
writes 64-bit ids as strings, and public ids made by the server (its key stays there).

    from pg_snowflake import preset, server_layout, SnowflakeId, dumps
    layout = server_layout(conn)          # once: the server's snowflake_layout()
    layout.decode(id)                     # Parts(ts, machine_id, sequence, unix_ms)
    low, high = layout.id_range(start, end)   # WHERE id >= low AND id < high

The Django field is in pg_snowflake.django (with DRF's fields in pg_snowflake.drf), the
SQLAlchemy type in pg_snowflake.sqlalchemy; pydantic takes SnowflakeId as a field type.
"""
from .ids import SnowflakeId
from .json import JSONEncoder, dumps, json_safe
from .layout import Layout, Parts, preset
from .presets import PRESETS
from .server import from_public, server_layout, to_public, try_from_public

__version__ = "0.2.0"
__all__ = ["SnowflakeId", "JSONEncoder", "dumps", "json_safe", "Layout", "Parts", "preset", "PRESETS",
           "server_layout", "to_public", "from_public", "try_from_public"]
