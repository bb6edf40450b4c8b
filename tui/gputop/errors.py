"""The errors gputop reports to a user: each one line on stderr and an exit code."""

from __future__ import annotations


class GputopError(Exception):
    """An error the CLI prints as one line and turns into an exit code.

    Attributes:
        exit_code: the process exit status for this error.
    """

    exit_code: int = 2


class BadCapture(GputopError):
    """A file or directory that is not a readable nvidia-smi XML capture."""

    exit_code = 2


class BadArguments(GputopError):
    """Command-line arguments that name nothing usable (e.g. a --gpu that matches no GPU)."""

    exit_code = 2


class NoDriver(GputopError):
    """NVML cannot be used here: no library, no driver loaded, or no GPU."""

    exit_code = 1


class NoPermission(GputopError):
    """The user may not use NVML or read the requested file."""

    exit_code = 1


class Waiting(GputopError):
    """A live source that is not ready yet (the driver is still starting).

    Raised by ``poll``: the TUI shows the message in its header and polls again later.
    """


class Fatal(GputopError):
    """A failure after the TUI is up that leaves nothing to show (the driver failed to start).

    The TUI ends and the command prints it as one line, with the exit code of its cause.
    """

    def __init__(self, cause: GputopError) -> None:
        """Wrap ``cause``: same message, same exit code."""
        super().__init__(str(cause))
        self.cause = cause
        self.exit_code = cause.exit_code
