"""Tests of the `icecompat` command line."""
