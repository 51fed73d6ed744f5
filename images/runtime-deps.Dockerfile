# Dependency image made by `bundler build` (flavour: runtime): the Target's slim base,
# the image's user, and the locked packages installed offline, with hashes, into
# ${venv}. Only ${venv} leaves the install stage, so no wheel reaches a layer of
# this image. bundler tags it bundler/deps:<key> (key: this text, the base image ID and
# the lock's pins) and reuses it while none of them changes, so a code-only rebuild
# neither sends the wheels nor re-hashes the environment.
# PyTorch wheels bring their own CUDA/ROCm user-space libraries: the same slim base
# serves cuda, rocm and cpu, and nothing is installed twice. No network is needed.

# ---- install stage: the wheelhouse, thrown away after the install ------------------
FROM ${base} AS install
COPY wheels/ /tmp/wheels/
COPY lock/requirements.txt /tmp/lock/requirements.txt
RUN ${python} -m venv ${venv} \
 && PIP_CONFIG_FILE=/dev/null ${venv}/bin/python -m pip install --no-index --find-links /tmp/wheels \
      --require-hashes --no-deps --no-cache-dir --disable-pip-version-check -r /tmp/lock/requirements.txt \
 && PIP_CONFIG_FILE=/dev/null ${venv}/bin/python -m pip check --disable-pip-version-check

# ---- the dependency image: system setup, then the installed environment -------------
FROM ${base}
RUN groupadd --gid ${uid} ${user} \
 && useradd --no-log-init --create-home --uid ${uid} --gid ${uid} --shell /bin/sh ${user} \
 && mkdir -p ${project}/runs \
 && ln -s ../diagnostics ${project}/diagnostics \
 && chown ${user}:${user} ${project}/runs
COPY --from=install ${venv} ${venv}
