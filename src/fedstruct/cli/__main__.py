"""``python -m fedstruct.cli``: the ``fedstruct`` command."""

from fedstruct.cli import main

main()
