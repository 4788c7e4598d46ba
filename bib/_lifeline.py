"""Imported by the multiprocessing forkserver at its start (``set_forkserver_preload``): the forkserver
dies with the ``bib`` process that started it (see :func:`bib.parallel.die_with_parent`).

Not imported anywhere else: importing it ties the importing process's life to its parent.
"""

from bib.parallel import die_with_parent

die_with_parent()
