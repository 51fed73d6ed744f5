"""Guards the GPU stages share."""


def gpu_missing(ctx, result) -> bool:
    """On a GPU backend without a usable device, skip (stage 4 already failed and said why)."""
    if ctx.gpu and not (ctx.probe.cuda_available(ctx.torch) and ctx.probe.device_count(ctx.torch) > 0):
        result.skip(f"no usable {ctx.backend} device (see stage 4 device)")
        return True
    return False
