"""``python -m tests.conformance``: the corpus replayed on both servers (see :mod:`.run`)."""

import sys

from tests.conformance.run import main

sys.exit(main())
