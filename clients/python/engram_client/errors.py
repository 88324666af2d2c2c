"""The one exception the client raises for an answer engram refused."""

from __future__ import annotations

from typing import Optional


class EngramError(Exception):
    """engram answered with an error: ``{"error": {"code", "message"}}``.

    ``code`` is engram's stable name for the failure (``invalid_argument``,
    ``not_found``, ``rate_limited``, ...), ``message`` says what was wrong
    (naming the field at fault), ``status`` is the HTTP status, and
    ``retry_after`` the seconds engram asked to wait, when it did.
    """

    def __init__(self, status: int, code: str, message: str,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
