"""Typed records written to and read from run directories."""
