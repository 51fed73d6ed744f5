# Dependency image made by `bundler build` (flavour: devel, chosen only because an
# extension in bundle.toml has compile = true): the devel base, Python and a compiler
# from the distribution's mirror, the image's user, and the locked packages installed
# with hashes into ${venv} (the extensions compiled from their source archives), then
# checked. Tagged bundler/deps:<key>, its checks' verdict a label, reused while this
# text, the base image and the lock's pins stay the same.
# Wheels: ${route}.
# The system layer holds what the mirror serves on the day: it is not reproducible.

# ---- system stage: Python and a compiler, the image's user ---------------------------
FROM ${base} AS system
${system_packages}
${user_setup}
${install_stage}
FROM system
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
