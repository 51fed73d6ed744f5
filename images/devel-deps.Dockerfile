# Dependency image made by `bundler build` (flavour: devel, chosen only because an
# extension in bundle.toml has compile = true): the devel base, Python and a compiler
# from the distribution's mirror, the image's user, and the locked packages installed
# offline, with hashes, into ${venv} (the extensions compiled from their source
# archives). Only ${venv} leaves the install stage. Tagged bundler/deps:<key> and
# reused while this text, the base image and the lock's pins stay the same.

# ---- system stage: Python and a compiler, the image's user ---------------------------
FROM ${base} AS system
${system_packages}
RUN groupadd --gid ${uid} ${user} \
 && useradd --no-log-init --create-home --uid ${uid} --gid ${uid} --shell /bin/sh ${user} \
 && mkdir -p ${project}/runs \
 && ln -s ../diagnostics ${project}/diagnostics \
 && chown ${user}:${user} ${project}/runs

# ---- install stage: the wheelhouse, thrown away after the install ------------------
FROM system AS install
COPY wheels/ /tmp/wheels/
COPY lock/requirements.txt /tmp/lock/requirements.txt
RUN ${python} -m venv ${venv} \
 && PIP_CONFIG_FILE=/dev/null ${venv}/bin/python -m pip install --no-index --find-links /tmp/wheels \
      --require-hashes --no-deps --no-build-isolation --no-cache-dir --disable-pip-version-check -r /tmp/lock/requirements.txt \
 && PIP_CONFIG_FILE=/dev/null ${venv}/bin/python -m pip check --disable-pip-version-check

# ---- the dependency image: system layers, then the installed environment ------------
FROM system
COPY --from=install ${venv} ${venv}
