"""Guards the GPU stages share."""


def gpu_missing(checkup, result) -> bool:
    """On a GPU backend without a usable device, skip (stage 4 already failed and said why)."""
    if checkup.gpu and not (checkup.probe.cuda_available(checkup.torch) and checkup.probe.device_count(checkup.torch) > 0):
        result.skip(f"no usable {checkup.backend} device (see stage 4 device)")
        return True
    return False
