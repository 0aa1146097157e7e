"""``python -m harness`` is ``python -m harness.run``."""

import sys

import harness.interrupts as interrupts
import harness.kernels as kernels

interrupts.set_handlers(interrupts.exit_at_once)  # before the slow imports, as harness.run does
kernels.pin_process(sys.argv[1:])  # before numpy and torch load, as harness.run does

from harness.run import cli  # noqa: E402

cli()
