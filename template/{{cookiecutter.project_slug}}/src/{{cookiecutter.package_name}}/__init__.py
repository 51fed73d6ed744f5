"""The pilot application of a bundler project (model.py, pilot.py; evidence/ behind them)."""

__version__ = "0.1.0"
