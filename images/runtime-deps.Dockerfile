# Dependency image made by `bundler build` (flavour: runtime): the Target's slim base,
# the image's user, then the locked packages installed with --require-hashes into
# ${venv} and checked. bundler tags it bundler/deps:<key> (key: this text, the base
# image ID and the lock's pins), records the checks' verdict on it as a label, and
# reuses it while none of them changes: a code-only rebuild sends no wheel and runs no
# dependency check again.
# PyTorch wheels bring their own CUDA/ROCm user-space libraries: the same slim base
# serves cuda, rocm and cpu. System packages the bundle asks for (the RDMA user space
# of [target] fabric, [build] system_packages, apt.txt) come from the base's mirror.
# Wheels: ${route}.
# Reproducible layers: pip installs without bytecode, which is compiled afterwards
# with unchecked-hash headers; every path a step changes gets one fixed file time.
${install_stage}
FROM ${base}
${system_packages}
${user_setup}
${environment}
# ---- the settings every project image of it shares -------------------------------------
ENV BUNDLE_PYTHON=${venv_python} \
    BUNDLE_ROOT=${project} \
    BUNDLE_DIAGNOSTICS=${diagnostics} \
    PATH=${venv}/bin:$$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
USER ${uid}:${uid}
WORKDIR ${project}
ENTRYPOINT ["${entrypoint}"]
CMD ["pilot"]
