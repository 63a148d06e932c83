"""The ``icecompat`` command line."""
