"""``python -m allot``: the same as the ``allot`` console script, for environments where only
the interpreter is on the path (and for the start-up benchmark, which runs ``sys.executable``)."""

import sys

from allot.cli.main import main

sys.exit(main())
