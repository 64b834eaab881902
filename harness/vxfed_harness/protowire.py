"""Protobuf's wire format by hand, for the few fields tests send and read (Python's protobuf
is not installed here): varints, length-delimited fields, and the length-prefixed framing of
every vxfed unix socket (docs/architecture.md, "Contracts")."""

from __future__ import annotations


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at buf[pos:] and the position after it; IndexError if buf ends inside it."""
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def field_bytes(num: int, payload: bytes) -> bytes:
    return varint((num << 3) | 2) + varint(len(payload)) + payload


def field_varint(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(value)


def delimited(message: bytes) -> bytes:
    """One frame: the message's length as a varint, then the message."""
    return varint(len(message)) + message


def split_delimited(data: bytes) -> tuple[bytes, bytes] | None:
    """(first message, rest) once data holds a whole frame, else None."""
    try:
        n, pos = read_varint(data, 0)
    except IndexError:
        return None
    if len(data) < pos + n:
        return None
    return data[pos:pos + n], data[pos + n:]


def varint_fields(message: bytes) -> dict[int, int]:
    """The varint fields of a message by number (the last one wins); other wire types
    (length-delimited) are skipped."""
    out, pos = {}, 0
    while pos < len(message):
        key, pos = read_varint(message, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == 0:
            out[field], pos = read_varint(message, pos)
        elif wire_type == 2:
            n, pos = read_varint(message, pos)
            pos += n
        else:
            raise ValueError(f"unexpected wire type {wire_type}")
    return out
