"""``python -m harness`` is ``python -m harness.run``."""

import harness.interrupts as interrupts

interrupts.set_handlers(interrupts.exit_at_once)  # before the slow imports, as harness.run does

from harness.run import cli  # noqa: E402

cli()
