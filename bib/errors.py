"""The one exception type for bad user input; the CLI turns it into a one-line error and exit 2."""

from __future__ import annotations


class BibInputError(ValueError):
    """Bad input from a user: a file, field or row that cannot be used.

    The message is one line and names what is wrong (file, field, row), e.g.
    ``episodes/x.json: field 'schema': expected 'bib.episode/1', got 'foo'``.
    """


class ModelError(BibInputError):
    """A model's own code raised while bib ran it (a user's ``surprise`` or ``fit``): one line naming the model,
    the episode and the exception; ``detail`` keeps the model's traceback, which ``bib --debug`` prints.

    It travels between processes like any exception (the traceback as text in ``args``).
    """

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message, detail)

    @property
    def detail(self) -> str:
        """The model's traceback, as text."""
        return str(self.args[1]) if len(self.args) > 1 else ""

    def __str__(self) -> str:
        return str(self.args[0])
