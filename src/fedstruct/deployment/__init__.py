"""The Flower side of the experiments: submitting a run to a SuperLink (:mod:`.deploy`)
and the Flower App it runs (:mod:`.app`), with the run-config contract between them
(:mod:`.contract`). Importing this package imports no Flower code; :mod:`.app` does.
"""
