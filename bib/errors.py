"""The one exception type for bad user input; the CLI turns it into a one-line error and exit 2."""

from __future__ import annotations


class BibInputError(ValueError):
    """Bad input from a user: a file, field or row that cannot be used.

    The message is one line and names what is wrong (file, field, row), e.g.
    ``episodes/x.json: field 'schema': expected 'bib.episode/1', got 'foo'``.
    """
