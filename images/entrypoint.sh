#!/bin/sh
# Entry point of images made by `bundler build`.
#   docker run IMAGE                 runs the project's entry (bundle.toml [project] entry)
#   docker run IMAGE pilot [ARGS]    the same, ARGS appended (e.g. --run-id trial-1)
#   docker run IMAGE diagnose [ARGS] runs the diagnostics folder with the bundle's Python
#   docker run IMAGE COMMAND [ARGS]  anything else is executed as given
set -e
cd "${BUNDLE_ROOT:?this image was not made by bundler build}"
case "${1:-pilot}" in
  pilot)
    [ "$#" -gt 0 ] && shift
    exec /bin/sh -c "${BUNDLE_ENTRY} \"\$@\"" bundle-entry "$@"
    ;;
  diagnose)
    shift
    exec "${BUNDLE_PYTHON:?}" "${BUNDLE_DIAGNOSTICS:?}/run.py" "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
