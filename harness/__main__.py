"""``python -m harness`` is ``python -m harness.run``."""

import sys

from harness.run import main

sys.exit(main())
