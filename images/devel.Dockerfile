# Image made by `bundler build` (flavour: devel). Layer order: the dependency image
# (devel-deps.Dockerfile: base, system setup, locked dependencies) -> bundler's entry
# point and diagnostics -> settings -> the project's code -> its config -> the labels.
# A code change rebuilds only the last three steps; a config change only the last two.
# Each COPY goes to / with full paths from the context, so every folder on the way has
# an entry with the fixed file time (COPY into a folder would stamp it with the clock).
FROM ${deps_image}
COPY bundle/ /
ENV BUNDLE_PYTHON=${venv_python} \
    BUNDLE_ROOT=${project} \
    BUNDLE_DIAGNOSTICS=${diagnostics} \
    BUNDLE_ENTRY="${entry}" \
    PATH=${venv}/bin:$$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
USER ${uid}:${uid}
WORKDIR ${project}
ENTRYPOINT ["${entrypoint}"]
CMD ["pilot"]
COPY project/ /
COPY config/ /
${labels}
