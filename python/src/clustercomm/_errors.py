"""The exceptions of clustercomm: one class per kind of libclustercomm error (comm/error.h).

Every failure of a call raises a subclass of :class:`Error`. Its message is the C++ error's
(it names the rank(s) involved), and ``.ranks`` lists those ranks for programs. After any
error but :class:`InvalidArgumentError` the communicator is broken: every later call raises
:class:`BrokenError` at once.
"""

import builtins


class Error(Exception):
    """A libclustercomm call failed.

    Attributes:
        ranks: tuple of the ranks this rank was waiting for or that misbehaved (may be empty).
        kind: the C++ ErrorKind's name ("timeout", "peer lost", ...).
    """

    kind = "error"

    def __init__(self, message, ranks=()):
        super().__init__(message)
        self.ranks = tuple(ranks)

    def __reduce__(self):  # picklable (multiprocessing returns them)
        return (type(self), (str(self), self.ranks))


class InvalidArgumentError(Error, ValueError):
    """Bad count, rank, root, peer or configuration; the communicator stays usable."""

    kind = "invalid argument"


class TimeoutError(Error, builtins.TimeoutError):
    """Nothing completed within the timeout (``timeout_ms``, CLUSTERCOMM_TIMEOUT_MS), or a rank
    never joined at start-up; ``ranks`` names the silent ones."""

    kind = "timeout"


class PeerLostError(Error, ConnectionError):
    """A peer's connections closed: it died, or it gave up because of a rank its own error
    named (then ``ranks`` names that one first; that rank may be alive, e.g. its count
    differed: its log has the cause)."""

    kind = "peer lost"


class ProtocolError(Error):
    """Ranks disagreed on the call (different collectives, counts or types)."""

    kind = "protocol error"


class AuthError(Error, PermissionError):
    """A connection did not prove the job's token (CLUSTERCOMM_TOKEN)."""

    kind = "authentication failed"


class WorldError(Error):
    """World formation failed: ranks disagree on the size, or two claim the same rank."""

    kind = "world formation failed"


class SystemCallError(Error, OSError):
    """An OS call failed (bind, socket, ...); the message carries strerror."""

    kind = "system error"

    def __init__(self, message, ranks=()):
        Error.__init__(self, message, ranks)


class BrokenError(Error):
    """An earlier call failed; this communicator cannot be used any more."""

    kind = "communicator broken"


class InterruptedCallError(Error):
    """A call gave up because it was interrupted. From Python a Ctrl-C raises the signal
    handler's own exception (KeyboardInterrupt) instead; this class is its C++ kind."""

    kind = "interrupted"


CLASSES = {
    c.kind: c
    for c in (InvalidArgumentError, TimeoutError, PeerLostError, ProtocolError, AuthError,
              WorldError, SystemCallError, BrokenError, InterruptedCallError)
}
