"""The shell's own coded error (configuration, files, usage), printed like protocol and sim errors."""


class UserError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def first_coded(group: BaseExceptionGroup, kinds: tuple[type[Exception], ...]) -> Exception | None:
    """The first coded error inside an exception group (trio nurseries wrap what their tasks raise)."""
    matched, _ = group.split(kinds)
    while isinstance(matched, BaseExceptionGroup):
        matched = matched.exceptions[0]
    return matched
