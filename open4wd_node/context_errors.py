"""The shell's own coded error (configuration, files, usage), printed like protocol and sim errors."""


class UserError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
