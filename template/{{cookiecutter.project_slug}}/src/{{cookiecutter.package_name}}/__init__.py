"""{{ cookiecutter.project_name }}: the pilot application of a bundler project."""

__version__ = "0.1.0"
