"""Layouts of snowflake ids, as arithmetic in the application: decode an id, compose one, and the
id bounds of a time range, for the server's layout (read once with `server_layout(conn)`) and for
the presets the server knows (`preset("discord")`), with the server's rules: a time before the
epoch or past the end of the timestamp field, a negative id of a 63-bit layout, a field out of
its range are errors, never a wrong id.
"""
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from .ids import BIGINT_MAX, SnowflakeId
from .presets import PRESETS

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)


class Parts(NamedTuple):
    """The fields of an id, as `snowflake_decode()` returns them, and the time in milliseconds
    since 1970 (`ts` is that time as a datetime in UTC)."""

    ts: datetime
    machine_id: int
    sequence: int
    unix_ms: int


def to_unix_ms(ts):
    """Milliseconds since 1970-01-01 UTC of an aware datetime, rounded down (as the server reads a
    timestamptz: its microseconds below the millisecond dropped)."""
    if not isinstance(ts, datetime):
        raise TypeError(f"a time is a datetime, not {type(ts).__name__}")
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise ValueError(f"{ts.isoformat()} has no time zone: give an aware datetime (tzinfo=timezone.utc, say)")
    return (ts - UNIX_EPOCH) // _MS


def from_unix_ms(ms):
    """The aware datetime (UTC) of milliseconds since 1970."""
    try:
        return UNIX_EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise ValueError(f"{ms} ms since 1970 is outside the range of Python's datetime (years 1 to 9999)") from None


def _text(ms):
    """A time as the server's messages write it: 2025-01-01 00:00:00+00, milliseconds if any."""
    try:
        t = from_unix_ms(ms)
    except ValueError:
        return f"{ms} ms since 1970"
    text = t.strftime("%Y-%m-%d %H:%M:%S")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + "+00"


