"""Coded errors: every rejection a user or a peer can cause carries a stable kebab-case code."""


class ProtocolError(Exception):
    """A rejection with a stable ``code`` and a sentence saying what went wrong and what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
