"""clustercomm: collective communication for distributed jobs (clusterctl's libclustercomm).

    import numpy as np, clustercomm
    with clustercomm.init() as comm:          # from clusterctl launch's (or MLX's) environment
        g = np.full(4, comm.rank, np.float32)
        comm.all_reduce(g, out=g)             # in place: sum over every rank

API: :func:`init`, :class:`Communicator` (``rank``, ``size``, ``transport``, ``all_reduce``,
``reduce_scatter``, ``all_gather``, ``broadcast``, ``all_to_all``, ``send``, ``recv``,
``barrier``, ``split`` with ``NO_COLOR``, ``close``), and the exceptions :class:`Error` and
its subclasses (``.ranks``).
Arrays: any C-contiguous CPU array through DLPack or the buffer protocol (numpy, MLX, PyTorch,
JAX) of dtype float32, float64, float16, bfloat16 (numpy: ml_dtypes.bfloat16), int8..int64 or
uint8..uint64. The repository's README ("Python") and comm/README.md say more.
"""

from ._errors import (AuthError, BrokenError, Error, InterruptedCallError,
                      InvalidArgumentError, PeerLostError, ProtocolError, SystemCallError,
                      TimeoutError, WorldError)
from ._clustercomm import NO_COLOR, Communicator, __version__

__all__ = [
    "init", "Communicator", "Error", "InvalidArgumentError", "TimeoutError", "PeerLostError",
    "ProtocolError", "AuthError", "WorldError", "SystemCallError", "BrokenError",
    "InterruptedCallError", "DTYPES", "NO_COLOR", "__version__",
]

#: numpy's names of the element types every collective takes (send/recv take any dtype).
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64")


def init():
    """Joins the world the environment describes and returns its :class:`Communicator`.

    Reads what ``clusterctl launch`` sets (CLUSTERCOMM_RANK, CLUSTERCOMM_SIZE,
    CLUSTERCOMM_COORDINATOR, CLUSTERCOMM_TOKEN, CLUSTERCOMM_TIMEOUT_MS in milliseconds, ...) or
    MLX's launcher variables (MLX_RANK with MLX_HOSTFILE for the ring backend, or MLX_RANK
    with MLX_IBV_DEVICES and MLX_JACCL_COORDINATOR for jaccl: RDMA verbs), as C++
    ``Communicator::from_env``; a world of size 1 when none is set. Blocks until every rank
    has joined (at most the timeout, default 30 s).

    Raises:
        InvalidArgumentError: a malformed variable (the message names it).
        TimeoutError: ranks that never joined (``.ranks``).
        WorldError, AuthError, SystemCallError: as :class:`Communicator`.
    """
    return Communicator.from_env()
