"""Every shared library of torch and the nvidia wheels resolves; a real CUDA build's runtime loads.

``python -m bundler.inimage.libraries --backend cuda`` runs ``ldd`` on every ``.so`` under
torch/lib and nvidia/*/lib (a library missing only a multi-node fabric's stack is listed
apart, under "fabric_only"); for a real CUDA build (torch/lib/libtorch_cuda.so present) it
loads libcudart, libcublas and libcudnn through ctypes, which needs no driver. One JSON
line; exit 1 when a library is unresolved or fails to load.

Every other ``.so`` of site-packages is run through ``ldd`` too, and what it cannot find is
listed under "site_unresolved" without failing the check: a package whose import then fails
for a missing system library is told every library it lacks at once, not one a build.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import subprocess
import sys
import sysconfig

# Provided by the GPU driver on the rented machine, never by a wheel: ldd may not find them here.
DRIVER_LIBRARIES = ("libcuda.so", "libnvidia-", "libnvcuvid.so")
# A multi-node fabric's own stack (RDMA verbs, MPI, PMIx, OpenSHMEM, libfabric, UCX): only the
# transport plugins of cuFile and NVSHMEM link them, and are loaded only where that fabric is set up.
FABRIC_LIBRARIES = (
    "libibverbs.so",
    "librdmacm.so",
    "libmlx5.so",
    "libmpi.so",
    "libpmix.so",
    "liboshmem.so",
    "libfabric.so",
    "libucs.so",
    "libucp.so",
)
CUDA_LOADS = ("libcudart", "libcublas", "libcudnn")


def unresolved(ldd_output: str) -> list:
    """The libraries ``ldd`` could not find, the driver's own left out."""
    return [line.split()[0] for line in ldd_output.splitlines() if "not found" in line and not any(d in line for d in DRIVER_LIBRARIES)]


def fabric_only(lost: list) -> bool:
    return all(any(f in name for f in FABRIC_LIBRARIES) for name in lost)


def check(site: str, backend: str) -> dict:
    folders = [os.path.join(site, "torch", "lib")] + sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
    libraries = sorted(p for f in folders for p in glob.glob(os.path.join(f, "*.so*")) if os.path.isfile(p))
    missing: dict = {}
    fabric: dict = {}
    for path in libraries:
        lost = unresolved(subprocess.run(["ldd", path], capture_output=True, text=True).stdout)
        if lost:
            (fabric if fabric_only(lost) else missing)[os.path.relpath(path, site)] = lost
    real = os.path.exists(os.path.join(site, "torch", "lib", "libtorch_cuda.so"))
    asked = list(CUDA_LOADS) if backend == "cuda" else []
    loaded, failed = [], {}
    for stem in asked if real else []:
        found = sorted(p for p in libraries if os.path.basename(p).startswith(stem + ".so"))
        try:
            ctypes.CDLL(found[0])
            loaded.append(os.path.basename(found[0]))
        except (IndexError, OSError) as error:
            failed[stem] = str(error) if found else "not installed"
    finding = {"libraries": len(libraries), "unresolved": missing, "fabric_only": fabric, "loaded": loaded, "load_failures": failed}
    finding["site_unresolved"] = site_unresolved(site, set(libraries))
    if asked and not real:
        finding["note"] = "torch/lib holds no libtorch_cuda.so (a stand-in torch): nothing to load"
    return finding


def site_unresolved(site: str, checked: set) -> dict:
    """{path under site-packages: libraries ldd cannot find} for every other shared object there (torch's and nvidia's apart)."""
    found: dict = {}
    for folder, _, names in os.walk(site):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if ".so" in name and path not in checked and os.path.isfile(path) and not os.path.islink(path):
                lost = unresolved(subprocess.run(["ldd", path], capture_output=True, text=True).stdout)
                if lost:
                    found[os.path.relpath(path, site)] = lost
    return found


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", required=True, choices=("cuda", "rocm", "cpu"))
    args = parser.parse_args(argv)
    finding = check(sysconfig.get_paths()["purelib"], args.backend)
    print(json.dumps(finding, sort_keys=True))
    return 1 if finding["unresolved"] or finding["load_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
