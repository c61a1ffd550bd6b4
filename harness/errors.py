"""Errors the user can fix: the CLI prints them without a traceback and exits 2."""


class UserError(Exception):
    """Bad input: an unknown suite or key, a value out of range, a missing or corrupt file.

    The message names what was wrong and what is allowed.
    """
