"""Flower backends: run any fedstruct federation on Flower (simulation or deployment).

Needs the ``flower`` extra (``pip install fedstruct[flower]``: flwr[simulation] 1.41).
Import the submodules you need; this package imports nothing, so that
:mod:`fedstruct.fl.flower.cluster` (process commands, no Flower import) stays light.

- :mod:`~fedstruct.fl.flower.records`: Message <-> Flower records;
- :mod:`~fedstruct.fl.flower.grid`: :class:`FlowerGrid`, our grid over Flower's;
- :mod:`~fedstruct.fl.flower.client_app`: the ClientApp hosting our clients;
- :mod:`~fedstruct.fl.flower.simulation`: the ``flower-sim`` backend;
- :mod:`~fedstruct.fl.flower.deployment`: the backend of a deployment ServerApp;
- :mod:`~fedstruct.fl.flower.cluster`: SuperLink/SuperNode commands, ``flwr`` calls;
- :mod:`~fedstruct.fl.flower.credentials`: TLS certificates and node keys.
"""
