# The package version, in one place: setup.py reads it without importing the package.
__version__ = "0.1.0"
