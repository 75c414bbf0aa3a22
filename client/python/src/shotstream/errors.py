"""ShotstreamError: every error of the package, with the gRPC status code."""

from __future__ import annotations

import grpc

__all__ = ["ShotstreamError"]


class ShotstreamError(Exception):
    """An error from the server or the stream, with the gRPC status code.

    Picklable, and rebuilt from its text alone (ShotstreamError("NOT_FOUND: ...")), as
    PyTorch's DataLoader does with errors raised in its worker processes: the code is
    found in the text, so `.code()` survives the worker boundary."""

    def __init__(self, code: "grpc.StatusCode | str", message: "str | None" = None) -> None:
        if message is None and isinstance(code, str):
            code, message = _code_from_text(code)
        super().__init__(f"{code.name}: {message}")
        self._code = code
        self._message = message

    def __reduce__(self):
        return (ShotstreamError, (self._code, self._message))

    @classmethod
    def from_status(cls, code: int, message: str) -> "ShotstreamError":
        """From a C++ absl::Status (the native extension): its code is gRPC's number."""
        return cls(_CODES.get(int(code), grpc.StatusCode.UNKNOWN), message)

    def code(self) -> grpc.StatusCode:
        """The grpc.StatusCode."""
        return self._code

    def details(self) -> str:
        """The server's message."""
        return self._message


_CODES = {c.value[0]: c for c in grpc.StatusCode}


def _code_from_text(text: str) -> "tuple[grpc.StatusCode, str]":
    """(grpc.StatusCode, message) of an error's text: "CODE: message", or a traceback
    whose last 'ShotstreamError: CODE: message' line says it; UNKNOWN otherwise."""
    candidates = [text]
    marker = "ShotstreamError: "
    if marker in text:
        candidates.insert(0, text[text.rindex(marker) + len(marker):])
    for c in candidates:
        name, sep, rest = c.partition(": ")
        code = getattr(grpc.StatusCode, name.strip(), None)
        if sep and isinstance(code, grpc.StatusCode):
            return code, rest.strip()
    return grpc.StatusCode.UNKNOWN, text
