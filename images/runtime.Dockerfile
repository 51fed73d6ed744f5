# Image made by `bundler build` (flavour: runtime). Layer order: the dependency image
# (runtime-deps.Dockerfile: base, system setup, locked dependencies, settings) -> bundler's
# entry point and diagnostics -> the entry command -> the project's code (and, with [build]
# install_project, its own wheel installed) -> its config -> the labels.
# A code change rebuilds only the code, config and label steps; a config change only the last two.
# Each COPY goes to / with full paths from the context, so every folder on the way has
# an entry with the fixed file time (COPY into a folder would stamp it with the clock).
FROM ${deps_image}
COPY bundle/ /
ENV BUNDLE_ENTRY="${entry}"
COPY project/ /
${project_wheel}
COPY config/ /
${labels}
