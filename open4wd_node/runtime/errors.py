"""The shell's own coded errors (configuration, files, usage), printed like protocol and sim errors."""


class UserError(Exception):
    """Input the user gave was refused (a file, a configuration, a value): exit status 1."""

    exit_status = 1

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class UsageError(UserError):
    """The command line itself is wrong (an option, a value out of range): exit status 2."""

    exit_status = 2

    def __init__(self, message: str, code: str = "usage") -> None:
        super().__init__(code, message)


def first_coded(group: BaseExceptionGroup, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    """The first coded error inside an exception group (trio nurseries wrap what their tasks raise)."""
    matched, _ = group.split(kinds)
    while isinstance(matched, BaseExceptionGroup):
        matched = matched.exceptions[0]
    return matched
