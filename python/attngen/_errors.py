"""The package's errors, and the C API's failed statuses turned into them.
Every other module raises through here, so that one status always becomes
the same Python error."""

from ._capi import STATUS_INVALID_ARGUMENT, STATUS_INVALID_SPEC, lib


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
        raise InvalidInputError(message, name)
    raise AttngenError(message, name)
