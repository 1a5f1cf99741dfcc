"""The package's errors, and the C API's failed statuses turned into them.
Every other module raises through here, so that one status always becomes
the same Python error."""

import re

from . import _capi
from ._capi import STATUS_INVALID_ARGUMENT, STATUS_INVALID_SPEC, lib

# A CLI flag in the compiler's words: --name, --name=value, --window=L,R.
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)(?:=(-?[\w.]+(?:-[\w.]+)*(?:,-?[\w.]+)?))?")


def python_spelling(message):
    """The compiler's message with each CLI flag that is a keyword of the
    Python API in its Python spelling (--num-warps=4 -> num_warps=4,
    --window=-1,0 -> window_size=(-1, 0), --causal -> causal=True); other
    flags (--no-pingpong, --stages) stay as they are."""
    fields = {name for name, _ in _capi.Spec._fields_}

    def spell(match):
        name, value = match.group(1).replace("-", "_"), match.group(2)
        if name == "window" and value and "," in value:
            left, right = value.split(",")
            return f"window_size=({left}, {right})"
        if name not in fields or name.startswith("window"):
            return match.group(0)
        if value is None:
            return f"{name}=True"
        return f"{name}={value!r}" if name in ("dtype", "causal_align") else f"{name}={value}"

    return _FLAG.sub(spell, message)


class AttngenError(RuntimeError):
    """A failure reported by libattngen; `status` is the C API's status name."""

    __module__ = "attngen"  # the name users catch it by, in tracebacks too

    def __init__(self, message, status="ATTNGEN_ERROR"):
        super().__init__(message)
        self.status = status


class InvalidInputError(AttngenError, ValueError):
    """The request is wrong: a tensor's device, dtype, shape or strides, or an
    unsupported head_dim / dtype / arch. The message says what to change."""

    __module__ = "attngen"


def invalid_argument(message):
    """The error for a wrong tensor or value of a call, as the C API's
    ATTNGEN_ERROR_INVALID_ARGUMENT would name it."""
    return InvalidInputError(message, "ATTNGEN_ERROR_INVALID_ARGUMENT")


def invalid_spec(message):
    """The error for a kernel that cannot be asked for, as the C API's
    ATTNGEN_ERROR_INVALID_SPEC would name it."""
    return InvalidInputError(message, "ATTNGEN_ERROR_INVALID_SPEC")


def check_status(status, context=""):
    """Raises the library's last error when a C call failed (status != 0):
    InvalidInputError where the caller's input is to blame, else
    AttngenError; `context` says what the call was doing."""
    if not status:
        return
    name = lib.attngen_status_name(status).decode()
    message = lib.attngen_last_error().decode()
    if context:
        message = f"{context}: {message}"
    if status in (STATUS_INVALID_ARGUMENT, STATUS_INVALID_SPEC):
        raise InvalidInputError(python_spelling(message), name)
    raise AttngenError(message, name)
