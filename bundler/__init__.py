"""bundler: portable GPU pilot projects that survive a change of machine."""

__version__ = "0.1.0"
