"""Embedded examples: small tables from the papers, shipped as package data."""

from republish.examples.hospital import HospitalExample, load_hospital

__all__ = ["HospitalExample", "load_hospital"]
