# Image made by `bundler build` (flavour: runtime). Layer order: the dependency image
# (runtime-deps.Dockerfile: base, system setup, locked dependencies) -> bundler's entry
# point and diagnostics -> settings -> the project's code -> its config -> the labels.
# A code change rebuilds only the last three steps; a config change only the last two.
FROM ${deps_image}
COPY bundle/ /opt/bundle/
ENV BUNDLE_PYTHON=/opt/venv/bin/python \
    BUNDLE_ROOT=/opt/bundle/project \
    BUNDLE_ENTRY="${entry}" \
    PATH=/opt/venv/bin:$$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
USER ${uid}:${uid}
WORKDIR /opt/bundle/project
ENTRYPOINT ["/opt/bundle/entrypoint.sh"]
CMD ["pilot"]
COPY project/ /opt/bundle/project/
COPY config/ /opt/bundle/project/config/
${labels}
