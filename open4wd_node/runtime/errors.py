"""The shell's own coded errors (configuration, files, usage), printed like protocol and sim errors."""

from open4wd_base.errors import CodedError


class UserError(CodedError):
    """Input the user gave was refused (a file, a configuration, a value): the user's to fix, exit 1."""


class UsageError(UserError):
    """The command line itself is wrong (an option, a value out of range): exit status 2."""

    exit_status = 2

    def __init__(self, message: str, code: str = "usage") -> None:
        super().__init__(code, message)


def first_coded(
    group: BaseExceptionGroup[BaseException], kinds: tuple[type[BaseException], ...]
) -> BaseException | None:
    """The first exception of one of ``kinds`` inside an exception group, however deeply nested (trio
    nurseries wrap what their tasks raise), or None."""
    found: BaseException | None = group.split(kinds)[0]
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found
