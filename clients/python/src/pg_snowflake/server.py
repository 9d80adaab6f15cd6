"""What only the server knows: its layout, read once (`server_layout(conn)`), and the public ids,
made and read by the server's functions with the key that stays on the server (`to_public`,
`from_public`, `try_from_public`).

`conn` is any of: a DB-API connection or cursor whose parameters are written `%s` (psycopg 3,
psycopg2, Django's `django.db.connection`), a SQLAlchemy `Connection`, `Engine` or `Session`.
The functions are called unqualified: the extension's schema must be on the connection's
search_path (the manual's install sets it), as for `DEFAULT snowflake_nextval()`.
"""
from .ids import SnowflakeId
from .layout import LAYOUT_SQL, layout_of_row


def _row(conn, sql, params=()):
    """The first row of `sql` on `conn`."""
    if hasattr(conn, "exec_driver_sql"):  # a SQLAlchemy Connection
        return conn.exec_driver_sql(sql, tuple(params)).fetchone()
    if hasattr(conn, "get_bind") and hasattr(conn, "connection"):  # a SQLAlchemy Session
        return conn.connection().exec_driver_sql(sql, tuple(params)).fetchone()
    if hasattr(conn, "begin") and hasattr(conn, "dialect"):  # a SQLAlchemy Engine
        with conn.begin() as c:
            return c.exec_driver_sql(sql, tuple(params)).fetchone()
    if hasattr(conn, "cursor"):  # a DB-API connection
        cur = conn.cursor()
        try:
            cur.execute(sql, tuple(params))
            return cur.fetchone()
        finally:
            cur.close()
    conn.execute(sql, tuple(params))  # a DB-API cursor
    return conn.fetchone()


def server_layout(conn):
    """The server's layout, from `snowflake_layout()`: read it once (it changes only with the
    server's settings, at a restart) and decode and compose with it in the application."""
    return layout_of_row(_row(conn, LAYOUT_SQL))


def to_public(conn, id):
    """The public id (`snowflake_to_public(id)`): 26 characters, made with the server's key."""
    return _row(conn, "SELECT snowflake_to_public(%s::bigint)", [int(SnowflakeId(id))])[0]


def from_public(conn, token):
    """The id of a public id (`snowflake_from_public(token)`); the server's error (22P02, raised by
    the driver) for a token that is not one of its own."""
    return SnowflakeId(_row(conn, "SELECT snowflake_from_public(%s::text)", [token])[0])


def try_from_public(conn, token):
    """The id of a public id, or None for a token that is not one of the server's
    (`snowflake_try_from_public(token)`)."""
    value = _row(conn, "SELECT snowflake_try_from_public(%s::text)", [token])[0]
    return None if value is None else SnowflakeId(value)
