"""loom's errors as Python exceptions, one per status of the C ABI; each carries loom's message
(what was wrong, where, and what would be right)."""


class LoomError(Exception):
    """Any error loom reports."""


class InputError(LoomError, ValueError):
    """Bad input: a fusion's text, a size, a layout, a tensor that does not fit the fusion."""


class ArgumentError(LoomError, TypeError):
    """A call made wrongly: a missing value, a dtype loom does not know, a count out of range."""


class NoGpuError(LoomError, RuntimeError):
    """Running needs a GPU (and the CUDA driver), and none was found."""


class InternalError(LoomError, RuntimeError):
    """A bug in loom: please report the message."""
