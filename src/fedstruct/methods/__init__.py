"""One folder per published method. Methods never import each other; they share
what they share through ``graphs``, ``data``, ``privacy`` and ``fl``."""
