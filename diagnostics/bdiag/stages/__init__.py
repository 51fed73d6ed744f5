"""The stages in their fixed order; the exit code of a failure is 10 + the stage's number."""

from bdiag.stages import (
    checkpoint,
    collectives,
    compute,
    device,
    extensions,
    interpreter,
    memory,
    packages,
    storage,
    torchbuild,
)

ORDER = (interpreter, packages, torchbuild, device, compute, extensions, memory, storage, checkpoint, collectives)
