"""Copies of bundler's contracts (bundler/contracts/ in bundler's repository): generated, do not edit."""