class Layout:
    """How ids are cut, from the most significant bit down: the timestamp (ticks of `tick_ms`
    milliseconds since `epoch_ms`, milliseconds since 1970), then the machine id and the sequence
    (the sequence above the machine id where `sequence_above_machine`, as Sonyflake's). The three
    fields fill 63 bits (the sign bit stays 0: ids are never negative) or 64 (Discord's and
    Instagram's, whose top bit is time)."""

    __slots__ = ("name", "epoch_ms", "tick_ms", "timestamp_bits", "machine_bits", "sequence_bits", "sequence_above_machine")

    def __init__(self, epoch_ms, tick_ms, timestamp_bits, machine_bits, sequence_bits, sequence_above_machine=False, name=None):
        for what, v in (("epoch_ms", epoch_ms), ("tick_ms", tick_ms), ("timestamp_bits", timestamp_bits),
                        ("machine_bits", machine_bits), ("sequence_bits", sequence_bits)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{what} is an int, not {v!r}")
        if tick_ms < 1 or min(timestamp_bits, machine_bits, sequence_bits) < 1:
            raise ValueError("a layout needs a tick of 1 ms or more and fields of 1 bit or more")
        if timestamp_bits + machine_bits + sequence_bits not in (63, 64):
            raise ValueError(f"{timestamp_bits} + {machine_bits} + {sequence_bits} bits: a layout fills 63 or 64 bits")
        self.name = name
        self.epoch_ms = epoch_ms
        self.tick_ms = tick_ms
        self.timestamp_bits = timestamp_bits
        self.machine_bits = machine_bits
        self.sequence_bits = sequence_bits
        self.sequence_above_machine = bool(sequence_above_machine)

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__ if k != "name")
        return f"Layout({fields}, name={self.name!r})"

    def __eq__(self, other):
        if not isinstance(other, Layout):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__ if k != "name")

    def __hash__(self):
        return hash(tuple(getattr(self, k) for k in self.__slots__ if k != "name"))

    # --- what the layout allows ----------------------------------------------------------------

    @property
    def bits(self):
        return self.timestamp_bits + self.machine_bits + self.sequence_bits

    @property
    def max_machine_id(self):
        return (1 << self.machine_bits) - 1

    @property
    def max_sequence(self):
        return (1 << self.sequence_bits) - 1

    @property
    def ids_per_tick(self):
        """The ceiling of a server: this many ids per tick (4,096 per millisecond by default)."""
        return 1 << self.sequence_bits

    @property
    def max_tick(self):
        return (1 << self.timestamp_bits) - 1

    @property
    def epoch(self):
        return from_unix_ms(self.epoch_ms)

    @property
    def end_unix_ms(self):
        """The first millisecond the timestamp field cannot carry."""
        return self.epoch_ms + (self.max_tick + 1) * self.tick_ms

    @property
    def ends(self):
        """When the timestamp field runs out (snowflake_layout().timestamp_field_ends)."""
        return from_unix_ms(self.end_unix_ms)

    def _where(self):
        return f"the {self.name} layout's" if self.name and self.name != "server" else "snowflake.epoch"

    # --- ids -----------------------------------------------------------------------------------

    def _bits_of(self, id):
        """The id's 64 bits as an unsigned int; refuses what is no id of this layout."""
        id = SnowflakeId(id)
        if id < 0 and self.bits == 63:
            raise ValueError(f"snowflake id {id} is negative")
        return int(id) & (2**64 - 1)

    def decode(self, id):
        """The fields of an id (an int or its digits), as `snowflake_decode(id)` gives them."""
        bits = self._bits_of(id)
        low = self.machine_bits + self.sequence_bits
        if self.sequence_above_machine:
            machine = bits & self.max_machine_id
            sequence = (bits >> self.machine_bits) & self.max_sequence
        else:
            machine = (bits >> self.sequence_bits) & self.max_machine_id
            sequence = bits & self.max_sequence
        unix_ms = self.epoch_ms + (bits >> low) * self.tick_ms
        return Parts(from_unix_ms(unix_ms), machine, sequence, unix_ms)

    def timestamp(self, id):
        """When the id was minted (the start of its tick), in UTC."""
        return self.decode(id).ts

    def machine_id(self, id):
        return self.decode(id).machine_id

    def sequence(self, id):
        return self.decode(id).sequence

    def _tick(self, ts):
        ms = to_unix_ms(ts)
        if ms < self.epoch_ms:
            raise ValueError(f"time {_text(ms)} is before {self._where()} {_text(self.epoch_ms)}")
        tick = (ms - self.epoch_ms) // self.tick_ms
        if tick > self.max_tick:
            raise ValueError(f"time {_text(ms)} is past the end of the {self.timestamp_bits}-bit timestamp field, {_text(self.end_unix_ms)}")
        return tick

    def compose(self, ts, machine_id, sequence):
        """The id with these fields (`snowflake_compose()`), the time rounded down to its tick."""
        tick = self._tick(ts)
        for part, value, top in (("machine_id", machine_id, self.max_machine_id), ("sequence", sequence, self.max_sequence)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{part} is an int, not {value!r}")
            if not 0 <= value <= top:
                raise ValueError(f"{part} {value} is out of range (0 to {top})")
        if self.sequence_above_machine:
            low = (sequence << self.machine_bits) | machine_id
        else:
            low = (machine_id << self.sequence_bits) | sequence
        bits = (tick << (self.machine_bits + self.sequence_bits)) | low
        # A 64-bit layout's ids past the middle of its field are negative bigints.
        return SnowflakeId(bits - 2**64 if bits > BIGINT_MAX else bits)

    def from_timestamp(self, ts):
        """The smallest id that can carry `ts` (`snowflake_from_timestamp(ts)`): the lower bound of
        a time range. A time before the epoch or past the field is an error, as on the server;
        `id_range()` clamps instead."""
        return self.compose(ts, 0, 0)

    def id_range(self, start=None, end=None):
        """(low, high): the ids minted from `start` (included) to `end` (excluded) are those with
        `low <= id < high`, to the tick; None where that side has no bound (no time given, or an
        end past the timestamp field). Clamped where `from_timestamp` refuses: a start before the
        epoch is the epoch, an end before it is 0 (no id). For the layouts whose ids are never
        negative (63 bits: the server's, twitter, sonyflake, pgedge)."""
        if self.bits != 63:
            raise ValueError(f"id_range is for 63-bit layouts; the {self.name or 'given'} layout's ids use all 64 bits")
        low = high = None
        if start is not None:
            low = SnowflakeId(0) if to_unix_ms(start) < self.epoch_ms else self.from_timestamp(start)
        if end is not None:
            ms = to_unix_ms(end)
            if ms < self.epoch_ms:
                high = SnowflakeId(0)
            elif ms < self.end_unix_ms:
                high = self.from_timestamp(end)
        return low, high


def preset(name):
    """The layout of another system, by the name the server knows it by (a key of `PRESETS`, as
    the server's `snowflake_presets()` lists them; any case). `server` is not a preset:
    `server_layout(conn)`."""
    key = name.strip().lower()
    if key not in PRESETS:
        raise ValueError(f"unknown snowflake layout {name!r}; the presets are {', '.join(PRESETS)} "
                         "(and this server's own: server_layout(conn))")
    epoch_ms, tick_ms, t, m, s, above = PRESETS[key]
    return Layout(epoch_ms, tick_ms, t, m, s, above, name=key)


# What snowflake_layout() is read with: the epoch in milliseconds, exactly.
LAYOUT_SQL = ("SELECT (extract(epoch FROM epoch) * 1000)::bigint, time_unit_ms, timestamp_bits, machine_bits, "
              "sequence_bits FROM snowflake_layout()")


def layout_of_row(row):
    """The Layout of a row of LAYOUT_SQL."""
    epoch_ms, tick_ms, t, m, s = (int(v) for v in row)
    return Layout(epoch_ms, tick_ms, t, m, s, False, name="server")

